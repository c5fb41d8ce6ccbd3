//! The audit sink: rate limit with summaries, rotation, the file format, validation.

use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime};

use portcullis_core::{
    AuditContext, AuditEvent, AuditOutcome, AuditSink, Class, PrincipalKind, Protocol,
};

use super::*;

fn event(source: &str, outcome: AuditOutcome, principal: &str) -> AuditEvent {
    AuditEvent {
        time: SystemTime::now(),
        protocol: Protocol::OAuthClient,
        kind: PrincipalKind::Client,
        principal: principal.to_owned(),
        context: AuditContext {
            request_id: portcullis_core::audit::request_id(),
            client_id: None,
            eap: None,
        },
        source: source.parse::<IpAddr>().unwrap(),
        station: None,
        outcome,
        reason: "wrong_secret",
        latency: Duration::from_micros(12_345),
        class: Some(Class::Unknown),
        directory: None,
    }
}

fn file_config(max_bytes: u64, keep: u32, limit: u32) -> AuditConfig {
    AuditConfig {
        destination: Destination::File {
            path: PathBuf::from("audit.jsonl"),
            max_bytes,
            keep,
        },
        per_source_limit: limit,
        interval: Duration::from_secs(60),
    }
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn issue_18_a_flood_from_one_prefix_is_summarised_and_others_are_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let audit = Audit::start(&file_config(1 << 20, 2, 3), dir.path()).unwrap();
    // Ten failures from one /24 (two addresses of it), two from another /24; then a
    // success from the flooded /24, which is written whatever the limit.
    for i in 0..10 {
        let outcome = if i % 5 == 4 {
            AuditOutcome::Throttled
        } else {
            AuditOutcome::Rejected
        };
        audit.record(event(
            &format!("203.0.113.{}", 1 + i % 2),
            outcome,
            "victim",
        ));
    }
    audit.record(event("198.51.100.7", AuditOutcome::Accepted, "alice"));
    audit.record(event("198.51.100.8", AuditOutcome::Rejected, "bob"));
    audit.record(event("203.0.113.50", AuditOutcome::Accepted, "victim"));
    audit.close();
    let got = lines(&dir.path().join("audit.jsonl"));
    let auth: Vec<_> = got
        .iter()
        .filter(|l| l["event"] == "authentication")
        .collect();
    let from_flood = auth
        .iter()
        .filter(|l| l["source"].as_str().unwrap().starts_with("203.0.113."))
        .count();
    assert_eq!(from_flood, 4, "per_source_limit, and the success: {got:#?}");
    assert_eq!(auth.len(), 6);
    assert!(
        auth.iter()
            .any(|l| l["source"] == "203.0.113.50" && l["outcome"] == "accepted")
    );
    let summaries: Vec<_> = got
        .iter()
        .filter(|l| l["event"] == "audit_summary")
        .collect();
    assert_eq!(summaries.len(), 1, "{got:#?}");
    assert_eq!(summaries[0]["source_prefix"], "203.0.113.0/24");
    // Of ten: three written (i = 0, 1, 2, all rejected); suppressed i = 3..9: five
    // rejected and two throttled.
    assert_eq!(summaries[0]["suppressed"]["rejected"], 5);
    assert_eq!(summaries[0]["suppressed"]["throttled"], 2);
    for l in &auth {
        for field in [
            "time",
            "request_id",
            "protocol",
            "principal_kind",
            "principal",
            "client_id",
            "source",
            "outcome",
            "reason",
            "latency_ms",
            "class",
        ] {
            assert!(l.get(field).is_some(), "{field} missing: {l}");
        }
        assert!(l["time"].as_str().unwrap().ends_with('Z'));
        assert_eq!(l["latency_ms"], 12.345);
    }
}

