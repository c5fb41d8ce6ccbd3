//! The configuration of one upstream directory, and its validation.
//!
//! This module owns what an operator writes (a `[[upstream.ldap]]` table or similar, read
//! with serde; unknown fields are errors) and turns it into [`Validated`]: parsed server
//! URLs, the bind or search templates, the CA and the service password read from disk.
//! Every refusal says which field is wrong and why; insecure settings (binds in clear text)
//! are errors unless explicitly allowed, never warnings.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use thiserror::Error;
use zeroize::Zeroizing;

use crate::template::{DnTemplate, FilterTemplate, TemplateError};

/// One directory: its servers (tried in order) and how a user's password is checked there.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectoryConfig {
    /// The directory's name in status, metrics and audit events (for example `corp`).
    pub name: String,
    /// Server URLs in failover order: `ldaps://host[:port]` (TLS from the first byte, port
    /// 636 by default) or `ldap://host[:port]` (port 389; StartTLS unless `starttls = false`).
    pub servers: Vec<String>,
    /// PEM file with the CA certificate(s) that signed the servers' certificates. Required
    /// when any server uses TLS (ldaps:// or StartTLS); the system's roots are not used.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// For ldap:// servers: upgrade with StartTLS (RFC 4513) before anything else is sent.
    #[serde(default = "yes")]
    pub starttls: bool,
    /// Allows ldap:// servers with `starttls = false`: passwords then cross the network in
    /// clear text. Off by default; without it such a server is a configuration error.
    #[serde(default)]
    pub allow_plaintext: bool,
    /// DN-template mode: the user's bind DN, `{user}` replaced by the name escaped per
    /// RFC 4514 (`uid={user},ou=people,dc=example,dc=org`). Exactly one of this and
    /// `[search]` is set.
    #[serde(default)]
    pub bind_dn_template: Option<String>,
    /// Search-then-bind mode: a service account finds the user's entry, then the user binds
    /// with its DN.
    #[serde(default)]
    pub search: Option<SearchConfig>,
    /// Per-operation time limits.
    #[serde(default)]
    pub timeouts: TimeoutConfig,
    /// Connections kept open between checks.
    #[serde(default)]
    pub pool: PoolConfig,
    /// How many checks may wait on this directory at once, and how they queue.
    #[serde(default)]
    pub admission: AdmissionConfig,
    /// When a failing server is skipped, and how it is tried again.
    #[serde(default)]
    pub breaker: BreakerConfig,
}

/// Search-then-bind: how the user's entry is found.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    /// Where the search starts (subtree scope), e.g. `ou=people,dc=example,dc=org`.
    pub base: String,
    /// The filter, `{user}` standing for the name (placed as a value, as if escaped per
    /// RFC 4515): `(&(objectClass=person)(uid={user}))`, or for Active Directory
    /// `(&(objectCategory=person)(sAMAccountName={user}))` or
    /// `(userPrincipalName={user}@example.com)`. Its fixed values are written unescaped.
    pub filter: String,
    /// The service account's DN; it needs read (search) access to the entries' names.
    pub service_dn: String,
    /// The service account's password, inline. Prefer `service_password_file`; exactly one
    /// of the two is set.
    #[serde(default)]
    pub service_password: Option<String>,
    /// A file holding the service account's password (one line; the newline is dropped).
    #[serde(default)]
    pub service_password_file: Option<PathBuf>,
}

/// Time limits, in milliseconds. Each bounds one step; `check_ms` bounds the whole check
/// (queueing and every server tried), so a caller never waits longer than it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutConfig {
    /// TCP connect, plus the TLS handshake (and StartTLS) on a new connection.
    #[serde(default = "default_connect_ms")]
    pub connect_ms: u64,
    /// One bind (the user's or the service account's).
    #[serde(default = "default_bind_ms")]
    pub bind_ms: u64,
    /// The search for the user's entry.
    #[serde(default = "default_search_ms")]
    pub search_ms: u64,
    /// The whole check, from the call to its answer.
    #[serde(default = "default_check_ms")]
    pub check_ms: u64,
}

/// The connection pool of each server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Idle connections kept per server (service-bound ones for searches and others for user
    /// binds); more are opened on demand and closed when returned to a full pool.
    #[serde(default = "default_max_idle")]
    pub max_idle_per_server: usize,
    /// An idle connection older than this is closed instead of reused (directories close
    /// idle clients, e.g. slapd's `olcIdleTimeout`).
    #[serde(default = "default_idle_ms")]
    pub idle_timeout_ms: u64,
}

