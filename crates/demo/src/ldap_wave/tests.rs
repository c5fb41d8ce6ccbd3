use std::path::{Path, PathBuf};

use super::*;
use crate::{Setup, Started};

fn phase(binds_per_s: f64) -> Phase {
    Phase {
        binds_per_s,
        p99_ms: 10.0,
        binds: 100,
        cpu_s: 2.0,
        ..Phase::default()
    }
}

fn run(server: &str, alone: f64, attacked: f64, victim_bind: i32) -> WaveRun {
    WaveRun {
        server: server.into(),
        reference: server == "slapd",
        alone: phase(alone),
        alone_each: vec![alone],
        attacked: phase(attacked),
        control: None,
        victim_bind,
    }
}

#[test]
fn cpu_time_is_read_after_the_command_name() {
    // A command name with spaces and a parenthesis must not shift the fields.
    let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0";
    assert_eq!(parse_stat_cpu(stat), Some(3.25));
    assert_eq!(parse_stat_cpu("42 (x) S 1"), None);
    // This process has a stat of its own, with some CPU spent already.
    assert!(cpu_seconds(std::process::id()).is_ok());
}

#[test]
fn verdicts_hold_a_server_to_each_goal() {
    let slapd = run("slapd", 20.0, 18.0, 49);
    let pool = &Pool {
        saturated: 100.0,
        in_flight: 100.0,
    };
    let good = run("portcullis", 85.0, 84.0, 0);
    let v = verdict(&good, Some(&slapd), pool, &Goals::ISSUE);
    assert!(v.starts_with("PASS"), "{v}");
    // Short of 3.5x slapd's binds/s (and of the pool share).
    let slow = run("portcullis", 60.0, 60.0, 0);
    let v = verdict(&slow, Some(&slapd), pool, &Goals::ISSUE);
    assert!(v.starts_with("FAIL") && v.contains("3.00x slapd"), "{v}");
    // Enough binds/s, but honest users lost a share under the wave.
    let v = verdict(
        &run("portcullis", 85.0, 70.0, 0),
        Some(&slapd),
        pool,
        &Goals::ISSUE,
    );
    assert!(v.starts_with("FAIL") && v.contains("retention 0.82"), "{v}");
    // The victim refused after the wave, or seen locked by the lab during it.
    let v = verdict(
        &run("portcullis", 85.0, 84.0, 49),
        Some(&slapd),
        pool,
        &Goals::ISSUE,
    );
    assert!(
        v.starts_with("FAIL") && v.contains("user1 locked out"),
        "{v}"
    );
    let mut seen = run("portcullis", 85.0, 84.0, 0);
    seen.attacked.locked_out = vec!["user1".into()];
    assert!(seen.victim_locked());
    // No reference to compare with is a failure, not a pass.
    let v = verdict(&good, None, pool, &Goals::ISSUE);
    assert!(v.starts_with("FAIL"), "{v}");
    assert_eq!(
        verdict(&slapd, Some(&slapd), pool, &Goals::ISSUE),
        "- (the reference)"
    );
}

/// A run the lab passed (its own thresholds), labelled `target`.
fn lab_result(target: &str) -> portcullis_lab::runner::ScenarioResult {
    portcullis_lab::runner::ScenarioResult {
        scenario: SECTION.into(),
        description: String::new(),
        target: target.into(),
        driver: "ldap".into(),
        scenario_toml: String::new(),
        seed: 1,
        repeats: Vec::new(),
        thresholds: Vec::new(),
        failures: Vec::new(),
        passed: true,
    }
}

