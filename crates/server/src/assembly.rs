//! The one assembly: from a validated [`Config`] and an opened store, build the parts
//! every door shares (the verifier, the token issuer's state, audit, metrics, TLS,
//! shared throttle state, the reload registry) and hand each door the narrow context it
//! uses ([`Assembly::http`], [`Assembly::admin_context`], [`Assembly::radius_context`],
//! [`Assembly::ldap_context`]).
//! No door sees this struct; `portcullis serve`, the tests and the demo all start through
//! [`crate::Server`], which owns one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use metrics_exporter_prometheus::PrometheusHandle;
use portcullis_core::{
    CredentialSource, MemoryThrottleStore, SystemClock, ThrottleStore, Verifier,
};
use portcullis_door::audit::Audit;
use portcullis_door::reload::Reloads;
use portcullis_door::tls::client_certs::ClientCa;
use portcullis_door::tls::{TlsServer, TlsSettings};
use portcullis_door_admin::{AdminContext, AdminDoorConfig};
use portcullis_door_http::{Deployment, HttpConfig, HttpContext};
use portcullis_door_ldap::LdapContext;
use portcullis_door_radius::{RadiusContext, RadiusDoorConfig};
use portcullis_hash::Peppers;
use portcullis_oauth::OAuth;
use portcullis_oauth::cache::ClientCache;
use portcullis_oauth::keys::{KeyError, KeyManager, unix_now};
use portcullis_store::{
    AccountingStore, ClientStore, DataDir, GroupStore, Health, MasterKey, NasStore,
    RegistrationStore, RevocationStore, SessionStore, SigningKeyStore, Store, UserStore,
};
use thiserror::Error;

use crate::config::{Config, StoreBackend};

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

impl From<portcullis_door::DoorError> for ServerError {
    fn from(e: portcullis_door::DoorError) -> ServerError {
        match e {
            portcullis_door::DoorError::Config(s) => ServerError::Config(s),
            portcullis_door::DoorError::Store(e) => ServerError::Store(e),
            portcullis_door::DoorError::Io(e) => ServerError::Io(e),
        }
    }
}

/// The parts one server is assembled from. Owned by [`crate::Server`]; doors get their
/// contexts, never this.
pub struct Assembly {
    /// The validated configuration.
    pub config: Config,
    /// The verification core: every secret is checked through it.
    pub verifier: Verifier,
    /// The whole store (the assembly's maintenance, the tests' provisioning); each door
    /// gets the capabilities it uses.
    pub store: Arc<dyn Store>,
    /// The token issuer's state (issuer, keys, clients, client authentication).
    pub oauth: Arc<OAuth>,
    /// Opens secrets the store keeps sealed (NAS shared secrets).
    pub master_key: MasterKey,
    /// Where every authentication outcome is recorded (installed in the verifier).
    pub audit: Arc<Audit>,
    /// TLS settings of the HTTP and admin listeners (`[tls]`).
    pub tls: Option<TlsServer>,
    /// 802.1X: identities proven in TTLS sessions (Redis or memory).
    pub sessions: Arc<dyn SessionStore>,
    /// Parts that re-read their files on SIGHUP besides `[tls]`.
    pub reloads: Arc<Reloads>,
    /// CAs of admin client certificates (`[admin] client_ca`; issue 27).
    pub admin_ca: Option<Arc<ClientCa>>,
    /// The HTTP door's context (the HTTP door always runs: health, metrics, status).
    pub http: Arc<HttpContext>,
}

impl std::fmt::Debug for Assembly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembly")
            .field("issuer", &self.oauth.issuer)
            .finish_non_exhaustive()
    }
}

impl Assembly {
    /// Assemble a server over an opened data directory. `bound` is the HTTP listener's
    /// address, used to derive the issuer when the configuration does not set one.
    pub async fn from_data_dir(
        config: Config,
        data_dir: &DataDir,
        bound: SocketAddr,
    ) -> Result<Arc<Assembly>, ServerError> {
        let store: Arc<dyn Store> = data_dir.store();
        let (peppers, master) = (data_dir.peppers(), data_dir.master_key().clone());
        Assembly::new(config, store, peppers, master, bound).await
    }

