//! The demo's "LDAP binds under a guessing wave" section end to end (issue 39): `portcullis
//! demo --quick --only ldap-binds-wave` starts Debian's slapd (as scripts/slapd builds it,
//! 16 users at PBKDF2-SHA256 x600,000, ppolicy pwdMaxFailure 5) and Portcullis (`portcullis
//! serve` with [ldap], a child process) and runs each alone and under 50 guessing sources,
//! 3 s a phase. Functional checks only, no timing thresholds: each server has its row with
//! every field; both served the honest users; the server CPU per bind was read; slapd's
//! ppolicy locked the victim (a third party's real behaviour, which the section must see),
//! Portcullis did not. And without slapd the section is left out with the reason.

// Test helpers outside #[test] functions: a failed set-up is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::demo_report_support::{first_number, table_rows};
use crate::process_support::BIN;

const TITLE: &str = "LDAP binds under a guessing wave";

/// `portcullis demo --quick --quiet --only ldap-binds-wave` with `PORTCULLIS_SLAPD` set
/// to `slapd`: its `summary.json`.
fn demo(slapd: &str) -> serde_json::Value {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(BIN)
        .args(["demo", "--quick", "--quiet", "--only", "ldap-binds-wave"])
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
    serde_json::from_str(&text).unwrap()
}

/// The section's table: per server (first column), column -> cell.
fn rows(summary: &serde_json::Value) -> HashMap<String, HashMap<String, String>> {
    table_rows(summary, TITLE)
        .into_iter()
        .map(|row| (row["server"].clone(), row))
        .collect()
}

#[test]
fn issue_39_ldap_wave_demo_section_runs_end_to_end() {
    let _heavy = crate::server_support::exclusive();
    assert!(
        Path::new("/usr/sbin/slapd").is_file() && Path::new("/usr/lib/ldap/pw-pbkdf2.so").is_file(),
        "Debian's slapd and slapd-contrib are missing: ./scripts/test installs them (scripts/slapd install)"
    );
    let summary = demo(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/slapd"));
    let rows = rows(&summary);
    let (slapd, ours) = (&rows["slapd"], &rows["portcullis"]);
    for r in [slapd, ours] {
        // Both servers answered their honest users, alone and under the wave, and the
        // CPU of each server's own process was read over its binds.
        assert!(first_number(&r["binds/s alone"]) > 0.0, "{r:?}");
        assert!(first_number(&r["binds/s under 50 guessers"]) > 0.0, "{r:?}");
        assert!(first_number(&r["server CPU ms/bind alone"]) > 0.0, "{r:?}");
        assert!(first_number(&r["vs pool, 16 in flight"]) > 0.0, "{r:?}");
        assert!(first_number(&r["vs pool saturated"]) > 0.0, "{r:?}");
        assert!(r["retention"].parse::<f64>().is_ok(), "{r:?}");
    }
    // Portcullis is measured alone before and after the wave (its retention is over
    // both); slapd, whose victim stays locked out, before only.
    let alone = &ours["binds/s alone"];
    assert!(
        alone.contains(" before, ") && alone.ends_with(" after the wave)"),
        "{ours:?}"
    );
    assert!(!slapd["binds/s alone"].contains("after"), "{slapd:?}");
    // slapd's ppolicy (pwdMaxFailure 5) locks user1 for everyone: its right password is
    // refused with invalidCredentials after the wave.
    let locked = "victim (user1) locked out";
    assert!(slapd[locked].starts_with("yes"), "{slapd:?}");
    assert!(slapd[locked].ends_with("result 49)"), "{slapd:?}");
    assert_eq!(slapd["verdict"], "- (the reference)");
    // Portcullis keeps user1's account for its trusted source: bound after the wave.
    assert!(ours[locked].starts_with("no"), "{ours:?}");
    assert!(ours[locked].ends_with("result 0)"), "{ours:?}");
    assert!(first_number(&ours["vs slapd"]) > 0.0, "{ours:?}");
    let verdict = &ours["verdict"];
    assert!(
        verdict.starts_with("PASS") || verdict.starts_with("FAIL"),
        "{verdict}"
    );
    assert!(verdict.contains("user1 not locked out"), "{verdict}");
}

#[test]
fn issue_39_ldap_wave_demo_section_without_slapd_says_why() {
    let summary = demo("/nonexistent/scripts/slapd");
    let tables = summary["tables"].as_array().unwrap();
    assert!(tables.iter().all(|t| t["title"] != TITLE), "{summary:#}");
    let notes = summary["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| {
            let n = n.as_str().unwrap();
            n.contains(TITLE) && n.contains("left out") && n.contains("PORTCULLIS_SLAPD")
        }),
        "{notes:#?}"
    );
}