/// The section's verdict reaches the report's verdict by target: a server the table says
/// FAIL for is not counted as passing there (a full demo on a Xeon said FAIL in the table
/// and "portcullis PASS 15 of 15" above it).
#[test]
fn a_failing_verdict_is_carried_onto_the_servers_run_under_the_wave() {
    let section = |results| Section {
        scenario: String::new(),
        description: String::new(),
        results,
    };
    let both = || vec![lab_result("slapd"), lab_result("portcullis")];
    let mut sections = vec![section(both()), section(both()), section(both())];
    let pool = Pool {
        saturated: 100.0,
        in_flight: 100.0,
    };
    let slapd = run("slapd", 20.0, 18.0, 49);
    // 3.00x slapd: short of the goal.
    let runs = [slapd.clone(), run("portcullis", 60.0, 60.0, 0)];
    carry_verdicts(&mut sections, &runs, &pool, &Goals::ISSUE);
    let under = &sections[1].results;
    assert!(under[0].passed, "the reference keeps the lab's judgement");
    assert!(!under[1].passed);
    assert!(
        under[1].failures[0].contains("3.00x slapd"),
        "{:?}",
        under[1].failures
    );
    for s in [&sections[0], &sections[2]] {
        assert!(s.results.iter().all(|r| r.passed && r.failures.is_empty()));
    }
    // A passing verdict leaves every run as the lab judged it.
    let mut sections = vec![section(both()), section(both())];
    carry_verdicts(
        &mut sections,
        &[slapd, run("portcullis", 85.0, 84.0, 0)],
        &pool,
        &Goals::ISSUE,
    );
    assert!(sections[1].results.iter().all(|r| r.passed));
}

#[test]
fn the_slapd_goal_is_what_the_cpu_allows_this_many_clients() {
    // slapd 20 binds/s; the pool alone derives only 50/s for sixteen jobs in flight here
    // (2.5x slapd): 3.5x is out of any server's reach, the goal is 0.8 of that ceiling.
    let slapd = run("slapd", 20.0, 18.0, 49);
    let judge = |alone: f64, saturated: f64, in_flight: f64| {
        let pool = Pool {
            saturated,
            in_flight,
        };
        let ours = run("portcullis", alone, alone, 0);
        verdict(&ours, Some(&slapd), &pool, &Goals::ISSUE)
    };
    let v = judge(45.0, 90.0, 50.0);
    assert!(v.starts_with("PASS"), "{v}");
    let capped = "2.25x slapd's binds/s (goal 2.00x: issue 39's 3.5x is above";
    assert!(v.contains(capped), "{v}");
    assert!(
        v.contains("0.90 of the pool alone with 16 in flight"),
        "{v}"
    );
    // Below 0.8 of the ceiling: both goals missed.
    let v = judge(35.0, 90.0, 50.0);
    assert!(
        v.starts_with("FAIL: 1.75x slapd's binds/s (goal 2.00x"),
        "{v}"
    );
    assert!(v.contains("0.70 of the pool alone"), "{v}");
    // A CPU with room: the issue's 3.5x itself.
    let v = judge(85.0, 120.0, 100.0);
    assert!(v.contains("4.25x slapd's binds/s (goal 3.5x)"), "{v}");
}

#[test]
fn the_table_has_a_cell_per_column_and_says_who_is_locked() {
    let runs = [
        run("slapd", 20.0, 18.0, 49),
        run("portcullis", 85.0, 84.0, 0),
    ];
    let pool = Pool {
        saturated: 100.0,
        in_flight: 60.0,
    };
    let t = table(&runs, &pool, &Goals::ISSUE);
    assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
    let locked = t
        .columns
        .iter()
        .position(|c| c.contains("locked out"))
        .unwrap();
    assert!(t.rows[0][locked].starts_with("yes"));
    assert!(t.rows[1][locked].starts_with("no"));
    // Both yardsticks, each in its own column.
    let col = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
    assert_eq!(t.rows[1][col("vs pool, 16 in flight")], "1.42");
    assert_eq!(t.rows[1][col("vs pool saturated")], "0.85");
    let cpu = t.columns.iter().position(|c| c.contains("CPU")).unwrap();
    assert_eq!(t.rows[0][cpu], "20.0");
}