    /// Assemble a server over any [`Store`] backend.
    pub async fn new(
        config: Config,
        store: Arc<dyn Store>,
        peppers: Peppers,
        master_key: MasterKey,
        bound: SocketAddr,
    ) -> Result<Arc<Assembly>, ServerError> {
        let tls = tls_server(&config, &master_key)?;
        let admin_ca = admin_ca(&config)?;
        let metrics = portcullis_door::metrics::install();
        portcullis_door_radius::socket::describe_metrics();
        let clients = client_cache(&config, &store).await?;
        let (throttle, nonces, sessions) = shared_state(&config)?;
        let issuer = issuer(&config, bound);
        let audience = config.audience.clone().unwrap_or_else(|| issuer.clone());
        let oauth = Arc::new(OAuth {
            issuer,
            audience,
            token_lifetime: config.token_lifetime,
            keys: KeyManager::load(
                Arc::clone(&store) as Arc<dyn SigningKeyStore>,
                master_key.clone(),
                config.key_rotation,
                config.token_lifetime,
                unix_now(),
            )
            .await?,
            clients: Arc::clone(&clients),
            key_cache: portcullis_oauth::client_auth::KeyCache::default(),
            nonces,
            client_auth: config.client_auth.clone(),
            client_ca: tls.as_ref().and_then(|t| t.client_ca.clone()),
            revocations: Arc::clone(&store) as Arc<dyn RevocationStore>,
        });
        let source: Arc<dyn CredentialSource> = clients;
        let verifier = Verifier::new(
            config.verifier.clone(),
            source,
            throttle,
            peppers,
            config.policy.clone(),
            Arc::new(SystemClock),
        )?;
        let audit = Audit::start(&config.audit, &config.data_dir)?;
        verifier.set_audit_sink(audit.clone());
        let http = Arc::new(HttpContext {
            config: http_config(&config),
            oauth: Arc::clone(&oauth),
            verifier: verifier.clone(),
            health: Arc::clone(&store) as Arc<dyn Health>,
            registrations: Arc::clone(&store) as Arc<dyn RegistrationStore>,
            client_records: Arc::clone(&store) as Arc<dyn ClientStore>,
            revocations: Arc::clone(&store) as Arc<dyn RevocationStore>,
            audit: Arc::clone(&audit),
            metrics,
            tls: tls.clone(),
            stats: portcullis_door_http::Stats::default(),
            started: Instant::now(),
            history: portcullis_door::history::History::default(),
            panels: parking_lot::RwLock::default(),
            tokens_issued: HttpContext::token_counters(),
        });
        Ok(Arc::new(Assembly {
            config,
            verifier,
            store,
            oauth,
            master_key,
            audit,
            tls,
            sessions,
            reloads: Arc::new(Reloads::default()),
            admin_ca,
            http,
        }))
    }

    /// The metrics recorder's renderer (`/metrics`).
    pub fn metrics(&self) -> &PrometheusHandle {
        &self.http.metrics
    }

    /// The admin door's context.
    pub fn admin_context(&self) -> Arc<AdminContext> {
        let c = &self.config;
        Arc::new(AdminContext {
            config: AdminDoorConfig {
                admin: c.admin.clone(),
                request_timeout: c.request_timeout,
                header_timeout: c.header_timeout,
                max_header_bytes: c.max_header_bytes,
                policy: c.policy.clone(),
            },
            oauth: Arc::clone(&self.oauth),
            verifier: self.verifier.clone(),
            store: Arc::clone(&self.store),
            master_key: self.master_key.clone(),
            audit: Arc::clone(&self.audit),
            admin_ca: self.admin_ca.clone(),
            tls: self.tls.clone(),
        })
    }

    /// The LDAP door's context, with its TLS: `[ldap.tls]` checked now, else `[tls]`'s
    /// certificate (reloaded with it), both without ALPN (LDAP clients send none, or
    /// not `http/1.1`).
    pub fn ldap_context(&self) -> Result<Arc<LdapContext>, ServerError> {
        let tls = match (&self.config.ldap.tls, &self.tls) {
            (Some(t), _) => Some(
                portcullis_door_ldap::tls_config(t)
                    .map_err(|e| ServerError::Config(format!("ldap.tls: {e}")))?,
            ),
            (None, Some(t)) => Some(portcullis_door_ldap::without_alpn(&t.config)),
            (None, None) => None,
        };
        Ok(Arc::new(LdapContext {
            config: self.config.ldap.clone(),
            verifier: self.verifier.clone(),
            users: Arc::clone(&self.store) as Arc<dyn UserStore>,
            credentials: Arc::clone(&self.oauth.clients) as Arc<dyn CredentialSource>,
            groups: Arc::clone(&self.store) as Arc<dyn GroupStore>,
            audit: Arc::clone(&self.audit) as Arc<dyn portcullis_core::AuditSink>,
            tls,
            reloads: Arc::clone(&self.reloads),
        }))
    }

