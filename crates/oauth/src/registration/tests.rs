//! The metadata rules and software statements, without HTTP.

use portcullis_store::Grant;
use serde_json::json;

use super::*;

fn allow() -> Allowance {
    Allowance {
        grants: vec![Grant::ClientCredentials],
        auth_methods: vec!["client_secret_basic".into(), "private_key_jwt".into()],
        scopes: vec!["read".into(), "write".into()],
    }
}

fn obj(v: serde_json::Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

#[test]
fn defaults_are_a_basic_secret_client_with_the_allowed_scopes() {
    let a = decide(&obj(json!({"client_name": "svc"})), &allow()).unwrap();
    assert_eq!(a.auth_method, "client_secret_basic");
    assert_eq!(a.grants, vec![Grant::ClientCredentials]);
    assert_eq!(a.scopes, vec!["read".to_owned(), "write".to_owned()]);
    assert_eq!(a.metadata["client_name"], "svc");
    assert_eq!(a.metadata["response_types"], json!([]));
    assert!(a.auth.is_none());
}

#[test]
fn what_policy_forbids_is_refused_with_the_rfc_codes() {
    let cases = [
        (
            json!({"grant_types": ["password"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"grant_types": ["authorization_code"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"token_endpoint_auth_method": "client_secret_post"}),
            "invalid_client_metadata",
        ),
        (
            json!({"token_endpoint_auth_method": "tls_client_auth"}),
            "invalid_client_metadata",
        ),
        (json!({"scope": "read admin"}), "invalid_client_metadata"),
        (
            json!({"jwks_uri": "https://evil.example/jwks"}),
            "invalid_client_metadata",
        ),
        (
            json!({"token_endpoint_auth_method": "private_key_jwt"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": ["https://a.example/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"response_types": ["code"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"client_uri": "javascript:alert(1)"}),
            "invalid_client_metadata",
        ),
        (json!({"client_name": 7}), "invalid_client_metadata"),
        (json!({"jwks": {"keys": []}}), "invalid_client_metadata"),
    ];
    for (req, code) in cases {
        let e = decide(&obj(req.clone()), &allow()).unwrap_err();
        assert_eq!(e.code(), code, "{req}");
    }
}

#[test]
fn requested_scopes_narrow_and_repeat_once() {
    let a = decide(&obj(json!({"scope": "write write"})), &allow()).unwrap();
    assert_eq!(a.scopes, vec!["write".to_owned()]);
    assert_eq!(a.metadata["scope"], "write");
}

#[test]
fn tokens_split_and_compare() {
    assert_eq!(split_token("iat-abc.s3cr_et"), Some(("iat-abc", "s3cr_et")));
    for bad in ["", "nodot", ".x", "x.", "a.b.c", "a b.c"] {
        assert!(split_token(bad).is_none(), "{bad:?}");
    }
    let stored = portcullis_store::registration::hash_token("secret");
    assert!(token_matches("secret", &stored));
    assert!(!token_matches("secreT", &stored));
}

#[test]
fn statements_from_unknown_issuers_or_garbage_are_refused() {
    let e = apply_statement(obj(json!({"software_statement": "a.b.c"})), &[], 0, 60).unwrap_err();
    assert_eq!(e.code(), "invalid_software_statement");
    let e = apply_statement(obj(json!({"software_statement": 5})), &[], 0, 60).unwrap_err();
    assert_eq!(e.code(), "invalid_software_statement");
    // A well-formed but unsigned-by-us statement (alg EdDSA, iss unknown).
    let b = |v: serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let jws = format!(
        "{}.{}.{}",
        b(json!({"alg": "EdDSA"})),
        b(json!({"iss": "https://nobody.example"})),
        URL_SAFE_NO_PAD.encode([0u8; 64])
    );
    let e = apply_statement(obj(json!({"software_statement": jws})), &[], 0, 60).unwrap_err();
    assert_eq!(e.code(), "unapproved_software_statement");
    let none = format!(
        "{}.{}.",
        b(json!({"alg": "none"})),
        b(json!({"iss": "https://nobody.example"}))
    );
    let e = apply_statement(obj(json!({"software_statement": none})), &[], 0, 60).unwrap_err();
    assert_eq!(e.code(), "invalid_software_statement");
}

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
