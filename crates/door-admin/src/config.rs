//! The `[admin]` section: the admin API's own listener (off unless `listen` is set) and
//! its limits.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use portcullis_door::config_error::{ConfigError, invalid};

/// `[admin]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileAdmin {
    /// Address of the admin listener; absent: no admin API.
    pub listen: Option<String>,
    /// Largest request body in bytes.
    pub body_limit: usize,
    /// Simultaneous admin connections.
    pub max_connections: usize,
    /// Items per page when a list request gives no `limit`.
    pub page_size: u32,
    /// How long an Idempotency-Key and its answer are kept, in seconds.
    pub idempotency_ttl_secs: u64,
    /// PEM bundle of the CAs whose client certificates authenticate admin callers
    /// (mutual TLS instead of a bearer token); absent: tokens only.
    pub client_ca: Option<PathBuf>,
    /// What a certificate from `client_ca` allows: `portcullis:admin:read` or
    /// `portcullis:admin:write`.
    pub client_cert_scope: String,
}

impl Default for FileAdmin {
    fn default() -> Self {
        FileAdmin {
            listen: None,
            body_limit: 256 * 1024,
            max_connections: 64,
            page_size: 100,
            idempotency_ttl_secs: 86_400,
            client_ca: None,
            client_cert_scope: "portcullis:admin:read".into(),
        }
    }
}

/// Validated `[admin]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// Where the admin API listens (`None`: off).
    pub listen: Option<SocketAddr>,
    /// Largest request body.
    pub body_limit: usize,
    /// Simultaneous admin connections.
    pub max_connections: usize,
    /// Default page size.
    pub page_size: u32,
    /// Idempotency-Key retention.
    pub idempotency_ttl: Duration,
    /// CAs of admin client certificates (`None`: bearer tokens only).
    pub client_ca: Option<PathBuf>,
    /// A certificate caller may change things (`portcullis:admin:write`), not only read.
    pub client_cert_write: bool,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            listen: None,
            body_limit: 256 * 1024,
            max_connections: 64,
            page_size: 100,
            idempotency_ttl: Duration::from_secs(86_400),
            client_ca: None,
            client_cert_write: false,
        }
    }
}

impl FileAdmin {
    /// Check ranges. `tls`: the server has a `[tls]` section, which the admin listener
    /// then speaks too; without it only a loopback address is accepted, since admin
    /// bearer tokens must not cross a network in clear.
    /// `client_certs`: `[tls] client_certificates` (the handshake asks for certificates).
    pub fn validate(self, tls: bool, client_certs: bool) -> Result<AdminConfig, ConfigError> {
        let listen = match &self.listen {
            None => None,
            Some(a) => {
                let addr: SocketAddr = a.parse().map_err(|_| {
                    invalid(format!(
                        "admin.listen: '{a}' is not an address like 127.0.0.1:9090"
                    ))
                })?;
                if !tls && !addr.ip().is_loopback() {
                    return Err(invalid(format!(
                        "admin.listen {addr} is not a loopback address and there is no [tls]: \
                         admin tokens would cross the network in clear; configure [tls] or \
                         listen on 127.0.0.1 / ::1"
                    )));
                }
                Some(addr)
            }
        };
        if !(4096..=(16 << 20)).contains(&self.body_limit) {
            return Err(invalid(
                "admin.body_limit must be between 4096 and 16777216",
            ));
        }
        if !(1..=10_000).contains(&self.max_connections) {
            return Err(invalid("admin.max_connections must be between 1 and 10000"));
        }
        if !(1..=portcullis_store::versioned::MAX_PAGE - 1).contains(&self.page_size) {
            return Err(invalid(format!(
                "admin.page_size must be between 1 and {}",
                portcullis_store::versioned::MAX_PAGE - 1
            )));
        }
        if !(60..=30 * 86_400).contains(&self.idempotency_ttl_secs) {
            return Err(invalid(
                "admin.idempotency_ttl_secs must be between 60 and 2592000",
            ));
        }
        let client_cert_write = match self.client_cert_scope.as_str() {
            "portcullis:admin:read" => false,
            "portcullis:admin:write" => true,
            other => {
                return Err(invalid(format!(
                    "admin.client_cert_scope must be portcullis:admin:read or \
                     portcullis:admin:write, not {other:?}"
                )));
            }
        };
        if self.client_ca.is_some() && !(tls && client_certs) {
            return Err(invalid(
                "admin.client_ca needs [tls] with client_certificates = true: without TLS \
                 client certificates no admin certificate is ever presented",
            ));
        }
        Ok(AdminConfig {
            client_ca: self.client_ca,
            client_cert_write,
            listen,
            body_limit: self.body_limit,
            max_connections: self.max_connections,
            page_size: self.page_size,
            idempotency_ttl: Duration::from_secs(self.idempotency_ttl_secs),
        })
    }
}

/// The `[admin]` part of `portcullis config example`.
pub const EXAMPLE: &str = r#"
# The admin API (issue 27): clients, users, NAS, signing keys, revocations and the
# throttle over JSON at /admin/v1/ (OpenAPI document: /admin/v1/openapi.json), on its own
# listener. Callers present an access token this server issued (client_credentials) with
# scope portcullis:admin:read or portcullis:admin:write; make the first admin client with
# `portcullis client add ADMIN --scope portcullis:admin:write`. Failed admin
# authentication spends the same failure budgets as any other.
[admin]
# Address of the admin listener. Absent: no admin API (the default). Without [tls] only a
# loopback address is accepted; with [tls] the admin listener speaks TLS too.
# listen = "127.0.0.1:9090"
# Largest request body in bytes (413 beyond).
body_limit = 262144
# Simultaneous admin connections; further ones wait in the kernel's backlog.
max_connections = 64
# Items per page of a list without ?limit= (at most 999).
page_size = 100
# How long an Idempotency-Key and the answer it got are kept, in seconds. The answer of
# a creation holds the secret created once, so it is kept sealed under the master key.
idempotency_ttl_secs = 86400
# Mutual TLS instead of a token: client certificates chaining to these CAs (PEM bundle)
# authenticate admin callers (needs [tls] with client_certificates = true). The caller
# is recorded as cert:<subject DN>; failed certificates spend the failure budgets too.
# client_ca = "admin-ca.pem"
# What such a certificate allows: "portcullis:admin:read" or "portcullis:admin:write".
client_cert_scope = "portcullis:admin:read"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_loopback_only_without_tls() {
        assert_eq!(
            FileAdmin::default().validate(false, false).ok(),
            Some(AdminConfig::default())
        );
        let open = |a: &str| FileAdmin {
            listen: Some(a.into()),
            ..FileAdmin::default()
        };
        assert!(open("127.0.0.1:0").validate(false, false).is_ok());
        assert!(open("[::1]:0").validate(false, false).is_ok());
        let e = open("0.0.0.0:9090")
            .validate(false, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[tls]"), "{e}");
        assert!(open("0.0.0.0:9090").validate(true, true).is_ok());
        assert!(open("nonsense").validate(true, true).is_err());
        let ca = FileAdmin {
            client_ca: Some("ca.pem".into()),
            ..FileAdmin::default()
        };
        assert!(
            ca.validate(true, false).is_err(),
            "certificates never asked for"
        );
        let scope = FileAdmin {
            client_cert_scope: "admin".into(),
            ..FileAdmin::default()
        };
        assert!(scope.validate(true, true).is_err());
    }
}
