//! `portcullis demo`: the same built-in scenarios against the naive baseline and against
//! Portcullis, each started fresh in-process on loopback with the same clients, reported
//! side by side. Built on the lab (`portcullis-lab`: scenarios, drivers, runner, reports);
//! it does not depend on the server crate: servers come in through the [`DemoServer`]
//! trait (the binary supplies Portcullis; [`BaselineServer`] and [`FreeRadiusServer`] are
//! here), and [`baseline`] holds the deliberately naive servers shown for contrast.
#![forbid(unsafe_code)]

pub mod acct_storm;
mod acct_stub;
pub mod baseline;
pub mod directory;
mod eap;
mod finished;
mod fr_files;
mod freeradius;
mod freeradius_eap;
mod freeradius_ldap;
mod freeradius_status;
pub mod ldap_wave;
mod radius_side;
pub mod slapd;

pub use acct_storm::Accounting;
pub use eap::{EapSetup, eap_table};
pub use finished::{Finished, HEADLINE, side_by_side};
pub use freeradius::FreeRadiusServer;
pub use freeradius_status::PoolSample;
pub use ldap_wave::{LdapSetup, LdapStarted};
pub use radius_side::radius_table;
use radius_side::{RADIUS_ALONE, RADIUS_ATTACKED};

use std::future::Future;
use std::net::TcpListener;
use std::pin::Pin;
use std::time::{Duration, Instant};

use portcullis_hash::Prf;
use portcullis_hash::pbkdf2::pbkdf2_hmac;

use crate::baseline::{Baseline, BaselineConfig};
use portcullis_lab::LabError;
use portcullis_lab::fingerprint::Fingerprint;
use portcullis_lab::report::{Report, Section, Table};
use portcullis_lab::runner::{RunOptions, run_scenario};
use portcullis_lab::scenario::{BUILTIN, DriverSpec, Model, Principals, Scenario};

/// What every demo server is started with.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Delay before a failed attempt is answered.
    pub reject_delay: Duration,
    /// OAuth clients to provision (id, secret).
    pub clients: Vec<(String, String)>,
    /// PBKDF2-HMAC-SHA256 iterations for their stored secrets.
    pub iterations: u32,
    /// RADIUS scenarios: serve RADIUS too, for one NAS covering loopback with this shared
    /// secret, with the `clients` as its users (name, password).
    pub radius_secret: Option<Vec<u8>>,
    /// HTTPS scenarios: serve TLS with this certificate and key (a throwaway CA's).
    pub tls: Option<portcullis_lab::certs::Pair>,
    /// Store the clients' secrets as generated secrets are (peppered HMAC) instead of
    /// with PBKDF2.
    pub generated_secrets: bool,
    /// 802.1X scenarios: serve EAP-TLS and EAP-TTLS/PAP on the RADIUS side with these
    /// certificates (the demo's throwaway CA).
    pub eap: Option<EapSetup>,
    /// Serve RADIUS accounting too (the accounting storm section), for the same NAS.
    pub accounting: bool,
    /// The users live in this directory (the "slow directory" section): check their
    /// passwords there; `clients` are then OAuth applications allowed the password
    /// grant, not users.
    pub directory: Option<DirectorySetup>,
}

/// An existing directory the demo's users live in: OpenLDAP slapd behind the lab's
/// delaying relay, reached over plain LDAP on loopback.
#[derive(Debug, Clone)]
pub struct DirectorySetup {
    /// The relay's address (servers bind through it, never to slapd directly).
    pub addr: std::net::SocketAddr,
    /// The directory's base DN.
    pub base: String,
    /// Where the users' entries are (`ou=people,BASE`), for search-then-bind.
    pub people: String,
    /// The users' DNs, `{user}` standing for the name.
    pub user_dn_template: String,
    /// A service account that may search the users (not read their passwords).
    pub service_dn: String,
    /// Its password.
    pub service_password: String,
    /// How long to wait for the directory's answer to one bind: past the relay's hold,
    /// so a held failure is an answer, not a timeout.
    pub answer_timeout: Duration,
    /// The directory locks an account after this many failed binds (ppolicy).
    pub lockout_threshold: Option<u32>,
}

