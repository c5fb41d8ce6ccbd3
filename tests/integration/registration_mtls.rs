//! Issue 27: RFC 8705 clients registered through RFC 7591 over the server's HTTPS:
//! `tls_client_auth` with `tls_client_auth_subject_dn`, `self_signed_tls_client_auth`
//! with its certificate inline in `jwks` (`x5c`, RFC 8705 2.2). Each gets a token over
//! mutual TLS with its certificate (bound to it, `cnf.x5t#S256`) and only with it;
//! the initial access token and the metadata rules bound what may be registered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use portcullis_lab::scenario::ConnectionMode;
use portcullis_server::registration::config::FileRegistration;
use portcullis_store::ClientAuth;
use serde_json::{Value, json};

use crate::client_auth::{Https, first_cert_der, https_server_with};
use crate::registration::cli_token;
use crate::server_support::{Answer, form, jwt_part};

/// POST a registration (no client certificate needed) with `iat`.
async fn register(h: &Https, iat: &str, body: &Value) -> Answer {
    let tls = h.tls(None, ConnectionMode::PerRequest);
    let auth = format!("Authorization: Bearer {iat}\r\n");
    h.send(
        &tls,
        "POST",
        "/oauth2/register",
        "application/json",
        &auth,
        &body.to_string(),
    )
    .await
    .0
}

/// A client_credentials request for `id` over mutual TLS with `cert`.
async fn token_with(h: &Https, id: &str, cert: &portcullis_lab::certs::Pair) -> Answer {
    let tls = h.tls(Some(cert), ConnectionMode::PerRequest);
    let body = form(&[("grant_type", "client_credentials"), ("client_id", id)]);
    h.post(&tls, "/oauth2/token", &body).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_rfc_8705_clients_register_and_get_tokens_over_mtls() {
    let h = https_server_with(|c| {
        c.registration = FileRegistration {
            enabled: true,
            auth_methods: portcullis_store::registration::REGISTRABLE_AUTH_METHODS
                .map(str::to_owned)
                .to_vec(),
            ..FileRegistration::default()
        }
        .validate()
        .unwrap();
    })
    .await;
    let dir = h.s.dir.path().to_owned();
    let iat = cli_token(
        &dir,
        &[
            "--uses",
            "5",
            "--scope",
            "read",
            "--auth-method",
            "tls_client_auth",
            "--auth-method",
            "self_signed_tls_client_auth",
        ],
    );

    // tls_client_auth: the subject DN of a CA-issued certificate.
    let a = register(
        &h,
        &iat,
        &json!({"token_endpoint_auth_method": "tls_client_auth",
                "tls_client_auth_subject_dn": "CN=billing, O=Portcullis test",
                "scope": "read"}),
    )
    .await;
    assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));
    let r = a.json();
    assert!(r.get("client_secret").is_none());
    assert_eq!(r["token_endpoint_auth_method"], "tls_client_auth");
    assert_eq!(
        r["tls_client_auth_subject_dn"],
        "CN=billing, O=Portcullis test"
    );
    let ca_client = r["client_id"].as_str().unwrap().to_owned();
    assert!(matches!(
        h.s.store()
            .get_client(&ca_client)
            .await
            .unwrap()
            .unwrap()
            .auth,
        ClientAuth::TlsClientAuth { .. }
    ));

    // self_signed_tls_client_auth: its certificate as the x5c of a JWK.
    let der = first_cert_der(&std::fs::read(&h.self_signed.cert).unwrap());
    let x5c = base64::engine::general_purpose::STANDARD.encode(&der);
    let a = register(
        &h,
        &iat,
        &json!({"token_endpoint_auth_method": "self_signed_tls_client_auth",
                "jwks": {"keys": [{"kty": "EC", "use": "sig", "x5c": [x5c]}]}}),
    )
    .await;
    assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));
    let r = a.json();
    assert!(r.get("client_secret").is_none());
    assert_eq!(r["jwks"]["keys"][0]["x5c"][0], x5c.as_str());
    let own_client = r["client_id"].as_str().unwrap().to_owned();

    // Each gets a token over mTLS with its certificate, bound to it; not with another.
    for (id, pair) in [(&ca_client, &h.client), (&own_client, &h.self_signed)] {
        let a = token_with(&h, id, pair).await;
        assert_eq!(a.status, 200, "{id}: {}", String::from_utf8_lossy(&a.body));
        let der = first_cert_der(&std::fs::read(&pair.cert).unwrap());
        let token = a.json()["access_token"].as_str().unwrap().to_owned();
        assert_eq!(
            jwt_part(&token, 1)["cnf"]["x5t#S256"],
            portcullis_server::client_auth::mtls::thumbprint(&der).as_str()
        );
    }
    for (id, pair) in [
        (&ca_client, &h.stranger),
        (&ca_client, &h.self_signed),
        (&own_client, &h.client),
    ] {
        let a = token_with(&h, id, pair).await;
        assert_eq!(
            (a.status, a.error()),
            (401, "invalid_client".into()),
            "{id}"
        );
    }

    // Refused with invalid_client_metadata, consuming nothing: no DN, a SAN member (not
    // matched here), a DN that does not parse, no x5c, jwks for a DN client, a jwks_uri.
    let before = h.s.store().list_clients().await.unwrap().len();
    for body in [
        json!({"token_endpoint_auth_method": "tls_client_auth"}),
        json!({"token_endpoint_auth_method": "tls_client_auth",
               "tls_client_auth_san_dns": "billing.example"}),
        json!({"token_endpoint_auth_method": "tls_client_auth",
               "tls_client_auth_subject_dn": "not a dn"}),
        json!({"token_endpoint_auth_method": "self_signed_tls_client_auth",
               "jwks": {"keys": [{"kty": "EC"}]}}),
        json!({"token_endpoint_auth_method": "self_signed_tls_client_auth"}),
        json!({"token_endpoint_auth_method": "tls_client_auth",
               "tls_client_auth_subject_dn": "CN=billing, O=Portcullis test",
               "jwks": {"keys": [{"kty": "EC", "x5c": ["AAAA"]}]}}),
        json!({"token_endpoint_auth_method": "self_signed_tls_client_auth",
               "jwks_uri": "https://attacker.example/jwks"}),
        json!({"tls_client_auth_subject_dn": "CN=billing"}),
    ] {
        let a = register(&h, &iat, &body).await;
        assert_eq!(
            (a.status, a.error()),
            (400, "invalid_client_metadata".to_owned()),
            "{body}"
        );
    }
    assert_eq!(h.s.store().list_clients().await.unwrap().len(), before);
    let (iat_id, _) = iat.split_once('.').unwrap();
    let t = h.s.store().get_initial_access_token(iat_id).await.unwrap();
    assert_eq!(t.unwrap().uses, 2);

    // An initial access token made without the RFC 8705 methods does not allow them.
    let plain = cli_token(&dir, &["--uses", "2"]);
    let a = register(
        &h,
        &plain,
        &json!({"token_endpoint_auth_method": "tls_client_auth",
                "tls_client_auth_subject_dn": "CN=billing, O=Portcullis test"}),
    )
    .await;
    assert_eq!(a.error(), "invalid_client_metadata");
    h.s.server.shutdown().await.unwrap();
}
