//! One-time values with an expiry (issue 14): the `jti` of a `private_key_jwt` client
//! assertion may be used once within its lifetime (RFC 7523 3, RFC 7521 5.2). The
//! [`NonceStore`] answers "first use?" atomically. [`MemoryNonceStore`] serves one
//! instance; with several instances behind a load balancer the Redis store
//! ([`crate::RedisThrottleStore`], the same connection as the shared budgets) makes a
//! replay to another instance fail too. Both pass [`conformance`].
//!
//! Only assertions whose signature verified are recorded, so only the registered
//! clients' own traffic fills a store; entries leave when their assertion expires. A
//! store that cannot answer (Redis down, memory full of live entries) is an error, and
//! the front end answers "temporarily unavailable": a replay check that silently lapses
//! would not be one.

use std::collections::HashMap;

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::error::StoreError;

/// Records one-time values until they expire.
#[async_trait]
pub trait NonceStore: Send + Sync + std::fmt::Debug {
    /// Record `key` as used until `expires_at` (unix seconds). `Ok(true)` the first time
    /// within that lifetime, `Ok(false)` for a repeat. `now` is the caller's clock.
    async fn first_use(&self, key: &str, expires_at: i64, now: i64) -> Result<bool, StoreError>;
}

/// Most entries [`MemoryNonceStore`] holds by default (about 100 bytes each).
pub const DEFAULT_NONCE_CAPACITY: usize = 1 << 18;

/// One-time values in this process.
#[derive(Debug)]
pub struct MemoryNonceStore {
    capacity: usize,
    seen: Mutex<HashMap<String, i64>>,
}

impl MemoryNonceStore {
    /// A store holding at most `capacity` live entries.
    pub fn new(capacity: usize) -> Self {
        MemoryNonceStore {
            capacity: capacity.max(1),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Live entries now (tests, metrics).
    pub fn len(&self) -> usize {
        self.seen.lock().len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl NonceStore for MemoryNonceStore {
    async fn first_use(&self, key: &str, expires_at: i64, now: i64) -> Result<bool, StoreError> {
        let mut seen = self.seen.lock();
        if let Some(exp) = seen.get(key)
            && *exp > now
        {
            return Ok(false);
        }
        if seen.len() >= self.capacity && !seen.contains_key(key) {
            seen.retain(|_, exp| *exp > now);
            if seen.len() >= self.capacity {
                // Evicting a live entry would let its assertion be replayed.
                return Err(StoreError::Backend(format!(
                    "replay cache full ({} live assertions)",
                    self.capacity
                )));
            }
        }
        seen.insert(key.to_owned(), expires_at);
        Ok(true)
    }
}

/// The checks every [`NonceStore`] must pass; keys are unique per call of this function
/// (`tag`), so it may run against a shared Redis.
#[cfg(any(test, feature = "conformance"))]
#[allow(clippy::unwrap_used)]
pub async fn conformance(store: &dyn NonceStore, tag: &str, now: i64) {
    let k = |n: &str| format!("{tag}:{n}");
    assert!(store.first_use(&k("a"), now + 60, now).await.unwrap());
    assert!(
        !store.first_use(&k("a"), now + 60, now).await.unwrap(),
        "replay seen"
    );
    assert!(!store.first_use(&k("a"), now + 600, now + 30).await.unwrap());
    assert!(
        store.first_use(&k("b"), now + 60, now).await.unwrap(),
        "keys are apart"
    );
    // Concurrent first uses of one key: exactly one wins.
    let race = k("race");
    let results =
        futures::future::join_all((0..16).map(|_| store.first_use(&race, now + 60, now))).await;
    let wins = results.into_iter().filter(|r| *r.as_ref().unwrap()).count();
    assert_eq!(wins, 1);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_store_conforms() {
        conformance(&MemoryNonceStore::new(100), "m", 1_000).await;
    }

    #[tokio::test]
    async fn expired_entries_are_used_again_and_a_full_store_of_live_ones_refuses() {
        let s = MemoryNonceStore::new(2);
        assert!(s.first_use("a", 110, 100).await.unwrap());
        assert!(s.first_use("b", 200, 100).await.unwrap());
        // Full of live entries: refused, never evicting one (that would allow a replay).
        assert!(s.first_use("c", 200, 105).await.is_err());
        assert!(!s.first_use("b", 200, 105).await.unwrap());
        // "a" expired: swept, and "c" fits.
        assert!(s.first_use("c", 200, 120).await.unwrap());
        assert!(s.first_use("a", 300, 120).await.is_err());
        assert_eq!(s.len(), 2);
    }
}
