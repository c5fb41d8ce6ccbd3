//! Issue 27: dynamic client registration of clients that prove a key: software
//! statements signed by a configured issuer (RFC 7591 2.3), `private_key_jwt` clients
//! with inline JWKS, and unmodified authlib registering and using both kinds. The
//! helpers are `registration.rs`'s.
// Test code: a failed step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};

use crate::registration::{cli_token, send, server};
use crate::server_support::form;

/// An Ed25519 issuer key: its JWKS file and a signer of compact JWS.
struct Issuer {
    key: SigningKey,
    kid: &'static str,
}

impl Issuer {
    fn new(seed: u8, kid: &'static str) -> Issuer {
        Issuer {
            key: SigningKey::from_bytes(&[seed; 32]),
            kid,
        }
    }

    fn jwks_file(&self, dir: &Path) -> std::path::PathBuf {
        let x = URL_SAFE_NO_PAD.encode(self.key.verifying_key().as_bytes());
        let p = dir.join(format!("{}.jwks", self.kid));
        let doc = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": self.kid}]});
        std::fs::write(&p, doc.to_string()).unwrap();
        p
    }

    fn sign(&self, claims: &Value) -> String {
        let h = URL_SAFE_NO_PAD.encode(json!({"alg": "EdDSA", "kid": self.kid}).to_string());
        let p = URL_SAFE_NO_PAD.encode(claims.to_string());
        let sig = self.key.sign(format!("{h}.{p}").as_bytes());
        format!("{h}.{p}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_software_statements_from_trusted_keys_take_precedence() {
    let keys = tempfile::tempdir().unwrap();
    let partner = Issuer::new(3, "partner-1");
    let file = partner.jwks_file(keys.path());
    let s = server(|r| {
        r.software_statement_issuers = vec![
            portcullis_server::registration::config::FileStatementIssuer {
                issuer: "https://partners.example".into(),
                keys_file: file,
            },
        ];
    })
    .await;
    let iat = cli_token(
        s.dir.path(),
        &["--uses", "5", "--scope", "read", "--scope", "write"],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"iss": "https://partners.example", "iat": now, "exp": now + 600,
                        "software_id": "partner-app", "client_name": "Official Name",
                        "scope": "read"});
    // The statement's claims win over the same members sent beside it.
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({"software_statement": partner.sign(&claims),
                     "client_name": "Spoofed", "scope": "read write"})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));
    let r = a.json();
    assert_eq!(r["client_name"], "Official Name");
    assert_eq!(r["software_id"], "partner-app");
    assert_eq!(r["scope"], "read");
    let id = r["client_id"].as_str().unwrap();
    assert_eq!(
        s.store().get_client(id).await.unwrap().unwrap().scopes,
        vec!["read".to_owned()]
    );
    // Same issuer name, signed by another key: unapproved.
    let impostor = Issuer::new(9, "partner-1");
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({"software_statement": impostor.sign(&claims)})),
    )
    .await;
    assert_eq!(
        (a.status, a.error()),
        (400, "unapproved_software_statement".to_owned())
    );
    // An issuer nobody configured: unapproved.
    let other = json!({"iss": "https://elsewhere.example", "exp": now + 600});
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({"software_statement": impostor.sign(&other)})),
    )
    .await;
    assert_eq!(a.error(), "unapproved_software_statement");
    // Trusted but expired: invalid.
    let expired = json!({"iss": "https://partners.example", "exp": now - 3600});
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({"software_statement": partner.sign(&expired)})),
    )
    .await;
    assert_eq!(a.error(), "invalid_software_statement");
    // A statement cannot widen what the initial token allows.
    let wide = json!({"iss": "https://partners.example", "scope": "admin"});
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({"software_statement": partner.sign(&wide)})),
    )
    .await;
    assert_eq!(a.error(), "invalid_client_metadata");
    assert_eq!(s.store().list_clients().await.unwrap().len(), 1);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_private_key_jwt_client_registers_inline_jwks_and_gets_a_token() {
    let s = server(|_| {}).await;
    let pki = tempfile::tempdir().unwrap();
    let pair = portcullis_lab::certs::signing_key(pki.path(), "dyn", "ES256").unwrap();
    let jwks_text = portcullis_server::client_auth::keys::to_jwks(
        &std::fs::read_to_string(&pair.cert).unwrap(),
    )
    .unwrap();
    let jwks: Value = serde_json::from_str(&jwks_text).unwrap();
    let iat = cli_token(s.dir.path(), &["--auth-method", "private_key_jwt"]);
    // The token allows private_key_jwt only: a secret client is refused.
    let a = send(&s, "POST", "/oauth2/register", Some(&iat), Some(&json!({}))).await;
    assert_eq!(a.error(), "invalid_client_metadata");
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));
    let r = a.json();
    assert!(r.get("client_secret").is_none());
    let id = r["client_id"].as_str().unwrap();
    let spec = portcullis_lab::scenario::AssertionSpec {
        key: pair.key.clone(),
        alg: None,
        audience: Some(format!("{}/oauth2/token", s.base())),
        lifetime_secs: 60,
    };
    let signer = portcullis_lab::assertion::Signer::load(&spec, "").unwrap();
    let body = form(&[
        ("grant_type", "client_credentials"),
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ),
        ("client_assertion", &signer.assertion(id).unwrap()),
    ]);
    let a = s.post("/oauth2/token", None, &body).await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    s.server.shutdown().await.unwrap();
}

