//! RADIUS/1.1 (RFC 9765): the packet rules of a RadSec connection whose TLS handshake
//! negotiated the ALPN protocol "radius/1.1". TLS authenticates and hides everything, so
//! nothing here uses MD5 or a shared secret:
//!
//! - The header keeps its size but not its meaning (§4.1): octet 1 (the Identifier) is
//!   Reserved-1, octets 4..8 are the **Token** that matches a reply to its request (and
//!   the only thing duplicates are detected by, per connection, §4.2.2), octets 8..20 are
//!   Reserved-2. Reserved octets are sent as zero and ignored when received.
//! - There is no Request or Response Authenticator, and no Message-Authenticator: it is
//!   never sent, and one received is ignored as an invalid attribute (§5.2) — the server
//!   reads past it, it never checks it.
//! - Obfuscated attributes travel as their underlying type (§5.1): User-Password is the
//!   password itself (1..=128 octets), MS-MPPE-Send/Recv-Key are the keys themselves
//!   (Vendor-Specific 311, no salt, no length octet, no padding).
//! - A server that cannot process a request answers Protocol-Error (RFC 7930, code 52)
//!   with an Error-Cause (§6.1); a server that requires RADIUS/1.1 of a peer that did not
//!   negotiate it may say so with a Protocol-Error whose Token is zero, then close (§3.3.1).
//!
//! Packets are parsed with the same strict [`Packet::parse`] as RADIUS/1.0 (the layout of
//! lengths and attributes is unchanged); this module reads and writes what differs.

use thiserror::Error;

use crate::auth::{EncodeError, MAX_PASSWORD, PasswordError};
use crate::packet::{Code, MAX_ATTRIBUTE_VALUE, MAX_PACKET, MIN_PACKET, Packet, PacketError, attr};

/// ALPN name of historic RADIUS/TLS (RFC 9765 §3.1): "I can negotiate, but speak 1.0".
pub const ALPN_RADIUS_1_0: &[u8] = b"radius/1.0";
/// ALPN name of RADIUS/1.1 (RFC 9765 §3.1).
pub const ALPN_RADIUS_1_1: &[u8] = b"radius/1.1";
/// Protocol-Error packet code (RFC 7930 §4).
pub const PROTOCOL_ERROR: u8 = 52;
/// Error-Cause attribute (RFC 5176 §3.6).
pub const ERROR_CAUSE: u8 = 101;
/// Error-Cause "Unsupported Extension": the peer did not negotiate RADIUS/1.1 (§3.3.1).
pub const UNSUPPORTED_EXTENSION: u32 = 406;
/// Error-Cause "Resources Unavailable": a home server that cannot process a request
/// and has no better reason (§6.1).
pub const RESOURCES_UNAVAILABLE: u32 = 506;

/// The Token field of a RADIUS/1.1 packet: octets 4..8, opaque.
pub fn token(packet: &Packet<'_>) -> [u8; 4] {
    let a = packet.authenticator;
    [a[0], a[1], a[2], a[3]]
}

/// The User-Password of a RADIUS/1.1 Access-Request, as sent (RFC 9765 §5.1.1: a
/// 'string' of 1..=128 octets, not hidden). `Ok(None)`: the request has none.
pub fn user_password<'a>(packet: &Packet<'a>) -> Result<Option<&'a [u8]>, PasswordError> {
    match packet.attr(attr::USER_PASSWORD) {
        None => Ok(None),
        Some(p) if p.is_empty() || p.len() > MAX_PASSWORD => {
            Err(PasswordError::BadPlaintextLength(p.len()))
        }
        Some(p) => Ok(Some(p)),
    }
}

/// A RADIUS/1.1 packet: `code`, Reserved-1 zero, `token`, Reserved-2 zero, then `attrs`
/// and `trailing` in order. A Message-Authenticator among them is not written (§5.2: it
/// MUST NOT be sent).
fn lay_out(
    code: u8,
    token: [u8; 4],
    attrs: &[(u8, &[u8])],
    trailing: &[(u8, &[u8])],
) -> Result<Vec<u8>, EncodeError> {
    let kept = || {
        attrs
            .iter()
            .chain(trailing)
            .filter(|(t, _)| *t != attr::MESSAGE_AUTHENTICATOR)
    };
    let mut len = MIN_PACKET;
    for &(typ, v) in kept() {
        if v.len() > MAX_ATTRIBUTE_VALUE {
            return Err(EncodeError::AttributeTooLong { typ, len: v.len() });
        }
        len += 2 + v.len();
    }
    if len > MAX_PACKET {
        return Err(EncodeError::TooLong(len));
    }
    let mut buf = Vec::with_capacity(len);
    buf.push(code);
    buf.push(0);
    // len <= 4096 was checked above.
    buf.extend_from_slice(&(len as u16).to_be_bytes());
    buf.extend_from_slice(&token);
    buf.extend_from_slice(&[0u8; 12]);
    for &(typ, v) in kept() {
        buf.push(typ);
        // v.len() <= 253 was checked above.
        buf.push((v.len() + 2) as u8);
        buf.extend_from_slice(v);
    }
    Ok(buf)
}

