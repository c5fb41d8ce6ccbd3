//! [`IdempotencyStore`]: the admin API's `Idempotency-Key` table (issue 27): who claimed
//! which key, and the sealed answer to replay, shared by every instance.
//!
//! Used only by the admin API (its request conventions and its maintenance, which purges
//! old keys). The SQL is [`crate::versioned`]'s.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::versioned::IdempotencyRecord;

/// Idempotency keys of admin requests.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claim `(principal, key)` for a request (its `response_sealed` is ignored): `None`
    /// if this call claimed it, else the record already there (answered, or still
    /// running when its response is `None`).
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Store the sealed answer of a claimed key; [`StoreError::NotFound`] if the key is
    /// not claimed or already answered.
    async fn complete_idempotency_key(
        &self,
        principal: &str,
        key: &str,
        response_sealed: &[u8],
    ) -> Result<(), StoreError>;
    /// Give up a claimed key that has no answer (its request failed), so it may be used
    /// again; an answered key is kept.
    async fn release_idempotency_key(&self, principal: &str, key: &str) -> Result<(), StoreError>;
    /// Forget keys claimed before `before` (unix seconds); returns how many.
    async fn purge_idempotency_keys(&self, before: i64) -> Result<u64, StoreError>;
}
