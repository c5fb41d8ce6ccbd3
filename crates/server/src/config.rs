//! Configuration: the TOML file (`portcullis serve --config FILE`), its documented example
//! (`portcullis config example`) and validation into the typed [`Config`] the server runs on.
//!
//! Two layers: `File*` structs mirror the TOML exactly (every section
//! `#[serde(deny_unknown_fields)]`, so a typo is an error naming the key and line), and
//! [`Config`] holds validated, typed values. Every field has a default, so an empty file
//! (or no file at all) is a working configuration.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use portcullis_hash::Policy;
use serde::Deserialize;

use portcullis_door::tls::TlsSettings;
use portcullis_door::tls::config::FileTls;
use portcullis_oauth::client_auth::config::{ClientAuthConfig, FileClientAuth};

pub use portcullis_door::config_error::ConfigError;
pub(crate) use portcullis_door::config_error::invalid;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileConfig {
    /// `[server]`
    pub server: FileServer,
    /// `[tls]` (absent: plain HTTP)
    pub tls: Option<FileTls>,
    /// `[client_auth]`: keys and certificates instead of client secrets (issue 14).
    pub client_auth: FileClientAuth,
    /// `[tokens]`
    pub tokens: FileTokens,
    /// `[verifier]`: the verification core's own configuration, embedded as is.
    pub verifier: portcullis_core::VerifierConfig,
    /// `[policy]`: the hash crate's policy configuration, embedded as is.
    pub policy: portcullis_hash::policy::PolicyConfig,
    /// `[store]`
    pub store: FileStore,
    /// `[throttle]`: where failure budgets live (absent: in this process).
    pub throttle: FileThrottle,
    /// `[radius]` (absent: no UDP listener)
    pub radius: portcullis_door_radius::config::FileRadius,
    /// `[accounting]` (used when `radius.accounting_listen` is set)
    pub accounting: portcullis_door_radius::acct::config::FileAccounting,
    /// `[audit]`: where authentication events go.
    pub audit: portcullis_door::audit::FileAudit,
    /// `[log]`: the log stream's format and level.
    pub log: crate::logging::FileLog,
    /// `[admin]`: the admin API's listener (absent: off).
    pub admin: portcullis_door_admin::config::FileAdmin,
    /// `[registration]`: RFC 7591/7592 dynamic client registration (off by default).
    pub registration: portcullis_oauth::registration::config::FileRegistration,
    /// `[ldap]`: the LDAP door (issue 39; off unless it has a listener).
    pub ldap: portcullis_door_ldap::FileLdap,
}

/// `[server]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileServer {
    /// Listen address.
    pub http: String,
    /// Issuer URL; default derived from the listen address.
    pub issuer: Option<String>,
    /// Largest accepted request body in bytes.
    pub body_limit: usize,
    /// Deadline for a whole request, in milliseconds.
    pub request_timeout_ms: u64,
    /// Deadline for receiving request headers, in milliseconds.
    pub header_timeout_ms: u64,
    /// Largest request head (request line and headers) in bytes; larger is 431.
    pub max_header_bytes: usize,
    /// Simultaneous connections accepted; further ones wait in the kernel backlog.
    pub max_connections: usize,
    /// Simultaneous connections from one address (trusted proxies exempt); a connection
    /// beyond it is closed at once, so one host cannot hold the server's connections.
    pub max_connections_per_source: usize,
    /// Peers (CIDR or address) that are load balancers: only for them is the client
    /// address taken from `forwarded_header`. Default empty: no peer is trusted,
    /// loopback included, and every request's source is its connection's peer.
    pub trusted_proxies: Vec<String>,
    /// The header the trusted proxies write: "x-forwarded-for" (default) or "forwarded"
    /// (RFC 7239). Only this one is read.
    pub forwarded_header: portcullis_door::forwarded::ForwardedHeader,
    /// Connections from trusted proxies start with a PROXY protocol v2 header naming the
    /// client (HAProxy `send-proxy-v2`); it is required from them and read from nobody else.
    pub proxy_protocol: bool,
}

