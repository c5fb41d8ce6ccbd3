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
    let report = scratch.path().join("run.json");
    let report_arg = report.to_string_lossy().into_owned();
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
            // Its machine-readable run report, read below: the terminal summary line
            // changes shape with what the run met ("N generated, N passed, M skipped").
            .args(["--report", "json", "--report-json-path", &report_arg])
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
    let run: serde_json::Value = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no JSON run report at {report:?}:\n{stdout}\n{stderr}"));
    let checked = checked_cases(&run)
        .unwrap_or_else(|e| panic!("schemathesis run report: {e}\n{run:#}\n{stdout}"));
    // It really exercised every operation with many checked cases (not an empty run).
    assert!(checked >= 300, "only {checked} checked cases:\n{stdout}");
    assert_eq!(
        run["operations"]["tested"].as_u64(),
        Some(OPERATIONS as u64),
        "not every operation was tested:\n{stdout}"
    );
    eprintln!(
        "issue 27: schemathesis: {checked} checked cases, every one passed ({})",
        run["test_cases"]
    );
    ts.server.shutdown().await.unwrap();
}

/// The cases Schemathesis' JSON run report says were sent and checked, or why the run
/// does not count: it did not finish, found a failure or an error. Cases it answered
/// without running a check ("without_checks", shown as "skipped") are not counted.
fn checked_cases(run: &serde_json::Value) -> Result<u64, String> {
    if run["complete"] != serde_json::Value::Bool(true) || run["exit_code"] != 0 {
        return Err("the run did not complete with exit code 0".into());
    }
    let cases = &run["test_cases"];
    let count = |k: &str| cases[k].as_u64().ok_or(format!("no test_cases.{k}"));
    if count("unique_failures")? != 0 || count("with_failures")? != 0 {
        return Err("failures found".into());
    }
    if count("errored")? != 0 || run["errors"].as_array().is_none_or(|e| !e.is_empty()) {
        return Err("errors met".into());
    }
    Ok(count("generated")?.saturating_sub(count("without_checks")?))
}
