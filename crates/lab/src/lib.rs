//! Load lab: drives an OAuth 2.0 token endpoint (or a RADIUS or LDAP server) from scenario files and reports what
//! legitimate and attacking clients experienced, without coordinated omission.
//!
//! Module map:
//! - [`scenario`]: the TOML format (`deny_unknown_fields`) and its validated form; built-ins.
//! - [`schedule`]: intended send times of open-loop arrivals; closed-loop start spread.
//! - [`driver`]: the [`driver::Driver`] trait (one attempt, classified) and its OAuth 2.0 and
//!   `http-get` implementations; [`conn`] opens source-bound hyper connections.
//! - [`radius_acct`]: the RADIUS accounting driver (Start/Interim/Stop per device;
//!   success = a verified Accounting-Response).
//! - [`radius`]: the RADIUS driver (PAP over UDP, NAS-like retransmits, every reply
//!   verified against its own request).
//! - [`ldap`]: the LDAP driver (binds as applications make them: by DN, or search-then-bind
//!   through a service account, then the searches after; over LDAPS or StartTLS too).
//! - [`eap`]: the 802.1X driver (whole EAP-TLS and EAP-TTLS/PAP logins inside RADIUS,
//!   each client a station with its own TLS session cache; keys of every accept checked).
//! - [`jwt`]: JWKS parsing and RFC 9068 token checks (Ed25519), bound to the asking client.
//! - [`relay`]: a directory that answers failed binds late (report 000's back office): a TCP
//!   relay in front of slapd that holds failed BindResponses.
//! - [`pool_bench`]: what the hash pool alone derives (the yardstick of verifications/s).
//! - [`record`]: outcomes, HdrHistograms, per-second series.
//! - [`scrape`]: the server's Prometheus `/metrics`, as per-second figures.
//! - [`runner`]: executes a scenario (groups, ticker, caps, repeats, thresholds).
//! - [`report`]: `summary.json`, `timeseries.csv`, self-contained `report.html` (inline SVG).
//! - The demo (`portcullis demo`) and the naive baseline servers it shows for contrast
//!   are the crate `portcullis-demo`, built on this one.
//! - [`trivial`]: a minimal `GET /healthz` server for tool comparisons and stall tests.
//! - [`safety`]: loopback-only targets and hard ceilings.
#![forbid(unsafe_code)]

pub mod assertion;
pub mod certs;
pub mod clock;
pub mod conn;
pub mod driver;
pub mod eap;
pub mod fingerprint;
pub mod jwt;
pub mod ldap;
pub mod outcome;
pub mod pool_bench;
pub mod radius;
pub mod radius_acct;
pub mod record;
pub mod relay;
pub mod report;
pub mod runner;
pub mod safety;
pub mod scenario;
pub mod schedule;
pub mod scrape;
pub mod tls;
pub mod trivial;

pub use record::Outcome;
pub use runner::{RunOptions, ScenarioResult, run_scenario};
pub use scenario::Scenario;

/// Errors of the lab. Each says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The scenario file (or a flag changing it) is invalid.
    #[error("scenario: {0}")]
    Scenario(String),
    /// The target refused, is unreachable, or is not allowed.
    #[error("target: {0}")]
    Target(String),
    /// Writing outputs failed.
    #[error("output: {0}")]
    Output(String),
    /// The baseline server could not start.
    #[error("baseline: {0}")]
    Baseline(String),
}