/// The bounded, fair admission of checks (see `admission`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionConfig {
    /// Checks in flight on this directory at once (its connections are bounded by it).
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Checks in flight for one source (the caller's key: a client address, a NAS) at once,
    /// so that one source cannot take every slot. At most `max_in_flight`.
    #[serde(default = "default_max_in_flight_per_source")]
    pub max_in_flight_per_source: usize,
    /// Checks waiting for a slot, all sources together; past it a check is answered
    /// Unavailable at once.
    #[serde(default = "default_max_queued")]
    pub max_queued: usize,
    /// Checks waiting for a slot from one source; past it that source's check is answered
    /// Unavailable at once.
    #[serde(default = "default_max_queued_per_source")]
    pub max_queued_per_source: usize,
}

/// The circuit breaker of each server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    /// Consecutive failures (connect, TLS, timeout, server errors; never a wrong password)
    /// that open the breaker: the server is then skipped.
    #[serde(default = "default_failures_to_open")]
    pub failures_to_open: u32,
    /// How long an open breaker skips its server before one check probes it (half-open):
    /// success closes the breaker, failure opens it again.
    #[serde(default = "default_open_ms")]
    pub open_ms: u64,
}

fn yes() -> bool {
    true
}
fn default_connect_ms() -> u64 {
    2_000
}
fn default_bind_ms() -> u64 {
    3_000
}
fn default_search_ms() -> u64 {
    3_000
}
fn default_check_ms() -> u64 {
    8_000
}
fn default_max_idle() -> usize {
    8
}
fn default_idle_ms() -> u64 {
    60_000
}
fn default_max_in_flight() -> usize {
    32
}
fn default_max_in_flight_per_source() -> usize {
    8
}
fn default_max_queued() -> usize {
    256
}
fn default_max_queued_per_source() -> usize {
    16
}
fn default_failures_to_open() -> u32 {
    3
}
fn default_open_ms() -> u64 {
    5_000
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        Self {
            connect_ms: default_connect_ms(),
            bind_ms: default_bind_ms(),
            search_ms: default_search_ms(),
            check_ms: default_check_ms(),
        }
    }
}
impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_idle_per_server: default_max_idle(),
            idle_timeout_ms: default_idle_ms(),
        }
    }
}
impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            max_in_flight: default_max_in_flight(),
            max_in_flight_per_source: default_max_in_flight_per_source(),
            max_queued: default_max_queued(),
            max_queued_per_source: default_max_queued_per_source(),
        }
    }
}
impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failures_to_open: default_failures_to_open(),
            open_ms: default_open_ms(),
        }
    }
}

// By hand: the service account's password is never printed.
impl std::fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchConfig")
            .field("base", &self.base)
            .field("filter", &self.filter)
            .field("service_dn", &self.service_dn)
            .field(
                "service_password",
                &self.service_password.as_ref().map(|_| "<redacted>"),
            )
            .field("service_password_file", &self.service_password_file)
            .finish()
    }
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DnTemplate(t) => f.debug_tuple("DnTemplate").field(t).finish(),
            Self::Search {
                base,
                filter,
                service_dn,
                ..
            } => f
                .debug_struct("Search")
                .field("base", base)
                .field("filter", filter)
                .field("service_dn", service_dn)
                .finish_non_exhaustive(),
        }
    }
}

/// What is wrong with a [`DirectoryConfig`].
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A field's value is refused; the message says why.
    #[error("upstream directory {directory:?}: {field}: {reason}")]
    Field {
        /// The directory's name.
        directory: String,
        /// The field, e.g. `servers[1]`.
        field: String,
        /// Why.
        reason: String,
    },
    /// A template is refused.
    #[error("upstream directory {directory:?}: {field}: {source}")]
    Template {
        /// The directory's name.
        directory: String,
        /// `bind_dn_template` or `search.filter`.
        field: &'static str,
        /// Why.
        source: TemplateError,
    },
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// ldaps://: TLS from the first byte.
    Ldaps,
    /// ldap:// upgraded with StartTLS before anything else.
    StartTls,
    /// ldap:// in clear text (`allow_plaintext = true`).
    Plain,
}

