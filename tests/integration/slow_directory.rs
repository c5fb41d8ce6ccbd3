//! The demo's "a slow directory behind the door" section end to end (issue 40): `portcullis
//! demo --quick --only slow-directory,directory-lockout` starts Debian's slapd (as
//! scripts/slapd builds it) behind the lab's delaying relay for each server, Portcullis
//! with the directory as its upstream and FreeRADIUS 3.2 with rlm_ldap (Debian freeradius
//! and freeradius-ldap, installed by ./scripts/test through scripts/radius-tools --server;
//! a missing one FAILS the test), and writes its report. Functional checks only, no
//! timing thresholds: every server and scenario has its row with every field; the guesses
//! through FreeRADIUS reached the directory as failed binds the relay held; through
//! Portcullis the lockout victim is not locked in slapd and its owner logged in from its
//! usual station, through FreeRADIUS the same traffic locked it.

// Test helpers outside #[test] functions: a failed set-up is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::process::Command;

use crate::demo_report_support::{first_number, table_rows};
use crate::process_support::BIN;

/// What the section reports per scenario and server.
const FIELDS: &[&str] = &[
    "honest logins/s, no attack",
    "honest logins/s, with guessers",
    "retention",
    "honest p99 ms, with guessers",
    "honest timeouts",
    "honest accepted / refused",
    "failed binds held by the directory (most at once)",
    "worker pool during the attack",
    "victim in slapd",
    "verdict",
];

/// The section's table from `summary.json`: one map (column -> cell) per row.
fn rows(summary: &serde_json::Value) -> Vec<HashMap<String, String>> {
    table_rows(summary, "A slow directory behind the door")
}

#[test]
fn issue_40_slow_directory_demo_section_runs_end_to_end() {
    let _heavy = crate::server_support::exclusive();
    assert!(
        std::path::Path::new("/usr/lib/freeradius/rlm_ldap.so").is_file(),
        "FreeRADIUS' rlm_ldap is missing: ./scripts/test installs it (scripts/radius-tools --server)"
    );
    let out = tempfile::tempdir().unwrap();
    let slapd = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/slapd");
    let run = Command::new(BIN)
        .args(["demo", "--quick", "--quiet"])
        .args(["--only", "slow-directory,directory-lockout"])
        .arg("--out")
        .arg(out.path())
        .env("PORTCULLIS_SLAPD", slapd)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "demo failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(out.path().join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = rows(&summary);
    let row = |scenario: &str, server: &str| {
        rows.iter()
            .find(|r| r["scenario"] == scenario && r["server"] == server)
            .unwrap_or_else(|| panic!("no row for {scenario} on {server}: {rows:#?}"))
    };
    for scenario in ["slow-directory", "directory-lockout"] {
        for server in ["portcullis", "freeradius"] {
            let r = row(scenario, server);
            for field in FIELDS {
                assert!(r.contains_key(*field), "no {field:?} in {r:?}");
            }
        }
    }
    // Both servers' honest users logged in without the guessers: the directory worked.
    for server in ["portcullis", "freeradius"] {
        let r = row("slow-directory", server);
        assert!(
            first_number(&r["honest logins/s, no attack"]) > 0.0,
            "{r:?}"
        );
        assert!(r["retention"].parse::<f64>().is_ok(), "{r:?}");
    }
    // FreeRADIUS sent the guesses to the directory as binds, which the relay held; its
    // worker pool was read from its status server.
    let fr = row("slow-directory", "freeradius");
    let held = &fr["failed binds held by the directory (most at once)"];
    assert!(first_number(held) > 0.0, "{fr:?}");
    assert!(
        fr["worker pool during the attack"].contains("threads"),
        "{fr:?}"
    );
    // The lockout: through Portcullis the victim keeps its account and its owner logs in;
    // through FreeRADIUS the same guesses lock it in slapd.
    let ours = row("directory-lockout", "portcullis");
    assert_eq!(ours["victim in slapd"], "not locked", "{ours:?}");
    assert!(
        first_number(&ours["honest accepted / refused"]) > 0.0,
        "{ours:?}"
    );
    let theirs = row("directory-lockout", "freeradius");
    assert_eq!(theirs["victim in slapd"], "LOCKED", "{theirs:?}");
}
