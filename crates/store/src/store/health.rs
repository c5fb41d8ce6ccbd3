//! [`Health`]: whether the store answers, and the feed of changes other processes make.
//!
//! Used by the readiness probes (`/readyz`, `portcullis doctor`, `portcullis config check`)
//! and by the server's client cache, which follows the change feed. A door that caches
//! records or reports readiness names it.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::store::ChangeFeed;

/// Liveness and the change feed of a store.
#[async_trait]
pub trait Health: Send + Sync {
    /// Check that the backend answers (readiness probes).
    async fn ping(&self) -> Result<(), StoreError>;

    /// Changes made by other processes sharing this store, as they happen (PostgreSQL:
    /// LISTEN/NOTIFY), so caches can drop stale records at once. `None`: the backend has
    /// no such feed (SQLite serves one process; caches rely on their TTL).
    async fn changes(&self) -> Result<Option<ChangeFeed>, StoreError> {
        Ok(None)
    }
}
