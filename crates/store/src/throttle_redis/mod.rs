//! [`RedisThrottleStore`]: the verification core's failure budgets and trust marks in
//! Redis (or Valkey): one node, a Sentinel-managed primary or a Redis Cluster
//! ([`RedisTarget`]), shared by every instance behind a load balancer, so an attacker
//! who spreads guesses over N instances gets one budget, not N (issues 13, 30).
//!
//! Keys spread: every budget, trust mark, one-time value and session binding carries its
//! own hash tag (a hash of its identity, [`tag_of`]), so in a Cluster the throttle's load
//! spreads over every shard. An attempt's budgets (principal-and-source, source,
//! principal) then usually sit in different slots: they are grouped by slot and each
//! group is checked and charged by one Lua script (`redis_scripts`), all sent at
//! once on the multiplexed connection (pipelined per node, in parallel across nodes).
//! The attempt is allowed only if every group allowed; a group that was charged while
//! another refused is given back (compensated). On one node or a Sentinel primary every
//! slot is on the same server and one script covers the whole attempt, atomically, as
//! before. ARCHITECTURE.md ("Throttle state across shards") states what atomicity is
//! lost in a Cluster and the bound on the overshoot.
//!
//! Refusals cost no round trip once known: [`crate::refusals`] remembers "exhausted
//! until T" per key, invalidated through pub/sub when a refund or an unblock may reopen
//! a budget.
//!
//! When Redis fails or is slow, the node concerned is "down" for `retry`: calls for its
//! slots fail at once without contacting it, so an outage costs no request a timeout and
//! is logged once. One `timeout` bounds a request end to end (connecting, every group of
//! an attempt, its compensation): each call runs by the request's deadline, and nothing
//! after a failure is waited for (the Cluster's slot map is asked for again in the
//! background, `slots.rs`; issue 41). On one node or Sentinel the core
//! then falls back to its per-instance budgets; in a Cluster only the budgets of the down
//! node's slots fall back (to this store's own memory budgets), the others stay shared.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt, join_all};
use parking_lot::Mutex;
use portcullis_core::{
    Charge, Decision, MemoryThrottleStore, ThrottleError, ThrottleKey, ThrottleStore,
};

use crate::redis_scripts::{ACQUIRE, REFUND, TRUST, UNBLOCK};
pub use crate::redis_target::RedisTarget;
use crate::redis_target::{Backend, Conn, slot_of_tag, tag_of};
use crate::refusals::KnownRefusals;

/// Settings of the Redis-backed throttle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisThrottleConfig {
    /// Where Redis is (its `Debug` hides credentials).
    pub target: RedisTarget,
    /// Namespace of every key (`prefix:...`).
    pub key_prefix: String,
    /// Bound on connecting and on each call; beyond it the instance uses its own budgets.
    pub timeout: Duration,
    /// After a failure, how long to use the fallback before trying Redis again.
    pub retry: Duration,
}

impl RedisThrottleConfig {
    /// One node at `url` with the default timings (tests, tools).
    pub fn node(url: impl Into<String>, key_prefix: impl Into<String>) -> Self {
        RedisThrottleConfig {
            target: RedisTarget::Node(url.into()),
            key_prefix: key_prefix.into(),
            timeout: Duration::from_millis(200),
            retry: Duration::from_secs(1),
        }
    }
}

/// Refusals remembered per instance (about 100 bytes each).
const KNOWN_REFUSALS: usize = 100_000;

/// Failure budgets and trust marks in Redis. See the module doc.
pub struct RedisThrottleStore {
    backend: Backend,
    cluster: bool,
    /// The live connection and its generation; `None` until first use and (outside a
    /// Cluster, whose connection repairs itself) after a failure on it, so a restarted or
    /// newly elected primary is picked up by a fresh connect. Held only to copy or clear
    /// (never across an await), so clearing it never waits for a connect.
    conn: Mutex<Option<(u64, Conn)>>,
    /// One connect at a time (the others wait for it, within their own deadline).
    connecting: tokio::sync::Mutex<()>,
    /// Generations of `conn`: a failure clears only the connection it failed on.
    generation: AtomicU64,
    acquire: redis::Script,
    refund: redis::Script,
    trust: redis::Script,
    unblock: redis::Script,
    /// `prefix:` in front of every key.
    prefix: String,
    /// The invalidation channel.
    channel: String,
    timeout: Duration,
    retry: Duration,
    /// Cluster slot map (refreshed in the background) and down nodes.
    slots: slots::Slots,
    /// Failed calls since start (also counted by the core as store errors).
    failures: AtomicU64,
    /// Cluster: budgets of slots whose node is down.
    fallback: MemoryThrottleStore,
    refusals: Arc<KnownRefusals>,
    /// The invalidation subscriber, started on first use (needs a runtime).
    listener: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for RedisThrottleStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisThrottleStore")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Drop for RedisThrottleStore {
    fn drop(&mut self) {
        if let Some(h) = self.listener.lock().take() {
            h.abort();
        }
    }
}

