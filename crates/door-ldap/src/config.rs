//! `[ldap]`: the LDAP door's listeners, who may bind and search, and its bounds. The file
//! layer ([`FileLdap`], `deny_unknown_fields`) and the validated [`LdapConfig`]; the
//! server's `config.rs` embeds the first and calls [`FileLdap::validate`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use portcullis_door::config_error::{ConfigError, invalid};
use portcullis_door::forwarded::TrustedProxies;
use portcullis_door::tls::TlsSettings;
use portcullis_door::tls::config::FileTls;
use portcullis_ldap::Dn;
use serde::Deserialize;

/// The documented `[ldap]` section of `portcullis config example`.
pub const EXAMPLE: &str = r#"
# The LDAP door (issue 39; docs/ldap.md): applications bind as their users over LDAP and
# search users and groups. Off unless `listen` or `listen_tls` is set.
[ldap]
# The directory's base DN: users are uid=NAME,ou=people,BASE, groups cn=NAME,ou=groups,BASE,
# service accounts cn=CLIENT_ID,ou=services,BASE. Required with a listener.
# base_dn = "dc=example,dc=com"
# Plain LDAP (StartTLS offered on it when a certificate is configured), e.g. "0.0.0.0:389".
# listen = "127.0.0.1:3389"
# LDAPS (TLS from the first byte), e.g. "0.0.0.0:636"; needs [ldap.tls] or [tls].
# listen_tls = "127.0.0.1:6636"
# Simple binds carry the password in clear: on a plain connection without StartTLS they
# are answered confidentialityRequired (13) unless this is true (389-ds's
# require-secure-binds).
allow_plain_binds = false
# Searches without a bind (or after an anonymous bind). The root DSE is always readable.
allow_anonymous_search = false
# Users bound with their own password may search the directory (read-only).
allow_user_search = true
# The Password Modify extended operation (RFC 3062): a bound user changes its own
# password, old password required, under [policy] (as `portcullis user set-password`).
password_modify = false
# Connections at once, and from one source address (trusted proxies exempt).
max_connections = 4096
max_connections_per_source = 64
# Operations of one connection in progress at once; a connection over it is not read
# further until one is answered.
max_outstanding = 16
# Largest LDAP message accepted, in bytes; larger ones get a Notice of Disconnection.
max_message_bytes = 262144
# A connection with nothing in progress and no whole request for this long is closed.
idle_timeout_secs = 300
# The longest a bind waits for its verdict (queued behind the hash pool); past it the
# bind is answered busy (51).
bind_timeout_ms = 10000
# A failed bind (49: wrong password, unknown name, throttled) is answered no earlier than
# this many milliseconds after it arrived (a timer, no thread waits). A guessing client
# then costs itself a second per guess, throttled or not, instead of spinning on instant
# refusals at thousands of connections a second (the CPU honest binds need); 0 = off
# (then only [verifier] reject_delay_ms applies).
failed_bind_delay_ms = 1000
# Most entries one search (or one page of a paged search) returns; a client's smaller
# sizeLimit wins.
max_search_entries = 10000
# How long the directory view searches read (users and groups) is reused, in
# milliseconds; 0 reads the store for every search.
directory_cache_ms = 1000
# Peers (CIDR or address) that are load balancers: their connections must start with a
# PROXY protocol v2 header naming the client. Default: none.
trusted_proxies = []
# Its own certificate; without this section LDAPS and StartTLS use [tls]'s.
# [ldap.tls]
# cert = "/etc/portcullis/ldap.crt"
# key = "/etc/portcullis/ldap.key"
# Applications bind as cn=CLIENT_ID,ou=services,BASE with the client's generated secret
# (`portcullis client add CLIENT_ID`, rotated by `portcullis client rotate-secret`); only
# clients with a section here may bind, and they search only what it grants.
# [ldap.service_accounts.gitlab]
# A subtree under base_dn (default: the whole directory).
# search_base = "ou=people,dc=example,dc=com"
# Attributes it may read and filter on (default: every user attribute).
# attributes = ["uid", "cn", "mail", "memberOf"]
"#;

