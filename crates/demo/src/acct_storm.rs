//! The demo's "Accounting storm beside logins" section (issue 28): does a flood of
//! accounting records cost honest users their logins, and does the server acknowledge
//! only what it stored?
//!
//! Against one server that serves RADIUS authentication and accounting
//! ([`DemoServer::speaks_accounting`]) it runs, in turn: PAP logins alone (a closed loop);
//! an accounting saturation run (closed loop, so its acknowledged records/s is the
//! durable rate this server sustains on this machine now); the same PAP logins beside a
//! storm at twice that rate sent to the server's accounting listener; then the control:
//! the same logins while the same storm goes to a stub in the demo's process that
//! acknowledges at once, no more records/s than the server did, and stores nothing. Logins and storm are two lab runs
//! started together on the demo's runtime, each with its own driver and sockets.
//!
//! The lab shares the machine's cores with the server (issue 41 item 8: on two cores the
//! storm's generator alone took a fifth of the logins), so retention is the logins beside
//! the real storm over the logins beside the control's: the generator's CPU is in both,
//! and what is left is what the server's accounting work costs its logins.
//!
//! Every accounting record the lab sends is distinct (its own session and status), so
//! after each accounting run the records the server stored must be at least the ones it
//! acknowledged; the section counts them through [`Accounting::stored`], which reads the
//! server's store, not the lab's tallies.

use std::time::Duration;

use portcullis_lab::LabError;
use portcullis_lab::outcome::Outcome;
use portcullis_lab::report::{Section, Table};
use portcullis_lab::runner::{RunOptions, ScenarioResult, run_scenario};
use portcullis_lab::scenario::Scenario;

use super::{BoxFuture, DemoServer, Setup};

/// The section's name in the report.
pub const SECTION: &str = "acct-storm-beside-logins";

/// Honest PAP users in the login runs (the RADIUS side-by-side sections' ten).
pub const LOGIN_USERS: usize = 10;

/// The storm may offer at most this many records/s: beyond it the lab, sharing the
/// machine's cores with the server, would measure itself.
const MAX_STORM_RATE: f64 = 20_000.0;

/// A server's accounting side, as [`super::Started`] gives it.
pub struct Accounting {
    /// `radius://127.0.0.1:port` of its accounting listener.
    pub url: String,
    /// How many accounting records its store holds now (read from the store itself, so
    /// the section can check acknowledgements against it).
    pub stored: Box<dyn Fn() -> BoxFuture<Result<u64, LabError>> + Send + Sync>,
}

/// The section's bar: logins beside the storm keep at least this share of the logins
/// beside the control (the same storm acknowledged by a stub).
pub const RETENTION_GOAL: f64 = 0.95;

/// How long each run lasts.
#[derive(Debug, Clone, Copy)]
pub struct Durations {
    /// Each login run: alone, beside the control and beside the storm (the storms last
    /// as long).
    pub logins: Duration,
    /// The saturation run that measures the durable rate.
    pub saturation: Duration,
    /// How long the lab waits for any one answer (at least the drivers' retransmission
    /// schedule, 3 s).
    pub timeout: Duration,
}

impl Durations {
    /// The demo's: short with `--quick`.
    pub fn demo(quick: bool) -> Durations {
        if quick {
            Durations {
                logins: Duration::from_secs(3),
                saturation: Duration::from_secs(2),
                timeout: Duration::from_secs(3),
            }
        } else {
            // Logins run three times (alone, beside the control, beside the storm): 10 s
            // each settles their rate; the timeout outlasts the retransmissions (3 s).
            Durations {
                logins: Duration::from_secs(10),
                saturation: Duration::from_secs(5),
                timeout: Duration::from_secs(4),
            }
        }
    }
}

/// `secret` as a TOML string (the lab's scenarios take the NAS secret as text).
fn toml_secret(secret: &[u8]) -> Result<String, LabError> {
    let s = std::str::from_utf8(secret)
        .map_err(|_| LabError::Scenario("the RADIUS shared secret is not UTF-8".into()))?;
    // Rust's debug form of an ASCII string is a valid TOML basic string.
    if !s.is_ascii() {
        return Err(LabError::Scenario(
            "the RADIUS shared secret is not ASCII".into(),
        ));
    }
    Ok(format!("{s:?}"))
}

