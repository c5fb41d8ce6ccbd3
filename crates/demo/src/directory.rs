//! The demo's "a slow directory behind the door" section (issue 40, background report 000).
//!
//! The users live in an OpenLDAP slapd (Debian's, built as `scripts/slapd` builds it: users
//! `user<n>` with password `password<n>`, a read-only service account, optionally ppolicy),
//! reached only through the lab's delaying relay ([`portcullis_lab::relay`]), which holds
//! every failed bind's answer (report 000's back office held its answer 5 s). Each server
//! that checks passwords against a directory ([`DemoServer::speaks_directory`]: Portcullis
//! through its upstream directory, FreeRADIUS through `rlm_ldap`) gets a fresh directory
//! and relay, runs the scenario's honest groups alone, then the whole scenario with its
//! guessing stations; after that the section reads the server's worker pool (when it has
//! one to read) and, with a `victim`, whether that user is now locked in slapd: a bind of
//! its right password straight to slapd, past relay and server, as `ldapwhoami` would.
//! Scenarios: those of the built-ins with `[demo.directory]`.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::{DemoServer, DirectorySetup, Setup};
pub use crate::slapd::{Slapd, find_slapd};
use portcullis_lab::LabError;
use portcullis_lab::outcome::Outcome;
use portcullis_lab::relay::{Relay, RelayConfig, RelayCounts, simple_bind};
use portcullis_lab::report::{Section, Table};
use portcullis_lab::runner::{RunOptions, ScenarioResult, run_scenario};
use portcullis_lab::scenario::directory::PASSWORD_PREFIX;
use portcullis_lab::scenario::{DirectorySpec, DriverSpec, Scenario};

/// The section's title in the report.
pub const TITLE: &str = "A slow directory behind the door";

fn err(msg: impl std::fmt::Display) -> LabError {
    LabError::Target(format!("directory: {msg}"))
}

/// What a server is told about the directory behind `relay`.
fn setup(slapd: &Slapd, relay: &Relay, spec: &DirectorySpec) -> Result<DirectorySetup, LabError> {
    let base = slapd.get("base")?.to_owned();
    Ok(DirectorySetup {
        addr: relay.addr(),
        people: format!("ou=people,{base}"),
        user_dn_template: format!("uid={{user}},ou=people,{base}"),
        service_dn: slapd.get("service_dn")?.to_owned(),
        service_password: slapd.get("service_password")?.to_owned(),
        answer_timeout: super::freeradius_ldap::answer_timeout(spec.failed_bind_delay),
        lockout_threshold: spec.ppolicy_max_failure,
        base,
    })
}

/// What one server did in one directory scenario.
#[derive(Debug, Clone, Serialize)]
pub struct DirectoryRun {
    /// The server's label.
    pub server: String,
    /// The scenario's name.
    pub scenario: String,
    /// Successes/s of the groups expected to succeed, alone (without the guessers).
    pub alone_per_s: Option<f64>,
    /// The same beside the guessers.
    pub attacked_per_s: f64,
    /// attacked / alone.
    pub retention: Option<f64>,
    /// Timeouts / completed of the groups expected to succeed, beside the guessers.
    pub honest_timeout_rate: f64,
    /// Their 99th percentile latency (ms), beside the guessers.
    pub honest_p99_ms: f64,
    /// Their successes and refusals beside the guessers.
    pub honest_successes: u64,
    /// See `honest_successes`.
    pub honest_refusals: u64,
    /// The relay's counters over the run with guessers.
    pub relay: RelayCounts,
    /// The server's worker pool over the run with guessers, when it has one to read.
    pub pool: Option<PoolFigures>,
    /// Whether the victim is locked in the directory after the run (`None`: no victim).
    pub victim_locked: Option<bool>,
}

/// The section's runs: (the sections of results, the figures per server and scenario).
pub struct DirectorySection {
    /// One section per scenario and run kind (alone, attacked).
    pub sections: Vec<Section>,
    /// One row per server and scenario.
    pub runs: Vec<DirectoryRun>,
}

