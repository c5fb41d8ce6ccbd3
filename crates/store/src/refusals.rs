//! Refusals without a round trip: [`KnownRefusals`] remembers, per budget key, that Redis
//! answered "exhausted until T", and answers the same refusal locally until T.
//!
//! Why it is sound: a budget's theoretical arrival time only grows through charges (which
//! keep it refused longer) and only shrinks through a refund or an operator's unblock.
//! Both publish the key on the deployment's invalidation channel when they may reopen a
//! refused budget (the Lua scripts do it, atomically with the write), and every instance
//! forgets the key on receipt. The cache is used only while this instance's subscription
//! is up: it is emptied when the subscription (re)starts and ignored while it is down, so
//! a missed message cannot keep a reopened budget refused. A reply that raced with an
//! invalidation (the `epoch` moved while the call was in flight) is not remembered.
//!
//! Bounded: at most `capacity` keys; when full, expired entries are swept, then the
//! entries closest to their end are dropped (dropping only costs a round trip).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Budget keys (as stored in Redis) known to be refused until an instant.
#[derive(Debug)]
pub struct KnownRefusals {
    until: Mutex<HashMap<String, Instant>>,
    capacity: usize,
    /// Bumped by every invalidation: a reply read across one is not remembered.
    epoch: AtomicU64,
    /// Whether the invalidation subscription is up (otherwise nothing is answered).
    live: AtomicBool,
    /// Refusals answered locally since start.
    hits: AtomicU64,
}

impl KnownRefusals {
    /// An empty cache of at most `capacity` keys, not live until [`KnownRefusals::restart`].
    pub fn new(capacity: usize) -> Self {
        KnownRefusals {
            until: Mutex::new(HashMap::new()),
            capacity: capacity.max(16),
            epoch: AtomicU64::new(0),
            live: AtomicBool::new(false),
            hits: AtomicU64::new(0),
        }
    }

    /// The current epoch, read before a call whose refusals may be remembered.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// How long the longest known refusal among `keys` still runs at `now`, if any.
    pub fn refused<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a str>,
        now: Instant,
    ) -> Option<Duration> {
        if !self.live.load(Ordering::Acquire) {
            return None;
        }
        let map = self.until.lock();
        if map.is_empty() {
            return None;
        }
        let worst = keys
            .into_iter()
            .filter_map(|k| map.get(k))
            .filter(|t| **t > now)
            .map(|t| *t - now)
            .max();
        if worst.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        worst
    }

    /// Remember that `key` is refused until `until`, unless an invalidation arrived since
    /// `epoch` or the subscription is down.
    pub fn remember(&self, key: &str, until: Instant, epoch: u64, now: Instant) {
        if !self.live.load(Ordering::Acquire) {
            return;
        }
        let mut map = self.until.lock();
        // Checked under the lock that `forget` also takes: no invalidation slips between.
        if self.epoch.load(Ordering::Acquire) != epoch {
            return;
        }
        if map.len() >= self.capacity && !map.contains_key(key) {
            map.retain(|_, t| *t > now);
            if map.len() >= self.capacity {
                let mut ends: Vec<Instant> = map.values().copied().collect();
                let k = (ends.len() / 10).max(1);
                let (_, cut, _) = ends.select_nth_unstable(k - 1);
                let cut = *cut;
                map.retain(|_, t| *t > cut);
            }
        }
        let e = map.entry(key.to_owned()).or_insert(until);
        *e = (*e).max(until);
    }

    /// An invalidation: `key` may have reopened.
    pub fn forget(&self, key: &str) {
        let mut map = self.until.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        map.remove(key);
    }

    /// The subscription (re)started: whatever was missed meanwhile is dropped.
    pub fn restart(&self) {
        let mut map = self.until.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        map.clear();
        self.live.store(true, Ordering::Release);
    }

    /// The subscription is down: answer nothing locally until it restarts.
    pub fn pause(&self) {
        self.live.store(false, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the subscription is up.
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Refusals answered without a round trip since start.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_until_the_end_and_forgets_on_invalidation() {
        let r = KnownRefusals::new(100);
        let now = Instant::now();
        let s = Duration::from_secs(1);
        // Not live: nothing remembered or answered.
        r.remember("a", now + s, r.epoch(), now);
        r.restart();
        assert_eq!(r.refused(["a"], now), None);
        r.remember("a", now + s, r.epoch(), now);
        assert_eq!(r.refused(["b", "a"], now), Some(s));
        assert_eq!(r.refused(["a"], now + s), None, "ended");
        r.forget("a");
        assert_eq!(r.refused(["a"], now), None);
        // A reply read across an invalidation is not remembered.
        let e = r.epoch();
        r.forget("zzz");
        r.remember("a", now + s, e, now);
        assert_eq!(r.refused(["a"], now), None);
        // Paused: not answered; restarted: emptied.
        r.remember("a", now + s, r.epoch(), now);
        r.pause();
        assert_eq!(r.refused(["a"], now), None);
        r.restart();
        assert_eq!(r.refused(["a"], now), None);
    }

    #[test]
    fn bounded() {
        let r = KnownRefusals::new(20);
        r.restart();
        let now = Instant::now();
        for i in 0..1000u64 {
            r.remember(
                &format!("k{i}"),
                now + Duration::from_millis(i + 1),
                r.epoch(),
                now,
            );
        }
        assert!(r.until.lock().len() <= 20);
        assert!(r.refused(["k999"], now).is_some(), "the newest is kept");
    }
}
