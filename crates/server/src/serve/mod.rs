//! The one start-up path (mini-redis and pingora style): [`Listeners::bind`] binds what the
//! configuration names, [`Server::start`] opens the store, assembles the parts
//! ([`crate::Assembly`]) and starts every door on its listeners; [`run`] is the server
//! as a function of its listeners, its parts and a shutdown future. `portcullis serve`,
//! the tests and `portcullis demo` all start through here.
//!
//! Each door runs until the shared `stop` token is cancelled: the HTTP door
//! ([`portcullis_door_http::serve::run`]), the admin door, the RADIUS doors (PAP and
//! 802.1X, accounting, RadSec) and the LDAP door. Shutdown: when the future resolves,
//! every door stops accepting, every connection finishes its in-flight request and closes
//! (idle keep-alive connections close at once; LDAP connections get a Notice of
//! Disconnection), RADIUS requests finish, and `run` waits for them; then the core's pool
//! is drained and the audit trail flushed.

#[cfg(test)]
mod tests;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::assembly::{Assembly, ServerError};
use crate::config::Config;
use portcullis_door_radius::acct::AcctDoor;
use portcullis_door_radius::nas::StatsRegistry;
use portcullis_door_radius::{Radius, RadiusSocket};

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
    /// The LDAP door's listeners (`[ldap] listen`, `listen_tls`); none: no LDAP.
    pub ldap: portcullis_door_ldap::LdapListeners,
}

impl Listeners {
    /// Bind every listener `config` names; the HTTP one is `http` when given (a test's
    /// port 0), else `server.http`. Each error names what could not be bound.
    pub async fn bind(
        config: &Config,
        http: Option<TcpListener>,
    ) -> Result<Listeners, ServerError> {
        let http = match http {
            Some(l) => l,
            None => TcpListener::bind(config.http).await.map_err(|e| {
                ServerError::Config(format!("cannot listen on {}: {e}", config.http))
            })?,
        };
        let radius = portcullis_door_radius::bind(&config.radius)
            .map_err(|e| ServerError::Config(format!("cannot listen for RADIUS on {e}")))?;
        let accounting = portcullis_door_radius::acct::bind(&config.radius).map_err(|e| {
            ServerError::Config(format!("cannot listen for RADIUS accounting on {e}"))
        })?;
        let radsec = portcullis_door_radius::radsec::bind(&config.radius)
            .map_err(|e| ServerError::Config(format!("cannot listen for RadSec on {e}")))?;
        let admin = portcullis_door_admin::bind(&config.admin)
            .await
            .map_err(|e| ServerError::Config(format!("cannot listen for the admin API: {e}")))?;
        let ldap = portcullis_door_ldap::bind(&config.ldap)
            .await
            .map_err(|e| ServerError::Config(format!("cannot listen for LDAP on {e}")))?;
        Ok(Listeners {
            http,
            radius,
            accounting,
            radsec,
            admin,
            ldap,
        })
    }
}

/// Serve `parts` on `listeners` until `shutdown` resolves, then drain and return.
pub async fn run(
    listeners: Listeners,
    parts: Arc<Assembly>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    let doors = Doors::start(listeners, &parts).await?;
    shutdown.await;
    doors.drain(&parts).await;
    Ok(())
}

/// Every door of one server, started: their tasks and the token that stops them.
struct Doors {
    stop: CancellationToken,
    tracker: TaskTracker,
}

impl Doors {
    /// Start every door on its listeners (an error here is a start-up error: nothing is
    /// left running) and the assembly's background upkeep.
    async fn start(listeners: Listeners, parts: &Arc<Assembly>) -> Result<Doors, ServerError> {
        calibrate(parts);
        let stop = CancellationToken::new();
        let tracker = TaskTracker::new();
        let Listeners {
            http,
            radius,
            accounting,
            radsec,
            admin,
            ldap,
        } = listeners;
        let started = match start_radius(parts, (radius, accounting, radsec), &tracker, &stop).await
        {
            Ok(()) => start_ldap(parts, ldap, &tracker, &stop),
            Err(e) => Err(e),
        };
        if let Err(e) = started {
            stop.cancel();
            tracker.close();
            tracker.wait().await;
            return Err(e);
        }
        if let Some(admin) = admin {
            let ctx = parts.admin_context();
            let serve = portcullis_door_admin::serve::run(
                Arc::clone(&ctx),
                admin,
                tracker.clone(),
                stop.clone(),
            );
            tracker.spawn(serve);
            tracker.spawn(portcullis_door_admin::upkeep(ctx, stop.clone()));
        }
        tracker.spawn(portcullis_door::metrics::upkeep(
            parts.metrics().clone(),
            stop.clone(),
        ));
        tracker.spawn(maintenance(Arc::clone(parts), stop.clone()));
        tracker.spawn(Arc::clone(&parts.oauth.clients).follow_changes(stop.clone()));
        tracker.spawn(every_second(Arc::clone(parts), stop.clone()));
        tracker.spawn(portcullis_door_http::serve::run(
            Arc::clone(&parts.http),
            http,
            tracker.clone(),
            stop.clone(),
        ));
        Ok(Doors { stop, tracker })
    }

