//! `portcullis lab ...`: run load scenarios (`run`), list the built-in ones (`scenarios`),
//! and start the helper servers the lab's own comparisons use (`baseline`, `healthz`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use portcullis_demo::baseline::{Baseline, BaselineConfig};
use portcullis_lab::report::{Report, Section};
use portcullis_lab::scenario::{BUILTIN, Scenario, parse_duration};
use portcullis_lab::{RunOptions, fingerprint};

/// `portcullis lab` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum LabCommand {
    /// Run a scenario (a built-in name or a TOML file) and write summary.json,
    /// timeseries.csv and report.html. Exit code 0: thresholds met; 1: not met; 2: error.
    Run(RunArgs),
    /// List the built-in scenarios with a one-line description.
    Scenarios,
    /// Run the naive baseline token server (fixed worker pool, delay inside the worker).
    Baseline(BaselineArgs),
    /// Run a trivial `GET /healthz` server (for tool comparisons and stall tests).
    Healthz(HealthzArgs),
}

/// Arguments of `lab run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Built-in scenario name (see `lab scenarios`) or path to a scenario TOML file.
    pub scenario: String,
    /// Output directory (default ./lab-out/<scenario>-<UTC time>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Override the scenario's target base URL (http://host:port, https://host:port, or
    /// radius://host:port for a RADIUS scenario).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Trust this PEM CA bundle for an https:// target (replaces the scenario's tls.ca;
    /// default: the scenario's, else the system's bundle).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Override where server metrics are scraped: a path on the target, an http:// URL,
    /// or "off".
    #[arg(long, value_name = "URL")]
    pub metrics: Option<String>,
    /// Allow a non-loopback target host (repeatable). Without it only 127.0.0.0/8 and ::1.
    #[arg(long, value_name = "HOST")]
    pub allow_target: Vec<String>,
    /// Override the scenario's run duration (e.g. 30s); groups are scaled to fit.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// No live progress line.
    #[arg(long)]
    pub quiet: bool,
}

/// Arguments of `lab baseline`.
#[derive(Debug, clap::Args)]
pub struct BaselineArgs {
    /// Token endpoint listen address.
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub listen: SocketAddr,
    /// `/metrics` listen address.
    #[arg(long, default_value = "127.0.0.1:8082")]
    pub metrics_listen: SocketAddr,
    /// Worker threads.
    #[arg(long, default_value_t = 16)]
    pub workers: usize,
    /// Delay before answering a failed attempt (slept inside the worker).
    #[arg(long, default_value = "1s")]
    pub reject_delay: String,
    /// Clients lab-client-N / lab-secret-N to provision.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// PBKDF2-HMAC-SHA256 iterations of their stored secrets.
    #[arg(long, default_value_t = 10_000)]
    pub iterations: u32,
}

/// Arguments of `lab healthz`.
#[derive(Debug, clap::Args)]
pub struct HealthzArgs {
    /// Listen address (port 0 picks one; the bound address is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
}

/// Run a `lab` subcommand.
pub fn run(cmd: LabCommand) -> ExitCode {
    match cmd {
        LabCommand::Scenarios => {
            for (name, text) in BUILTIN {
                let desc = Scenario::parse(text, None)
                    .map(|s| s.raw.description)
                    .unwrap_or_else(|e| format!("(invalid: {e})"));
                println!("{name:<22} {desc}");
            }
            ExitCode::SUCCESS
        }
        LabCommand::Run(a) => run_scenario(a),
        LabCommand::Baseline(a) => baseline(a),
        LabCommand::Healthz(a) => healthz(a),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| super::fail(format_args!("cannot start the async runtime: {e}")))
}

/// `./lab-out/<name>-<YYYYMMDD-HHMMSS>`.
pub fn default_out(name: &str) -> PathBuf {
    let stamp: String = fingerprint::utc(portcullis_lab::clock::unix_now())
        .chars()
        .filter_map(|c| match c {
            '-' | ':' => None,
            ' ' => Some('-'),
            c => Some(c),
        })
        .collect();
    PathBuf::from("lab-out").join(format!("{name}-{stamp}"))
}

