//! Issue 39 (the data of the directory an LDAP door shows), over the admin API on real
//! TCP: users' entryUUID and directory attributes (created, changed without touching the
//! password, refused when bad, uidNumber unique), and the groups resource (members,
//! ETags and compare-and-set, a user's removal ending its memberships and staling the
//! group's ETag, pages, removal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_store::{EntryUuid, Grant};
use serde_json::json;

use crate::admin::{WRITE, admin_server, call, text, token};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_user_attributes_and_groups_over_the_admin_api() {
    let ts = admin_server().await;
    let addr = ts.server.admin_addr().unwrap();
    let ops = ts
        .add_client("ops", &[Grant::ClientCredentials], &[WRITE])
        .await;
    let app = ts.add_client("app", &[Grant::Password], &[]).await;
    let tok = token(&ts, "ops", &ops).await;
    let login = |user: &'static str, pw: &'static str| {
        let body = crate::server_support::form(&[
            ("grant_type", "password"),
            ("username", user),
            ("password", pw),
        ]);
        let app = app.clone();
        let ts = &ts;
        async move {
            ts.post("/oauth2/token", Some(("app", &app)), &body)
                .await
                .status
        }
    };
    let post = |path: &'static str, body: serde_json::Value| {
        let tok = tok.clone();
        async move { call(addr, "POST", path, Some(&tok), &[], Some(&body)).await }
    };

    let posix = json!({"uid_number": 10001, "gid_number": 10000,
        "home_directory": "/home/alice", "login_shell": "/bin/bash"});
    let a = post(
        "/admin/v1/users",
        json!({"username": "alice", "password": "alice pw 39",
               "attributes": {"cn": "Alice Liddell", "mail": "alice@example.com",
                              "posix": posix}}),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    let alice = a.json();
    // A UUID by RFC 9562's syntax, parsed by the store's reader.
    let uuid = alice["entry_uuid"].as_str().unwrap().to_owned();
    assert!(EntryUuid::parse(&uuid).is_ok(), "{uuid}");
    assert_eq!(alice["attributes"]["cn"], "Alice Liddell");
    assert_eq!(alice["attributes"]["posix"]["uid_number"], 10001);
    let etag = a.header("etag").unwrap().to_owned();

    // Bad attributes: named fields, nothing created.
    for (bad, pointer) in [
        (
            json!({"posix": {"uid_number": 0, "gid_number": 1, "home_directory": "/h"}}),
            "/attributes",
        ),
        (
            json!({"posix": {"uid_number": 5, "gid_number": 1, "home_directory": "h"}}),
            "/attributes",
        ),
        (json!({"mail": "no-at-sign"}), "/attributes"),
        (json!({"uidNumber": 5}), "/attributes/uidNumber"),
    ] {
        let a = post(
            "/admin/v1/users",
            json!({"username": "mallory", "password": "pw", "attributes": bad}),
        )
        .await;
        assert_eq!(a.status, 400, "{}", text(&a));
        let p = a.json()["errors"][0]["pointer"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert!(p.starts_with(pointer), "{p} vs {pointer}: {}", text(&a));
    }
    // A uidNumber already held is a conflict.
    let a = post(
        "/admin/v1/users",
        json!({"username": "mallory", "password": "pw",
               "attributes": {"posix": {"uid_number": 10001, "gid_number": 1,
                                        "home_directory": "/home/m"}}}),
    )
    .await;
    assert_eq!(a.status, 409, "{}", text(&a));
    let a = call(
        addr,
        "GET",
        "/admin/v1/users/mallory",
        Some(&tok),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 404, "{}", text(&a));

    // Changing attributes keeps the password and the entryUUID.
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/users/alice",
        Some(&tok),
        &[("If-Match", &etag)],
        Some(&json!({"attributes": {"sn": "Liddell"}})),
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    assert_eq!(a.json()["entry_uuid"], uuid.as_str());
    assert_eq!(a.json()["attributes"], json!({"sn": "Liddell"}));
    assert_eq!(login("alice", "alice pw 39").await, 200);

    let a = post(
        "/admin/v1/users",
        json!({"username": "bob", "password": "bob pw 39"}),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    let bob_etag = a.header("etag").unwrap().to_owned();
    assert_ne!(a.json()["entry_uuid"], uuid.as_str());

    // Groups: unknown members are the request's fault; a created group has an ETag.
    let a = post(
        "/admin/v1/groups",
        json!({"name": "staff", "members": ["alice", "nobody"]}),
    )
    .await;
    assert_eq!(a.status, 400, "{}", text(&a));
    assert_eq!(a.json()["errors"][0]["pointer"], "/members");
    let a = post(
        "/admin/v1/groups",
        json!({"name": "staff", "gid_number": 10000, "description": "Everyone",
               "members": ["bob", "alice"]}),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    assert_eq!(a.json()["members"], json!(["alice", "bob"]));
    let g_etag = a.header("etag").unwrap().to_owned();
    let a = post(
        "/admin/v1/groups",
        json!({"name": "other", "gid_number": 10000}),
    )
    .await;
    assert_eq!(a.status, 409, "{}", text(&a));
    let a = post("/admin/v1/groups", json!({"name": "x", "owner": "bob"})).await;
    assert_eq!(a.status, 400, "{}", text(&a));

    // Removing bob ends his membership and stales the group's ETag.
    let a = call(
        addr,
        "DELETE",
        "/admin/v1/users/bob",
        Some(&tok),
        &[("If-Match", &bob_etag)],
        None,
    )
    .await;
    assert_eq!(a.status, 204, "{}", text(&a));
    let a = call(addr, "GET", "/admin/v1/groups/staff", Some(&tok), &[], None).await;
    assert_eq!(a.status, 200, "{}", text(&a));
    assert_eq!(a.json()["members"], json!(["alice"]));
    let fresh = a.header("etag").unwrap().to_owned();
    assert_ne!(fresh, g_etag);
    let change = json!({"description": null, "remove_members": ["alice"]});
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/groups/staff",
        Some(&tok),
        &[("If-Match", &g_etag)],
        Some(&change),
    )
    .await;
    assert_eq!(a.status, 412, "{}", text(&a));
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/groups/staff",
        Some(&tok),
        &[("If-Match", &fresh)],
        Some(&change),
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    assert_eq!(a.json()["members"], json!([]));
    assert_eq!(a.json()["description"], serde_json::Value::Null);
    assert_eq!(a.json()["gid_number"], 10000);
    let fresh = a.header("etag").unwrap().to_owned();

    // Pages and removal.
    for n in ["g1", "g2", "g3"] {
        let a = post("/admin/v1/groups", json!({"name": n, "members": ["alice"]})).await;
        assert_eq!(a.status, 201, "{}", text(&a));
    }
    let a = call(
        addr,
        "GET",
        "/admin/v1/groups?limit=2",
        Some(&tok),
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    let names: Vec<String> = a.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["g1", "g2"]);
    assert_eq!(a.json()["next"], "g2");
    let a = call(
        addr,
        "DELETE",
        "/admin/v1/groups/staff",
        Some(&tok),
        &[("If-Match", &fresh)],
        None,
    )
    .await;
    assert_eq!(a.status, 204, "{}", text(&a));
    let a = call(addr, "GET", "/admin/v1/groups/staff", Some(&tok), &[], None).await;
    assert_eq!(a.status, 404, "{}", text(&a));
}
