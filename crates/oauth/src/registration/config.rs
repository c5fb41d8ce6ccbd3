//! The `[registration]` section: whether RFC 7591 dynamic client registration is on,
//! what any registered client may be given, and whose software statements are trusted.

use std::path::PathBuf;
use std::time::Duration;

use portcullis_store::Grant;
use portcullis_store::registration::DEFAULT_REGISTRATION_AUTH_METHODS;
use serde::Deserialize;

use crate::client_auth::keys::{self, VerifyKey};
use portcullis_door::config_error::{ConfigError, invalid};

/// `[registration]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileRegistration {
    /// Serve `POST /oauth2/register` and the RFC 7592 configuration endpoint. Default off.
    pub enabled: bool,
    /// Grant types any registered client may use (an initial access token narrows this).
    pub grant_types: Vec<String>,
    /// `token_endpoint_auth_method`s any registered client may use (the RFC 8705 ones
    /// need `[tls]` asking for client certificates, and `tls.client_ca` for
    /// `tls_client_auth`).
    pub auth_methods: Vec<String>,
    /// Lifetime of the access tokens of registered clients, in seconds.
    pub token_lifetime_secs: u32,
    /// Refuse registrations without a software statement from a trusted issuer.
    pub require_software_statement: bool,
    /// Issuers whose signed software statements are accepted.
    pub software_statement_issuers: Vec<FileStatementIssuer>,
}

/// One `[[registration.software_statement_issuers]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileStatementIssuer {
    /// The statement's `iss` claim.
    pub issuer: String,
    /// Its public keys: a JWKS (or JWK) or PEM public keys / certificates.
    pub keys_file: PathBuf,
}

impl Default for FileRegistration {
    fn default() -> Self {
        FileRegistration {
            enabled: false,
            grant_types: vec!["client_credentials".into()],
            auth_methods: DEFAULT_REGISTRATION_AUTH_METHODS
                .map(str::to_owned)
                .to_vec(),
            token_lifetime_secs: 3600,
            require_software_statement: false,
            software_statement_issuers: Vec::new(),
        }
    }
}

/// A trusted software statement issuer with its parsed keys.
#[derive(Debug, Clone)]
pub struct StatementIssuer {
    /// `iss`.
    pub issuer: String,
    /// Keys that may sign its statements.
    pub keys: Vec<VerifyKey>,
}

/// Validated `[registration]`.
#[derive(Debug, Clone)]
pub struct RegistrationConfig {
    /// Registration endpoints served.
    pub enabled: bool,
    /// Grants any registered client may use.
    pub grants: Vec<Grant>,
    /// Auth methods any registered client may use.
    pub auth_methods: Vec<String>,
    /// Registered clients' token lifetime.
    pub token_lifetime: Duration,
    /// Only registrations with a trusted software statement.
    pub require_software_statement: bool,
    /// Trusted software statement issuers.
    pub issuers: Vec<StatementIssuer>,
}

impl Default for RegistrationConfig {
    fn default() -> Self {
        RegistrationConfig {
            enabled: false,
            grants: vec![Grant::ClientCredentials],
            auth_methods: DEFAULT_REGISTRATION_AUTH_METHODS
                .map(str::to_owned)
                .to_vec(),
            token_lifetime: Duration::from_secs(3600),
            require_software_statement: false,
            issuers: Vec::new(),
        }
    }
}

impl FileRegistration {
    /// Check values and read the issuers' key files.
    pub fn validate(self) -> Result<RegistrationConfig, ConfigError> {
        let grants = self
            .grant_types
            .iter()
            .map(|g| {
                g.parse::<Grant>()
                    .map_err(|e| invalid(format!("registration.grant_types: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if grants.is_empty() {
            return Err(invalid(
                "registration.grant_types must name at least one grant",
            ));
        }
        portcullis_store::registration::validate_auth_methods(&self.auth_methods)
            .map_err(|e| invalid(format!("registration.auth_methods: {e}")))?;
        portcullis_store::record::validate_token_lifetime(self.token_lifetime_secs)
            .map_err(|e| invalid(format!("registration.token_lifetime_secs: {e}")))?;
        let mut issuers: Vec<StatementIssuer> = Vec::new();
        for i in self.software_statement_issuers {
            if i.issuer.is_empty() || i.issuer.len() > 255 {
                return Err(invalid(
                    "registration.software_statement_issuers: issuer must be 1-255 bytes",
                ));
            }
            if issuers.iter().any(|x| x.issuer == i.issuer) {
                return Err(invalid(format!(
                    "registration.software_statement_issuers: {:?} is listed twice",
                    i.issuer
                )));
            }
            let text = std::fs::read_to_string(&i.keys_file).map_err(|e| {
                invalid(format!(
                    "registration.software_statement_issuers: reading {}: {e}",
                    i.keys_file.display()
                ))
            })?;
            let keys = keys::parse(&text).map_err(|e| {
                invalid(format!(
                    "registration.software_statement_issuers: {}: {e}",
                    i.keys_file.display()
                ))
            })?;
            issuers.push(StatementIssuer {
                issuer: i.issuer,
                keys,
            });
        }
        if self.require_software_statement && issuers.is_empty() {
            return Err(invalid(
                "registration.require_software_statement needs software_statement_issuers \
                 (else every registration would be refused)",
            ));
        }
        Ok(RegistrationConfig {
            enabled: self.enabled,
            grants,
            auth_methods: self.auth_methods,
            token_lifetime: Duration::from_secs(u64::from(self.token_lifetime_secs)),
            require_software_statement: self.require_software_statement,
            issuers,
        })
    }
}

/// The `[registration]` part of `portcullis config example`.
pub const EXAMPLE: &str = r#"[registration]
# RFC 7591 dynamic client registration at POST /oauth2/register (advertised as
# registration_endpoint in the discovery metadata) and RFC 7592 read/update/delete at
# the registration_client_uri it returns. Off by default. Every registration needs an
# initial access token (`portcullis registration token create`), which bounds how many
# clients it registers, until when, and their scopes, grants and auth methods. Each
# registered client gets a registration access token, shown once. Failed token checks
# count against the same failure budgets as wrong client secrets. jwks_uri is never
# fetched: private_key_jwt clients send their public keys inline (jwks).
enabled = false
# Grant types any registered client may use (client_credentials, password).
grant_types = ["client_credentials"]
# token_endpoint_auth_method values any registered client may use. Also possible:
# "tls_client_auth" (registers tls_client_auth_subject_dn; needs tls.client_ca) and
# "self_signed_tls_client_auth" (its certificate inline in jwks as x5c; needs [tls]).
auth_methods = ["client_secret_basic", "client_secret_post", "private_key_jwt"]
# Lifetime of the access tokens of registered clients, in seconds (60-86400).
token_lifetime_secs = 3600
# Refuse registrations without a software statement (RFC 7591 2.3) from an issuer below.
require_software_statement = false
# Issuers whose signed software statements are accepted (RS256, PS256, ES256, EdDSA);
# a statement's claims take precedence over the same metadata sent beside it. A statement
# from any other issuer or key is refused (unapproved_software_statement).
# [[registration.software_statement_issuers]]
# issuer = "https://partners.example.com"
# keys_file = "/etc/portcullis/partners-jwks.json"

"#;