/// Unmodified third-party software end to end (tests/interop/registration_interop.py):
/// authlib signs the software statement, validates our answers with its own RFC 7591
/// metadata rules and fetches tokens for both registered clients; PyJWT verifies them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_authlib_registers_clients_and_fetches_tokens() {
    let pki = tempfile::tempdir().unwrap();
    let issuer_key = portcullis_lab::certs::signing_key(pki.path(), "issuer", "ES256").unwrap();
    let client_key = portcullis_lab::certs::signing_key(pki.path(), "client", "ES256").unwrap();
    let issuer_pub = issuer_key.cert.clone();
    let s = server(move |r| {
        r.software_statement_issuers = vec![
            portcullis_server::registration::config::FileStatementIssuer {
                issuer: "https://suite.example".into(),
                keys_file: issuer_pub,
            },
        ];
    })
    .await;
    let iat = cli_token(
        s.dir.path(),
        &["--uses", "2", "--scope", "read", "--scope", "write"],
    );
    let out = crate::server_interop::run_python(
        "registration_interop.py",
        vec![
            s.base().into(),
            iat.into(),
            "https://suite.example".into(),
            issuer_key.key.into(),
            client_key.key.into(),
        ],
    )
    .await;
    let secret = &out["secret_client"];
    // The statement's claims won over the unsigned ones, as stored.
    assert_eq!(secret["client_name"], "Signed Name");
    assert_eq!(secret["software_id"], "interop-suite");
    let id = secret["client_id"].as_str().unwrap();
    let reg = s
        .store()
        .get_client_registration(id)
        .await
        .unwrap()
        .unwrap();
    let stored: Value = serde_json::from_str(&reg.metadata).unwrap();
    assert_eq!(stored["client_name"], "Signed Name");
    assert_eq!(
        s.store().get_client(id).await.unwrap().unwrap().scopes,
        vec!["read".to_owned()]
    );
    assert_eq!(secret["token_claims"]["client_id"], id);
    assert_eq!(secret["token_claims"]["scope"], "read");
    let keyed = out["keyed_client"]["client_id"].as_str().unwrap();
    assert_eq!(out["keyed_client"]["token_claims"]["client_id"], keyed);
    assert_eq!(out["keyed_client"]["renamed"], "keyed-renamed");
    // Deleted through RFC 7592: gone, and its key no longer gets tokens.
    assert!(s.store().get_client(keyed).await.unwrap().is_none());
    assert_eq!(out["after_delete"]["status"], 401);
    assert_eq!(out["after_delete"]["error"], "invalid_token");
    assert_eq!(out["after_delete"]["token"], "invalid_client");
    s.server.shutdown().await.unwrap();
}
