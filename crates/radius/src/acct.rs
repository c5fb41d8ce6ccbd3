//! RADIUS accounting (RFC 2866, with RFC 2869's Interim-Update, Gigawords and
//! Event-Timestamp): the Accounting-Request authenticator check, the Accounting-Response
//! encoder, a client-side request encoder (lab and tests), and the typed record a server
//! stores ([`AcctRequest::parse`]).
//!
//! Authenticators (RFC 2866 §3): an Accounting-Request's authenticator is not random but
//! MD5(Code | Identifier | Length | 16 zero octets | Attributes | Secret), so a request
//! from someone without the secret is detected. A Message-Authenticator, when present, is
//! the HMAC-MD5 of the packet with the authenticator field zeroed (RFC 3579 §3.2 as
//! FreeRADIUS computes it for Accounting-Request) and must match. The Accounting-Response
//! carries no Message-Authenticator (RFC 2866 asks for none, and FreeRADIUS clients
//! check one in an Accounting-Response against a zeroed authenticator, not the RFC 3579
//! rule, so leaving it out is what every client accepts); its Response Authenticator is
//! the usual MD5 over the reply and the request's authenticator.
//!
//! The record parser is strict about what it reads: every integer attribute must be
//! exactly 4 octets, addresses 4 (IPv4) or 16 (IPv6) octets, Acct-Status-Type must be
//! present, and Acct-Session-Id must be present except in Accounting-On/Off (which speak
//! for the whole NAS). Anything else is an [`AcctError`], never a panic.

use std::net::{Ipv4Addr, Ipv6Addr};

use md5::{Digest, Md5};
use subtle::ConstantTimeEq;
use thiserror::Error;

use crate::auth::{
    EncodeError, MessageAuthenticator, message_authenticator, response_authenticator,
};
use crate::packet::{Code, MAX_ATTRIBUTE_VALUE, MAX_PACKET, MIN_PACKET, Packet, attr};
use crate::secret::Secret;

/// Acct-Status-Type (RFC 2866 §5.1, RFC 2869 §5.1 for Interim-Update).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusType {
    /// 1: a session began.
    Start,
    /// 2: a session ended (final counters).
    Stop,
    /// 3: a session's counters so far.
    InterimUpdate,
    /// 7: the NAS (re)started: every session it had open is over.
    AccountingOn,
    /// 8: the NAS is shutting down: every session it had open is over.
    AccountingOff,
    /// Any other value (tunnel accounting, Failed, vendor values): stored as it came.
    Other(u32),
}

impl StatusType {
    /// The type of a wire value.
    pub fn from_u32(v: u32) -> StatusType {
        match v {
            1 => StatusType::Start,
            2 => StatusType::Stop,
            3 => StatusType::InterimUpdate,
            7 => StatusType::AccountingOn,
            8 => StatusType::AccountingOff,
            other => StatusType::Other(other),
        }
    }

    /// The wire value.
    pub fn as_u32(self) -> u32 {
        match self {
            StatusType::Start => 1,
            StatusType::Stop => 2,
            StatusType::InterimUpdate => 3,
            StatusType::AccountingOn => 7,
            StatusType::AccountingOff => 8,
            StatusType::Other(v) => v,
        }
    }

    /// A stable lower-case label (metrics, CLI output); `other` for the rest, so the
    /// label set stays bounded whatever a NAS sends.
    pub fn label(self) -> &'static str {
        match self {
            StatusType::Start => "start",
            StatusType::Stop => "stop",
            StatusType::InterimUpdate => "interim_update",
            StatusType::AccountingOn => "accounting_on",
            StatusType::AccountingOff => "accounting_off",
            StatusType::Other(_) => "other",
        }
    }

    /// Accounting-On and -Off speak for the whole NAS, not one session.
    pub fn is_nas_wide(self) -> bool {
        matches!(self, StatusType::AccountingOn | StatusType::AccountingOff)
    }
}

