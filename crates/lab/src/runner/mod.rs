//! Executing a scenario: virtual clients per group, the once-a-second ticker (outstanding
//! samples, `/metrics` scrape, progress line), caps, repeats and thresholds.
//!
//! Closed-loop clients each own one session and measure from their actual send time (the
//! closed-loop model cannot avoid coordinated omission; that is why open loop exists).
//! Open-loop groups dispatch at precomputed intended times ([`crate::schedule`]) and
//! measure from those, including time spent waiting for a free slot or connection; the
//! per-request timeout also counts from the intended time.
//!
//! Thread model: closed-loop clients run on one single-threaded runtime per core (dealt
//! round-robin, like wrk's threads), so a client's whole request/answer cycle stays on one
//! thread; open-loop dispatchers, the ticker and the scrapes run on the caller's runtime.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hyper::header::HeaderValue;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::LabError;
use crate::conn;
use crate::driver::{AttemptResult, Driver, HttpGetDriver, Identity, OAuth2Driver, Transport};
use crate::jwt::Jwks;
use crate::record::{self, GroupRecorder, GroupResult, Outcome, RunClock};
use crate::safety;
use crate::scenario::{
    Credentials, DriverSpec, GroupSpec, JwksSource, Metric, Model, Scenario, Threshold,
};
use crate::schedule::{self, Arrivals, RateCurve};
use crate::scrape::{self, ServerSecond, Snapshot};

mod clients;
use clients::{ClosedVu, OpenGroup, run_closed_shard};

/// How a run is carried out (not part of the scenario).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Non-loopback hosts the person explicitly allowed.
    pub allow_targets: Vec<String>,
    /// Show progress on stderr: on a terminal a live line (scenario i of n, target,
    /// elapsed and left, per group successes, errors, rate and requests in flight),
    /// updated every second; otherwise one plain line per finished run.
    pub progress: bool,
    /// Label of the target in reports ("portcullis", "baseline", or the URL).
    pub label: String,
    /// This run's place in a longer job (`portcullis demo`): scenario i of n, from 1.
    pub position: Option<(usize, usize)>,
}

/// One repeat's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepeatResult {
    /// 0-based repeat number.
    pub repeat: u32,
    /// Wall-clock start, Unix seconds.
    pub started_unix: i64,
    /// Planned length (s).
    pub duration_s: f64,
    /// Requests started.
    pub requests: u64,
    /// Whether the request cap stopped the run early.
    pub capped: bool,
    /// Per group.
    pub groups: Vec<GroupResult>,
    /// All groups expecting success, merged (None if there are none).
    pub legitimate: Option<GroupResult>,
    /// Server metrics per second (empty if not scraped).
    pub server: Vec<ServerSecond>,
    /// Tokens for the wrong client, all groups.
    pub misdelivered: u64,
    /// Successes with wrong credentials, all groups.
    pub breaches: u64,
}

/// One threshold's verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// Human description, e.g. `legitimate p99_ms <= 200`.
    pub rule: String,
    /// Observed value per repeat.
    pub values: Vec<f64>,
    /// Whether every repeat met it.
    pub passed: bool,
}

/// A whole scenario's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioResult {
    /// Scenario name.
    pub scenario: String,
    /// Its description.
    pub description: String,
    /// Target label.
    pub target: String,
    /// Driver summary, e.g. `oauth2 client_credentials client_secret_basic`.
    pub driver: String,
    /// The scenario as run (TOML).
    pub scenario_toml: String,
    /// Seed.
    pub seed: u64,
    /// Repeats.
    pub repeats: Vec<RepeatResult>,
    /// Threshold verdicts.
    pub thresholds: Vec<ThresholdResult>,
    /// Reasons the run failed (empty: passed).
    pub failures: Vec<String>,
    /// Whether the run passed.
    pub passed: bool,
}