    /// Stop every door, let each connection and request finish, then drain the hash
    /// pool and flush the audit trail.
    async fn drain(self, parts: &Assembly) {
        tracing::info!("shutting down: draining connections");
        self.stop.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        // Hash threads finish what is queued; rehash-on-login upgrades already paid for land.
        parts.verifier.drain().await;
        // Every audit event of an answered request reaches its file before we return.
        let audit = Arc::clone(&parts.audit);
        let _ = tokio::task::spawn_blocking(move || audit.close()).await;
    }
}

/// Until the pool has timed a hash its figures are a configured guess (admission, CoDel,
/// an unknown principal's answer): time one of the policy now, beside the listeners
/// rather than before them.
fn calibrate(parts: &Assembly) {
    let verifier = parts.verifier.clone();
    tokio::spawn(async move {
        if let Some(took) = verifier.calibrate().await {
            tracing::info!(
                ms = took.as_secs_f64() * 1e3,
                "timed one hash of the policy for the pool's first estimates"
            );
        }
    });
}

/// The RADIUS doors, when any of their sockets is bound: PAP and 802.1X, accounting, and
/// RadSec (which serves authentication and accounting through the UDP doors' state, so
/// it needs both doors even when neither listens on UDP).
async fn start_radius(
    parts: &Assembly,
    (radius, accounting, radsec): (Vec<RadiusSocket>, Vec<RadiusSocket>, Vec<TcpListener>),
    tracker: &TaskTracker,
    stop: &CancellationToken,
) -> Result<(), ServerError> {
    if radius.is_empty() && accounting.is_empty() && radsec.is_empty() {
        return Ok(());
    }
    let stats = Arc::new(StatsRegistry::default());
    parts.http.panels.write().push(Arc::clone(&stats) as _);
    let ctx = parts.radius_context();
    let mut front = None;
    if !radius.is_empty() || !radsec.is_empty() {
        let door = Radius::new(Arc::clone(&ctx), Arc::clone(&stats)).await?;
        tracker.spawn(portcullis_door_radius::run(
            Arc::clone(&door),
            radius,
            stop.clone(),
        )?);
        front = Some(door);
    }
    let mut acct = None;
    if !accounting.is_empty() || !radsec.is_empty() {
        let (door, queue) = AcctDoor::new(Arc::clone(&ctx), Arc::clone(&stats)).await?;
        let writer =
            portcullis_door_radius::acct::start_writer(Arc::clone(&door), queue, stop.clone())
                .await?;
        tracker.spawn(portcullis_door_radius::acct::run(
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
        let door = portcullis_door_radius::radsec::RadsecDoor::new(front, acct)?;
        tracker.spawn(portcullis_door_radius::radsec::run(
            door,
            radsec,
            stop.clone(),
        ));
    }
    Ok(())
}

/// The LDAP door, when it has a listener, with its status panel.
fn start_ldap(
    parts: &Assembly,
    listeners: portcullis_door_ldap::LdapListeners,
    tracker: &TaskTracker,
    stop: &CancellationToken,
) -> Result<(), ServerError> {
    if listeners.is_empty() {
        return Ok(());
    }
    let stats = Arc::new(portcullis_door_ldap::stats::Stats::default());
    parts.http.panels.write().push(Arc::clone(&stats) as _);
    let door = portcullis_door_ldap::LdapDoor::new(parts.ldap_context()?, stats);
    tracker.spawn(portcullis_door_ldap::run(door, listeners, stop.clone()));
    Ok(())
}

/// Once a second: the status page's history sample, and the audit summaries of ended
/// rate-limit intervals (so a flood's summary appears even after the flood stops).
async fn every_second(parts: Arc<Assembly>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let t = u64::try_from(portcullis_door::unix_now()).unwrap_or(0);
                parts.http.history.tick(t, parts.verifier.snapshot());
                parts.audit.sweep(std::time::Instant::now());
            }
            () = stop.cancelled() => return,
        }
    }
}