/// A started server.
pub struct Started {
    /// Base URL, `http://127.0.0.1:port`.
    pub url: String,
    /// Metrics path on the same port or an `http://` URL of another listener.
    pub metrics: String,
    /// `radius://127.0.0.1:port` when RADIUS was asked for.
    pub radius: Option<String>,
    /// Its RADIUS replies carry no Message-Authenticator (a third-party server released
    /// before the BlastRADIUS fix): the lab checks their Response Authenticator only.
    pub replies_lack_message_authenticator: bool,
    /// Its accounting listener and stored-record count, when [`Setup::accounting`] was
    /// asked for and it serves accounting.
    pub accounting: Option<Accounting>,
    /// Reads its worker pool now, when it has one the demo can read (FreeRADIUS, with
    /// [`Setup::directory`]: its status server). Blocking (a UDP round trip).
    pub pool_state: Option<PoolProbe>,
    /// Stops the server.
    pub stop: Box<dyn FnOnce() -> BoxFuture<()> + Send>,
}

/// Reads a server's worker pool (see [`Started::pool_state`]).
pub type PoolProbe = std::sync::Arc<dyn Fn() -> Result<PoolSample, String> + Send + Sync>;

/// A boxed future (the trait is used as a trait object).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A server the demo can start with a [`Setup`].
pub trait DemoServer: Send + Sync {
    /// Label in the report ("baseline", "portcullis").
    fn label(&self) -> String;
    /// One sentence on how it is built (shown in the report).
    fn about(&self) -> String;
    /// Start it on a fresh loopback port.
    fn start(&self, setup: Setup) -> BoxFuture<Result<Started, LabError>>;
    /// It serves RADIUS only: the demo runs it in the RADIUS scenarios and no others.
    fn radius_only(&self) -> bool {
        false
    }
    /// It serves HTTPS (with [`Setup::tls`]): the demo runs it in the HTTPS scenarios.
    fn speaks_tls(&self) -> bool {
        false
    }
    /// It serves 802.1X (with [`Setup::eap`]): the demo runs it in the EAP scenarios.
    fn speaks_eap(&self) -> bool {
        false
    }
    /// It serves RADIUS accounting (with [`Setup::accounting`]) and can count what it
    /// stored: the demo runs the accounting storm section against it.
    fn speaks_accounting(&self) -> bool {
        false
    }
    /// It checks passwords against an existing directory (with [`Setup::directory`]):
    /// the demo runs the "slow directory" section against it.
    fn speaks_directory(&self) -> bool {
        false
    }
    /// It serves LDAP binds from its own process ([`DemoServer::start_ldap`]): the demo
    /// runs the "LDAP binds under a guessing wave" section against it, beside slapd.
    fn speaks_ldap(&self) -> bool {
        false
    }
    /// Start it as a process of its own serving plain LDAP on loopback with `setup`'s
    /// users (its CPU is read from `/proc`); only when [`DemoServer::speaks_ldap`].
    fn start_ldap(&self, setup: LdapSetup) -> BoxFuture<Result<LdapStarted, LabError>> {
        let _ = setup;
        let label = self.label();
        Box::pin(async move { Err(LabError::Target(format!("{label} does not serve LDAP"))) })
    }
}

/// Whether `srv` takes part in `scn`.
fn takes_part(srv: &dyn DemoServer, scn: &Scenario) -> bool {
    let radius = matches!(scn.driver, DriverSpec::Radius(_));
    (radius || !srv.radius_only())
        && (!scn.demo.tls || srv.speaks_tls())
        && (!scn.uses_eap() || srv.speaks_eap())
}

/// The naive baseline as a demo server.
#[derive(Debug, Clone)]
pub struct BaselineServer {
    /// Worker threads.
    pub workers: usize,
}

impl DemoServer for BaselineServer {
    fn label(&self) -> String {
        "baseline".into()
    }

    fn about(&self) -> String {
        format!(
            "baseline: naive blocking server, {} worker threads, PBKDF2 and the reject delay (thread::sleep) inside the worker; its RADIUS side is one receive loop that hashes and sleeps inline (report 003's before state)",
            self.workers
        )
    }