fn run_scenario(a: RunArgs) -> ExitCode {
    let mut scn = match Scenario::load(&a.scenario) {
        Ok(s) => s,
        Err(e) => return super::fail(e),
    };
    if let Some(t) = &a.target {
        scn = match scn.with_target_url(t) {
            Ok(s) => s,
            Err(e) => return super::fail(e),
        };
    }
    if let Some(ca) = &a.tls_ca {
        scn = match scn.with_tls_ca(ca) {
            Ok(s) => s,
            Err(e) => return super::fail(e),
        };
    }
    if let Some(m) = &a.metrics {
        scn.target.metrics = (m != "off").then(|| m.clone());
        scn.raw.target.metrics = m.clone();
    }
    if let Some(d) = &a.duration {
        match parse_duration(d) {
            Ok(d) if !d.is_zero() => {
                let f = d.as_secs_f64() / scn.run.duration.as_secs_f64();
                scn.scale_time(f);
            }
            Ok(_) => return super::fail("--duration must be positive"),
            Err(e) => return super::fail(e),
        }
    }
    let rt = match runtime() {
        Ok(r) => r,
        Err(c) => return c,
    };
    let opts = RunOptions {
        allow_targets: a.allow_target.clone(),
        progress: !a.quiet,
        label: scn.raw.target.url.clone(),
        position: None,
    };
    let result = match rt.block_on(portcullis_lab::run_scenario(&scn, &opts)) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    let report = Report {
        title: format!("Load lab: {}", scn.raw.name),
        fingerprint: fingerprint::Fingerprint::collect(),
        notes: Vec::new(),
        tables: Vec::new(),
        sections: vec![Section {
            scenario: scn.raw.name.clone(),
            description: scn.raw.description.clone(),
            results: vec![result],
        }],
    };
    let out = a.out.unwrap_or_else(|| default_out(&scn.raw.name));
    let path = match report.write(&out) {
        Ok(p) => p,
        Err(e) => return super::fail(e),
    };
    print_summary(&report);
    println!("report: {}", path.display());
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// One line per group and target on stdout.
pub fn print_summary(report: &Report) {
    for s in &report.sections {
        for r in &s.results {
            for rep in &r.repeats {
                for g in rep.groups.iter().chain(rep.legitimate.iter()) {
                    println!(
                        "{} [{}] repeat {} {:<14} done {:>8} success {:>6.1}% {:>9.1}/s p50 {:>9.2} ms p99 {:>9.2} ms",
                        r.scenario,
                        r.target,
                        rep.repeat + 1,
                        g.name,
                        g.completed,
                        g.success_rate * 100.0,
                        g.completed_per_s,
                        g.p50_ms,
                        g.p99_ms
                    );
                }
            }
            for f in &r.failures {
                println!("{} [{}] FAIL: {f}", r.scenario, r.target);
            }
        }
    }
}

fn baseline(a: BaselineArgs) -> ExitCode {
    let reject_delay = match parse_duration(&a.reject_delay) {
        Ok(d) => d,
        Err(e) => return super::fail(e),
    };
    let (l, m) = match (
        std::net::TcpListener::bind(a.listen),
        std::net::TcpListener::bind(a.metrics_listen),
    ) {
        (Ok(l), Ok(m)) => (l, m),
        (Err(e), _) | (_, Err(e)) => return super::fail(format_args!("cannot listen: {e}")),
    };
    let cfg = BaselineConfig {
        workers: a.workers,
        reject_delay,
        iterations: a.iterations,
        clients: (0..a.clients)
            .map(|i| (format!("lab-client-{i}"), format!("lab-secret-{i}")))
            .collect(),
        ..BaselineConfig::default()
    };
    let b = match Baseline::start(l, m, cfg) {
        Ok(b) => b,
        Err(e) => return super::fail(e),
    };
    println!("baseline token endpoint http://{}/oauth2/token", b.addr());
    println!(
        "baseline metrics        http://{}/metrics",
        b.metrics_addr()
    );
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn healthz(a: HealthzArgs) -> ExitCode {
    let rt = match runtime() {
        Ok(r) => r,
        Err(c) => return c,
    };
    rt.block_on(async {
        let l = match tokio::net::TcpListener::bind(a.listen).await {
            Ok(l) => l,
            Err(e) => return super::fail(format_args!("cannot listen on {}: {e}", a.listen)),
        };
        match l.local_addr() {
            Ok(addr) => println!("http://{addr}"),
            Err(e) => return super::fail(e),
        }
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        portcullis_lab::trivial::run(l, shutdown).await;
        ExitCode::SUCCESS
    })
}
