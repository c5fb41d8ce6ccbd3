//! Fuzz the verification of presented JWTs: access tokens (introspection and revocation,
//! issue 15) and `private_key_jwt` client assertions with registered keys (issue 14).
//! First byte mod 6: 0, the rest as text is a presented token; 1, the rest is a claims
//! payload signed with the test key, so the claims parser and the issuer/expiry checks
//! behind the signature are reached; 2, the rest is a client assertion checked against a
//! registered key; 3, the rest is an assertion's claims, signed, so the RFC 7523 claim
//! rules are reached; 4, registered key material (PEM or JWKS); 5, a subject DN. Every
//! input is a value or an error.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use portcullis_server::client_auth::keys::{self, VerifyKey};
use portcullis_server::client_auth::{assertion, mtls};
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

/// The test key as a client's registered key.
fn client_keys() -> &'static Vec<VerifyKey> {
    static KEYS: OnceLock<Vec<VerifyKey>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let jwks = serde_json::json!({ "keys": [keys().current.public().to_jwk()] });
        keys::parse(&jwks.to_string()).unwrap_or_else(|e| panic!("test key: {e}"))
    })
}

fn check_assertion(token: &str) {
    let Ok(u) = assertion::peek(token) else {
        return;
    };
    let rules = assertion::Rules {
        audiences: &["http://127.0.0.1:8080", "http://127.0.0.1:8080/oauth2/token"],
        now: 1_800_000_000,
        max_lifetime: 3600,
        skew: 60,
    };
    if let Ok(v) = u.check(client_keys(), &rules) {
        assert!(!v.jti.is_empty() && v.exp > 1_800_000_000 - 120);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let ks = keys();
    let text = std::str::from_utf8(rest).ok();
    match mode % 6 {
        0 => {
            if let Some(token) = text {
                let _ = ks.verify(token, ISSUER, 1_800_000_000);
            }
        }
        1 => {
            let token = ks.current.sign_payload(rest);
            if let Ok(claims) = ks.verify(&token, ISSUER, 1_800_000_000) {
                // What verifies must be exactly what was signed.
                assert_eq!(claims.iss, ISSUER);
            }
        }
        2 => {
            if let Some(token) = text {
                check_assertion(token);
            }
        }
        3 => check_assertion(&ks.current.sign_payload(rest)),
        4 => {
            if let Some(t) = text {
                if let Ok(k) = keys::parse(t) {
                    assert!(!k.is_empty() && k.len() <= keys::MAX_KEYS);
                }
                let _ = keys::normalize(t);
                let _ = mtls::registered_thumbprints(t, portcullis_server::client_auth::keys::MAX_KEYS);
            }
        }
        _ => {
            if let Some(t) = text {
                let _ = mtls::parse_dn(t);
            }
        }
    }
});