    fn start(&self, setup: Setup) -> BoxFuture<Result<Started, LabError>> {
        let workers = self.workers;
        Box::pin(async move {
            let io = |e: std::io::Error| LabError::Baseline(e.to_string());
            let l = TcpListener::bind("127.0.0.1:0").map_err(io)?;
            let m = TcpListener::bind("127.0.0.1:0").map_err(io)?;
            let radius = match &setup.radius_secret {
                Some(secret) => {
                    let (users, secret) = (setup.clients.clone(), secret.clone());
                    let (iterations, delay) = (setup.iterations, setup.reject_delay);
                    let r = tokio::task::spawn_blocking(move || {
                        crate::baseline::radius::BaselineRadius::start(
                            &users, &secret, iterations, delay,
                        )
                    })
                    .await
                    .map_err(|e| LabError::Baseline(e.to_string()))??;
                    Some(r)
                }
                None => None,
            };
            let cfg = BaselineConfig {
                workers,
                reject_delay: setup.reject_delay,
                iterations: setup.iterations,
                clients: setup.clients,
                ..BaselineConfig::default()
            };
            // Hashing the provisioned secrets is CPU work: keep it off the runtime.
            let b = tokio::task::spawn_blocking(move || Baseline::start(l, m, cfg))
                .await
                .map_err(|e| LabError::Baseline(e.to_string()))??;
            let url = format!("http://{}", b.addr());
            let metrics = format!("http://{}/metrics", b.metrics_addr());
            Ok(Started {
                url,
                metrics,
                radius: radius.as_ref().map(|r| format!("radius://{}", r.addr())),
                replies_lack_message_authenticator: false,
                accounting: None,
                pool_state: None,
                stop: Box::new(move || -> BoxFuture<()> {
                    Box::pin(async move {
                        let _ = tokio::task::spawn_blocking(move || {
                            b.shutdown();
                            if let Some(r) = radius {
                                r.shutdown();
                            }
                        })
                        .await;
                    })
                }),
            })
        })
    }
}

/// Demo settings.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Short runs (about 5 s per scenario and server).
    pub quick: bool,
    /// Live progress line.
    pub progress: bool,
    /// Target time of one PBKDF2 verification, which sets the iteration count.
    pub verify_target: Duration,
    /// Run only these sections (scenario names, or the accounting storm's, or
    /// `ldap-binds-wave`); empty: all.
    pub only: Vec<String>,
}

/// Measured hashing speed of this machine.
#[derive(Debug, Clone, Copy)]
pub struct Calibration {
    /// Iterations chosen.
    pub iterations: u32,
    /// Seconds per verification at that count, one core.
    pub verify_s: f64,
    /// Verifications per second with every core hashing.
    pub capacity: f64,
}

/// Pick an iteration count near `target` per verification and estimate capacity.
pub fn calibrate(target: Duration) -> Calibration {
    let probe = 20_000u32;
    let mut out = [0u8; 32];
    pbkdf2_hmac(
        Prf::Sha256,
        b"warm-up",
        b"calibration-salt",
        2_000,
        &mut out,
    );
    let t = Instant::now();
    for _ in 0..3 {
        pbkdf2_hmac(Prf::Sha256, b"probe", b"calibration-salt", probe, &mut out);
    }
    let per_iter = t.elapsed().as_secs_f64() / f64::from(3 * probe);
    let raw = target.as_secs_f64() / per_iter.max(1e-12);
    let iterations = ((raw / 1000.0).round() * 1000.0).clamp(1000.0, 600_000.0) as u32;
    let verify_s = per_iter * f64::from(iterations);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    Calibration {
        iterations,
        verify_s,
        capacity: cores / verify_s,
    }
}

/// Full-demo lengths of the scenarios shortened for the demo (their files keep the
/// lengths `lab run` uses): their figures settle well before the file's length, and the
/// full demo must end within 8 minutes on two cores (issue 41 item 9). The RADIUS
/// logins without an attack (no thresholds of their own, a closed loop at a steady rate
/// from its second second) run 10 s, to give the LDAP section its control phase.
const FULL_SCALE: &[(&str, f64)] = &[
    ("radius-demo-legit", 0.5),
    ("radius-demo-attack", 0.75),
    ("overload-2x", 0.75),
    ("handshake-cost", 0.5),
    ("connect-per-request", 0.5),
];