    /// The RADIUS doors' context.
    pub fn radius_context(&self) -> Arc<RadiusContext> {
        Arc::new(RadiusContext {
            config: RadiusDoorConfig {
                radius: self.config.radius.clone(),
                accounting: self.config.accounting.clone(),
            },
            verifier: self.verifier.clone(),
            credentials: Arc::clone(&self.oauth.clients) as Arc<dyn CredentialSource>,
            nas: Arc::clone(&self.store) as Arc<dyn NasStore>,
            accounting: Arc::clone(&self.store) as Arc<dyn AccountingStore>,
            master_key: self.master_key.clone(),
            sessions: Arc::clone(&self.sessions),
            reloads: Arc::clone(&self.reloads),
        })
    }
}

/// `[tls]`, checked against the certificate now (not at the first handshake).
fn tls_server(config: &Config, master_key: &MasterKey) -> Result<Option<TlsServer>, ServerError> {
    let Some(t) = &config.tls else {
        return Ok(None);
    };
    let tickets = Some(master_key.derive("tls session tickets"));
    portcullis_door::tls::server_config(t, tickets)
        .map(Some)
        .map_err(|e| ServerError::Config(e.to_string()))
}

/// `[admin] client_ca`.
fn admin_ca(config: &Config) -> Result<Option<Arc<ClientCa>>, ServerError> {
    let Some(path) = &config.admin.client_ca else {
        return Ok(None);
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    ClientCa::load(path, provider)
        .map(|ca| Some(Arc::new(ca)))
        .map_err(|e| ServerError::Config(format!("admin.client_ca: {e}")))
}

/// The issuer: configured, or derived from the HTTP listener's address.
fn issuer(config: &Config, bound: SocketAddr) -> String {
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    config
        .issuer
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{bound}"))
}

/// Client records cached briefly, reading the PostgreSQL replica when one is configured.
async fn client_cache(
    config: &Config,
    store: &Arc<dyn Store>,
) -> Result<Arc<ClientCache>, ServerError> {
    let replica: Option<Arc<dyn Store>> = match (&config.store_read_url, &config.store) {
        (
            Some(url),
            StoreBackend::Postgres {
                max_connections, ..
            },
        ) => Some(Arc::new(
            portcullis_store::PgStore::connect_replica(url, *max_connections)
                .await
                .map_err(|e| ServerError::Config(format!("store.read_url: {e}")))?,
        )),
        _ => None,
    };
    Ok(Arc::new(ClientCache::with_replica(
        Arc::clone(store),
        replica,
        config.client_cache_ttl,
    )))
}

/// The HTTP door's settings from the configuration.
fn http_config(c: &Config) -> HttpConfig {
    HttpConfig {
        body_limit: c.body_limit,
        request_timeout: c.request_timeout,
        header_timeout: c.header_timeout,
        max_header_bytes: c.max_header_bytes,
        max_connections: c.max_connections,
        max_connections_per_source: c.max_connections_per_source,
        trusted_proxies: c.trusted_proxies.clone(),
        proxy_protocol: c.proxy_protocol,
        client_certificates: c.tls.as_ref().is_some_and(|t| t.client_certificates),
        hsts: c.tls.as_ref().and_then(TlsSettings::hsts),
        registration: c.registration.clone(),
        deployment: Deployment {
            store: match &c.store {
                StoreBackend::Sqlite => "SQLite (embedded)".to_string(),
                StoreBackend::Postgres { url, .. } => format!(
                    "PostgreSQL at {}",
                    portcullis_store::backend::without_credentials(url)
                ),
            },
            throttle: match &c.throttle_redis {
                None => "in this process".to_string(),
                Some(r) => format!("Redis at {}", r.target.shown()),
            },
        },
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
