//! [`RedisThrottleStore`]: the verification core's failure budgets and trust marks in
//! Redis (or Valkey), shared by every instance behind a load balancer, so an attacker
//! who spreads guesses over N instances gets one budget, not N (issue 13).
//!
//! Each call is one Lua script, one round trip, atomic (a script runs alone): `acquire`
//! reads every key's theoretical arrival time (TAT) and writes all of them only if all
//! conform, as [`MemoryThrottleStore`](portcullis_core::MemoryThrottleStore) does
//! in-process. Time is the Redis server's (`TIME` inside the script), so instances with
//! skewed clocks agree; the `now` the core passes is ignored. TATs are microseconds of
//! that clock, and every key expires when its TAT passes (`PX`), so Redis holds only
//! live budgets.
//!
//! All keys carry one hash tag, `{key_prefix}`, so every script stays in one Redis
//! Cluster slot whichever keys an attempt touches (a source prefix's budget is shared by
//! attempts on many principals, so no finer tag could keep all of an attempt's keys
//! together). The cost: in a cluster, the throttle's keys live on one shard.
//!
//! When Redis fails or is slow (each call is bounded by `timeout`), the call returns an
//! error at once and the core falls back to its per-instance budgets (never to no
//! budget). The store then stays "down" for `retry` without contacting Redis, so an
//! outage costs no request a timeout, logs the transition once, and comes back by itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use parking_lot::Mutex;
use portcullis_core::{Charge, Decision, ThrottleError, ThrottleKey, ThrottleStore};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// `acquire` and `peek` (ARGV[1] = "1" charges, "0" only looks). ARGV[2i], ARGV[2i+1]:
/// key i's interval and tolerance in microseconds. Returns {0, wait_us} when a budget is
/// exhausted, else {1, ahead_us...}: how far each TAT is (or would be) ahead of now.
const ACQUIRE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local charge = ARGV[1] == '1'
local worst = 0
local tats = {}
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i])
  local tolerance = tonumber(ARGV[2 * i + 1])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  if tat < now then tat = now end
  local ahead = tat - now
  if ahead > tolerance and ahead - tolerance > worst then worst = ahead - tolerance end
  tats[i] = tat + interval
end
if worst > 0 then return {0, worst} end
local out = {1}
for i = 1, #KEYS do
  local ahead = tats[i] - now
  if charge then
    redis.call('SET', KEYS[i], string.format('%d', tats[i]), 'PX', math.ceil(ahead / 1000))
  end
  out[i + 1] = ahead
end
return out
";

/// Give one interval (ARGV[i], microseconds) back to each key, never below now.
const REFUND: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, #KEYS do
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  if tat > 0 then
    local new = tat - tonumber(ARGV[i])
    if new <= now then
      redis.call('DEL', KEYS[i])
    else
      redis.call('SET', KEYS[i], string.format('%d', new), 'PX', math.ceil((new - now) / 1000))
    end
  end
end
return 1
";

/// Trust mark for ARGV[1] milliseconds, extending and never shortening.
const TRUST: &str = r"
local ttl = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('SET', KEYS[1], '1', 'PX', ttl)
end
return 1
";

/// Settings of the Redis-backed throttle.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisThrottleConfig {
    /// `redis://`, `rediss://` or `redis+unix://` URL (the `redis` crate's forms).
    pub url: String,
    /// Hash tag and namespace of every key (`{prefix}:...`).
    pub key_prefix: String,
    /// Bound on connecting and on each call; beyond it the instance uses its own budgets.
    pub timeout: Duration,
    /// After a failure, how long to use the fallback before trying Redis again.
    pub retry: Duration,
}

impl std::fmt::Debug for RedisThrottleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never printed.
        let shown = crate::backend::without_credentials(&self.url);
        f.debug_struct("RedisThrottleConfig")
            .field("url", &shown)
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Failure budgets and trust marks in Redis. See the module doc.
pub struct RedisThrottleStore {
    /// Parsed URL; connections are made from it on demand.
    client: redis::Client,
    /// The live connection (multiplexed, reconnecting); `None` until first use and after
    /// a failure, so a restart of Redis is picked up by a fresh connect.
    conn: tokio::sync::Mutex<Option<ConnectionManager>>,
    /// The compiled scripts (sent by SHA, loaded on first use).
    acquire: redis::Script,
    refund: redis::Script,
    trust: redis::Script,
    /// `{prefix}:` in front of every key.
    prefix: String,
    timeout: Duration,
    retry: Duration,
    /// While `Some(t)`, Redis is considered down until `t`: calls fail at once.
    down_until: Mutex<Option<Instant>>,
    /// Failed calls since start (also counted by the core as store errors).
    failures: AtomicU64,
}

