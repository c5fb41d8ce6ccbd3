//! Verifies passwords against an existing LDAP directory (OpenLDAP, 389-ds/FreeIPA, Active
//! Directory): the upstream half of issue 40.
//!
//! A [`Directory`] is built from a [`DirectoryConfig`] (validated: plain LDAP only when
//! explicitly allowed) and answers [`Directory::check`] with an [`Outcome`]: Accepted,
//! Rejected, Unknown (answered by the caller like Rejected) or Unavailable (the directory's
//! fault, with the reason). Everything is asynchronous; no thread blocks on a directory.
//!
//! What sits where:
//! - `config`: the operator's settings and their validation;
//! - `template`: the user's name in a bind DN (RFC 4514) or a search filter (RFC 4515);
//! - `tls`: the CA file as the only roots;
//! - `conn`: one connection (TCP, LDAPS, StartTLS) and its operations with timeouts;
//! - `server`: one server's connection pool, breaker and counters;
//! - `breaker`: closed / open / half-open per server;
//! - `admission`: the bounded, per-source fair queue in front of a directory;
//! - `directory` and `attempt`: the check itself, failover and status;
//! - `policy`: the directory's own lockout threshold, read for `doctor`.
//!
//! Metrics (the `metrics` facade): `portcullis_upstream_checks_total{directory,outcome}`,
//! `portcullis_upstream_check_seconds{directory}`,
//! `portcullis_upstream_server_seconds{directory,server}`,
//! `portcullis_upstream_server_errors_total{directory,server,kind}`,
//! `portcullis_upstream_breaker_opened_total{directory,server}`,
//! `portcullis_upstream_overloaded_total{directory}`,
//! `portcullis_upstream_in_flight{directory,server}` (gauge).
#![forbid(unsafe_code)]

mod admission;
mod attempt;
mod breaker;
mod clock;
mod config;
mod conn;
mod directory;
#[doc(hidden)]
pub mod fuzzing;
mod outcome;
mod policy;
mod server;
mod template;
mod tls;

pub use admission::AdmissionStatus;
pub use breaker::BreakerState;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{
    AdmissionConfig, BreakerConfig, ConfigError, DirectoryConfig, PoolConfig, SearchConfig,
    Security, ServerUrl, TimeoutConfig,
};
pub use directory::{
    Directory, DirectoryStatus, MAX_PASSWORD_LEN, MAX_USER_LEN, ServerStatus, directories,
};
pub use outcome::{Answer, Outcome, Unavailable, UnavailableKind};
pub use policy::{DirectoryPolicy, PolicyKind};
pub use template::{
    DnTemplate, FilterTemplate, TemplateError, escape_dn_value, escape_filter_value,
};
