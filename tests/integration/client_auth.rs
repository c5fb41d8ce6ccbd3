//! Issue 14: clients that authenticate without a shared secret, over the server's HTTPS,
//! and TLS session resumption. An in-process server with a throwaway CA
//! (`portcullis_lab::certs`); requests go through the lab's TLS client (rustls), raw
//! HTTP/1.1 on top. Assertions are signed by the lab's signer and, in the interop test, by
//! Python's authlib and PyJWT (`tests/interop/client_auth_interop.py`); curl presents
//! client certificates with OpenSSL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use portcullis_lab::certs::{self, Pair, TestCa};
use portcullis_lab::conn::{self, Phases};
use portcullis_lab::scenario::{AssertionSpec, ConnectionMode};
use portcullis_lab::tls::{RawTls, Tls, TlsSpec};
use portcullis_server::tls::TlsSettings;
use portcullis_store::{ClientAuth, ClientRecord, Grant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server_support::{Answer, TestServer, form, jwt_part, parse_answer};

/// A server over HTTPS with `[tls] client_ca`, and the PKI around it.
pub(crate) struct Https {
    pub(crate) s: TestServer,
    pki: PathBuf,
    ca: PathBuf,
    /// CA-issued, subject `CN=billing, O=Portcullis test`.
    pub(crate) client: Pair,
    /// CA-issued, another subject.
    pub(crate) stranger: Pair,
    /// Self-signed.
    pub(crate) self_signed: Pair,
}

async fn https_server() -> Https {
    https_server_with(|_| {}).await
}

/// [`https_server`] with `tweak` applied to the configuration.
pub(crate) async fn https_server_with(tweak: impl FnOnce(&mut portcullis_server::Config)) -> Https {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    let ca = TestCa::new(&pki, "ca").unwrap();
    let server = ca.server("server", &["127.0.0.1", "localhost"]).unwrap();
    let client = ca.client("client", "billing").unwrap();
    let stranger = ca.client("stranger", "someone-else").unwrap();
    let self_signed = certs::self_signed_client(&pki, "own", "own-client").unwrap();
    let ca_path = ca.cert.clone();
    let s = crate::server_support::start_in(dir, |c| {
        c.tls = Some(TlsSettings {
            client_ca: Some(ca_path.clone()),
            ..TlsSettings::new(server.cert.clone(), server.key.clone())
        });
        tweak(c);
    })
    .await;
    Https {
        s,
        pki,
        ca: ca.cert,
        client,
        stranger,
        self_signed,
    }
}

impl Https {
    pub(crate) fn tls(&self, cert: Option<&Pair>, mode: ConnectionMode) -> Tls {
        let raw = RawTls {
            ca: Some(self.ca.to_string_lossy().into()),
            cert: cert.map(|p| p.cert.to_string_lossy().into()),
            key: cert.map(|p| p.key.to_string_lossy().into()),
            ..RawTls::default()
        };
        TlsSpec::from_raw(&raw, "127.0.0.1", &|p: &str| PathBuf::from(p))
            .unwrap()
            .for_client(mode)
    }

    async fn add(&self, id: &str, auth: ClientAuth) {
        self.s
            .store()
            .put_client(&ClientRecord {
                id: id.into(),
                auth,
                secret_hashes: Vec::new(),
                grants: vec![Grant::ClientCredentials],
                scopes: vec!["read".into()],
                token_lifetime: 600,
                created_at: 0,
            })
            .await
            .unwrap();
    }

    /// POST `body` to `path` on a new TLS connection made with `tls`.
    pub(crate) async fn post(&self, tls: &Tls, path: &str, body: &str) -> (Answer, Phases) {
        self.send(
            tls,
            "POST",
            path,
            "application/x-www-form-urlencoded",
            "",
            body,
        )
        .await
    }

    /// Any request on a new TLS connection made with `tls`; `extra` holds more header
    /// lines (each ending in CRLF).
    pub(crate) async fn send(
        &self,
        tls: &Tls,
        method: &str,
        path: &str,
        content_type: &str,
        extra: &str,
        body: &str,
    ) -> (Answer, Phases) {
        let (mut stream, phases) = conn::establish(self.s.server.local_addr(), None, Some(tls))
            .await
            .unwrap();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra}\
             Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw).await;
        (parse_answer(&raw), phases)
    }

    /// A `tls_client_auth` client for the CA-issued certificate (`CN=billing`) and a
    /// `self_signed_tls_client_auth` client for the self-signed one.
    async fn add_certificate_clients(&self, ca_issued: &str, self_signed: &str) {
        let dn = "CN=billing, O=Portcullis test".to_owned();
        self.add(ca_issued, ClientAuth::TlsClientAuth { subject_dn: dn })
            .await;
        let pem = std::fs::read_to_string(&self.self_signed.cert).unwrap();
        let own = portcullis_server::client_auth::registration("self_signed_tls_client_auth", &pem);
        self.add(self_signed, own.unwrap()).await;
    }

    fn token_url(&self) -> String {
        format!("{}/oauth2/token", self.s.base())
    }
}

