//! The `[radius]` section: where RADIUS listens and how its front end bounds its work.
//! Absent (or `listen = []`): nothing listens on UDP. The RADIUS clients themselves (NAS
//! addresses, shared secrets) are data, not configuration: `portcullis nas ...`.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

use portcullis_door::config_error::{ConfigError, invalid};

/// `[radius]` as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileRadius {
    /// UDP addresses to listen on.
    pub listen: Vec<String>,
    /// UDP addresses to serve accounting on (issue 28).
    pub accounting_listen: Vec<String>,
    /// TCP addresses of the RadSec door (RADIUS over TLS, issue 28).
    pub radsec_listen: Vec<String>,
    /// Minimum delay before an Access-Reject, in milliseconds.
    pub access_reject_delay_ms: u64,
    /// Random extra delay added to each Access-Reject, up to this many milliseconds.
    pub access_reject_jitter_ms: u64,
    /// The old name of `access_reject_delay_ms`: refused with an error naming the new
    /// one (it read like `[verifier] reject_delay_ms`, which delays every door's failures).
    #[serde(rename = "reject_delay_ms")]
    pub renamed_reject_delay_ms: Option<toml::Value>,
    /// The old name of `access_reject_jitter_ms` (refused likewise).
    #[serde(rename = "reject_jitter_ms")]
    pub renamed_reject_jitter_ms: Option<toml::Value>,
    /// How long a request may take before it is dropped unanswered, in milliseconds.
    pub answer_timeout_ms: u64,
    /// Most remembered requests (duplicate detection).
    pub duplicate_cache_entries: usize,
    /// How long an answered request is remembered, in seconds.
    pub duplicate_ttl_secs: u64,
    /// Most requests being handled at once; more are dropped.
    pub receive_queue: usize,
    /// How often the NAS table is reloaded from the store, in seconds.
    pub nas_refresh_secs: u64,
    /// `[radius.eap]`: 802.1X.
    pub eap: super::eap::config::FileEap,
    /// `[radius.radsec]`: RADIUS over TLS.
    pub radsec: super::radsec::config::FileRadsec,
}

impl Default for FileRadius {
    fn default() -> Self {
        FileRadius {
            listen: Vec::new(),
            accounting_listen: Vec::new(),
            radsec_listen: Vec::new(),
            access_reject_delay_ms: 1000,
            access_reject_jitter_ms: 500,
            renamed_reject_delay_ms: None,
            renamed_reject_jitter_ms: None,
            answer_timeout_ms: 3000,
            duplicate_cache_entries: 65_536,
            duplicate_ttl_secs: 30,
            receive_queue: 4096,
            nas_refresh_secs: 5,
            eap: super::eap::config::FileEap::default(),
            radsec: super::radsec::config::FileRadsec::default(),
        }
    }
}

/// The validated `[radius]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RadiusConfig {
    /// UDP listen addresses (`portcullis serve --radius ADDR` replaces them); empty: off.
    pub listen: Vec<SocketAddr>,
    /// UDP addresses of the accounting door (`serve --radius-accounting ADDR` replaces
    /// them); empty: no accounting. Same NAS table and secrets as `listen`.
    pub accounting_listen: Vec<SocketAddr>,
    /// TCP addresses of the RadSec door (`serve --radsec ADDR` replaces them); empty: no
    /// RadSec. Same NAS table; NASes are named by their client certificates.
    pub radsec_listen: Vec<SocketAddr>,
    /// Minimum delay before an Access-Reject: a timer, never a thread.
    pub reject_delay: Duration,
    /// Uniform random extra delay on top of `reject_delay`.
    pub reject_jitter: Duration,
    /// Deadline handed to the core: work that cannot be answered within it is dropped
    /// (the NAS retransmits or fails over) instead of answered late.
    pub answer_timeout: Duration,
    /// Duplicate cache bound in entries (oldest evicted first).
    pub duplicate_cache_entries: usize,
    /// Duplicate cache bound in time.
    pub duplicate_ttl: Duration,
    /// Bound on requests in progress (hashing or waiting out a reject delay).
    pub receive_queue: usize,
    /// NAS table reload period.
    pub nas_refresh: Duration,
    /// 802.1X, when configured.
    pub eap: Option<super::eap::config::EapConfig>,
    /// RadSec's certificate, CA and bounds (present exactly when `radsec_listen` is not
    /// empty, unless `serve --radsec` adds addresses later, which checks again).
    pub radsec: Option<super::radsec::config::RadsecConfig>,
}

