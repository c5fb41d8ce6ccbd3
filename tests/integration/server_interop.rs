//! Issue #5: third-party clients against the in-process server. Python `authlib` fetches
//! tokens with both grants through the discovery metadata, `PyJWT` verifies them against
//! the JWKS, and authlib round-trips introspection and revocation
//! (tests/interop/oauth_interop.py). Python comes from `PORTCULLIS_PYTHON` (set by
//! ./scripts/test to the project .venv); a missing interpreter FAILS the test.

use portcullis_store::Grant;

use crate::server_support::start;

pub fn python() -> String {
    match std::env::var("PORTCULLIS_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => panic!(
            "PORTCULLIS_PYTHON is not set: run ./scripts/test (it prepares .venv with authlib \
             and PyJWT) or export PORTCULLIS_PYTHON=$PWD/.venv/bin/python"
        ),
    }
}

/// Run `tests/interop/SCRIPT` with `args` under the project's Python (off the runtime, so
/// an in-process server keeps its workers); it must exit 0 and print one JSON document.
#[allow(clippy::unwrap_used)]
pub async fn run_python(script: &str, args: Vec<std::ffi::OsString>) -> serde_json::Value {
    let py = python();
    let path = format!("{}/tests/interop/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&py)
            .arg(path)
            .args(&args)
            .output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("cannot run {}: {e}", python()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_authlib_token_verified_by_pyjwt() {
    let py = python();
    let s = start().await;
    let cc_secret = s
        .add_client(
            "interop-cc",
            &[Grant::ClientCredentials],
            &["read", "write"],
        )
        .await;
    let pw_secret = s
        .add_client(
            "interop-pw",
            &[Grant::ClientCredentials, Grant::Password],
            &["profile"],
        )
        .await;
    s.add_user("interop-user", "p@ss w0rd/é").await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/oauth_interop.py"
    );
    let args = [
        s.base(),
        "interop-cc".into(),
        cc_secret,
        "interop-pw".into(),
        pw_secret,
        "interop-user".into(),
        "p@ss w0rd/é".into(),
    ];
    // The script blocks; run it off the runtime so the server keeps both workers.
    let py2 = py.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&py2)
            .arg(script)
            .args(&args)
            .output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("cannot run {py}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "interop script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["client_credentials"]["sub"], "interop-cc");
    assert_eq!(summary["password"]["sub"], "interop-user");
    assert_eq!(summary["introspection_before_revoke"], true);
    assert_eq!(summary["introspection_after_revoke"], false);
    s.server.shutdown().await.unwrap();
}
