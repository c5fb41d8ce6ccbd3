//! Fuzz what the admin API (issue 27) reads from a caller: JSON bodies of every request
//! type (with the failing field's pointer; users' directory attributes and groups, issue
//! 39), the field checks of a new client (grants, scopes, lifetimes, JWKS / PEM / DN key
//! material), a NAS's RadSec certificate (PEM or DER to pin), initial access tokens, apply
//! documents, and If-Match lists. First byte mod 10 picks the input; the rest is the body
//! or header. Every input is a value or a problem, never a panic.
#![no_main]

use axum::http::{HeaderMap, HeaderValue, header};
use libfuzzer_sys::fuzz_target;
use portcullis_server::admin::conventions::{check_if_match, etag, parse_json};
use portcullis_server::admin::{clients, groups, keys, nas, registration_tokens, throttle, users};
use portcullis_server::apply::declared::Declared;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % 10 {
        0 => {
            if let Ok(n) = parse_json::<clients::NewClient>(rest) {
                let _ = clients::check_new(n);
            }
        }
        1 => {
            let _ = parse_json::<clients::ClientChange>(rest);
        }
        2 => {
            // Users' directory attributes (issue 39) are checked as the handler does.
            if let Ok(Some(a)) = parse_json::<users::NewUser>(rest).map(|n| n.attributes) {
                let _ = a.to_store();
            }
            let _ = parse_json::<groups::NewGroup>(rest);
        }
        3 => {
            if let Ok(Some(a)) = parse_json::<users::UserChange>(rest).map(|c| c.attributes) {
                let _ = a.to_store();
            }
            let _ = parse_json::<groups::GroupChange>(rest);
        }
        4 => {
            let _ = parse_json::<nas::NewNas>(rest);
            let _ = parse_json::<nas::NasChange>(rest);
            let _ = portcullis_server::tls::pin::pin_bytes(rest.to_vec(), "fuzz");
        }
        5 => {
            let _ = parse_json::<keys::NewRevocation>(rest);
        }
        6 => {
            let _ = parse_json::<throttle::Subject>(rest);
        }
        7 => {
            if let Ok(n) = parse_json::<registration_tokens::NewRegistrationToken>(rest) {
                let _ = registration_tokens::token_of(n, 1_700_000_000);
            }
        }
        8 => {
            // `POST /admin/v1/apply`: a refusal never quotes a declared secret.
            if let Ok(d) = parse_json::<Declared>(rest) {
                let secrets: Vec<String> = d
                    .clients
                    .iter()
                    .filter_map(|c| c.secret.clone())
                    .chain(d.nas.iter().map(|n| n.secret.clone()))
                    .filter(|s| s.len() >= 8)
                    .collect();
                if let Err(e) = d.check() {
                    for s in &secrets {
                        assert!(!e.message.contains(s.as_str()), "quotes a secret");
                    }
                }
            }
        }
        _ => {
            if let Ok(v) = HeaderValue::from_bytes(rest) {
                let mut h = HeaderMap::new();
                h.insert(header::IF_MATCH, v);
                let _ = check_if_match(&h, &etag(7, b"record"), "fuzz");
            }
        }
    }
});