#[test]
fn retention_is_over_the_phases_alone_before_and_after_the_wave() {
    // The process drifted up by a fifth between the phases alone: the wave, measured
    // between them, cost nothing. Over the phase before alone it would read 1.10.
    let before = Phase {
        binds_per_s: 50.0,
        p99_ms: 300.0,
        binds: 100,
        cpu_s: 2.0,
        ..Phase::default()
    };
    let after = Phase {
        binds_per_s: 60.0,
        p99_ms: 250.0,
        binds: 150,
        cpu_s: 3.0,
        locked_out: vec!["user3".into()],
        ..Phase::default()
    };
    let alone = before.merge(&after);
    assert_eq!(alone.binds_per_s, 55.0);
    assert_eq!(alone.p99_ms, 300.0);
    assert_eq!(alone.binds, 250);
    assert_eq!(alone.cpu_ms_per_bind(), Some(20.0));
    assert_eq!(alone.locked_out, vec!["user3".to_owned()]);
    let r = WaveRun {
        server: "portcullis".into(),
        reference: false,
        alone,
        alone_each: vec![50.0, 60.0],
        attacked: phase(55.0),
        control: None,
        victim_bind: 0,
    };
    assert_eq!(r.retention(), Some(1.0));
    let t = table(
        &[run("slapd", 20.0, 18.0, 49), r],
        &Pool {
            saturated: 100.0,
            in_flight: 60.0,
        },
        &Goals::ISSUE,
    );
    assert_eq!(t.rows[1][1], "55.0 (50.0 before, 60.0 after the wave)");
    assert_eq!(t.rows[0][1], "20.0");
}

#[test]
fn phases_are_lab_scenarios_of_the_issues_shape() {
    let base = "dc=example,dc=org";
    let alone =
        Scenario::parse(&scenario(base, Duration::from_secs(3), Wave::Alone), None).unwrap();
    assert_eq!(alone.groups.len(), 1);
    assert_eq!(alone.groups[0].sources.len(), USERS);
    let wave =
        Scenario::parse(&scenario(base, Duration::from_secs(3), Wave::Guesses), None).unwrap();
    assert_eq!(wave.groups.len(), 2);
    assert_eq!(wave.groups[1].size, GUESSERS);
    assert_eq!(wave.groups[1].sources.len(), GUESSERS);
    assert!(!wave.groups[1].expects_success());
    // The control: as many sources, of their own, binding as a user no server has; each
    // half from sources of its own, so neither meets state the wave or the other left.
    let control = |half| {
        Scenario::parse(
            &scenario(base, Duration::from_secs(3), Wave::Control(half)),
            None,
        )
        .unwrap()
    };
    let (before, after) = (control(Half::Before), control(Half::After));
    for c in [&before, &after] {
        assert_eq!(c.groups.len(), 2);
        let (g, w) = (&c.groups[1], &wave.groups[1]);
        assert_eq!(g.size, w.size);
        assert!(!g.expects_success());
        assert!(g.sources.iter().all(|s| !w.sources.contains(s)));
    }
    let (b, a) = (&before.groups[1].sources, &after.groups[1].sources);
    assert!(b.iter().all(|s| !a.contains(s)));
    for half in [Half::Before, Half::After] {
        let text = scenario(base, Duration::from_secs(3), Wave::Control(half));
        assert!(text.contains(&format!("principal_offset = {CONTROL_USER}")));
    }
}

#[test]
fn the_verdict_holds_retention_to_the_control_where_there_is_one() {
    let slapd = run("slapd", 20.0, 18.0, 49);
    let pool = &Pool {
        saturated: 100.0,
        in_flight: 100.0,
    };
    // 0.91 of alone, 0.97 of the control: the wave's traffic cost the rest.
    let mut ours = run("portcullis", 90.0, 82.0, 0);
    ours.control = Some(phase(84.5));
    let v = verdict(&ours, Some(&slapd), pool, &Goals::ISSUE);
    assert!(v.starts_with("PASS"), "{v}");
    assert!(
        v.contains("retention 0.97 of the control's binds/s (goal 0.95; 0.91 of alone)"),
        "{v}"
    );
    // Short of the control too: a failure.
    ours.control = Some(phase(90.0));
    let v = verdict(&ours, Some(&slapd), pool, &Goals::ISSUE);
    assert!(
        v.starts_with("FAIL: retention 0.91 of the control's"),
        "{v}"
    );
    let t = table(&[slapd, ours], pool, &Goals::ISSUE);
    let col = t
        .columns
        .iter()
        .position(|c| c == "retention vs control")
        .unwrap();
    assert_eq!(t.rows[1][col], "0.91 (90.0 binds/s)");
    assert_eq!(t.rows[0][col], "-");
}