impl Default for FileServer {
    fn default() -> Self {
        FileServer {
            http: "127.0.0.1:8080".into(),
            issuer: None,
            body_limit: 16 * 1024,
            request_timeout_ms: 10_000,
            header_timeout_ms: 10_000,
            max_header_bytes: 16 * 1024,
            max_connections: 10_000,
            max_connections_per_source: 256,
            trusted_proxies: Vec::new(),
            forwarded_header: Default::default(),
            proxy_protocol: false,
        }
    }
}

/// `[tokens]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileTokens {
    /// `aud` claim; default: the issuer URL.
    pub audience: Option<String>,
    /// Longest access token lifetime in seconds (a client's own shorter lifetime wins).
    pub lifetime_secs: u64,
    /// Signing key rotation period in seconds.
    pub key_rotation_secs: u64,
}

impl Default for FileTokens {
    fn default() -> Self {
        FileTokens {
            audience: None,
            lifetime_secs: 3600,
            key_rotation_secs: 30 * 24 * 3600,
        }
    }
}

/// `[store]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileStore {
    /// Data directory (SQLite database, secrets file).
    pub data_dir: PathBuf,
    /// How long client records (secret hashes, scopes, grants) and users' password hashes
    /// are cached, in milliseconds.
    pub client_cache_ttl_ms: u64,
    /// `postgres://` URL of a shared identity store; absent: SQLite in `data_dir`.
    pub url: Option<String>,
    /// Secrets file (peppers, master key) used with `url`; default `<data_dir>/secrets.toml`.
    pub secrets_file: Option<PathBuf>,
    /// `postgres://` URL of a read replica for identity lookups on a cache miss (with
    /// `url`); see [`portcullis_oauth::replica`] for the lag bound.
    pub read_url: Option<String>,
    /// Most PostgreSQL connections of this instance.
    pub max_connections: u32,
}

impl Default for FileStore {
    fn default() -> Self {
        FileStore {
            data_dir: PathBuf::from("./portcullis-data"),
            client_cache_ttl_ms: 1000,
            url: None,
            secrets_file: None,
            read_url: None,
            max_connections: 16,
        }
    }
}

/// `[throttle]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileThrottle {
    /// Redis shared by every instance (a URL, or a Cluster or Sentinel table: see
    /// [`crate::redis_config`]); absent: budgets in this process.
    pub redis: Option<crate::redis_config::FileRedis>,
    /// Namespace of the keys in Redis.
    pub key_prefix: String,
    /// Bound on one Redis call in milliseconds.
    pub timeout_ms: u64,
    /// After a Redis failure, milliseconds on per-instance budgets before trying again.
    pub retry_ms: u64,
}

impl Default for FileThrottle {
    fn default() -> Self {
        FileThrottle {
            redis: None,
            key_prefix: "portcullis".into(),
            timeout_ms: 200,
            retry_ms: 1000,
        }
    }
}

/// Where the identity store lives.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreBackend {
    /// Embedded SQLite in the data directory, secrets file beside it (the default).
    Sqlite,
    /// PostgreSQL shared by every instance; the secrets file is given to each instance.
    Postgres {
        /// Connection URL (may hold a password: never printed).
        url: String,
        /// Secrets file path.
        secrets_file: PathBuf,
        /// Pool size.
        max_connections: u32,
    },
}

impl std::fmt::Debug for StoreBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreBackend::Sqlite => f.write_str("Sqlite"),
            StoreBackend::Postgres {
                url,
                secrets_file,
                max_connections,
            } => f
                .debug_struct("Postgres")
                .field("url", &portcullis_store::backend::without_credentials(url))
                .field("secrets_file", secrets_file)
                .field("max_connections", max_connections)
                .finish(),
        }
    }
}

