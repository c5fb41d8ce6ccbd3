//! Issue 27: the admin API over its own listener, driven over real TCP with tokens from
//! the server's own token endpoint (client_credentials). A client's whole lifecycle
//! (checked against the token endpoint at every step: a created client gets tokens, a
//! rotated secret works beside the previous one, a removed client gets none), optimistic
//! concurrency (one ETag, two updates: one 200, one 412), scopes (401, 403), Idempotency-
//! Key, users, NAS, signing keys, revocations, the throttle, and one audit event per
//! action with no secret in the audit stream.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use portcullis_server::audit::{AuditConfig, Destination};
use portcullis_store::Grant;
use serde_json::{Value, json};

use crate::server_support::{Answer, TestServer, raw, start_with};

pub const WRITE: &str = "portcullis:admin:write";
pub const READ: &str = "portcullis:admin:read";
/// Operations in the OpenAPI document (the unit test in `admin/openapi.rs` lists them).
pub const OPERATIONS: usize = 34;

/// A server with the admin API on 127.0.0.1:0 and the audit stream in a file.
pub async fn admin_server() -> TestServer {
    start_with(|c| {
        c.admin.listen = Some("127.0.0.1:0".parse().unwrap());
        c.audit = AuditConfig {
            destination: Destination::File {
                path: "audit.jsonl".into(),
                max_bytes: 1 << 30,
                keep: 1,
            },
            per_source_limit: 100_000,
            interval: std::time::Duration::from_secs(60),
        };
    })
    .await
}

/// A client_credentials token for `id`.
pub async fn token(ts: &TestServer, id: &str, secret: &str) -> String {
    let a = ts
        .post(
            "/oauth2/token",
            Some((id, secret)),
            "grant_type=client_credentials",
        )
        .await;
    assert_eq!(a.status, 200, "{:?}", String::from_utf8_lossy(&a.body));
    a.json()["access_token"].as_str().unwrap().to_owned()
}

/// One admin request on its own connection.
pub async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Answer {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    raw(addr, req.as_bytes()).await
}

pub fn text(a: &Answer) -> String {
    format!(
        "{} {:?} {}",
        a.status,
        a.headers,
        String::from_utf8_lossy(&a.body)
    )
}