/// One parsed server URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// The URL as configured (its name in status and metrics).
    pub url: String,
    /// Host name or IP address (without brackets), also the TLS server name.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// TLS, StartTLS or none.
    pub security: Security,
}

/// How the user's bind DN is found.
#[derive(Clone)]
pub enum Mode {
    /// The DN from a template.
    DnTemplate(DnTemplate),
    /// A search as the service account.
    Search {
        /// Search base (subtree).
        base: String,
        /// The filter template.
        filter: FilterTemplate,
        /// The service account.
        service_dn: String,
        /// Its password.
        service_password: Zeroizing<String>,
    },
}

/// A checked configuration: what the directory client is built from.
#[derive(Debug, Clone)]
pub struct Validated {
    /// The directory's name.
    pub name: String,
    /// Servers in failover order.
    pub servers: Vec<ServerUrl>,
    /// The CA certificates (PEM), when any server uses TLS.
    pub ca_pem: Option<Vec<u8>>,
    /// DN template or search.
    pub mode: Mode,
    /// Timeouts.
    pub connect_timeout: Duration,
    /// One bind.
    pub bind_timeout: Duration,
    /// The search.
    pub search_timeout: Duration,
    /// The whole check.
    pub check_timeout: Duration,
    /// Pool settings.
    pub pool: PoolConfig,
    /// Admission settings.
    pub admission: AdmissionConfig,
    /// Breaker settings.
    pub breaker: BreakerConfig,
}

impl DirectoryConfig {
    /// Checks every field and reads the files it names (CA, service password).
    pub fn validate(&self) -> Result<Validated, ConfigError> {
        let field = |field: &str, reason: String| ConfigError::Field {
            directory: self.name.clone(),
            field: field.to_owned(),
            reason,
        };
        if self.name.trim().is_empty() {
            return Err(field("name", "must not be empty".into()));
        }
        if self.servers.is_empty() {
            return Err(field("servers", "at least one server URL is needed".into()));
        }
        let mut servers = Vec::with_capacity(self.servers.len());
        for (i, url) in self.servers.iter().enumerate() {
            let server = parse_url(url, self.starttls, self.allow_plaintext)
                .map_err(|reason| field(&format!("servers[{i}]"), reason))?;
            servers.push(server);
        }
        let ca_pem = self.read_ca(&servers, &field)?;
        let mode = self.mode(&field)?;
        self.check_limits(&field)?;
        Ok(Validated {
            name: self.name.clone(),
            servers,
            ca_pem,
            mode,
            connect_timeout: Duration::from_millis(self.timeouts.connect_ms),
            bind_timeout: Duration::from_millis(self.timeouts.bind_ms),
            search_timeout: Duration::from_millis(self.timeouts.search_ms),
            check_timeout: Duration::from_millis(self.timeouts.check_ms),
            pool: self.pool.clone(),
            admission: self.admission.clone(),
            breaker: self.breaker.clone(),
        })
    }

    fn read_ca(
        &self,
        servers: &[ServerUrl],
        field: &dyn Fn(&str, String) -> ConfigError,
    ) -> Result<Option<Vec<u8>>, ConfigError> {
        let needs_tls = servers.iter().any(|s| s.security != Security::Plain);
        match &self.ca_file {
            None if needs_tls => Err(field(
                "ca_file",
                "a server uses TLS (ldaps:// or StartTLS): name the PEM file of the CA that \
                 signed its certificate"
                    .into(),
            )),
            None => Ok(None),
            Some(path) => {
                let pem = std::fs::read(path)
                    .map_err(|e| field("ca_file", format!("{}: {e}", path.display())))?;
                crate::tls::root_store(&pem)
                    .map_err(|e| field("ca_file", format!("{}: {e}", path.display())))?;
                Ok(Some(pem))
            }
        }
    }