/// The scenarios the demo runs, headline first (see [`finished`]), adjusted for `quick`
/// and `capacity`: those `only` names, or with no names every one not `on_request`
/// (under `quick`, not `quick = false` either). A run that would not be one the demo
/// can serve (other drivers, directory scenarios: their own section) is never listed.
pub fn scenarios(quick: bool, capacity: f64, only: &[String]) -> Result<Vec<Scenario>, LabError> {
    let mut out = Vec::new();
    for (name, text) in BUILTIN {
        let mut s = Scenario::parse(text, None)?;
        let wanted = match only.is_empty() {
            true => !s.demo.on_request && (!quick || s.demo.quick),
            false => only.iter().any(|o| o == name),
        };
        // Directory scenarios have their own section (`directory`), after these.
        if !matches!(s.driver, DriverSpec::OAuth2 { .. } | DriverSpec::Radius(_))
            || !wanted
            || s.demo.directory.is_some()
        {
            continue;
        }
        if let Some((_, f)) = FULL_SCALE.iter().find(|(n, _)| !quick && n == name) {
            s.scale_time(*f);
        }
        if quick {
            // About 5 s per run; overload needs longer for a queue to build past the timeout,
            // and the 802.1X storm for its stations to log in more than once per wave (a
            // login is several round trips, retransmitted after 2 s like a NAS's).
            let (scale, timeout) = if s.uses_eap() {
                (0.5, 6)
            } else if s.demo.rate_x_capacity.is_some() {
                (0.4, 3)
            } else {
                (0.25, 3)
            };
            s.scale_time(scale);
            s.run.timeout = s.run.timeout.min(Duration::from_secs(timeout));
        }
        if let Some(x) = s.demo.rate_x_capacity {
            for g in &mut s.groups {
                let legit = g.expects_success();
                if let Model::Open { rate, rate_end, .. } = &mut g.model
                    && legit
                {
                    *rate = (capacity * x).round().max(1.0);
                    *rate_end = *rate;
                }
            }
        }
        out.push(s);
    }
    out.sort_by_key(|s| finished::rank(&s.raw.name));
    Ok(out)
}

/// Every section name `--only` accepts.
fn section_names() -> Result<Vec<String>, LabError> {
    let mut out = Vec::new();
    for (name, text) in BUILTIN {
        let s = Scenario::parse(text, None)?;
        if matches!(s.driver, DriverSpec::OAuth2 { .. } | DriverSpec::Radius(_))
            || s.demo.directory.is_some()
        {
            out.push((*name).to_owned());
        }
    }
    out.push(acct_storm::SECTION.to_owned());
    out.push(ldap_wave::SECTION.to_owned());
    Ok(out)
}

