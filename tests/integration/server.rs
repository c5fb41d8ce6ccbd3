//! Issue #5, server half: `portcullis serve` in process on 127.0.0.1:0. Token grants,
//! client authentication, errors, introspection and revocation, discovery, JWKS, metrics,
//! health, status, key persistence and graceful shutdown.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use portcullis_store::Grant;

use crate::server_support::{TestServer, basic_header, form, jwt_part, start, start_in};

const CC: &[Grant] = &[Grant::ClientCredentials];
const BOTH: &[Grant] = &[Grant::ClientCredentials, Grant::Password];

async fn cc_token(s: &TestServer, id: &str, secret: &str, extra: &[(&str, &str)]) -> String {
    let mut pairs = vec![("grant_type", "client_credentials")];
    pairs.extend_from_slice(extra);
    let a = s
        .post("/oauth2/token", Some((id, secret)), &form(&pairs))
        .await;
    assert_eq!(a.status, 200, "{:?}", String::from_utf8_lossy(&a.body));
    a.json()["access_token"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_client_credentials_issues_an_rfc9068_token() {
    let s = start().await;
    let secret = s.add_client("svc", CC, &["read", "write"]).await;
    let a = s
        .post(
            "/oauth2/token",
            Some(("svc", &secret)),
            &form(&[("grant_type", "client_credentials")]),
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("cache-control"), Some("no-store"));
    assert_eq!(a.header("pragma"), Some("no-cache"));
    let body = a.json();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["scope"], "read write");
    let token = body["access_token"].as_str().unwrap();
    let header = jwt_part(token, 0);
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(header["alg"], "EdDSA");
    let claims = jwt_part(token, 1);
    assert_eq!(claims["iss"], s.base());
    assert_eq!(claims["aud"], s.base());
    assert_eq!(claims["sub"], "svc");
    assert_eq!(claims["client_id"], "svc");
    assert_eq!(claims["scope"], "read write");
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );
    assert!(claims["jti"].as_str().unwrap().len() >= 16);
    // The kid is published in the JWKS as an Ed25519 OKP key.
    let jwks = s.get("/oauth2/jwks").await.json();
    let key = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == header["kid"])
        .expect("token kid in JWKS");
    assert_eq!(key["kty"], "OKP");
    assert_eq!(key["crv"], "Ed25519");
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_client_authentication_methods() {
    let s = start().await;
    let secret = s.add_client("svc", CC, &["read"]).await;
    // client_secret_post.
    let a = s
        .post(
            "/oauth2/token",
            None,
            &form(&[
                ("grant_type", "client_credentials"),
                ("client_id", "svc"),
                ("client_secret", &secret),
            ]),
        )
        .await;
    assert_eq!(a.status, 200);
    // Both methods at once: invalid_request.
    let a = s
        .post(
            "/oauth2/token",
            Some(("svc", &secret)),
            &form(&[
                ("grant_type", "client_credentials"),
                ("client_secret", &secret),
            ]),
        )
        .await;
    assert_eq!((a.status, a.error().as_str()), (400, "invalid_request"));
    // Wrong secret: 401 invalid_client with a Basic challenge.
    let a = s
        .post(
            "/oauth2/token",
            Some(("svc", "wrong")),
            &form(&[("grant_type", "client_credentials")]),
        )
        .await;
    assert_eq!((a.status, a.error().as_str()), (401, "invalid_client"));
    assert_eq!(
        a.header("www-authenticate"),
        Some("Basic realm=\"portcullis\"")
    );
    assert_eq!(a.header("cache-control"), Some("no-store"));
    // Unknown client: the same answer.
    let a = s
        .post(
            "/oauth2/token",
            Some(("nobody", "x")),
            &form(&[("grant_type", "client_credentials")]),
        )
        .await;
    assert_eq!((a.status, a.error().as_str()), (401, "invalid_client"));
    // No authentication at all.
    let a = s
        .post(
            "/oauth2/token",
            None,
            &form(&[("grant_type", "client_credentials")]),
        )
        .await;
    assert_eq!((a.status, a.error().as_str()), (401, "invalid_client"));
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_password_grant_and_grant_permissions() {
    let s = start().await;
    let app_secret = s.add_client("app", BOTH, &["profile"]).await;
    let svc_secret = s.add_client("svc", CC, &[]).await;
    s.add_user("ann", "correct horse").await;
    let good = form(&[
        ("grant_type", "password"),
        ("username", "ann"),
        ("password", "correct horse"),
    ]);
    let a = s
        .post("/oauth2/token", Some(("app", &app_secret)), &good)
        .await;
    assert_eq!(a.status, 200, "{:?}", String::from_utf8_lossy(&a.body));
    let claims = jwt_part(a.json()["access_token"].as_str().unwrap(), 1);
    assert_eq!(claims["sub"], "ann");
    assert_eq!(claims["client_id"], "app");
    assert_eq!(claims["scope"], "profile");
    // Wrong password: invalid_grant (400), not invalid_client.
    let bad = form(&[
        ("grant_type", "password"),
        ("username", "ann"),
        ("password", "wrong"),
    ]);
    let a = s
        .post("/oauth2/token", Some(("app", &app_secret)), &bad)
        .await;
    assert_eq!((a.status, a.error().as_str()), (400, "invalid_grant"));
    // A client without the password grant: unauthorized_client.
    let a = s
        .post("/oauth2/token", Some(("svc", &svc_secret)), &good)
        .await;
    assert_eq!((a.status, a.error().as_str()), (400, "unauthorized_client"));
    // The client authenticates first: a bad client secret is invalid_client even with a
    // good password.
    let a = s.post("/oauth2/token", Some(("app", "nope")), &good).await;
    assert_eq!((a.status, a.error().as_str()), (401, "invalid_client"));
    // Missing username, empty username, huge username.
    for body in [
        form(&[("grant_type", "password"), ("password", "x")]),
        form(&[
            ("grant_type", "password"),
            ("username", ""),
            ("password", "x"),
        ]),
        form(&[
            ("grant_type", "password"),
            ("username", &"u".repeat(5000)),
            ("password", "x"),
        ]),
    ] {
        let a = s
            .post("/oauth2/token", Some(("app", &app_secret)), &body)
            .await;
        assert_eq!((a.status, a.error().as_str()), (400, "invalid_request"));
    }
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_scope_must_be_a_subset() {
    let s = start().await;
    let secret = s.add_client("svc", CC, &["read", "write"]).await;
    let t = cc_token(&s, "svc", &secret, &[("scope", "write")]).await;
    assert_eq!(jwt_part(&t, 1)["scope"], "write");
    let a = s
        .post(
            "/oauth2/token",
            Some(("svc", &secret)),
            &form(&[
                ("grant_type", "client_credentials"),
                ("scope", "read admin"),
            ]),
        )
        .await;
    assert_eq!((a.status, a.error().as_str()), (400, "invalid_scope"));
    let a = s
        .post(
            "/oauth2/token",
            Some(("svc", &secret)),
            &form(&[("grant_type", "authorization_code"), ("code", "x")]),
        )
        .await;
    assert_eq!(
        (a.status, a.error().as_str()),
        (400, "unsupported_grant_type")
    );
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_introspection_and_revocation_round_trip() {
    let s = start().await;
    let secret = s.add_client("svc", CC, &["read"]).await;
    let other = s.add_client("other", CC, &[]).await;
    let token = cc_token(&s, "svc", &secret, &[]).await;
    let introspect = |who: (&'static str, String), token: String| {
        let s = &s;
        async move {
            s.post(
                "/oauth2/introspect",
                Some((who.0, &who.1)),
                &form(&[("token", &token)]),
            )
            .await
        }
    };
    let a = introspect(("svc", secret.clone()), token.clone()).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("cache-control"), Some("no-store"));
    let v = a.json();
    assert_eq!(v["active"], true);
    assert_eq!(v["client_id"], "svc");
    assert_eq!(v["scope"], "read");
    assert_eq!(v["sub"], "svc");
    // A resource server (another client) may introspect too.
    assert_eq!(
        introspect(("other", other.clone()), token.clone())
            .await
            .json()["active"],
        true
    );
    // Introspection needs client authentication.
    let a = s
        .post("/oauth2/introspect", None, &form(&[("token", &token)]))
        .await;
    assert_eq!((a.status, a.error().as_str()), (401, "invalid_client"));
    // Another client may not revoke it.
    let a = s
        .post(
            "/oauth2/revoke",
            Some(("other", &other)),
            &form(&[("token", &token)]),
        )
        .await;
    assert_eq!((a.status, a.error().as_str()), (400, "unauthorized_client"));
    assert_eq!(
        introspect(("svc", secret.clone()), token.clone())
            .await
            .json()["active"],
        true
    );
    // Its owner may.
    let a = s
        .post(
            "/oauth2/revoke",
            Some(("svc", &secret)),
            &form(&[("token", &token), ("token_type_hint", "access_token")]),
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(
        introspect(("svc", secret.clone()), token.clone())
            .await
            .json(),
        serde_json::json!({"active": false})
    );
    // The revocation is stored until the token's expiry (independent check: the store).
    let jti = jwt_part(&token, 1)["jti"].as_str().unwrap().to_owned();
    assert!(s.store().is_revoked(&jti).await.unwrap());
    // Revoking garbage is not an error (RFC 7009 2.2); introspecting it is inactive.
    let a = s
        .post(
            "/oauth2/revoke",
            Some(("svc", &secret)),
            &form(&[("token", "garbage")]),
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(
        introspect(("svc", secret.clone()), "a.b.c".into())
            .await
            .json(),
        serde_json::json!({"active": false})
    );
    // A fresh token is unaffected.
    let fresh = cc_token(&s, "svc", &secret, &[]).await;
    assert_eq!(
        introspect(("svc", secret.clone()), fresh).await.json()["active"],
        true
    );
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_discovery_metadata() {
    let s = start().await;
    let base = s.base();
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let m = s.get(path).await.json();
        assert_eq!(m["issuer"], base);
        assert_eq!(m["token_endpoint"], format!("{base}/oauth2/token"));
        assert_eq!(m["jwks_uri"], format!("{base}/oauth2/jwks"));
        assert_eq!(
            m["introspection_endpoint"],
            format!("{base}/oauth2/introspect")
        );
        assert_eq!(m["revocation_endpoint"], format!("{base}/oauth2/revoke"));
        assert_eq!(
            m["grant_types_supported"],
            serde_json::json!(["client_credentials", "password"])
        );
        // Plain HTTP: no certificate methods (issue 14 adds private_key_jwt).
        assert_eq!(
            m["token_endpoint_auth_methods_supported"],
            serde_json::json!([
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt"
            ])
        );
        assert!(m["response_types_supported"].is_array());
    }
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_health_ready_metrics_status() {
    let s = start().await;
    let secret = s.add_client("svc", CC, &[]).await;
    cc_token(&s, "svc", &secret, &[]).await;
    assert_eq!(s.get("/healthz").await.status, 200);
    assert_eq!(s.get("/readyz").await.status, 200);
    let m = s.get("/metrics").await;
    assert_eq!(m.status, 200);
    let text = String::from_utf8(m.body).unwrap();
    // Real histograms (buckets), not summaries.
    assert!(
        text.contains("# TYPE http_request_duration_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains("http_request_duration_seconds_bucket{route=\"/oauth2/token\",le=\"0.001\"}"),
        "{text}"
    );
    assert!(
        text.contains("http_requests_total{route=\"/oauth2/token\",status=\"200\"}"),
        "{text}"
    );
    assert!(text.contains("oauth_tokens_issued_total{grant_type=\"client_credentials\"}"));
    // Issue 17: the kernels measured at start-up and the one a saturated pool runs.
    let cal = portcullis_hash::batch::calibration(portcullis_hash::pbkdf2::Prf::Sha256);
    let selected = format!(
        "portcullis_hash_kernel_selected{{prf=\"sha256\",kernel=\"{}\"}} {}",
        cal.best, cal.best_width
    );
    assert!(text.contains(&selected), "{selected} missing: {text}");
    for k in &cal.kernels {
        let line = format!(
            "portcullis_hash_kernel_relative_time{{prf=\"sha256\",kernel=\"{}\",width=\"{}\"}}",
            k.backend, k.width
        );
        assert!(text.contains(&line), "{line} missing");
    }
    let page = s.get("/status").await;
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(String::from_utf8_lossy(&page.body).contains("status.json"));
    let st = s.get("/status.json").await.json();
    assert!(st["http"]["tokens_issued"].as_u64().unwrap() >= 1);
    for k in [
        "calls",
        "outstanding",
        "pool_busy",
        "queue_depth",
        "shed",
        "throttled",
    ] {
        assert!(st["verifier"][k].is_number(), "{k}: {st}");
    }
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_signing_key_persists_sealed_across_restarts() {
    // A fixed issuer: the restarted server listens on another port.
    let issuer = |c: &mut portcullis_server::Config| c.issuer = Some("https://auth.test".into());
    let s = crate::server_support::start_with(issuer).await;
    let secret = s.add_client("svc", CC, &[]).await;
    let token = cc_token(&s, "svc", &secret, &[]).await;
    let kid = jwt_part(&token, 0)["kid"].as_str().unwrap().to_owned();
    let keys = s.store().list_signing_keys().await.unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].kid, kid);
    // Sealed at rest: version byte + 24-byte nonce + 32-byte seed + 16-byte tag, and the
    // master key opens it to the seed of the published public key.
    assert_eq!(keys[0].private_key_sealed.len(), 1 + 24 + 32 + 16);
    let seed = s
        .data
        .master_key()
        .open(&keys[0].private_key_sealed, kid.as_bytes())
        .unwrap();
    let seed: [u8; 32] = seed.as_slice().try_into().unwrap();
    let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
    assert_eq!(public.as_bytes().as_slice(), keys[0].public_key.as_slice());

    let TestServer { server, data, dir } = s;
    server.shutdown().await.unwrap();
    data.close().await;
    let s = start_in(dir, issuer).await;
    // Same key after restart; the old token still introspects as active.
    let token2 = cc_token(&s, "svc", &secret, &[]).await;
    assert_eq!(jwt_part(&token2, 0)["kid"], kid.as_str());
    let a = s
        .post(
            "/oauth2/introspect",
            Some(("svc", &secret)),
            &form(&[("token", &token)]),
        )
        .await;
    assert_eq!(a.json()["active"], true);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_graceful_shutdown_finishes_in_flight_requests() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = start().await;
    let secret = s.add_client("app", BOTH, &[]).await;
    s.add_user("ann", "pw").await;
    let addr = s.server.local_addr();
    // An idle keep-alive connection, and one with a request whose body is still missing:
    // the request is in flight (the handler is reading its body) when shutdown begins.
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let n = idle.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let body = form(&[
        ("grant_type", "password"),
        ("username", "ann"),
        ("password", "pw"),
    ]);
    let mut busy = tokio::net::TcpStream::connect(addr).await.unwrap();
    busy.write_all(
        format!(
            "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
            basic_header("app", &secret),
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Wait until the server counts it as in flight (observable state, not a sleep).
    let t0 = Instant::now();
    while s
        .server
        .parts()
        .http
        .stats
        .in_flight
        .load(std::sync::atomic::Ordering::SeqCst)
        == 0
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "request never started"
        );
        tokio::task::yield_now().await;
    }
    let shutdown = tokio::spawn(s.server.shutdown());
    // The idle connection is closed by the server.
    let n = tokio::time::timeout(Duration::from_secs(10), idle.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 0, "idle connection not closed");
    // The in-flight request completes normally.
    busy.write_all(body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), busy.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let a = crate::server_support::parse_answer(&out);
    assert_eq!(a.status, 200, "{:?}", String::from_utf8_lossy(&a.body));
    tokio::time::timeout(Duration::from_secs(10), shutdown)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // No longer accepting.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[test]
fn issue_5_config_example_from_the_cli_parses() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args(["config", "example"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    portcullis_server::Config::parse(&text).unwrap();
    // Every section is documented.
    for section in [
        "[server]",
        "[tls]",
        "[tokens]",
        "[verifier]",
        "[policy]",
        "[store]",
    ] {
        assert!(text.contains(section), "{section} missing");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[server]\nhttp = \"127.0.0.1:0\"\nhtpp = 1\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args(["serve", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("htpp") && err.contains("line 3"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_throttled_is_429_with_retry_after() {
    let s = start().await;
    let secret = s.add_client("svc", CC, &[]).await;
    let cc = form(&[("grant_type", "client_credentials")]);
    // The core's default budget per (principal, source prefix) is 5 failures at once.
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let a = s.post("/oauth2/token", Some(("svc", "wrong")), &cc).await;
        if a.status == 429 {
            assert_eq!(a.error(), "temporarily_unavailable");
            let secs: u64 = a.header("retry-after").unwrap().parse().unwrap();
            assert!(secs >= 1);
            assert_eq!(a.header("cache-control"), Some("no-store"));
        }
        statuses.push(a.status);
    }
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    // Throttled before any check: even the right secret is refused from this source now.
    let a = s.post("/oauth2/token", Some(("svc", &secret)), &cc).await;
    assert_eq!(a.status, 429);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_store_failure_is_503_with_retry_after_never_500() {
    let s = start().await;
    let secret = s.add_client("svc", CC, &[]).await;
    let token = cc_token(&s, "svc", &secret, &[]).await;
    let fresh = s.add_client("fresh", CC, &[]).await;
    s.data.store().close().await;
    // Client lookup fails in the core: 503 with Retry-After.
    let a = s
        .post(
            "/oauth2/token",
            Some(("fresh", &fresh)),
            &form(&[("grant_type", "client_credentials")]),
        )
        .await;
    assert_eq!(
        (a.status, a.error().as_str()),
        (503, "temporarily_unavailable")
    );
    assert!(a.header("retry-after").is_some());
    // Revocation lookup fails after authentication (client still cached): 503 too.
    let a = s
        .post(
            "/oauth2/introspect",
            Some(("svc", &secret)),
            &form(&[("token", &token)]),
        )
        .await;
    assert_eq!(
        (a.status, a.error().as_str()),
        (503, "temporarily_unavailable")
    );
    assert!(a.header("retry-after").is_some());
    // Readiness reports it; liveness does not care.
    assert_eq!(s.get("/readyz").await.status, 503);
    assert_eq!(s.get("/healthz").await.status, 200);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_overload_is_503_with_retry_after_not_a_timeout() {
    // One hash thread, room for two queued jobs, and a slow user hash: a burst of
    // password logins must be partly refused at once with 503, never left to time out.
    let policy = portcullis_hash::Policy::Pbkdf2 {
        prf: portcullis_hash::Prf::Sha256,
        iterations: 400_000,
    };
    let p2 = policy.clone();
    let s = crate::server_support::start_with(move |c| {
        c.policy = p2;
        c.verifier.pool_threads = 1;
        c.verifier.queue_capacity = 2;
    })
    .await;
    // Distinct clients and users, so the per-(principal, source) failure budget is not what answers.
    let hash = policy.hash(b"pw").unwrap();
    let mut secrets = Vec::new();
    for i in 0..16 {
        secrets.push(s.add_client(&format!("app{i}"), BOTH, &[]).await);
        s.store()
            .put_user(
                &portcullis_store::UserRecord::new(format!("user{i}"), hash.clone(), 0).unwrap(),
            )
            .await
            .unwrap();
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, secret) in secrets.iter().enumerate() {
        let user = format!("user{i}");
        let body = form(&[
            ("grant_type", "password"),
            ("username", &user),
            ("password", "pw"),
        ]);
        let app = format!("app{i}");
        let req = crate::server_support::post_bytes("/oauth2/token", Some((&app, secret)), &body);
        let addr = s.server.local_addr();
        tasks.spawn(async move { crate::server_support::raw(addr, &req).await });
    }
    let answers = tasks.join_all().await;
    let ok = answers.iter().filter(|a| a.status == 200).count();
    let busy: Vec<_> = answers.iter().filter(|a| a.status == 503).collect();
    let other: Vec<u16> = answers
        .iter()
        .map(|a| a.status)
        .filter(|s| *s != 200 && *s != 503)
        .collect();
    assert!(other.is_empty(), "unexpected statuses {other:?}");
    assert!(ok >= 1, "nothing succeeded");
    assert!(!busy.is_empty(), "no request was shed");
    for a in busy {
        assert_eq!(a.error(), "temporarily_unavailable");
        assert!(a.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "answers waited for a timeout"
    );
    s.server.shutdown().await.unwrap();
}
