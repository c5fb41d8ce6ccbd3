//! Issue 14 from the command line: `portcullis tls check`, SIGHUP serving a renewed
//! certificate without dropping connections, and `client add --auth-method ...` refusing
//! key material it could not use.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use portcullis_lab::certs::TestCa;
use portcullis_lab::conn::{self, Stream};
use portcullis_lab::scenario::ConnectionMode;
use portcullis_lab::tls::{RawTls, TlsSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::process_support::{BIN, serve};
use crate::reload::{hup, wait_for_log};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/door/tests/fixtures/tls")
        .join(name)
}

fn portcullis(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn issue_14_tls_check_names_the_mismatch_and_exits_2() {
    let p = |n: &str| fixture(n).to_string_lossy().into_owned();
    // KeyUsage without digitalSignature: no enabled suite can sign the handshake.
    let (code, out, err) = portcullis(&[
        "tls",
        "check",
        "--cert",
        &p("rsa_keyencipherment_only.crt"),
        "--key",
        &p("rsa_keyencipherment_only.key"),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("digitalSignature"), "{err}");
    assert!(
        out.contains("key usage:") && out.contains("KeyEncipherment"),
        "facts still shown: {out}"
    );
    // An ECDSA certificate with only RSA suites enabled.
    let (code, _, err) = portcullis(&[
        "tls",
        "check",
        "--cert",
        &p("ec_server.crt"),
        "--key",
        &p("ec_server.key"),
        "--versions",
        "1.2",
        "--suites",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") && err.contains("ECDSA"),
        "{err}"
    );
    // A certificate for clients only.
    let (code, _, err) = portcullis(&[
        "tls",
        "check",
        "--cert",
        &p("ec_client_auth_only.crt"),
        "--key",
        &p("ec_client_auth_only.key"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("serverAuth"), "{err}");
    // A good one: exit 0, its facts and the suites serve would enable.
    let (code, out, err) = portcullis(&[
        "tls",
        "check",
        "--cert",
        &p("rsa_server.crt"),
        "--key",
        &p("rsa_server.key"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("key:                RSA 2048"), "{out}");
    assert!(
        out.contains("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") && !out.contains("ECDSA_WITH"),
        "{out}"
    );
}

/// `GET /healthz` on an open keep-alive connection; the status.
async fn healthz(s: &mut Stream) -> u16 {
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if body.len() >= len {
                return head[9..12].parse().unwrap();
            }
        }
    }
}

fn served_cert(s: &Stream) -> Vec<u8> {
    match s {
        Stream::Tls(t) => t.get_ref().1.peer_certificates().unwrap()[0]
            .as_ref()
            .to_vec(),
        Stream::Plain(_) => panic!("not TLS"),
    }
}

fn pem_der(path: &Path) -> Vec<u8> {
    crate::client_auth::first_cert_der(&std::fs::read(path).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_sighup_serves_a_renewed_certificate_and_open_connections_stay() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca").unwrap();
    let first = ca.server("first", &["127.0.0.1"]).unwrap();
    let second = ca.server("second", &["127.0.0.1"]).unwrap();
    let not_a_server = ca.client("client", "nobody").unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let install = |p: &portcullis_lab::certs::Pair| {
        std::fs::copy(&p.cert, &cert).unwrap();
        std::fs::copy(&p.key, &key).unwrap();
    };
    install(&first);
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, format!("[tls]\ncert = {cert:?}\nkey = {key:?}\n")).unwrap();
    let srv = serve(&config, &dir.path().join("data"));
    let (mut child, addr, log) = (srv.child, srv.addr, srv.log);
    wait_for_log(&log, "tls: serving certificate");
    let raw = RawTls {
        ca: Some(ca.cert.to_string_lossy().into()),
        ..RawTls::default()
    };
    let spec = TlsSpec::from_raw(&raw, "127.0.0.1", &|p: &str| PathBuf::from(p)).unwrap();
    let connect = || async {
        conn::establish(
            addr,
            None,
            Some(&spec.for_client(ConnectionMode::PerRequest)),
        )
        .await
        .unwrap()
        .0
    };
    let mut open = connect().await;
    assert_eq!(served_cert(&open), pem_der(&first.cert));
    assert_eq!(healthz(&mut open).await, 200);

    install(&second);
    hup(child.id());
    let line = wait_for_log(&log, "tls: now serving certificate");
    let fresh = connect().await;
    assert_eq!(served_cert(&fresh), pem_der(&second.cert), "{line}");
    // The connection opened before the reload keeps working on its old certificate.
    assert_eq!(healthz(&mut open).await, 200);

    // A certificate that fails the start-up checks is refused; the renewed one stays.
    install(&not_a_server);
    hup(child.id());
    let refused = wait_for_log(&log, "certificate reload refused");
    assert!(refused.contains("serverAuth"), "{refused}");
    assert_eq!(served_cert(&connect().await), pem_der(&second.cert));
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn issue_14_client_add_refuses_unusable_key_material() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca").unwrap();
    let client = ca.client("c", "billing").unwrap();
    let jwt = portcullis_lab::certs::signing_key(dir.path(), "jwt", "ES256").unwrap();
    let data = dir.path().join("data");
    let d = data.to_string_lossy().into_owned();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let run = |args: &[&str]| {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["--data-dir", &d]);
        portcullis(&a)
    };
    // The private key where the public one belongs, a bad DN, missing material.
    let (code, _, err) = run(&[
        "client",
        "add",
        "a",
        "--auth-method",
        "private_key_jwt",
        "--public-key",
        &s(&jwt.key),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("PRIVATE key"), "{err}");
    let (code, _, err) = run(&[
        "client",
        "add",
        "b",
        "--auth-method",
        "tls_client_auth",
        "--tls-subject-dn",
        "no equals sign",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("RFC 4514"), "{err}");
    let (code, _, err) = run(&[
        "client",
        "add",
        "c",
        "--auth-method",
        "self_signed_tls_client_auth",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--public-key"), "{err}");
    // Good ones; then a secret rotation on a keyed client is refused by name.
    let (code, out, err) = run(&[
        "client",
        "add",
        "jwt",
        "--auth-method",
        "private_key_jwt",
        "--public-key",
        &s(&jwt.cert),
    ]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let (code, _, err) = run(&[
        "client",
        "add",
        "cert",
        "--auth-method",
        "self_signed_tls_client_auth",
        "--public-key",
        &s(&client.cert),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["client", "rotate-secret", "jwt"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("private_key_jwt") && err.contains("set-key"),
        "{err}"
    );
    let other = portcullis_lab::certs::signing_key(dir.path(), "jwt2", "EdDSA").unwrap();
    let (code, _, err) = run(&["client", "set-key", "jwt", "--public-key", &s(&other.cert)]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = run(&["client", "list", "--json"]);
    assert_eq!(code, 0);
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    let methods: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["auth_method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["self_signed_tls_client_auth", "private_key_jwt"]);
}
