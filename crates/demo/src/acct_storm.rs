//! The demo's "Accounting storm beside logins" section (issue 28): does a flood of
//! accounting records cost honest users their logins, and does the server acknowledge
//! only what it stored?
//!
//! Against one server that serves RADIUS authentication and accounting
//! ([`DemoServer::speaks_accounting`]) it runs, in turn: PAP logins alone (a closed loop,
//! its logins/s the baseline); an accounting saturation run (closed loop, so its
//! acknowledged records/s is the durable rate this server sustains on this machine now);
//! then the same PAP logins and an accounting storm offered at twice that rate, as two
//! lab runs started together on the demo's runtime, each with its own driver and
//! sockets. Every accounting record the lab sends is distinct (its own session and
//! status), so after each accounting run the records the server stored must be at least
//! the ones it acknowledged; the section counts them through [`Accounting::stored`],
//! which reads the server's store, not the lab's tallies.

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

/// How long each run lasts.
#[derive(Debug, Clone, Copy)]
pub struct Durations {
    /// Each login run, alone and beside the storm (the storm lasts as long).
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
                logins: Duration::from_secs(4),
                saturation: Duration::from_secs(3),
                timeout: Duration::from_secs(4),
            }
        } else {
            Durations {
                logins: Duration::from_secs(15),
                saturation: Duration::from_secs(8),
                timeout: Duration::from_secs(10),
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

/// What the section found against one server.
#[derive(Debug, Clone)]
pub struct Findings {
    /// Logins alone.
    pub alone: ScenarioResult,
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
    let beside = beside(&pap, &storm, label).await?;
    let after_storm = (acct.stored)().await?;
    Ok(Findings {
        alone,
        saturation,
        beside,
        offered,
        stored: (
            after_saturation.saturating_sub(before),
            after_storm.saturating_sub(after_saturation),
        ),
    })
}

/// The report's section (the four runs) and table (one row per server).
pub fn report(found: &[(String, Findings)]) -> (Section, Table) {
    let results = found
        .iter()
        .flat_map(|(_, f)| {
            [
                f.alone.clone(),
                f.saturation.clone(),
                f.beside.logins.clone(),
                f.beside.storm.clone(),
            ]
        })
        .collect();
    let rows = found
        .iter()
        .map(|(server, f)| {
            let (alone, alone_p99) = rate_p99(&f.alone);
            let (with, with_p99) = rate_p99(&f.beside.logins);
            let (sat, _) = rate_p99(&f.saturation);
            let (acked, acked_p99) = rate_p99(&f.beside.storm);
            let retention = if alone > 0.0 {
                format!("{:.2}", with / alone)
            } else {
                "-".into()
            };
            let (_, storm_acks) = f.acknowledged();
            vec![
                server.clone(),
                format!("{alone:.1}"),
                format!("{with:.1}"),
                retention,
                format!("{alone_p99:.0} / {with_p99:.0}"),
                format!("{sat:.0}"),
                format!("{:.0}", f.offered),
                format!("{acked:.0}"),
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
        description: "Accounting storm beside logins: PAP logins alone, the accounting door's durable rate (closed-loop saturation), then the same logins while an accounting storm at twice that rate hits the same server's accounting listener".into(),
        results,
    };
    let table = Table {
        title: "Accounting storm beside logins".into(),
        columns: [
            "server",
            "logins/s alone",
            "logins/s beside the storm",
            "retention (goal >= 0.95)",
            "login p99 ms alone / beside",
            "durable records/s (saturation)",
            "storm offered records/s",
            "storm acknowledged records/s",
            "storm ack p99 ms",
            "storm acknowledged / stored",
            "every acknowledged record stored",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Section {SECTION}: {LOGIN_USERS} NAS users log in with PAP in a closed loop without pause, alone; then 128 devices send accounting records without pause (Start, Interim-Update, Stop in turn), whose acknowledged records/s is the durable rate the server sustains here; then the same logins run again while, at the same time, 250 devices (each its own loopback NAS address) offer accounting records at twice that rate (capped at {MAX_STORM_RATE:.0}/s), open loop, retransmitting like NASes (after 1 s, twice). Two lab runs started together, each with its own driver. Retention is logins/s beside the storm over logins/s alone. Every record is distinct, so the records the server's store gained during a run must be at least those it acknowledged (counted in the store after each run; more stored than acknowledged is an answer that came after the lab's timeout or was lost). The lab shares the machine's cores with the server."
        ),
    };
    (section, table)
}

#[cfg(test)]
mod tests {
    use super::*;

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
