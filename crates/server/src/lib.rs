//! The two front doors over the verification core: the OAuth 2.0 token server over HTTP
//! ([`http`]) and RADIUS over UDP ([`radius`]), both over one shared application state
//! ([`App`]), with the typed configuration, metrics and lifecycle they share.
//!
//! Module map:
//! - [`http`]: the HTTP front door (router, OAuth endpoints, forms, OAuth errors, status).
//! - [`radius`]: the RADIUS front door (UDP listeners, NAS table, duplicate cache, PAP,
//!   EAP, accounting, and RadSec: RADIUS over TLS).
//! - [`conn_limit`]: per-source connection limits of the TCP doors (HTTP, RadSec).
//! - [`admin`]: the admin door (issue 27): JSON REST API on its own listener.
//! - [`apply`]: configuration as code, `portcullis apply FILE`: the declared clients,
//!   users and NAS, the plan against the store, carried out with compare-and-set.
//! - [`registration`]: dynamic client registration without HTTP: `[registration]`,
//!   software statements, the client metadata rules (endpoints in `http::register`).
//! - [`config`]: the TOML configuration, its documented example, validation.
//! - [`tls`]: rustls settings and the certificate / cipher-suite start-up check.
//! - [`app`]: [`App`], the state shared by all requests, assembled from config + store.
//! - [`serve`]: the accept loop [`run`], graceful shutdown, and [`Server`] for embedding.
//! - [`jwt`]: RFC 9068 access tokens signed with Ed25519, JWKS.
//! - [`keys`]: signing key persistence (sealed) and rotation.
//! - [`cache`]: short-TTL client record cache (also the core's credential source).
//! - [`replica`]: when a cache miss may read the PostgreSQL replica (`[store] read_url`).
//! - [`redis_config`]: `[throttle] redis` as a URL, a Cluster or a Sentinel group.
//! - [`metrics`]: Prometheus recorder and HTTP metrics middleware.
//! - [`doctor`]: `portcullis doctor`, the first-run check of a configuration on its machine.
//! - [`health`]: the `/readyz` probe client (`portcullis healthcheck`, systemd readiness).
//! - [`systemd`]: `Type=notify` readiness, status and the watchdog (no-ops without systemd).
//!
//! Embedding (e.g. `portcullis demo`):
//!
//! ```no_run
//! # async fn demo() -> Result<(), portcullis_server::ServerError> {
//! let mut config = portcullis_server::Config::default();
//! config.data_dir = "/tmp/portcullis-demo".into();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let server = portcullis_server::Server::start(config, listener).await?;
//! println!("token endpoint: {}/oauth2/token", server.issuer());
//! server.shutdown().await?;
//! # Ok(()) }
//! ```

pub mod admin;
pub mod app;
pub mod apply;
pub mod audit;
pub mod cache;
pub mod client_auth;
pub mod config;
pub mod config_error;
mod config_example;
pub mod conn_limit;
pub mod doctor;
pub mod health;
pub mod history;
pub mod http;
pub mod jwt;
pub mod keys;
pub mod logging;
pub mod metrics;
pub mod radius;
pub mod redis_config;
pub mod registration;
pub mod replica;
pub mod serve;
pub mod systemd;
pub mod tls;

pub use app::{App, ServerError};
pub use config::{Config, ConfigError};
pub use serve::{Listeners, Server, run, shutdown_signal};