impl std::fmt::Debug for RedisThrottleStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never printed.
        f.debug_struct("RedisThrottleStore")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn err(e: impl std::fmt::Display) -> ThrottleError {
    ThrottleError(format!("redis: {e}"))
}

impl RedisThrottleStore {
    /// A store for `config`. Does not connect: an instance starts (on its own budgets)
    /// while Redis is still coming up.
    pub fn new(config: &RedisThrottleConfig) -> Result<RedisThrottleStore, ThrottleError> {
        let client = redis::Client::open(config.url.as_str()).map_err(err)?;
        if config.key_prefix.is_empty() || config.key_prefix.contains(['{', '}']) {
            return Err(err("key prefix must be non-empty, without braces"));
        }
        Ok(RedisThrottleStore {
            client,
            conn: tokio::sync::Mutex::new(None),
            acquire: redis::Script::new(ACQUIRE),
            refund: redis::Script::new(REFUND),
            trust: redis::Script::new(TRUST),
            prefix: format!("{{{}}}:", config.key_prefix),
            timeout: config.timeout,
            retry: config.retry,
            down_until: Mutex::new(None),
            failures: AtomicU64::new(0),
        })
    }

    /// Failed calls since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Connect (or reuse the connection) and check the server answers. For start-up
    /// logs and `config check`; the store works without it.
    pub async fn ping(&self) -> Result<(), ThrottleError> {
        self.call(|mut c| async move { redis::cmd("PING").query_async::<String>(&mut c).await })
            .await
            .map(|_| ())
    }

    fn budget_key(&self, key: &ThrottleKey) -> String {
        format!("{}b:{}", self.prefix, key.encode())
    }

    fn trust_key(&self, key: &ThrottleKey) -> String {
        format!("{}t:{}", self.prefix, key.encode())
    }

