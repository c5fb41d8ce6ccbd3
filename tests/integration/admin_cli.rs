//! Issue 27 with the real binary: the first admin client is made with the CLI
//! (`portcullis client add ops --scope portcullis:admin:write`), `portcullis serve` opens
//! the admin listener from `[admin] listen`, the client's token drives the API, and what
//! the API wrote is what the CLI then lists; the audit file has the action, no secret.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use serde_json::json;

use crate::admin::{call, text};
use crate::process_support::{admin_addr, cli, post, serve};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_first_admin_client_from_the_cli_drives_a_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let secret = cli(
        &data,
        &["client", "add", "ops", "--scope", "portcullis:admin:write"],
        "",
    )
    .trim()
    .to_owned();
    let config = dir.path().join("portcullis.toml");
    std::fs::write(
        &config,
        "[admin]\nlisten = \"127.0.0.1:0\"\n\n[audit]\ndestination = \"file\"\n",
    )
    .unwrap();
    let srv = serve(&config, &data);
    let admin: SocketAddr = admin_addr(&srv);
    let (status, _, body) = post(
        srv.addr,
        "/oauth2/token",
        ("ops", &secret),
        "grant_type=client_credentials",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let token: serde_json::Value = serde_json::from_str(&body).unwrap();
    let token = token["access_token"].as_str().unwrap().to_owned();

    let a = call(
        admin,
        "POST",
        "/admin/v1/users",
        Some(&token),
        &[],
        Some(&json!({"username": "from-api", "password": "api pw 27"})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    let listed = cli(&data, &["user", "list"], "");
    assert!(listed.contains("from-api"), "{listed}");
    let a = call(admin, "GET", "/admin/v1/openapi.json", None, &[], None).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json()["openapi"], "3.1.0");

    let mut child = srv.child;
    let _ = terminate(&mut child);
    let audit = std::fs::read_to_string(data.join("audit.jsonl")).unwrap();
    let event = audit
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "admin" && e["action"] == "user.create")
        .expect("the creation is audited");
    assert_eq!(event["actor"], "ops");
    assert_eq!(event["resource"], "users/from-api");
    assert!(!audit.contains(&secret) && !audit.contains(&token) && !audit.contains("api pw 27"));
}

/// SIGTERM and wait: the server drains and flushes its audit file before it exits.
fn terminate(child: &mut std::process::Child) -> std::io::Result<std::process::ExitStatus> {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait()
}
