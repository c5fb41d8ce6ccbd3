//! Failure-driven rate limits (GCRA) and the store that holds their state.
//!
//! Three budgets are checked together before any hash is spent: per (principal, source
//! prefix), per source prefix and per principal. The per-principal budget is left out for
//! the principal's trusted sources, so strangers failing on an account cannot lock its
//! real user out (Keycloak's lockout lets anyone lock out anyone).
//!
//! # Reserve, then refund
//! A failure is only known after the hash, but an attacker fires hundreds of attempts
//! before the first hash finishes; checking "recent failures" would let all of them in.
//! So [`ThrottleStore::acquire`] charges every attempt as a failure up front, atomically
//! and all-or-nothing across its keys, and a success (or an attempt shed before
//! hashing) gives the charge back with [`ThrottleStore::refund`]. The number of hashes in
//! flight or failed per key is then bounded by its burst, however concurrent the attack.
//!
//! That reservation only matters where a hash is at stake. A cheap credential (peppered
//! HMAC, microseconds) is checked with [`ThrottleStore::peek`], which answers like
//! `acquire` but charges nothing, and is charged only once it has failed; otherwise many
//! concurrent *correct* attempts of one busy client would exhaust the burst with
//! reservations that are all about to be refunded (issue 5).
//!
//! # GCRA
//! Each key keeps one instant, the theoretical arrival time (TAT). With emission interval
//! `T = period / burst` and tolerance `tau = period - T`, a charge at `now` conforms when
//! `max(TAT, now) - now <= tau`, and then `TAT = max(TAT, now) + T`. A key whose TAT is in
//! the past is equivalent to an absent one, so state expires by itself (Redis: `PEXPIRE`).
//!
//! # A Redis implementation
//! The trait maps onto one Lua script per call: `acquire` gets the encoded keys
//! ([`ThrottleKey::encode`]) as `KEYS` and `now`, `T`, `tau` per key as `ARGV`, reads
//! every TAT, and writes all of them only if all conform (atomic: a script runs alone).
//! `peek` is the same script without the writes. `refund` subtracts `T` (never below
//! `now`). Trust marks are `SET key 1 PX ttl`.
//! `Instant`s are converted by the implementation against an anchor it takes at startup.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt, ready};
use parking_lot::Mutex;
use thiserror::Error;

use crate::attempt::PrincipalKind;
use crate::config::LimitConfig;
use crate::net::Origin;

/// What a budget is kept for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ThrottleKey {
    /// One principal from one origin (source prefix, and station behind a relaying
    /// source). Also the key of trust marks.
    PrincipalPrefix {
        /// Client or user.
        kind: PrincipalKind,
        /// The principal as presented (unknown principals are throttled the same way as
        /// known ones, so the throttle does not reveal existence).
        principal: String,
        /// Masked source, and the station behind it if any.
        origin: Origin,
    },
    /// One origin, any principal.
    Prefix(Origin),
    /// One principal, from any untrusted source.
    Principal {
        /// Client or user.
        kind: PrincipalKind,
        /// The principal as presented.
        principal: String,
    },
}

impl ThrottleKey {
    /// A stable string form for external stores (e.g. a Redis key suffix). The principal
    /// goes last so that separators inside it cannot make two keys collide.
    pub fn encode(&self) -> String {
        let k = |kind: &PrincipalKind| match kind {
            PrincipalKind::Client => 'c',
            PrincipalKind::User => 'u',
        };
        match self {
            ThrottleKey::PrincipalPrefix {
                kind,
                principal,
                origin,
            } => format!("pp:{}:{origin}:{principal}", k(kind)),
            // An origin's station carries its length, so it may contain any separator.
            ThrottleKey::Prefix(origin) => format!("p:{origin}"),
            ThrottleKey::Principal { kind, principal } => format!("u:{}:{principal}", k(kind)),
        }
    }
}

/// GCRA parameters of one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcraLimit {
    /// Emission interval `T`: one failure is forgiven every `T`.
    pub interval: Duration,
    /// Tolerance `tau`: how far ahead of `now` the TAT may be and still accept a charge
    /// (`(burst - 1) * T`).
    pub tolerance: Duration,
}

