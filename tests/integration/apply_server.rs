//! Issue 27: `portcullis apply FILE --server URL` against a real `portcullis serve` with
//! `[admin] listen`. The scenario of the local apply (dry run, converge, a changed file,
//! prune) runs through the admin API; what it did is checked in the server's store
//! (records and versions), a read-only token is refused and changes nothing, and the
//! audit file has every change by its actor and no secret.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use portcullis_store::DataDir;

use crate::apply::{apply, apply_ok, scenario, snapshot, write_files};
use crate::process_support::{admin_addr, cli, post, serve};

fn token(addr: SocketAddr, id: &str, secret: &str) -> String {
    let (status, _, body) = post(
        addr,
        "/oauth2/token",
        (id, secret),
        "grant_type=client_credentials",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["access_token"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_apply_through_the_admin_api_converges_prunes_and_refuses_a_read_only_token() {
    let _serial = crate::server_support::exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let files = tmp.path().join("decl");
    std::fs::create_dir_all(&files).unwrap();
    let ops_secret = cli(
        &data,
        &["client", "add", "ops", "--scope", "portcullis:admin:write"],
        "",
    )
    .trim()
    .to_owned();
    let viewer_secret = cli(
        &data,
        &[
            "client",
            "add",
            "viewer",
            "--scope",
            "portcullis:admin:read",
        ],
        "",
    )
    .trim()
    .to_owned();
    std::fs::write(files.join("ops.secret"), format!("{ops_secret}\n")).unwrap();
    std::fs::write(files.join("viewer.secret"), format!("{viewer_secret}\n")).unwrap();
    let config = tmp.path().join("portcullis.toml");
    std::fs::write(
        &config,
        "[admin]\nlisten = \"127.0.0.1:0\"\n\n[audit]\ndestination = \"file\"\n",
    )
    .unwrap();
    let srv = serve(&config, &data);
    let admin: SocketAddr = admin_addr(&srv);
    let write_token = token(srv.addr, "ops", &ops_secret);
    let token_file = tmp.path().join("ops.token");
    std::fs::write(&token_file, &write_token).unwrap();
    let dir = DataDir::open(&data).await.unwrap();
    let store: std::sync::Arc<dyn portcullis_store::Store> = dir.store();
    // The admin clients are declared too, so --prune keeps them (their secrets verify
    // against the stored hashes: unchanged).
    let extra = "[[clients]]\nid = \"ops\"\nscopes = [\"portcullis:admin:write\"]\n\
                 secret_file = \"ops.secret\"\n\n[[clients]]\nid = \"viewer\"\n\
                 scopes = [\"portcullis:admin:read\"]\nsecret_file = \"viewer.secret\"\n";
    let server = format!("http://{admin}");
    let target = [
        "--server",
        server.as_str(),
        "--token-file",
        token_file.to_str().unwrap(),
    ];
    scenario(
        std::sync::Arc::clone(&store),
        &dir.peppers(),
        dir.master_key(),
        &files,
        &target,
        (extra, &["ops", "viewer"]),
    )
    .await;

    // The client's own credentials, exchanged at the OAuth listener's token endpoint: the
    // converged store is left as it is.
    let file = write_files(&files, "\"read\", \"write\"", false, false, extra);
    let before = snapshot(store.as_ref()).await;
    let token_url = format!("http://{}/oauth2/token", srv.addr);
    let secret_file = files.join("ops.secret");
    let out = apply_ok(&[
        &file,
        "--server",
        &server,
        "--client-id",
        "ops",
        "--client-secret-file",
        secret_file.to_str().unwrap(),
        "--token-url",
        &token_url,
    ]);
    assert!(out.ends_with("nothing to change\n"), "{out}");
    assert_eq!(snapshot(store.as_ref()).await, before);

    // A read-only token: refused with 403, nothing written, though the file differs.
    let file = write_files(&files, "\"read\"", true, false, extra);
    let viewer_token = files.join("viewer.token");
    std::fs::write(&viewer_token, token(srv.addr, "viewer", &viewer_secret)).unwrap();
    let out = apply(&[
        &file,
        "--server",
        &server,
        "--token-file",
        viewer_token.to_str().unwrap(),
        "--prune",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("403"), "{stderr}");
    assert_eq!(snapshot(store.as_ref()).await, before);

    // A bad document is refused by the server with the field named: sent by hand, as
    // the CLI checks the file before sending it.
    let bad = crate::admin::call(
        admin,
        "POST",
        "/admin/v1/apply?dry_run=true",
        Some(&write_token),
        &[],
        Some(&serde_json::json!({"clients": [{"id": "x", "secret": "s3cr3t-value", "grants": ["nope"]}]})),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", crate::admin::text(&bad));
    let body = String::from_utf8_lossy(&bad.body).to_string();
    assert!(body.contains("/clients/0/grants"), "{body}");
    assert!(!body.contains("s3cr3t-value"), "{body}");

    let mut child = srv.child;
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let audit = std::fs::read_to_string(data.join("audit.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["event"] == "admin")
        .collect();
    let has = |action: &str, resource: &str, actor: &str| {
        events
            .iter()
            .any(|e| e["action"] == action && e["resource"] == resource && e["actor"] == actor)
    };
    assert!(has("client.create", "clients/billing", "ops"), "{audit}");
    assert!(has("nas.create", "nas/office", "ops"), "{audit}");
    assert!(has("user.update", "users/bob", "ops"), "{audit}");
    assert!(has("client.remove", "clients/legacy", "ops"), "{audit}");
    assert!(
        events
            .iter()
            .any(|e| e["action"] == "apply" && e["actor"] == "ops" && e["status"] == 200),
        "{audit}"
    );
    for secret in [
        ops_secret.as_str(),
        viewer_secret.as_str(),
        write_token.as_str(),
        "nas-shared-secret-from-env-0123",
        "billing-chosen-secret-value-456",
    ] {
        assert!(!audit.contains(secret));
    }
}
