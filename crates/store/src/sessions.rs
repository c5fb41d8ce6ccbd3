//! Who proved themselves in an 802.1X session (issue 25): a resumed EAP-TTLS login skips
//! the inner password (RFC 5281 §10.1), so the server must recall the identity proven in
//! the session it resumes, by the session's binding (a random value carried in the TLS
//! 1.3 tickets, or a digest of the TLS 1.2 master secret), until the carry-over ends.
//! [`MemorySessionStore`] serves one instance; the Redis store (the same connection as
//! the shared budgets) lets a device that roams to another instance behind the balancer
//! resume there too. Times are unix milliseconds, so instances agree.

use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::error::StoreError;

/// Identities proven in sessions, until an end time.
#[async_trait]
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// Remember `identity` for `binding` until `until_ms` (unix milliseconds).
    async fn remember(
        &self,
        binding: &[u8; 16],
        identity: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// The identity remembered for `binding` and its end, if it has not ended.
    async fn recall(
        &self,
        binding: &[u8; 16],
        now_ms: i64,
    ) -> Result<Option<(String, i64)>, StoreError>;
}

/// Binding to (identity, end).
type Entries = HashMap<[u8; 16], (String, i64)>;

/// Sessions in this process, at most `capacity` (the oldest goes first).
#[derive(Debug)]
pub struct MemorySessionStore {
    capacity: usize,
    inner: Mutex<(Entries, VecDeque<[u8; 16]>)>,
}

impl MemorySessionStore {
    /// A store of at most `capacity` sessions.
    pub fn new(capacity: usize) -> Self {
        MemorySessionStore {
            capacity: capacity.max(1),
            inner: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn remember(
        &self,
        binding: &[u8; 16],
        identity: &str,
        until_ms: i64,
        _now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut g = self.inner.lock();
        let (map, order) = &mut *g;
        if map
            .insert(*binding, (identity.to_owned(), until_ms))
            .is_none()
        {
            order.push_back(*binding);
        }
        while map.len() > self.capacity {
            match order.pop_front() {
                Some(old) => {
                    map.remove(&old);
                }
                None => break,
            }
        }
        Ok(())
    }

    async fn recall(
        &self,
        binding: &[u8; 16],
        now_ms: i64,
    ) -> Result<Option<(String, i64)>, StoreError> {
        let g = self.inner.lock();
        Ok(g.0
            .get(binding)
            .filter(|(_, until)| *until > now_ms)
            .cloned())
    }
}

#[async_trait]
impl SessionStore for crate::RedisThrottleStore {
    async fn remember(
        &self,
        binding: &[u8; 16],
        identity: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let ttl = until_ms.saturating_sub(now_ms);
        if ttl <= 0 {
            return Ok(());
        }
        let key = self.session_key(binding);
        let value = format!("{until_ms}\n{identity}");
        self.set_px(key, value, ttl).await
    }

    async fn recall(
        &self,
        binding: &[u8; 16],
        now_ms: i64,
    ) -> Result<Option<(String, i64)>, StoreError> {
        let Some(v) = self.get(self.session_key(binding)).await? else {
            return Ok(None);
        };
        let Some((until, identity)) = v.split_once('\n') else {
            return Ok(None);
        };
        let until: i64 = until.parse().unwrap_or(0);
        Ok((until > now_ms).then(|| (identity.to_owned(), until)))
    }
}

/// What both stores must do (run by their tests).
pub async fn conformance(s: &dyn SessionStore, now_ms: i64) {
    let a = [1u8; 16];
    let b = [2u8; 16];
    assert_eq!(
        s.recall(&a, now_ms).await.ok(),
        Some(None),
        "nothing remembered yet"
    );
    s.remember(&a, "alice", now_ms + 60_000, now_ms).await.ok();
    assert_eq!(
        s.recall(&a, now_ms).await.ok(),
        Some(Some(("alice".to_owned(), now_ms + 60_000)))
    );
    assert_eq!(
        s.recall(&a, now_ms + 60_000).await.ok(),
        Some(None),
        "ended"
    );
    assert_eq!(
        s.recall(&b, now_ms).await.ok(),
        Some(None),
        "bindings are separate"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn issue_25_memory_session_store_conforms_and_is_bounded() {
        let s = MemorySessionStore::new(2);
        conformance(&s, 1_000_000).await;
        for i in 0..5u8 {
            s.remember(&[i + 10; 16], "x", 2_000_000, 1_000_000)
                .await
                .ok();
        }
        assert_eq!(s.inner.lock().0.len(), 2, "bounded");
        assert!(
            s.recall(&[14; 16], 1_000_000)
                .await
                .ok()
                .flatten()
                .is_some(),
            "newest kept"
        );
    }
}