/// What the section's scenarios differ in; [`scenario`] writes the rest.
struct Shape<'a> {
    name: &'a str,
    description: &'a str,
    /// `radius://host:port`.
    url: &'a str,
    /// `[driver]` lines beyond kind and secret (accounting, retransmission).
    driver: &'a str,
    /// Principals' name and secret prefixes.
    prefixes: (&'a str, &'a str),
    /// Principals, all in the one group.
    count: usize,
    duration: Duration,
    timeout: Duration,
    /// The group's load model and source addresses.
    group: String,
}

/// One group of `shape.count` legitimate clients, as TOML and parsed (so the section's
/// scenarios pass the lab's own validation).
fn scenario(shape: &Shape<'_>, secret: &[u8]) -> Result<Scenario, LabError> {
    let text = format!(
        r#"
name = "{name}"
description = "{description}"
[target]
url = "{url}"
metrics = "off"
[driver]
kind = "radius"
secret = {secret}
{driver}
[principals]
prefix = "{prefix}"
secret_prefix = "{secret_prefix}"
count = {count}
[run]
duration = "{ms}ms"
ramp_up = "0ms"
seed = 7
timeout = "{timeout}ms"
[[group]]
name = "legitimate"
credentials = "valid"
size = {count}
{group}
"#,
        name = shape.name,
        description = shape.description,
        url = shape.url,
        secret = toml_secret(secret)?,
        driver = shape.driver,
        prefix = shape.prefixes.0,
        secret_prefix = shape.prefixes.1,
        count = shape.count,
        ms = shape.duration.as_millis(),
        timeout = shape.timeout.as_millis(),
        group = shape.group,
    );
    Scenario::parse(&text, None)
}

/// [`LOGIN_USERS`] PAP users (`lab-client-N` / `lab-secret-N`, from 127.0.0.2 up) in a
/// closed loop without pause against `url` (`radius://host:port`).
pub fn logins(name: &str, url: &str, secret: &[u8], d: &Durations) -> Result<Scenario, LabError> {
    let shape = Shape {
        name,
        description: "NAS users logging in with PAP without pause",
        url,
        driver: "retransmit_ms = 1000\nretries = 2",
        prefixes: ("lab-client-", "lab-secret-"),
        count: LOGIN_USERS,
        duration: d.logins,
        timeout: d.timeout,
        group: format!(
            "model = \"closed\"\nthink = \"0ms\"\nsources = \"127.0.0.2-127.0.0.{}\"",
            LOGIN_USERS + 1
        ),
    };
    scenario(&shape, secret)
}

/// Accounting records (Start, Interim-Update, Stop in turn; each device its own
/// sessions) from devices on their own loopback NAS addresses to `url`: 250 devices open
/// loop at `rate` records/s, or with `rate` `None` 128 devices in a closed loop without
/// pause (saturation).
pub fn accounting(
    name: &str,
    url: &str,
    secret: &[u8],
    duration: Duration,
    timeout: Duration,
    rate: Option<f64>,
) -> Result<Scenario, LabError> {
    let (count, model) = match rate {
        Some(r) => (
            250,
            format!("model = \"open\"\nrate = {r:.1}\nmax_outstanding = 8192"),
        ),
        None => (128, "model = \"closed\"\nthink = \"0ms\"".to_string()),
    };
    let shape = Shape {
        name,
        description: "accounting records, each device walking its sessions through Start, Interim-Update and Stop",
        url,
        driver: "accounting = true\nretransmit_ms = 1000\nretries = 2",
        prefixes: ("device-", "unused-"),
        count,
        duration,
        timeout,
        group: format!("{model}\nsources = \"127.0.4.1-127.0.4.250\""),
    };
    scenario(&shape, secret)
}

/// Two runs made at the same time.
#[derive(Debug, Clone)]
pub struct Beside {
    /// The logins' run.
    pub logins: ScenarioResult,
    /// The accounting storm's run.
    pub storm: ScenarioResult,
}

/// Run `logins` and `storm` at once on the current runtime, each with its own driver
/// (the runner builds one per run), labelled `label: logins` and `label: storm`.
pub async fn beside(logins: &Scenario, storm: &Scenario, label: &str) -> Result<Beside, LabError> {
    let opts = |what: &str| RunOptions {
        allow_targets: Vec::new(),
        // Two live progress lines at once would overwrite each other.
        progress: false,
        label: format!("{label}: {what}"),
        position: None,
    };
    let (lo, so) = (opts("logins beside the storm"), opts("accounting storm"));
    let (l, s) = tokio::join!(run_scenario(logins, &lo), run_scenario(storm, &so));
    Ok(Beside {
        logins: l?,
        storm: s?,
    })
}

