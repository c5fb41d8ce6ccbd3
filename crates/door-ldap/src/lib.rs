//! The LDAP door (issue 39): applications (GitLab, Grafana, Keycloak, SSSD, Apache
//! `mod_authnz_ldap`) search for a user's entry and bind as the user with the password
//! typed; every bind is checked by the verification core, so a guessing wave is throttled
//! per source and per user like on every other door and never locks the user out of its
//! trusted places, and each bind costs one hash on the pool, never on a runtime thread.
//!
//! The protocol pieces (framing with limits, DNs, filters, responses) are the pure
//! `portcullis-ldap`; this crate owns the listeners and what they serve:
//!
//! - [`config`]: the `[ldap]` section.
//! - this module: binding the listeners, the accept loops with their connection limits.
//! - `conn`: one connection (PROXY header, TLS, reading, StartTLS, writing).
//! - `ops`: one request to its answer; `bind` (simple binds through the core),
//!   `search` (Search and Compare), `extended` (WhoAmI, Password Modify).
//! - [`directory`]: the entries the store's users and groups make; `access`: who may read
//!   what.
//! - [`stats`]: metrics and the status page's `ldap` panel.

pub mod access;
mod bind;
pub mod config;
mod conn;
pub mod context;
pub mod directory;
mod extended;
mod ops;
pub mod search;
pub mod stats;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use portcullis_door::conn_limit::PerSource;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::{FileLdap, LdapConfig};
pub use context::LdapContext;

/// The door's listeners, bound before anything starts.
#[derive(Debug, Default)]
pub struct LdapListeners {
    /// Plain LDAP (StartTLS when a certificate is configured).
    pub plain: Option<TcpListener>,
    /// LDAPS.
    pub tls: Option<TcpListener>,
}

impl LdapListeners {
    /// Whether there is any.
    pub fn is_empty(&self) -> bool {
        self.plain.is_none() && self.tls.is_none()
    }

    /// Their bound addresses: plain, then LDAPS.
    pub fn addresses(&self) -> (Option<SocketAddr>, Option<SocketAddr>) {
        let addr = |l: &Option<TcpListener>| l.as_ref().and_then(|l| l.local_addr().ok());
        (addr(&self.plain), addr(&self.tls))
    }
}

/// Bind `ldap.listen` and `ldap.listen_tls` (each error names its address).
pub async fn bind(config: &LdapConfig) -> std::io::Result<LdapListeners> {
    async fn one(a: Option<SocketAddr>) -> std::io::Result<Option<TcpListener>> {
        match a {
            None => Ok(None),
            Some(a) => TcpListener::bind(a)
                .await
                .map(Some)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{a}: {e}"))),
        }
    }
    Ok(LdapListeners {
        plain: one(config.listen).await?,
        tls: one(config.listen_tls).await?,
    })
}

/// The door's shared state.
pub struct LdapDoor {
    /// What the assembly gave it.
    pub ctx: Arc<LdapContext>,
    /// Where entries are under the base DN.
    pub layout: directory::Layout,
    /// The directory snapshot searches read.
    view: directory::View,
    /// Counters (metrics and the status panel).
    pub stats: Arc<stats::Stats>,
    /// TLS for LDAPS and StartTLS; replaced whole when `[ldap.tls]` is reloaded (SIGHUP).
    /// Connections already open keep theirs.
    acceptor: parking_lot::RwLock<Option<TlsAcceptor>>,
    /// Bound on open connections.
    limit: Arc<Semaphore>,
    /// Bound per source address.
    per_source: Arc<PerSource>,
    /// The next connection's number.
    next: AtomicU64,
}

impl std::fmt::Debug for LdapDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LdapDoor")
            .field("ctx", &self.ctx)
            .finish_non_exhaustive()
    }
}