/// The validated configuration the server runs on.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listen address (`--http` overrides).
    pub http: SocketAddr,
    /// Issuer URL without trailing slash; `None`: derived from the bound address at start.
    pub issuer: Option<String>,
    /// Largest accepted request body.
    pub body_limit: usize,
    /// Deadline for a whole request; also the deadline handed to the core.
    pub request_timeout: Duration,
    /// Deadline for request headers (slow-loris defence); also the idle limit.
    pub header_timeout: Duration,
    /// Largest request head in bytes.
    pub max_header_bytes: usize,
    /// Simultaneous connections.
    pub max_connections: usize,
    /// Simultaneous connections from one address (trusted proxies exempt).
    pub max_connections_per_source: usize,
    /// Load balancers whose forwarding header names the real client.
    pub trusted_proxies: portcullis_door::forwarded::TrustedProxies,
    /// Trusted proxies' connections start with a PROXY protocol v2 header.
    pub proxy_protocol: bool,
    /// TLS, if enabled.
    pub tls: Option<TlsSettings>,
    /// `private_key_jwt` assertion rules and the replay cache.
    pub client_auth: ClientAuthConfig,
    /// `aud` claim; `None`: the issuer.
    pub audience: Option<String>,
    /// Longest access token lifetime (a client's own shorter lifetime wins); also the
    /// retention bound of retired signing keys.
    pub token_lifetime: Duration,
    /// Signing key rotation period.
    pub key_rotation: Duration,
    /// The verification core's configuration.
    pub verifier: portcullis_core::VerifierConfig,
    /// Hash policy for new password hashes and rehash-on-login.
    pub policy: Policy,
    /// Data directory.
    pub data_dir: PathBuf,
    /// The identity store: SQLite in `data_dir`, or a shared PostgreSQL.
    pub store: StoreBackend,
    /// A PostgreSQL replica for lookups on a cache miss (`[store] read_url`).
    pub store_read_url: Option<String>,
    /// Shared failure budgets in Redis; `None`: in this process.
    pub throttle_redis: Option<portcullis_store::RedisThrottleConfig>,
    /// Client record cache lifetime (0 disables the cache).
    pub client_cache_ttl: Duration,
    /// The RADIUS front end (`listen` empty: off).
    pub radius: portcullis_door_radius::config::RadiusConfig,
    /// RADIUS accounting: queue, batches, retention.
    pub accounting: portcullis_door_radius::acct::config::AcctConfig,
    /// Audit events: destination and per-source rate limit.
    pub audit: portcullis_door::audit::AuditConfig,
    /// The log stream.
    pub log: crate::logging::LogConfig,
    /// The admin API (`listen` `None`: off).
    pub admin: portcullis_door_admin::config::AdminConfig,
    /// Dynamic client registration.
    pub registration: portcullis_oauth::registration::config::RegistrationConfig,
    /// The LDAP door (no listener: off).
    pub ldap: portcullis_door_ldap::LdapConfig,
}

impl Default for Config {
    fn default() -> Self {
        // The defaults are valid by construction (tested below).
        match Config::from_file(FileConfig::default()) {
            Ok(c) => c,
            Err(e) => unreachable!("default configuration is invalid: {e}"),
        }
    }
}