/// `[ldap]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileLdap {
    /// The directory's base DN (required with a listener).
    pub base_dn: Option<String>,
    /// Plain LDAP listener (StartTLS offered when a certificate is configured).
    pub listen: Option<String>,
    /// LDAPS listener.
    pub listen_tls: Option<String>,
    /// Simple binds on a plain connection without StartTLS are allowed.
    pub allow_plain_binds: bool,
    /// Searches without a bind are allowed (the root DSE always is).
    pub allow_anonymous_search: bool,
    /// Users bound with their password may search.
    pub allow_user_search: bool,
    /// The Password Modify extended operation is offered.
    pub password_modify: bool,
    /// Connections at once.
    pub max_connections: usize,
    /// Connections at once from one source address.
    pub max_connections_per_source: usize,
    /// Operations in progress per connection.
    pub max_outstanding: usize,
    /// Largest message in bytes.
    pub max_message_bytes: usize,
    /// Idle connections are closed after this many seconds.
    pub idle_timeout_secs: u64,
    /// The longest a bind waits for its verdict, in milliseconds.
    pub bind_timeout_ms: u64,
    /// A failed bind is answered no earlier than this after arrival, in milliseconds.
    pub failed_bind_delay_ms: u64,
    /// Most entries per search (or page).
    pub max_search_entries: usize,
    /// How long the directory view is reused, in milliseconds.
    pub directory_cache_ms: u64,
    /// Load balancers that send a PROXY protocol v2 header.
    pub trusted_proxies: Vec<String>,
    /// `[ldap.tls]`: the door's own certificate (default: `[tls]`'s).
    pub tls: Option<FileTls>,
    /// `[ldap.service_accounts.ID]`: what each application may search.
    pub service_accounts: BTreeMap<String, FileServiceAccount>,
}

impl Default for FileLdap {
    fn default() -> Self {
        FileLdap {
            base_dn: None,
            listen: None,
            listen_tls: None,
            allow_plain_binds: false,
            allow_anonymous_search: false,
            allow_user_search: true,
            password_modify: false,
            max_connections: 4096,
            max_connections_per_source: 64,
            max_outstanding: 16,
            max_message_bytes: 256 * 1024,
            idle_timeout_secs: 300,
            bind_timeout_ms: 10_000,
            failed_bind_delay_ms: 1000,
            max_search_entries: 10_000,
            directory_cache_ms: 1000,
            trusted_proxies: Vec::new(),
            tls: None,
            service_accounts: BTreeMap::new(),
        }
    }
}

/// `[ldap.service_accounts.ID]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileServiceAccount {
    /// The subtree it may search (default: the base DN).
    pub search_base: Option<String>,
    /// The attributes it may read (default: every user attribute).
    pub attributes: Option<Vec<String>>,
}

/// What a service account may search.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// Entries outside this subtree are invisible to it.
    pub search_base: Dn,
    /// The attributes it may read and filter on; `None`: all.
    pub attributes: Option<Vec<String>>,
}

/// The validated `[ldap]` section.
#[derive(Debug, Clone)]
pub struct LdapConfig {
    /// The base DN (the root when no listener is configured).
    pub base: Dn,
    /// Plain listener.
    pub listen: Option<SocketAddr>,
    /// LDAPS listener.
    pub listen_tls: Option<SocketAddr>,
    /// `[ldap.tls]`, if given.
    pub tls: Option<TlsSettings>,
    /// Simple binds allowed without TLS.
    pub allow_plain_binds: bool,
    /// Anonymous searches allowed.
    pub allow_anonymous_search: bool,
    /// Users may search.
    pub allow_user_search: bool,
    /// Password Modify offered.
    pub password_modify: bool,
    /// Connections at once.
    pub max_connections: usize,
    /// Connections per source.
    pub max_connections_per_source: usize,
    /// Operations in progress per connection.
    pub max_outstanding: usize,
    /// Largest message.
    pub max_message_bytes: usize,
    /// Idle limit.
    pub idle_timeout: Duration,
    /// A bind's deadline.
    pub bind_timeout: Duration,
    /// The earliest a failed bind is answered, from its arrival.
    pub failed_bind_delay: Duration,
    /// Most entries per search.
    pub max_search_entries: usize,
    /// The directory view's lifetime.
    pub directory_cache: Duration,
    /// Load balancers sending PROXY v2.
    pub trusted_proxies: TrustedProxies,
    /// Service accounts by client id.
    pub service_accounts: BTreeMap<String, Grant>,
}