fn err(e: impl std::fmt::Display) -> ThrottleError {
    ThrottleError(format!("redis: {e}"))
}

/// One slot's share of an attempt: the indices of its charges and their keys.
struct Group {
    slot: Option<u16>,
    idx: Vec<usize>,
    keys: Vec<String>,
}

/// One group's answer.
enum GroupAnswer {
    /// Room in every budget: how far each TAT is (or would be) ahead, microseconds.
    Allowed(Vec<i64>),
    /// The longest wait, and each key's own (0 where there was room), microseconds.
    Denied(i64, Vec<i64>),
    /// Answered by this instance's own budgets (the group's node is down).
    Local(Decision),
}

impl RedisThrottleStore {
    /// A store for `config`. Does not connect: an instance starts (on its own budgets)
    /// while Redis is still coming up.
    pub fn new(config: &RedisThrottleConfig) -> Result<RedisThrottleStore, ThrottleError> {
        if config.key_prefix.is_empty()
            || config.key_prefix.contains(['{', '}'])
            || config.key_prefix.chars().any(char::is_whitespace)
        {
            return Err(err(
                "key prefix must be non-empty, without braces or spaces",
            ));
        }
        let backend = Backend::open(&config.target, config.timeout).map_err(err)?;
        Ok(RedisThrottleStore {
            backend,
            cluster: config.target.is_cluster(),
            conn: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            acquire: redis::Script::new(ACQUIRE),
            refund: redis::Script::new(REFUND),
            trust: redis::Script::new(TRUST),
            unblock: redis::Script::new(UNBLOCK),
            prefix: format!("{}:", config.key_prefix),
            channel: format!("{}:reopened", config.key_prefix),
            timeout: config.timeout,
            retry: config.retry,
            slots: slots::Slots::default(),
            failures: AtomicU64::new(0),
            fallback: MemoryThrottleStore::new(1 << 16),
            refusals: Arc::new(KnownRefusals::new(KNOWN_REFUSALS)),
            listener: Mutex::new(None),
        })
    }

    /// Failed calls since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Refusals answered without contacting Redis since start.
    pub fn local_refusals(&self) -> u64 {
        self.refusals.hits()
    }

    /// Whether refusals are currently remembered (the invalidation subscription is up).
    pub fn remembers_refusals(&self) -> bool {
        self.refusals.is_live()
    }

    /// Connect (or reuse the connection) and check the server answers. For start-up
    /// logs and `config check`; the store works without it.
    pub async fn ping(&self) -> Result<(), ThrottleError> {
        self.call(None, |mut c| async move {
            redis::cmd("PING").query_async::<String>(&mut c).await
        })
        .await
        .map(|_| ())
    }

    /// `prefix:kind:{tag}:id`, and the slot of its tag.
    fn tagged(&self, kind: &str, id: &str) -> (String, u16) {
        let tag = tag_of(id);
        let slot = slot_of_tag(&tag);
        (format!("{}{kind}:{{{tag}}}:{id}", self.prefix), slot)
    }

    fn budget_key(&self, key: &ThrottleKey) -> (String, u16) {
        self.tagged("b", &key.encode())
    }

    fn trust_key(&self, key: &ThrottleKey) -> (String, u16) {
        self.tagged("t", &key.encode())
    }

    fn slot(&self, slot: u16) -> Option<u16> {
        self.cluster.then_some(slot)
    }