impl Config {
    /// Parse and validate TOML text.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let file: FileConfig = toml::from_str(text)?;
        Config::from_file(file)
    }

    /// Read, parse and validate a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse(&text)
    }

    /// Validate the file layer into a typed configuration.
    pub fn from_file(f: FileConfig) -> Result<Config, ConfigError> {
        let http: SocketAddr = f.server.http.parse().map_err(|_| {
            invalid(format!(
                "server.http: '{}' is not an address like 127.0.0.1:8080",
                f.server.http
            ))
        })?;
        let issuer = f.server.issuer.map(|i| validate_issuer(&i)).transpose()?;
        if !(256..=1 << 20).contains(&f.server.body_limit) {
            return Err(invalid("server.body_limit must be between 256 and 1048576"));
        }
        let ms = |v: u64, name: &str| {
            if (1..=600_000).contains(&v) {
                Ok(Duration::from_millis(v))
            } else {
                Err(invalid(format!("{name} must be between 1 and 600000")))
            }
        };
        let request_timeout = ms(f.server.request_timeout_ms, "server.request_timeout_ms")?;
        let header_timeout = ms(f.server.header_timeout_ms, "server.header_timeout_ms")?;
        if f.server.max_connections == 0 {
            return Err(invalid("server.max_connections must be at least 1"));
        }
        if !(8192..=1 << 20).contains(&f.server.max_header_bytes) {
            return Err(invalid(
                "server.max_header_bytes must be between 8192 and 1048576",
            ));
        }
        if f.server.max_connections_per_source == 0 {
            return Err(invalid(
                "server.max_connections_per_source must be at least 1",
            ));
        }
        let trusted_proxies = portcullis_door::forwarded::TrustedProxies {
            ranges: f
                .server
                .trusted_proxies
                .iter()
                .map(|r| {
                    r.parse()
                        .map_err(|e| invalid(format!("server.trusted_proxies: {e}")))
                })
                .collect::<Result<_, _>>()?,
            header: f.server.forwarded_header,
        };
        if f.server.proxy_protocol && trusted_proxies.ranges.is_empty() {
            return Err(invalid(
                "server.proxy_protocol needs server.trusted_proxies (whose headers to read)",
            ));
        }
        let tls = f
            .tls
            .map(portcullis_door::tls::config::validate)
            .transpose()?;
        let admin = f.admin.validate(
            tls.is_some(),
            tls.as_ref().is_some_and(|t| t.client_certificates),
        )?;
        let client_auth = f.client_auth.validate()?;
        if f.tokens.lifetime_secs == 0 || f.tokens.lifetime_secs > 24 * 3600 {
            return Err(invalid("tokens.lifetime_secs must be between 1 and 86400"));
        }
        if f.tokens.key_rotation_secs < 60 {
            return Err(invalid("tokens.key_rotation_secs must be at least 60"));
        }
        if let Some(a) = &f.tokens.audience
            && a.is_empty()
        {
            return Err(invalid("tokens.audience must not be empty"));
        }
        f.verifier
            .validate()
            .map_err(|e| invalid(format!("[verifier] {e}")))?;
        let policy = validate_policy(f.policy)?;
        if f.store.client_cache_ttl_ms > 60_000 {
            return Err(invalid(
                "store.client_cache_ttl_ms must be at most 60000 (changes must take effect)",
            ));
        }
        let radius = portcullis_door_radius::config::RadiusConfig::from_file(f.radius)?;
        let accounting = portcullis_door_radius::acct::config::AcctConfig::from_file(f.accounting)?;
        let audit = portcullis_door::audit::AuditConfig::from_file(f.audit)?;
        let log = crate::logging::LogConfig::from_file(f.log)?;
        let registration = f.registration.validate()?;
        let ldap = f.ldap.validate(tls.is_some())?;
        // A method registered clients cannot use would register clients that never get
        // a token: refuse it here instead.
        let offers =
            |m: &str| registration.enabled && registration.auth_methods.iter().any(|a| a == m);
        if offers("tls_client_auth") && tls.as_ref().is_none_or(|t| t.client_ca.is_none()) {
            return Err(invalid(
                "registration.auth_methods has tls_client_auth: it needs [tls] with client_ca",
            ));
        }
        if offers("self_signed_tls_client_auth")
            && !tls.as_ref().is_some_and(|t| t.client_certificates)
        {
            return Err(invalid(
                "registration.auth_methods has self_signed_tls_client_auth: it needs [tls] \
                 with client_certificates = true",
            ));
        }
        let store = match f.store.url {
            None => {
                if f.store.secrets_file.is_some() {
                    return Err(invalid(
                        "store.secrets_file is for store.url (SQLite keeps it in data_dir)",
                    ));
                }
                StoreBackend::Sqlite
            }
            Some(url) => {
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err(invalid(
                        "store.url must be a postgres:// URL (absent: SQLite in data_dir)",
                    ));
                }
                if !(1..=1000).contains(&f.store.max_connections) {
                    return Err(invalid("store.max_connections must be between 1 and 1000"));
                }
                // Issue 29: a shared store means several instances; each would derive its
                // issuer from its own address and reject the others' tokens.
                if issuer.is_none() {
                    return Err(invalid(SHARED_STORE_NEEDS_ISSUER));
                }
                StoreBackend::Postgres {
                    url,
                    secrets_file: f.store.secrets_file.unwrap_or_else(|| {
                        f.store
                            .data_dir
                            .join(portcullis_store::datadir::SECRETS_FILE)
                    }),
                    max_connections: f.store.max_connections,
                }
            }
        };
        let store_read_url = match (f.store.read_url, &store) {
            (None, _) => None,
            (Some(u), StoreBackend::Postgres { .. })
                if u.starts_with("postgres://") || u.starts_with("postgresql://") =>
            {
                Some(u)
            }
            (Some(_), StoreBackend::Postgres { .. }) => {
                return Err(invalid("store.read_url must be a postgres:// URL"));
            }
            (Some(_), StoreBackend::Sqlite) => {
                return Err(invalid(
                    "store.read_url is a replica of store.url: set store.url too",
                ));
            }
        };
        let throttle_redis = match f.throttle.redis {
            None => None,
            Some(redis) => {
                let cfg = portcullis_store::RedisThrottleConfig {
                    target: redis.target()?,
                    key_prefix: f.throttle.key_prefix,
                    timeout: ms(f.throttle.timeout_ms, "throttle.timeout_ms")?,
                    retry: ms(f.throttle.retry_ms, "throttle.retry_ms")?,
                };
                // Parses the URL and the prefix now, so `config check` reports them.
                portcullis_store::RedisThrottleStore::new(&cfg)
                    .map_err(|e| invalid(format!("throttle.redis: {e}")))?;
                Some(cfg)
            }
        };
        Ok(Config {
            http,
            issuer,
            body_limit: f.server.body_limit,
            request_timeout,
            header_timeout,
            max_header_bytes: f.server.max_header_bytes,
            max_connections: f.server.max_connections,
            max_connections_per_source: f.server.max_connections_per_source,
            trusted_proxies,
            proxy_protocol: f.server.proxy_protocol,
            tls,
            client_auth,
            audience: f.tokens.audience,
            token_lifetime: Duration::from_secs(f.tokens.lifetime_secs),
            key_rotation: Duration::from_secs(f.tokens.key_rotation_secs),
            verifier: f.verifier,
            policy,
            data_dir: f.store.data_dir,
            store,
            store_read_url,
            throttle_redis,
            client_cache_ttl: Duration::from_millis(f.store.client_cache_ttl_ms),
            radius,
            accounting,
            audit,
            log,
            admin,
            registration,
            ldap,
        })
    }
}

