//! The assembly of one Portcullis server: the TOML configuration ([`config`]), the parts
//! every door shares built once from it ([`assembly`]), and the one start-up path
//! ([`serve`]: bind, open the store, assemble, start every door, drain on shutdown) that
//! `portcullis serve`, the tests and `portcullis demo` use. Around it: `doctor`, the
//! `/readyz` probe client, systemd readiness and logging.
//!
//! The doors are crates of their own, each over the narrow context this crate hands it:
//! `portcullis-door-http` (OAuth token endpoint, registration, status page),
//! `portcullis-door-admin` (admin API and apply), `portcullis-door-radius` (RADIUS PAP,
//! 802.1X, accounting, RadSec), `portcullis-door-ldap` (LDAP binds and searches). They
//! are re-exported here under short names for the binary and the tests.
//!
//! Embedding (e.g. `portcullis demo`):
//!
//! ```no_run
//! # async fn demo() -> Result<(), portcullis_server::ServerError> {
//! let mut config = portcullis_server::Config::default();
//! config.data_dir = "/tmp/portcullis-demo".into();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let server = portcullis_server::Server::start(config, Some(listener)).await?;
//! println!("token endpoint: {}/oauth2/token", server.issuer());
//! server.shutdown().await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod assembly;
pub mod config;
mod config_example;
pub mod doctor;
pub mod health;
pub mod logging;
pub mod redis_config;
pub mod serve;
pub mod systemd;

pub use assembly::{Assembly, ServerError};
pub use config::{Config, ConfigError};
pub use serve::{Listeners, Server, run, shutdown_signal};

/// The doors and the capabilities below them, under the names the binary uses.
pub use portcullis_door as door;
pub use portcullis_door::{audit, history, metrics, tls};
pub use portcullis_door_admin as admin;
pub use portcullis_door_admin::apply;
pub use portcullis_door_http as http;
pub use portcullis_door_ldap as ldap;
pub use portcullis_door_radius as radius;
pub use portcullis_oauth as oauth;
pub use portcullis_oauth::{cache, client_auth, jwt, keys, registration};