impl LdapDoor {
    /// The door over `ctx`, counting into `stats`.
    pub fn new(ctx: Arc<LdapContext>, stats: Arc<stats::Stats>) -> Arc<LdapDoor> {
        stats::describe();
        let c = &ctx.config;
        let door = Arc::new(LdapDoor {
            layout: directory::Layout::new(&c.base),
            view: directory::View::new(c.directory_cache),
            acceptor: parking_lot::RwLock::new(ctx.tls.clone().map(TlsAcceptor::from)),
            limit: Arc::new(Semaphore::new(c.max_connections)),
            per_source: Arc::new(PerSource::new(c.max_connections_per_source)),
            next: AtomicU64::new(1),
            stats,
            ctx,
        });
        // Its own certificate re-reads on SIGHUP; [tls]'s is reloaded by the assembly and
        // shared (the same certificate store under both configurations).
        if door.ctx.config.tls.is_some() {
            door.ctx
                .reloads
                .register(Arc::clone(&door) as Arc<dyn portcullis_door::reload::Reloadable>);
        }
        door
    }

    fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The TLS acceptor in force (`None`: no certificate, no LDAPS or StartTLS).
    fn acceptor(&self) -> Option<TlsAcceptor> {
        self.acceptor.read().clone()
    }
}

/// The rustls configuration of `[ldap.tls]`, checked like `[tls]` at start-up (key, usage,
/// suites), without ALPN.
pub fn tls_config(
    settings: &portcullis_door::tls::TlsSettings,
) -> Result<Arc<rustls::ServerConfig>, portcullis_door::tls::TlsError> {
    Ok(without_alpn(
        &portcullis_door::tls::server_config(settings, None)?.config,
    ))
}

/// `config` without ALPN: LDAP clients offer none (or not `http/1.1`, which `[tls]`'s
/// configuration insists on), and rustls refuses a handshake whose offer does not meet it.
pub fn without_alpn(config: &rustls::ServerConfig) -> Arc<rustls::ServerConfig> {
    let mut c = config.clone();
    c.alpn_protocols = Vec::new();
    Arc::new(c)
}

impl portcullis_door::reload::Reloadable for LdapDoor {
    fn name(&self) -> &'static str {
        "ldap.tls"
    }

    /// Re-read `[ldap.tls]` with the start-up checks; on error the one in force stays.
    fn reload(&self) -> Result<String, String> {
        let Some(settings) = &self.ctx.config.tls else {
            return Ok("uses [tls]".into());
        };
        let config = tls_config(settings).map_err(|e| e.to_string())?;
        *self.acceptor.write() = Some(TlsAcceptor::from(config));
        Ok(format!("certificate {} re-read", settings.cert.display()))
    }
}

/// Serve `listeners` until `stop`; then stop accepting, let each connection answer what
/// it has in progress and send its Notice of Disconnection, and return.
pub async fn run(door: Arc<LdapDoor>, listeners: LdapListeners, stop: CancellationToken) {
    let tracker = TaskTracker::new();
    for (listener, ldaps) in [(listeners.plain, false), (listeners.tls, true)] {
        let Some(listener) = listener else { continue };
        if let Ok(a) = listener.local_addr() {
            let what = if ldaps { "LDAPS" } else { "LDAP" };
            tracing::info!("{what} listening on tcp {a}");
        }
        tracker.spawn(accept_loop(
            Arc::clone(&door),
            listener,
            ldaps,
            stop.clone(),
            tracker.clone(),
        ));
    }
    tracker.close();
    tracker.wait().await;
}

async fn accept_loop(
    door: Arc<LdapDoor>,
    listener: TcpListener,
    ldaps: bool,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    let mut backoff = Duration::from_millis(5);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning, keep serving.
                    tracing::warn!("LDAP accept failed: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
            () = stop.cancelled() => return,
        };
        backoff = Duration::from_millis(5);
        // Refused before TLS or any read: a full door costs a peer a closed socket.
        let Ok(permit) = Arc::clone(&door.limit).try_acquire_owned() else {
            door.stats.refused("limit");
            continue;
        };
        let held = if door.ctx.config.trusted_proxies.trusts(peer.ip()) {
            None
        } else {
            match PerSource::enter(&door.per_source, peer.ip()) {
                Some(h) => Some(h),
                None => {
                    door.stats.refused("per_source");
                    continue;
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let door = Arc::clone(&door);
        let stop = stop.clone();
        tracker.spawn(async move {
            conn::serve(door, stream, peer, ldaps, stop).await;
            drop((permit, held));
        });
    }
}
