//! [`RevocationStore`]: revoked access tokens (by `jti`, until they expire).
//!
//! Used by the OAuth door (revocation and introspection), the server's maintenance loop
//! (purging expired revocations) and the admin API (revoking, listing pages).

use async_trait::async_trait;

use crate::error::StoreError;

/// Revoked tokens.
#[async_trait]
pub trait RevocationStore: Send + Sync {
    /// Record that the token `jti` is revoked until it expires at `expires_at` (unix
    /// seconds). Idempotent; revoking again keeps the later expiry.
    async fn revoke_token(&self, jti: &str, expires_at: i64) -> Result<(), StoreError>;
    /// Whether `jti` was revoked (and not yet purged).
    async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError>;
    /// Forget revocations of tokens that expired at or before `now` (they are rejected
    /// for being expired anyway); returns how many were removed.
    async fn purge_revocations(&self, now: i64) -> Result<u64, StoreError>;
    /// At most `limit` (1-[`MAX_PAGE`](crate::versioned::MAX_PAGE)) revocations (jti,
    /// expires_at) whose jti sorts after `after`, ordered by jti: keyset pagination.
    async fn revocations_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, i64)>, StoreError>;
}
