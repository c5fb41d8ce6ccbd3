//! Issue 27: RFC 7591 dynamic client registration and RFC 7592 client configuration over
//! HTTP against the in-process server. Initial access tokens are made with the real CLI
//! (`portcullis registration token create`) on the server's data directory; what the
//! server stored is checked in the store, not only in its answers.
// Test code: a failed step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use portcullis_server::registration::config::FileRegistration;
use portcullis_store::registration::hash_token;
use portcullis_store::{ClientAuth, Grant, InitialAccessToken};
use serde_json::{Value, json};

use crate::server_support::{Answer, TestServer, form, start_with};

/// Start a server with registration on (and `tweak` applied to its section).
pub(crate) async fn server(tweak: impl FnOnce(&mut FileRegistration)) -> TestServer {
    let mut f = FileRegistration {
        enabled: true,
        ..FileRegistration::default()
    };
    tweak(&mut f);
    let reg = f.validate().unwrap();
    start_with(move |c| c.registration = reg).await
}

/// `portcullis registration token create ARGS --data-dir DIR`: the printed token.
pub(crate) fn cli_token(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args(["registration", "token", "create"])
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A JSON request with an optional bearer token.
pub(crate) async fn send(
    s: &TestServer,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Answer {
    send_to(s.server.local_addr(), method, path, token, body).await
}

/// [`send`] to any server's address.
pub(crate) async fn send_to(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Answer {
    let body = body.map(Value::to_string).unwrap_or_default();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    crate::server_support::raw(addr, req.as_bytes()).await
}

pub(crate) fn path_of(uri: &str) -> String {
    let rest = uri.split_once("://").unwrap().1;
    rest[rest.find('/').unwrap()..].to_owned()
}

pub(crate) async fn client_token(
    s: &TestServer,
    id: &str,
    secret: &str,
    scope: Option<&str>,
) -> Answer {
    let mut pairs = vec![("grant_type", "client_credentials")];
    if let Some(sc) = scope {
        pairs.push(("scope", sc));
    }
    s.post("/oauth2/token", Some((id, secret)), &form(&pairs))
        .await
}

fn db_contains(dir: &Path, needle: &str) -> bool {
    let mut found = false;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            let bytes = std::fs::read(&p).unwrap();
            found |= bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_register_read_update_delete_and_the_client_gets_a_token() {
    let s = server(|_| {}).await;
    let meta: Value = s
        .get("/.well-known/oauth-authorization-server")
        .await
        .json();
    assert_eq!(
        meta["registration_endpoint"],
        format!("{}/oauth2/register", s.base())
    );
    let iat = cli_token(
        s.dir.path(),
        &[
            "--uses",
            "2",
            "--expires-in",
            "1h",
            "--scope",
            "read",
            "--scope",
            "write",
        ],
    );
    let (iat_id, _) = iat.split_once('.').unwrap();
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(
            &json!({"client_name": "billing", "grant_types": ["client_credentials"],
                     "scope": "read", "contacts": ["ops@example.com"],
                     "unknown_member": "ignored"}),
        ),
    )
    .await;
    assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));
    assert_eq!(a.header("cache-control"), Some("no-store"));
    let r = a.json();
    let id = r["client_id"].as_str().unwrap().to_owned();
    let secret = r["client_secret"].as_str().unwrap().to_owned();
    let mut rat = r["registration_access_token"].as_str().unwrap().to_owned();
    assert_eq!(r["client_secret_expires_at"], 0);
    assert_eq!(r["token_endpoint_auth_method"], "client_secret_basic");
    assert_eq!(r["client_name"], "billing");
    assert_eq!(r["scope"], "read");
    assert!(r.get("unknown_member").is_none());
    let uri = r["registration_client_uri"].as_str().unwrap().to_owned();
    assert_eq!(uri, format!("{}/oauth2/register/{id}", s.base()));
    // What the store holds: the client with the granted settings, one use consumed, and
    // no secret or token anywhere in the data directory.
    let stored = s.store().get_client(&id).await.unwrap().unwrap();
    assert_eq!(stored.scopes, vec!["read".to_owned()]);
    assert_eq!(stored.grants, vec![Grant::ClientCredentials]);
    assert_eq!(stored.auth, ClientAuth::Secret);
    let t = s
        .store()
        .get_initial_access_token(iat_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.uses, 1);
    let reg = s
        .store()
        .get_client_registration(&id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reg.access_token_hash, hash_token(&rat));
    assert_eq!(reg.initial_token.as_deref(), Some(iat_id));
    for plain in [&secret, &rat, &iat] {
        assert!(
            !db_contains(s.dir.path(), plain),
            "a secret is stored in plaintext"
        );
    }
    // The registered client gets a token at once.
    let tok = client_token(&s, &id, &secret, Some("read")).await;
    assert_eq!(tok.status, 200, "{}", String::from_utf8_lossy(&tok.body));
    assert_eq!(
        client_token(&s, &id, &secret, Some("write")).await.error(),
        "invalid_scope"
    );
    // RFC 7592 read: the metadata, never the secret again; RFC 7592 3's members with a
    // new registration access token, which alone works from now on.
    let a = send(&s, "GET", &path_of(&uri), Some(&rat), None).await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert_eq!(a.header("cache-control"), Some("no-store"));
    let read = a.json();
    assert_eq!(read["client_id"], id.as_str());
    assert_eq!(read["client_name"], "billing");
    assert_eq!(read["registration_client_uri"], uri.as_str());
    assert!(read.get("client_secret").is_none());
    let text = String::from_utf8_lossy(&a.body);
    assert!(!text.contains(&secret) && !text.contains(&rat));
    let old = std::mem::replace(
        &mut rat,
        read["registration_access_token"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    assert_ne!(old, rat);
    let a = send(&s, "GET", &path_of(&uri), Some(&old), None).await;
    assert_eq!((a.status, a.error()), (401, "invalid_token".to_owned()));
    assert_eq!(
        s.store()
            .get_client_registration(&id)
            .await
            .unwrap()
            .unwrap()
            .access_token_hash,
        hash_token(&rat)
    );
    // A wrong registration access token, or another client's path, is refused.
    let a = send(&s, "GET", &path_of(&uri), Some("not-the-token"), None).await;
    assert_eq!((a.status, a.error()), (401, "invalid_token".to_owned()));
    // RFC 7592 update: full replacement within what the initial token allowed.
    let a = send(
        &s,
        "PUT",
        &path_of(&uri),
        Some(&rat),
        Some(
            &json!({"client_id": id, "client_name": "billing-v2", "scope": "read write",
                     "grant_types": ["client_credentials"]}),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert_eq!(a.json()["client_name"], "billing-v2");
    assert_eq!(a.json()["registration_client_uri"], uri.as_str());
    // The update retired the token it was sent with, and answered with the next one.
    let old = std::mem::replace(
        &mut rat,
        a.json()["registration_access_token"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    let a = send(&s, "GET", &path_of(&uri), Some(&old), None).await;
    assert_eq!((a.status, a.error()), (401, "invalid_token".to_owned()));
    let stored = s.store().get_client(&id).await.unwrap().unwrap();
    assert_eq!(stored.scopes, vec!["read".to_owned(), "write".to_owned()]);
    assert_eq!(
        client_token(&s, &id, &secret, Some("write")).await.status,
        200
    );
    // Beyond the initial token's scopes: refused, nothing changed.
    let a = send(
        &s,
        "PUT",
        &path_of(&uri),
        Some(&rat),
        Some(&json!({"client_id": id, "scope": "read admin"})),
    )
    .await;
    assert_eq!(
        (a.status, a.error()),
        (400, "invalid_client_metadata".to_owned())
    );
    assert_eq!(
        s.store().get_client(&id).await.unwrap().unwrap().scopes,
        vec!["read".to_owned(), "write".to_owned()]
    );
    // A client_secret sent with an update must be the current one; it never sets one.
    let a = send(
        &s,
        "PUT",
        &path_of(&uri),
        Some(&rat),
        Some(&json!({"client_id": id, "client_secret": "my-own-choice", "scope": "read"})),
    )
    .await;
    assert_eq!(
        (a.status, a.error()),
        (400, "invalid_client_metadata".to_owned())
    );
    let a = send(
        &s,
        "PUT",
        &path_of(&uri),
        Some(&rat),
        Some(
            &json!({"client_id": id, "client_secret": secret, "client_name": "billing-v2",
                     "scope": "read write"}),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert!(a.json().get("client_secret").is_none());
    rat = a.json()["registration_access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The client id in the body must be the one being updated.
    let a = send(
        &s,
        "PUT",
        &path_of(&uri),
        Some(&rat),
        Some(&json!({"client_id": "someone-else"})),
    )
    .await;
    assert_eq!(a.error(), "invalid_client_metadata");
    // RFC 7592 delete: gone from the store, its token and credentials stop working.
    let a = send(&s, "DELETE", &path_of(&uri), Some(&rat), None).await;
    assert_eq!(a.status, 204, "{}", String::from_utf8_lossy(&a.body));
    assert!(s.store().get_client(&id).await.unwrap().is_none());
    assert!(
        s.store()
            .get_client_registration(&id)
            .await
            .unwrap()
            .is_none()
    );
    let a = send(&s, "GET", &path_of(&uri), Some(&rat), None).await;
    assert_eq!((a.status, a.error()), (401, "invalid_token".to_owned()));
    assert_eq!(client_token(&s, &id, &secret, None).await.status, 401);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_refusals_carry_the_rfc_error_codes_and_consume_nothing() {
    let s = server(|r| r.grant_types = vec!["client_credentials".into(), "password".into()]).await;
    let body = json!({"client_name": "x"});
    // No token, a malformed one, a wrong secret.
    for token in [None, Some("garbage"), Some("iat-nope.wrongsecret")] {
        let a = send(&s, "POST", "/oauth2/register", token, Some(&body)).await;
        assert_eq!(
            (a.status, a.error()),
            (401, "invalid_token".to_owned()),
            "{token:?}"
        );
        assert!(a.header("www-authenticate").unwrap().starts_with("Bearer"));
    }
    // A token allowing one registration of client_credentials clients.
    let iat = cli_token(s.dir.path(), &["--uses", "1", "--scope", "read"]);
    let (iat_id, _) = iat.split_once('.').unwrap();
    let refusals = [
        (
            json!({"grant_types": ["password"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"grant_types": ["authorization_code"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"token_endpoint_auth_method": "tls_client_auth"}),
            "invalid_client_metadata",
        ),
        (
            json!({"token_endpoint_auth_method": "private_key_jwt",
                "jwks_uri": "https://attacker.example/jwks"}),
            "invalid_client_metadata",
        ),
        (json!({"scope": "read admin"}), "invalid_client_metadata"),
        (
            json!({"redirect_uris": ["https://app.example/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"software_statement": "not.a.jws"}),
            "invalid_software_statement",
        ),
    ];
    for (req, code) in &refusals {
        let a = send(&s, "POST", "/oauth2/register", Some(&iat), Some(req)).await;
        assert_eq!((a.status, a.error()), (400, (*code).to_owned()), "{req}");
    }
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!([1, 2])),
    )
    .await;
    assert_eq!(a.error(), "invalid_client_metadata");
    // Not JSON, or too large: refused, never a 5xx.
    let req = format!(
        "POST /oauth2/register HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Authorization: Bearer {iat}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let a = s.raw(req.as_bytes()).await;
    assert_eq!(
        (a.status, a.error()),
        (400, "invalid_client_metadata".to_owned())
    );
    let big = json!({"client_name": "x".repeat(64 * 1024)});
    let a = send(&s, "POST", "/oauth2/register", Some(&iat), Some(&big)).await;
    assert_eq!(a.status, 413);
    // None of that used the token or created a client.
    let t = s
        .store()
        .get_initial_access_token(iat_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.uses, 0);
    let before = s.store().list_clients().await.unwrap().len();
    assert_eq!(before, 0);
    // Its one use, then used up.
    let a = send(&s, "POST", "/oauth2/register", Some(&iat), Some(&body)).await;
    assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));
    let a = send(&s, "POST", "/oauth2/register", Some(&iat), Some(&body)).await;
    assert_eq!((a.status, a.error()), (401, "invalid_token".to_owned()));
    assert_eq!(s.store().list_clients().await.unwrap().len(), 1);
    // Expired: made directly in the store with an expiry in the past.
    let secret = "expired-secret-value";
    s.store()
        .put_initial_access_token(&InitialAccessToken {
            id: "iat-expired".into(),
            secret_hash: hash_token(secret),
            description: String::new(),
            created_at: 1_000,
            expires_at: 2_000,
            max_uses: 5,
            uses: 0,
            scopes: vec![],
            grants: vec![Grant::ClientCredentials],
            auth_methods: vec!["client_secret_basic".into()],
        })
        .await
        .unwrap();
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some(&format!("iat-expired.{secret}")),
        Some(&body),
    )
    .await;
    assert_eq!((a.status, a.error()), (401, "invalid_token".to_owned()));
    assert_eq!(s.store().list_clients().await.unwrap().len(), 1);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_wrong_tokens_are_throttled_by_the_core_and_audited() {
    let s = server(|_| {}).await;
    let body = json!({});
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let a = send(
            &s,
            "POST",
            "/oauth2/register",
            Some("iat-guess.wrongsecret"),
            Some(&body),
        )
        .await;
        statuses.push(a.status);
    }
    // The (principal, source) budget (burst 5) runs out: then 429 before any look-up.
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    let metrics = String::from_utf8(s.get("/metrics").await.body).unwrap();
    // Summed over classes (the metrics recorder is shared by the tests of this process,
    // and only this test has registration attempts throttled).
    let throttled: f64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("portcullis_attempts_total")
                && l.contains("protocol=\"oauth_registration\"")
                && l.contains("outcome=\"throttled\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(throttled >= 3.0, "{metrics}");
    assert!(metrics.contains("portcullis_registrations_total"));
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_registration_is_off_by_default() {
    let s = crate::server_support::start().await;
    let a = send(
        &s,
        "POST",
        "/oauth2/register",
        Some("a.b"),
        Some(&json!({})),
    )
    .await;
    assert_eq!(a.status, 404);
    let meta: Value = s
        .get("/.well-known/oauth-authorization-server")
        .await
        .json();
    assert!(meta.get("registration_endpoint").is_none());
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_token_cli_lists_without_secrets_and_revokes() {
    let s = server(|_| {}).await;
    let iat = cli_token(
        s.dir.path(),
        &[
            "--uses",
            "3",
            "--description",
            "partner A",
            "--grant",
            "client_credentials",
        ],
    );
    let (id, secret) = iat.split_once('.').unwrap();
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_portcullis"))
            .args(["registration", "token"])
            .args(args)
            .arg("--data-dir")
            .arg(s.dir.path())
            .output()
            .unwrap()
    };
    let out = cli(&["list", "--json"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(secret), "the list shows a token secret");
    let listed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["max_uses"], 3);
    assert_eq!(listed[0]["description"], "partner A");
    // Bad input: nothing made, exit 2.
    let out = Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args([
            "registration",
            "token",
            "create",
            "--uses",
            "0",
            "--data-dir",
        ])
        .arg(s.dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        s.store().list_initial_access_tokens().await.unwrap().len(),
        1
    );
    // Revoked: the server refuses it at once.
    assert!(cli(&["revoke", id]).status.success());
    assert!(
        s.store()
            .get_initial_access_token(id)
            .await
            .unwrap()
            .is_none()
    );
    let a = send(&s, "POST", "/oauth2/register", Some(&iat), Some(&json!({}))).await;
    assert_eq!((a.status, a.error()), (401, "invalid_token".to_owned()));
    assert_eq!(cli(&["revoke", id]).status.code(), Some(2));
    s.server.shutdown().await.unwrap();
}

/// Two instances over one PostgreSQL: a client registered on one gets tokens from the
/// other, and its RFC 7592 deletion through the first reaches the second's cache through
/// the change feed (its cache TTL is a minute, so only the feed can explain it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_registration_on_shared_postgres_reaches_every_instance() {
    use portcullis_server::config::StoreBackend;
    let schema = portcullis_store::testing::PgSchema::new().await;
    let dir = tempfile::tempdir().unwrap();
    let secrets_file = dir.path().join("secrets.toml");
    let mut servers = Vec::new();
    for i in 0..2 {
        let mut config = crate::server_support::test_config(&dir.path().join(format!("i{i}")));
        config.issuer = Some("http://auth.cluster.test".into());
        config.store = StoreBackend::Postgres {
            url: schema.url(),
            secrets_file: secrets_file.clone(),
            max_connections: 4,
        };
        config.client_cache_ttl = std::time::Duration::from_secs(60);
        config.registration = FileRegistration {
            enabled: true,
            ..FileRegistration::default()
        }
        .validate()
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        servers.push(
            portcullis_server::Server::start(config, Some(listener))
                .await
                .unwrap(),
        );
    }
    let (a, b) = (servers[0].local_addr(), servers[1].local_addr());
    let secret = "shared-store-token-secret";
    servers[0]
        .parts()
        .store
        .put_initial_access_token(&InitialAccessToken {
            id: "iat-shared".into(),
            secret_hash: hash_token(secret),
            description: String::new(),
            created_at: 0,
            expires_at: i64::MAX,
            max_uses: 1,
            uses: 0,
            scopes: vec!["read".into()],
            grants: vec![Grant::ClientCredentials],
            auth_methods: vec!["client_secret_basic".into()],
        })
        .await
        .unwrap();
    let iat = format!("iat-shared.{secret}");
    let r = send_to(a, "POST", "/oauth2/register", Some(&iat), Some(&json!({}))).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    // The one use is spent for every instance.
    let again = send_to(b, "POST", "/oauth2/register", Some(&iat), Some(&json!({}))).await;
    assert_eq!(again.status, 401);
    let r = r.json();
    let (id, client_secret) = (
        r["client_id"].as_str().unwrap(),
        r["client_secret"].as_str().unwrap(),
    );
    let token = |addr| {
        let req = crate::server_support::post_bytes(
            "/oauth2/token",
            Some((id, client_secret)),
            &form(&[("grant_type", "client_credentials")]),
        );
        async move { crate::server_support::raw(addr, &req).await.status }
    };
    assert_eq!(token(b).await, 200);
    let uri = path_of(r["registration_client_uri"].as_str().unwrap());
    let rat = r["registration_access_token"].as_str().unwrap();
    // Read through the other instance (which rotates the token in the shared store),
    // delete through the first with the token the read returned.
    let read = send_to(b, "GET", &uri, Some(rat), None).await;
    assert_eq!(read.status, 200);
    let next = read.json()["registration_access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        send_to(a, "DELETE", &uri, Some(rat), None).await.status,
        401
    );
    assert_eq!(
        send_to(a, "DELETE", &uri, Some(&next), None).await.status,
        204
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(50));
    loop {
        tick.tick().await;
        if token(b).await == 401 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "instance B still issues tokens to a deleted client"
        );
    }
    for s in servers {
        s.shutdown().await.unwrap();
    }
    schema.drop_now().await;
}