/// Runs every directory scenario in `scns` against every server that speaks to a
/// directory, each with its own slapd and relay.
pub async fn run(
    servers: &[&dyn DemoServer],
    scns: &[Scenario],
    script: &Path,
    progress: bool,
) -> Result<DirectorySection, LabError> {
    let mut sections = Vec::new();
    let mut runs = Vec::new();
    for scn in scns {
        let Some(spec) = scn.demo.directory.clone() else {
            continue;
        };
        let mut alone = Vec::new();
        let mut attacked = Vec::new();
        let radius = matches!(scn.driver, DriverSpec::Radius(_));
        for srv in servers
            .iter()
            .filter(|s| s.speaks_directory() && (radius || !s.radius_only()))
        {
            if progress {
                eprintln!(
                    "{}: {} (a directory behind the relay)...",
                    srv.label(),
                    scn.raw.name
                );
            }
            let (a, b, figures) = one(*srv, scn, &spec, script, progress).await?;
            alone.extend(a);
            attacked.push(b);
            runs.push(figures);
        }
        if !alone.is_empty() {
            sections.push(Section {
                scenario: format!("{} (no attackers)", scn.raw.name),
                description: scn.raw.description.clone(),
                results: alone,
            });
        }
        if !attacked.is_empty() {
            sections.push(Section {
                scenario: scn.raw.name.clone(),
                description: scn.raw.description.clone(),
                results: attacked,
            });
        }
    }
    Ok(DirectorySection { sections, runs })
}

/// One server in one scenario: its own slapd and relay, its runs, its figures.
async fn one(
    srv: &dyn DemoServer,
    scn: &Scenario,
    spec: &DirectorySpec,
    script: &Path,
    progress: bool,
) -> Result<(Option<ScenarioResult>, ScenarioResult, DirectoryRun), LabError> {
    let tag = format!("{}-{}", srv.label(), scn.raw.name);
    let slapd = {
        let (script, spec) = (script.to_path_buf(), spec.clone());
        tokio::task::spawn_blocking(move || Slapd::start(&script, &spec, &tag))
            .await
            .map_err(err)??
    };
    let outcome = with_directory(srv, scn, spec, &slapd, progress).await;
    tokio::task::spawn_blocking(move || slapd.stop())
        .await
        .map_err(err)?;
    outcome
}

async fn with_directory(
    srv: &dyn DemoServer,
    scn: &Scenario,
    spec: &DirectorySpec,
    slapd: &Slapd,
    progress: bool,
) -> Result<(Option<ScenarioResult>, ScenarioResult, DirectoryRun), LabError> {
    let config = RelayConfig {
        upstream: slapd.addr()?,
        failed_bind_delay: spec.failed_bind_delay,
    };
    let relay = Relay::start(SocketAddr::from(([127, 0, 0, 1], 0)), config)
        .await
        .map_err(err)?;
    let radius_secret = match &scn.driver {
        DriverSpec::Radius(r) => Some(r.secret.clone()),
        _ => None,
    };
    // The password grant's application client; the users are the directory's.
    let clients = match &scn.driver {
        DriverSpec::OAuth2 {
            app_client: Some(app),
            ..
        } => vec![app.clone()],
        _ => Vec::new(),
    };
    let setup = Setup {
        reject_delay: scn.demo.reject_delay.unwrap_or(Duration::from_secs(1)),
        clients,
        iterations: 1000,
        radius_secret,
        tls: None,
        generated_secrets: false,
        eap: None,
        accounting: false,
        directory: Some(setup(slapd, &relay, spec)?),
    };
    let started = srv.start(setup).await?;
    let runs = async {
        let target = started
            .radius
            .clone()
            .unwrap_or_else(|| started.url.clone());
        let mut s = scn.clone().with_target_url(&target)?;
        if started.replies_lack_message_authenticator
            && let DriverSpec::Radius(r) = &mut s.driver
        {
            r.require_message_authenticator = false;
            s.raw.driver.require_message_authenticator = Some(false);
        }
        s.target.metrics = None;
        s.raw.target.metrics = "off".into();
        let opts = RunOptions {
            allow_targets: Vec::new(),
            progress,
            label: srv.label(),
            position: None,
        };
        let alone = match s.legitimate_only().filter(|_| spec.compare_alone) {
            Some(a) => Some(run_scenario(&a, &opts).await?),
            None => None,
        };
        let before = relay.counts();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let sampler = started
            .pool_state
            .clone()
            .map(|probe| tokio::spawn(sample_pool(probe, stopped)));
        let attacked = run_scenario(&s, &opts).await;
        let _ = stop.send(true);
        let pool = match sampler {
            Some(t) => t.await.ok(),
            None => None,
        };
        Ok::<_, LabError>((alone, attacked?, delta(before, relay.counts()), pool))
    }
    .await;
    (started.stop)().await;
    relay.shutdown();
    let (alone, attacked, relay_counts, pool) = runs?;
    let victim_locked = match spec.victim {
        Some(n) => {
            let dn = slapd.user_dn(n)?;
            let password = format!("{PASSWORD_PREFIX}{n}");
            let code = simple_bind(slapd.addr()?, &dn, &password, Duration::from_secs(10))
                .await
                .map_err(err)?;
            Some(code != 0)
        }
        None => None,
    };
    let figures = figures(
        srv.label(),
        scn,
        alone.as_ref(),
        &attacked,
        relay_counts,
        pool,
        victim_locked,
    );
    Ok((alone, attacked, figures))
}

