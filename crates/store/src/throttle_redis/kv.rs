//! Plain keys of [`RedisThrottleStore`] besides budgets: one-time values (`jti`s) and
//! 802.1X session bindings, each under its own hash tag (so they spread over a Cluster's
//! shards like the budgets).

use super::RedisThrottleStore;

/// One-time values (`jti`s) in the same Redis as the budgets, so a replay to another
/// instance is seen. `SET NX PX`: atomic, and the key leaves Redis when the value expires.
/// While Redis is down this answers an error (no per-instance fallback: see
/// [`crate::nonce`]).
#[async_trait::async_trait]
impl crate::nonce::NonceStore for RedisThrottleStore {
    async fn first_use(
        &self,
        key: &str,
        expires_at: i64,
        now: i64,
    ) -> Result<bool, crate::StoreError> {
        let ttl_ms = expires_at.saturating_sub(now).clamp(1, 86_400 * 366) * 1000;
        let (key, slot) = self.tagged("n", key);
        let set: Option<String> = self
            .call(self.slot(slot), |mut c| async move {
                redis::cmd("SET")
                    .arg(&key)
                    .arg("1")
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms)
                    .query_async(&mut c)
                    .await
            })
            .await
            .map_err(|e| crate::StoreError::Backend(e.0))?;
        Ok(set.is_some())
    }
}

impl RedisThrottleStore {
    /// The key of an 802.1X session binding ([`crate::SessionStore`]) and its slot.
    pub(crate) fn session_key(&self, binding: &[u8; 16]) -> (String, u16) {
        let hex: String = binding.iter().map(|b| format!("{b:02x}")).collect();
        self.tagged("s", &hex)
    }

    /// `SET key value PX ttl_ms`.
    pub(crate) async fn set_px(
        &self,
        (key, slot): (String, u16),
        value: String,
        ttl_ms: i64,
    ) -> Result<(), crate::StoreError> {
        self.call(self.slot(slot), |mut c| async move {
            redis::cmd("SET")
                .arg(&key)
                .arg(&value)
                .arg("PX")
                .arg(ttl_ms)
                .query_async::<()>(&mut c)
                .await
        })
        .await
        .map_err(|e| crate::StoreError::Backend(e.0))
    }

    /// `GET key`.
    pub(crate) async fn get(
        &self,
        (key, slot): (String, u16),
    ) -> Result<Option<String>, crate::StoreError> {
        self.call(self.slot(slot), |mut c| async move {
            redis::cmd("GET").arg(&key).query_async(&mut c).await
        })
        .await
        .map_err(|e| crate::StoreError::Backend(e.0))
    }
}
