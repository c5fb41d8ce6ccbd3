//! Issue 27: Schemathesis (unmodified, from PyPI through the project's .venv) against the
//! admin API's served OpenAPI document.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_store::Grant;
use serde_json::json;

use crate::admin::{OPERATIONS, WRITE, admin_server, call, text, token};

/// Schemathesis (PyPI, unmodified) generates requests from the served OpenAPI document
/// with a write token and checks every answer: no 5xx, every status, content type and
/// body as the document says. Bounded by examples per operation so it stays near a
/// minute on a busy two-core machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_schemathesis_finds_no_server_error_and_no_schema_violation() {
    let ts = admin_server().await;
    let addr = ts.server.admin_addr().unwrap();
    let ops = ts
        .add_client("ops", &[Grant::ClientCredentials], &[WRITE])
        .await;
    let tok = token(&ts, "ops", &ops).await;
    // Some records to read, change and page through.
    for (path, body) in [
        (
            "/admin/v1/clients",
            json!({"id": "seed-client", "scopes": ["read"]}),
        ),
        (
            "/admin/v1/users",
            json!({"username": "seed-user", "password": "seed pw 27"}),
        ),
        (
            "/admin/v1/nas",
            json!({"name": "seed-nas", "cidr": "198.51.100.0/24"}),
        ),
    ] {
        let a = call(addr, "POST", path, Some(&tok), &[], Some(&body)).await;
        assert_eq!(a.status, 201, "{}", text(&a));
    }
    let py = crate::server_interop::python();
    let url = format!("http://{addr}/admin/v1/openapi.json");
    let auth = format!("Authorization: Bearer {tok}");
    // Its caches and reports go to a scratch directory, not the repository.
    let scratch = tempfile::tempdir().unwrap();
    let cwd = scratch.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&py)
            .current_dir(&cwd)
            .args(["-m", "schemathesis.cli", "run", &url])
            .args(["--header", &auth])
            .args([
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            ])
            .args(["--phases", "examples,coverage,fuzzing,stateful"])
            .args(["--max-examples", "25", "--workers", "2"])
            .args(["--request-timeout", "20", "--no-color"])
            .output()
    })
    .await
    .unwrap()
    .expect("run schemathesis (set PORTCULLIS_PYTHON: ./scripts/test prepares .venv)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{stdout}\n{stderr}"
    );
    // It really exercised every operation with many cases (not an empty run).
    let generated: usize = stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix(" passed")?.split_once(" generated, "))
        .and_then(|(n, _)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no test case count in:\n{stdout}"));
    assert!(generated >= 300, "only {generated} cases:\n{stdout}");
    let ops = format!("Tested: {}", OPERATIONS);
    assert!(
        stdout.contains(&ops),
        "not every operation was tested:\n{stdout}"
    );
    eprintln!("issue 27: schemathesis: {generated} cases, every one passed");
    ts.server.shutdown().await.unwrap();
}