/// A worker pool over a run, from readings every half second.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PoolFigures {
    /// Most requests waiting for a worker at one reading.
    pub most_queued: u64,
    /// Most threads of the process at one reading.
    pub most_threads: u64,
    /// Requests it dropped by the last reading (since it started).
    pub dropped: u64,
    /// Readings made, and those that got no answer (a pool too busy to answer its own
    /// status server says as much).
    pub readings: u32,
    /// See `readings`.
    pub unanswered: u32,
}

/// Reads the pool every 500 ms until `stopped` changes.
async fn sample_pool(
    probe: super::PoolProbe,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> PoolFigures {
    let mut f = PoolFigures::default();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = stopped.changed() => return f,
            _ = tick.tick() => {}
        }
        let probe = probe.clone();
        f.readings += 1;
        match tokio::task::spawn_blocking(move || probe()).await {
            Ok(Ok(s)) => {
                f.most_queued = f.most_queued.max(s.queued);
                f.most_threads = f.most_threads.max(s.threads);
                f.dropped = s.dropped;
            }
            _ => f.unanswered += 1,
        }
    }
}

fn delta(before: RelayCounts, after: RelayCounts) -> RelayCounts {
    RelayCounts {
        connections: after.connections - before.connections,
        binds_succeeded: after.binds_succeeded - before.binds_succeeded,
        binds_failed: after.binds_failed - before.binds_failed,
        held_now: after.held_now,
        held_max: after.held_max,
        undecoded: after.undecoded - before.undecoded,
    }
}

fn figures(
    server: String,
    scn: &Scenario,
    alone: Option<&ScenarioResult>,
    attacked: &ScenarioResult,
    relay: RelayCounts,
    pool: Option<PoolFigures>,
    victim_locked: Option<bool>,
) -> DirectoryRun {
    let legit = |r: &ScenarioResult| r.repeats.first().and_then(|x| x.legitimate.clone());
    let alone_per_s = alone.and_then(legit).map(|l| l.throughput);
    let under = legit(attacked);
    let attacked_per_s = under.as_ref().map_or(0.0, |l| l.throughput);
    let count = |o: Outcome| {
        under
            .as_ref()
            .and_then(|l| l.outcomes.get(&o).copied())
            .unwrap_or(0)
    };
    DirectoryRun {
        server,
        scenario: scn.raw.name.clone(),
        retention: alone_per_s.filter(|a| *a > 0.0).map(|a| attacked_per_s / a),
        alone_per_s,
        attacked_per_s,
        honest_timeout_rate: under.as_ref().map_or(0.0, |l| l.timeout_rate),
        honest_p99_ms: under.as_ref().map_or(0.0, |l| l.p99_ms),
        honest_successes: count(Outcome::Success),
        honest_refusals: count(Outcome::AuthFailure),
        relay,
        pool,
        victim_locked,
    }
}

/// Retention the issue asks for: honest logins/s beside the guessers over without.
pub const RETENTION_GOAL: f64 = 0.95;