/// Why an Accounting-Request is refused. Messages never include attribute values.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AcctError {
    /// Not an Accounting-Request.
    #[error("not an Accounting-Request")]
    NotAccountingRequest,
    /// The Request Authenticator is not the one the shared secret gives (RFC 2866 §3).
    #[error("Accounting-Request authenticator does not match the shared secret")]
    BadRequestAuthenticator,
    /// A Message-Authenticator is present but wrong, of the wrong length, or repeated.
    #[error("Accounting-Request Message-Authenticator does not match")]
    BadMessageAuthenticator,
    /// Acct-Status-Type is missing.
    #[error("Acct-Status-Type is missing")]
    MissingStatusType,
    /// Acct-Session-Id is missing (required except in Accounting-On/Off).
    #[error("Acct-Session-Id is missing")]
    MissingSessionId,
    /// An attribute has the wrong length for its type.
    #[error("attribute {0} has the wrong length for its type")]
    BadAttribute(u8),
}

/// Check an Accounting-Request's authenticators: the Request Authenticator always
/// (RFC 2866 §3), the Message-Authenticator when one is present. Returns whether a
/// Message-Authenticator was present (and valid).
pub fn check_accounting_request(
    packet: &Packet<'_>,
    secret: &[u8],
) -> Result<MessageAuthenticator, AcctError> {
    if packet.code != Code::AccountingRequest {
        return Err(AcctError::NotAccountingRequest);
    }
    let raw = packet.raw();
    let expected = request_authenticator(raw, secret);
    if !bool::from(expected.ct_eq(&packet.authenticator)) {
        return Err(AcctError::BadRequestAuthenticator);
    }
    let mut found = packet.value_offsets(attr::MESSAGE_AUTHENTICATOR);
    let Some((offset, len)) = found.next() else {
        return Ok(MessageAuthenticator::Absent);
    };
    if len != 16 || found.next().is_some() {
        return Err(AcctError::BadMessageAuthenticator);
    }
    let mac = message_authenticator(raw, &[0u8; 16], offset, &Secret::new(secret));
    if bool::from(mac.ct_eq(&raw[offset..offset + 16])) {
        Ok(MessageAuthenticator::Valid)
    } else {
        Err(AcctError::BadMessageAuthenticator)
    }
}

/// MD5(Code | Identifier | Length | 16 zero octets | Attributes | Secret).
fn request_authenticator(raw: &[u8], secret: &[u8]) -> [u8; 16] {
    Md5::new()
        .chain_update(&raw[..4])
        .chain_update([0u8; 16])
        .chain_update(&raw[MIN_PACKET..])
        .chain_update(secret)
        .finalize()
        .into()
}

/// Build the Accounting-Response to `request`: the request's identifier, its Proxy-State
/// attributes in order (RFC 2865 §5.33) and nothing else, and the Response Authenticator.
pub fn encode_accounting_response(
    request: &Packet<'_>,
    secret: &[u8],
) -> Result<Vec<u8>, EncodeError> {
    let proxy: Vec<&[u8]> = request
        .attributes()
        .filter(|&(t, _)| t == attr::PROXY_STATE)
        .map(|(_, v)| v)
        .collect();
    let len = MIN_PACKET + proxy.iter().map(|v| 2 + v.len()).sum::<usize>();
    if len > MAX_PACKET {
        return Err(EncodeError::TooLong(len));
    }
    let mut buf = Vec::with_capacity(len);
    buf.push(Code::AccountingResponse.as_u8());
    buf.push(request.identifier);
    // len <= 4096 was checked above.
    buf.extend_from_slice(&(len as u16).to_be_bytes());
    buf.extend_from_slice(&request.authenticator);
    for v in proxy {
        buf.push(attr::PROXY_STATE);
        // Parsed values are at most 253 octets.
        buf.push((v.len() + 2) as u8);
        buf.extend_from_slice(v);
    }
    let response = response_authenticator(&buf, &request.authenticator, secret);
    buf[4..20].copy_from_slice(&response);
    Ok(buf)
}