impl Default for LdapConfig {
    fn default() -> Self {
        match FileLdap::default().validate(false) {
            Ok(c) => c,
            Err(e) => unreachable!("the default [ldap] is invalid: {e}"),
        }
    }
}

impl LdapConfig {
    /// Whether the door listens at all.
    pub fn enabled(&self) -> bool {
        self.listen.is_some() || self.listen_tls.is_some()
    }
}

fn address(field: &str, value: Option<&String>) -> Result<Option<SocketAddr>, ConfigError> {
    value
        .map(|a| {
            a.parse().map_err(|_| {
                invalid(format!(
                    "{field}: '{a}' is not an address like 127.0.0.1:389"
                ))
            })
        })
        .transpose()
}

fn within(field: &str, value: u64, lo: u64, hi: u64) -> Result<u64, ConfigError> {
    if (lo..=hi).contains(&value) {
        Ok(value)
    } else {
        Err(invalid(format!("{field} must be between {lo} and {hi}")))
    }
}

impl FileLdap {
    /// Check every field; `server_tls`: whether `[tls]` is configured (LDAPS and StartTLS
    /// use it when `[ldap.tls]` is absent).
    pub fn validate(self, server_tls: bool) -> Result<LdapConfig, ConfigError> {
        let listen = address("ldap.listen", self.listen.as_ref())?;
        let listen_tls = address("ldap.listen_tls", self.listen_tls.as_ref())?;
        let tls = self
            .tls
            .map(portcullis_door::tls::config::validate)
            .transpose()?;
        if listen_tls.is_some() && tls.is_none() && !server_tls {
            return Err(invalid(
                "ldap.listen_tls needs a certificate: [ldap.tls] or [tls]",
            ));
        }
        let base = match &self.base_dn {
            Some(s) => {
                let dn = Dn::parse(s).map_err(|e| invalid(format!("ldap.base_dn: {e}")))?;
                if dn.is_root() {
                    return Err(invalid("ldap.base_dn must not be empty"));
                }
                dn
            }
            None if listen.is_some() || listen_tls.is_some() => {
                return Err(invalid(
                    "[ldap] with a listener needs base_dn (e.g. \"dc=example,dc=com\")",
                ));
            }
            None => Dn::root(),
        };
        let count = |field: &str, v: usize, lo: usize, hi: usize| {
            within(field, v as u64, lo as u64, hi as u64).map(|v| v as usize)
        };
        let max_connections = count("ldap.max_connections", self.max_connections, 1, 1 << 20)?;
        let max_connections_per_source = count(
            "ldap.max_connections_per_source",
            self.max_connections_per_source,
            1,
            1 << 20,
        )?;
        let max_outstanding = count("ldap.max_outstanding", self.max_outstanding, 1, 1024)?;
        let max_message_bytes = count(
            "ldap.max_message_bytes",
            self.max_message_bytes,
            1024,
            16 << 20,
        )?;
        let idle = within("ldap.idle_timeout_secs", self.idle_timeout_secs, 1, 86_400)?;
        let bind = within("ldap.bind_timeout_ms", self.bind_timeout_ms, 1, 600_000)?;
        let failed = within(
            "ldap.failed_bind_delay_ms",
            self.failed_bind_delay_ms,
            0,
            60_000,
        )?;
        let max_search_entries = count(
            "ldap.max_search_entries",
            self.max_search_entries,
            1,
            1 << 24,
        )?;
        let cache = within(
            "ldap.directory_cache_ms",
            self.directory_cache_ms,
            0,
            60_000,
        )?;
        let trusted_proxies = TrustedProxies {
            ranges: self
                .trusted_proxies
                .iter()
                .map(|r| {
                    r.parse()
                        .map_err(|e| invalid(format!("ldap.trusted_proxies: {e}")))
                })
                .collect::<Result<_, _>>()?,
            header: Default::default(),
        };
        let service_accounts = self
            .service_accounts
            .into_iter()
            .map(|(id, s)| grant(&base, &id, s).map(|g| (id, g)))
            .collect::<Result<_, _>>()?;
        Ok(LdapConfig {
            base,
            listen,
            listen_tls,
            tls,
            allow_plain_binds: self.allow_plain_binds,
            allow_anonymous_search: self.allow_anonymous_search,
            allow_user_search: self.allow_user_search,
            password_modify: self.password_modify,
            max_connections,
            max_connections_per_source,
            max_outstanding,
            max_message_bytes,
            idle_timeout: Duration::from_secs(idle),
            bind_timeout: Duration::from_millis(bind),
            failed_bind_delay: Duration::from_millis(failed),
            max_search_entries,
            directory_cache: Duration::from_millis(cache),
            trusted_proxies,
            service_accounts,
        })
    }
}

