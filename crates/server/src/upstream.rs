//! Existing directories as password sources (issue 40): the `[[directory]]` sections, their
//! validation, and the adapter that gives the core `portcullis-upstream`'s directories as
//! its [`RemoteSource`], plus their status panel (`/status.json` key `directories`, the
//! `/readyz` detail lines).
//!
//! A user the local store does not hold is checked by the directory whose `realm` ends its
//! name, else by the one directory without a realm; a name no directory takes is unknown.
//! The LDAP settings are `portcullis-upstream`'s own types; this module adds what the core
//! needs: the per-user failure budget (validated below the directory's lockout threshold
//! when one is configured) and the credential cache's maximum age.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use portcullis_core::{GcraLimit, RemoteAnswer, RemoteRoute, RemoteSource, RemoteVerdict};
use portcullis_upstream::{
    AdmissionConfig, BreakerConfig, Directory, DirectoryConfig, Outcome, PoolConfig, SearchConfig,
    TimeoutConfig,
};
use serde::Deserialize;

use portcullis_door::config_error::{ConfigError, invalid};

/// One `[[directory]]` section: an existing LDAP directory holding users' passwords.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDirectory {
    /// The directory's name in audit events, metrics, `/readyz` and the status page.
    pub name: String,
    /// Which users it checks: names ending in `@REALM` (sent to the directory as given).
    /// Absent: every user the local store does not hold and no other directory's realm
    /// takes (at most one directory has no realm).
    #[serde(default)]
    pub realm: Option<String>,
    /// Server URLs in failover order: `ldaps://host[:port]`, or `ldap://host[:port]`
    /// upgraded with StartTLS.
    pub servers: Vec<String>,
    /// PEM file of the CA that signed the servers' certificates (required with TLS; the
    /// system's roots are not used).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// For `ldap://` servers: StartTLS before anything else (default true).
    #[serde(default = "yes")]
    pub starttls: bool,
    /// Allows `ldap://` with `starttls = false` (passwords in clear text). Default false.
    #[serde(default)]
    pub allow_plaintext: bool,
    /// DN-template mode: `uid={user},ou=people,dc=example,dc=org` (the name escaped per
    /// RFC 4514). Exactly one of this and `[directory.search]`.
    #[serde(default)]
    pub bind_dn_template: Option<String>,
    /// Search-then-bind mode: base, filter, service account.
    #[serde(default)]
    pub search: Option<SearchConfig>,
    /// `[directory.timeouts]`: connect_ms, bind_ms, search_ms, check_ms.
    #[serde(default)]
    pub timeouts: TimeoutConfig,
    /// `[directory.pool]`: max_idle_per_server, idle_timeout_ms.
    #[serde(default)]
    pub pool: PoolConfig,
    /// `[directory.admission]`: checks in flight and queued, in all and per source.
    #[serde(default)]
    pub admission: AdmissionConfig,
    /// `[directory.breaker]`: failures_to_open, open_ms.
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// Failed guesses at one user of this directory let through from untrusted origins
    /// at once (the per-user budget, instead of `[verifier.throttle] principal` when
    /// smaller). Must stay below the directory's lockout threshold. Default 3.
    #[serde(default = "default_failure_budget")]
    pub failure_budget: u32,
    /// Time for that budget to refill, in seconds. Default 3600.
    #[serde(default = "default_failure_budget_period")]
    pub failure_budget_period_secs: u64,
    /// The directory's own lockout threshold (OpenLDAP `pwdMaxFailure`, AD
    /// `lockoutThreshold`), when it locks: `failure_budget` must be below it. `doctor`
    /// reads the directory's policy and compares it too.
    #[serde(default)]
    pub lockout_threshold: Option<u32>,
    /// Credential cache: after a successful bind keep a hash of the password (under
    /// `[policy]`) for this many seconds, used only while the directory is unavailable.
    /// 0 (default): off.
    #[serde(default)]
    pub cache_max_age_secs: u64,
}

fn yes() -> bool {
    true
}
fn default_failure_budget() -> u32 {
    3
}
fn default_failure_budget_period() -> u64 {
    3600
}

/// The validated directories: built clients and how users reach them.
pub struct Directories {
    entries: Vec<Entry>,
}

struct Entry {
    directory: Arc<Directory>,
    realm: Option<String>,
    route: RemoteRoute,
}

impl std::fmt::Debug for Directories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|e| e.directory.name()).collect();
        f.debug_struct("Directories")
            .field("names", &names)
            .finish()
    }
}

