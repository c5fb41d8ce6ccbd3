//! Everything keyed by the shared secret: User-Password hiding (RFC 2865 §5.2), the
//! Response Authenticator (RFC 2865 §3), Message-Authenticator (RFC 3579 §3.2, RFC 2869
//! §5.14), and the encoders that put them in the right order.
//!
//! Every reply Portcullis builds carries Message-Authenticator as its first attribute
//! (the BlastRADIUS fix: a forged prefix cannot be chosen to collide the MD5 Response
//! Authenticator if an HMAC over the whole packet comes first). Comparisons of
//! authenticators are constant-time.

use md5::{Digest, Md5};
use subtle::ConstantTimeEq;
use thiserror::Error;
use zeroize::Zeroizing;

use crate::packet::{Code, MAX_ATTRIBUTE_VALUE, MAX_PACKET, MIN_PACKET, Packet, PacketError, attr};
use crate::secret::Secret;

/// Longest User-Password (RFC 2865 §5.2).
pub const MAX_PASSWORD: usize = 128;

/// A User-Password cannot be hidden or recovered.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PasswordError {
    /// Plaintext must be 1..=128 octets.
    #[error("User-Password must be 1-128 octets, got {0}")]
    BadPlaintextLength(usize),
    /// Hidden value must be 16..=128 octets, a multiple of 16.
    #[error("hidden User-Password must be 16-128 octets in 16-octet blocks, got {0}")]
    BadHiddenLength(usize),
}

/// Whether a request's Message-Authenticator checks out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageAuthenticator {
    /// None present.
    Absent,
    /// Exactly one, and it matches.
    Valid,
    /// Wrong value, wrong length, or more than one.
    Invalid,
}

/// A packet cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// An attribute value is longer than 253 octets.
    #[error("attribute {typ} value is {len} octets (at most 253)")]
    AttributeTooLong {
        /// Attribute type.
        typ: u8,
        /// Its value's length.
        len: usize,
    },
    /// The whole packet would exceed 4096 octets.
    #[error("packet would be {0} octets (at most 4096)")]
    TooLong(usize),
}

/// A reply does not belong to our request or was not made with our secret.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResponseError {
    /// Not a RADIUS packet.
    #[error("malformed reply: {0}")]
    Malformed(#[from] PacketError),
    /// The Response Authenticator does not match (wrong secret, or a reply to another
    /// request).
    #[error("Response Authenticator does not match the request")]
    BadResponseAuthenticator,
    /// Required, but absent.
    #[error("reply has no Message-Authenticator")]
    MissingMessageAuthenticator,
    /// Present but wrong, or duplicated.
    #[error("reply's Message-Authenticator does not match")]
    BadMessageAuthenticator,
}

/// Hide a User-Password (RFC 2865 §5.2): pad with NULs to 16-octet blocks, then XOR block
/// i with MD5(secret | previous ciphertext block), the first with MD5(secret | request
/// authenticator).
pub fn hide_user_password(
    password: &[u8],
    secret: &[u8],
    request_authenticator: &[u8; 16],
) -> Result<Vec<u8>, PasswordError> {
    if password.is_empty() || password.len() > MAX_PASSWORD {
        return Err(PasswordError::BadPlaintextLength(password.len()));
    }
    let mut out = password.to_vec();
    out.resize(password.len().div_ceil(16) * 16, 0);
    let mut chain: [u8; 16] = *request_authenticator;
    for block in out.chunks_mut(16) {
        let b = Md5::new()
            .chain_update(secret)
            .chain_update(chain)
            .finalize();
        for (c, k) in block.iter_mut().zip(b.iter()) {
            *c ^= k;
        }
        chain.copy_from_slice(block);
    }
    Ok(out)
}

