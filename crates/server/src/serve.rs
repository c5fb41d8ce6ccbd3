//! The server's lifecycle and the HTTP accept loop (mini-redis style): [`run`] takes the
//! bound listeners (TCP for HTTP, UDP sockets for RADIUS), the assembled [`App`] and a
//! shutdown future, and returns once every connection and RADIUS request has finished.
//! [`Server`] wraps it for embedding (tests, `portcullis demo`).
//!
//! Shutdown: when the future resolves the listener is dropped (no new connections), every
//! connection is told to finish its in-flight request and close (idle keep-alive
//! connections close at once), and `run` waits for them; then the core's pool is stopped.
//! Connections are bounded by a semaphore: beyond `max_connections` new ones wait in the
//! kernel backlog instead of exhausting memory or file descriptors.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::app::{App, ServerError};
use crate::client_auth::mtls::ClientCerts;
use crate::config::Config;
use crate::conn_limit::PerSource;
use crate::http::oauth::Peer;
use crate::keys::unix_now;
use crate::radius::acct::AcctDoor;
use crate::radius::nas::StatsRegistry;
use crate::radius::{Radius, RadiusSocket};

/// What the server listens on: bound before [`run`], so a caller knows the addresses (and
/// a port conflict is an error before anything starts).
#[derive(Debug)]
pub struct Listeners {
    /// The HTTP (OAuth) listener.
    pub http: TcpListener,
    /// RADIUS sockets; empty: no RADIUS.
    pub radius: Vec<RadiusSocket>,
    /// RADIUS accounting sockets; empty: no accounting.
    pub accounting: Vec<RadiusSocket>,
    /// RadSec (RADIUS over TLS) listeners; empty: no RadSec.
    pub radsec: Vec<TcpListener>,
    /// The admin API listener (`[admin] listen`); `None`: no admin API.
    pub admin: Option<TcpListener>,
}

