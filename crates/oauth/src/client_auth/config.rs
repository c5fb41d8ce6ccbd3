//! The `[client_auth]` section: rules for `private_key_jwt` assertions and the size of
//! the per-instance replay cache.

use std::time::Duration;

use serde::Deserialize;

use portcullis_door::config_error::{ConfigError, invalid};

/// `[client_auth]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileClientAuth {
    /// Longest `exp - now` of an accepted assertion, seconds.
    pub max_assertion_lifetime_secs: u64,
    /// Tolerated clock difference on `exp`, `nbf`, `iat`, seconds.
    pub clock_skew_secs: u64,
    /// Assertions remembered by one instance without Redis.
    pub replay_cache_entries: usize,
}

impl Default for FileClientAuth {
    fn default() -> Self {
        FileClientAuth {
            max_assertion_lifetime_secs: 3600,
            clock_skew_secs: 60,
            replay_cache_entries: 1 << 20,
        }
    }
}

/// Validated `[client_auth]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAuthConfig {
    /// Longest accepted assertion lifetime (also the replay window to remember).
    pub max_assertion_lifetime: Duration,
    /// Tolerated clock difference.
    pub clock_skew: Duration,
    /// Live assertions one instance remembers when no Redis is configured.
    pub replay_cache_entries: usize,
}

impl Default for ClientAuthConfig {
    fn default() -> Self {
        // The defaults above always validate.
        ClientAuthConfig {
            max_assertion_lifetime: Duration::from_secs(3600),
            clock_skew: Duration::from_secs(60),
            replay_cache_entries: 1 << 20,
        }
    }
}

impl FileClientAuth {
    /// Check ranges.
    pub fn validate(self) -> Result<ClientAuthConfig, ConfigError> {
        if !(10..=86_400).contains(&self.max_assertion_lifetime_secs) {
            return Err(invalid(
                "client_auth.max_assertion_lifetime_secs must be 10-86400",
            ));
        }
        if self.clock_skew_secs > 600 {
            return Err(invalid("client_auth.clock_skew_secs must be 0-600"));
        }
        if !(1_000..=100_000_000).contains(&self.replay_cache_entries) {
            return Err(invalid(
                "client_auth.replay_cache_entries must be 1000-100000000",
            ));
        }
        Ok(ClientAuthConfig {
            max_assertion_lifetime: Duration::from_secs(self.max_assertion_lifetime_secs),
            clock_skew: Duration::from_secs(self.clock_skew_secs),
            replay_cache_entries: self.replay_cache_entries,
        })
    }
}

/// The `[client_auth]` part of `portcullis config example`.
pub const EXAMPLE: &str = r#"[client_auth]
# Clients may authenticate without a shared secret (no hash, no hash pool): with
# private_key_jwt (RFC 7523 assertions signed with RS256, PS256, ES256 or EdDSA by a key
# registered with `portcullis client add --auth-method private_key_jwt --public-key FILE`)
# or with a TLS client certificate (RFC 8705; see [tls] client_certificates, client_ca).
# Failed proofs count against the same failure budgets as wrong secrets.
# Longest lifetime (exp - now) of an accepted assertion, in seconds (10-86400). A used
# assertion id (jti) is refused until the assertion expires, so this also bounds what the
# replay check remembers. The `aud` claim must name the issuer, the token endpoint or the
# endpoint the assertion is sent to.
max_assertion_lifetime_secs = 3600
# Clock difference tolerated on exp, nbf and iat, in seconds (0-600).
clock_skew_secs = 60
# Live assertions one instance remembers (about 100 bytes each). With [throttle] redis,
# used assertion ids are kept in Redis instead, so a replay to another instance fails too;
# while Redis is unreachable assertions are answered "temporarily unavailable" rather than
# accepted without the check. Full of live entries, new assertions are refused the same way.
replay_cache_entries = 1048576

"#;