    /// Run `f` on a connection within the timeout, with the down-state bookkeeping.
    async fn call<T, F, Fut>(&self, f: F) -> Result<T, ThrottleError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        {
            let mut down = self.down_until.lock();
            if let Some(until) = *down {
                let now = Instant::now();
                if now < until {
                    return Err(err(
                        "unreachable; using per-instance budgets until it answers",
                    ));
                }
                // This call probes; the others keep to the fallback meanwhile.
                *down = Some(now + self.retry);
            }
        }
        let attempt = async {
            let conn = {
                let mut slot = self.conn.lock().await;
                match slot.as_ref() {
                    Some(c) => c.clone(),
                    None => {
                        let cfg = ConnectionManagerConfig::new()
                            .set_connection_timeout(self.timeout)
                            .set_response_timeout(self.timeout)
                            .set_number_of_retries(1);
                        let c = self.client.get_connection_manager_with_config(cfg).await?;
                        *slot = Some(c.clone());
                        c
                    }
                }
            };
            f(conn).await
        };
        let result = match tokio::time::timeout(self.timeout, attempt).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(err(e)),
            Err(_) => Err(err(format!("no answer within {:?}", self.timeout))),
        };
        match &result {
            Ok(_) => {
                if self.down_until.lock().take().is_some() {
                    tracing::info!("throttle: Redis answers again; budgets are shared");
                }
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                // A fresh connection next time: the old one may be to a dead server.
                *self.conn.lock().await = None;
                let was_up = self
                    .down_until
                    .lock()
                    .replace(Instant::now() + self.retry)
                    .is_none();
                // (A failed probe finds `Some` already: logged once per outage.)
                if was_up {
                    tracing::warn!(
                        "throttle: {e}; failure budgets are per instance until Redis answers"
                    );
                }
            }
        }
        result
    }

    async fn run_acquire(
        &self,
        charges: &[Charge],
        charge: bool,
    ) -> Result<Decision, ThrottleError> {
        if charges.is_empty() {
            return Ok(Decision::Allowed { fills: Vec::new() });
        }
        let mut inv = self.acquire.prepare_invoke();
        inv.arg(if charge { "1" } else { "0" });
        for c in charges {
            inv.key(self.budget_key(&c.key));
            inv.arg(micros(c.limit.interval))
                .arg(micros(c.limit.tolerance));
        }
        let reply: Vec<i64> = self
            .call(|mut conn| async move { inv.invoke_async(&mut conn).await })
            .await?;
        match reply.split_first() {
            Some((0, [wait])) => Ok(Decision::Denied {
                retry_after: Duration::from_micros(u64::try_from(*wait).unwrap_or(0).max(1)),
            }),
            Some((1, aheads)) if aheads.len() == charges.len() => Ok(Decision::Allowed {
                fills: charges
                    .iter()
                    .zip(aheads)
                    .map(|(c, a)| {
                        let full = (c.limit.tolerance + c.limit.interval).as_secs_f64();
                        (*a as f64 / 1e6 / full).clamp(0.0, 1.0)
                    })
                    .collect(),
            }),
            _ => Err(err(format!("unexpected script reply {reply:?}"))),
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

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
        let key = format!("{}n:{key}", self.prefix);
        let set: Option<String> = self
            .call(|mut c| async move {
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
    /// The key of an 802.1X session binding ([`crate::SessionStore`]).
    pub(crate) fn session_key(&self, binding: &[u8; 16]) -> String {
        let hex: String = binding.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}s:{hex}", self.prefix)
    }

    /// `SET key value PX ttl_ms`.
    pub(crate) async fn set_px(
        &self,
        key: String,
        value: String,
        ttl_ms: i64,
    ) -> Result<(), crate::StoreError> {
        self.call(|mut c| async move {
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
    pub(crate) async fn get(&self, key: String) -> Result<Option<String>, crate::StoreError> {
        self.call(|mut c| async move { redis::cmd("GET").arg(&key).query_async(&mut c).await })
            .await
            .map_err(|e| crate::StoreError::Backend(e.0))
    }
}

impl ThrottleStore for RedisThrottleStore {
    fn acquire<'a>(
        &'a self,
        charges: &'a [Charge],
        _now: Instant,
    ) -> BoxFuture<'a, Result<Decision, ThrottleError>> {
        self.run_acquire(charges, true).boxed()
    }

    fn peek<'a>(
        &'a self,
        charges: &'a [Charge],
        _now: Instant,
    ) -> BoxFuture<'a, Result<Decision, ThrottleError>> {
        self.run_acquire(charges, false).boxed()
    }

    fn refund<'a>(
        &'a self,
        charges: &'a [Charge],
        _now: Instant,
    ) -> BoxFuture<'a, Result<(), ThrottleError>> {
        async move {
            if charges.is_empty() {
                return Ok(());
            }
            let mut inv = self.refund.prepare_invoke();
            for c in charges {
                inv.key(self.budget_key(&c.key));
                inv.arg(micros(c.limit.interval));
            }
            self.call(|mut conn| async move { inv.invoke_async::<i64>(&mut conn).await })
                .await
                .map(|_| ())
        }
        .boxed()
    }

    fn mark_trusted<'a>(
        &'a self,
        key: &'a ThrottleKey,
        _now: Instant,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), ThrottleError>> {
        async move {
            let mut inv = self.trust.prepare_invoke();
            inv.key(self.trust_key(key))
                .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
            self.call(|mut conn| async move { inv.invoke_async::<i64>(&mut conn).await })
                .await
                .map(|_| ())
        }
        .boxed()
    }

    fn is_trusted<'a>(
        &'a self,
        key: &'a ThrottleKey,
        _now: Instant,
    ) -> BoxFuture<'a, Result<bool, ThrottleError>> {
        async move {
            let k = self.trust_key(key);
            self.call(|mut conn| async move {
                redis::cmd("EXISTS")
                    .arg(k)
                    .query_async::<i64>(&mut conn)
                    .await
            })
            .await
            .map(|n| n > 0)
        }
        .boxed()
    }
}

#[cfg(test)]
#[path = "throttle_redis_tests.rs"]
mod tests;