fn signer(
    pki: &Path,
    file: &str,
    alg: &str,
    audience: String,
) -> (portcullis_lab::assertion::Signer, PathBuf) {
    let pair = certs::signing_key(pki, file, alg).unwrap();
    let spec = AssertionSpec {
        key: pair.key.clone(),
        alg: (alg == "PS256").then(|| "PS256".to_owned()),
        audience: Some(audience),
        lifetime_secs: 60,
    };
    (
        portcullis_lab::assertion::Signer::load(&spec, "").unwrap(),
        pair.cert,
    )
}

fn assertion_body(assertion: &str) -> String {
    form(&[
        ("grant_type", "client_credentials"),
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ),
        ("client_assertion", assertion),
    ])
}

fn jwks_of(public_pem: &Path) -> ClientAuth {
    portcullis_server::client_auth::registration(
        "private_key_jwt",
        &std::fs::read_to_string(public_pem).unwrap(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_private_key_jwt_issues_tokens_refuses_replays_and_spends_no_hash() {
    let h = https_server().await;
    let tls = h.tls(None, ConnectionMode::KeepAlive);
    for (i, alg) in ["EdDSA", "ES256", "RS256", "PS256"].iter().enumerate() {
        let id = format!("signer-{i}");
        let (s, public) = signer(&h.pki, &id, alg, h.token_url());
        h.add(&id, jwks_of(&public)).await;
        let a = s.assertion(&id).unwrap();
        let (ok, _) = h.post(&tls, "/oauth2/token", &assertion_body(&a)).await;
        assert_eq!(
            ok.status,
            200,
            "{alg}: {}",
            String::from_utf8_lossy(&ok.body)
        );
        let token = ok.json()["access_token"].as_str().unwrap().to_owned();
        let claims = jwt_part(&token, 1);
        assert_eq!(
            (claims["sub"].as_str(), claims["client_id"].as_str()),
            (Some(id.as_str()), Some(id.as_str()))
        );
        assert!(
            claims.get("cnf").is_none(),
            "only certificate clients get cnf"
        );
        // The same assertion again: refused as a replay within its lifetime.
        let (again, _) = h.post(&tls, "/oauth2/token", &assertion_body(&a)).await;
        assert_eq!(
            (again.status, again.error()),
            (401, "invalid_client".into()),
            "{alg}"
        );
    }
    // Another audience, and an assertion signed by a key the client did not register.
    let elsewhere = signer(
        &h.pki,
        "elsewhere",
        "ES256",
        "https://other.example/token".into(),
    );
    let imposter = signer(&h.pki, "imposter", "ES256", h.token_url());
    for (what, (s, _)) in [
        ("other audience", elsewhere),
        ("unregistered key", imposter),
    ] {
        let body = assertion_body(&s.assertion("signer-1").unwrap());
        let (a, _) = h.post(&tls, "/oauth2/token", &body).await;
        assert_eq!(
            (a.status, a.error()),
            (401, "invalid_client".into()),
            "{what}"
        );
    }
    // Introspection authenticates the same way (aud: the introspection endpoint).
    let (s, public) = signer(
        &h.pki,
        "intro",
        "EdDSA",
        format!("{}/oauth2/introspect", h.s.base()),
    );
    h.add("introspector", jwks_of(&public)).await;
    let body = format!(
        "{}&token=x",
        assertion_body(&s.assertion("introspector").unwrap())
    );
    let (intro, _) = h.post(&tls, "/oauth2/introspect", &body).await;
    assert_eq!(
        intro.status,
        200,
        "{}",
        String::from_utf8_lossy(&intro.body)
    );
    assert_eq!(intro.json()["active"], false);
    // Not one derivation or HMAC: assertions never reach the hash pool.
    let snap = h.s.server.parts().verifier.snapshot();
    assert_eq!((snap.hashes_computed, snap.cheap_verifications), (0, 0));
    // Discovery advertises the methods and algorithms.
    let meta = h.s.server.parts().store.ping().await;
    assert!(meta.is_ok());
    let (doc, _) = {
        let (mut st, p) = conn::establish(h.s.server.local_addr(), None, Some(&tls))
            .await
            .unwrap();
        st.write_all(b"GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        let mut raw = Vec::new();
        let _ = st.read_to_end(&mut raw).await;
        (parse_answer(&raw), p)
    };
    let doc = doc.json();
    for m in [
        "private_key_jwt",
        "tls_client_auth",
        "self_signed_tls_client_auth",
    ] {
        assert!(
            doc["token_endpoint_auth_methods_supported"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v == m),
            "{m}"
        );
    }
    assert_eq!(doc["tls_client_certificate_bound_access_tokens"], true);
    assert_eq!(
        doc["token_endpoint_auth_signing_alg_values_supported"],
        serde_json::json!(["RS256", "PS256", "ES256", "EdDSA"])
    );
    h.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_bad_signatures_count_as_failures_and_get_throttled() {
    let h = https_server().await;
    let tls = h.tls(None, ConnectionMode::KeepAlive);
    let (good, public) = signer(&h.pki, "victim", "ES256", h.token_url());
    h.add("victim", jwks_of(&public)).await;
    let (forger, _) = signer(&h.pki, "forger", "ES256", h.token_url());
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let (a, _) = h
            .post(
                &tls,
                "/oauth2/token",
                &assertion_body(&forger.assertion("victim").unwrap()),
            )
            .await;
        statuses.push(a.status);
    }
    // The (principal, source) budget (default burst 5) runs out: 429 before any check.
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    // From this source even a good assertion now waits; the budget is the same one
    // wrong secrets use.
    let (a, _) = h
        .post(
            &tls,
            "/oauth2/token",
            &assertion_body(&good.assertion("victim").unwrap()),
        )
        .await;
    assert_eq!(a.status, 429);
    h.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_certificate_clients_get_tokens_bound_to_their_certificate() {
    let h = https_server().await;
    h.add_certificate_clients("billing", "own").await;
    let body = |id: &str| form(&[("grant_type", "client_credentials"), ("client_id", id)]);
    for (id, pair) in [("billing", &h.client), ("own", &h.self_signed)] {
        let tls = h.tls(Some(pair), ConnectionMode::PerRequest);
        let (a, _) = h.post(&tls, "/oauth2/token", &body(id)).await;
        assert_eq!(a.status, 200, "{id}: {}", String::from_utf8_lossy(&a.body));
        let token = a.json()["access_token"].as_str().unwrap().to_owned();
        let pem = std::fs::read(&pair.cert).unwrap();
        let der = first_cert_der(&pem);
        let want = portcullis_server::client_auth::mtls::thumbprint(&der);
        assert_eq!(
            jwt_part(&token, 1)["cnf"]["x5t#S256"],
            want.as_str(),
            "{id}"
        );
        // Introspection (by a certificate client) shows the binding.
        let (i, _) = h
            .post(
                &tls,
                "/oauth2/introspect",
                &format!("{}&token={token}", body(id)),
            )
            .await;
        assert_eq!(i.json()["cnf"]["x5t#S256"], want.as_str());
    }
    // A resumed session keeps the certificate it was established with.
    let resuming = h.tls(Some(&h.client), ConnectionMode::PerRequestResume);
    let (_, first) = h.post(&resuming, "/oauth2/token", &body("billing")).await;
    let (a, again) = h.post(&resuming, "/oauth2/token", &body("billing")).await;
    assert!(!first.resumed && again.resumed);
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let bound = jwt_part(a.json()["access_token"].as_str().unwrap(), 1);
    let der = first_cert_der(&std::fs::read(&h.client.cert).unwrap());
    assert_eq!(
        bound["cnf"]["x5t#S256"],
        portcullis_server::client_auth::mtls::thumbprint(&der).as_str()
    );
    // Refused: no certificate; another CA-issued certificate (other subject); a
    // self-signed certificate for the CA client; the CA client's certificate for the
    // self-signed client.
    let cases: [(&str, Option<&Pair>); 4] = [
        ("billing", None),
        ("billing", Some(&h.stranger)),
        ("billing", Some(&h.self_signed)),
        ("own", Some(&h.client)),
    ];
    for (id, cert) in cases {
        let tls = h.tls(cert, ConnectionMode::PerRequest);
        let (a, _) = h.post(&tls, "/oauth2/token", &body(id)).await;
        assert_eq!(
            (a.status, a.error()),
            (401, "invalid_client".into()),
            "{id} {cert:?}"
        );
    }
    h.s.server.shutdown().await.unwrap();
}

/// The DER of the first certificate in a PEM file.
pub fn first_cert_der(pem: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(pem).unwrap();
    let b64: String = text
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}

fn handshakes(metrics: &str, kind: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("portcullis_tls_handshakes_total{")
                && l.contains(&format!("kind=\"{kind}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_sessions_resume_with_tickets_on_tls13_and_tls12() {
    let h = https_server().await;
    let metrics = || h.s.server.parts().metrics().render();
    let stats = &h.s.server.parts().http.stats.tls_handshakes;
    let count = |i: usize| stats[i].load(std::sync::atomic::Ordering::Relaxed);
    for versions in [vec!["1.3"], vec!["1.2"]] {
        let raw = RawTls {
            ca: Some(h.ca.to_string_lossy().into()),
            versions: Some(versions.iter().map(|v| (*v).to_owned()).collect()),
            ..RawTls::default()
        };
        let spec = TlsSpec::from_raw(&raw, "127.0.0.1", &|p: &str| PathBuf::from(p)).unwrap();
        let (full0, res0) = (count(0), count(1));
        let (mfull0, mres0) = (
            handshakes(&metrics(), "full"),
            handshakes(&metrics(), "resumed"),
        );
        // A client with a session cache: the first handshake is full, the next resume.
        let resuming = spec.for_client(ConnectionMode::PerRequestResume);
        let mut seen = Vec::new();
        for _ in 0..4 {
            let (a, p) = h.post(&resuming, "/healthz", "").await;
            assert!(a.status == 200 || a.status == 405, "{}", a.status);
            seen.push(p.resumed);
        }
        assert_eq!(seen, [false, true, true, true], "TLS {versions:?}");
        // Without a cache every handshake is full.
        let fresh = spec.for_client(ConnectionMode::PerRequest);
        for _ in 0..2 {
            assert!(!h.post(&fresh, "/healthz", "").await.1.resumed);
        }
        assert_eq!(
            (count(0) - full0, count(1) - res0),
            (3, 3),
            "TLS {versions:?}"
        );
        // /metrics counts them too (at least these: other servers of this test process
        // share the registry).
        let m = metrics();
        assert!(handshakes(&m, "full") - mfull0 >= 3.0, "TLS {versions:?}");
        assert!(handshakes(&m, "resumed") - mres0 >= 3.0, "TLS {versions:?}");
    }
    h.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_curl_presents_a_client_certificate() {
    let h = https_server().await;
    h.add(
        "billing",
        ClientAuth::TlsClientAuth {
            subject_dn: "CN=billing,O=Portcullis test".into(),
        },
    )
    .await;
    let (base, ca, cert, key) = (
        h.s.base(),
        h.ca.clone(),
        h.client.cert.clone(),
        h.client.key.clone(),
    );
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("curl")
            .args(["-sS", "--cacert"])
            .arg(&ca)
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .args([
                "-d",
                "grant_type=client_credentials",
                "-d",
                "client_id=billing",
            ])
            .arg(format!("{base}/oauth2/token"))
            .output()
    })
    .await
    .unwrap()
    .expect("curl must be installed (scripts/test installs it)");
    let body: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let token = body["access_token"].as_str().unwrap();
    assert_eq!(jwt_part(token, 1)["sub"], "billing");
    assert!(jwt_part(token, 1)["cnf"]["x5t#S256"].is_string());
    h.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_authlib_private_key_jwt_and_requests_client_certificates() {
    let h = https_server().await;
    let mut jwt = Vec::new();
    for (i, alg) in ["RS256", "PS256", "ES256", "EdDSA"].iter().enumerate() {
        let id = format!("py-jwt-{i}");
        let pair = certs::signing_key(&h.pki, &id, alg).unwrap();
        h.add(&id, jwks_of(&pair.cert)).await;
        jwt.push(serde_json::json!([id, alg, pair.key]));
    }
    h.add_certificate_clients("py-mtls", "py-own").await;
    let spec = serde_json::json!({
        "jwt": jwt,
        "mtls": [["py-mtls", h.client.cert, h.client.key], ["py-own", h.self_signed.cert, h.self_signed.key]],
    });
    let spec_path = h.pki.join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let args = vec![h.s.base().into(), h.ca.clone().into(), spec_path.into()];
    let r = crate::server_interop::run_python("client_auth_interop.py", args).await;
    for i in 0..4 {
        let c = &r["jwt"][format!("py-jwt-{i}")];
        assert_eq!(c["sub"], format!("py-jwt-{i}"), "{c}");
        assert_eq!(c["first"], serde_json::json!([200, null]), "{c}");
        assert_eq!(
            c["replay"],
            serde_json::json!([401, "invalid_client"]),
            "{c}"
        );
        assert_eq!(
            c["other_audience"],
            serde_json::json!([401, "invalid_client"]),
            "{c}"
        );
    }
    for id in ["py-mtls", "py-own"] {
        let c = &r["mtls"][id];
        assert_eq!(c["sub"], id);
        assert_eq!(c["cnf_matches"], true, "{c}");
        assert_eq!(
            c["without_certificate"],
            serde_json::json!([401, "invalid_client"])
        );
    }
    let _ = Arc::new(());
    h.s.server.shutdown().await.unwrap();
}

/// The lab over HTTPS (report 001): the same clients with keep-alive, with a new
/// connection per call resuming their TLS session, and with a full handshake per call;
/// then `private_key_jwt` clients. What the lab reports about connections must match what
/// happened: connections opened, handshakes made, the resumed share, and the server's own
/// counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_lab_measures_handshakes_resumption_and_assertions_over_https() {
    // Timing-sensitive (more than 20 calls per group in a second): never beside the heavy
    // tests (the crash test's accounting storm made it miss once).
    let _exclusive = crate::server_support::exclusive();
    let h = https_server().await;
    let peppers = h.s.data.peppers();
    let key = peppers.current().unwrap();
    for i in 0..6 {
        h.s.store()
            .put_client(&ClientRecord {
                id: format!("lab-client-{i}"),
                auth: ClientAuth::Secret,
                secret_hashes: vec![portcullis_hash::pepper::PepperedHmac::create(
                    key,
                    format!("lab-secret-{i}").as_bytes(),
                )],
                grants: vec![Grant::ClientCredentials],
                scopes: Vec::new(),
                token_lifetime: 600,
                created_at: 0,
            })
            .await
            .unwrap();
    }
    let jwt = certs::signing_key(&h.pki, "lab-jwt", "EdDSA").unwrap();
    for i in 6..8 {
        h.add(&format!("lab-client-{i}"), jwks_of(&jwt.cert)).await;
    }
    let text = format!(
        r#"
name = "tls-phases"
description = "t"
[target]
url = "{base}"
tls = {{ ca = "{ca}" }}
[driver]
kind = "oauth2"
[principals]
prefix = "lab-client-"
secret_prefix = "lab-secret-"
count = 8
[run]
duration = "4s"
timeout = "5s"
[[group]]
name = "keep-alive"
size = 2
duration = "1s"
connection = "keep-alive"
[[group]]
name = "resume"
size = 2
start = "1s"
duration = "1s"
connection = "per-request-resume"
[[group]]
name = "full"
size = 2
start = "2s"
duration = "1s"
connection = "per-request"
[[group]]
name = "jwt"
size = 2
start = "3s"
duration = "1s"
client_auth = "private_key_jwt"
private_key = "{jwt}"
"#,
        base = h.s.base(),
        ca = h.ca.display(),
        jwt = jwt.key.display()
    );
    let scn = portcullis_lab::Scenario::parse(&text, None).unwrap();
    let stats = &h.s.server.parts().http.stats.tls_handshakes;
    let count = |i: usize| stats[i].load(std::sync::atomic::Ordering::Relaxed);
    let before = (count(0), count(1));
    let r = portcullis_lab::run_scenario(&scn, &portcullis_lab::RunOptions::default())
        .await
        .unwrap();
    let after = (count(0), count(1));
    assert!(r.passed, "{:?}", r.failures);
    assert!(r.driver.contains("over https"), "{}", r.driver);
    let g = |n: &str| r.repeats[0].groups.iter().find(|g| g.name == n).unwrap();
    for n in ["keep-alive", "resume", "full", "jwt"] {
        assert_eq!(g(n).success_rate, 1.0, "{n}");
        assert!(g(n).completed > 20, "{n}: {}", g(n).completed);
    }
    // Groups one after another: the merged rate is over the 4 s they span together.
    let all: u64 = ["keep-alive", "resume", "full", "jwt"]
        .iter()
        .map(|n| g(n).completed)
        .sum();
    let merged = r.repeats[0].legitimate.as_ref().unwrap();
    assert!(
        (merged.throughput - all as f64 / 4.0).abs() < 1e-6,
        "{}",
        merged.throughput
    );
    let c = |n: &str| g(n).connections.clone().unwrap();
    // Keep-alive: one connection and one full handshake per client.
    assert_eq!(
        (c("keep-alive").opened, c("keep-alive").tls_handshakes),
        (2, 2)
    );
    assert_eq!(c("keep-alive").resumed, 0);
    // A connection and a handshake per call; resumed after each client's first.
    for n in ["resume", "full"] {
        assert_eq!(c(n).opened, g(n).completed, "{n}");
        assert_eq!(c(n).tls_handshakes, g(n).completed, "{n}");
        assert!(c(n).tls_share > 0.0 && c(n).connect_share > 0.0, "{n}");
    }
    assert_eq!(c("resume").resumed, g("resume").completed - 2);
    assert_eq!(c("full").resumed, 0);
    // This server counted the same handshakes (its own counters: the metrics registry
    // is shared by every server of this test process).
    let lab_full = 2 + 2 + g("full").completed + 2;
    assert_eq!(after.1 - before.1, c("resume").resumed);
    // (The lab's own JWKS and metrics fetches are full handshakes too.)
    let full = after.0 - before.0;
    assert!(
        full >= lab_full && full <= lab_full + 20,
        "{full} vs {lab_full}"
    );
    // Assertions: each call signed afresh (a replay would have failed the group).
    assert_eq!(h.s.server.parts().verifier.snapshot().hashes_computed, 0);
    h.s.server.shutdown().await.unwrap();
}

/// `[tls] shared_ticket_keys`: two instances with the same secrets file open each other's
/// tickets, so a one-call client resumes whichever instance it lands on; with per-instance
/// keys (the default) the second instance makes a full handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_shared_ticket_keys_resume_across_instances() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca").unwrap();
    let pair = ca.server("server", &["127.0.0.1"]).unwrap();
    let data = portcullis_store::DataDir::open(&dir.path().join("data"))
        .await
        .unwrap();
    let raw = RawTls {
        ca: Some(ca.cert.to_string_lossy().into()),
        ..RawTls::default()
    };
    let spec = TlsSpec::from_raw(&raw, "127.0.0.1", &|p: &str| PathBuf::from(p)).unwrap();
    for shared in [true, false] {
        let mut servers = Vec::new();
        for _ in 0..2 {
            let mut config = crate::server_support::test_config(&dir.path().join("data"));
            config.tls = Some(TlsSettings {
                shared_ticket_keys: shared,
                ..TlsSettings::new(pair.cert.clone(), pair.key.clone())
            });
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let app = portcullis_server::Assembly::from_data_dir(
                config,
                &data,
                listener.local_addr().unwrap(),
            )
            .await
            .unwrap();
            servers.push(
                portcullis_server::Server::launch(
                    portcullis_server::Listeners {
                        http: listener,
                        radius: Vec::new(),
                        accounting: Vec::new(),
                        radsec: Vec::new(),
                        admin: None,
                        ldap: Default::default(),
                    },
                    app,
                )
                .await
                .unwrap(),
            );
        }
        let client = spec.for_client(ConnectionMode::PerRequestResume);
        let mut resumed = Vec::new();
        for s in [&servers[0], &servers[1], &servers[0]] {
            let (mut st, p) = conn::establish(s.local_addr(), None, Some(&client))
                .await
                .unwrap();
            // Reading the answer also reads the tickets the server sends after the handshake.
            st.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut out = Vec::new();
            let _ = st.read_to_end(&mut out).await;
            assert_eq!(parse_answer(&out).status, 200);
            resumed.push(p.resumed);
        }
        if shared {
            assert_eq!(resumed, [false, true, true], "shared keys");
        } else {
            // Instance 1 cannot open instance 0's ticket, and back at instance 0 the client
            // offers its newest ticket, instance 1's: every handshake is full.
            assert_eq!(resumed, [false, false, false], "per-instance keys");
        }
        for s in servers {
            s.shutdown().await.unwrap();
        }
    }
    data.close().await;
}
