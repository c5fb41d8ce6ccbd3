//! The client and server randoms of a TLS 1.2 handshake, read from the plaintext hello
//! messages as they cross the EAP layer (rustls does not expose them; the TLS 1.2
//! EAP Session-Id needs them).

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

#[cfg(test)]
mod tests {
    use super::*;

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
