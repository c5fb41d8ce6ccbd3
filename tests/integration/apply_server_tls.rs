//! Issue 41, item 4: `portcullis apply FILE --server https://...` (the CLI as a process)
//! against a real TLS admin listener (`[tls]` + `[admin] listen`, certificates made with
//! rcgen here): the server is trusted only through `--ca` (another CA's file, or none, is
//! refused before anything is sent); a bearer token is taken from `PORTCULLIS_ADMIN_TOKEN`
//! (a wrong one there is refused by the server, none there and no other credential is
//! refused by the CLI); and a client certificate from `[admin] client_ca` (`--cert`,
//! `--key`) is an admin without any token, where one from another CA is not. Each refusal
//! leaves the store as it was.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

use portcullis_lab::certs::{Pair, TestCa};
use portcullis_server::tls::TlsSettings;
use portcullis_store::Grant;

use crate::admin::WRITE;
use crate::admin_tls::{send, tls};
use crate::server_support::{TestServer, form};

/// The variable `apply --server` reads a bearer token from (src/cli/apply.rs).
const TOKEN_VAR: &str = "PORTCULLIS_ADMIN_TOKEN";

/// `portcullis apply ARGS` with `PORTCULLIS_ADMIN_TOKEN` set to `token` (or unset).
fn apply(args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_portcullis"));
    cmd.arg("apply")
        .args(args)
        .env_remove("PORTCULLIS_DATA_DIR")
        .env_remove(TOKEN_VAR);
    if let Some(t) = token {
        cmd.env(TOKEN_VAR, t);
    }
    cmd.output().unwrap()
}

/// A declared document with one client `id` (secret from a file beside it).
fn declared(dir: &Path, id: &str) -> String {
    let secret = dir.join(format!("{id}.secret"));
    std::fs::write(&secret, format!("{id}-chosen-secret-0123456789\n")).unwrap();
    let file = dir.join(format!("{id}.apply.toml"));
    std::fs::write(
        &file,
        format!("[[clients]]\nid = \"{id}\"\nscopes = [\"read\"]\nsecret_file = \"{id}.secret\"\n"),
    )
    .unwrap();
    file.to_string_lossy().into_owned()
}