impl FileDirectory {
    fn ldap(&self) -> DirectoryConfig {
        DirectoryConfig {
            name: self.name.clone(),
            servers: self.servers.clone(),
            ca_file: self.ca_file.clone(),
            starttls: self.starttls,
            allow_plaintext: self.allow_plaintext,
            bind_dn_template: self.bind_dn_template.clone(),
            search: self.search.clone(),
            timeouts: self.timeouts.clone(),
            pool: self.pool.clone(),
            admission: self.admission.clone(),
            breaker: self.breaker.clone(),
        }
    }

    fn check(&self) -> Result<(), ConfigError> {
        let at = |m: String| invalid(format!("[[directory]] {:?}: {m}", self.name));
        if self.failure_budget == 0 {
            return Err(at("failure_budget must be at least 1".into()));
        }
        if !(1..=30 * 86_400).contains(&self.failure_budget_period_secs) {
            return Err(at("failure_budget_period_secs must be 1 to 2592000".into()));
        }
        if let Some(t) = self.lockout_threshold
            && self.failure_budget >= t
        {
            return Err(at(format!(
                "failure_budget ({}) must be below lockout_threshold ({t}): guesses let \
                 through could lock users out of the directory",
                self.failure_budget
            )));
        }
        if self.cache_max_age_secs > 30 * 86_400 {
            return Err(at("cache_max_age_secs must be at most 2592000".into()));
        }
        if let Some(r) = &self.realm
            && (r.is_empty() || r.contains('@'))
        {
            return Err(at("realm must be a non-empty name without '@'".into()));
        }
        Ok(())
    }
}

/// Validates every `[[directory]]` (the LDAP settings, CA and password files included) and
/// builds the clients; no connection is made.
pub fn directories(files: &[FileDirectory]) -> Result<Option<Arc<Directories>>, ConfigError> {
    if files.is_empty() {
        return Ok(None);
    }
    let ldap: Vec<DirectoryConfig> = files.iter().map(FileDirectory::ldap).collect();
    let built = portcullis_upstream::directories(&ldap).map_err(|e| invalid(e.to_string()))?;
    if files.iter().filter(|f| f.realm.is_none()).count() > 1 {
        return Err(invalid(
            "[[directory]]: at most one directory without a realm (it takes the other names)",
        ));
    }
    let mut entries = Vec::with_capacity(files.len());
    for (index, (f, directory)) in files.iter().zip(built).enumerate() {
        f.check()?;
        if let Some(r) = &f.realm
            && files[..index].iter().any(|o| o.realm.as_ref() == Some(r))
        {
            return Err(invalid(format!(
                "[[directory]]: two directories have realm {r:?}"
            )));
        }
        let route = RemoteRoute {
            index,
            directory: Arc::from(f.name.as_str()),
            failure_limit: GcraLimit::new(
                f.failure_budget,
                Duration::from_secs(f.failure_budget_period_secs),
            ),
            cache_max_age: (f.cache_max_age_secs > 0)
                .then(|| Duration::from_secs(f.cache_max_age_secs)),
        };
        entries.push(Entry {
            directory,
            realm: f.realm.clone(),
            route,
        });
    }
    Ok(Some(Arc::new(Directories { entries })))
}

impl Directories {
    /// The built clients, in configuration order (`doctor`, status).
    pub fn clients(&self) -> impl Iterator<Item = &Arc<Directory>> {
        self.entries.iter().map(|e| &e.directory)
    }
}

impl RemoteSource for Directories {
    fn route(&self, user: &str) -> Option<RemoteRoute> {
        let realm = user.rsplit_once('@').map(|(_, r)| r);
        let by_realm = realm.and_then(|r| {
            self.entries.iter().find(|e| {
                e.realm
                    .as_deref()
                    .is_some_and(|mine| mine.eq_ignore_ascii_case(r))
            })
        });
        by_realm
            .or_else(|| self.entries.iter().find(|e| e.realm.is_none()))
            .map(|e| e.route.clone())
    }

    fn check<'a>(
        &'a self,
        route: &'a RemoteRoute,
        source: &'a str,
        user: &'a str,
        password: &'a [u8],
    ) -> BoxFuture<'a, RemoteAnswer> {
        Box::pin(async move {
            let Some(entry) = self.entries.get(route.index) else {
                return RemoteAnswer {
                    verdict: RemoteVerdict::Unavailable("no_such_directory"),
                    server: None,
                };
            };
            let answer = entry.directory.check(source, user, password).await;
            let verdict = match answer.outcome {
                Outcome::Accepted => RemoteVerdict::Accepted,
                Outcome::Rejected => RemoteVerdict::Rejected,
                Outcome::Unknown => RemoteVerdict::Unknown,
                Outcome::Unavailable(u) => RemoteVerdict::Unavailable(reason(u.kind)),
            };
            RemoteAnswer {
                verdict,
                server: answer.server,
            }
        })
    }
}