impl GcraLimit {
    /// `burst` failures at once, a full refill over `period`.
    pub fn new(burst: u32, period: Duration) -> Self {
        let burst = burst.max(1);
        let interval = (period / burst).max(Duration::from_nanos(1));
        GcraLimit {
            interval,
            tolerance: interval * (burst - 1),
        }
    }

    /// From a configured budget.
    pub fn from_config(c: &LimitConfig) -> Self {
        Self::new(c.burst, c.period())
    }

    /// Whether a charge at `now` conforms with theoretical arrival time `tat`; if not, how
    /// long until it would.
    pub fn conforms(&self, tat: Instant, now: Instant) -> Result<(), Duration> {
        let ahead = tat.saturating_duration_since(now);
        if ahead <= self.tolerance {
            Ok(())
        } else {
            Err(ahead - self.tolerance)
        }
    }

    /// TAT after a charge at `now`.
    pub fn charge(&self, tat: Option<Instant>, now: Instant) -> Instant {
        tat.map_or(now, |t| t.max(now)) + self.interval
    }

    /// TAT after giving one charge back at `now` (never below `now`).
    pub fn refund(&self, tat: Instant, now: Instant) -> Instant {
        tat.checked_sub(self.interval).unwrap_or(now).max(now)
    }

    /// Fraction of the budget in use with TAT `tat` (0 = untouched, 1 = exhausted).
    pub fn fill(&self, tat: Instant, now: Instant) -> f64 {
        let ahead = tat.saturating_duration_since(now).as_secs_f64();
        let full = (self.tolerance + self.interval).as_secs_f64();
        (ahead / full).min(1.0)
    }
}

/// One budget to charge: which key and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// Whose budget.
    pub key: ThrottleKey,
    /// Its GCRA parameters.
    pub limit: GcraLimit,
}

/// Answer of [`ThrottleStore::acquire`].
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Every budget had room; each was charged one failure.
    Allowed {
        /// Fraction of each budget in use after the charge, in the order of the charges.
        fills: Vec<f64>,
    },
    /// At least one budget is exhausted; nothing was charged.
    Denied {
        /// When the tightest exhausted budget has room again.
        retry_after: Duration,
    },
}

/// The throttle store failed (e.g. Redis unreachable).
#[derive(Debug, Error)]
#[error("throttle store error: {0}")]
pub struct ThrottleError(pub String);

/// Where budgets and trust marks live: in memory for one node ([`MemoryThrottleStore`]),
/// Redis for a cluster.
pub trait ThrottleStore: Send + Sync + 'static {
    /// Atomically: if every charge conforms at `now`, charge each one failure and return
    /// [`Decision::Allowed`]; otherwise charge nothing and return [`Decision::Denied`].
    fn acquire<'a>(
        &'a self,
        charges: &'a [Charge],
        now: Instant,
    ) -> BoxFuture<'a, Result<Decision, ThrottleError>>;

    /// What [`ThrottleStore::acquire`] would answer at `now`, charging nothing. `fills`
    /// are those a charge would leave. Not atomic with a later `acquire`.
    fn peek<'a>(
        &'a self,
        charges: &'a [Charge],
        now: Instant,
    ) -> BoxFuture<'a, Result<Decision, ThrottleError>>;

    /// Give one failure back to each budget (the attempt succeeded or was never hashed).
    fn refund<'a>(
        &'a self,
        charges: &'a [Charge],
        now: Instant,
    ) -> BoxFuture<'a, Result<(), ThrottleError>>;

    /// Remember that `key`'s source is trusted for its principal for `ttl` from `now`
    /// (extending, never shortening, an existing mark).
    fn mark_trusted<'a>(
        &'a self,
        key: &'a ThrottleKey,
        now: Instant,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), ThrottleError>>;

    /// Whether `key` carries an unexpired trust mark at `now`.
    fn is_trusted<'a>(
        &'a self,
        key: &'a ThrottleKey,
        now: Instant,
    ) -> BoxFuture<'a, Result<bool, ThrottleError>>;

    /// A refusal this store already knows, without a round trip: how long the longest
    /// known exhaustion among `keys` still runs at `now`. A shared store remembers what
    /// it was told (issue 30); an in-process store has no round trip to save (`None`).
    fn known_refusal(&self, _keys: &[&ThrottleKey], _now: Instant) -> Option<Duration> {
        None
    }

    /// An operator's unblock: forget these budgets (everywhere they are remembered).
    /// Returns how many existed.
    fn unblock<'a>(&'a self, keys: &'a [ThrottleKey]) -> BoxFuture<'a, Result<u64, ThrottleError>>;
}