/// Client side: a request (Access-Request, Accounting-Request, Status-Server) with
/// `token`; a User-Password in `attrs` is the password itself.
pub fn encode_request(
    code: Code,
    token: [u8; 4],
    attrs: &[(u8, &[u8])],
) -> Result<Vec<u8>, EncodeError> {
    lay_out(code.as_u8(), token, attrs, &[])
}

/// Server side: the reply to `request`: its Token, then `attrs`, then the request's
/// Proxy-State attributes in order (RFC 2865 §5.33, unchanged by RFC 9765).
pub fn encode_response(
    code: Code,
    request: &Packet<'_>,
    attrs: &[(u8, &[u8])],
) -> Result<Vec<u8>, EncodeError> {
    let proxy: Vec<(u8, &[u8])> = request
        .attributes()
        .filter(|&(t, _)| t == attr::PROXY_STATE)
        .collect();
    lay_out(code.as_u8(), token(request), attrs, &proxy)
}

/// A Protocol-Error (RFC 7930 §4) with `token` (zero when it answers no request, §3.3.1),
/// an Error-Cause and a Reply-Message saying why, for an administrator to read.
pub fn encode_protocol_error(token: [u8; 4], cause: u32, message: &str) -> Vec<u8> {
    let message = &message.as_bytes()[..message.len().min(MAX_ATTRIBUTE_VALUE)];
    let cause = cause.to_be_bytes();
    // Two short attributes: cannot exceed 4096 octets.
    lay_out(
        PROTOCOL_ERROR,
        token,
        &[(ERROR_CAUSE, &cause), (attr::REPLY_MESSAGE, message)],
        &[],
    )
    .unwrap_or_default()
}

/// The Vendor-Specific value of an MS-MPPE-Send/Recv-Key over RADIUS/1.1 (§5.1.4: the
/// key as a 'string', vendor 311): vendor id, `vendor_type`, length, key (cut at 64
/// octets like the RFC 2548 encoding).
pub fn mppe_key_attribute(vendor_type: u8, key: &[u8]) -> Vec<u8> {
    let key = &key[..key.len().min(crate::mppe::MAX_KEY)];
    let mut v = Vec::with_capacity(6 + key.len());
    v.extend_from_slice(&attr::VENDOR_MICROSOFT.to_be_bytes());
    v.push(vendor_type);
    // 2 + at most 64 octets.
    v.push((2 + key.len()) as u8);
    v.extend_from_slice(key);
    v
}

/// The (vendor type, key) of an MS-MPPE key Vendor-Specific value sent over RADIUS/1.1
/// (a NAS's or a test's side); `None` if it is not one.
pub fn decode_mppe_key_attribute(value: &[u8]) -> Option<(u8, &[u8])> {
    let (vendor, rest) = value.split_at_checked(4)?;
    if vendor != attr::VENDOR_MICROSOFT.to_be_bytes() || rest.len() < 2 {
        return None;
    }
    (usize::from(rest[1]) == rest.len()).then(|| (rest[0], &rest[2..]))
}

/// A reply that does not answer our RADIUS/1.1 request.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReplyError {
    /// Not a RADIUS packet.
    #[error("malformed reply: {0}")]
    Malformed(#[from] PacketError),
    /// Another request's Token.
    #[error("reply carries another request's Token")]
    OtherToken,
    /// Reserved octets set, or a Message-Authenticator sent (RFC 9765 §4.1, §5.2: a
    /// sender MUST NOT): a peer that does not speak RADIUS/1.1.
    #[error("reply breaks RADIUS/1.1 (reserved octets set or Message-Authenticator sent)")]
    NotRadius11,
}