/// One `[ldap.service_accounts.ID]`, checked against the base DN.
fn grant(base: &Dn, id: &str, s: FileServiceAccount) -> Result<Grant, ConfigError> {
    let field = format!("ldap.service_accounts.{id}");
    if id.is_empty() || id.chars().any(char::is_control) || id.trim() != id {
        return Err(invalid(format!("{field}: not a client id")));
    }
    let search_base = match s.search_base {
        None => base.clone(),
        Some(text) => {
            let dn = Dn::parse(&text).map_err(|e| invalid(format!("{field}.search_base: {e}")))?;
            if !dn.is_descendant_or_self(base) {
                return Err(invalid(format!(
                    "{field}.search_base: '{text}' is not under ldap.base_dn"
                )));
            }
            dn
        }
    };
    if let Some(list) = &s.attributes
        && list.iter().any(|a| a.is_empty())
    {
        return Err(invalid(format!("{field}.attributes: empty name")));
    }
    Ok(Grant {
        search_base,
        attributes: s.attributes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LdapConfig, ConfigError> {
        let f: FileLdap = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        f.validate(false)
    }

    #[test]
    fn the_example_parses_to_the_defaults() {
        let body = EXAMPLE.split_once("[ldap]\n").map_or("", |(_, b)| b);
        let example = parse(body).unwrap();
        let default = LdapConfig::default();
        assert_eq!(format!("{example:?}"), format!("{default:?}"));
        assert!(!default.enabled());
    }

    #[test]
    fn a_listener_needs_a_base_and_ldaps_a_certificate() {
        let e = parse("listen = \"127.0.0.1:0\"").unwrap_err().to_string();
        assert!(e.contains("base_dn"), "{e}");
        let e = parse("listen_tls = \"127.0.0.1:0\"\nbase_dn = \"dc=x\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("certificate"), "{e}");
        let c = parse("listen = \"127.0.0.1:0\"\nbase_dn = \"dc=example,dc=com\"").unwrap();
        assert!(c.enabled());
    }

    #[test]
    fn a_grant_outside_the_base_is_refused() {
        let text = "base_dn = \"dc=example,dc=com\"\n\
                    [service_accounts.app]\nsearch_base = \"ou=people,dc=other\"\n";
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains("not under ldap.base_dn"), "{e}");
        let text = "base_dn = \"dc=example,dc=com\"\n\
                    [service_accounts.app]\nsearch_base = \"ou=People,DC=example,dc=com\"\n";
        let c = parse(text).unwrap();
        assert!(c.service_accounts.contains_key("app"));
        let e = parse("base_dn = \"dc=x\"\n[service_accounts.app]\nbogus = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
    }
}
