//! The RADIUS packet layout (RFC 2865 §3, §5): codes, the strict parser, and the attribute
//! type numbers Portcullis reads or writes.
//!
//! The parser borrows the datagram and checks every length before anything is read, so
//! a hostile packet costs one linear scan and no allocation beyond the attribute index.

use thiserror::Error;

/// Smallest legal packet: code, identifier, length and the 16-octet authenticator.
pub const MIN_PACKET: usize = 20;
/// Largest legal packet (RFC 2865 §3).
pub const MAX_PACKET: usize = 4096;
/// Largest attribute value (the length octet counts type and length too).
pub const MAX_ATTRIBUTE_VALUE: usize = 253;

/// Attribute type numbers (RFC 2865, 2869, 3162, 3579).
pub mod attr {
    /// RFC 2865 §5.1.
    pub const USER_NAME: u8 = 1;
    /// RFC 2865 §5.2 (hidden with the shared secret).
    pub const USER_PASSWORD: u8 = 2;
    /// RFC 2865 §5.3.
    pub const CHAP_PASSWORD: u8 = 3;
    /// RFC 2865 §5.4.
    pub const NAS_IP_ADDRESS: u8 = 4;
    /// RFC 2865 §5.5.
    pub const NAS_PORT: u8 = 5;
    /// RFC 2865 §5.6.
    pub const SERVICE_TYPE: u8 = 6;
    /// RFC 2865 §5.8: the address the NAS gave the user.
    pub const FRAMED_IP_ADDRESS: u8 = 8;
    /// RFC 2865 §5.12: the NAS's link MTU (bounds EAP fragments).
    pub const FRAMED_MTU: u8 = 12;
    /// RFC 2865 §5.18.
    pub const REPLY_MESSAGE: u8 = 18;
    /// RFC 2865 §5.24.
    pub const STATE: u8 = 24;
    /// RFC 2865 §5.25.
    pub const CLASS: u8 = 25;
    /// RFC 2865 §5.26.
    pub const VENDOR_SPECIFIC: u8 = 26;
    /// RFC 2865 §5.30.
    pub const CALLED_STATION_ID: u8 = 30;
    /// RFC 2865 §5.31.
    pub const CALLING_STATION_ID: u8 = 31;
    /// RFC 2865 §5.32.
    pub const NAS_IDENTIFIER: u8 = 32;
    /// RFC 2865 §5.33 (copied into replies unchanged, in order).
    pub const PROXY_STATE: u8 = 33;
    /// RFC 2866 §5.1: Start, Stop, Interim-Update (RFC 2869), Accounting-On/Off.
    pub const ACCT_STATUS_TYPE: u8 = 40;
    /// RFC 2866 §5.2: seconds the NAS has been trying to send this record.
    pub const ACCT_DELAY_TIME: u8 = 41;
    /// RFC 2866 §5.3 (low 32 bits; the rest in Acct-Input-Gigawords).
    pub const ACCT_INPUT_OCTETS: u8 = 42;
    /// RFC 2866 §5.4 (low 32 bits; the rest in Acct-Output-Gigawords).
    pub const ACCT_OUTPUT_OCTETS: u8 = 43;
    /// RFC 2866 §5.5.
    pub const ACCT_SESSION_ID: u8 = 44;
    /// RFC 2866 §5.7.
    pub const ACCT_SESSION_TIME: u8 = 46;
    /// RFC 2866 §5.8.
    pub const ACCT_INPUT_PACKETS: u8 = 47;
    /// RFC 2866 §5.9.
    pub const ACCT_OUTPUT_PACKETS: u8 = 48;
    /// RFC 2866 §5.10.
    pub const ACCT_TERMINATE_CAUSE: u8 = 49;
    /// RFC 2869 §5.1: how many times Acct-Input-Octets wrapped around 2^32.
    pub const ACCT_INPUT_GIGAWORDS: u8 = 52;
    /// RFC 2869 §5.2.
    pub const ACCT_OUTPUT_GIGAWORDS: u8 = 53;
    /// RFC 2869 §5.3: when the event happened (unix seconds, the NAS's clock).
    pub const EVENT_TIMESTAMP: u8 = 55;
    /// RFC 2865 §5.40.
    pub const CHAP_CHALLENGE: u8 = 60;
    /// RFC 2865 §5.41.
    pub const NAS_PORT_TYPE: u8 = 61;
    /// RFC 3579 §3.1.
    pub const EAP_MESSAGE: u8 = 79;
    /// RFC 3579 §3.2 / RFC 2869 §5.14.
    pub const MESSAGE_AUTHENTICATOR: u8 = 80;
    /// RFC 3162 §2.1.
    pub const NAS_IPV6_ADDRESS: u8 = 95;
    /// RFC 6911 §3.1.
    pub const FRAMED_IPV6_ADDRESS: u8 = 168;
    /// RFC 4072 §6.2: the EAP Session-Id, sent when the NAS asks for it.
    pub const EAP_KEY_NAME: u8 = 102;
    /// Microsoft's vendor id: MS-CHAP attributes live in Vendor-Specific under it
    /// (RFC 2548).
    pub const VENDOR_MICROSOFT: u32 = 311;
}

/// Packet type (RFC 2865 §3, RFC 5997).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// 1.
    AccessRequest,
    /// 2.
    AccessAccept,
    /// 3.
    AccessReject,
    /// 4.
    AccountingRequest,
    /// 5.
    AccountingResponse,
    /// 11.
    AccessChallenge,
    /// 12 (RFC 5997).
    StatusServer,
    /// 13 (reserved).
    StatusClient,
    /// Anything else: parsed, never answered.
    Other(u8),
}