/// Run the demo against `servers` and build the report; `sink` gets each part as soon as
/// it ends (the headline first), before the next part starts.
pub async fn run(
    servers: &[&dyn DemoServer],
    opts: &DemoOptions,
    sink: &mut (dyn FnMut(&Finished) + Send),
) -> Result<Report, LabError> {
    let target = opts.verify_target;
    let cal = tokio::task::spawn_blocking(move || calibrate(target))
        .await
        .map_err(|e| LabError::Baseline(e.to_string()))?;
    let picked = |name: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == name);
    let known = section_names()?;
    if let Some(o) = opts.only.iter().find(|o| !known.contains(o)) {
        return Err(LabError::Scenario(format!(
            "no demo section {o:?}; the sections are {}",
            known.join(", ")
        )));
    }
    let scns = scenarios(opts.quick, cal.capacity, &opts.only)?;
    // Every scenario's clients are provisioned alike: take the principals from the
    // built-in list as a whole, so a demo of a few sections provisions the same users.
    let all = scenarios(opts.quick, cal.capacity, &known)?;
    let count = all.iter().map(|s| s.principals.len()).max().unwrap_or(0);
    let clients: Vec<(String, String)> = match all.first().map(|s| &s.principals) {
        Some(p @ Principals::Generated { .. }) => (0..count).filter_map(|i| p.get(i)).collect(),
        _ => Vec::new(),
    };
    let mut sections = Vec::new();
    let mut tables: Vec<Table> = Vec::new();
    // Runs in all, for "scenario i of n": RADIUS scenarios skip the HTTP-only servers.
    let total: usize = scns
        .iter()
        .map(|scn| servers.iter().filter(|s| takes_part(**s, scn)).count())
        .sum();
    // HTTPS scenarios: one throwaway CA and server certificate for the whole demo.
    let pki_dir = std::env::temp_dir().join(format!("portcullis-demo-pki-{}", std::process::id()));
    let pki = if scns.iter().any(|s| s.demo.tls || s.demo.eap_pki) {
        std::fs::create_dir_all(&pki_dir)
            .map_err(|e| LabError::Output(format!("{}: {e}", pki_dir.display())))?;
        let ca = portcullis_lab::certs::TestCa::new(&pki_dir, "demo-ca")?;
        let server = ca.server("demo-server", &["127.0.0.1", "localhost"])?;
        // 802.1X stations: one client certificate all EAP-TLS stations present.
        let station = ca.client("demo-station", "lab-client-0")?;
        Some((ca.cert.clone(), server, station))
    } else {
        None
    };
    let mut done = 0;
    for scn in &scns {
        let mut results = Vec::new();
        for srv in servers {
            let radius_secret = match &scn.driver {
                DriverSpec::Radius(r) => Some(r.secret.clone()),
                _ => None,
            };
            if !takes_part(*srv, scn) {
                continue;
            }
            let tls = pki.as_ref().filter(|_| scn.demo.tls);
            let eap = pki.as_ref().filter(|_| scn.demo.eap_pki);
            let setup = Setup {
                reject_delay: scn.demo.reject_delay.unwrap_or(Duration::from_secs(1)),
                clients: clients.clone(),
                iterations: cal.iterations,
                radius_secret: radius_secret.clone(),
                tls: tls.map(|(_, server, _)| server.clone()),
                generated_secrets: scn.demo.generated_secrets,
                eap: eap.map(|(ca, server, _)| EapSetup {
                    ca: ca.clone(),
                    server: server.clone(),
                }),
                accounting: false,
                directory: None,
            };
            let started = srv.start(setup).await?;
            let (url, metrics) = match (&radius_secret, &started.radius) {
                // A RADIUS target has no HTTP side: metrics come from the server's own.
                (Some(_), Some(r)) => (
                    r.clone(),
                    if started.metrics.starts_with('/') {
                        format!("{}{}", started.url, started.metrics)
                    } else {
                        started.metrics.clone()
                    },
                ),
                (Some(_), None) => {
                    (started.stop)().await;
                    return Err(LabError::Target(format!(
                        "{} did not start RADIUS for {}",
                        srv.label(),
                        scn.raw.name
                    )));
                }
                (None, _) => (started.url.clone(), started.metrics.clone()),
            };
            let mut s = match tls {
                Some((ca, _, _)) => scn.clone().with_tls_ca(ca)?.with_target_url(&url)?,
                None => scn.clone().with_target_url(&url)?,
            };
            if let Some((ca, _, station)) = eap {
                s = s.with_eap_pki(ca, station)?;
            }
            if started.replies_lack_message_authenticator
                && let DriverSpec::Radius(r) = &mut s.driver
            {
                r.require_message_authenticator = false;
                s.raw.driver.require_message_authenticator = Some(false);
            }
            // "off": a server without a metrics endpoint (FreeRADIUS).
            s.target.metrics = (metrics != "off").then(|| metrics.clone());
            s.raw.target.metrics = metrics;
            done += 1;
            let ro = RunOptions {
                allow_targets: Vec::new(),
                progress: opts.progress,
                label: srv.label(),
                position: Some((done, total)),
            };
            let res = run_scenario(&s, &ro).await;
            (started.stop)().await;
            results.push(res?);
        }
        let section = Section {
            scenario: scn.raw.name.clone(),
            description: scn.raw.description.clone(),
            results,
        };
        let headline = scn.raw.name == HEADLINE;
        let mut part_tables = vec![side_by_side(&section, headline)];
        sections.push(section);
        // A cross-section table is shown once its last section has run.
        if scn.raw.name == RADIUS_ATTACKED || scn.raw.name == RADIUS_ALONE {
            part_tables.extend(radius_table(&sections));
        }
        if scn.uses_eap() {
            part_tables.extend(eap_table(&sections[sections.len() - 1..]));
        }
        let part = Finished {
            name: scn.raw.name.clone(),
            headline,
            tables: part_tables,
            sections: sections[sections.len() - 1..].to_vec(),
        };
        sink(&part);
        tables.extend(part.tables);
    }
    let _ = std::fs::remove_dir_all(&pki_dir);
    let storm = match picked(acct_storm::SECTION) {
        true => accounting_storm(servers, &all, &clients, cal.iterations, opts).await?,
        false => None,
    };
    if let Some((section, table)) = storm {
        let part = Finished {
            name: acct_storm::SECTION.into(),
            headline: false,
            tables: vec![table],
            sections: vec![section],
        };
        sink(&part);
        tables.extend(part.tables);
        sections.extend(part.sections);
    }
    let (slow, slow_note) = slow_directory(servers, opts).await?;
    if let Some(d) = slow {
        let part = Finished {
            name: directory::TITLE.into(),
            headline: false,
            tables: directory::table(&d.runs).into_iter().collect(),
            sections: d.sections,
        };
        sink(&part);
        tables.extend(part.tables);
        sections.extend(part.sections);
    }
    let (wave, wave_note) = ldap_wave::section(
        servers,
        opts.quick,
        &opts.only,
        opts.progress,
        slapd::find_slapd,
    )
    .await?;
    if let Some(part) = wave {
        sink(&part);
        tables.extend(part.tables);
        sections.extend(part.sections);
    }
    let mut notes = vec![
        format!(
            "Client secrets are stored as PBKDF2-HMAC-SHA256 with {} iterations (demo cost, chosen so one verification takes about {:.1} ms on this machine; the production default is 600,000). Estimated hashing capacity with all {} cores (single-stream PBKDF2, which is what the baseline runs): {:.0} verifications/s; the overload scenario offers twice that. The machine is shared, so absolute rates are noisy: compare the two servers within one report.",
            cal.iterations,
            cal.verify_s * 1000.0,
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            cal.capacity
        ),
        format!(
            "{} run: every scenario lasts {}; each server is started fresh for each scenario with the same {} clients, on loopback, while the lab runs on the same machine.",
            if opts.quick {
                "Quick (--quick)"
            } else {
                "Full"
            },
            if opts.quick {
                "about 5 s (overload 8 s)"
            } else {
                "10 to 20 s (each section gives its own; the demo shortens some of the files' lengths, whose figures settle sooner)"
            },
            clients.len()
        ),
    ];
    let over_tls: Vec<&str> = scns
        .iter()
        .filter(|s| s.demo.tls)
        .map(|s| s.raw.name.as_str())
        .collect();
    if !over_tls.is_empty() {
        notes.push(format!(
            "{} runs over HTTPS (a throwaway CA made for this demo; servers without TLS sit it out){}: each virtual client keeps its own TLS session cache, and the section's bars split each group's latency into TCP connect, TLS handshake and request.",
            over_tls.join(", "),
            if scns.iter().any(|s| s.demo.tls && s.demo.generated_secrets) {
                ", with the clients' secrets stored as generated secrets are (peppered HMAC, microseconds), so the handshake is not hidden behind a KDF"
            } else {
                ""
            }
        ));
    }
    for s in servers {
        notes.push(s.about());
    }
    notes.extend(headlines(&sections));
    let eap_scenarios: Vec<&str> = scns
        .iter()
        .filter(|s| s.uses_eap())
        .map(|s| s.raw.name.as_str())
        .collect();
    if !eap_scenarios.is_empty() {
        notes.push(format!(
            "{} is 802.1X inside RADIUS: each virtual client is a station (its own Calling-Station-Id and loopback address) running whole EAP-TLS or EAP-TTLS/PAP logins over TLS 1.2, with the demo's throwaway CA, a P-256 server certificate and one P-256 client certificate for every EAP-TLS station; every Access-Accept's MS-MPPE keys are checked against the station's own. Servers without 802.1X sit it out.",
            eap_scenarios.join(", ")
        ));
    }
    notes.extend(slow_note);
    notes.extend(wave_note);
    Ok(Report {
        title: "Portcullis demo: naive baseline vs Portcullis under the field reports' scenarios"
            .into(),
        fingerprint: Fingerprint::collect(),
        notes,
        tables,
        sections,
    })
}