/// Acknowledged attempts of a run (verified Accounting-Responses for accounting,
/// Access-Accepts for logins), over every repeat and group.
pub fn acknowledged(r: &ScenarioResult) -> u64 {
    r.repeats
        .iter()
        .flat_map(|rep| &rep.groups)
        .filter_map(|g| g.outcomes.get(&Outcome::Success))
        .sum()
}

/// The legitimate group's (accepts/s, p99 ms) of a run's first repeat.
fn rate_p99(r: &ScenarioResult) -> (f64, f64) {
    r.repeats
        .first()
        .and_then(|rep| rep.legitimate.as_ref())
        .map_or((0.0, 0.0), |l| (l.throughput, l.p99_ms))
}

/// The 99th percentile (ms) of a run's acknowledged attempts alone, from the intended
/// send time (the legitimate group's; its timeouts would put the all-outcome p99 at the
/// timeout).
fn ack_p99(r: &ScenarioResult) -> f64 {
    r.repeats
        .first()
        .and_then(|rep| rep.groups.iter().find(|g| g.expects_success))
        .map_or(0.0, |g| g.success_p99_ms)
}

/// What the section found against one server.
#[derive(Debug, Clone)]
pub struct Findings {
    /// Logins alone.
    pub alone: ScenarioResult,
    /// Logins beside the same storm sent to a stub that acknowledges at once and stores
    /// nothing: the generator's load without the server's accounting work.
    pub control: Beside,
    /// The saturation run.
    pub saturation: ScenarioResult,
    /// Logins and storm together.
    pub beside: Beside,
    /// Records/s the storm offered.
    pub offered: f64,
    /// Records stored during the saturation run and during the storm (store counts
    /// before and after each).
    pub stored: (u64, u64),
}

impl Findings {
    /// Records acknowledged during the saturation run and during the storm.
    pub fn acknowledged(&self) -> (u64, u64) {
        (
            acknowledged(&self.saturation),
            acknowledged(&self.beside.storm),
        )
    }

    /// Every acknowledged record was stored.
    pub fn nothing_acknowledged_unstored(&self) -> bool {
        let (a, b) = self.acknowledged();
        self.stored.0 >= a && self.stored.1 >= b
    }

    /// Logins/s beside the storm over logins/s beside the control; `None` when the
    /// control made no logins.
    pub fn retention(&self) -> Option<f64> {
        let control = rate_p99(&self.control.logins).0;
        (control > 0.0).then(|| rate_p99(&self.beside.logins).0 / control)
    }

    /// The section's verdict: `PASS`, or `FAIL: ` and each reason.
    pub fn verdict(&self) -> String {
        let mut why = Vec::new();
        match self.retention() {
            Some(r) if r >= RETENTION_GOAL => {}
            Some(r) => why.push(format!(
                "logins kept {r:.2} of the control's beside the storm (goal {RETENTION_GOAL})"
            )),
            None => why.push("the control made no logins".into()),
        }
        if !self.nothing_acknowledged_unstored() {
            why.push("acknowledged records missing from the store".into());
        }
        match why.is_empty() {
            true => "PASS".into(),
            false => format!("FAIL: {}", why.join("; ")),
        }
    }
}

/// Run the section against `srv`, started with `setup` (accounting asked for).
pub async fn run(
    srv: &dyn DemoServer,
    mut setup: Setup,
    d: &Durations,
) -> Result<Findings, LabError> {
    let secret = setup
        .radius_secret
        .clone()
        .ok_or_else(|| LabError::Scenario("the accounting section needs a RADIUS secret".into()))?;
    setup.accounting = true;
    let started = srv.start(setup).await?;
    let found = match (&started.radius, &started.accounting) {
        (Some(radius), Some(acct)) => measure(&srv.label(), radius, acct, &secret, d).await,
        _ => Err(LabError::Target(format!(
            "{} did not start RADIUS authentication and accounting",
            srv.label()
        ))),
    };
    (started.stop)().await;
    found
}

