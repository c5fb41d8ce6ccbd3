//! Fuzz RADIUS/1.1 decoding (RFC 9765, issue 28) as the RadSec door does it on a
//! connection that negotiated "radius/1.1": an untrusted stream cut into packets, each
//! parsed and read the 1.1 way (Token, User-Password in the clear, accounting record, the
//! MPPE key strings a NAS decodes), and answered. Any panic is a bug; so is a reply that
//! does not carry its request's Token, that sets a reserved octet, or that carries a
//! Message-Authenticator, and a User-Password accepted outside 1..=128 octets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_radius::{AcctRequest, Code, Deframer, Packet, attr, v11};

fuzz_target!(|data: &[u8]| {
    let mut d = Deframer::new();
    d.push(data);
    while let Ok(Some(raw)) = d.next_packet() {
        let Ok(p) = Packet::parse(&raw) else {
            continue;
        };
        let token = v11::token(&p);
        if let Ok(Some(pw)) = v11::user_password(&p) {
            assert!((1..=128).contains(&pw.len()));
        }
        if p.code == Code::AccountingRequest {
            let _ = AcctRequest::parse(&p);
        }
        for (t, v) in p.attributes() {
            if t == attr::VENDOR_SPECIFIC
                && let Some((_, key)) = v11::decode_mppe_key_attribute(v)
            {
                assert_eq!(key.len() + 6, v.len());
            }
        }
        // Answered the 1.1 way, with the packet's own attributes echoed: the reply keeps
        // the sender rules whatever the request held (a Message-Authenticator in it is
        // never written back).
        let echo: Vec<(u8, &[u8])> = p.attributes().collect();
        if let Ok(reply) = v11::encode_response(Code::AccessAccept, &p, &echo) {
            let back = v11::verify_response(&reply, token).expect("a reply verifies");
            assert_eq!(back.count(attr::MESSAGE_AUTHENTICATOR), 0);
        }
        let _ = v11::verify_response(&raw, token);
    }
});
