//! The client and server randoms of a TLS 1.2 handshake, read from the plaintext hello
//! messages as they cross the EAP layer (rustls does not expose them; the TLS 1.2
//! EAP Session-Id needs them), and whether a ClientHello offers to resume a session
//! (the caller runs a resumption's cheap steps where a full handshake's signatures would
//! not belong).

/// Handshake type of ClientHello.
pub const CLIENT_HELLO: u8 = 1;
/// Handshake type of ServerHello.
pub const SERVER_HELLO: u8 = 2;

/// The random of the hello of type `hello` if `records` starts with a handshake record
/// holding it (record header 5, handshake header 4, version 2, then 32 random octets).
pub fn random(records: &[u8], hello: u8) -> Option<[u8; 32]> {
    const CONTENT_HANDSHAKE: u8 = 22;
    if records.len() < 5 + 4 + 2 + 32 || records[0] != CONTENT_HANDSHAKE || records[5] != hello {
        return None;
    }
    let mut r = [0u8; 32];
    r.copy_from_slice(&records[11..43]);
    Some(r)
}

/// TLS extension session_ticket (RFC 5077).
const EXT_SESSION_TICKET: u16 = 35;
/// TLS extension pre_shared_key (RFC 8446 §4.2.11).
const EXT_PRE_SHARED_KEY: u16 = 41;

/// Whether `records` starts with a whole ClientHello that offers a session to resume: a
/// non-empty session ticket (TLS 1.2) or a pre-shared key (TLS 1.3). Anything else,
/// malformed or cut short included, is `false`: the answer only steers where the message
/// is processed, never whether it is accepted.
pub fn offers_resumption(records: &[u8]) -> bool {
    client_hello_offers(records).unwrap_or(false)
}

fn client_hello_offers(records: &[u8]) -> Option<bool> {
    const CONTENT_HANDSHAKE: u8 = 22;
    let mut r = Reader(records);
    if r.u8()? != CONTENT_HANDSHAKE {
        return None;
    }
    r.take(2)?;
    let record = r.vec16()?;
    let mut h = Reader(record);
    if h.u8()? != CLIENT_HELLO {
        return None;
    }
    let len = h.take(3)?;
    let len = usize::from(len[0]) << 16 | usize::from(len[1]) << 8 | usize::from(len[2]);
    let mut m = Reader(h.0.get(..len)?);
    m.take(2 + 32)?;
    m.vec8()?; // session id
    m.vec16()?; // cipher suites
    m.vec8()?; // compression methods
    let mut ext = Reader(m.vec16()?);
    while !ext.0.is_empty() {
        let kind = u16::from_be_bytes(ext.take(2)?.try_into().ok()?);
        let body = ext.vec16()?;
        match kind {
            EXT_SESSION_TICKET if !body.is_empty() => return Some(true),
            EXT_PRE_SHARED_KEY => return Some(true),
            _ => {}
        }
    }
    Some(false)
}

/// Bounds-checked reads over a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }

    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = u16::from_be_bytes(self.take(2)?.try_into().ok()?);
        self.take(usize::from(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello record with these extensions (type, body).
    fn client_hello(exts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut ext = Vec::new();
        for (t, b) in exts {
            ext.extend(t.to_be_bytes());
            ext.extend((b.len() as u16).to_be_bytes());
            ext.extend(*b);
        }
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.extend([32]);
        body.extend([9u8; 32]);
        body.extend([0, 2, 0xc0, 0x2b, 1, 0]);
        body.extend((ext.len() as u16).to_be_bytes());
        body.extend(ext);
        let mut hs = vec![CLIENT_HELLO, 0, (body.len() >> 8) as u8, body.len() as u8];
        hs.extend(body);
        let mut rec = vec![22, 3, 1];
        rec.extend((hs.len() as u16).to_be_bytes());
        rec.extend(hs);
        rec
    }

    #[test]
    fn issue_25_a_client_hello_offering_a_ticket_or_psk_is_seen() {
        assert!(offers_resumption(&client_hello(&[
            (10, &[0, 2, 0, 23]),
            (35, &[1, 2, 3])
        ])));
        assert!(offers_resumption(&client_hello(&[(41, &[0; 40])])));
        // An empty ticket extension only asks for a ticket: a full handshake.
        assert!(!offers_resumption(&client_hello(&[
            (35, &[]),
            (43, &[2, 3, 4])
        ])));
        assert!(!offers_resumption(&client_hello(&[])));
        // Cut short anywhere, or not a ClientHello: no.
        let whole = client_hello(&[(35, &[1, 2, 3])]);
        for n in 0..whole.len() {
            assert!(!offers_resumption(&whole[..n]), "cut at {n}");
        }
        let mut server = whole.clone();
        server[5] = SERVER_HELLO;
        assert!(!offers_resumption(&server));
    }

    #[test]
    fn reads_the_random_of_a_hello_record_only() {
        let mut rec = vec![22, 3, 3, 0, 60, CLIENT_HELLO, 0, 0, 56, 3, 3];
        rec.extend((0..32).map(|i| i as u8));
        rec.extend([0u8; 20]);
        let r = random(&rec, CLIENT_HELLO).unwrap();
        assert_eq!(r[31], 31);
        assert_eq!(random(&rec, SERVER_HELLO), None);
        assert_eq!(random(&rec[..20], CLIENT_HELLO), None);
        rec[0] = 23;
        assert_eq!(random(&rec, CLIENT_HELLO), None);
    }
}