const SHARDS: usize = 16;

/// In-memory [`ThrottleStore`] for a single node: sharded maps of TATs and trust marks,
/// bounded in size.
///
/// Expired entries are swept when a shard reaches its capacity; if the shard is still
/// full of live entries (a flood of distinct keys), the tenth closest to expiry is
/// evicted, which forgives the least-charged budgets first.
pub struct MemoryThrottleStore {
    /// TAT per key, sharded to keep lock hold times short under a flood.
    budgets: Vec<Mutex<HashMap<ThrottleKey, Instant>>>,
    /// Trust expiry per (principal, prefix).
    trust: Vec<Mutex<HashMap<ThrottleKey, Instant>>>,
    /// Entries per shard before sweeping.
    shard_capacity: usize,
    /// Picks a key's shard; random per process so shard load cannot be steered.
    hasher: std::collections::hash_map::RandomState,
    /// Entries evicted while still live (a sign the capacity is too small).
    evicted: AtomicU64,
}

impl std::fmt::Debug for MemoryThrottleStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryThrottleStore")
            .field("shard_capacity", &self.shard_capacity)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryThrottleStore {
    /// Room for about a million budgets (~150 MB at worst).
    fn default() -> Self {
        Self::new(1 << 20)
    }
}

impl MemoryThrottleStore {
    /// A store holding about `capacity` budgets and as many trust marks.
    pub fn new(capacity: usize) -> Self {
        let mk = || (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect();
        MemoryThrottleStore {
            budgets: mk(),
            trust: mk(),
            shard_capacity: capacity.div_ceil(SHARDS).max(8),
            hasher: std::collections::hash_map::RandomState::new(),
            evicted: AtomicU64::new(0),
        }
    }

    /// Live entries evicted for lack of room since start.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    fn shard(&self, key: &ThrottleKey) -> usize {
        (self.hasher.hash_one(key) as usize) % SHARDS
    }

    /// Synchronous core of [`ThrottleStore::acquire`].
    pub fn acquire_now(&self, charges: &[Charge], now: Instant) -> Decision {
        // Lock the shards involved in index order (no deadlock), all at once, so the
        // check and the charge are atomic across keys.
        let mut idx: Vec<usize> = charges.iter().map(|c| self.shard(&c.key)).collect();
        idx.sort_unstable();
        idx.dedup();
        let mut guards: Vec<_> = idx.iter().map(|&i| (i, self.budgets[i].lock())).collect();
        let mut worst: Option<Duration> = None;
        for c in charges {
            let s = self.shard(&c.key);
            let Some((_, g)) = guards.iter().find(|(i, _)| *i == s) else {
                continue;
            };
            if let Some(&tat) = g.get(&c.key)
                && let Err(wait) = c.limit.conforms(tat, now)
            {
                worst = Some(worst.map_or(wait, |w| w.max(wait)));
            }
        }
        if let Some(retry_after) = worst {
            return Decision::Denied { retry_after };
        }
        let mut fills = Vec::with_capacity(charges.len());
        for c in charges {
            let s = self.shard(&c.key);
            let Some((_, g)) = guards.iter_mut().find(|(i, _)| *i == s) else {
                fills.push(0.0);
                continue;
            };
            let tat = c.limit.charge(g.get(&c.key).copied(), now);
            fills.push(c.limit.fill(tat, now));
            if g.len() >= self.shard_capacity && !g.contains_key(&c.key) {
                self.make_room(g, now);
            }
            g.insert(c.key.clone(), tat);
        }
        Decision::Allowed { fills }
    }

