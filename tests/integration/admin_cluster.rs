//! Issue 27 on a shared PostgreSQL store: two instances, one schema. Versions (and so
//! ETags) are the store's, so a write through one instance with an ETag read on the other
//! is checked against the same version (one 200, one 412 across instances), and a client
//! removed through one instance's admin API stops getting tokens from the other at once
//! (the change feed, not the one-minute cache TTL).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use portcullis_hash::pepper::PepperedHmac;
use portcullis_store::{ClientAuth, ClientRecord, Grant};
use serde_json::json;

use crate::admin::{WRITE, call, text};
use crate::scale_out::{cluster_with, within_5s};
use crate::server_support::{post_bytes, raw};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_admin_changes_hold_across_instances_on_postgres() {
    let c = cluster_with(2, None, |cfg| {
        cfg.client_cache_ttl = Duration::from_secs(60);
        cfg.admin.listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let secret = portcullis_store::generate_client_secret().unwrap();
    let hash = PepperedHmac::create(c.secrets.peppers.current().unwrap(), secret.as_bytes());
    c.servers[0]
        .parts()
        .store
        .put_client(&ClientRecord {
            id: "ops".into(),
            auth: ClientAuth::Secret,
            secret_hashes: vec![hash],
            grants: vec![Grant::ClientCredentials],
            scopes: vec![WRITE.into()],
            token_lifetime: 600,
            created_at: 0,
        })
        .await
        .unwrap();
    let token_from = |i: usize, id: &'static str, s: String| {
        let addr = c.servers[i].local_addr();
        async move {
            raw(
                addr,
                &post_bytes(
                    "/oauth2/token",
                    Some((id, &s)),
                    "grant_type=client_credentials",
                ),
            )
            .await
        }
    };
    let t = token_from(0, "ops", secret.to_string()).await;
    assert_eq!(t.status, 200);
    let tok = t.json()["access_token"].as_str().unwrap().to_owned();
    let (a0, a1) = (
        c.servers[0].admin_addr().unwrap(),
        c.servers[1].admin_addr().unwrap(),
    );

    // Created through A; B issues it a token (and caches it).
    let a = call(
        a0,
        "POST",
        "/admin/v1/clients",
        Some(&tok),
        &[],
        Some(&json!({"id": "svc"})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    let svc = a.json()["client_secret"].as_str().unwrap().to_owned();
    assert_eq!(token_from(1, "svc", svc.clone()).await.status, 200);

    // One ETag, read on A; a change through B wins, the same ETag through A is stale.
    let etag = call(a0, "GET", "/admin/v1/clients/svc", Some(&tok), &[], None)
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    let on_b = call(a1, "GET", "/admin/v1/clients/svc", Some(&tok), &[], None).await;
    assert_eq!(
        on_b.header("etag"),
        Some(etag.as_str()),
        "one version, one ETag"
    );
    let change = json!({"token_lifetime": 900});
    let b = call(
        a1,
        "PATCH",
        "/admin/v1/clients/svc",
        Some(&tok),
        &[("If-Match", &etag)],
        Some(&change),
    )
    .await;
    let a = call(
        a0,
        "PATCH",
        "/admin/v1/clients/svc",
        Some(&tok),
        &[("If-Match", &etag)],
        Some(&change),
    )
    .await;
    assert_eq!((b.status, a.status), (200, 412), "{}", text(&a));

    // Removed through A: B refuses it within seconds (its cache TTL is a minute).
    let current = b.header("etag").unwrap().to_owned();
    let d = call(
        a0,
        "DELETE",
        "/admin/v1/clients/svc",
        Some(&tok),
        &[("If-Match", &current)],
        None,
    )
    .await;
    assert_eq!(d.status, 204, "{}", text(&d));
    let took = within_5s(|| {
        let svc = svc.clone();
        let f = token_from(1, "svc", svc);
        async move { f.await.status == 401 }
    })
    .await;
    assert!(
        took.is_some(),
        "B still issues tokens to a client removed through A"
    );
    c.stop().await;
}
