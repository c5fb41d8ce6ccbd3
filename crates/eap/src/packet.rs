//! The EAP packet layout (RFC 3748 §4, §5): codes, method types, the strict parser and the
//! encoders. The parser borrows its input and checks every length before reading.

use crate::EapError;

/// Octets of the EAP header (code, identifier, length).
pub const HEADER: usize = 4;

/// EAP method types this server reads or names (RFC 3748 §5, IANA "Method Types").
pub mod method {
    /// RFC 3748 §5.1.
    pub const IDENTITY: u8 = 1;
    /// RFC 3748 §5.2.
    pub const NOTIFICATION: u8 = 2;
    /// Legacy Nak, RFC 3748 §5.3.1 (Response only).
    pub const NAK: u8 = 3;
    /// RFC 3748 §5.4.
    pub const MD5_CHALLENGE: u8 = 4;
    /// EAP-TLS, RFC 5216 / RFC 9190.
    pub const TLS: u8 = 13;
    /// EAP-TTLS, RFC 5281 / RFC 9427.
    pub const TTLS: u8 = 21;
    /// PEAP (Microsoft; needs an NT hash for its usual inner MSCHAPv2).
    pub const PEAP: u8 = 25;
    /// EAP-MSCHAPv2 (needs an NT hash).
    pub const MSCHAPV2: u8 = 26;
    /// Expanded types, RFC 3748 §5.7.
    pub const EXPANDED: u8 = 254;

    /// A short name for logs and audit events.
    pub fn name(t: u8) -> &'static str {
        match t {
            IDENTITY => "identity",
            NOTIFICATION => "notification",
            NAK => "nak",
            MD5_CHALLENGE => "md5",
            TLS => "tls",
            TTLS => "ttls",
            PEAP => "peap",
            MSCHAPV2 => "mschapv2",
            EXPANDED => "expanded",
            _ => "other",
        }
    }
}

/// EAP packet code (RFC 3748 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// 1: from the authenticator (the server, through the NAS).
    Request,
    /// 2: from the peer.
    Response,
    /// 3.
    Success,
    /// 4.
    Failure,
}

impl Code {
    /// The wire octet.
    pub fn as_u8(self) -> u8 {
        match self {
            Code::Request => 1,
            Code::Response => 2,
            Code::Success => 3,
            Code::Failure => 4,
        }
    }

    fn from_u8(v: u8) -> Option<Code> {
        Some(match v {
            1 => Code::Request,
            2 => Code::Response,
            3 => Code::Success,
            4 => Code::Failure,
            _ => return None,
        })
    }
}

/// One parsed EAP packet, borrowing its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Request, Response, Success or Failure.
    pub code: Code,
    /// Matches a Response to its Request.
    pub identifier: u8,
    /// The method type (Request and Response only).
    pub method: Option<u8>,
    /// What follows the type octet (empty for Success/Failure).
    pub data: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Parse one EAP packet. Its Length must equal `buf.len()` exactly: over RADIUS the
    /// packet is the concatenation of the EAP-Message attributes, with no link-layer
    /// padding, so any difference is a malformed or truncated message.
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, EapError> {
        if buf.len() < HEADER {
            return Err(EapError::Truncated);
        }
        let code = Code::from_u8(buf[0]).ok_or(EapError::UnknownCode(buf[0]))?;
        let len = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
        if len != buf.len() {
            return Err(EapError::LengthMismatch {
                declared: len,
                actual: buf.len(),
            });
        }
        match code {
            Code::Success | Code::Failure => Ok(Packet {
                code,
                identifier: buf[1],
                method: None,
                data: &buf[HEADER..],
            }),
            Code::Request | Code::Response => {
                if len < HEADER + 1 {
                    return Err(EapError::Truncated);
                }
                Ok(Packet {
                    code,
                    identifier: buf[1],
                    method: Some(buf[HEADER]),
                    data: &buf[HEADER + 1..],
                })
            }
        }
    }
}

/// Encode a Request or Response of `method` carrying `data`. Fails only when the packet
/// would not fit EAP's 16-bit length.
pub fn encode(code: Code, identifier: u8, method: u8, data: &[u8]) -> Result<Vec<u8>, EapError> {
    let len = HEADER + 1 + data.len();
    let wire = u16::try_from(len).map_err(|_| EapError::TooLong(len))?;
    let mut out = Vec::with_capacity(len);
    out.push(code.as_u8());
    out.push(identifier);
    out.extend_from_slice(&wire.to_be_bytes());
    out.push(method);
    out.extend_from_slice(data);
    Ok(out)
}

/// EAP-Success (RFC 3748 §4.2): four octets.
pub fn success(identifier: u8) -> Vec<u8> {
    vec![Code::Success.as_u8(), identifier, 0, 4]
}

/// EAP-Failure (RFC 3748 §4.2): four octets.
pub fn failure(identifier: u8) -> Vec<u8> {
    vec![Code::Failure.as_u8(), identifier, 0, 4]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_identity_and_rejects_bad_lengths() {
        let p = Packet::parse(&[2, 7, 0, 10, 1, b'a', b'l', b'i', b'c', b'e']).unwrap();
        assert_eq!(p.code, Code::Response);
        assert_eq!(p.identifier, 7);
        assert_eq!(p.method, Some(method::IDENTITY));
        assert_eq!(p.data, b"alice");
        assert_eq!(Packet::parse(&[2, 7, 0]), Err(EapError::Truncated));
        assert_eq!(Packet::parse(&[9, 7, 0, 4]), Err(EapError::UnknownCode(9)));
        assert!(matches!(
            Packet::parse(&[2, 7, 0, 9, 1, b'a']),
            Err(EapError::LengthMismatch { .. })
        ));
        assert_eq!(Packet::parse(&[2, 7, 0, 4]), Err(EapError::Truncated));
        let wire = success(3);
        let s = Packet::parse(&wire).unwrap();
        assert_eq!((s.code, s.method), (Code::Success, None));
    }

    #[test]
    fn encodes_what_it_parses() {
        let wire = encode(Code::Request, 9, method::TLS, &[0x20]).unwrap();
        assert_eq!(wire, [1, 9, 0, 6, 13, 0x20]);
        assert!(encode(Code::Request, 0, 13, &vec![0; 70_000]).is_err());
    }
}