/// A server that speaks LDAP but is never started (the section must not get that far).
struct Unstarted;

impl DemoServer for Unstarted {
    fn label(&self) -> String {
        "unstarted".into()
    }
    fn about(&self) -> String {
        String::new()
    }
    fn start(&self, _: Setup) -> BoxFuture<Result<Started, LabError>> {
        Box::pin(async { Err(LabError::Target("not in this test".into())) })
    }
    fn speaks_ldap(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn without_slapd_the_section_is_left_out_with_the_reason() {
    let servers: [&dyn DemoServer; 1] = [&Unstarted];
    let only = vec![SECTION.to_owned()];
    let missing = || {
        crate::slapd::find_slapd_with(
            Path::new("/nonexistent/usr/sbin/slapd"),
            Path::new("/nonexistent/pw-pbkdf2.so"),
            None,
        )
    };
    let (part, note) = section(&servers, true, &only, false, missing)
        .await
        .unwrap();
    assert!(part.is_none());
    let note = note.unwrap();
    assert!(
        note.contains(TITLE) && note.contains("slapd is not installed"),
        "{note}"
    );
    // A script named that does not exist is a reason too.
    let named = || {
        crate::slapd::find_slapd_with(
            Path::new("/proc/self/stat"),
            Path::new("/proc/self/stat"),
            Some(PathBuf::from("/nonexistent/scripts/slapd")),
        )
    };
    let (part, note) = section(&servers, false, &[], false, named).await.unwrap();
    assert!(part.is_none());
    assert!(note.unwrap().contains("PORTCULLIS_SLAPD names no file"));
}

#[tokio::test]
async fn the_quick_demo_runs_the_section_only_on_request() {
    let servers: [&dyn DemoServer; 1] = [&Unstarted];
    let asked = std::cell::Cell::new(false);
    let find = || {
        asked.set(true);
        Err("unused".to_owned())
    };
    let (part, note) = section(&servers, true, &[], false, find).await.unwrap();
    assert!(part.is_none() && note.is_none() && !asked.get());
    // Another section asked for by name: not this one.
    let other = vec!["acct-storm-beside-logins".to_owned()];
    let (part, note) = section(&servers, false, &other, false, || Err("x".into()))
        .await
        .unwrap();
    assert!(part.is_none() && note.is_none());
}

/// A phase's rate is its steady seconds': not its first (the clients starting), not the
/// row after its end (binds in flight when it ended), so a short phase at the same rate
/// reads as a long one does.
#[test]
fn a_phase_is_measured_over_its_steady_seconds() {
    use portcullis_lab::record::SecondRow;
    let row = |second, accepted| SecondRow {
        second,
        completed: accepted,
        outstanding: 0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        outcomes: [(portcullis_lab::Outcome::Success, accepted)].into(),
    };
    let series = |steady: &[u64]| {
        let mut rows = vec![row(0, 30)];
        rows.extend(steady.iter().zip(1..).map(|(&n, s)| row(s, n)));
        rows.push(row(steady.len() as u64 + 1, 16));
        rows
    };
    // 5 s and 10 s at 64 binds/s in every steady second: the same rate.
    let short = series(&[64; 4]);
    let long = series(&[64; 9]);
    assert_eq!(steady_rate(&short, Duration::from_secs(5)), Some(64.0));
    assert_eq!(steady_rate(&long, Duration::from_secs(10)), Some(64.0));
    // Over the whole phase they differ: the edges weigh more in the short one.
    let whole = |s: &[SecondRow], d: f64| s.iter().map(|r| r.completed).sum::<u64>() as f64 / d;
    assert!(whole(&short, 5.0) < 0.98 * whole(&long, 10.0));
    // Other outcomes are not accepted binds; too short a phase has no steady seconds.
    let mut refused = series(&[64; 4]);
    refused[2].outcomes = [(portcullis_lab::Outcome::AuthFailure, 64)].into();
    assert_eq!(steady_rate(&refused, Duration::from_secs(5)), Some(48.0));
    assert_eq!(steady_rate(&short, Duration::from_millis(2900)), None);
}
