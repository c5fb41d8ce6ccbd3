//! What every door is built from: the pieces a front end needs besides the verification
//! core and the store, shared so that each door crate (`portcullis-door-http`,
//! `-door-admin`, `-door-radius`, ...) depends on these and never on a sibling door.
//!
//! - [`audit`]: the audit trail (`[audit]`): one event per authentication outcome.
//! - [`metrics`]: the Prometheus recorder, the metric names doors share, HTTP middleware.
//! - [`tls`]: rustls settings and the certificate / cipher-suite start-up check; what a
//!   TLS peer presented ([`tls::peer`]).
//! - [`pem`]: PEM certificates, keys and CRLs, with errors that say what is wrong.
//! - [`http_conn`]: one HTTP/1.1 connection served by an axum router, with header limits
//!   and graceful shutdown (the HTTP and admin doors' connections).
//! - [`conn_limit`]: per-source connection limits of TCP doors.
//! - [`forwarded`]: trusted proxies and the client address they forward.
//! - [`proxy_protocol`]: the PROXY protocol v2 header of TCP load balancers.
//! - [`history`]: the last 15 minutes, one sample per second, for the status page.
//! - [`reload`]: parts that re-read their files on SIGHUP.
//! - [`status`]: a door's live counters on the status page.
//! - [`config_error`]: the one error type of configuration sections.
#![forbid(unsafe_code)]

pub mod audit;
pub mod config_error;
pub mod conn_limit;
pub mod forwarded;
pub mod history;
pub mod http_conn;
pub mod metrics;
pub mod pem;
pub mod proxy_protocol;
pub mod reload;
pub mod status;
pub mod tls;

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 if the clock is before 1970).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A door could not start: its configuration, its store or its sockets failed. The
/// assembly (`portcullis-server`) reports it as a start-up error.
#[derive(Debug, thiserror::Error)]
pub enum DoorError {
    /// A configuration problem found at start (certificates, files, settings).
    #[error("{0}")]
    Config(String),
    /// The store failed while the door loaded its state.
    #[error("store: {0}")]
    Store(#[from] portcullis_store::StoreError),
    /// Binding or serving failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}
