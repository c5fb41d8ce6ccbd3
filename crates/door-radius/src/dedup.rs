//! Duplicate detection (RFC 5080 §2.2.2): a NAS that hears nothing retransmits the same
//! request (same source address and port, identifier and Request Authenticator). If we
//! answered it, it gets the same reply bytes again, at once and without a second hash; if
//! we are still working on it, the copy is dropped. Report 003's server treated every copy
//! as new work, which is how its queues grew under load.
//!
//! Bounded in entries and in time: entries are kept in arrival order, expired ones are
//! removed from the front on every call, and when the table is full the oldest entry is
//! evicted (an evicted request in progress is simply answered when it finishes, and a late
//! retransmission of an evicted one is treated as new). The clock is passed in.
//!
//! The table hashes a key three times per round trip, so it uses foldhash with a random
//! seed per table instead of SipHash: keys come from NASes (an authenticator a spoofing
//! sender may choose), so the seed is what keeps collisions out of a sender's reach.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What identifies one request of one NAS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestKey {
    /// Source address and port.
    pub peer: SocketAddr,
    /// RADIUS identifier.
    pub identifier: u8,
    /// Request Authenticator.
    pub authenticator: [u8; 16],
}

/// What the cache says about a datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A new request: now recorded as in progress; the caller must `complete` or `forget`.
    New,
    /// A copy of a request still being worked on: drop it.
    InProgress,
    /// A copy of an answered request: send these bytes again.
    Answered(Arc<[u8]>),
}

#[derive(Debug)]
struct Entry {
    /// `None` while in progress.
    reply: Option<Arc<[u8]>>,
    /// When it was recorded (insertion order = `order` order).
    at: Instant,
    /// Which insertion this is (matches the `order` queue, so a re-inserted key's stale
    /// queue slot does not evict the new entry).
    serial: u64,
}

/// The cache. Not thread-safe by itself: the front end holds it behind a mutex, and every
/// operation is O(1) amortised.
#[derive(Debug)]
pub struct DuplicateCache {
    entries: HashMap<RequestKey, Entry, foldhash::fast::RandomState>,
    order: VecDeque<(RequestKey, u64)>,
    capacity: usize,
    ttl: Duration,
    next_serial: u64,
}