/// The accounting storm section against every server that serves accounting, with the
/// RADIUS sections' secret, users and hash cost; `None` when no server takes part or the
/// demo runs no RADIUS section.
async fn accounting_storm(
    servers: &[&dyn DemoServer],
    scns: &[Scenario],
    clients: &[(String, String)],
    iterations: u32,
    opts: &DemoOptions,
) -> Result<Option<(Section, Table)>, LabError> {
    let secret = scns.iter().find_map(|s| match &s.driver {
        DriverSpec::Radius(r) if s.raw.name == RADIUS_ALONE => Some(r.secret.clone()),
        _ => None,
    });
    let Some(secret) = secret else {
        return Ok(None);
    };
    let durations = acct_storm::Durations::demo(opts.quick);
    let mut found = Vec::new();
    for srv in servers.iter().filter(|s| s.speaks_accounting()) {
        if opts.progress {
            eprintln!("{}: accounting storm beside logins...", srv.label());
        }
        let setup = Setup {
            reject_delay: Duration::from_secs(1),
            clients: clients.to_vec(),
            iterations,
            radius_secret: Some(secret.clone()),
            tls: None,
            generated_secrets: false,
            eap: None,
            accounting: true,
            directory: None,
        };
        found.push((srv.label(), acct_storm::run(*srv, setup, &durations).await?));
    }
    Ok((!found.is_empty()).then(|| acct_storm::report(&found)))
}