/// Serve `app` on `listeners` until `shutdown` resolves, then drain and return.
pub async fn run(
    listeners: Listeners,
    app: Arc<App>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    // Until the pool has timed a hash its figures are a configured guess (admission,
    // CoDel, an unknown principal's answer): time one of the policy now, beside the
    // listeners rather than before them. Here, so `portcullis serve` and
    // `Server::start` both do it.
    let verifier = app.verifier.clone();
    tokio::spawn(async move {
        if let Some(took) = verifier.calibrate().await {
            tracing::info!(
                ms = took.as_secs_f64() * 1e3,
                "timed one hash of the policy for the pool's first estimates"
            );
        }
    });
    let Listeners {
        http: listener,
        radius,
        accounting,
        radsec,
        admin,
    } = listeners;
    let tls = app
        .tls
        .as_ref()
        .map(|t| TlsAcceptor::from(Arc::clone(&t.config)));
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let radius_stats = if radius.is_empty() && accounting.is_empty() && radsec.is_empty() {
        None
    } else {
        Some(Arc::new(StatsRegistry::default()))
    };
    if let Some(stats) = &radius_stats {
        // RadSec serves authentication and accounting through the UDP doors' state, so
        // it needs both doors even when neither listens on UDP.
        let mut front = None;
        if !radius.is_empty() || !radsec.is_empty() {
            let door = Radius::new(Arc::clone(&app), Arc::clone(stats)).await?;
            tracker.spawn(crate::radius::run(Arc::clone(&door), radius, stop.clone())?);
            front = Some(door);
        }
        let mut acct = None;
        if !accounting.is_empty() || !radsec.is_empty() {
            let (door, queue) = AcctDoor::new(Arc::clone(&app), Arc::clone(stats)).await?;
            let writer =
                crate::radius::acct::start_writer(Arc::clone(&door), queue, stop.clone()).await?;
            tracker.spawn(crate::radius::acct::run(
                Arc::clone(&door),
                writer,
                accounting,
                stop.clone(),
            )?);
            acct = Some(door);
        }
        if let (Some(front), Some(acct)) = (front, acct)
            && !radsec.is_empty()
        {
            let door = crate::radius::radsec::RadsecDoor::new(front, acct)?;
            tracker.spawn(crate::radius::radsec::run(door, radsec, stop.clone()));
        }
    }
    if let Some(admin) = admin {
        tracker.spawn(admin_accept(
            admin,
            Arc::clone(&app),
            tls.clone(),
            tracker.clone(),
            stop.clone(),
        ));
        tracker.spawn(crate::admin::upkeep(Arc::clone(&app), stop.clone()));
    }
    let router = crate::http::routes::router(Arc::clone(&app), radius_stats);
    tracker.spawn(crate::metrics::upkeep(app.metrics.clone(), stop.clone()));
    tracker.spawn(maintenance(Arc::clone(&app), stop.clone()));
    tracker.spawn(Arc::clone(&app.clients).follow_changes(stop.clone()));
    tracker.spawn(every_second(Arc::clone(&app), stop.clone()));
    let limit = Arc::new(Semaphore::new(app.config.max_connections));
    let per_source = Arc::new(PerSource::new(app.config.max_connections_per_source));
    tokio::pin!(shutdown);
    let mut backoff = Duration::from_millis(5);
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&limit).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning, keep serving.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        backoff = Duration::from_millis(5);
        // One host may hold only so many connections (a balancer may hold more).
        let held = if app.config.trusted_proxies.trusts(peer.ip()) {
            None
        } else {
            match PerSource::enter(&per_source, peer.ip()) {
                Some(h) => Some(h),
                None => {
                    crate::metrics::connection_refused("per_source");
                    drop(stream);
                    continue;
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let stop = stop.clone();
        let tls = tls.clone();
        let stats_app = Arc::clone(&app);
        let header_timeout = app.config.header_timeout;
        let max_header_bytes = app.config.max_header_bytes;
        // PROXY protocol: only a trusted balancer's connections carry (and must carry)
        // the header naming the client.
        let proxied = app.config.proxy_protocol && app.config.trusted_proxies.trusts(peer.ip());
        tracker.spawn(async move {
            let _permit = permit;
            let _held = held;
            let mut stream = stream;
            let peer = if proxied {
                let read = crate::http::proxy_protocol::read(&mut stream, peer);
                match tokio::time::timeout(header_timeout, read).await {
                    Ok(Ok(client)) => client,
                    Ok(Err(e)) => return tracing::debug!(%peer, "closing: {e}"),
                    Err(_) => return tracing::debug!(%peer, "PROXY protocol header timed out"),
                }
            } else {
                peer
            };
            match tls {
                None => {
                    serve_connection(
                        stream,
                        (peer, None),
                        router,
                        (header_timeout, max_header_bytes),
                        stop,
                    )
                    .await
                }
                Some(acceptor) => {
                    match tokio::time::timeout(header_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(s)) => {
                            let conn = s.get_ref().1;
                            let resumed = crate::metrics::tls_handshake(conn);
                            stats_app.stats.tls_handshakes[usize::from(resumed)]
                                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let certs = conn
                                .peer_certificates()
                                .filter(|c| !c.is_empty())
                                .map(|c| ClientCerts(Arc::new(c.to_vec())));
                            serve_connection(
                                s,
                                (peer, certs),
                                router,
                                (header_timeout, max_header_bytes),
                                stop,
                            )
                            .await
                        }
                        Ok(Err(e)) => {
                            metrics::counter!(crate::metrics::TLS_HANDSHAKE_FAILURES).increment(1);
                            tracing::debug!(%peer, "TLS handshake failed: {e}")
                        }
                        Err(_) => {
                            metrics::counter!(crate::metrics::TLS_HANDSHAKE_FAILURES).increment(1);
                            tracing::debug!(%peer, "TLS handshake timed out")
                        }
                    }
                }
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: draining connections");
    stop.cancel();
    tracker.close();
    tracker.wait().await;
    // Hash threads finish what is queued; rehash-on-login upgrades already paid for land.
    app.verifier.drain().await;
    // Every audit event of an answered request reaches its file before we return.
    let audit = Arc::clone(&app.audit);
    let _ = tokio::task::spawn_blocking(move || audit.close()).await;
    Ok(())
}

/// The admin door's accept loop (issue 27): its own router, at most
/// `admin.max_connections` connections, the same header timeout and TLS as the HTTP
/// door (with `[tls]`, the admin listener speaks TLS too). No PROXY protocol and no
/// forwarded headers: the admin listener is reached directly.
async fn admin_accept(
    listener: TcpListener,
    app: Arc<App>,
    tls: Option<TlsAcceptor>,
    tracker: TaskTracker,
    stop: CancellationToken,
) {
    let router = crate::admin::router(Arc::clone(&app));
    let limit = Arc::new(Semaphore::new(app.config.admin.max_connections));
    let header_timeout = app.config.header_timeout;
    let max_header_bytes = app.config.max_header_bytes;
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&limit).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            () = stop.cancelled() => return,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!("admin accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let stop = stop.clone();
        let tls = tls.clone();
        tracker.spawn(async move {
            let _permit = permit;
            let limits = (header_timeout, max_header_bytes);
            match tls {
                None => serve_connection(stream, (peer, None), router, limits, stop).await,
                Some(acceptor) => {
                    match tokio::time::timeout(header_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(s)) => {
                            let certs = s
                                .get_ref()
                                .1
                                .peer_certificates()
                                .filter(|c| !c.is_empty())
                                .map(|c| ClientCerts(Arc::new(c.to_vec())));
                            serve_connection(s, (peer, certs), router, limits, stop).await
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "admin TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "admin TLS handshake timed out"),
                    }
                }
            }
        });
    }
}

/// Once a second: the status page's history sample, and the audit summaries of ended
/// rate-limit intervals (so a flood's summary appears even after the flood stops).
async fn every_second(app: Arc<App>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let t = u64::try_from(crate::keys::unix_now()).unwrap_or(0);
                app.history.tick(t, app.verifier.snapshot());
                app.audit.sweep(std::time::Instant::now());
            }
            () = stop.cancelled() => return,
        }
    }
}

