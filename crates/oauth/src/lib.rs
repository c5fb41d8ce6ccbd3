//! The OAuth capabilities the token endpoint (`portcullis-door-http`) and the admin API
//! (`portcullis-door-admin`) share, below both so neither depends on the other:
//!
//! - [`jwt`]: RFC 9068 access tokens signed with Ed25519, JWKS.
//! - [`keys`]: signing key persistence (sealed) and rotation ([`keys::KeyManager`]).
//! - [`cache`]: the short-TTL client record cache (also the core's credential source);
//!   [`replica`]: when a cache miss may read the PostgreSQL replica.
//! - [`client_auth`]: client authentication without a shared secret (`private_key_jwt`,
//!   mutual TLS).
//! - [`registration`]: dynamic client registration rules (`[registration]`, software
//!   statements, client metadata), without HTTP.
//! - [`OAuth`]: the issuer's state both doors read: issuer and audience, signing keys,
//!   clients, client authentication, and the check of a presented access token.
#![forbid(unsafe_code)]

pub mod cache;
pub mod client_auth;
pub mod jwt;
pub mod keys;
pub mod registration;
pub mod replica;

use std::sync::Arc;
use std::time::Duration;

use portcullis_door::tls::client_certs::ClientCa;
use portcullis_store::{NonceStore, RevocationStore};

use crate::cache::ClientCache;
use crate::client_auth::KeyCache;
use crate::client_auth::config::ClientAuthConfig;
use crate::jwt::AccessClaims;
use crate::keys::KeyManager;

/// The token issuer's state, shared by the HTTP and admin doors.
pub struct OAuth {
    /// `iss` of our tokens and base of the metadata URLs (no trailing slash).
    pub issuer: String,
    /// `aud` of our tokens.
    pub audience: String,
    /// Default lifetime of an access token.
    pub token_lifetime: Duration,
    /// Signing keys and their rotation.
    pub keys: KeyManager,
    /// Client records, cached briefly (also the core's credential source).
    pub clients: Arc<ClientCache>,
    /// Parsed client public keys (`private_key_jwt`).
    pub key_cache: KeyCache,
    /// Used `private_key_jwt` assertion ids until they expire: Redis when the budgets
    /// are there (so replays to another instance fail), else this process's memory.
    pub nonces: Arc<dyn NonceStore>,
    /// `[client_auth]`: assertion rules.
    pub client_auth: ClientAuthConfig,
    /// CAs of `tls_client_auth` clients' certificates (`[tls] client_ca`).
    pub client_ca: Option<Arc<ClientCa>>,
    /// Where revocations are kept.
    pub revocations: Arc<dyn RevocationStore>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.issuer)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// The store failed while a token was checked: what was being done, and the error.
#[derive(Debug)]
pub struct StoreFailure {
    /// What was being done ("checking a revocation").
    pub what: &'static str,
    /// Why it failed.
    pub error: Box<dyn std::error::Error + Send + Sync>,
}

impl OAuth {
    /// A presented token that verifies, is unexpired and not revoked.
    pub async fn active_claims(&self, token: &str) -> Result<Option<AccessClaims>, StoreFailure> {
        let now = u64::try_from(portcullis_door::unix_now()).unwrap_or(0);
        let claims = match self.keys.keys().verify(token, &self.issuer, now) {
            Ok(c) => c,
            // Perhaps signed by a key another instance has just started using: re-read the
            // keys (at most once a second, whatever a client sends) and try once more.
            Err(_) => match self.keys.refresh(portcullis_door::unix_now()).await {
                Ok(true) => match self.keys.keys().verify(token, &self.issuer, now) {
                    Ok(c) => c,
                    Err(_) => return Ok(None),
                },
                Ok(false) => return Ok(None),
                Err(error) => {
                    return Err(StoreFailure {
                        what: "reading signing keys",
                        error: error.into(),
                    });
                }
            },
        };
        match self.revocations.is_revoked(&claims.jti).await {
            Ok(true) => Ok(None),
            Ok(false) => Ok(Some(claims)),
            Err(error) => Err(StoreFailure {
                what: "checking a revocation",
                error: error.into(),
            }),
        }
    }
}