/// One row's verdict against issue 40's bar: honest users keep at least
/// [`RETENTION_GOAL`] of their logins; the victim is not locked and its owner logs in.
pub fn verdict(r: &DirectoryRun) -> String {
    let mut parts = Vec::new();
    if let Some(k) = r.retention {
        parts.push(if k >= RETENTION_GOAL {
            format!("PASS: honest users kept {:.0}% of their logins", k * 100.0)
        } else {
            format!(
                "FAIL: honest users kept {:.0}% of their logins (goal {:.0}%)",
                k * 100.0,
                RETENTION_GOAL * 100.0
            )
        });
    }
    match r.victim_locked {
        Some(false) if r.honest_successes > 0 => {
            parts.push("PASS: victim not locked, its owner logged in".into());
        }
        Some(false) => parts.push("FAIL: victim not locked but its owner never logged in".into()),
        Some(true) => parts.push("FAIL: the guesses locked the victim in the directory".into()),
        None => {}
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join("; ")
    }
}

/// The section's table: one row per server and scenario.
pub fn table(runs: &[DirectoryRun]) -> Option<Table> {
    if runs.is_empty() {
        return None;
    }
    let rows = runs
        .iter()
        .map(|r| {
            let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or("-".into(), f);
            vec![
                r.scenario.clone(),
                r.server.clone(),
                opt(r.alone_per_s, |v| format!("{v:.1}")),
                format!("{:.1}", r.attacked_per_s),
                opt(r.retention, |v| format!("{v:.2}")),
                format!("{:.0}", r.honest_p99_ms),
                format!("{:.1}%", r.honest_timeout_rate * 100.0),
                format!("{} / {}", r.honest_successes, r.honest_refusals),
                format!("{} ({} at once)", r.relay.binds_failed, r.relay.held_max),
                r.pool.map_or("-".into(), |p| {
                    format!(
                        "{} threads, up to {} requests queued, {} dropped{}",
                        p.most_threads,
                        p.most_queued,
                        p.dropped,
                        if p.unanswered > 0 {
                            format!(
                                ", {} of {} status queries unanswered",
                                p.unanswered, p.readings
                            )
                        } else {
                            String::new()
                        }
                    )
                }),
                match r.victim_locked {
                    Some(true) => "LOCKED".into(),
                    Some(false) => "not locked".into(),
                    None => "-".into(),
                },
                verdict(r),
            ]
        })
        .collect();
    Some(Table {
        title: TITLE.into(),
        columns: [
            "scenario",
            "server",
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
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Verdicts against issue 40's bar: retention of at least 0.95, the victim not locked. The users live in OpenLDAP slapd (Debian's, as scripts/slapd builds it) behind the lab's relay, which answers every failed bind late (report 000's back office); each server is given a fresh slapd and relay and checks passwords there: Portcullis through its upstream directory, FreeRADIUS through rlm_ldap (search with a service account, then a bind as the user). Retention is honest logins/s with the guessers over without. The victim's lock state is a bind of its right password straight to slapd after the run.".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(retention: Option<f64>, locked: Option<bool>, successes: u64) -> DirectoryRun {
        DirectoryRun {
            server: "s".into(),
            scenario: "x".into(),
            alone_per_s: retention.map(|_| 10.0),
            attacked_per_s: retention.map_or(1.0, |k| 10.0 * k),
            retention,
            honest_timeout_rate: 0.0,
            honest_p99_ms: 1.0,
            honest_successes: successes,
            honest_refusals: 0,
            relay: RelayCounts::default(),
            pool: None,
            victim_locked: locked,
        }
    }

    #[test]
    fn verdicts_hold_each_row_to_the_issues_bar() {
        assert!(verdict(&run(Some(0.96), None, 5)).starts_with("PASS"));
        assert!(verdict(&run(Some(0.94), None, 5)).starts_with("FAIL"));
        assert!(verdict(&run(None, Some(false), 3)).starts_with("PASS"));
        assert!(verdict(&run(None, Some(false), 0)).starts_with("FAIL"));
        assert!(verdict(&run(None, Some(true), 3)).starts_with("FAIL"));
        assert_eq!(verdict(&run(None, None, 3)), "-");
        let t = table(&[run(Some(0.5), None, 1)]).unwrap();
        assert_eq!(t.rows[0].len(), t.columns.len());
    }
}