async fn serve_connection<S>(
    io: S,
    (peer, certs): (SocketAddr, Option<ClientCerts>),
    router: axum::Router,
    (header_timeout, max_header_bytes): (Duration, usize),
    stop: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(Peer(peer));
        if let Some(c) = &certs {
            req.extensions_mut().insert(c.clone());
        }
        router.clone().oneshot(req.map(axum::body::Body::new))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(max_header_bytes)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, "connection ended with error: {e}");
    }
}

/// Periodic housekeeping: signing key rotation and purging expired revocations.
async fn maintenance(app: Arc<App>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(app.keys.maintenance_interval());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let now = unix_now();
        if let Err(e) = app.keys.maintain(now).await {
            tracing::error!("signing key maintenance failed: {e}");
        }
        if let Err(e) = app.store.purge_revocations(now).await {
            tracing::error!("purging expired revocations failed: {e}");
        }
    }
}

/// A server running on a background task, for embedding (tests, `portcullis demo`).
#[derive(Debug)]
pub struct Server {
    /// The address it listens on.
    addr: SocketAddr,
    /// The RADIUS sockets' addresses (empty: RADIUS off).
    radius_addrs: Vec<SocketAddr>,
    /// The accounting sockets' addresses (empty: accounting off).
    accounting_addrs: Vec<SocketAddr>,
    /// The RadSec listeners' addresses (empty: RadSec off).
    radsec_addrs: Vec<SocketAddr>,
    /// The admin listener's address (`None`: admin API off).
    admin_addr: Option<SocketAddr>,
    /// Issuer URL (base URL of the endpoints).
    issuer: String,
    /// The shared state (store access for provisioning, metrics).
    app: Arc<App>,
    /// Cancelled to begin graceful shutdown.
    stop: CancellationToken,
    /// The task running [`run`].
    task: JoinHandle<Result<(), ServerError>>,
}

impl Server {
    /// Open the store the configuration names (the data directory's SQLite, or the
    /// shared PostgreSQL) and serve on `listener`, and on RADIUS if `config.radius.listen`
    /// names addresses. Returns once the server is accepting.
    pub async fn start(config: Config, listener: TcpListener) -> Result<Server, ServerError> {
        let backend = crate::app::open_store(&config).await?;
        let addr = listener.local_addr()?;
        let radius = crate::radius::bind(&config.radius)?;
        let accounting = crate::radius::acct::bind(&config.radius)?;
        let radsec = crate::radius::radsec::bind(&config.radius)?;
        let admin = crate::admin::bind(&config.admin).await?;
        let app = App::new(
            config,
            backend.store(),
            backend.peppers(),
            backend.master_key().clone(),
            addr,
        )
        .await?;
        Ok(Server::spawn(
            Listeners {
                http: listener,
                radius,
                accounting,
                radsec,
                admin,
            },
            app,
        ))
    }