    /// Run `f` on a connection within one timeout from now. See [`Self::call_by`].
    async fn call<T, F, Fut>(&self, slot: Option<u16>, f: F) -> Result<T, ThrottleError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        self.call_by(Instant::now() + self.timeout, slot, f).await
    }

    /// Run `f` on a connection (connecting first if need be) by `deadline`, with the
    /// per-node down bookkeeping. `slot`: the Cluster slot every key of the call is in
    /// (`None` outside a Cluster). Nothing after a failure waits: a new connection is
    /// made by the next call, the slot map is refreshed in the background.
    async fn call_by<T, F, Fut>(
        &self,
        deadline: Instant,
        slot: Option<u16>,
        f: F,
    ) -> Result<T, ThrottleError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        self.start_listener();
        let node = {
            let mut h = self.slots.health.lock();
            let node = h.node(slot);
            if let Some(until) = h.down.get(&node).copied() {
                let now = Instant::now();
                if now < until {
                    return Err(err(
                        "unreachable; using per-instance budgets until it answers",
                    ));
                }
                // This call probes; the others keep to the fallback meanwhile.
                h.down.insert(node.clone(), now + self.retry);
            }
            node
        };
        let mut used = None;
        let attempt = async {
            let (generation, conn) = self.conn().await?;
            used = Some(generation);
            f(conn).await
        };
        let result = match tokio::time::timeout_at(deadline.into(), attempt).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(err(e)),
            Err(_) => Err(err(format!("no answer within {:?}", self.timeout))),
        };
        match &result {
            Ok(_) => {
                if self.slots.health.lock().down.remove(&node).is_some() {
                    tracing::info!(node, "throttle: Redis answers again; budgets are shared");
                }
            }
            Err(e) => self.failed(&node, used, e),
        }
        result
    }

    /// Book a failed call on `node` (over connection generation `used`, if one was had):
    /// down for `retry`, logged once per outage; outside a Cluster the connection is
    /// dropped, in a Cluster the slot map is asked for again in the background.
    fn failed(&self, node: &str, used: Option<u64>, e: &ThrottleError) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        if !self.cluster {
            // A fresh connection next time: the old one may be to a dead server or to a
            // primary Sentinel has since demoted.
            let mut c = self.conn.lock();
            if c.as_ref().is_some_and(|(g, _)| Some(*g) == used) {
                *c = None;
            }
        }
        let was_up = self
            .slots
            .health
            .lock()
            .down
            .insert(node.to_owned(), Instant::now() + self.retry)
            .is_none();
        // (A failed probe finds the node down already: logged once per outage.)
        if was_up {
            tracing::warn!(
                node,
                "throttle: {e}; failure budgets of this node's slots are per instance until \
                 it answers"
            );
        }
        self.refresh_slots_soon();
    }

    /// The live connection, or a new one (one connect at a time).
    async fn conn(&self) -> redis::RedisResult<(u64, Conn)> {
        if let Some(c) = self.conn.lock().clone() {
            return Ok(c);
        }
        let _one = self.connecting.lock().await;
        if let Some(c) = self.conn.lock().clone() {
            return Ok(c);
        }
        let c = self.backend.connect(self.timeout).await?;
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        *self.conn.lock() = Some((generation, c.clone()));
        self.refresh_slots_soon();
        Ok((generation, c))
    }

    /// Cluster: ask which node serves which slots, in the background (coalesced, at most
    /// once per `retry`), so a down node's slots are known and a failover's new primary
    /// is used. No call waits for it.
    fn refresh_slots_soon(&self) {
        if !self.cluster {
            return;
        }
        let Some((_, conn)) = self.conn.lock().clone() else {
            return;
        };
        self.slots.refresh_soon(conn, self.retry, self.timeout);
    }

    /// Subscribe to invalidations on first use (the store is built before a runtime).
    fn start_listener(&self) {
        let mut l = self.listener.lock();
        if l.is_some() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let refusals = Arc::clone(&self.refusals);
        let channel = self.channel.clone();
        let retry = self.retry;
        let clients = self.backend.pubsub_resolver();
        *l = Some(rt.spawn(async move {
            let mut next = 0usize;
            loop {
                let client = clients(next).await;
                next = next.wrapping_add(1);
                if let Ok(client) = client
                    && let Ok(mut ps) = client.get_async_pubsub().await
                    && ps.subscribe(&channel).await.is_ok()
                {
                    refusals.restart();
                    let mut stream = ps.into_on_message();
                    while let Some(msg) = futures::StreamExt::next(&mut stream).await {
                        if let Ok(key) = msg.get_payload::<String>() {
                            refusals.forget(&key);
                        }
                    }
                    refusals.pause();
                }
                tokio::time::sleep(retry).await;
            }
        }));
    }

    /// Group `charges` by slot (one group outside a Cluster).
    fn groups(&self, charges: &[Charge]) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::new();
        for (i, c) in charges.iter().enumerate() {
            let (key, slot) = self.budget_key(&c.key);
            let slot = self.slot(slot);
            match groups.iter_mut().find(|g| g.slot == slot) {
                Some(g) => {
                    g.idx.push(i);
                    g.keys.push(key);
                }
                None => groups.push(Group {
                    slot,
                    idx: vec![i],
                    keys: vec![key],
                }),
            }
        }
        groups
    }

    /// One group's script; its node down (Cluster): this instance's own budgets.
    async fn group_acquire(
        &self,
        deadline: Instant,
        g: &Group,
        charges: &[Charge],
        charge: bool,
    ) -> Result<GroupAnswer, ThrottleError> {
        let mut inv = self.acquire.prepare_invoke();
        inv.arg(if charge { "1" } else { "0" });
        for (&i, k) in g.idx.iter().zip(&g.keys) {
            inv.key(k.as_str());
            inv.arg(micros(charges[i].limit.interval))
                .arg(micros(charges[i].limit.tolerance));
        }
        let reply = self
            .call_by(deadline, g.slot, |mut conn| async move {
                inv.invoke_async::<Vec<i64>>(&mut conn).await
            })
            .await;
        let reply = match reply {
            Ok(r) => r,
            Err(e) if !self.cluster => return Err(e),
            Err(_) => {
                let mine: Vec<Charge> = g.idx.iter().map(|&i| charges[i].clone()).collect();
                let now = Instant::now();
                return Ok(GroupAnswer::Local(if charge {
                    self.fallback.acquire_now(&mine, now)
                } else {
                    self.fallback.peek_now(&mine, now)
                }));
            }
        };
        match reply.split_first() {
            Some((0, [worst, waits @ ..])) if waits.len() == g.idx.len() => {
                Ok(GroupAnswer::Denied(*worst, waits.to_vec()))
            }
            Some((1, aheads)) if aheads.len() == g.idx.len() => {
                Ok(GroupAnswer::Allowed(aheads.to_vec()))
            }
            _ => Err(err(format!("unexpected script reply {reply:?}"))),
        }
    }

    async fn run_acquire(
        &self,
        charges: &[Charge],
        charge: bool,
    ) -> Result<Decision, ThrottleError> {
        if charges.is_empty() {
            return Ok(Decision::Allowed { fills: Vec::new() });
        }
        let groups = self.groups(charges);
        let start = Instant::now();
        // One timeout for the whole attempt, compensation included.
        let deadline = start + self.timeout;
        if let Some(wait) = self.refusals.refused(
            groups
                .iter()
                .flat_map(|g| g.keys.iter().map(String::as_str)),
            start,
        ) {
            return Ok(Decision::Denied {
                retry_after: wait.max(Duration::from_micros(1)),
            });
        }
        let epoch = self.refusals.epoch();
        // Every group at once: the multiplexed connection pipelines those for one node
        // and the Cluster connection sends each node's in parallel.
        let answers: Vec<Result<GroupAnswer, ThrottleError>> = join_all(
            groups
                .iter()
                .map(|g| self.group_acquire(deadline, g, charges, charge)),
        )
        .await;
        let answers: Vec<GroupAnswer> = answers.into_iter().collect::<Result<_, _>>()?;
        let now = Instant::now();
        let mut worst: Option<Duration> = None;
        let mut fills = vec![0.0; charges.len()];
        for (g, a) in groups.iter().zip(&answers) {
            match a {
                GroupAnswer::Denied(w, waits) => {
                    let w = Duration::from_micros(u64::try_from(*w).unwrap_or(0).max(1));
                    worst = Some(worst.map_or(w, |x| x.max(w)));
                    for (k, wait) in g.keys.iter().zip(waits) {
                        if let Ok(us) = u64::try_from(*wait)
                            && us > 0
                        {
                            self.refusals
                                .remember(k, now + Duration::from_micros(us), epoch, now);
                        }
                    }
                }
                GroupAnswer::Local(Decision::Denied { retry_after }) => {
                    worst = Some(worst.map_or(*retry_after, |x| x.max(*retry_after)));
                }
                GroupAnswer::Local(Decision::Allowed { fills: f }) => {
                    for (&i, x) in g.idx.iter().zip(f) {
                        fills[i] = *x;
                    }
                }
                GroupAnswer::Allowed(aheads) => {
                    for (&i, a) in g.idx.iter().zip(aheads) {
                        let c = &charges[i];
                        let full = (c.limit.tolerance + c.limit.interval).as_secs_f64();
                        fills[i] = (*a as f64 / 1e6 / full).clamp(0.0, 1.0);
                    }
                }
            }
        }
        let Some(retry_after) = worst else {
            return Ok(Decision::Allowed { fills });
        };
        if charge {
            // Compensate: give back what the groups that allowed have charged.
            let charged: Vec<&Group> = groups
                .iter()
                .zip(&answers)
                .filter(|(_, a)| {
                    matches!(
                        a,
                        GroupAnswer::Allowed(_) | GroupAnswer::Local(Decision::Allowed { .. })
                    )
                })
                .map(|(g, _)| g)
                .collect();
            // Within what is left of the attempt's time; a refund that cannot be made in
            // it leaves that charge standing (conservative; ARCHITECTURE.md's bound).
            join_all(
                charged
                    .into_iter()
                    .map(|g| self.group_refund(deadline, g, charges)),
            )
            .await;
        }
        Ok(Decision::Denied { retry_after })
    }

    /// Give back one group's charges (its node down: this instance's own budgets).
    async fn group_refund(
        &self,
        deadline: Instant,
        g: &Group,
        charges: &[Charge],
    ) -> Result<(), ThrottleError> {
        let mut inv = self.refund.prepare_invoke();
        inv.arg(self.channel.as_str());
        for (&i, k) in g.idx.iter().zip(&g.keys) {
            inv.key(k.as_str());
            inv.arg(micros(charges[i].limit.interval))
                .arg(micros(charges[i].limit.tolerance));
        }
        let r = self
            .call_by(deadline, g.slot, |mut conn| async move {
                inv.invoke_async::<i64>(&mut conn).await
            })
            .await;
        match r {
            Ok(_) => Ok(()),
            Err(e) if !self.cluster => Err(e),
            Err(_) => {
                let mine: Vec<Charge> = g.idx.iter().map(|&i| charges[i].clone()).collect();
                self.fallback.refund_now(&mine, Instant::now());
                Ok(())
            }
        }
    }

    /// An operator's unblock: forget these budgets in Redis and in every instance's
    /// remembered refusals (and this instance's fallback budgets). Returns how many
    /// budgets existed in Redis.
    pub async fn unblock_keys(&self, keys: &[ThrottleKey]) -> Result<u64, ThrottleError> {
        let charges: Vec<Charge> = keys
            .iter()
            .map(|k| Charge {
                key: k.clone(),
                limit: portcullis_core::GcraLimit::new(1, Duration::from_secs(1)),
            })
            .collect();
        // Every group at once, all within one timeout.
        let deadline = Instant::now() + self.timeout;
        let groups = self.groups(&charges);
        let counts = join_all(groups.iter().map(|g| {
            let mut inv = self.unblock.prepare_invoke();
            inv.arg(self.channel.as_str());
            for k in &g.keys {
                inv.key(k.as_str());
                self.refusals.forget(k);
            }
            self.call_by(deadline, g.slot, |mut conn| async move {
                inv.invoke_async::<u64>(&mut conn).await
            })
        }))
        .await;
        let mut n = 0;
        for c in counts {
            n += c?;
        }
        for k in keys {
            self.fallback.forget(k);
        }
        Ok(n)
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

mod kv;
mod slots;

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
            let groups = self.groups(charges);
            let deadline = Instant::now() + self.timeout;
            let r: Vec<_> = join_all(
                groups
                    .iter()
                    .map(|g| self.group_refund(deadline, g, charges)),
            )
            .await;
            r.into_iter().collect()
        }
        .boxed()
    }

    fn unblock<'a>(&'a self, keys: &'a [ThrottleKey]) -> BoxFuture<'a, Result<u64, ThrottleError>> {
        self.unblock_keys(keys).boxed()
    }

    fn known_refusal(&self, keys: &[&ThrottleKey], now: Instant) -> Option<Duration> {
        let keys: Vec<String> = keys.iter().map(|k| self.budget_key(k).0).collect();
        self.refusals
            .refused(keys.iter().map(String::as_str), now)
            .map(|w| w.max(Duration::from_micros(1)))
    }

    fn mark_trusted<'a>(
        &'a self,
        key: &'a ThrottleKey,
        _now: Instant,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), ThrottleError>> {
        async move {
            let (k, slot) = self.trust_key(key);
            let mut inv = self.trust.prepare_invoke();
            inv.key(k)
                .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
            self.call(self.slot(slot), |mut conn| async move {
                inv.invoke_async::<i64>(&mut conn).await
            })
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
            let (k, slot) = self.trust_key(key);
            self.call(self.slot(slot), |mut conn| async move {
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
mod tests;

#[cfg(test)]
mod cluster_tests;

#[cfg(test)]
mod silent_tests;
