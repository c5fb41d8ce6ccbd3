use super::*;
use portcullis_lab::record::{GroupRecorder, merge};
use portcullis_lab::runner::RepeatResult;

/// A run whose legitimate group made `n` successes in 2 s.
fn result(n: u32) -> ScenarioResult {
    let g = GroupRecorder::new("legitimate", true, Duration::from_secs(2));
    for _ in 0..n {
        g.record(0, Outcome::Success, Duration::from_millis(5));
    }
    ScenarioResult {
        scenario: String::new(),
        description: String::new(),
        target: "t".into(),
        driver: "radius".into(),
        scenario_toml: String::new(),
        seed: 1,
        repeats: vec![RepeatResult {
            repeat: 0,
            started_unix: 0,
            duration_s: 2.0,
            requests: u64::from(n),
            capped: false,
            groups: vec![g.finish()],
            legitimate: Some(merge("legitimate", &[g.raw()], Duration::from_secs(2))),
            server: Vec::new(),
            misdelivered: 0,
            breaches: 0,
        }],
        thresholds: Vec::new(),
        failures: Vec::new(),
        passed: true,
    }
}

/// Logins alone, beside the control and beside the storm; `acked` storm records of
/// which `stored` reached the store.
fn findings(alone: u32, control: u32, storm: u32, acked: u32, stored: u64) -> Findings {
    let pair = |logins: u32| Beside {
        logins: result(logins),
        storm: result(acked),
    };
    Findings {
        alone: result(alone),
        saturation: result(0),
        pairs: vec![Pair {
            storm: pair(storm),
            control: pair(control),
        }],
        offered: 100.0,
        stored: (0, stored),
    }
}

/// Issue 41 item 8: retention is measured against the control (the same storm to a
/// stub), not against logins alone, whose rate lacks the generator's CPU.
#[test]
fn issue_41_retention_is_against_the_control_and_the_verdict_says_why() {
    // 0.80 of logins alone, as on Zen 4, but 0.98 of the control: the generator's.
    let f = findings(100, 82, 80, 10, 10);
    assert!((f.retention().unwrap() - 80.0 / 82.0).abs() < 1e-9);
    assert_eq!(f.verdict(), "PASS");
    let f = findings(100, 100, 80, 10, 10);
    assert!(
        f.verdict().starts_with("FAIL: logins kept 0.80"),
        "{}",
        f.verdict()
    );
    let f = findings(100, 82, 80, 10, 9);
    assert!(
        f.verdict().contains("missing from the store"),
        "{}",
        f.verdict()
    );
    assert!(findings(100, 0, 80, 10, 10).verdict().contains("no logins"));
    // The report's verdict table reads the same verdict off the logins' run.
    let (section, table) = report(&[("portcullis".into(), findings(100, 100, 80, 10, 10))]);
    assert!(table.rows[0][1].starts_with("FAIL: logins kept 0.80"));
    assert!(!section.results[2].passed);
    assert!(
        section
            .results
            .iter()
            .enumerate()
            .all(|(i, r)| i == 2 || r.passed)
    );
}

/// Options for a run without a progress line.
fn quiet(label: &str) -> RunOptions {
    RunOptions {
        allow_targets: Vec::new(),
        progress: false,
        label: label.into(),
        position: None,
    }
}

/// With budgets above what the storm sends, the stub acknowledges every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_control_stub_acknowledges_every_record() {
    let secret = b"stub-secret";
    let stub = crate::acct_stub::AckStub::start(secret, vec![u64::MAX; 8])
        .await
        .unwrap();
    let d = Durations::demo(true);
    let s = accounting(
        "to-stub",
        &stub.url(),
        secret,
        Duration::from_secs(1),
        d.timeout,
        Some(200.0),
    )
    .unwrap();
    let r = run_scenario(&s, &quiet("stub")).await.unwrap();
    let legit = r.repeats[0].legitimate.as_ref().unwrap();
    assert!(legit.completed > 0);
    assert_eq!(acknowledged(&r), legit.completed, "{:?}", legit.outcomes);
    stub.stop();
}

/// Given the server's acknowledgements per second, the stub answers that many in each
/// second and no more (so the generator receives, retransmits and times out as it did
/// beside the server); a cap on the average rate answered evenly instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_control_stub_replays_the_servers_acknowledgements_second_by_second() {
    let secret = b"stub-secret";
    let schedule = vec![50, 0, 30];
    let stub = crate::acct_stub::AckStub::start(secret, schedule.clone())
        .await
        .unwrap();
    // 400 records/s for 3 s: more than each second's budget, so every budget is spent.
    let s = accounting(
        "to-stub",
        &stub.url(),
        secret,
        Duration::from_secs(3),
        Duration::from_secs(3),
        Some(400.0),
    )
    .unwrap();
    let r = run_scenario(&s, &quiet("stub")).await.unwrap();
    stub.stop();
    let sent = r.repeats[0].legitimate.as_ref().unwrap().completed;
    assert!(sent > 1000, "{sent} records");
    // Each answer acknowledges a distinct record, and nothing is answered past the
    // schedule's last second (the lab waits for retransmissions until 6 s).
    assert_eq!(acknowledged(&r), schedule.iter().sum::<u64>());
}

/// The full demo measures two pairs, the second control first; retention is over both,
/// and the table shows each pair's beside it.
#[test]
fn issue_41_retention_is_over_every_pair_and_shown_for_each() {
    let mut f = findings(100, 100, 80, 10, 20);
    let second = findings(100, 90, 90, 10, 20).pairs.remove(0);
    f.pairs.push(second);
    // (80 + 90) / (100 + 90), not the mean of 0.80 and 1.00.
    assert!((f.retention().unwrap() - 170.0 / 190.0).abs() < 1e-9);
    assert_eq!(f.retention_by_pair(), vec![0.8, 1.0]);
    assert!(
        f.verdict().starts_with("FAIL: logins kept 0.89"),
        "{}",
        f.verdict()
    );
    // 20 acknowledged over both storms, 20 stored: none missing.
    assert_eq!(f.acknowledged().1, 20);
    assert!(f.nothing_acknowledged_unstored());
    let (section, table) = report(&[("portcullis".into(), f)]);
    assert_eq!(table.rows[0][5], "0.89 (0.80, 1.00 by pair)");
    // Alone, saturation, then four runs a pair; the verdict rides on the first only.
    assert_eq!(section.results.len(), 10);
    let failed: Vec<usize> = (0..10).filter(|&i| !section.results[i].passed).collect();
    assert_eq!(failed, vec![2]);
}

#[test]
fn issue_28_scenarios_parse_with_the_demo_secret() {
    let d = Durations::demo(true);
    let s = logins(
        "x",
        "radius://127.0.0.1:1812",
        b"a \"quoted\" secret",
        d.logins,
        d.timeout,
    )
    .unwrap();
    assert_eq!(s.groups[0].size, LOGIN_USERS);
    let a = accounting(
        "y",
        "radius://127.0.0.1:1813",
        b"s",
        d.saturation,
        d.timeout,
        Some(300.0),
    )
    .unwrap();
    assert!(matches!(&a.driver, portcullis_lab::scenario::DriverSpec::Radius(r) if r.accounting));
    assert!(
        logins(
            "x",
            "radius://127.0.0.1:1",
            "é".as_bytes(),
            d.logins,
            d.timeout
        )
        .is_err()
    );
}