    /// Serve an already assembled [`App`] on `listeners`.
    pub fn spawn(listeners: Listeners, app: Arc<App>) -> Server {
        let addr = listeners
            .http
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let radius_addrs = crate::radius::addresses(&listeners.radius);
        let accounting_addrs = crate::radius::addresses(&listeners.accounting);
        let radsec_addrs = listeners
            .radsec
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect();
        let admin_addr = listeners.admin.as_ref().and_then(|l| l.local_addr().ok());
        let stop = CancellationToken::new();
        let signal = stop.clone();
        let task = tokio::spawn(run(listeners, Arc::clone(&app), async move {
            signal.cancelled().await;
        }));
        Server {
            addr,
            radius_addrs,
            accounting_addrs,
            radsec_addrs,
            admin_addr,
            issuer: app.issuer.clone(),
            app,
            stop,
            task,
        }
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The RADIUS sockets' bound addresses (empty when RADIUS is off).
    pub fn radius_addrs(&self) -> &[SocketAddr] {
        &self.radius_addrs
    }

    /// The accounting sockets' bound addresses (empty when accounting is off).
    pub fn accounting_addrs(&self) -> &[SocketAddr] {
        &self.accounting_addrs
    }

    /// The RadSec listeners' bound addresses (empty when RadSec is off).
    pub fn radsec_addrs(&self) -> &[SocketAddr] {
        &self.radsec_addrs
    }

    /// The admin listener's bound address (`None` when the admin API is off).
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// The issuer URL, e.g. `http://127.0.0.1:41234`; endpoints hang off it.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The shared state (e.g. `app().store` to provision clients).
    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// Stop accepting, finish in-flight requests, and wait until everything has closed.
    pub async fn shutdown(self) -> Result<(), ServerError> {
        self.stop.cancel();
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(ServerError::Io(std::io::Error::other(e))),
        }
    }
}

/// Resolves on SIGINT or SIGTERM (the process's shutdown signal for [`run`]).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for SIGINT: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rustls::pki_types::ServerName;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::health::Pinned;
    use crate::tls::TlsSettings;

    fn tls_fixtures() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls")
    }

    /// A fresh data dir and a config serving TLS 1.2 and 1.3 with fixture `name`.crt/.key.
    async fn tls_setup(name: &str) -> (tempfile::TempDir, portcullis_store::DataDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let data = portcullis_store::DataDir::open(dir.path()).await.unwrap();
        let config = Config {
            data_dir: dir.path().to_path_buf(),
            tls: Some(TlsSettings::new(
                tls_fixtures().join(format!("{name}.crt")),
                tls_fixtures().join(format!("{name}.key")),
            )),
            ..Config::default()
        };
        (dir, data, config)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn issue_5_serves_https_with_both_configured_versions() {
        let fixtures = tls_fixtures();
        let (_dir, data, config) = tls_setup("ec_server").await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = App::from_data_dir(config, &data, addr).await.unwrap();
        let server = Server::spawn(
            Listeners {
                http: listener,
                radius: Vec::new(),
                accounting: Vec::new(),
                radsec: Vec::new(),
                admin: None,
            },
            app,
        );
        assert!(server.issuer().starts_with("https://"));

        let pem = std::fs::read(fixtures.join("ec_server.crt")).unwrap();
        let cert = rustls_pemfile::certs(&mut &pem[..])
            .next()
            .unwrap()
            .unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let client = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
                .with_protocol_versions(&[version])
                .unwrap()
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Pinned::new(
                    cert.clone(),
                    Arc::clone(&provider),
                )))
                .with_no_client_auth();
            let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut tls = connector
                .connect(ServerName::try_from("localhost").unwrap(), tcp)
                .await
                .unwrap();
            assert_eq!(tls.get_ref().1.protocol_version(), Some(version.version));
            tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut out = Vec::new();
            let _ = tls.read_to_end(&mut out).await;
            assert!(
                out.starts_with(b"HTTP/1.1 200"),
                "{:?}",
                String::from_utf8_lossy(&out)
            );
        }
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn issue_5_certificate_unfit_for_the_suites_stops_startup() {
        let (_dir, data, config) = tls_setup("rsa_keyencipherment_only").await;
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let err = App::from_data_dir(config, &data, addr).await.unwrap_err();
        assert!(err.to_string().contains("digitalSignature"), "{err}");
    }
}