/// Client side (lab, tests): build an Accounting-Request with `attrs` in order, and a
/// Message-Authenticator first when `message_authenticator` is set; the authenticator
/// is computed as RFC 2866 §3 says.
pub fn encode_accounting_request(
    identifier: u8,
    attrs: &[(u8, &[u8])],
    secret: &[u8],
    message_authenticator_first: bool,
) -> Result<Vec<u8>, EncodeError> {
    let mut len = MIN_PACKET + if message_authenticator_first { 18 } else { 0 };
    for &(typ, v) in attrs {
        if v.len() > MAX_ATTRIBUTE_VALUE {
            return Err(EncodeError::AttributeTooLong { typ, len: v.len() });
        }
        len += 2 + v.len();
    }
    if len > MAX_PACKET {
        return Err(EncodeError::TooLong(len));
    }
    let mut buf = Vec::with_capacity(len);
    buf.push(Code::AccountingRequest.as_u8());
    buf.push(identifier);
    buf.extend_from_slice(&(len as u16).to_be_bytes());
    buf.extend_from_slice(&[0u8; 16]);
    let ma = message_authenticator_first.then(|| {
        buf.push(attr::MESSAGE_AUTHENTICATOR);
        buf.push(18);
        let at = buf.len();
        buf.extend_from_slice(&[0u8; 16]);
        at
    });
    for &(typ, v) in attrs {
        buf.push(typ);
        buf.push((v.len() + 2) as u8);
        buf.extend_from_slice(v);
    }
    if let Some(at) = ma {
        let mac = message_authenticator(&buf, &[0u8; 16], at, &Secret::new(secret));
        buf[at..at + 16].copy_from_slice(&mac);
    }
    let auth = request_authenticator(&buf, secret);
    buf[4..20].copy_from_slice(&auth);
    Ok(buf)
}

/// One Accounting-Request as a typed record, borrowing the packet's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcctRequest<'a> {
    /// What happened.
    pub status: StatusType,
    /// Acct-Session-Id; empty for an Accounting-On/Off that sent none.
    pub session_id: &'a [u8],
    /// User-Name.
    pub user_name: Option<&'a [u8]>,
    /// Calling-Station-Id (the user's MAC address or phone number).
    pub calling_station_id: Option<&'a [u8]>,
    /// Called-Station-Id (the access point's MAC and SSID, the VPN's address).
    pub called_station_id: Option<&'a [u8]>,
    /// NAS-Identifier.
    pub nas_identifier: Option<&'a [u8]>,
    /// NAS-Port.
    pub nas_port: Option<u32>,
    /// Framed-IP-Address: the address the user was given.
    pub framed_ip: Option<Ipv4Addr>,
    /// Framed-IPv6-Address.
    pub framed_ipv6: Option<Ipv6Addr>,
    /// Acct-Input-Octets with Acct-Input-Gigawords as the high 32 bits.
    pub input_octets: Option<u64>,
    /// Acct-Output-Octets with Acct-Output-Gigawords as the high 32 bits.
    pub output_octets: Option<u64>,
    /// Acct-Input-Packets.
    pub input_packets: Option<u32>,
    /// Acct-Output-Packets.
    pub output_packets: Option<u32>,
    /// Acct-Session-Time, seconds.
    pub session_time: Option<u32>,
    /// Acct-Terminate-Cause (RFC 2866 §5.10).
    pub terminate_cause: Option<u32>,
    /// Acct-Delay-Time, seconds (0 when absent).
    pub delay: u32,
    /// Event-Timestamp (unix seconds by the NAS's clock).
    pub event_timestamp: Option<u32>,
}

fn integer(typ: u8, v: &[u8]) -> Result<u32, AcctError> {
    <[u8; 4]>::try_from(v)
        .map(u32::from_be_bytes)
        .map_err(|_| AcctError::BadAttribute(typ))
}

fn first_integer(packet: &Packet<'_>, typ: u8) -> Result<Option<u32>, AcctError> {
    packet.attr(typ).map(|v| integer(typ, v)).transpose()
}