    fn mode(&self, field: &dyn Fn(&str, String) -> ConfigError) -> Result<Mode, ConfigError> {
        let template = |field: &'static str, source| ConfigError::Template {
            directory: self.name.clone(),
            field,
            source,
        };
        match (&self.bind_dn_template, &self.search) {
            (Some(t), None) => Ok(Mode::DnTemplate(
                DnTemplate::new(t).map_err(|e| template("bind_dn_template", e))?,
            )),
            (None, Some(s)) => {
                let filter =
                    FilterTemplate::new(&s.filter).map_err(|e| template("search.filter", e))?;
                if s.service_dn.trim().is_empty() {
                    return Err(field("search.service_dn", "must not be empty".into()));
                }
                let password = match (&s.service_password, &s.service_password_file) {
                    (Some(p), None) => Zeroizing::new(p.clone()),
                    (None, Some(path)) => read_secret(path).map_err(|e| {
                        field(
                            "search.service_password_file",
                            format!("{}: {e}", path.display()),
                        )
                    })?,
                    _ => {
                        return Err(field(
                            "search",
                            "set exactly one of service_password and service_password_file".into(),
                        ));
                    }
                };
                if password.is_empty() {
                    // An empty password is an unauthenticated bind (RFC 4513 5.1.2): it
                    // would "succeed" as anonymous.
                    return Err(field("search.service_password", "must not be empty".into()));
                }
                Ok(Mode::Search {
                    base: s.base.clone(),
                    filter,
                    service_dn: s.service_dn.clone(),
                    service_password: password,
                })
            }
            (Some(_), Some(_)) => Err(field(
                "bind_dn_template",
                "set either bind_dn_template or [search], not both".into(),
            )),
            (None, None) => Err(field(
                "bind_dn_template",
                "set bind_dn_template (DN-template mode) or [search] (search-then-bind)".into(),
            )),
        }
    }

    fn check_limits(&self, field: &dyn Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
        let t = &self.timeouts;
        for (name, ms) in [
            ("timeouts.connect_ms", t.connect_ms),
            ("timeouts.bind_ms", t.bind_ms),
            ("timeouts.search_ms", t.search_ms),
            ("timeouts.check_ms", t.check_ms),
            ("breaker.open_ms", self.breaker.open_ms),
        ] {
            if ms == 0 || ms > 600_000 {
                return Err(field(name, format!("{ms}: must be 1 to 600000 ms")));
            }
        }
        let a = &self.admission;
        if a.max_in_flight == 0 || a.max_in_flight > 4096 {
            return Err(field("admission.max_in_flight", "must be 1 to 4096".into()));
        }
        if a.max_in_flight_per_source == 0 || a.max_in_flight_per_source > a.max_in_flight {
            return Err(field(
                "admission.max_in_flight_per_source",
                format!("must be 1 to max_in_flight ({})", a.max_in_flight),
            ));
        }
        if a.max_queued_per_source > a.max_queued {
            return Err(field(
                "admission.max_queued_per_source",
                format!("must be at most max_queued ({})", a.max_queued),
            ));
        }
        if self.breaker.failures_to_open == 0 {
            return Err(field(
                "breaker.failures_to_open",
                "must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

fn read_secret(path: &std::path::Path) -> std::io::Result<Zeroizing<String>> {
    let text = Zeroizing::new(std::fs::read_to_string(path)?);
    Ok(Zeroizing::new(
        text.strip_suffix('\n')
            .map(|s| s.strip_suffix('\r').unwrap_or(s))
            .unwrap_or(&text)
            .to_owned(),
    ))
}

/// Parses `ldap[s]://host[:port][/]`.
pub fn parse_url(url: &str, starttls: bool, allow_plaintext: bool) -> Result<ServerUrl, String> {
    let (rest, security, default_port) = if let Some(rest) = url.strip_prefix("ldaps://") {
        (rest, Security::Ldaps, 636)
    } else if let Some(rest) = url.strip_prefix("ldap://") {
        let security = if starttls {
            Security::StartTls
        } else {
            Security::Plain
        };
        (rest, security, 389)
    } else {
        return Err(format!("{url:?}: must start with ldaps:// or ldap://"));
    };
    if security == Security::Plain && !allow_plaintext {
        return Err(format!(
            "{url:?}: ldap:// with starttls = false sends passwords in clear text; use ldaps:// \
             or StartTLS, or set allow_plaintext = true"
        ));
    }
    let hostport = rest.strip_suffix('/').unwrap_or(rest);
    if hostport.contains(['/', '?', '@']) {
        return Err(format!(
            "{url:?}: only scheme://host[:port] is read (no DN, user or query)"
        ));
    }
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("{url:?}: unclosed '['"))?;
        (host, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err(format!("{url:?}: no host"));
    }
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("{url:?}: bad port {p:?}"))?,
    };
    Ok(ServerUrl {
        url: url.to_owned(),
        host: host.to_owned(),
        port,
        security,
    })
}

#[cfg(test)]
mod tests;
