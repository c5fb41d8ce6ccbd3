//! Issue 27: the admin API over TLS. Mutual TLS from the configured admin CA authenticates
//! a caller without a token (with `[admin] client_cert_scope`); a certificate from another
//! CA does not; and an admin token bound to a client certificate (RFC 8705 `cnf`) works
//! only on a connection that presents that certificate.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use portcullis_lab::certs::{Pair, TestCa};
use portcullis_lab::conn;
use portcullis_lab::scenario::ConnectionMode;
use portcullis_lab::tls::{RawTls, Tls, TlsSpec};
use portcullis_server::tls::TlsSettings;
use portcullis_store::{ClientAuth, ClientRecord, Grant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::admin::WRITE;
use crate::server_support::{Answer, form, jwt_part, parse_answer};

pub(crate) fn tls(ca: &std::path::Path, cert: Option<&Pair>) -> Tls {
    let raw = RawTls {
        ca: Some(ca.to_string_lossy().into()),
        cert: cert.map(|p| p.cert.to_string_lossy().into()),
        key: cert.map(|p| p.key.to_string_lossy().into()),
        ..RawTls::default()
    };
    TlsSpec::from_raw(&raw, "127.0.0.1", &|p: &str| std::path::PathBuf::from(p))
        .unwrap()
        .for_client(ConnectionMode::PerRequest)
}

pub(crate) async fn send(
    addr: SocketAddr,
    tls: &Tls,
    head: &str,
    token: Option<&str>,
    body: Option<(&str, &str)>,
) -> Answer {
    let (mut stream, _) = conn::establish(addr, None, Some(tls)).await.unwrap();
    let mut req = format!("{head} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    let (ctype, body) = body.unwrap_or(("", ""));
    if !ctype.is_empty() {
        req.push_str(&format!("Content-Type: {ctype}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    parse_answer(&raw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_mutual_tls_from_the_admin_ca_and_certificate_bound_admin_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    let ca = TestCa::new(&pki, "ca").unwrap();
    let admin_ca = TestCa::new(&pki, "admin-ca").unwrap();
    let server = ca.server("server", &["127.0.0.1", "localhost"]).unwrap();
    let operator = admin_ca.client("operator", "operator").unwrap();
    let billing = ca.client("billing", "billing").unwrap();
    let (ca_path, admin_ca_path) = (ca.cert.clone(), admin_ca.cert.clone());
    let ts = crate::server_support::start_in(dir, |c| {
        c.tls = Some(TlsSettings {
            client_ca: Some(ca_path.clone()),
            ..TlsSettings::new(server.cert.clone(), server.key.clone())
        });
        c.admin.listen = Some("127.0.0.1:0".parse().unwrap());
        c.admin.client_ca = Some(admin_ca_path.clone());
        c.admin.client_cert_write = true;
    })
    .await;
    let admin = ts.server.admin_addr().unwrap();
    let trust = ca.cert.clone();

    // The operator's certificate from the admin CA: a caller without any token.
    let op = tls(&trust, Some(&operator));
    let a = send(admin, &op, "GET /admin/v1/clients", None, None).await;
    assert_eq!(a.status, 200, "{:?}", String::from_utf8_lossy(&a.body));
    let a = send(
        admin,
        &op,
        "POST /admin/v1/clients",
        None,
        Some(("application/json", r#"{"id":"from-cert"}"#)),
    )
    .await;
    assert_eq!(a.status, 201, "{:?}", String::from_utf8_lossy(&a.body));
    // A certificate of the other CA, or none: not an admin.
    for cert in [Some(&billing), None] {
        let a = send(
            admin,
            &tls(&trust, cert),
            "GET /admin/v1/clients",
            None,
            None,
        )
        .await;
        assert_eq!(a.status, 401, "{cert:?}");
    }

    // A tls_client_auth client with the admin scope gets a token bound to its
    // certificate; the admin API takes it only with that certificate presented.
    ts.store()
        .put_client(&ClientRecord {
            id: "ops-mtls".into(),
            auth: ClientAuth::TlsClientAuth {
                subject_dn: "CN=billing, O=Portcullis test".into(),
            },
            secret_hashes: Vec::new(),
            grants: vec![Grant::ClientCredentials],
            scopes: vec![WRITE.into()],
            token_lifetime: 600,
            created_at: 0,
        })
        .await
        .unwrap();
    let bound = tls(&trust, Some(&billing));
    let body = form(&[
        ("grant_type", "client_credentials"),
        ("client_id", "ops-mtls"),
    ]);
    let t = send(
        ts.server.local_addr(),
        &bound,
        "POST /oauth2/token",
        None,
        Some(("application/x-www-form-urlencoded", &body)),
    )
    .await;
    assert_eq!(t.status, 200, "{:?}", String::from_utf8_lossy(&t.body));
    let token = t.json()["access_token"].as_str().unwrap().to_owned();
    assert!(jwt_part(&token, 1)["cnf"]["x5t#S256"].is_string());
    let a = send(admin, &bound, "GET /admin/v1/nas", Some(&token), None).await;
    assert_eq!(a.status, 200, "{:?}", String::from_utf8_lossy(&a.body));
    let stolen = tls(&trust, None);
    let a = send(admin, &stolen, "GET /admin/v1/nas", Some(&token), None).await;
    assert_eq!(a.status, 401, "a bound token without its certificate");
    let other = tls(&trust, Some(&operator));
    let a = send(admin, &other, "GET /admin/v1/nas", Some(&token), None).await;
    assert_eq!(a.status, 401, "a bound token with another certificate");
    ts.server.shutdown().await.unwrap();
}