impl Code {
    /// The code of a wire octet.
    pub fn from_u8(v: u8) -> Code {
        match v {
            1 => Code::AccessRequest,
            2 => Code::AccessAccept,
            3 => Code::AccessReject,
            4 => Code::AccountingRequest,
            5 => Code::AccountingResponse,
            11 => Code::AccessChallenge,
            12 => Code::StatusServer,
            13 => Code::StatusClient,
            other => Code::Other(other),
        }
    }

    /// The wire octet.
    pub fn as_u8(self) -> u8 {
        match self {
            Code::AccessRequest => 1,
            Code::AccessAccept => 2,
            Code::AccessReject => 3,
            Code::AccountingRequest => 4,
            Code::AccountingResponse => 5,
            Code::AccessChallenge => 11,
            Code::StatusServer => 12,
            Code::StatusClient => 13,
            Code::Other(v) => v,
        }
    }
}

/// Why a datagram is not a RADIUS packet. Messages never include packet bytes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PacketError {
    /// Fewer octets than a header.
    #[error("packet too short: {0} octets (at least 20)")]
    TooShort(usize),
    /// More than RFC 2865 allows.
    #[error("packet too long: {0} octets (at most 4096)")]
    TooLong(usize),
    /// The Length field is below 20, above 4096 or beyond the datagram.
    #[error("bad Length field {field} for a {datagram}-octet datagram")]
    BadLength {
        /// The Length field.
        field: usize,
        /// Octets received.
        datagram: usize,
    },
    /// An attribute's length is below 2 or runs past the packet's Length.
    #[error("bad attribute length at offset {offset}")]
    BadAttribute {
        /// Offset of the attribute's type octet.
        offset: usize,
    },
}

/// A parsed packet borrowing its datagram; attribute order is kept.
#[derive(Debug, Clone)]
pub struct Packet<'a> {
    /// Packet type.
    pub code: Code,
    /// Matches a reply to its request (per source address and port).
    pub identifier: u8,
    /// Request Authenticator (random, in requests) or Response Authenticator (replies).
    pub authenticator: [u8; 16],
    /// The packet's first `Length` octets (trailing padding dropped).
    raw: &'a [u8],
    /// (type, offset of the value in `raw`, value length), in wire order.
    attrs: Vec<(u8, u16, u8)>,
}

impl<'a> Packet<'a> {
    /// Parse a datagram (RFC 2865 §3): 20..=4096 octets; the Length field must be at least
    /// 20 and at most the datagram's size (octets past Length are padding and ignored);
    /// attributes must have a length of at least 2 and fill Length exactly.
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, PacketError> {
        if buf.len() < MIN_PACKET {
            return Err(PacketError::TooShort(buf.len()));
        }
        if buf.len() > MAX_PACKET {
            return Err(PacketError::TooLong(buf.len()));
        }
        let length = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
        if !(MIN_PACKET..=MAX_PACKET).contains(&length) || length > buf.len() {
            return Err(PacketError::BadLength {
                field: length,
                datagram: buf.len(),
            });
        }
        let raw = &buf[..length];
        let mut attrs = Vec::new();
        let mut at = MIN_PACKET;
        while at < length {
            if at + 2 > length {
                return Err(PacketError::BadAttribute { offset: at });
            }
            let len = usize::from(raw[at + 1]);
            if len < 2 || at + len > length {
                return Err(PacketError::BadAttribute { offset: at });
            }
            // Offsets fit: the packet is at most 4096 octets, a value at most 253.
            attrs.push((raw[at], (at + 2) as u16, (len - 2) as u8));
            at += len;
        }
        let mut authenticator = [0u8; 16];
        authenticator.copy_from_slice(&raw[4..20]);
        Ok(Packet {
            code: Code::from_u8(raw[0]),
            identifier: raw[1],
            authenticator,
            raw,
            attrs,
        })
    }

    /// Every attribute as (type, value), in wire order.
    pub fn attributes(&self) -> impl Iterator<Item = (u8, &'a [u8])> + '_ {
        let raw = self.raw;
        self.attrs.iter().map(move |&(t, off, len)| {
            let off = usize::from(off);
            (t, &raw[off..off + usize::from(len)])
        })
    }

    /// The first attribute of type `typ`.
    pub fn attr(&self, typ: u8) -> Option<&'a [u8]> {
        self.attributes().find(|&(t, _)| t == typ).map(|(_, v)| v)
    }

    /// How many attributes of type `typ` there are.
    pub fn count(&self, typ: u8) -> usize {
        self.attrs.iter().filter(|a| a.0 == typ).count()
    }

    /// Whether a Vendor-Specific attribute of `vendor` is present (e.g. MS-CHAP under
    /// Microsoft's 311).
    pub fn has_vendor(&self, vendor: u32) -> bool {
        self.attributes().any(|(t, v)| {
            t == attr::VENDOR_SPECIFIC
                && v.len() >= 4
                && u32::from_be_bytes([v[0], v[1], v[2], v[3]]) == vendor
        })
    }

    /// The packet's first `Length` octets.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Offsets (in [`Packet::raw`]) of the values of every attribute of type `typ`.
    pub(crate) fn value_offsets(&self, typ: u8) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.attrs
            .iter()
            .filter(move |a| a.0 == typ)
            .map(|&(_, off, len)| (usize::from(off), usize::from(len)))
    }
}