async fn measure(
    label: &str,
    radius: &str,
    acct: &Accounting,
    secret: &[u8],
    d: &Durations,
) -> Result<Findings, LabError> {
    let run_alone = |s: Scenario, what: &'static str| {
        let opts = RunOptions {
            allow_targets: Vec::new(),
            progress: false,
            label: format!("{label}: {what}"),
            position: None,
        };
        async move { run_scenario(&s, &opts).await }
    };
    let alone = run_alone(
        logins("pap-logins-alone", radius, secret, d)?,
        "logins alone",
    )
    .await?;
    let before = (acct.stored)().await?;
    let sat = accounting(
        "acct-saturation",
        &acct.url,
        secret,
        d.saturation,
        d.timeout,
        None,
    )?;
    let saturation = run_alone(sat, "accounting saturation").await?;
    let after_saturation = (acct.stored)().await?;
    let durable = rate_p99(&saturation).0;
    let offered = (2.0 * durable).clamp(100.0, MAX_STORM_RATE);
    let storm = accounting(
        "acct-storm",
        &acct.url,
        secret,
        d.logins,
        d.timeout,
        Some(offered),
    )?;
    let pap = logins("pap-logins-beside-storm", radius, secret, d)?;
    let with_storm = beside(&pap, &storm, label).await?;
    let after_storm = (acct.stored)().await?;
    // The control: the same storm to a stub that acknowledges at once, no more records/s
    // than the server did (the rest dropped as the server shed them), so the generator
    // works as it did beside the server.
    let acked_rate = rate_p99(&with_storm.storm).0;
    let stub = crate::acct_stub::AckStub::start(secret, Some(acked_rate.max(1.0))).await?;
    let control_storm = accounting(
        "acct-storm-to-stub",
        &stub.url(),
        secret,
        d.logins,
        d.timeout,
        Some(offered),
    )?;
    let pap = logins("pap-logins-beside-control", radius, secret, d)?;
    let control = beside(
        &pap,
        &control_storm,
        &format!("{label}, control (storm to a stub)"),
    )
    .await;
    stub.stop();
    let control = control?;
    Ok(Findings {
        alone,
        control,
        saturation,
        beside: with_storm,
        offered,
        stored: (
            after_saturation.saturating_sub(before),
            after_storm.saturating_sub(after_saturation),
        ),
    })
}

/// `r` carrying the section's verdict, so the report's verdict table says what the
/// section's table does (the lab's own judgement of a run has no thresholds here).
fn judged(r: &ScenarioResult, verdict: &str) -> ScenarioResult {
    let mut r = r.clone();
    if let Some(why) = verdict.strip_prefix("FAIL: ") {
        r.passed = false;
        r.failures.push(why.to_owned());
    }
    r
}

/// The report's section (the six runs) and table (one row per server).
pub fn report(found: &[(String, Findings)]) -> (Section, Table) {
    let results = found
        .iter()
        .flat_map(|(_, f)| {
            [
                f.alone.clone(),
                f.saturation.clone(),
                judged(&f.beside.logins, &f.verdict()),
                f.beside.storm.clone(),
                f.control.logins.clone(),
                f.control.storm.clone(),
            ]
        })
        .collect();
    let rows = found
        .iter()
        .map(|(server, f)| {
            let (alone, _) = rate_p99(&f.alone);
            let (control, control_p99) = rate_p99(&f.control.logins);
            let (with, with_p99) = rate_p99(&f.beside.logins);
            let (sat, _) = rate_p99(&f.saturation);
            let (acked, _) = rate_p99(&f.beside.storm);
            let acked_p99 = ack_p99(&f.beside.storm);
            let of_durable = if sat > 0.0 {
                format!("{:.2}", acked / sat)
            } else {
                "-".into()
            };
            let retention = f
                .retention()
                .map_or_else(|| "-".into(), |r| format!("{r:.2}"));
            let (_, storm_acks) = f.acknowledged();
            vec![
                server.clone(),
                f.verdict(),
                format!("{alone:.1}"),
                format!("{control:.1}"),
                format!("{with:.1}"),
                retention,
                format!("{control_p99:.0} / {with_p99:.0}"),
                format!("{sat:.0}"),
                format!("{:.0}", f.offered),
                format!("{acked:.0}"),
                of_durable,
                format!("{acked_p99:.0}"),
                format!("{storm_acks} / {}", f.stored.1),
                if f.nothing_acknowledged_unstored() {
                    "yes".into()
                } else {
                    "NO".into()
                },
            ]
        })
        .collect();
    let section = Section {
        scenario: SECTION.into(),
        description: "Accounting storm beside logins: PAP logins alone, the accounting door's durable rate (closed-loop saturation), the same logins beside a storm at twice that rate sent to the server's accounting listener, then beside the same storm sent to a stub that acknowledges as many records/s at once and stores nothing (the control: the lab's own load)".into(),
        results,
    };
    let table = Table {
        title: "Accounting storm beside logins".into(),
        columns: [
            "server",
            "verdict",
            "logins/s alone",
            "logins/s beside the control (storm to a stub)",
            "logins/s beside the storm",
            "retention vs control (goal >= 0.95)",
            "login p99 ms control / storm",
            "durable records/s (saturation)",
            "storm offered records/s",
            "storm acknowledged records/s",
            "acknowledged / durable",
            "storm ack p99 ms (acknowledged records only)",
            "storm acknowledged / stored",
            "every acknowledged record stored",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Section {SECTION}: {LOGIN_USERS} NAS users log in with PAP in a closed loop without pause, alone; then 128 devices send accounting records without pause (Start, Interim-Update, Stop in turn), whose acknowledged records/s is the durable rate the server sustains here; then the same logins run twice more while, at the same time, 250 devices (each its own loopback NAS address) offer accounting records at twice that rate (capped at {MAX_STORM_RATE:.0}/s), open loop, retransmitting like NASes (after 1 s, twice): first to the server's accounting listener, then (the control) to a stub in the demo's process that checks each record and acknowledges at once no more records/s than the server acknowledged, dropping the rest as the server shed them, and stores nothing. The lab's generator runs on the same cores as the server, so logins beside the control already pay for it (compare with logins alone); retention is logins/s beside the storm over logins/s beside the control, what the server's accounting work costs its logins. Verdict: PASS when retention is at least {RETENTION_GOAL} and every acknowledged record was stored. Every record is distinct, so the records the server's store gained during a run must be at least those it acknowledged (counted in the store after each run; more stored than acknowledged is work wasted: an answer that came after the lab's timeout, was lost, or was withheld because it was late). The storm's ack p99 is over its acknowledged records alone, from the intended send time: under 1 s, the drivers' retransmission timeout, means each was acknowledged before its NAS sent it again; acknowledged / durable is the storm's acknowledged records/s over the saturation run's (alone, while the storm runs beside logins that take the CPU first)."
        ),
    };
    (section, table)
}

