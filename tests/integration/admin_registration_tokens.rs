//! Issue 27: RFC 7591 initial access tokens through the admin API: made with limits
//! (uses, expiry, scopes, grants, auth methods) that the registration endpoint then
//! enforces, listed by page without secrets, revoked with If-Match (the registration
//! endpoint refuses the token at once), every action one audit event with no token in it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_server::audit::{AuditConfig, Destination};
use portcullis_server::registration::config::FileRegistration;
use portcullis_store::Grant;
use serde_json::{Value, json};

use crate::admin::{READ, WRITE, call, text, token};
use crate::registration::send;
use crate::server_support::{TestServer, start_with};

/// A server with the admin API, registration on, and the audit stream in a file.
async fn server() -> TestServer {
    start_with(|c| {
        c.admin.listen = Some("127.0.0.1:0".parse().unwrap());
        c.registration = FileRegistration {
            enabled: true,
            grant_types: vec!["client_credentials".into(), "password".into()],
            ..FileRegistration::default()
        }
        .validate()
        .unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_initial_access_tokens_through_the_admin_api() {
    let ts = server().await;
    let addr = ts.server.admin_addr().unwrap();
    let ops = ts
        .add_client("ops", &[Grant::ClientCredentials], &[WRITE])
        .await;
    let viewer = ts
        .add_client("viewer", &[Grant::ClientCredentials], &[READ])
        .await;
    let tok = token(&ts, "ops", &ops).await;
    let view_tok = token(&ts, "viewer", &viewer).await;
    let mut audited: Vec<(String, &'static str)> = Vec::new();
    let mut note = |a: &crate::server_support::Answer, action: &'static str| {
        audited.push((a.header("x-request-id").unwrap().to_owned(), action));
    };

    // Made with limits: two registrations, scope read, client_credentials, secrets only.
    let body = json!({"description": "partner A", "expires_in": 3600, "uses": 2,
                      "scopes": ["read"], "grants": ["client_credentials"],
                      "auth_methods": ["client_secret_basic"]});
    let a = call(
        addr,
        "POST",
        "/admin/v1/registration-tokens",
        Some(&tok),
        &[("Idempotency-Key", "iat-partner-a")],
        Some(&body),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    note(&a, "registration_token.create");
    let r = a.json();
    let iat = r["initial_access_token"].as_str().unwrap().to_owned();
    let id = r["token"]["id"].as_str().unwrap().to_owned();
    assert_eq!(iat.split_once('.').unwrap().0, id);
    assert_eq!(
        a.header("location").unwrap(),
        format!("/admin/v1/registration-tokens/{id}")
    );
    let stored = ts
        .store()
        .get_initial_access_token(&id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.max_uses, stored.uses, stored.description.as_str()),
        (2, 0, "partner A")
    );
    assert_eq!(stored.scopes, vec!["read".to_owned()]);
    assert_eq!(stored.grants, vec![Grant::ClientCredentials]);
    assert_eq!(stored.auth_methods, vec!["client_secret_basic".to_owned()]);
    assert!((3590..=3610).contains(&(stored.expires_at - stored.created_at)));
    assert_eq!(
        stored.secret_hash,
        portcullis_store::registration::hash_token(iat.split_once('.').unwrap().1)
    );
    // The same Idempotency-Key and body: the same token, not a second one.
    let again = call(
        addr,
        "POST",
        "/admin/v1/registration-tokens",
        Some(&tok),
        &[("Idempotency-Key", "iat-partner-a")],
        Some(&body),
    )
    .await;
    assert_eq!(again.status, 201, "{}", text(&again));
    assert_eq!(again.json()["initial_access_token"], iat.as_str());
    assert_eq!(
        ts.store().list_initial_access_tokens().await.unwrap().len(),
        1
    );

    // The registration endpoint enforces what the token allows.
    for refused in [
        json!({"grant_types": ["password"]}),
        json!({"scope": "write"}),
        json!({"token_endpoint_auth_method": "client_secret_post"}),
    ] {
        let a = send(&ts, "POST", "/oauth2/register", Some(&iat), Some(&refused)).await;
        assert_eq!(a.error(), "invalid_client_metadata", "{refused}");
    }
    let a = send(
        &ts,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({"scope": "read"})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));

    // Bad input names the field and makes nothing; a read token cannot make one.
    for (bad, pointer) in [
        (json!({"uses": 0}), "/uses"),
        (json!({"expires_in": 0}), "/expires_in"),
        (json!({"grants": ["implicit"]}), "/grants/0"),
        (json!({"grants": []}), "/grants"),
        (
            json!({"auth_methods": ["tls_client_auth2"]}),
            "/auth_methods",
        ),
        (json!({"scopes": ["bad scope"]}), "/scopes"),
        (json!({"description": "x".repeat(201)}), "/description"),
        (json!({"secret": "mine"}), ""),
    ] {
        let a = call(
            addr,
            "POST",
            "/admin/v1/registration-tokens",
            Some(&tok),
            &[],
            Some(&bad),
        )
        .await;
        assert_eq!(a.status, 400, "{bad}: {}", text(&a));
        if !pointer.is_empty() {
            assert_eq!(a.json()["errors"][0]["pointer"], pointer, "{bad}");
        }
    }
    let a = call(
        addr,
        "POST",
        "/admin/v1/registration-tokens",
        Some(&view_tok),
        &[],
        Some(&json!({})),
    )
    .await;
    assert_eq!(a.status, 403, "{}", text(&a));
    assert_eq!(
        ts.store().list_initial_access_tokens().await.unwrap().len(),
        1
    );

    // Two more (defaults), then list by pages of two: every id once, no secret shown.
    let mut iats = vec![iat.clone()];
    for _ in 0..2 {
        let a = call(
            addr,
            "POST",
            "/admin/v1/registration-tokens",
            Some(&tok),
            &[],
            Some(&json!({})),
        )
        .await;
        assert_eq!(a.status, 201, "{}", text(&a));
        note(&a, "registration_token.create");
        let t = a.json()["token"].clone();
        assert_eq!(t["max_uses"], 1);
        assert_eq!(t["grants"], json!(["client_credentials"]));
        assert_eq!(
            t["auth_methods"],
            json!([
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt"
            ])
        );
        iats.push(
            a.json()["initial_access_token"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let a = call(
        addr,
        "GET",
        "/admin/v1/registration-tokens?limit=2",
        Some(&view_tok),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    note(&a, "registration_token.list");
    let mut ids: Vec<String> = a.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    let link = a.header("link").unwrap().to_owned();
    let next = link
        .strip_prefix('<')
        .and_then(|l| l.split_once(">; rel=\"next\""))
        .unwrap()
        .0;
    let b = call(addr, "GET", next, Some(&view_tok), &[], None).await;
    assert_eq!(b.status, 200, "{}", text(&b));
    assert!(b.header("link").is_none());
    ids.extend(
        b.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned()),
    );
    let mut expected: Vec<String> = iats
        .iter()
        .map(|t| t.split_once('.').unwrap().0.to_owned())
        .collect();
    expected.sort();
    assert_eq!(ids, expected);
    for page in [&a, &b] {
        let shown = String::from_utf8_lossy(&page.body);
        for t in &iats {
            assert!(!shown.contains(t.split_once('.').unwrap().1));
        }
        assert!(!shown.contains("sha256:"));
    }

    // Read: the use is counted, and the ETag moved with it.
    let a = call(
        addr,
        "GET",
        &format!("/admin/v1/registration-tokens/{id}"),
        Some(&tok),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    note(&a, "registration_token.get");
    assert_eq!(
        (a.json()["uses"].clone(), a.json()["usable"].clone()),
        (json!(1), json!(true))
    );
    let tag = a.header("etag").unwrap().to_owned();
    assert_ne!(Some(tag.as_str()), again.header("etag"));

    // Revoke: without If-Match 428, with a stale one 412, then 204; the registration
    // endpoint refuses the token at once and the client it registered stays.
    let path = format!("/admin/v1/registration-tokens/{id}");
    let a = call(addr, "DELETE", &path, Some(&tok), &[], None).await;
    assert_eq!(a.status, 428, "{}", text(&a));
    let stale = again.header("etag").unwrap().to_owned();
    let a = call(
        addr,
        "DELETE",
        &path,
        Some(&tok),
        &[("If-Match", &stale)],
        None,
    )
    .await;
    assert_eq!(a.status, 412, "{}", text(&a));
    let a = call(
        addr,
        "DELETE",
        &path,
        Some(&tok),
        &[("If-Match", &tag)],
        None,
    )
    .await;
    assert_eq!(a.status, 204, "{}", text(&a));
    note(&a, "registration_token.revoke");
    assert!(
        ts.store()
            .get_initial_access_token(&id)
            .await
            .unwrap()
            .is_none()
    );
    let r = send(
        &ts,
        "POST",
        "/oauth2/register",
        Some(&iat),
        Some(&json!({})),
    )
    .await;
    assert_eq!((r.status, r.error()), (401, "invalid_token".to_owned()));
    assert_eq!(ts.store().list_clients().await.unwrap().len(), 3);
    let a = call(addr, "GET", &path, Some(&tok), &[], None).await;
    assert_eq!(a.status, 404, "{}", text(&a));

    // One audit event per action, none holding a token or its secret.
    let TestServer { server, data, dir } = ts;
    server.shutdown().await.unwrap();
    data.close().await;
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let events: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["event"] == "admin")
        .collect();
    for (rid, action) in &audited {
        let found: Vec<&Value> = events
            .iter()
            .filter(|e| e["request_id"] == rid.as_str())
            .collect();
        assert_eq!(found.len(), 1, "{action} {rid}: {found:?}");
        assert_eq!(found[0]["action"], *action);
    }
    let revoked = events
        .iter()
        .find(|e| e["action"] == "registration_token.revoke" && e["status"] == 204)
        .unwrap();
    assert_eq!(revoked["resource"], format!("registration-tokens/{id}"));
    assert!(revoked["before"].as_str().unwrap().starts_with("sha256:"));
    for t in &iats {
        assert!(
            !audit.contains(t.split_once('.').unwrap().1),
            "a token secret in the audit stream"
        );
    }
}