/// Remember an audited call by its request id.
fn note(audited: &mut Vec<(String, &'static str)>, a: &Answer, action: &'static str) {
    audited.push((a.header("x-request-id").unwrap().to_owned(), action));
}

/// Whether `id`/`secret` gets a token now.
async fn gets_token(ts: &TestServer, id: &str, secret: &str) -> bool {
    ts.post(
        "/oauth2/token",
        Some((id, secret)),
        "grant_type=client_credentials",
    )
    .await
    .status
        == 200
}

/// Follow `Link: rel="next"` from `first` and collect the ids of every page.
async fn walk(addr: SocketAddr, tok: &str, first: &str, key: &str) -> (Vec<String>, usize) {
    let mut path = first.to_owned();
    let mut ids = Vec::new();
    let mut pages = 0;
    loop {
        let a = call(addr, "GET", &path, Some(tok), &[], None).await;
        assert_eq!(a.status, 200, "{}", text(&a));
        pages += 1;
        for item in a.json()["items"].as_array().unwrap() {
            ids.push(item[key].as_str().unwrap().to_owned());
        }
        match a.header("link") {
            None => return (ids, pages),
            Some(l) => {
                let next = l
                    .strip_prefix('<')
                    .and_then(|l| l.split_once(">; rel=\"next\""))
                    .unwrap_or_else(|| panic!("bad Link {l}"))
                    .0;
                path = next.to_owned();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_client_lifecycle_concurrency_scopes_idempotency_and_audit() {
    let ts = admin_server().await;
    let addr = ts.server.admin_addr().expect("admin listener");
    let ops_secret = ts
        .add_client("ops", &[Grant::ClientCredentials], &[WRITE])
        .await;
    let viewer_secret = ts
        .add_client("viewer", &[Grant::ClientCredentials], &[READ])
        .await;
    let app_secret = ts
        .add_client("app", &[Grant::ClientCredentials], &["read"])
        .await;
    let tok = token(&ts, "ops", &ops_secret).await;
    let view_tok = token(&ts, "viewer", &viewer_secret).await;
    let app_tok = token(&ts, "app", &app_secret).await;
    let mut secrets = vec![
        ops_secret.clone(),
        viewer_secret.clone(),
        app_secret.clone(),
    ];
    let mut tokens = vec![tok.clone(), view_tok.clone(), app_tok.clone()];
    // Request ids of every authenticated admin call, each must be in the audit once.
    let mut audited: Vec<(String, &'static str)> = Vec::new();

    // Create: 201, ETag, Location, the secret once; the client gets a token at once.
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&json!({"id": "svc-1", "scopes": ["read", "write"], "token_lifetime": 600})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    note(&mut audited, &a, "client.create");
    let etag1 = a.header("etag").unwrap().to_owned();
    assert_eq!(a.header("location"), Some("/admin/v1/clients/svc-1"));
    let body = a.json();
    let secret1 = body["client_secret"].as_str().unwrap().to_owned();
    secrets.push(secret1.clone());
    assert_eq!(body["client"]["auth_method"], "client_secret");
    assert_eq!(body["client"]["scopes"], json!(["read", "write"]));
    assert!(gets_token(&ts, "svc-1", &secret1).await);

    // Read: same ETag, no secret or hash.
    let a = call(
        addr,
        "GET",
        "/admin/v1/clients/svc-1",
        Some(&tok),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    note(&mut audited, &a, "client.get");
    assert_eq!(a.header("etag"), Some(etag1.as_str()));
    let shown = String::from_utf8_lossy(&a.body).to_string();
    assert!(
        !shown.contains(&secret1) && !shown.contains("hmac"),
        "{shown}"
    );
    assert_eq!(a.json()["token_lifetime"], 600);

    // A second creation with the same id is a conflict, and a bad field is named.
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&json!({"id": "svc-1"})),
    )
    .await;
    assert_eq!(a.status, 409, "{}", text(&a));
    note(&mut audited, &a, "client.create");
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&json!({"id": "svc-x", "scopes": ["ok", "bad scope"]})),
    )
    .await;
    assert_eq!(a.status, 400, "{}", text(&a));
    assert_eq!(a.header("content-type"), Some("application/problem+json"));
    assert_eq!(a.json()["errors"][0]["pointer"], "/scopes/1");
    note(&mut audited, &a, "client.create");
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&json!({"id": "svc-x", "token_lifetime": "long"})),
    )
    .await;
    assert_eq!(a.status, 400, "{}", text(&a));
    assert_eq!(a.json()["errors"][0]["pointer"], "/token_lifetime");
    note(&mut audited, &a, "client.create");

    // More clients, then pages of two: every client once, in id order, via Link.
    for i in 2..=5 {
        let a = call(
            addr,
            "POST",
            "/admin/v1/clients",
            Some(&tok),
            &[],
            Some(&json!({"id": format!("svc-{i}")})),
        )
        .await;
        assert_eq!(a.status, 201, "{}", text(&a));
        note(&mut audited, &a, "client.create");
        secrets.push(a.json()["client_secret"].as_str().unwrap().to_owned());
    }
    let (ids, pages) = walk(addr, &tok, "/admin/v1/clients?limit=2", "id").await;
    for _ in 0..pages {
        audited.push((String::new(), "client.list"));
    }
    assert_eq!(
        ids,
        [
            "app", "ops", "svc-1", "svc-2", "svc-3", "svc-4", "svc-5", "viewer"
        ]
    );
    assert_eq!(pages, 4, "8 clients by 2: no empty page after the last");
    for bad in ["limit=0", "limit=1000", "limit=x"] {
        let a = call(
            addr,
            "GET",
            &format!("/admin/v1/clients?{bad}"),
            Some(&tok),
            &[],
            None,
        )
        .await;
        assert_eq!(a.status, 400, "{bad}: {}", text(&a));
        assert!(
            a.json()["errors"][0]["pointer"]
                .as_str()
                .unwrap()
                .starts_with("query")
        );
        note(&mut audited, &a, "client.list");
    }

    // Update needs If-Match: none 428; the same update twice with one ETag: 200 then 412.
    let change = json!({"scopes": ["read"], "grants": ["client_credentials"]});
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/clients/svc-1",
        Some(&tok),
        &[],
        Some(&change),
    )
    .await;
    assert_eq!(a.status, 428, "{}", text(&a));
    note(&mut audited, &a, "client.update");
    let first = call(
        addr,
        "PATCH",
        "/admin/v1/clients/svc-1",
        Some(&tok),
        &[("If-Match", &etag1)],
        Some(&change),
    )
    .await;
    let second = call(
        addr,
        "PATCH",
        "/admin/v1/clients/svc-1",
        Some(&tok),
        &[("If-Match", &etag1)],
        Some(&change),
    )
    .await;
    assert_eq!(
        (first.status, second.status),
        (200, 412),
        "{}",
        text(&second)
    );
    note(&mut audited, &first, "client.update");
    note(&mut audited, &second, "client.update");
    let etag2 = first.header("etag").unwrap().to_owned();
    assert_ne!(etag1, etag2);
    assert_eq!(first.json()["scopes"], json!(["read"]));

    // Concurrent updates with one ETag: exactly one wins.
    let racers: Vec<_> = (0..4)
        .map(|i| {
            let etag = etag2.clone();
            let tok = tok.clone();
            tokio::spawn(async move {
                call(
                    addr,
                    "PATCH",
                    "/admin/v1/clients/svc-1",
                    Some(&tok),
                    &[("If-Match", &etag)],
                    Some(&json!({"token_lifetime": 700 + i})),
                )
                .await
            })
        })
        .collect();
    let mut statuses = Vec::new();
    let mut etag3 = String::new();
    for r in racers {
        let a = r.await.unwrap();
        if a.status == 200 {
            etag3 = a.header("etag").unwrap().to_owned();
        }
        statuses.push(a.status);
        note(&mut audited, &a, "client.update");
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 412, 412, 412]);

    // Rotation: a new secret once; both work until the rotation is finished.
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients/svc-1/rotate-secret",
        Some(&tok),
        &[("If-Match", &etag3)],
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    note(&mut audited, &a, "client.rotate_secret");
    let secret2 = a.json()["client_secret"].as_str().unwrap().to_owned();
    secrets.push(secret2.clone());
    assert_ne!(secret1, secret2);
    assert_eq!(a.json()["client"]["rotation_in_progress"], true);
    let etag4 = a.header("etag").unwrap().to_owned();
    assert!(gets_token(&ts, "svc-1", &secret2).await);
    assert!(gets_token(&ts, "svc-1", &secret1).await);
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients/svc-1/finish-rotation",
        Some(&tok),
        &[("If-Match", &etag4)],
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    note(&mut audited, &a, "client.finish_rotation");
    assert!(a.json().get("client_secret").is_none());
    let etag5 = a.header("etag").unwrap().to_owned();
    assert!(!gets_token(&ts, "svc-1", &secret1).await);
    assert!(gets_token(&ts, "svc-1", &secret2).await);

    // Delete: stale ETag 412; current 204; then 404, and no more tokens.
    let a = call(
        addr,
        "DELETE",
        "/admin/v1/clients/svc-1",
        Some(&tok),
        &[("If-Match", &etag1)],
        None,
    )
    .await;
    assert_eq!(a.status, 412, "{}", text(&a));
    note(&mut audited, &a, "client.remove");
    let a = call(
        addr,
        "DELETE",
        "/admin/v1/clients/svc-1",
        Some(&tok),
        &[("If-Match", &etag5)],
        None,
    )
    .await;
    assert_eq!(a.status, 204, "{}", text(&a));
    note(&mut audited, &a, "client.remove");
    let a = call(
        addr,
        "GET",
        "/admin/v1/clients/svc-1",
        Some(&tok),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 404, "{}", text(&a));
    note(&mut audited, &a, "client.get");
    assert!(!gets_token(&ts, "svc-1", &secret2).await);

    // Idempotent creation: the same key and request twice, one client, the same answer
    // (the secret included); the key with another request is refused.
    let idem = [("Idempotency-Key", "create-once-7")];
    let req = json!({"scopes": ["read"]});
    let a1 = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &idem,
        Some(&req),
    )
    .await;
    let a2 = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &idem,
        Some(&req),
    )
    .await;
    assert_eq!((a1.status, a2.status), (201, 201), "{}", text(&a2));
    note(&mut audited, &a1, "client.create");
    note(&mut audited, &a2, "client.create");
    assert_eq!(a1.body, a2.body);
    assert_eq!(a1.header("etag"), a2.header("etag"));
    let made = a1.json();
    let made_id = made["client"]["id"].as_str().unwrap().to_owned();
    secrets.push(made["client_secret"].as_str().unwrap().to_owned());
    let (ids, pages) = walk(addr, &tok, "/admin/v1/clients", "id").await;
    for _ in 0..pages {
        audited.push((String::new(), "client.list"));
    }
    assert_eq!(ids.iter().filter(|i| **i == made_id).count(), 1);
    assert_eq!(ids.len(), 8, "{ids:?}");
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &idem,
        Some(&json!({"scopes": ["write"]})),
    )
    .await;
    assert_eq!(a.status, 422, "{}", text(&a));
    note(&mut audited, &a, "client.create");

    // Other auth methods: a tls_client_auth client needs its DN and gets no secret.
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&json!({"id": "mtls-1", "auth_method": "tls_client_auth", "tls_subject_dn": "CN=mtls-1,O=Example"})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    note(&mut audited, &a, "client.create");
    assert!(a.json().get("client_secret").is_none());
    assert_eq!(a.json()["client"]["tls_subject_dn"], "CN=mtls-1,O=Example");
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&json!({"id": "jwt-1", "auth_method": "private_key_jwt", "public_key": "not a key"})),
    )
    .await;
    assert_eq!(a.status, 400, "{}", text(&a));
    assert_eq!(a.json()["errors"][0]["pointer"], "/public_key");
    note(&mut audited, &a, "client.create");

    // Scopes: no token 401 (with a challenge), a garbage token 401, the read-only token
    // reads but cannot write (403), an ordinary client's token cannot even read (403).
    let a = call(addr, "GET", "/admin/v1/clients", None, &[], None).await;
    assert_eq!(a.status, 401, "{}", text(&a));
    assert!(a.header("www-authenticate").unwrap().starts_with("Bearer"));
    let a = call(addr, "GET", "/admin/v1/clients", Some("a.b.c"), &[], None).await;
    assert_eq!(a.status, 401, "{}", text(&a));
    let a = call(
        addr,
        "GET",
        "/admin/v1/clients?limit=1",
        Some(&view_tok),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    note(&mut audited, &a, "client.list");
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&view_tok),
        &[],
        Some(&json!({"id": "nope"})),
    )
    .await;
    assert_eq!(a.status, 403, "{}", text(&a));
    assert!(
        a.header("www-authenticate")
            .unwrap()
            .contains("insufficient_scope")
    );
    let a = call(addr, "GET", "/admin/v1/clients", Some(&app_tok), &[], None).await;
    assert_eq!(a.status, 403, "{}", text(&a));
    // A revoked admin token stops working.
    let r = call(
        addr,
        "POST",
        "/admin/v1/revocations",
        Some(&tok),
        &[],
        Some(&json!({"token": view_tok})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    note(&mut audited, &r, "revocation.create");
    let a = call(addr, "GET", "/admin/v1/clients", Some(&view_tok), &[], None).await;
    assert_eq!(a.status, 401, "{}", text(&a));
    // Taking the scope away from a client ends its tokens' admin rights at once.
    let ops = call(
        addr,
        "GET",
        "/admin/v1/clients/viewer",
        Some(&tok),
        &[],
        None,
    )
    .await;
    note(&mut audited, &ops, "client.get");
    let vtag = ops.header("etag").unwrap().to_owned();
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/clients/viewer",
        Some(&tok),
        &[("If-Match", &vtag)],
        Some(&json!({"scopes": []})),
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    note(&mut audited, &a, "client.update");
    let view_tok2 = {
        let t = ts
            .post(
                "/oauth2/token",
                Some(("viewer", &viewer_secret)),
                "grant_type=client_credentials",
            )
            .await;
        t.json()["access_token"].as_str().unwrap().to_owned()
    };
    tokens.push(view_tok2.clone());
    let a = call(
        addr,
        "GET",
        "/admin/v1/clients",
        Some(&view_tok2),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 403, "{}", text(&a));

    // Bodies: over admin.body_limit 413, not JSON 415; both problems.
    let big = json!({"id": "big", "public_key": "x".repeat(300 * 1024)});
    let a = call(
        addr,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&big),
    )
    .await;
    assert_eq!(a.status, 413, "{}", text(&a));
    assert_eq!(a.header("content-type"), Some("application/problem+json"));
    let a = raw(
        addr,
        format!(
            "POST /admin/v1/clients HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Authorization: Bearer {tok}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(a.status, 415, "{}", text(&a));
    assert_eq!(a.json()["errors"][0]["pointer"], "header:Content-Type");

    // Unknown paths and methods are problems too.
    let a = call(addr, "GET", "/admin/v1/nothing", Some(&tok), &[], None).await;
    assert_eq!(a.status, 404);
    assert_eq!(a.header("content-type"), Some("application/problem+json"));
    let a = call(addr, "PUT", "/admin/v1/clients", Some(&tok), &[], None).await;
    assert_eq!(a.status, 405, "{}", text(&a));

    // Every authenticated action is one audit event with its request id, and no secret
    // or token is anywhere in the audit stream.
    let TestServer { server, data, dir } = ts;
    server.shutdown().await.unwrap();
    data.close().await;
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let events: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["event"] == "admin")
        .collect();
    for (rid, action) in audited.iter().filter(|(rid, _)| !rid.is_empty()) {
        let found: Vec<&Value> = events
            .iter()
            .filter(|e| e["request_id"] == rid.as_str())
            .collect();
        assert_eq!(found.len(), 1, "{action} {rid}: {found:?}");
        assert_eq!(found[0]["action"], *action);
        // Every call was made with the ops token but one read with the viewer's.
        let by_viewer = events.iter().filter(|e| e["actor"] == "viewer").count();
        assert!(found[0]["actor"] == "ops" || found[0]["actor"] == "viewer");
        assert_eq!(by_viewer, 1);
    }
    let lists = events
        .iter()
        .filter(|e| e["action"] == "client.list")
        .count();
    assert_eq!(
        lists,
        audited.iter().filter(|(_, a)| *a == "client.list").count()
    );
    let changed: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == "client.update" && e["status"] == 200)
        .collect();
    assert!(
        changed
            .iter()
            .all(|e| e["before"] != e["after"]
                && e["before"].as_str().unwrap().starts_with("sha256:"))
    );
    for s in secrets.iter().chain(tokens.iter()) {
        assert!(
            !audit.contains(s.as_str()),
            "a secret or token in the audit stream"
        );
    }
    assert!(!audit.contains("$hmac"), "a hash in the audit stream");
}

/// Failed admin authentication is throttled by the core: a source sending bad tokens
/// is refused with 429 and Retry-After, not answered forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_failed_admin_authentication_is_throttled() {
    let ts = admin_server().await;
    let addr = ts.server.admin_addr().unwrap();
    let mut last = 0;
    let fake = format!(
        "eyJhbGciOiJFZERTQSJ9.{}.c2ln",
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            "{\"client_id\":\"ops\"}"
        )
    );
    for _ in 0..20 {
        let a = call(addr, "GET", "/admin/v1/clients", Some(&fake), &[], None).await;
        last = a.status;
        if a.status == 429 {
            assert!(a.header("retry-after").is_some());
            break;
        }
        assert_eq!(a.status, 401, "{}", text(&a));
    }
    assert_eq!(last, 429, "bad admin tokens were never throttled");
}
