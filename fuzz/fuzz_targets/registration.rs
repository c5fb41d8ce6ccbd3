//! Fuzz dynamic client registration's parsers (issue 27): what an RFC 7591/7592 request
//! body and a software statement can make of the metadata rules. First byte mod 3: 0, the
//! rest is a request body, parsed and decided against a fixed allowance; 1, the rest as
//! text is a software statement checked against a trusted issuer's key; 2, the rest is a
//! statement's claims, signed with that key, so the time claims and the merge into the
//! metadata are reached. Every auth method is allowed, so the RFC 8705 members (a subject
//! DN, `x5c` certificates in `jwks`) are reached too. Every input is a value or an error.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use portcullis_server::jwt::KeyPair;
use portcullis_server::registration::config::StatementIssuer;
use portcullis_server::registration::{self as reg, Allowance};
use portcullis_store::Grant;
use zeroize::Zeroizing;

fn pair() -> &'static KeyPair {
    static PAIR: OnceLock<KeyPair> = OnceLock::new();
    PAIR.get_or_init(|| {
        KeyPair::from_seed("fuzz-kid", &Zeroizing::new([5u8; 32]))
            .unwrap_or_else(|e| panic!("test key: {e}"))
    })
}

fn issuers() -> &'static Vec<StatementIssuer> {
    static ISSUERS: OnceLock<Vec<StatementIssuer>> = OnceLock::new();
    ISSUERS.get_or_init(|| {
        let jwks = serde_json::json!({ "keys": [pair().public().to_jwk()] });
        vec![StatementIssuer {
            issuer: "https://issuer.example".into(),
            keys: portcullis_server::client_auth::keys::parse(&jwks.to_string())
                .unwrap_or_else(|e| panic!("test key: {e}")),
        }]
    })
}

fn allowance() -> Allowance {
    Allowance {
        grants: vec![Grant::ClientCredentials, Grant::Password],
        auth_methods: portcullis_store::registration::REGISTRABLE_AUTH_METHODS
            .map(str::to_owned)
            .to_vec(),
        scopes: vec!["read".into(), "write".into()],
    }
}

fn decide(body: serde_json::Map<String, serde_json::Value>) {
    if let Ok((merged, _)) = reg::apply_statement(body, issuers(), 1_700_000_000, 60) {
        let _ = reg::decide(&merged, &allowance());
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&op, rest)) = data.split_first() else {
        return;
    };
    match op % 3 {
        0 => {
            if let Ok(body) = reg::parse_body(rest) {
                decide(body);
            }
        }
        1 => {
            let text = String::from_utf8_lossy(rest);
            let _ = reg::statement::verify(&text, issuers(), 1_700_000_000, 60);
        }
        _ => {
            let jws = pair().sign_payload(rest);
            let mut body = serde_json::Map::new();
            body.insert("software_statement".into(), jws.into());
            decide(body);
        }
    }
});