/// Client side: parse a reply and check that it answers the request sent with `token`
/// and keeps RADIUS/1.1's sender rules.
pub fn verify_response(raw: &[u8], token: [u8; 4]) -> Result<Packet<'_>, ReplyError> {
    let packet = Packet::parse(raw)?;
    if self::token(&packet) != token {
        return Err(ReplyError::OtherToken);
    }
    if packet.identifier != 0
        || packet.authenticator[4..] != [0u8; 12]
        || packet.count(attr::MESSAGE_AUTHENTICATOR) > 0
    {
        return Err(ReplyError::NotRadius11);
    }
    Ok(packet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_28_requests_carry_the_token_and_no_md5() {
        let token = [0xde, 0xad, 0xbe, 0xef];
        let p = encode_request(
            Code::AccessRequest,
            token,
            &[
                (attr::USER_NAME, b"alice"),
                (attr::MESSAGE_AUTHENTICATOR, &[9; 16]),
                (attr::USER_PASSWORD, b"correct horse"),
            ],
        )
        .unwrap();
        assert_eq!(&p[..2], &[1, 0], "code, Reserved-1 zero");
        assert_eq!(&p[4..8], &token);
        assert_eq!(&p[8..20], &[0u8; 12], "Reserved-2 zero");
        let parsed = Packet::parse(&p).unwrap();
        assert_eq!(parsed.count(attr::MESSAGE_AUTHENTICATOR), 0, "never sent");
        assert_eq!(user_password(&parsed).unwrap(), Some(&b"correct horse"[..]));
        assert_eq!(self::token(&parsed), token);
    }

    #[test]
    fn issue_28_a_reply_copies_token_and_proxy_state_and_nothing_else() {
        let mut req = encode_request(
            Code::AccountingRequest,
            [1, 2, 3, 4],
            &[(attr::PROXY_STATE, b"p1"), (attr::PROXY_STATE, b"p2")],
        )
        .unwrap();
        // Reserved octets a peer set anyway are ignored, never echoed.
        req[1] = 77;
        req[10] = 5;
        let request = Packet::parse(&req).unwrap();
        let reply = encode_response(Code::AccountingResponse, &request, &[]).unwrap();
        assert_eq!(reply[1], 0);
        assert_eq!(&reply[4..8], &[1, 2, 3, 4]);
        assert_eq!(&reply[8..20], &[0u8; 12]);
        let p = verify_response(&reply, [1, 2, 3, 4]).unwrap();
        let proxy: Vec<&[u8]> = p
            .attributes()
            .filter(|a| a.0 == attr::PROXY_STATE)
            .map(|a| a.1)
            .collect();
        assert_eq!(proxy, vec![&b"p1"[..], &b"p2"[..]]);
        assert_eq!(
            verify_response(&reply, [1, 2, 3, 5]).unwrap_err(),
            ReplyError::OtherToken
        );
    }

    #[test]
    fn issue_28_a_reply_that_breaks_the_sender_rules_is_refused() {
        let good = encode_request(Code::AccessAccept, [7; 4], &[]).unwrap();
        for (at, v) in [(1usize, 1u8), (8, 1), (19, 0x80)] {
            let mut bad = good.clone();
            bad[at] = v;
            assert_eq!(
                verify_response(&bad, [7; 4]).unwrap_err(),
                ReplyError::NotRadius11,
                "octet {at}"
            );
        }
        let mut with_ma = good.clone();
        with_ma.extend_from_slice(&[attr::MESSAGE_AUTHENTICATOR, 18]);
        with_ma.extend_from_slice(&[0; 16]);
        with_ma[3] = with_ma.len() as u8;
        assert_eq!(
            verify_response(&with_ma, [7; 4]).unwrap_err(),
            ReplyError::NotRadius11
        );
    }

    #[test]
    fn issue_28_user_password_is_1_to_128_octets() {
        for (len, ok) in [(0usize, false), (1, true), (128, true), (129, false)] {
            let pw = vec![b'x'; len];
            let p =
                encode_request(Code::AccessRequest, [0; 4], &[(attr::USER_PASSWORD, &pw)]).unwrap();
            let parsed = Packet::parse(&p).unwrap();
            assert_eq!(user_password(&parsed).is_ok(), ok, "{len}");
        }
        let none = encode_request(Code::AccessRequest, [0; 4], &[]).unwrap();
        assert_eq!(user_password(&Packet::parse(&none).unwrap()), Ok(None));
    }

    #[test]
    fn issue_28_mppe_keys_travel_as_strings() {
        let key: Vec<u8> = (0..32).collect();
        let v = mppe_key_attribute(crate::mppe::MS_MPPE_RECV_KEY, &key);
        assert_eq!(&v[..4], &311u32.to_be_bytes());
        assert_eq!(v.len(), 4 + 2 + 32, "no salt, no length octet, no padding");
        assert_eq!(
            decode_mppe_key_attribute(&v),
            Some((crate::mppe::MS_MPPE_RECV_KEY, &key[..]))
        );
        assert_eq!(decode_mppe_key_attribute(&v[..v.len() - 1]), None);
        assert_eq!(decode_mppe_key_attribute(&[0, 0, 1, 56, 16, 2]), None);
    }

    #[test]
    fn issue_28_protocol_error_says_why_with_a_zero_token() {
        let p = encode_protocol_error([0; 4], UNSUPPORTED_EXTENSION, "RADIUS/1.1 required");
        let parsed = Packet::parse(&p).unwrap();
        assert_eq!(parsed.code, Code::Other(PROTOCOL_ERROR));
        assert_eq!(parsed.attr(ERROR_CAUSE), Some(&406u32.to_be_bytes()[..]));
        assert_eq!(
            parsed.attr(attr::REPLY_MESSAGE),
            Some(&b"RADIUS/1.1 required"[..])
        );
        assert_eq!(&p[1..2], &[0]);
        assert_eq!(&p[4..20], &[0u8; 16]);
    }
}