/// Run every repeat of `scn` and judge the thresholds.
pub async fn run_scenario(scn: &Scenario, opts: &RunOptions) -> Result<ScenarioResult, LabError> {
    let addr = safety::check_target(&scn.target.host, scn.target.port, &opts.allow_targets)?;
    for g in &scn.groups {
        safety::check_sources(&g.sources, addr)?;
    }
    if scn.planned_open_requests() > scn.run.max_requests as f64 * 10.0 {
        return Err(LabError::Scenario(format!(
            "open-loop groups plan {:.0} requests per repeat, far above run.max_requests = {}",
            scn.planned_open_requests(),
            scn.run.max_requests
        )));
    }
    let mut repeats = Vec::new();
    for r in 0..scn.run.repeats {
        repeats.push(run_once(scn, addr, r, opts).await?);
    }
    let thresholds: Vec<ThresholdResult> =
        scn.thresholds.iter().map(|t| judge(t, &repeats)).collect();
    let mut failures: Vec<String> = thresholds
        .iter()
        .filter(|t| !t.passed)
        .map(|t| format!("threshold {} not met (observed {:?})", t.rule, t.values))
        .collect();
    let mis: u64 = repeats.iter().map(|r| r.misdelivered).sum();
    if mis > 0 {
        failures.push(format!("{mis} token(s) delivered to the wrong client"));
    }
    let wrong_keys: u64 = repeats
        .iter()
        .flat_map(|r| &r.groups)
        .filter_map(|g| g.eap.as_ref())
        .map(|e| e.wrong_keys)
        .sum();
    if wrong_keys > 0 {
        failures.push(format!(
            "{wrong_keys} Access-Accept(s) carried MS-MPPE keys other than the station's own"
        ));
    }
    failures.extend(lockouts(&repeats));
    let br: u64 = repeats.iter().map(|r| r.breaches).sum();
    if br > 0 {
        failures.push(format!("{br} token(s) issued for wrong credentials"));
    }
    let toml_text = toml::to_string(&scn.raw).unwrap_or_default();
    Ok(ScenarioResult {
        scenario: scn.raw.name.clone(),
        description: scn.raw.description.clone(),
        target: if opts.label.is_empty() {
            scn.raw.target.url.clone()
        } else {
            opts.label.clone()
        },
        driver: match &scn.target.tls {
            Some(t) if matches!(scn.driver, DriverSpec::Ldap(_)) => {
                format!("{} (TLS {})", driver_summary(scn), t.versions)
            }
            Some(t) => format!(
                "{} over https (TLS {}{})",
                driver_summary(scn),
                t.versions,
                if t.client_cert {
                    ", client certificate"
                } else {
                    ""
                }
            ),
            None => driver_summary(scn),
        },
        scenario_toml: toml_text,
        seed: scn.run.seed,
        passed: failures.is_empty(),
        repeats,
        thresholds,
        failures,
    })
}