impl Default for RadiusConfig {
    fn default() -> Self {
        match RadiusConfig::from_file(FileRadius::default()) {
            Ok(c) => c,
            Err(e) => unreachable!("default [radius] is invalid: {e}"),
        }
    }
}

impl RadiusConfig {
    /// Validate the file layer.
    pub fn from_file(f: FileRadius) -> Result<RadiusConfig, ConfigError> {
        renamed(&f)?;
        let listen = addresses("radius.listen", &f.listen, 1812)?;
        let accounting_listen = addresses("radius.accounting_listen", &f.accounting_listen, 1813)?;
        if let Some(both) = listen
            .iter()
            .find(|a| a.port() != 0 && accounting_listen.contains(a))
        {
            return Err(invalid(format!(
                "{both} is in both radius.listen and radius.accounting_listen"
            )));
        }
        let radsec_listen = addresses("radius.radsec_listen", &f.radsec_listen, 2083)?;
        let radsec = super::radsec::config::RadsecConfig::from_file(f.radsec)?;
        if !radsec_listen.is_empty() && radsec.is_none() {
            return Err(invalid(
                "radius.radsec_listen needs [radius.radsec] cert, key and client_ca",
            ));
        }
        if f.access_reject_delay_ms > 10_000 || f.access_reject_jitter_ms > 10_000 {
            return Err(invalid(
                "radius.access_reject_delay_ms and radius.access_reject_jitter_ms must be at most 10000",
            ));
        }
        if !(100..=60_000).contains(&f.answer_timeout_ms) {
            return Err(invalid(
                "radius.answer_timeout_ms must be between 100 and 60000",
            ));
        }
        if f.access_reject_delay_ms + f.access_reject_jitter_ms
            >= f.duplicate_ttl_secs.saturating_mul(1000)
        {
            return Err(invalid(
                "radius.duplicate_ttl_secs must be longer than the longest reject delay \
                 (a retransmit must find the answer it is waiting for)",
            ));
        }
        if !(16..=10_000_000).contains(&f.duplicate_cache_entries) {
            return Err(invalid(
                "radius.duplicate_cache_entries must be between 16 and 10000000",
            ));
        }
        if !(1..=3600).contains(&f.duplicate_ttl_secs) {
            return Err(invalid(
                "radius.duplicate_ttl_secs must be between 1 and 3600",
            ));
        }
        if !(1..=1_000_000).contains(&f.receive_queue) {
            return Err(invalid(
                "radius.receive_queue must be between 1 and 1000000",
            ));
        }
        if !(1..=3600).contains(&f.nas_refresh_secs) {
            return Err(invalid(
                "radius.nas_refresh_secs must be between 1 and 3600",
            ));
        }
        Ok(RadiusConfig {
            listen,
            accounting_listen,
            radsec_listen,
            reject_delay: Duration::from_millis(f.access_reject_delay_ms),
            reject_jitter: Duration::from_millis(f.access_reject_jitter_ms),
            answer_timeout: Duration::from_millis(f.answer_timeout_ms),
            duplicate_cache_entries: f.duplicate_cache_entries,
            duplicate_ttl: Duration::from_secs(f.duplicate_ttl_secs),
            receive_queue: f.receive_queue,
            nas_refresh: Duration::from_secs(f.nas_refresh_secs),
            eap: super::eap::config::EapConfig::from_file(f.eap)?,
            radsec,
        })
    }
}

/// A key renamed since: an error that names the new key, never a silently ignored one.
fn renamed(f: &FileRadius) -> Result<(), ConfigError> {
    if f.renamed_reject_delay_ms.is_some() {
        return Err(invalid(
            "radius.reject_delay_ms is now radius.access_reject_delay_ms (the delay before an \
             Access-Reject); [verifier] reject_delay_ms is another setting, the delay of every \
             door's failures",
        ));
    }
    if f.renamed_reject_jitter_ms.is_some() {
        return Err(invalid(
            "radius.reject_jitter_ms is now radius.access_reject_jitter_ms",
        ));
    }
    Ok(())
}

/// Parse a list of socket addresses, duplicates folded.
fn addresses(key: &str, list: &[String], port: u16) -> Result<Vec<SocketAddr>, ConfigError> {
    let mut out = Vec::with_capacity(list.len());
    for a in list {
        let addr: SocketAddr = a.parse().map_err(|_| {
            invalid(format!(
                "{key}: '{a}' is not an address like 127.0.0.1:{port} or [::1]:{port}"
            ))
        })?;
        if !out.contains(&addr) {
            out.push(addr);
        }
    }
    Ok(out)
}