#[test]
fn issue_18_prefix_table_is_bounded_and_the_rest_share_one_window() {
    let dir = tempfile::tempdir().unwrap();
    let audit = Audit::start(&file_config(1 << 20, 2, 1), dir.path()).unwrap();
    let now = Instant::now();
    // MAX_PREFIXES distinct /24s fill the table; later new prefixes share the overflow.
    for i in 0..MAX_PREFIXES as u32 {
        let ip = IpAddr::from((0x0a00_0000u32 + (i << 8)).to_be_bytes());
        assert!(audit.admit(ip, AuditOutcome::Rejected, now));
    }
    let late = |k: u32| IpAddr::from((0x0b00_0000u32 + (k << 8)).to_be_bytes());
    assert!(
        audit.admit(late(1), AuditOutcome::Rejected, now),
        "overflow's first"
    );
    assert!(
        !audit.admit(late(2), AuditOutcome::Rejected, now),
        "overflow shares its limit"
    );
    assert_eq!(audit.windows.lock().len(), MAX_PREFIXES + 1);
    // Windows end: the table empties, the overflow's suppression is summarised.
    audit.sweep(now + Duration::from_secs(61));
    assert!(audit.windows.lock().is_empty());
    audit.close();
    let got = lines(&dir.path().join("audit.jsonl"));
    assert_eq!(got.len(), 1, "only the summary was written through `admit`");
    assert_eq!(got[0]["source_prefix"], "other");
    assert_eq!(got[0]["suppressed"]["rejected"], 1);
}

#[test]
fn issue_18_file_rotates_by_size_and_keeps_the_configured_number() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = file_config(4096, 2, u32::MAX);
    cfg.interval = Duration::from_secs(3600);
    let audit = Audit::start(&cfg, dir.path()).unwrap();
    for i in 0..200 {
        audit.record(event(
            &format!("192.0.2.{}", i % 250),
            AuditOutcome::Rejected,
            "p",
        ));
    }
    audit.close();
    let base = dir.path().join("audit.jsonl");
    let mut total = 0;
    for name in ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"] {
        let p = dir.path().join(name);
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len <= 4096, "{name}: {len} bytes");
        total += lines(&p).len();
    }
    assert!(!dir.path().join("audit.jsonl.3").exists(), "keep_files = 2");
    assert!(total < 200, "older lines beyond keep_files are gone");
    assert!(!lines(&base).is_empty());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&base).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn issue_18_principal_is_escaped_not_interpreted() {
    let dir = tempfile::tempdir().unwrap();
    let audit = Audit::start(&file_config(1 << 20, 1, 10), dir.path()).unwrap();
    let forged = "x\"}\n{\"event\":\"authentication\",\"outcome\":\"accepted\"";
    audit.record(event("192.0.2.1", AuditOutcome::Rejected, forged));
    audit.close();
    let got = lines(&dir.path().join("audit.jsonl"));
    assert_eq!(got.len(), 1, "one event stays one line");
    assert_eq!(got[0]["principal"], forged);
    assert_eq!(got[0]["outcome"], "rejected");
}

#[test]
fn issue_18_audit_section_validates() {
    let parse = |t: &str| -> Result<AuditConfig, String> {
        let f: FileAudit = toml::from_str(t).map_err(|e| e.to_string())?;
        AuditConfig::from_file(f).map_err(|e| e.to_string())
    };
    let text = EXAMPLE.replace("[audit]\n", "");
    assert_eq!(parse(&text).unwrap(), AuditConfig::default());
    assert_eq!(
        parse("destination = \"off\"").unwrap().destination,
        Destination::Off
    );
    for (t, needle) in [
        ("destination = \"syslog\"", "audit.destination"),
        (
            "destination = \"file\"\nmax_file_bytes = 10",
            "audit.max_file_bytes",
        ),
        ("per_source_limit = 0", "audit.per_source_limit"),
        ("interval_secs = 0", "audit.interval_secs"),
        ("colour = true", "colour"),
    ] {
        let e = parse(t).unwrap_err();
        assert!(e.contains(needle), "{t}: {e}");
    }
}

#[test]
fn issue_18_a_bad_audit_file_fails_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = AuditConfig {
        destination: Destination::File {
            path: dir.path().join("missing-dir/audit.jsonl"),
            max_bytes: 1 << 20,
            keep: 1,
        },
        ..AuditConfig::default()
    };
    assert!(Audit::start(&cfg, dir.path()).is_err());
}