#[cfg(test)]
mod tests {
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
            control: pair(control),
            saturation: result(0),
            beside: pair(storm),
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

    /// The control's stub acknowledges every record the storm's generator sends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn issue_41_control_stub_acknowledges_every_record() {
        let secret = b"stub-secret";
        let stub = crate::acct_stub::AckStub::start(secret, None)
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
        let opts = RunOptions {
            allow_targets: Vec::new(),
            progress: false,
            label: "stub".into(),
            position: None,
        };
        let r = run_scenario(&s, &opts).await.unwrap();
        let legit = r.repeats[0].legitimate.as_ref().unwrap();
        assert!(legit.completed > 0);
        assert_eq!(acknowledged(&r), legit.completed, "{:?}", legit.outcomes);
        stub.stop();
    }

    /// Capped at the server's acknowledged rate, the stub answers no more than that (so
    /// the generator retransmits and waits as it did beside the server).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn issue_41_control_stub_answers_no_more_than_its_rate() {
        let secret = b"stub-secret";
        let rate = 50.0;
        let stub = crate::acct_stub::AckStub::start(secret, Some(rate))
            .await
            .unwrap();
        let s = accounting(
            "to-stub",
            &stub.url(),
            secret,
            Duration::from_secs(1),
            Duration::from_secs(3),
            Some(400.0),
        )
        .unwrap();
        let opts = RunOptions {
            allow_targets: Vec::new(),
            progress: false,
            label: "stub".into(),
            position: None,
        };
        let t = std::time::Instant::now();
        let r = run_scenario(&s, &opts).await.unwrap();
        let elapsed = t.elapsed().as_secs_f64();
        stub.stop();
        let acked = acknowledged(&r) as f64;
        // At most the rate over the whole run plus the bucket's burst of a tenth of it.
        assert!(
            acked > 0.0 && acked <= rate * elapsed + rate / 10.0,
            "{acked} in {elapsed} s"
        );
        let sent = r.repeats[0].legitimate.as_ref().unwrap().completed as f64;
        assert!(acked < sent, "{acked} of {sent}: the stub dropped none");
    }

    #[test]
    fn issue_28_scenarios_parse_with_the_demo_secret() {
        let d = Durations::demo(true);
        let s = logins("x", "radius://127.0.0.1:1812", b"a \"quoted\" secret", &d).unwrap();
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
        assert!(
            matches!(&a.driver, portcullis_lab::scenario::DriverSpec::Radius(r) if r.accounting)
        );
        assert!(logins("x", "radius://127.0.0.1:1", "é".as_bytes(), &d).is_err());
    }
}