impl DuplicateCache {
    /// At most `capacity` entries, each kept at most `ttl`.
    pub fn new(capacity: usize, ttl: Duration) -> DuplicateCache {
        DuplicateCache {
            entries: HashMap::default(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            ttl,
            next_serial: 0,
        }
    }

    /// Look a datagram up, recording it as in progress if it is new.
    pub fn check(&mut self, key: RequestKey, now: Instant) -> Seen {
        self.expire(now);
        if let Some(e) = self.entries.get(&key) {
            return match &e.reply {
                Some(bytes) => Seen::Answered(Arc::clone(bytes)),
                None => Seen::InProgress,
            };
        }
        while self.entries.len() >= self.capacity {
            self.evict_oldest();
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        self.entries.insert(
            key,
            Entry {
                reply: None,
                at: now,
                serial,
            },
        );
        self.order.push_back((key, serial));
        Seen::New
    }

    /// Record the reply to an in-progress request (no-op if it was evicted meanwhile).
    pub fn complete(&mut self, key: &RequestKey, reply: Arc<[u8]>) {
        if let Some(e) = self.entries.get_mut(key) {
            e.reply = Some(reply);
        }
    }

    /// Forget an in-progress request that will not be answered (dropped as overloaded), so
    /// the NAS's retransmission is tried afresh instead of dropped as a duplicate.
    pub fn forget(&mut self, key: &RequestKey) {
        if self.entries.get(key).is_some_and(|e| e.reply.is_none()) {
            self.entries.remove(key);
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(key, serial)) = self.order.front() {
            match self.entries.get(&key) {
                Some(e) if e.serial == serial => {
                    if now.saturating_duration_since(e.at) < self.ttl {
                        return;
                    }
                    self.entries.remove(&key);
                }
                // Forgotten or re-inserted later: a stale slot.
                _ => {}
            }
            self.order.pop_front();
        }
    }

    fn evict_oldest(&mut self) {
        while let Some((key, serial)) = self.order.pop_front() {
            if self.entries.get(&key).is_some_and(|e| e.serial == serial) {
                self.entries.remove(&key);
                return;
            }
        }
        // Only reachable if `order` lost track of an entry; keep the bound anyway.
        if let Some(&key) = self.entries.keys().next() {
            self.entries.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(port: u16, id: u8) -> RequestKey {
        RequestKey {
            peer: SocketAddr::from(([192, 0, 2, 1], port)),
            identifier: id,
            authenticator: [id; 16],
        }
    }

    #[test]
    fn issue_12_answered_copy_gets_the_same_bytes_in_progress_copy_is_dropped() {
        let t0 = Instant::now();
        let mut c = DuplicateCache::new(8, Duration::from_secs(30));
        assert_eq!(c.check(key(1000, 1), t0), Seen::New);
        assert_eq!(c.check(key(1000, 1), t0), Seen::InProgress);
        // Same id from another port, or another authenticator, is another request.
        assert_eq!(c.check(key(1001, 1), t0), Seen::New);
        let mut other_auth = key(1000, 1);
        other_auth.authenticator[0] ^= 1;
        assert_eq!(c.check(other_auth, t0), Seen::New);
        let reply: Arc<[u8]> = Arc::from(&b"reply bytes"[..]);
        c.complete(&key(1000, 1), Arc::clone(&reply));
        assert_eq!(c.check(key(1000, 1), t0), Seen::Answered(reply));
    }

    #[test]
    fn issue_12_duplicate_cache_is_bounded_in_time() {
        let t0 = Instant::now();
        let ttl = Duration::from_secs(30);
        let mut c = DuplicateCache::new(8, ttl);
        assert_eq!(c.check(key(1, 1), t0), Seen::New);
        c.complete(&key(1, 1), Arc::from(&b"r"[..]));
        assert!(matches!(
            c.check(key(1, 1), t0 + ttl - Duration::from_millis(1)),
            Seen::Answered(_)
        ));
        assert_eq!(c.check(key(1, 1), t0 + ttl), Seen::New, "expired: new work");
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn issue_12_duplicate_cache_is_bounded_in_entries_evicting_the_oldest() {
        let t0 = Instant::now();
        let mut c = DuplicateCache::new(16, Duration::from_secs(30));
        for i in 0..1000u16 {
            assert_eq!(c.check(key(i, 0), t0), Seen::New);
            assert!(c.len() <= 16);
        }
        assert_eq!(c.len(), 16);
        // The 16 newest are remembered, the older ones are not.
        assert_eq!(c.check(key(999, 0), t0), Seen::InProgress);
        assert_eq!(c.check(key(984, 0), t0), Seen::InProgress);
        assert_eq!(c.check(key(983, 0), t0), Seen::New);
        // Completing an evicted request is harmless.
        c.complete(&key(0, 0), Arc::from(&b"late"[..]));
        assert!(c.len() <= 16);
    }

    #[test]
    fn issue_12_forgotten_request_is_new_again_and_leaves_no_stale_slot() {
        let t0 = Instant::now();
        let mut c = DuplicateCache::new(4, Duration::from_secs(30));
        assert_eq!(c.check(key(1, 1), t0), Seen::New);
        c.forget(&key(1, 1));
        assert_eq!(
            c.check(key(1, 1), t0),
            Seen::New,
            "the NAS's retransmission is retried"
        );
        // The first insertion's stale slot must not evict the second one.
        for p in 2..5 {
            assert_eq!(c.check(key(p, 1), t0), Seen::New);
        }
        assert_eq!(c.check(key(1, 1), t0), Seen::InProgress);
        // Answered entries are not forgotten.
        c.complete(&key(2, 1), Arc::from(&b"r"[..]));
        c.forget(&key(2, 1));
        assert!(matches!(c.check(key(2, 1), t0), Seen::Answered(_)));
    }
}