/// Exit status and both outputs, for messages.
fn said(out: &Output) -> String {
    format!(
        "{}: {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A server with `[tls]` (certificate from CA `ca`) and a TLS admin listener whose
/// `[admin] client_ca` is `admin-ca` (its certificates may write); a write token; the
/// certificates of an operator (`admin-ca`) and of an intruder with the same subject from
/// `rogue`, whose CA file is also what a client may wrongly trust.
struct Setup {
    ts: TestServer,
    /// `https://127.0.0.1:PORT` of the admin listener.
    url: String,
    /// A client_credentials token with the admin write scope.
    token: String,
    /// The CA that signed the server's certificate.
    ca: String,
    /// Another CA.
    rogue_ca: String,
    operator: Pair,
    intruder: Pair,
    /// Where the declared documents go.
    decl: std::path::PathBuf,
    _pki: tempfile::TempDir,
}

impl Setup {
    async fn new() -> Setup {
        let pki = tempfile::tempdir().unwrap();
        let decl = pki.path().join("decl");
        std::fs::create_dir_all(&decl).unwrap();
        let ca = TestCa::new(pki.path(), "ca").unwrap();
        let admin_ca = TestCa::new(pki.path(), "admin-ca").unwrap();
        let rogue = TestCa::new(pki.path(), "rogue").unwrap();
        let server = ca.server("server", &["127.0.0.1", "localhost"]).unwrap();
        let operator = admin_ca.client("operator", "operator").unwrap();
        let intruder = rogue.client("intruder", "operator").unwrap();
        let admin_ca_path = admin_ca.cert.clone();
        let ts = crate::server_support::start_in(tempfile::tempdir().unwrap(), |c| {
            c.tls = Some(TlsSettings::new(server.cert.clone(), server.key.clone()));
            c.admin.listen = Some("127.0.0.1:0".parse().unwrap());
            c.admin.client_ca = Some(admin_ca_path);
            c.admin.client_cert_write = true;
        })
        .await;
        let url = format!(
            "https://127.0.0.1:{}",
            ts.server.admin_addr().unwrap().port()
        );
        // A write token, from the OAuth listener (HTTPS too).
        let secret = ts
            .add_client("ops", &[Grant::ClientCredentials], &[WRITE])
            .await;
        let body = form(&[
            ("grant_type", "client_credentials"),
            ("client_id", "ops"),
            ("client_secret", &secret),
        ]);
        let t = send(
            ts.server.local_addr(),
            &tls(&ca.cert, None),
            "POST /oauth2/token",
            None,
            Some(("application/x-www-form-urlencoded", &body)),
        )
        .await;
        assert_eq!(t.status, 200, "{:?}", String::from_utf8_lossy(&t.body));
        let token = t.json()["access_token"].as_str().unwrap().to_owned();
        Setup {
            url,
            token,
            ca: ca.cert.to_string_lossy().into_owned(),
            rogue_ca: rogue.cert.to_string_lossy().into_owned(),
            operator,
            intruder,
            decl,
            ts,
            _pki: pki,
        }
    }

    /// Whether client `id` is in the server's store.
    async fn exists(&self, id: &str) -> bool {
        self.ts.store().get_client(id).await.unwrap().is_some()
    }

    /// `apply` of a document declaring client `id` to the server, with `args` after
    /// `--server URL` and `PORTCULLIS_ADMIN_TOKEN` = `token`.
    fn apply(&self, id: &str, args: &[&str], token: Option<&str>) -> Output {
        let file = declared(&self.decl, id);
        let mut all = vec![file.as_str(), "--server", self.url.as_str()];
        all.extend_from_slice(args);
        apply(&all, token)
    }

    /// Apply of client `id` must fail saying `needle` and leave it out of the store.
    async fn refused(
        &self,
        what: &str,
        id: &str,
        args: &[&str],
        token: Option<&str>,
        needle: &str,
    ) {
        let out = self.apply(id, args, token);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: {}", said(&out));
        assert!(stderr.contains(needle), "{what}: {stderr}");
        assert!(!self.exists(id).await, "{what}: applied");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_apply_server_over_https_trusts_only_the_ca_given() {
    let s = Setup::new().await;
    let out = s.apply("trusted", &["--ca", &s.ca], Some(&s.token));
    assert!(out.status.success(), "{}", said(&out));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("applied\n"));
    assert!(s.exists("trusted").await);
    s.refused(
        "the server's certificate checked against another CA",
        "wrong-ca",
        &["--ca", &s.rogue_ca],
        Some(&s.token),
        "TLS",
    )
    .await;
    s.refused("https without --ca", "no-ca", &[], Some(&s.token), "--ca")
        .await;
    s.ts.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_apply_server_takes_its_bearer_token_from_portcullis_admin_token() {
    let s = Setup::new().await;
    // No token file, no certificate: the variable is the only credential.
    let out = s.apply("via-env", &["--ca", &s.ca], Some(&s.token));
    assert!(out.status.success(), "{}", said(&out));
    assert!(s.exists("via-env").await);
    // What the variable holds is what is sent: a wrong value is refused by the server.
    s.refused(
        "a wrong token in the environment",
        "wrong-env",
        &["--ca", &s.ca],
        Some("not-a-token"),
        "401",
    )
    .await;
    s.refused(
        "no token in the environment and no other credential",
        "no-env",
        &["--ca", &s.ca],
        None,
        TOKEN_VAR,
    )
    .await;
    s.ts.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_apply_server_with_a_client_certificate_from_the_admin_ca_needs_no_token() {
    let s = Setup::new().await;
    let pair = |p: &Pair| {
        [
            "--cert".to_owned(),
            p.cert.to_string_lossy().into_owned(),
            "--key".to_owned(),
            p.key.to_string_lossy().into_owned(),
        ]
    };
    let operator = pair(&s.operator);
    let mut args = vec!["--ca", s.ca.as_str()];
    args.extend(operator.iter().map(String::as_str));
    let out = s.apply("via-cert", &args, None);
    assert!(out.status.success(), "{}", said(&out));
    assert!(s.exists("via-cert").await);
    // The same subject from another CA is no admin.
    let intruder = pair(&s.intruder);
    let mut args = vec!["--ca", s.ca.as_str()];
    args.extend(intruder.iter().map(String::as_str));
    s.refused(
        "a client certificate from another CA",
        "via-rogue-cert",
        &args,
        None,
        "401",
    )
    .await;
    s.ts.server.shutdown().await.unwrap();
}
