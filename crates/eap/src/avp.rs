//! EAP-TTLS phase-2 attributes: Diameter AVPs (RFC 5281 §10): code (4 octets), flags
//! (V: vendor id present, M: mandatory), length (3 octets, header included, padding not),
//! optional vendor id, data, padding to a multiple of four octets.

use crate::EapError;

/// AVP flag bits.
pub mod flags {
    /// Vendor-ID present.
    pub const VENDOR: u8 = 0x80;
    /// Mandatory: a receiver that does not understand it must fail the exchange.
    pub const MANDATORY: u8 = 0x40;
}

/// AVP codes used by TTLS phase 2 (RADIUS attribute numbers, vendor 0).
pub mod code {
    /// User-Name.
    pub const USER_NAME: u32 = 1;
    /// User-Password (PAP inside the tunnel: the plaintext, null-padded).
    pub const USER_PASSWORD: u32 = 2;
    /// CHAP-Password.
    pub const CHAP_PASSWORD: u32 = 3;
    /// Reply-Message.
    pub const REPLY_MESSAGE: u32 = 18;
    /// CHAP-Challenge.
    pub const CHAP_CHALLENGE: u32 = 60;
    /// EAP-Message (an inner EAP method).
    pub const EAP_MESSAGE: u32 = 79;
}

/// One parsed AVP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avp<'a> {
    /// Its code.
    pub code: u32,
    /// Flags (V, M).
    pub flags: u8,
    /// Vendor-ID, when the V flag is set.
    pub vendor: Option<u32>,
    /// Its data, without padding.
    pub data: &'a [u8],
}

impl Avp<'_> {
    /// Whether the M flag is set.
    pub fn mandatory(&self) -> bool {
        self.flags & flags::MANDATORY != 0
    }
}

/// Parse a sequence of AVPs. The last one may omit its padding; no more than `max` AVPs.
pub fn parse(mut buf: &[u8], max: usize) -> Result<Vec<Avp<'_>>, EapError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        if out.len() == max {
            return Err(EapError::Avp("too many AVPs"));
        }
        if buf.len() < 8 {
            return Err(EapError::Avp("truncated AVP header"));
        }
        let code = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let flags = buf[4];
        let len = usize::from(buf[5]) << 16 | usize::from(buf[6]) << 8 | usize::from(buf[7]);
        let header = if flags & flags::VENDOR != 0 { 12 } else { 8 };
        if len < header || len > buf.len() {
            return Err(EapError::Avp("AVP length out of range"));
        }
        let vendor = (header == 12).then(|| u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]));
        out.push(Avp {
            code,
            flags,
            vendor,
            data: &buf[header..len],
        });
        let padded = len.next_multiple_of(4);
        buf = if padded >= buf.len() {
            &[]
        } else {
            &buf[padded..]
        };
    }
    Ok(out)
}

/// Append one AVP (vendor 0 when `vendor` is `None`), padded.
pub fn encode(out: &mut Vec<u8>, code: u32, vendor: Option<u32>, mandatory: bool, data: &[u8]) {
    let header = if vendor.is_some() { 12 } else { 8 };
    let len = header + data.len();
    out.extend_from_slice(&code.to_be_bytes());
    let mut f = if mandatory { flags::MANDATORY } else { 0 };
    if vendor.is_some() {
        f |= flags::VENDOR;
    }
    out.push(f);
    // AVPs we write are tiny (names, passwords); the 24-bit field cannot overflow.
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    if let Some(v) = vendor {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(data);
    out.resize(out.len() + (len.next_multiple_of(4) - len), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_padding_and_vendor() {
        let mut buf = Vec::new();
        encode(&mut buf, code::USER_NAME, None, true, b"alice");
        encode(&mut buf, 7, Some(311), false, b"xy");
        encode(
            &mut buf,
            code::USER_PASSWORD,
            None,
            true,
            b"0123456789abcdef",
        );
        assert_eq!(buf.len() % 4, 0);
        let avps = parse(&buf, 16).unwrap();
        assert_eq!(avps.len(), 3);
        assert_eq!(
            (avps[0].code, avps[0].data, avps[0].mandatory()),
            (1, &b"alice"[..], true)
        );
        assert_eq!((avps[1].vendor, avps[1].data), (Some(311), &b"xy"[..]));
        assert_eq!(avps[2].data, b"0123456789abcdef");
        // The last AVP's padding may be missing.
        let mut short = Vec::new();
        encode(&mut short, 1, None, true, b"bob");
        short.pop();
        assert_eq!(parse(&short, 4).unwrap()[0].data, b"bob");
    }

    #[test]
    fn malformed_avps_are_errors() {
        assert!(parse(&[0, 0, 0, 1, 0x40, 0, 0], 4).is_err());
        assert!(
            parse(&[0, 0, 0, 1, 0x40, 0, 0, 7], 4).is_err(),
            "shorter than header"
        );
        assert!(
            parse(&[0, 0, 0, 1, 0x40, 0, 0, 20, 1, 2], 4).is_err(),
            "past the end"
        );
        assert!(
            parse(&[0, 0, 0, 1, 0x80, 0, 0, 8], 4).is_err(),
            "vendor header"
        );
        let mut many = Vec::new();
        for _ in 0..5 {
            encode(&mut many, 1, None, false, b"");
        }
        assert!(parse(&many, 4).is_err());
    }
}
