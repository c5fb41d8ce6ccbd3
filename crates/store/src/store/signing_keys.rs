//! [`SigningKeyStore`]: the token signing keys (public key, sealed private key, validity
//! and retirement), shared by every instance so they sign with the same keys and publish
//! the same JWKS.
//!
//! Used by the OAuth door's key manager (`keys.rs`: first key, rotation, retirement,
//! removal) and the admin API's key listing.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::record::SigningKeyRecord;

/// Token signing keys.
#[async_trait]
pub trait SigningKeyStore: Send + Sync {
    /// Insert a signing key; [`StoreError::AlreadyExists`] if the kid is taken.
    async fn insert_signing_key(&self, key: &SigningKeyRecord) -> Result<(), StoreError>;
    /// Insert `key` unless a key that can sign at `now` already exists (EdDSA, not
    /// retired, `created_at <= now < created_at + rotation`, `now + max_lifetime <
    /// not_after`), atomically against every other instance sharing the store. Instances
    /// starting together on an empty store must agree on one first key: if each signed
    /// with its own, the others' JWKS would lack it until their next maintenance.
    /// Returns whether `key` was inserted.
    async fn insert_first_signing_key(
        &self,
        key: &SigningKeyRecord,
        now: i64,
        rotation: i64,
        max_lifetime: i64,
    ) -> Result<bool, StoreError>;
    /// Every signing key, oldest first (by `created_at`, then kid).
    async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError>;
    /// Mark a key retired at `at` (no new tokens are signed with it). Returns whether this
    /// call retired it: `false` if it was already retired (the first time is kept) or
    /// does not exist.
    async fn retire_signing_key(&self, kid: &str, at: i64) -> Result<bool, StoreError>;
    /// Delete a key (once no unexpired token can carry its kid); returns whether it existed.
    async fn remove_signing_key(&self, kid: &str) -> Result<bool, StoreError>;
}