/// Periodic housekeeping: signing key rotation and purging expired revocations.
async fn maintenance(parts: Arc<Assembly>, stop: CancellationToken) {
    let keys = &parts.oauth.keys;
    let mut tick = tokio::time::interval(keys.maintenance_interval());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let now = portcullis_door::unix_now();
        if let Err(e) = keys.maintain(now).await {
            tracing::error!("signing key maintenance failed: {e}");
        }
        if let Err(e) = parts.store.purge_revocations(now).await {
            tracing::error!("purging expired revocations failed: {e}");
        }
    }
}

/// A server running on a background task: `portcullis serve`, the tests and the demo.
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
    /// The LDAP door's plain and LDAPS addresses (`None`: that listener is off).
    ldap_addrs: (Option<SocketAddr>, Option<SocketAddr>),
    /// The assembled parts (store access for provisioning, metrics, reload).
    parts: Arc<Assembly>,
    /// The store it opened, closed after the last door stopped (`None`: the caller's).
    backend: Option<portcullis_store::Backend>,
    /// Cancelled to begin graceful shutdown.
    stop: CancellationToken,
    /// The task that drains the doors once `stop` is cancelled.
    task: JoinHandle<()>,
}

impl Server {
    /// The one start-up path: bind every listener the configuration names (the HTTP one
    /// is `http` when given, else `server.http`), open the store it names (the data
    /// directory's SQLite, or the shared PostgreSQL), assemble the parts and start every
    /// door. Returns once the server is accepting.
    pub async fn start(config: Config, http: Option<TcpListener>) -> Result<Server, ServerError> {
        let listeners = Listeners::bind(&config, http).await?;
        let backend = crate::assembly::open_store(&config).await?;
        tracing::info!("identity store: {}", backend.describe());
        let bound = listeners.http.local_addr()?;
        let parts = Assembly::new(
            config,
            backend.store(),
            backend.peppers(),
            backend.master_key().clone(),
            bound,
        )
        .await?;
        let mut server = Server::launch(listeners, parts).await?;
        server.backend = Some(backend);
        Ok(server)
    }

    /// Serve already assembled `parts` on `listeners` (tests that share a data directory
    /// between servers). Returns once every door is accepting; a door that cannot start
    /// is an error here.
    pub async fn launch(listeners: Listeners, parts: Arc<Assembly>) -> Result<Server, ServerError> {
        let addr = listeners.http.local_addr()?;
        let radius_addrs = portcullis_door_radius::addresses(&listeners.radius);
        let accounting_addrs = portcullis_door_radius::addresses(&listeners.accounting);
        let radsec_addrs = listeners
            .radsec
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect();
        let admin_addr = listeners.admin.as_ref().and_then(|l| l.local_addr().ok());
        let ldap_addrs = listeners.ldap.addresses();
        let doors = Doors::start(listeners, &parts).await?;
        let stop = CancellationToken::new();
        let signal = stop.clone();
        let drained = Arc::clone(&parts);
        let task = tokio::spawn(async move {
            signal.cancelled().await;
            doors.drain(&drained).await;
        });
        Ok(Server {
            addr,
            radius_addrs,
            accounting_addrs,
            radsec_addrs,
            admin_addr,
            ldap_addrs,
            parts,
            backend: None,
            stop,
            task,
        })
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

    /// The LDAP door's plain listener (`ldap://`; `None` when `[ldap] listen` is unset).
    pub fn ldap_addr(&self) -> Option<SocketAddr> {
        self.ldap_addrs.0
    }

    /// The LDAP door's LDAPS listener (`ldaps://`; `None` when `[ldap] listen_tls` is
    /// unset).
    pub fn ldaps_addr(&self) -> Option<SocketAddr> {
        self.ldap_addrs.1
    }

    /// The issuer URL, e.g. `http://127.0.0.1:41234`; endpoints hang off it.
    pub fn issuer(&self) -> &str {
        &self.parts.oauth.issuer
    }

    /// The assembled parts (e.g. `parts().store` to provision clients).
    pub fn parts(&self) -> &Arc<Assembly> {
        &self.parts
    }

    /// The store as opened by [`Server::start`] (`None` after [`Server::launch`]).
    pub fn backend(&self) -> Option<&portcullis_store::Backend> {
        self.backend.as_ref()
    }

    /// Stop accepting, finish in-flight requests, wait until everything has closed, then
    /// close the store this server opened.
    pub async fn shutdown(self) -> Result<(), ServerError> {
        self.stop.cancel();
        let result = self
            .task
            .await
            .map_err(|e| ServerError::Io(std::io::Error::other(e)));
        if let Some(b) = self.backend {
            b.close().await;
        }
        result
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