/// Recover a hidden User-Password; trailing NULs (the padding) are removed.
pub fn unhide_user_password(
    hidden: &[u8],
    secret: &[u8],
    request_authenticator: &[u8; 16],
) -> Result<Zeroizing<Vec<u8>>, PasswordError> {
    if hidden.len() < 16 || hidden.len() > MAX_PASSWORD || !hidden.len().is_multiple_of(16) {
        return Err(PasswordError::BadHiddenLength(hidden.len()));
    }
    let mut out = Zeroizing::new(hidden.to_vec());
    let mut chain: &[u8] = request_authenticator;
    for (block, cipher) in out.chunks_mut(16).zip(hidden.chunks(16)) {
        let b = Md5::new()
            .chain_update(secret)
            .chain_update(chain)
            .finalize();
        for (p, k) in block.iter_mut().zip(b.iter()) {
            *p ^= k;
        }
        chain = cipher;
    }
    let keep = out.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    out.truncate(keep);
    Ok(out)
}

/// HMAC-MD5 of `packet` with the authenticator field set to `authenticator` and the value
/// of the Message-Authenticator at `ma_offset` zeroed.
pub(crate) fn message_authenticator(
    packet: &[u8],
    authenticator: &[u8; 16],
    ma_offset: usize,
    secret: &Secret,
) -> [u8; 16] {
    let mut mac = secret.hmac();
    mac.update(&packet[..4]);
    mac.update(authenticator);
    mac.update(&packet[MIN_PACKET..ma_offset]);
    mac.update(&[0u8; 16]);
    mac.update(&packet[ma_offset + 16..]);
    mac.finalize()
}

/// Check the Message-Authenticator of a request (Access-Request, Status-Server), whose
/// own authenticator field is the one the HMAC covers.
pub fn check_request_message_authenticator(
    packet: &Packet<'_>,
    secret: &[u8],
) -> MessageAuthenticator {
    check_request_message_authenticator_keyed(packet, &Secret::new(secret))
}

/// [`check_request_message_authenticator`] with a secret whose key schedule is done (a
/// server's, loaded once per NAS).
pub fn check_request_message_authenticator_keyed(
    packet: &Packet<'_>,
    secret: &Secret,
) -> MessageAuthenticator {
    check_message_authenticator(packet, &packet.authenticator, secret)
}

fn check_message_authenticator(
    packet: &Packet<'_>,
    authenticator: &[u8; 16],
    secret: &Secret,
) -> MessageAuthenticator {
    let mut found = packet.value_offsets(attr::MESSAGE_AUTHENTICATOR);
    let Some((offset, len)) = found.next() else {
        return MessageAuthenticator::Absent;
    };
    if len != 16 || found.next().is_some() {
        return MessageAuthenticator::Invalid;
    }
    let raw = packet.raw();
    let expected = message_authenticator(raw, authenticator, offset, secret);
    if bool::from(expected.ct_eq(&raw[offset..offset + 16])) {
        MessageAuthenticator::Valid
    } else {
        MessageAuthenticator::Invalid
    }
}

/// Header, then Message-Authenticator (zeroed) first, then `attrs`; returns the buffer and
/// the offset of the Message-Authenticator value.
fn lay_out(
    code: Code,
    identifier: u8,
    authenticator: &[u8; 16],
    attrs: &[(u8, &[u8])],
    trailing: &[(u8, &[u8])],
) -> Result<(Vec<u8>, usize), EncodeError> {
    let mut len = MIN_PACKET + 18;
    for &(typ, v) in attrs.iter().chain(trailing) {
        if v.len() > MAX_ATTRIBUTE_VALUE {
            return Err(EncodeError::AttributeTooLong { typ, len: v.len() });
        }
        len += 2 + v.len();
    }
    if len > MAX_PACKET {
        return Err(EncodeError::TooLong(len));
    }
    let mut buf = Vec::with_capacity(len);
    buf.push(code.as_u8());
    buf.push(identifier);
    // len <= 4096 was checked above.
    buf.extend_from_slice(&(len as u16).to_be_bytes());
    buf.extend_from_slice(authenticator);
    buf.push(attr::MESSAGE_AUTHENTICATOR);
    buf.push(18);
    let ma_offset = buf.len();
    buf.extend_from_slice(&[0u8; 16]);
    for &(typ, v) in attrs.iter().chain(trailing) {
        buf.push(typ);
        // v.len() <= 253 was checked above.
        buf.push((v.len() + 2) as u8);
        buf.extend_from_slice(v);
    }
    Ok((buf, ma_offset))
}

