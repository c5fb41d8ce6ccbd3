//! Fuzz the verification of presented tokens (introspection and revocation, issue 15).
//! First byte even: the rest, as text, is the presented token. Odd: the rest is a claims
//! payload that we sign with the test key, so the fuzzer reaches the claims parser and the
//! issuer/expiry checks behind the signature. Every input is a value or an error.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use portcullis_server::jwt::{KeyPair, KeySet};
use zeroize::Zeroizing;

const ISSUER: &str = "http://127.0.0.1:8080";

fn keys() -> &'static KeySet {
    static KEYS: OnceLock<KeySet> = OnceLock::new();
    KEYS.get_or_init(|| {
        let pair = KeyPair::from_seed("fuzz-kid", &Zeroizing::new([7u8; 32]))
            .unwrap_or_else(|e| panic!("test key: {e}"));
        let published = vec![pair.public()];
        KeySet {
            current: Arc::new(pair),
            published,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let ks = keys();
    if mode % 2 == 0 {
        if let Ok(token) = std::str::from_utf8(rest) {
            let _ = ks.verify(token, ISSUER, 1_800_000_000);
        }
    } else {
        let token = ks.current.sign_payload(rest);
        if let Ok(claims) = ks.verify(&token, ISSUER, 1_800_000_000) {
            // What verifies must be exactly what was signed.
            assert_eq!(claims.iss, ISSUER);
        }
    }
});