/// The built-in scenarios with `[demo.directory]` the demo runs: those `only` names, or
/// with no names every one not `on_request` (under `quick`, not `quick = false` either);
/// `quick` halves their runs.
pub fn directory_scenarios(quick: bool, only: &[String]) -> Result<Vec<Scenario>, LabError> {
    let mut out = Vec::new();
    for (name, text) in BUILTIN {
        let mut s = Scenario::parse(text, None)?;
        let wanted = match only.is_empty() {
            true => !s.demo.on_request && (!quick || s.demo.quick),
            false => only.iter().any(|o| o == name),
        };
        if s.demo.directory.is_none() || !wanted {
            continue;
        }
        if quick {
            s.scale_time(0.5);
        }
        out.push(s);
    }
    Ok(out)
}

/// The "slow directory" section, when slapd is installed and a server speaks to a
/// directory; otherwise a note saying why it is missing.
async fn slow_directory(
    servers: &[&dyn DemoServer],
    opts: &DemoOptions,
) -> Result<(Option<directory::DirectorySection>, Option<String>), LabError> {
    let scns = directory_scenarios(opts.quick, &opts.only)?;
    if scns.is_empty() || !servers.iter().any(|s| s.speaks_directory()) {
        return Ok((None, None));
    }
    let script = match slapd::find_slapd() {
        Ok(p) => p,
        Err(why) => {
            return Ok((
                None,
                Some(format!("\"{}\" is left out: {why}.", directory::TITLE)),
            ));
        }
    };
    let d = directory::run(servers, &scns, &script, opts.progress).await?;
    Ok((Some(d), None))
}

/// One sentence per scenario comparing legitimate clients' experience across targets.
pub fn headlines(sections: &[Section]) -> Vec<String> {
    sections
        .iter()
        .map(|s| {
            let parts: Vec<String> = s
                .results
                .iter()
                .filter_map(|r| {
                    let l = r.repeats.first()?.legitimate.as_ref()?;
                    Some(format!(
                        "{}: {:.1}% of legitimate requests succeeded, {:.1} tokens/s, p99 {:.0} ms",
                        r.target,
                        l.success_rate * 100.0,
                        l.throughput,
                        l.p99_ms
                    ))
                })
                .collect();
            format!("{}: {}.", s.scenario, parts.join("; "))
        })
        .collect()
}