/// Build a request (Access-Request or Status-Server): Message-Authenticator first and
/// computed, then `attrs` in order. `authenticator` is the random Request Authenticator;
/// a User-Password in `attrs` must already be hidden with it.
pub fn encode_request(
    code: Code,
    identifier: u8,
    authenticator: [u8; 16],
    attrs: &[(u8, &[u8])],
    secret: &[u8],
) -> Result<Vec<u8>, EncodeError> {
    let (mut buf, ma) = lay_out(code, identifier, &authenticator, attrs, &[])?;
    let mac = message_authenticator(&buf, &authenticator, ma, &Secret::new(secret));
    buf[ma..ma + 16].copy_from_slice(&mac);
    Ok(buf)
}

/// Build the reply to `request`: Message-Authenticator first (computed over the reply with
/// the request's authenticator in the authenticator field, RFC 3579 §3.2), then `attrs`,
/// then the request's Proxy-State attributes in order (RFC 2865 §5.33); the identifier is
/// the request's and the Response Authenticator is
/// MD5(Code | Identifier | Length | Request Authenticator | Attributes | Secret).
pub fn encode_response(
    code: Code,
    request: &Packet<'_>,
    attrs: &[(u8, &[u8])],
    secret: &[u8],
) -> Result<Vec<u8>, EncodeError> {
    encode_response_keyed(code, request, attrs, &Secret::new(secret))
}

/// [`encode_response`] with a secret whose key schedule is done (a server's, loaded once
/// per NAS).
pub fn encode_response_keyed(
    code: Code,
    request: &Packet<'_>,
    attrs: &[(u8, &[u8])],
    secret: &Secret,
) -> Result<Vec<u8>, EncodeError> {
    let proxy: Vec<(u8, &[u8])> = request
        .attributes()
        .filter(|&(t, _)| t == attr::PROXY_STATE)
        .collect();
    let (mut buf, ma) = lay_out(
        code,
        request.identifier,
        &request.authenticator,
        attrs,
        &proxy,
    )?;
    let mac = message_authenticator(&buf, &request.authenticator, ma, secret);
    buf[ma..ma + 16].copy_from_slice(&mac);
    let response = response_authenticator(&buf, &request.authenticator, secret.raw());
    buf[4..20].copy_from_slice(&response);
    Ok(buf)
}

pub(crate) fn response_authenticator(
    packet: &[u8],
    request_authenticator: &[u8; 16],
    secret: &[u8],
) -> [u8; 16] {
    Md5::new()
        .chain_update(&packet[..4])
        .chain_update(request_authenticator)
        .chain_update(&packet[MIN_PACKET..])
        .chain_update(secret)
        .finalize()
        .into()
}

/// Client side: parse a reply and check its Response Authenticator against the request
/// authenticator we sent, and its Message-Authenticator (which must be present when
/// `require_message_authenticator`).
pub fn verify_response<'a>(
    raw: &'a [u8],
    request_authenticator: &[u8; 16],
    secret: &[u8],
    require_message_authenticator: bool,
) -> Result<Packet<'a>, ResponseError> {
    let packet = Packet::parse(raw)?;
    let expected = response_authenticator(packet.raw(), request_authenticator, secret);
    if !bool::from(expected.ct_eq(&packet.authenticator)) {
        return Err(ResponseError::BadResponseAuthenticator);
    }
    match check_message_authenticator(&packet, request_authenticator, &Secret::new(secret)) {
        MessageAuthenticator::Valid => Ok(packet),
        MessageAuthenticator::Absent if !require_message_authenticator => Ok(packet),
        MessageAuthenticator::Absent => Err(ResponseError::MissingMessageAuthenticator),
        MessageAuthenticator::Invalid => Err(ResponseError::BadMessageAuthenticator),
    }
}