/// The honest users an LDAP run locked out, one failure per group and repeat: the failure
/// this project exists to prevent (a guessing wave denying the real user).
fn lockouts(repeats: &[RepeatResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in repeats {
        for g in &r.groups {
            let Some(l) = &g.ldap else { continue };
            if !l.locked_out.is_empty() {
                out.push(format!(
                    "repeat {}: {} honest user(s) of group {:?} locked out (their right password \
                     refused with invalidCredentials after it had been accepted): {}",
                    r.repeat + 1,
                    l.locked_out.len(),
                    g.name,
                    l.locked_out.join(", ")
                ));
            }
        }
    }
    out
}

fn driver_summary(scn: &Scenario) -> String {
    match &scn.driver {
        DriverSpec::OAuth2 { grant, auth, .. } => format!(
            "oauth2 {} {}",
            serde_json::to_value(grant)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            serde_json::to_value(auth)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        ),
        DriverSpec::HttpGet { path } => format!("http-get {path}"),
        DriverSpec::Radius(_) if scn.uses_eap() => {
            let mut kinds: Vec<&str> = Vec::new();
            for g in &scn.groups {
                let k = match &g.eap {
                    None => "pap",
                    Some(e) if e.method == crate::scenario::EapMethod::Tls => "eap-tls",
                    Some(_) => "eap-ttls/pap",
                };
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            format!("radius {}", kinds.join(", "))
        }
        DriverSpec::Radius(spec) if spec.accounting => "radius accounting".to_string(),
        DriverSpec::Radius(_) => "radius pap".to_string(),
        DriverSpec::Ldap(spec) => spec.summary(),
    }
}

/// The value a threshold looks at in one repeat (None: the group had no data).
pub fn metric_value(t: &Threshold, r: &RepeatResult) -> Option<f64> {
    let g = match &t.group {
        Some(name) => r.groups.iter().find(|g| &g.name == name)?,
        None => r.legitimate.as_ref()?,
    };
    Some(match t.metric {
        Metric::SuccessRate => g.success_rate,
        Metric::P50Ms => g.p50_ms,
        Metric::P90Ms => g.p90_ms,
        Metric::P99Ms => g.p99_ms,
        Metric::P999Ms => g.p999_ms,
        Metric::MaxMs => g.max_ms,
        Metric::Throughput => g.throughput,
        Metric::TimeoutRate => g.timeout_rate,
    })
}

/// Judge one threshold over all repeats.
pub fn judge(t: &Threshold, repeats: &[RepeatResult]) -> ThresholdResult {
    let metric = serde_json::to_value(t.metric)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let mut rule = format!("{} {metric}", t.group.as_deref().unwrap_or("legitimate"));
    if let Some(m) = t.min {
        rule.push_str(&format!(" >= {m}"));
    }
    if let Some(m) = t.max {
        rule.push_str(&format!(" <= {m}"));
    }
    let mut values = Vec::new();
    let mut passed = !repeats.is_empty();
    for r in repeats {
        match metric_value(t, r) {
            Some(v) => {
                values.push(v);
                if t.min.is_some_and(|m| v < m) || t.max.is_some_and(|m| v > m) {
                    passed = false;
                }
            }
            None => passed = false,
        }
    }
    ThresholdResult {
        rule,
        values,
        passed,
    }
}

async fn fetch_jwks(scn: &Scenario, addr: SocketAddr, host: &str) -> Result<Jwks, LabError> {
    let t = Duration::from_secs(5);
    let tls = target_tls(scn);
    let tls = tls.as_ref();
    let path = match &scn.target.jwks {
        JwksSource::Path(p) => p.clone(),
        JwksSource::Discover => {
            match conn::get(
                addr,
                host,
                "/.well-known/oauth-authorization-server",
                t,
                tls,
            )
            .await
            {
                Ok((200, body)) => serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("jwks_uri").and_then(|u| u.as_str()).map(url_path))
                    .unwrap_or_else(|| "/oauth2/jwks".into()),
                _ => "/oauth2/jwks".into(),
            }
        }
    };
    let (status, body) = conn::get(addr, host, &path, t, tls).await?;
    if status != 200 {
        return Err(LabError::Target(format!(
            "JWKS at {path} answered {status}"
        )));
    }
    Jwks::parse(&body)
}

/// A one-off TLS client for the target's own endpoints (JWKS, discovery, metrics).
fn target_tls(scn: &Scenario) -> Option<crate::tls::Tls> {
    scn.target
        .tls
        .as_ref()
        .map(|t| t.for_client(crate::scenario::ConnectionMode::PerRequest))
}

/// The path of an absolute URL (the lab fetches it from the target it was allowed to load).
fn url_path(u: &str) -> String {
    let rest = u
        .strip_prefix("http://")
        .or_else(|| u.strip_prefix("https://"))
        .unwrap_or(u);
    match rest.find('/') {
        Some(i) if u != rest => rest[i..].to_string(),
        _ if rest.starts_with('/') => rest.to_string(),
        _ => "/oauth2/jwks".into(),
    }
}

async fn run_once(
    scn: &Scenario,
    addr: SocketAddr,
    repeat: u32,
    opts: &RunOptions,
) -> Result<RepeatResult, LabError> {
    let host_str = format!("{}:{}", scn.target.host, scn.target.port);
    let host = HeaderValue::from_str(&host_str)
        .map_err(|_| LabError::Scenario("bad target host".into()))?;
    let transport = Transport { addr, host };
    let uri = |p: &str| {
        p.parse::<hyper::Uri>()
            .map_err(|e| LabError::Scenario(format!("bad path {p:?}: {e}")))
    };
    match &scn.driver {
        DriverSpec::OAuth2 {
            grant,
            auth,
            scope,
            app_client,
            assertion,
        } => {
            let token_url = format!("{}{}", scn.target.base_url(), scn.target.token_path);
            let assertion = assertion
                .as_ref()
                .map(|a| crate::assertion::Signer::load(a, &token_url).map(Arc::new))
                .transpose()?;
            let jwks = fetch_jwks(scn, addr, &host_str).await?;
            let d = OAuth2Driver {
                transport,
                token_path: uri(&scn.target.token_path)?,
                grant: *grant,
                auth: *auth,
                scope: scope.clone(),
                app_client: app_client.clone(),
                jwks: Arc::new(jwks),
                issuer: scn.target.issuer.clone(),
                assertion,
            };
            drive(scn, Arc::new(d), addr, repeat, opts).await
        }
        DriverSpec::HttpGet { path } => {
            let d = HttpGetDriver {
                transport,
                path: uri(path)?,
            };
            drive(scn, Arc::new(d), addr, repeat, opts).await
        }
        DriverSpec::Radius(spec) if scn.uses_eap() => {
            let d = crate::eap::EapDriver::new(addr, spec.clone()).with_seed(scn.run.seed);
            drive(scn, Arc::new(d), addr, repeat, opts).await
        }
        DriverSpec::Radius(spec) if spec.accounting => {
            let d = crate::radius_acct::AcctDriver::new(addr, spec.clone());
            drive(scn, Arc::new(d), addr, repeat, opts).await
        }
        DriverSpec::Radius(spec) => {
            let d = crate::radius::RadiusDriver::new(addr, spec.clone()).with_seed(scn.run.seed);
            drive(scn, Arc::new(d), addr, repeat, opts).await
        }
        DriverSpec::Ldap(spec) => {
            let d = crate::ldap::LdapDriver::new(addr, spec.clone())?;
            drive(scn, Arc::new(d), addr, repeat, opts).await
        }
    }
}

/// The identities of a group's clients.
pub fn identities(scn: &Scenario, gi: usize, g: &GroupSpec) -> Result<Vec<Identity>, LabError> {
    let token_url = format!("{}{}", scn.target.base_url(), scn.target.token_path);
    let auth = match &g.auth {
        None => None,
        Some((a, spec)) => Some(crate::driver::GroupAuth {
            auth: *a,
            signer: spec
                .as_ref()
                .map(|s| crate::assertion::Signer::load(s, &token_url).map(Arc::new))
                .transpose()?,
        }),
    };
    let eap = match &g.eap {
        None => None,
        Some(e) => Some((
            e,
            e.tls.as_ref().ok_or_else(|| {
                LabError::Scenario(format!(
                    "group {:?}: eap needs ca (and for EAP-TLS cert and key)",
                    g.name
                ))
            })?,
        )),
    };
    Ok((0..g.size)
        .map(|i| {
            let (id, secret) = match &g.credentials {
                Credentials::Valid => scn
                    .principals
                    .get(g.principal_offset + i % g.principal_count.max(1))
                    .unwrap_or_else(|| (format!("{}-{i}", g.name), String::new())),
                Credentials::WrongSecret => {
                    let (id, real) = scn
                        .principals
                        .get(g.principal_offset + i % g.principal_count.max(1))
                        .unwrap_or_else(|| (format!("{}-{i}", g.name), String::new()));
                    (
                        id,
                        format!("wrong-{}-{gi}-{i}-not-{}", scn.run.seed, real.len()),
                    )
                }
                Credentials::UnknownPrincipal => (
                    format!("{}{}-{i}", scn.principals.unknown_prefix(), g.name),
                    format!("unknown-{}-{i}", scn.run.seed),
                ),
                Credentials::File { pairs, .. } => pairs[i % pairs.len()].clone(),
            };
            Identity {
                id,
                secret,
                source: (!g.sources.is_empty()).then(|| g.sources[i % g.sources.len()]),
                connection: g.connection,
                tls: g.tls.as_ref().map(|t| t.for_client(g.connection)),
                auth: auth.clone(),
                // Each station its own configuration, so its own session cache.
                eap: eap.map(|(e, tls)| crate::eap::Station {
                    method: e.method,
                    tls: tls.for_eap(e.resume),
                    anonymous_identity: e.anonymous_identity.clone(),
                }),
            }
        })
        .collect())
}

/// Shared cap on requests per repeat.
#[derive(Debug)]
struct Budget {
    used: AtomicU64,
    max: u64,
}

impl Budget {
    fn take(&self) -> bool {
        self.used.fetch_add(1, Ordering::Relaxed) < self.max
    }
}

async fn drive<D: Driver>(
    scn: &Scenario,
    d: Arc<D>,
    addr: SocketAddr,
    repeat: u32,
    opts: &RunOptions,
) -> Result<RepeatResult, LabError> {
    let mut prepared = Vec::new();
    let mut names = Vec::new();
    for (gi, g) in scn.groups.iter().enumerate() {
        let who = identities(scn, gi, g)?;
        let clients: Result<Vec<D::Client>, LabError> = who.iter().map(|w| d.client(w)).collect();
        prepared.push(Arc::new(clients?));
        names.push(who.into_iter().map(|w| w.id).collect::<Vec<_>>());
    }
    let recs: Arc<Vec<GroupRecorder>> = Arc::new(
        scn.groups
            .iter()
            .zip(names)
            .map(|(g, names)| {
                let mut r = GroupRecorder::new(&g.name, g.expects_success(), g.duration);
                if matches!(scn.driver, DriverSpec::Ldap(_)) {
                    // Locked-out users are named in the report.
                    r.ldap = crate::ldap::stats::LdapStats::with_names(names);
                }
                r
            })
            .collect(),
    );
    let budget = Arc::new(Budget {
        used: AtomicU64::new(0),
        max: scn.run.max_requests,
    });
    let metrics_addr = match &scn.target.metrics {
        None => None,
        Some(m) if m.starts_with('/') => Some((addr, m.clone(), target_tls(scn))),
        Some(url) => {
            let (h, p) = safety::parse_http_url(url.trim_end_matches("/metrics"))?;
            Some((
                safety::check_target(&h, p, &opts.allow_targets)?,
                "/metrics".to_string(),
                None,
            ))
        }
    };
    let host = format!("{}:{}", scn.target.host, scn.target.port);
    let started_unix = crate::clock::unix_now();
    let t0 = Instant::now() + Duration::from_millis(100);
    let clock = RunClock { t0: t0.into_std() };
    let run_end = t0 + scn.run.duration;

    // Every client stops issuing at its group's end; answers get up to the timeout more.
    let hard_end = run_end + scn.run.timeout + Duration::from_secs(2);
    let mut set = JoinSet::new();
    // Closed-loop clients are dealt round-robin to one single-threaded runtime per core, as
    // wrk deals its connections to its threads: a client's request, answer and recording
    // then stay on one thread, with no work-stealing wake-ups between runtime workers,
    // which otherwise cost more than the HTTP exchange itself at peak rate.
    let shards = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut closed: Vec<Vec<ClosedVu<D>>> = (0..shards).map(|_| Vec::new()).collect();
    let mut dealt = 0usize;
    for (gi, g) in scn.groups.iter().enumerate() {
        let start = t0 + g.start;
        let end = start + g.duration;
        match &g.model {
            Model::Closed { think } => {
                for i in 0..g.size {
                    let vu = ClosedVu {
                        d: d.clone(),
                        clients: prepared[gi].clone(),
                        index: i,
                        recs: recs.clone(),
                        gi,
                        start: t0 + schedule::closed_start(g.start, scn.run.ramp_up, i, g.size),
                        end,
                        think: *think,
                        timeout: scn.run.timeout,
                        honour: g.honour_retry_after,
                        budget: budget.clone(),
                        clock,
                    };
                    closed[dealt % shards].push(vu);
                    dealt += 1;
                }
            }
            Model::Open {
                rate,
                rate_end,
                poisson,
                max_outstanding,
            } => {
                let curve = RateCurve::new(
                    Duration::ZERO,
                    g.duration,
                    scn.run.ramp_up,
                    *rate,
                    *rate_end,
                );
                let arrivals = if *poisson {
                    Arrivals::poisson(
                        curve,
                        scn.run.seed ^ ((gi as u64 + 1) << 32) ^ u64::from(repeat),
                    )
                } else {
                    Arrivals::uniform(curve)
                };
                let og = OpenGroup {
                    d: d.clone(),
                    clients: prepared[gi].clone(),
                    recs: recs.clone(),
                    gi,
                    start,
                    end,
                    arrivals,
                    max_outstanding: *max_outstanding,
                    timeout: scn.run.timeout,
                    honour: g.honour_retry_after,
                    budget: budget.clone(),
                    clock,
                };
                set.spawn(og.run());
            }
        }
    }

    for (si, vus) in closed.into_iter().enumerate() {
        if !vus.is_empty() {
            set.spawn(run_closed_shard(si, vus, hard_end));
        }
    }

    // Ticker: once a second, sample in-flight counts, scrape the server, show progress.
    let progress = opts.progress && std::io::stderr().is_terminal();
    let place = opts
        .position
        .map_or_else(String::new, |(i, n)| format!("[{i}/{n}] "));
    let label = format!("{place}{} on {}", scn.raw.name, opts.label);
    let done_label = label.clone();
    let total_secs = scn.run.duration.as_secs_f64();
    let tick_recs = recs.clone();
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
    let ticker = tokio::spawn(async move {
        let mut snaps: Vec<(u64, Option<Snapshot>)> = Vec::new();
        let mut prev: Vec<u64> = vec![0; tick_recs.len()];
        let mut k: u64 = 0;
        loop {
            let at = t0 + Duration::from_secs(k + 1);
            tokio::select! {
                _ = tokio::time::sleep_until(at) => {}
                _ = &mut done_rx => break,
            }
            for g in tick_recs.iter() {
                g.sample_outstanding(k as usize);
            }
            if let Some((maddr, path, mtls)) = &metrics_addr {
                let snap = match conn::get(
                    *maddr,
                    &host,
                    path,
                    Duration::from_millis(800),
                    mtls.as_ref(),
                )
                .await
                {
                    Ok((200, body)) => Some(Snapshot::from_samples(&scrape::parse(
                        &String::from_utf8_lossy(&body),
                    ))),
                    _ => None,
                };
                snaps.push((k, snap));
            }
            if progress {
                let left = (total_secs - (k + 1) as f64).max(0.0);
                let mut line = format!("\r{label} {:>3}/{total_secs:.0}s, {left:.0}s left", k + 1);
                for (i, g) in tick_recs.iter().enumerate() {
                    let (ok, failed) = g.outcome_counts();
                    let c = ok + failed;
                    line.push_str(&format!(
                        " | {}: {ok} ok, {failed} not, {}/s, {} in flight",
                        g.name,
                        c - prev[i],
                        g.outstanding.load(Ordering::Relaxed)
                    ));
                    prev[i] = c;
                }
                line.push_str("   ");
                let mut e = std::io::stderr().lock();
                let _ = e.write_all(line.as_bytes());
                let _ = e.flush();
            }
            k += 1;
        }
        snaps
    });

    let joined =
        tokio::time::timeout_at(hard_end, async { while set.join_next().await.is_some() {} }).await;
    if joined.is_err() {
        set.abort_all();
    }
    let _ = done_tx.send(());
    let snaps = ticker.await.unwrap_or_default();
    if progress {
        eprintln!();
    } else if opts.progress {
        // Not a terminal: one line per finished run, for logs and CI.
        let groups: Vec<String> = recs
            .iter()
            .map(|g| {
                let (ok, failed) = g.outcome_counts();
                format!("{}: {ok} ok, {failed} not", g.name)
            })
            .collect();
        eprintln!(
            "{done_label}: finished after {:.1}s; {}",
            t0.elapsed().as_secs_f64(),
            groups.join("; ")
        );
    }

    let groups: Vec<GroupResult> = recs.iter().map(GroupRecorder::finish).collect();
    let legit_parts: Vec<_> = recs
        .iter()
        .filter(|g| g.expects_success)
        .map(GroupRecorder::raw)
        .collect();
    // The span the legitimate groups ran over together: groups that run one after another
    // (report 001's keep-alive, then per-request) add their times instead of sharing one.
    let legit = || scn.groups.iter().filter(|g| g.expects_success());
    let legit_active = match (
        legit().map(|g| g.start).min(),
        legit().map(|g| g.start + g.duration).max(),
    ) {
        (Some(first), Some(last)) => last.saturating_sub(first),
        _ => scn.run.duration,
    };
    let legitimate = (!legit_parts.is_empty())
        .then(|| record::merge("all legitimate", &legit_parts, legit_active));
    let used = budget.used.load(Ordering::Relaxed);
    Ok(RepeatResult {
        repeat,
        started_unix,
        duration_s: scn.run.duration.as_secs_f64(),
        requests: used.min(budget.max),
        capped: used > budget.max,
        misdelivered: groups.iter().map(|g| g.misdelivered).sum(),
        breaches: groups.iter().map(|g| g.breaches).sum(),
        groups,
        legitimate,
        server: scrape::series(&snaps),
    })
}

#[cfg(test)]
mod tests;