/// The audit reason of a directory that could not answer.
fn reason(kind: portcullis_upstream::UnavailableKind) -> &'static str {
    use portcullis_upstream::UnavailableKind as K;
    match kind {
        K::Overloaded => "directory_overloaded",
        K::AllServersDown => "directory_down",
        K::Timeout => "directory_timeout",
        K::Connect => "directory_connect",
        K::Tls => "directory_tls",
        K::Protocol => "directory_protocol",
        K::ServiceAccount => "directory_service_account",
        K::DirectoryError => "directory_error",
    }
}

impl portcullis_door::status::StatusPanel for Directories {
    fn key(&self) -> &'static str {
        "directories"
    }

    fn json(&self) -> serde_json::Value {
        let all: Vec<_> = self.clients().map(|d| d.status()).collect();
        serde_json::to_value(all).unwrap_or(serde_json::Value::Null)
    }

    fn readiness(&self) -> Vec<String> {
        self.clients()
            .map(|d| {
                let s = d.status();
                let up = s.servers.iter().filter(|s| s.up).count();
                format!(
                    "directory {}: {} ({up} of {} servers up)",
                    s.name,
                    if s.up { "up" } else { "down" },
                    s.servers.len()
                )
            })
            .collect()
    }
}

/// `[[directory]]` in `portcullis config example`: none by default, so every line is a
/// comment (the example parses to the defaults).
pub const EXAMPLE: &str = r#"
# Existing LDAP directories (OpenLDAP, FreeIPA/389-ds, Active Directory) that check the
# passwords of users the local store does not hold, behind the core's throttling, fair
# queuing and attack rules (docs/upstream-ldap.md). None by default; one section each.
# [[directory]]
# Its name in audit events, metrics, /readyz and the status page.
# name = "corp"
# Which users: names ending in @REALM (sent as given). Absent: every name not in the
# local store and not taken by another directory's realm (at most one has no realm).
# realm = "corp.example.com"
# Servers in failover order: ldaps://host[:port] (636), or ldap://host[:port] (389)
# upgraded with StartTLS.
# servers = ["ldaps://ldap1.example.com", "ldaps://ldap2.example.com"]
# PEM file of the CA that signed the servers' certificates (required with TLS; the
# system's roots are not used).
# ca_file = "/etc/portcullis/ldap-ca.pem"
# For ldap:// servers: StartTLS before anything else.
# starttls = true
# Allow ldap:// with starttls = false: passwords in clear text. Never in production.
# allow_plaintext = false
# DN-template mode: the user's bind DN, {user} escaped per RFC 4514. Or [directory.search].
# bind_dn_template = "uid={user},ou=people,dc=example,dc=com"
# Failed guesses at one user let through from untrusted origins at once (replaces
# [verifier.throttle] principal when smaller); must stay below the directory's lockout.
# failure_budget = 3
# Seconds for that budget to refill.
# failure_budget_period_secs = 3600
# The directory's own lockout threshold (ppolicy pwdMaxFailure, AD lockoutThreshold):
# failure_budget must be below it (doctor also reads the directory's policy).
# lockout_threshold = 5
# Credential cache: keep a [policy] hash for this many seconds after a successful bind,
# used only while the directory is unavailable. 0: off (see the docs for the trade-off).
# cache_max_age_secs = 0
# Search-then-bind mode instead of bind_dn_template: a service account finds the entry.
# [directory.search]
# base = "dc=example,dc=com"
# filter = "(&(objectClass=person)(uid={user}))"
# Active Directory: "(&(objectCategory=person)(sAMAccountName={user}))"
# service_dn = "cn=portcullis,ou=services,dc=example,dc=com"
# service_password_file = "/etc/portcullis/ldap-service.pw"
# (or service_password = "..." inline)
# Time limits in milliseconds; check_ms bounds the whole check.
# [directory.timeouts]
# connect_ms = 2000
# bind_ms = 3000
# search_ms = 3000
# check_ms = 8000
# Idle connections kept per server, and their age limit.
# [directory.pool]
# max_idle_per_server = 8
# idle_timeout_ms = 60000
# Checks in flight on this directory (bounded, queued fairly per origin).
# [directory.admission]
# max_in_flight = 32
# max_in_flight_per_source = 8
# max_queued = 256
# max_queued_per_source = 16
# A server that fails this many times in a row is skipped for open_ms, then probed.
# [directory.breaker]
# failures_to_open = 3
# open_ms = 5000
"#;