/// Why a shared store without `server.issuer` is refused (`config check`, `serve`, `doctor`).
pub const SHARED_STORE_NEEDS_ISSUER: &str = "store.url (a PostgreSQL store shared by several \
     instances) needs server.issuer: without it each instance derives its issuer from its own \
     address and rejects the others' tokens; set server.issuer to the load balancer's URL";

/// RFC 8414 2: the issuer is an http(s) URL with no query or fragment.
pub fn validate_issuer(i: &str) -> Result<String, ConfigError> {
    let rest = i
        .strip_prefix("https://")
        .or_else(|| i.strip_prefix("http://"))
        .ok_or_else(|| invalid("server.issuer must start with https:// or http://"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(invalid("server.issuer has no host"));
    }
    if i.contains(['?', '#']) || i.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            "server.issuer must not contain a query, fragment or whitespace",
        ));
    }
    Ok(i.trim_end_matches('/').to_owned())
}

fn validate_policy(p: portcullis_hash::policy::PolicyConfig) -> Result<Policy, ConfigError> {
    p.into_policy()
        .map_err(|e| invalid(format!("policy: {}", e.0)))
}

pub use crate::config_example::example;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_5_example_parses_to_the_defaults() {
        let from_example = Config::parse(&example()).unwrap();
        let defaults = Config::parse("").unwrap();
        assert_eq!(format!("{from_example:?}"), format!("{defaults:?}"));
        assert_eq!(defaults.http, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(defaults.data_dir, PathBuf::from("./portcullis-data"));
    }

    #[test]
    fn issue_5_unknown_key_is_an_error_naming_the_key() {
        for (text, key) in [
            (
                "[server]\nhttp = \"127.0.0.1:1\"\nbogus_key = 1\n",
                "bogus_key",
            ),
            ("[tokens]\nlifetime = 5\n", "lifetime"),
            ("[store]\ndatadir = \"x\"\n", "datadir"),
            ("[sever]\n", "sever"),
            ("[policy]\nalgo = \"x\"\n", "algo"),
            ("[verifier]\nnot_a_verifier_key = 1\n", "not_a_verifier_key"),
            (
                "[tls]\ncert = \"a\"\nkey = \"b\"\nciphers = []\n",
                "ciphers",
            ),
        ] {
            let err = Config::parse(text).unwrap_err().to_string();
            assert!(err.contains(key), "{text:?}: {err}");
            assert!(err.contains("line"), "{text:?}: {err}");
        }
    }

    #[test]
    fn invalid_values_are_rejected_with_the_field_name() {
        for (text, needle) in [
            ("[server]\nhttp = \"nope\"\n", "server.http"),
            ("[server]\nissuer = \"ftp://x\"\n", "server.issuer"),
            ("[server]\nissuer = \"https://x/?a\"\n", "server.issuer"),
            ("[server]\nbody_limit = 1\n", "server.body_limit"),
            ("[tokens]\nlifetime_secs = 0\n", "tokens.lifetime_secs"),
            (
                "[policy]\nalgorithm = \"md5\"\n",
                "policy: unknown algorithm",
            ),
            (
                "[policy]\nalgorithm = \"argon2id\"\niterations = 5\n",
                "iterations",
            ),
            (
                "[tls]\ncert = \"a\"\nkey = \"b\"\nversions = [\"1.1\"]\n",
                "tls.versions",
            ),
            (
                "[registration]\nenabled = true\nauth_methods = [\"tls_client_auth\"]\n",
                "tls_client_auth: it needs [tls] with client_ca",
            ),
            (
                "[registration]\nenabled = true\n\
                 auth_methods = [\"self_signed_tls_client_auth\"]\n",
                "self_signed_tls_client_auth: it needs [tls]",
            ),
        ] {
            let err = Config::parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn issue_29_a_shared_store_without_issuer_is_refused() {
        let shared = "[store]\nurl = \"postgres://db.internal/portcullis\"\n";
        let err = Config::parse(shared).unwrap_err().to_string();
        assert!(err.contains("server.issuer"), "{err}");
        let with_issuer = format!("[server]\nissuer = \"https://auth.example.com\"\n{shared}");
        let c = Config::parse(&with_issuer).unwrap();
        assert!(matches!(c.store, StoreBackend::Postgres { .. }));
        // SQLite (one instance) still derives its issuer from its address.
        assert!(Config::parse("").unwrap().issuer.is_none());
    }

    #[test]
    fn issuer_trailing_slash_is_trimmed() {
        let c = Config::parse("[server]\nissuer = \"https://auth.example.com/\"\n").unwrap();
        assert_eq!(c.issuer.as_deref(), Some("https://auth.example.com"));
    }
}
