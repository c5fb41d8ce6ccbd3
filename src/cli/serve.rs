//! `portcullis serve`: run the OAuth 2.0 token server (and RADIUS, when configured) until
//! SIGINT/SIGTERM. Under systemd (`Type=notify`) it sends READY=1 once every listener is
//! bound, the store is open and its own `/readyz` answers 200, feeds the watchdog from the
//! runtime, and sends STOPPING=1 when it starts draining.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use portcullis_server::Config;

/// Arguments of `portcullis serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// TOML configuration file (`portcullis config example` prints a documented one).
    /// Without it every setting has its default.
    #[arg(long, value_name = "FILE", env = "PORTCULLIS_CONFIG")]
    pub config: Option<PathBuf>,
    /// Data directory (overrides `store.data_dir`; default ./portcullis-data).
    #[arg(long, value_name = "DIR", env = "PORTCULLIS_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Listen address (overrides `server.http`; default 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", env = "PORTCULLIS_HTTP")]
    pub http: Option<SocketAddr>,
    /// Issuer URL, what clients call (overrides `server.issuer`). A shared store
    /// (`store.url`) needs `server.issuer` in the file itself.
    #[arg(long, value_name = "URL", env = "PORTCULLIS_ISSUER")]
    pub issuer: Option<String>,
    /// Serve RADIUS on this UDP address (repeat for several, or comma-separate them in
    /// PORTCULLIS_RADIUS; replaces `radius.listen`), e.g. `--radius 0.0.0.0:1812 --radius [::]:1812`.
    #[arg(
        long,
        value_name = "ADDR",
        env = "PORTCULLIS_RADIUS",
        value_delimiter = ','
    )]
    pub radius: Vec<SocketAddr>,
    /// Serve RADIUS accounting on this UDP address (repeat for several; replaces
    /// `radius.accounting_listen`), e.g. `--radius-accounting 0.0.0.0:1813`.
    #[arg(long, value_name = "ADDR")]
    pub radius_accounting: Vec<SocketAddr>,
    /// Serve RadSec (RADIUS over TLS) on this TCP address (repeat for several; replaces
    /// `radius.radsec_listen`; needs `[radius.radsec]`), e.g. `--radsec 0.0.0.0:2083`.
    #[arg(long, value_name = "ADDR")]
    pub radsec: Vec<SocketAddr>,
}

/// The configuration file (or the defaults) with the command line's overrides applied;
/// also what SIGHUP re-reads.
pub fn load_config(args: &ServeArgs) -> Result<Config, String> {
    let mut config = match &args.config {
        Some(path) => Config::load(path).map_err(|e| format!("{}: {e}", path.display()))?,
        None => Config::default(),
    };
    if let Some(d) = &args.data_dir {
        config.data_dir = d.clone();
    }
    if let Some(h) = args.http {
        config.http = h;
    }
    if let Some(i) = &args.issuer {
        config.issuer = Some(
            portcullis_server::config::validate_issuer(i).map_err(|e| format!("--issuer: {e}"))?,
        );
    }
    if !args.radius.is_empty() {
        let mut listen = args.radius.clone();
        listen.dedup();
        config.radius.listen = listen;
    }
    if !args.radius_accounting.is_empty() {
        let mut listen = args.radius_accounting.clone();
        listen.dedup();
        config.radius.accounting_listen = listen;
    }
    if !args.radsec.is_empty() {
        if config.radius.radsec.is_none() {
            return Err(
                "--radsec needs a [radius.radsec] section (cert, key, client_ca) in --config"
                    .into(),
            );
        }
        let mut listen = args.radsec.clone();
        listen.dedup();
        config.radius.radsec_listen = listen;
    }
    Ok(config)
}

