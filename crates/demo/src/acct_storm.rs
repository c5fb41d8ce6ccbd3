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
use portcullis_lab::runner::{RunOptions, ScenarioResult, run_scenario};
use portcullis_lab::scenario::Scenario;

use super::{BoxFuture, DemoServer, Setup};

mod table;
pub use table::report;

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

/// How long each run lasts, and how many times the storm and the control run.
#[derive(Debug, Clone, Copy)]
pub struct Durations {
    /// Logins alone.
    pub alone: Duration,
    /// Each login run beside the storm or the control (the storms last as long).
    pub logins: Duration,
    /// The saturation run that measures the durable rate.
    pub saturation: Duration,
    /// How long the lab waits for any one answer (at least the drivers' retransmission
    /// schedule, 3 s).
    pub timeout: Duration,
    /// Pairs of a run beside the storm and one beside the control. The second pair runs
    /// the control first (storm, control, control, storm), so a drift over the section
    /// weighs on both sides alike.
    pub pairs: usize,
}

impl Durations {
    /// The demo's: short with `--quick`.
    pub fn demo(quick: bool) -> Durations {
        if quick {
            // Two pairs of 3 s in the full demo's order. One pair (storm, then control)
            // read 0.93 (FAIL) where the full demo of the same build read 1.04 (Xeon,
            // issue 41): a drift over the section had nothing to cancel it.
            Durations {
                alone: Duration::from_secs(3),
                logins: Duration::from_secs(3),
                saturation: Duration::from_secs(2),
                timeout: Duration::from_secs(3),
                pairs: 2,
            }
        } else {
            // Logins beside the storm and beside the control for 16 s each, in runs of 8
            // s in the order storm, control, control, storm: on two shared cores one
            // 10-s run of each read 0.94-1.03 for the same server (Xeon, issue 41).
            Durations {
                alone: Duration::from_secs(5),
                logins: Duration::from_secs(8),
                saturation: Duration::from_secs(5),
                timeout: Duration::from_secs(3),
                pairs: 2,
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
/// closed loop without pause against `url` (`radius://host:port`) for `duration`.
pub fn logins(
    name: &str,
    url: &str,
    secret: &[u8],
    duration: Duration,
    timeout: Duration,
) -> Result<Scenario, LabError> {
    let shape = Shape {
        name,
        description: "NAS users logging in with PAP without pause",
        url,
        driver: "retransmit_ms = 1000\nretries = 2",
        prefixes: ("lab-client-", "lab-secret-"),
        count: LOGIN_USERS,
        duration,
        timeout,
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

/// The acknowledgements a storm's run received in each second (when they arrived), for
/// the control's stub to replay.
fn acks_per_second(r: &ScenarioResult) -> Vec<u64> {
    r.repeats
        .first()
        .and_then(|rep| rep.legitimate.as_ref())
        .map(|l| {
            l.series
                .iter()
                .map(|row| row.outcomes.get(&Outcome::Success).copied().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default()
}

/// One run of logins beside the storm and one beside the control.
#[derive(Debug, Clone)]
pub struct Pair {
    /// Logins and the storm sent to the server.
    pub storm: Beside,
    /// Logins and the same storm sent to a stub that acknowledges, second by second, as
    /// many records as the server did in the first storm, and stores nothing: the
    /// generator's load without the server's accounting work.
    pub control: Beside,
}

/// What the section found against one server.
#[derive(Debug, Clone)]
pub struct Findings {
    /// Logins alone.
    pub alone: ScenarioResult,
    /// The saturation run.
    pub saturation: ScenarioResult,
    /// The runs beside the storm and beside the control ([`Durations::pairs`]).
    pub pairs: Vec<Pair>,
    /// Records/s the storm offered.
    pub offered: f64,
    /// Records stored during the saturation run and from the first storm to the end of the
    /// last one (store counts before and after each span; the control stores nothing).
    pub stored: (u64, u64),
}

/// The mean of `f` over `items` (0 for none).
fn mean<T>(items: &[T], f: impl Fn(&T) -> f64) -> f64 {
    match items.len() {
        0 => 0.0,
        n => items.iter().map(f).sum::<f64>() / n as f64,
    }
}

impl Findings {
    /// Records acknowledged during the saturation run and during the storms.
    pub fn acknowledged(&self) -> (u64, u64) {
        (
            acknowledged(&self.saturation),
            self.pairs
                .iter()
                .map(|p| acknowledged(&p.storm.storm))
                .sum(),
        )
    }

    /// Every acknowledged record was stored.
    pub fn nothing_acknowledged_unstored(&self) -> bool {
        let (a, b) = self.acknowledged();
        self.stored.0 >= a && self.stored.1 >= b
    }

    /// Mean logins/s beside the storm and beside the control (every run lasts as long).
    pub fn login_rates(&self) -> (f64, f64) {
        (
            mean(&self.pairs, |p| rate_p99(&p.storm.logins).0),
            mean(&self.pairs, |p| rate_p99(&p.control.logins).0),
        )
    }

    /// Logins/s beside the storm over logins/s beside the control, over every pair;
    /// `None` when the control made no logins.
    pub fn retention(&self) -> Option<f64> {
        let (storm, control) = self.login_rates();
        (control > 0.0).then(|| storm / control)
    }

    /// Each pair's retention, in the order they ran (0 where its control made none).
    pub fn retention_by_pair(&self) -> Vec<f64> {
        self.pairs
            .iter()
            .map(|p| {
                let c = rate_p99(&p.control.logins).0;
                if c > 0.0 {
                    rate_p99(&p.storm.logins).0 / c
                } else {
                    0.0
                }
            })
            .collect()
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
        (Some(radius), Some(acct)) => {
            let label = srv.label();
            let target = Target {
                label: &label,
                radius,
                acct,
                secret: &secret,
            };
            measure(&target, d).await
        }
        _ => Err(LabError::Target(format!(
            "{} did not start RADIUS authentication and accounting",
            srv.label()
        ))),
    };
    (started.stop)().await;
    found
}

/// The server under measurement.
struct Target<'a> {
    label: &'a str,
    radius: &'a str,
    acct: &'a Accounting,
    secret: &'a [u8],
}

/// A run of `s` alone, labelled `label: what`.
async fn run_alone(s: Scenario, label: &str, what: &str) -> Result<ScenarioResult, LabError> {
    let opts = RunOptions {
        allow_targets: Vec::new(),
        progress: false,
        label: format!("{label}: {what}"),
        position: None,
    };
    run_scenario(&s, &opts).await
}

/// Logins beside the storm sent to the server.
async fn beside_storm(t: &Target<'_>, offered: f64, d: &Durations) -> Result<Beside, LabError> {
    let storm = accounting(
        "acct-storm",
        &t.acct.url,
        t.secret,
        d.logins,
        d.timeout,
        Some(offered),
    )?;
    let pap = logins(
        "pap-logins-beside-storm",
        t.radius,
        t.secret,
        d.logins,
        d.timeout,
    )?;
    beside(&pap, &storm, t.label).await
}

/// Logins beside the control: the same storm sent to a stub that answers, second by
/// second, `acks` records (a storm's acknowledgements beside the server), dropping the
/// rest, so the generator works as it did beside the server.
async fn beside_control(
    t: &Target<'_>,
    offered: f64,
    acks: Vec<u64>,
    d: &Durations,
) -> Result<Beside, LabError> {
    let stub = crate::acct_stub::AckStub::start(t.secret, acks).await?;
    let storm = accounting(
        "acct-storm-to-stub",
        &stub.url(),
        t.secret,
        d.logins,
        d.timeout,
        Some(offered),
    )?;
    let pap = logins(
        "pap-logins-beside-control",
        t.radius,
        t.secret,
        d.logins,
        d.timeout,
    )?;
    let label = format!("{}, control (storm to a stub)", t.label);
    let control = beside(&pap, &storm, &label).await;
    stub.stop();
    control
}

async fn measure(t: &Target<'_>, d: &Durations) -> Result<Findings, LabError> {
    let alone = logins("pap-logins-alone", t.radius, t.secret, d.alone, d.timeout)?;
    let alone = run_alone(alone, t.label, "logins alone").await?;
    let before = (t.acct.stored)().await?;
    let sat = accounting(
        "acct-saturation",
        &t.acct.url,
        t.secret,
        d.saturation,
        d.timeout,
        None,
    )?;
    let saturation = run_alone(sat, t.label, "accounting saturation").await?;
    let after_saturation = (t.acct.stored)().await?;
    let durable = rate_p99(&saturation).0;
    let offered = (2.0 * durable).clamp(100.0, MAX_STORM_RATE);
    let mut pairs = Vec::new();
    // Storm, control, then control, storm: the controls replay the first storm's
    // acknowledgements.
    let first = beside_storm(t, offered, d).await?;
    let acks = acks_per_second(&first.storm);
    let control = beside_control(t, offered, acks.clone(), d).await?;
    pairs.push(Pair {
        storm: first,
        control,
    });
    for _ in 1..d.pairs {
        let control = beside_control(t, offered, acks.clone(), d).await?;
        let storm = beside_storm(t, offered, d).await?;
        pairs.push(Pair { storm, control });
    }
    let after_storms = (t.acct.stored)().await?;
    Ok(Findings {
        alone,
        saturation,
        pairs,
        offered,
        stored: (
            after_saturation.saturating_sub(before),
            after_storms.saturating_sub(after_saturation),
        ),
    })
}

#[cfg(test)]
mod tests;