/// The documented `[radius]` section of `portcullis config example`.
pub const EXAMPLE: &str = r#"
# RADIUS (RFC 2865) over UDP: PAP Access-Requests from registered NASes
# (`portcullis nas add NAME --address CIDR`), checked against the same users as the
# password grant, through the same verification core.
[radius]
# UDP addresses to listen on; empty: no RADIUS. `portcullis serve --radius ADDR`
# (repeatable) replaces this list. IPv4 and IPv6, e.g. ["0.0.0.0:1812", "[::]:1812"];
# on wildcard addresses replies leave from the address each request was sent to.
listen = []
# UDP addresses of the accounting door (RFC 2866, usually port 1813); empty: no
# accounting. Same NAS table and shared secrets; `portcullis serve --radius-accounting
# ADDR` (repeatable) replaces this list. Records are acknowledged only once durable; see
# [accounting] below.
accounting_listen = []
# TCP addresses of the RadSec door (RADIUS over TLS, RFC 6614, usually port 2083); empty:
# no RadSec. Needs [radius.radsec] (certificate, NAS CA); `portcullis serve --radsec ADDR`
# (repeatable) replaces this list.
radsec_listen = []
# Access-Rejects are sent no earlier than this many milliseconds after the request
# arrived, plus a random 0..access_reject_jitter_ms (a timer: no thread waits). Slows online
# guessing through a NAS (draft-ietf-radext-deprecating-radius asks for about 1 s).
access_reject_delay_ms = 1000
access_reject_jitter_ms = 500
# A request not answered within this many milliseconds is dropped unanswered, as is one
# the core refuses as overloaded: the NAS retransmits (or fails over) rather than waiting.
answer_timeout_ms = 3000
# Duplicate detection (RFC 5080 §2.2.2): a retransmission of an answered request gets the
# same reply again, without a second hash; one of a request still in progress is
# dropped. Bounded in entries (oldest forgotten first) and in time; the time must exceed
# the longest reject delay.
duplicate_cache_entries = 65536
duplicate_ttl_secs = 30
# Most requests in progress at once (hashing or waiting out a reject delay); beyond it
# new requests are dropped and counted (the kernel's socket buffer holds short bursts).
receive_queue = 4096
# How often the NAS table is reloaded from the store, in seconds: a NAS added, removed or
# given a new secret with `portcullis nas ...` takes effect on a running server within it.
nas_refresh_secs = 5
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RadiusConfig, String> {
        let f: FileRadius = toml::from_str(text).map_err(|e| e.to_string())?;
        RadiusConfig::from_file(f).map_err(|e| e.to_string())
    }

    #[test]
    fn issue_12_example_section_is_the_defaults() {
        let text = EXAMPLE.replace("[radius]\n", "");
        assert_eq!(parse(&text).unwrap(), RadiusConfig::default());
        assert!(RadiusConfig::default().listen.is_empty(), "off by default");
        assert!(
            RadiusConfig::default().accounting_listen.is_empty(),
            "accounting off by default"
        );
    }

    #[test]
    fn issue_12_radius_config_is_validated() {
        let c = parse("listen = [\"127.0.0.1:1812\", \"[::1]:1812\", \"127.0.0.1:1812\"]").unwrap();
        assert_eq!(c.listen.len(), 2, "duplicates folded");
        for (text, needle) in [
            ("listen = [\"localhost:1812\"]", "radius.listen"),
            ("listen = [\"127.0.0.1\"]", "radius.listen"),
            (
                "accounting_listen = [\"127.0.0.1\"]",
                "radius.accounting_listen",
            ),
            (
                "listen = [\"127.0.0.1:1812\"]\naccounting_listen = [\"127.0.0.1:1812\"]",
                "in both",
            ),
            ("answer_timeout_ms = 5", "answer_timeout_ms"),
            (
                "duplicate_ttl_secs = 1",
                "longer than the longest reject delay",
            ),
            ("duplicate_cache_entries = 0", "duplicate_cache_entries"),
            ("receive_queue = 0", "receive_queue"),
            ("nas_refresh_secs = 0", "nas_refresh_secs"),
            ("radsec_listen = [\"127.0.0.1:2083\"]", "[radius.radsec]"),
            ("radsec_listen = [\"127.0.0.1\"]", "radius.radsec_listen"),
            ("access_reject_delay_ms = 20000", "access_reject_delay_ms"),
            (
                "reject_delay_ms = 1000",
                "now radius.access_reject_delay_ms",
            ),
            ("reject_jitter_ms = 0", "now radius.access_reject_jitter_ms"),
            ("bogus = 1", "bogus"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