fn octets(low: Option<u32>, gigawords: Option<u32>) -> Option<u64> {
    low.map(|l| (u64::from(gigawords.unwrap_or(0)) << 32) | u64::from(l))
}

impl<'a> AcctRequest<'a> {
    /// Read the accounting attributes of an (authenticated) Accounting-Request. The first
    /// of a repeated attribute counts, as for every attribute Portcullis reads.
    pub fn parse(packet: &Packet<'a>) -> Result<AcctRequest<'a>, AcctError> {
        if packet.code != Code::AccountingRequest {
            return Err(AcctError::NotAccountingRequest);
        }
        let status = first_integer(packet, attr::ACCT_STATUS_TYPE)?
            .map(StatusType::from_u32)
            .ok_or(AcctError::MissingStatusType)?;
        let session_id = match packet.attr(attr::ACCT_SESSION_ID) {
            Some(v) => v,
            None if status.is_nas_wide() => &[],
            None => return Err(AcctError::MissingSessionId),
        };
        let framed_ip = packet
            .attr(attr::FRAMED_IP_ADDRESS)
            .map(|v| {
                <[u8; 4]>::try_from(v)
                    .map(Ipv4Addr::from)
                    .map_err(|_| AcctError::BadAttribute(attr::FRAMED_IP_ADDRESS))
            })
            .transpose()?;
        let framed_ipv6 = packet
            .attr(attr::FRAMED_IPV6_ADDRESS)
            .map(|v| {
                <[u8; 16]>::try_from(v)
                    .map(Ipv6Addr::from)
                    .map_err(|_| AcctError::BadAttribute(attr::FRAMED_IPV6_ADDRESS))
            })
            .transpose()?;
        Ok(AcctRequest {
            status,
            session_id,
            user_name: packet.attr(attr::USER_NAME),
            calling_station_id: packet.attr(attr::CALLING_STATION_ID),
            called_station_id: packet.attr(attr::CALLED_STATION_ID),
            nas_identifier: packet.attr(attr::NAS_IDENTIFIER),
            nas_port: first_integer(packet, attr::NAS_PORT)?,
            framed_ip,
            framed_ipv6,
            input_octets: octets(
                first_integer(packet, attr::ACCT_INPUT_OCTETS)?,
                first_integer(packet, attr::ACCT_INPUT_GIGAWORDS)?,
            ),
            output_octets: octets(
                first_integer(packet, attr::ACCT_OUTPUT_OCTETS)?,
                first_integer(packet, attr::ACCT_OUTPUT_GIGAWORDS)?,
            ),
            input_packets: first_integer(packet, attr::ACCT_INPUT_PACKETS)?,
            output_packets: first_integer(packet, attr::ACCT_OUTPUT_PACKETS)?,
            session_time: first_integer(packet, attr::ACCT_SESSION_TIME)?,
            terminate_cause: first_integer(packet, attr::ACCT_TERMINATE_CAUSE)?,
            delay: first_integer(packet, attr::ACCT_DELAY_TIME)?.unwrap_or(0),
            event_timestamp: first_integer(packet, attr::EVENT_TIMESTAMP)?,
        })
    }

    /// When the event happened (unix seconds): the Event-Timestamp when the NAS sent one
    /// (RFC 2869 §5.3: the event's own time, which a retransmission repeats while its
    /// Acct-Delay-Time grows, so it is taken as is), else `arrival` corrected by
    /// Acct-Delay-Time (RFC 2866 §5.2: the record waited that long at the NAS). Either
    /// way a retransmission with a new identifier and a larger delay is the same event as
    /// its original (to the second; without Event-Timestamp a retransmission arriving
    /// across a second boundary from its corrected original can differ by one).
    pub fn event_time(&self, arrival: i64) -> i64 {
        match self.event_timestamp {
            Some(t) => i64::from(t),
            None => arrival - i64::from(self.delay),
        }
    }
}

#[cfg(test)]
mod tests;