    /// Synchronous core of [`ThrottleStore::peek`].
    pub fn peek_now(&self, charges: &[Charge], now: Instant) -> Decision {
        let mut worst: Option<Duration> = None;
        let mut fills = Vec::with_capacity(charges.len());
        for c in charges {
            let tat = self.budgets[self.shard(&c.key)].lock().get(&c.key).copied();
            if let Some(tat) = tat
                && let Err(wait) = c.limit.conforms(tat, now)
            {
                worst = Some(worst.map_or(wait, |w| w.max(wait)));
            }
            fills.push(c.limit.fill(c.limit.charge(tat, now), now));
        }
        match worst {
            Some(retry_after) => Decision::Denied { retry_after },
            None => Decision::Allowed { fills },
        }
    }

    /// Synchronous core of [`ThrottleStore::refund`].
    pub fn refund_now(&self, charges: &[Charge], now: Instant) {
        for c in charges {
            let mut g = self.budgets[self.shard(&c.key)].lock();
            if let Some(tat) = g.get_mut(&c.key) {
                *tat = c.limit.refund(*tat, now);
                if *tat <= now {
                    g.remove(&c.key);
                }
            }
        }
    }

    /// Drop `key`'s budget (an operator's unblock); whether it existed.
    pub fn forget(&self, key: &ThrottleKey) -> bool {
        self.budgets[self.shard(key)].lock().remove(key).is_some()
    }

    fn make_room(&self, map: &mut HashMap<ThrottleKey, Instant>, now: Instant) {
        map.retain(|_, exp| *exp > now);
        if map.len() < self.shard_capacity {
            return;
        }
        let mut exps: Vec<Instant> = map.values().copied().collect();
        let k = (exps.len() / 10).max(1);
        let (_, cut, _) = exps.select_nth_unstable(k - 1);
        let cut = *cut;
        let before = map.len();
        map.retain(|_, exp| *exp > cut);
        self.evicted
            .fetch_add((before - map.len()) as u64, Ordering::Relaxed);
    }

    fn mark_trusted_now(&self, key: &ThrottleKey, until: Instant, now: Instant) {
        let mut g = self.trust[self.shard(key)].lock();
        if g.len() >= self.shard_capacity && !g.contains_key(key) {
            self.make_room(&mut g, now);
        }
        let e = g.entry(key.clone()).or_insert(until);
        *e = (*e).max(until);
    }

    fn is_trusted_now(&self, key: &ThrottleKey, now: Instant) -> bool {
        self.trust[self.shard(key)]
            .lock()
            .get(key)
            .is_some_and(|until| *until > now)
    }
}

impl ThrottleStore for MemoryThrottleStore {
    fn acquire<'a>(
        &'a self,
        charges: &'a [Charge],
        now: Instant,
    ) -> BoxFuture<'a, Result<Decision, ThrottleError>> {
        ready(Ok(self.acquire_now(charges, now))).boxed()
    }

    fn peek<'a>(
        &'a self,
        charges: &'a [Charge],
        now: Instant,
    ) -> BoxFuture<'a, Result<Decision, ThrottleError>> {
        ready(Ok(self.peek_now(charges, now))).boxed()
    }

    fn refund<'a>(
        &'a self,
        charges: &'a [Charge],
        now: Instant,
    ) -> BoxFuture<'a, Result<(), ThrottleError>> {
        self.refund_now(charges, now);
        ready(Ok(())).boxed()
    }

    fn mark_trusted<'a>(
        &'a self,
        key: &'a ThrottleKey,
        now: Instant,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), ThrottleError>> {
        self.mark_trusted_now(key, now + ttl, now);
        ready(Ok(())).boxed()
    }

    fn is_trusted<'a>(
        &'a self,
        key: &'a ThrottleKey,
        now: Instant,
    ) -> BoxFuture<'a, Result<bool, ThrottleError>> {
        ready(Ok(self.is_trusted_now(key, now))).boxed()
    }

    fn unblock<'a>(&'a self, keys: &'a [ThrottleKey]) -> BoxFuture<'a, Result<u64, ThrottleError>> {
        let n = keys.iter().filter(|k| self.forget(k)).count();
        ready(Ok(n as u64)).boxed()
    }
}

#[cfg(test)]
mod tests;
