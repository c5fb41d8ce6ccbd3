//! The HTTP door: the OAuth 2.0 token server over HTTP/TLS and the operator endpoints
//! beside it. Everything here maps core outcomes to HTTP answers; nothing below (the
//! core, the store, `portcullis-oauth`) knows about HTTP.
//!
//! - [`serve`]: the accept loop ([`serve::run`]): connection caps, PROXY protocol, TLS.
//! - [`routes`]: the router, discovery metadata, JWKS, health, readiness, metrics.
//! - [`oauth`]: token, introspection and revocation endpoints.
//! - [`register`]: RFC 7591 dynamic client registration and the RFC 7592 client
//!   configuration endpoint (`[registration]`).
//! - [`form`]: request body and client credential parsing (RFC 6749 rules).
//! - [`error`]: OAuth error answers; the only place errors become status codes.
//! - [`status`]: the live status page.
//!
//! It depends on the verifier, the store, `portcullis-door` and `portcullis-oauth` only,
//! through [`HttpContext`].
#![forbid(unsafe_code)]

pub mod error;
pub mod form;
pub mod oauth;
pub mod register;
pub mod routes;
pub mod serve;
pub mod status;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::PrometheusHandle;
use portcullis_core::Verifier;
use portcullis_door::audit::Audit;
use portcullis_door::forwarded::TrustedProxies;
use portcullis_door::history::History;
use portcullis_door::status::StatusPanel;
use portcullis_door::tls::TlsServer;
use portcullis_oauth::OAuth;
use portcullis_oauth::registration::config::RegistrationConfig;
use portcullis_store::{ClientStore, Health, RegistrationStore, RevocationStore};

pub use portcullis_door::http_conn::RequestId;

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

/// The HTTP door's settings: the `[server]` keys it reads, `[registration]`, and what
/// the status page says of the deployment.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// Time allowed for one request, from its head to its answer.
    pub request_timeout: Duration,
    /// Time allowed for the request head (and the TLS handshake before it).
    pub header_timeout: Duration,
    /// Largest request head, in bytes.
    pub max_header_bytes: usize,
    /// Connections served at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Connections one source address may hold (trusted proxies excepted).
    pub max_connections_per_source: usize,
    /// Load balancers whose forwarded client address is believed.
    pub trusted_proxies: TrustedProxies,
    /// Trusted proxies' connections start with a PROXY protocol v2 header.
    pub proxy_protocol: bool,
    /// `[tls] client_certificates`: clients may present certificates (RFC 8705).
    pub client_certificates: bool,
    /// The `Strict-Transport-Security` value of every answer (`[tls] hsts_max_age_secs`);
    /// `None`: plain HTTP, or turned off. The door serves HTTPS or plain HTTP, never
    /// both, so with `[tls]` every answer it gives goes over TLS.
    pub hsts: Option<String>,
    /// `[registration]`: dynamic client registration.
    pub registration: RegistrationConfig,
    /// The store and throttle backends, as the status page shows them.
    pub deployment: Deployment,
}

/// Which backends this instance uses, in words (status page).
#[derive(Debug, Clone, Default)]
pub struct Deployment {
    /// "SQLite (embedded)" or "PostgreSQL at host/db".
    pub store: String,
    /// "in this process" or "Redis at ...".
    pub throttle: String,
}

/// Everything the HTTP door's handlers use. One per server, behind an `Arc`.
pub struct HttpContext {
    /// Its settings.
    pub config: HttpConfig,
    /// The token issuer's state (keys, clients, client authentication).
    pub oauth: Arc<OAuth>,
    /// The verification core: every secret is checked through it.
    pub verifier: Verifier,
    /// `/readyz`: whether the store answers.
    pub health: Arc<dyn Health>,
    /// RFC 7591/7592 registrations and initial access tokens.
    pub registrations: Arc<dyn RegistrationStore>,
    /// Client records, read and removed by the RFC 7592 configuration endpoint.
    pub client_records: Arc<dyn ClientStore>,
    /// Revoked tokens (`/oauth2/revoke`).
    pub revocations: Arc<dyn RevocationStore>,
    /// Where every authentication outcome is recorded.
    pub audit: Arc<Audit>,
    /// Renders `/metrics`.
    pub metrics: PrometheusHandle,
    /// TLS settings (the certificate reloads on SIGHUP); `None`: plain HTTP.
    pub tls: Option<TlsServer>,
    /// Status page counters.
    pub stats: Stats,
    /// Start time, for uptime.
    pub started: Instant,
    /// The last 15 minutes, one sample per second, for the status page.
    pub history: History,
    /// Other doors' sections of `/status.json` (RADIUS), added as they start.
    pub panels: parking_lot::RwLock<Vec<Arc<dyn StatusPanel>>>,
    /// `tokens_issued_total` for the client_credentials and password grants, registered
    /// once (after the recorder is installed) so issuing a token does no label lookup.
    pub tokens_issued: [metrics::Counter; 2],
}

impl std::fmt::Debug for HttpContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpContext")
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

impl HttpContext {
    /// The per-grant token counters, registered once the recorder is installed.
    pub fn token_counters() -> [metrics::Counter; 2] {
        [
            portcullis_store::Grant::ClientCredentials,
            portcullis_store::Grant::Password,
        ]
        .map(|g| {
            metrics::counter!(portcullis_door::metrics::TOKENS_ISSUED, "grant_type" => g.as_str())
        })
    }
}