/// Run `portcullis serve`.
pub fn run(args: ServeArgs) -> ExitCode {
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => return super::fail(e),
    };
    portcullis_server::logging::init(&config.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return super::fail(format_args!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(serve(config, args))
}

/// What this server runs with, in a few lines at start-up: the settings an operator asks
/// about first (no secret is in `Config`; URLs are shown without credentials) and the
/// hash kernels this CPU got.
fn log_effective_config(c: &Config) {
    use portcullis_server::audit::Destination;
    let tls = c.tls.as_ref().map_or_else(
        || "off".to_owned(),
        |t| format!("certificate {}", t.cert.display()),
    );
    let v = &c.verifier;
    tracing::info!(
        "configuration: http {}, tls {tls}, request timeout {:?}, max connections {}, \
         hash pool {} threads, queue capacity {}, reject delay {} ms, policy {:?}",
        c.http,
        c.request_timeout,
        c.max_connections,
        v.resolved_pool_threads(),
        v.queue_capacity,
        v.reject_delay_ms,
        c.policy
    );
    let audit = match &c.audit.destination {
        Destination::Off => "off".to_owned(),
        Destination::Log => "log stream (target portcullis::audit)".to_owned(),
        Destination::File { path, .. } => format!("file {}", c.data_dir.join(path).display()),
    };
    tracing::info!(
        "audit events: {audit}, failures at most {} per source prefix per {:?}; log format {}, level {:?}",
        c.audit.per_source_limit,
        c.audit.interval,
        match c.log.format {
            portcullis_server::logging::LogFormat::Text => "text",
            portcullis_server::logging::LogFormat::Json => "json",
        },
        c.log.level
    );
    if !c.radius.listen.is_empty() {
        tracing::info!("RADIUS on {:?}", c.radius.listen);
    }
    for prf in [
        portcullis_hash::pbkdf2::Prf::Sha256,
        portcullis_hash::pbkdf2::Prf::Sha1,
        portcullis_hash::pbkdf2::Prf::Sha512,
    ] {
        let cal = portcullis_hash::batch::calibration(prf);
        tracing::info!(
            "hash kernel pbkdf2-{}: single stream {}, under load {} x{} ({:.2}x the single stream)",
            prf.name(),
            portcullis_hash::pbkdf2::backend_name(prf, portcullis_hash::pbkdf2::Backend::Auto),
            cal.best,
            cal.best_width,
            cal.best_speedup
        );
    }
}

async fn serve(config: Config, args: ServeArgs) -> ExitCode {
    log_effective_config(&config);
    let server = match portcullis_server::Server::start(config, None).await {
        Ok(s) => s,
        Err(e) => return super::fail(e),
    };
    let parts = std::sync::Arc::clone(server.parts());
    log_started(&server);
    tokio::spawn(super::reload::watch(
        std::sync::Arc::clone(&parts),
        move || args.config.is_some().then(|| load_config(&args)),
        server
            .backend()
            .map(|b| b.secrets_file())
            .unwrap_or_default(),
        parts.config.clone(),
    ));
    if std::env::var_os("NOTIFY_SOCKET").is_some() {
        notify_ready(server.local_addr(), &parts.config, server.issuer()).await;
    }
    let _watchdog = portcullis_server::systemd::spawn_watchdog();
    portcullis_server::shutdown_signal().await;
    portcullis_server::systemd::stopping();
    match server.shutdown().await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => super::fail(e),
    }
}

/// What an operator asks first once it runs: where it listens, the certificate, where
/// failure budgets live, how client addresses are read.
fn log_started(server: &portcullis_server::Server) {
    let parts = server.parts();
    if let Some(a) = server.admin_addr() {
        tracing::info!("admin API on {a} (/admin/v1/openapi.json)");
    }
    if let Some(t) = &parts.tls {
        match t.certs.facts() {
            Ok(f) => tracing::info!(
                "tls: serving certificate {}",
                portcullis_server::tls::facts::one_line(&f)
            ),
            Err(e) => tracing::warn!("tls: cannot describe the certificate: {e}"),
        }
    }
    match &parts.config.throttle_redis {
        None => tracing::info!("failure budgets: in this process"),
        Some(r) => tracing::info!(
            "failure budgets: shared in Redis at {} (keys {}:*; per instance while it is unreachable)",
            r.target.shown(),
            r.key_prefix
        ),
    }
    let issuer = server.issuer();
    tracing::info!(
        "listening on {}; issuer {issuer}, metadata {issuer}/.well-known/oauth-authorization-server",
        server.local_addr()
    );
    let proxies = &parts.config.trusted_proxies;
    if proxies.ranges.is_empty() {
        tracing::info!("client address: each connection's peer (no trusted_proxies)");
    } else {
        let ranges: Vec<String> = proxies.ranges.iter().map(|r| r.to_string()).collect();
        tracing::info!(
            "client address: from {:?} when the peer is a trusted proxy ({}), else the peer",
            proxies.header,
            ranges.join(", ")
        );
    }
}

/// READY=1 once the server answers its own `/readyz` (listeners bound, accept loop
/// running, store answering): what systemd orders dependent units after. A server that
/// cannot answer is not declared ready, so systemd's start timeout fails the unit.
async fn notify_ready(bound: SocketAddr, config: &Config, issuer: &str) {
    use portcullis_server::health;
    let (at, proxied) = health::probe_for(config, bound);
    let timeout = std::time::Duration::from_secs(30);
    match health::readyz(at, proxied, config.tls.as_ref(), timeout).await {
        Ok(_) => {
            tracing::info!("ready: /readyz answers on {at}");
            portcullis_server::systemd::ready(&format!("serving on {bound}, issuer {issuer}"));
        }
        Err(e) => {
            tracing::error!("not ready: {e}; not notifying systemd of readiness");
            portcullis_server::systemd::status(&format!("not ready: {e}"));
        }
    }
}
