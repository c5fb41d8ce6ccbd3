//! The shared state of a running server ([`App`]) and how it is assembled from a
//! configuration and a store.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use metrics_exporter_prometheus::PrometheusHandle;
use portcullis_core::{
    CredentialSource, MemoryThrottleStore, SystemClock, ThrottleStore, Verifier,
};
use portcullis_hash::Peppers;
use portcullis_store::{DataDir, Grant, MasterKey, Store};
use thiserror::Error;

use crate::cache::ClientCache;
use crate::config::Config;
use crate::keys::{KeyError, KeyManager, unix_now};

/// The server could not be assembled or started.
#[derive(Debug, Error)]
pub enum ServerError {
    /// Configuration problem (including TLS files and certificate checks).
    #[error("{0}")]
    Config(String),
    /// The data directory or store failed.
    #[error("store: {0}")]
    Store(#[from] portcullis_store::StoreError),
    /// Signing keys could not be loaded or created.
    #[error(transparent)]
    Keys(#[from] KeyError),
    /// The verification core refused its configuration or could not start.
    #[error("verifier: {0}")]
    Core(#[from] portcullis_core::CoreError),
    /// Binding or serving failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Counters for the status page that Prometheus does not give cheaply.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests being handled right now.
    pub in_flight: AtomicU64,
    /// Access tokens issued since start.
    pub tokens_issued: AtomicU64,
    /// Requests answered since start.
    pub requests: AtomicU64,
    /// TLS handshakes completed since start: full, and resumed from a ticket or session
    /// id (also on `/metrics`, which several servers in one process share).
    pub tls_handshakes: [AtomicU64; 2],
}

/// Everything a request handler needs. One per server; shared behind an `Arc`.
pub struct App {
    /// The validated configuration.
    pub config: Config,
    /// `iss` of our tokens and base of the metadata URLs (no trailing slash).
    pub issuer: String,
    /// `aud` of our tokens.
    pub audience: String,
    /// The verification core: every secret is checked through it.
    pub verifier: Verifier,
    /// The identity store (clients, users, keys, revocations).
    pub store: Arc<dyn Store>,
    /// Client records, cached briefly (also the core's credential source).
    pub clients: Arc<ClientCache>,
    /// Signing keys and their rotation.
    pub keys: KeyManager,
    /// Opens secrets the store keeps sealed (RADIUS shared secrets; signing keys are
    /// opened by `keys`).
    pub master_key: MasterKey,
    /// Renders `/metrics`.
    pub metrics: PrometheusHandle,
    /// Status page counters.
    pub stats: Stats,
    /// Start time, for uptime.
    pub started: Instant,
    /// TLS settings, checked against the certificate at assembly (not at first
    /// handshake); the certificate reloads on SIGHUP; client CAs for RFC 8705.
    pub tls: Option<crate::tls::TlsServer>,
    /// Used `private_key_jwt` assertion ids until they expire: Redis when the budgets
    /// are there (so replays to another instance fail), else this process's memory.
    pub nonces: Arc<dyn portcullis_store::NonceStore>,
    /// 802.1X: identities proven in TTLS sessions, for resumed logins (Redis when the
    /// budgets are there, so a device roaming to another instance resumes; else memory).
    pub sessions: Arc<dyn portcullis_store::SessionStore>,
    /// Parsed client public keys (`private_key_jwt`).
    pub key_cache: crate::client_auth::KeyCache,
    /// `tokens_issued_total` for the client_credentials and password grants, registered
    /// once (after the recorder is installed) so issuing a token does no label lookup.
    pub tokens_issued: [metrics::Counter; 2],
    /// Where every authentication outcome is recorded (installed in the verifier; the
    /// RADIUS door reports its drops and duplicates here too).
    pub audit: Arc<crate::audit::Audit>,
    /// The last 15 minutes, one sample per second, for the status page.
    pub history: crate::history::History,
    /// Parts that re-read their files on SIGHUP besides `[tls]` (the 802.1X door's
    /// certificate and CRLs), registered by whoever owns them, so a reload reaches them
    /// without `App` knowing each door.
    pub reloadable: parking_lot::Mutex<Vec<Arc<dyn Reloadable>>>,
    /// CAs of admin client certificates (`[admin] client_ca`; issue 27).
    pub admin_ca: Option<Arc<crate::tls::client_certs::ClientCa>>,
}

/// Something that re-reads its files on SIGHUP. On a failed check it keeps what it had
/// and says so in the returned error; the caller logs the outcome.
pub trait Reloadable: Send + Sync {
    /// What it is, for the log ("radius.eap").
    fn name(&self) -> &'static str;
    /// Re-read and check; `Ok` with a one-line description of what is now in force.
    fn reload(&self) -> Result<String, String>;
}

impl App {
    /// Reload every registered part; returns (name, outcome) for the log.
    pub fn reload_parts(&self) -> Vec<(&'static str, Result<String, String>)> {
        let parts: Vec<Arc<dyn Reloadable>> = self.reloadable.lock().clone();
        parts.iter().map(|p| (p.name(), p.reload())).collect()
    }
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("issuer", &self.issuer)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Assemble a server over an opened data directory. `bound` is the listener's address,
    /// used to derive the issuer when the configuration does not set one.
    pub async fn from_data_dir(
        config: Config,
        data_dir: &DataDir,
        bound: SocketAddr,
    ) -> Result<Arc<App>, ServerError> {
        let store: Arc<dyn Store> = data_dir.store();
        App::new(
            config,
            store,
            data_dir.peppers(),
            data_dir.master_key().clone(),
            bound,
        )
        .await
    }

    /// Assemble a server over any [`Store`] backend.
    pub async fn new(
        config: Config,
        store: Arc<dyn Store>,
        peppers: Peppers,
        master_key: MasterKey,
        bound: SocketAddr,
    ) -> Result<Arc<App>, ServerError> {
        let tls = match &config.tls {
            Some(t) => Some(
                crate::tls::server_config(t, Some(master_key.derive("tls session tickets")))
                    .map_err(|e| ServerError::Config(e.to_string()))?,
            ),
            None => None,
        };
        let admin_ca = match &config.admin.client_ca {
            None => None,
            Some(path) => Some(Arc::new(
                crate::tls::client_certs::ClientCa::load(
                    path,
                    Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
                )
                .map_err(|e| ServerError::Config(format!("admin.client_ca: {e}")))?,
            )),
        };
        let metrics = crate::metrics::install();
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let issuer = config
            .issuer
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{bound}"));
        let audience = config.audience.clone().unwrap_or_else(|| issuer.clone());
        let replica: Option<Arc<dyn portcullis_store::Store>> =
            match (&config.store_read_url, &config.store) {
                (
                    Some(url),
                    crate::config::StoreBackend::Postgres {
                        max_connections, ..
                    },
                ) => Some(Arc::new(
                    portcullis_store::PgStore::connect_replica(url, *max_connections)
                        .await
                        .map_err(|e| ServerError::Config(format!("store.read_url: {e}")))?,
                )),
                _ => None,
            };
        let clients = Arc::new(ClientCache::with_replica(
            Arc::clone(&store),
            replica,
            config.client_cache_ttl,
        ));
        let keys = KeyManager::load(
            Arc::clone(&store),
            master_key.clone(),
            config.key_rotation,
            config.token_lifetime,
            unix_now(),
        )
        .await?;
        let source: Arc<dyn CredentialSource> = clients.clone();
        let (throttle, nonces, sessions) = shared_state(&config)?;
        let verifier = Verifier::new(
            config.verifier.clone(),
            source,
            throttle,
            peppers,
            config.policy.clone(),
            Arc::new(SystemClock),
        )?;
        let audit = crate::audit::Audit::start(&config.audit, &config.data_dir)?;
        verifier.set_audit_sink(audit.clone());
        Ok(Arc::new(App {
            config,
            issuer,
            audience,
            verifier,
            store,
            clients,
            keys,
            master_key,
            metrics,
            stats: Stats::default(),
            started: Instant::now(),
            tls,
            nonces,
            sessions,
            key_cache: crate::client_auth::KeyCache::default(),
            tokens_issued: [Grant::ClientCredentials, Grant::Password].map(
                |g| metrics::counter!(crate::metrics::TOKENS_ISSUED, "grant_type" => g.as_str()),
            ),
            audit,
            history: crate::history::History::default(),
            reloadable: parking_lot::Mutex::new(Vec::new()),
            admin_ca,
        }))
    }
}

/// Where failure budgets, used assertion ids and 802.1X session identities live: Redis shared by every instance when
/// configured (one connection for both), else this process's memory. The core keeps a
/// per-instance fallback for budgets either way; assertion ids have none (see
/// `portcullis_store::nonce`).
type SharedState = (
    Arc<dyn ThrottleStore>,
    Arc<dyn portcullis_store::NonceStore>,
    Arc<dyn portcullis_store::SessionStore>,
);

fn shared_state(config: &Config) -> Result<SharedState, ServerError> {
    Ok(match &config.throttle_redis {
        Some(r) => {
            let redis = Arc::new(
                portcullis_store::RedisThrottleStore::new(r)
                    .map_err(|e| ServerError::Config(e.to_string()))?,
            );
            (redis.clone(), redis.clone(), redis)
        }
        None => (
            Arc::new(MemoryThrottleStore::default()),
            Arc::new(portcullis_store::MemoryNonceStore::new(
                config.client_auth.replay_cache_entries,
            )),
            Arc::new(portcullis_store::MemorySessionStore::new(
                config
                    .radius
                    .eap
                    .as_ref()
                    .map_or(1, |e| e.max_conversations.max(65_536)),
            )),
        ),
    })
}

/// Open the identity store the configuration names (SQLite in the data directory, or the
/// shared PostgreSQL with its secrets file).
pub async fn open_store(config: &Config) -> Result<portcullis_store::Backend, ServerError> {
    use crate::config::StoreBackend;
    match &config.store {
        StoreBackend::Sqlite => portcullis_store::Backend::sqlite(&config.data_dir)
            .await
            .map_err(|e| {
                ServerError::Config(format!(
                    "cannot open data directory {}: {e}",
                    config.data_dir.display()
                ))
            }),
        StoreBackend::Postgres {
            url,
            secrets_file,
            max_connections,
        } => portcullis_store::Backend::postgres(url, secrets_file, *max_connections)
            .await
            .map_err(|e| {
                ServerError::Config(format!(
                    "cannot open the PostgreSQL store at {}: {e}",
                    portcullis_store::backend::without_credentials(url)
                ))
            }),
    }
}
