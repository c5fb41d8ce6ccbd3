//! Distributed-attack detection per principal (issue 16).
//!
//! A credential-guessing wave spreads over many networks so that every per-origin budget
//! stays fresh; only the per-principal budget (all untrusted origins together) sees it,
//! and its burst exists for a human's typos from a new network, not for a botnet. When
//! a principal's failures come from `origins` distinct untrusted origins within
//! `window`, the principal is *under attack*: the verifier cuts its untrusted budget to
//! one failure per refill interval at once, instead of letting the rest of the burst
//! through at the wave's first second. Its trusted origins never pay the principal
//! budget, so the real user is not locked out (invariant 5).
//!
//! Principal names are tracked as presented, existing or not, so detection reveals no
//! more about existence than the throttle itself. Memory is bounded: at most `capacity`
//! principals, expired entries pruned first, then arbitrary ones (an attacker who floods
//! names can only reset detection for others, never grow memory).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::attempt::PrincipalKind;

#[derive(Default)]
struct Entry {
    /// Distinct untrusted origins (keyed hashes) charged for failures, and when last.
    seen: Vec<(u64, Instant)>,
    /// Under attack until then.
    until: Option<Instant>,
}

impl Entry {
    fn live(&self, now: Instant, window: Duration) -> bool {
        self.until.is_some_and(|u| u > now)
            || self
                .seen
                .iter()
                .any(|&(_, t)| now.saturating_duration_since(t) < window)
    }
}

/// Per-principal record of the untrusted origins failing on it (see the module docs).
pub(crate) struct Spread {
    /// Distinct origins that make an attack; 0 = detection off.
    origins: usize,
    window: Duration,
    capacity: usize,
    by_kind: [Mutex<HashMap<String, Entry>>; 2],
}

fn kind_idx(kind: PrincipalKind) -> usize {
    match kind {
        PrincipalKind::Client => 0,
        PrincipalKind::User => 1,
    }
}

impl Spread {
    pub(crate) fn new(origins: u32, window: Duration, capacity: usize) -> Self {
        Spread {
            origins: origins as usize,
            window,
            capacity: capacity.max(1),
            by_kind: [Mutex::default(), Mutex::default()],
        }
    }

    /// Whether `principal` is under a distributed attack at `now`.
    pub(crate) fn attacked(&self, kind: PrincipalKind, principal: &str, now: Instant) -> bool {
        self.origins > 0
            && self.by_kind[kind_idx(kind)]
                .lock()
                .get(principal)
                .and_then(|e| e.until)
                .is_some_and(|u| u > now)
    }

    /// An untrusted `origin` failed (or was charged, or throttled) on `principal` at
    /// `now`. Returns `true` when this starts an attack (for the alert metric).
    pub(crate) fn failed(
        &self,
        kind: PrincipalKind,
        principal: &str,
        origin: u64,
        now: Instant,
    ) -> bool {
        if self.origins == 0 {
            return false;
        }
        let window = self.window;
        let mut map = self.by_kind[kind_idx(kind)].lock();
        if !map.contains_key(principal) && map.len() >= self.capacity {
            map.retain(|_, e| e.live(now, window));
            if map.len() >= self.capacity {
                // Still full of live entries: make room for an eighth at once, so the
                // O(n) sweep runs once per many inserts.
                let drop: Vec<String> = map.keys().take(self.capacity / 8 + 1).cloned().collect();
                for k in drop {
                    map.remove(&k);
                }
            }
        }
        let e = map.entry(principal.to_owned()).or_default();
        e.seen
            .retain(|&(_, t)| now.saturating_duration_since(t) < window);
        match e.seen.iter_mut().find(|(o, _)| *o == origin) {
            Some(s) => s.1 = now,
            None => e.seen.push((origin, now)),
        }
        if e.seen.len() < self.origins {
            return false;
        }
        // Keep the most recent `origins`: enough to know the attack is still spread.
        e.seen.sort_unstable_by_key(|&(_, t)| std::cmp::Reverse(t));
        e.seen.truncate(self.origins);
        let started = e.until.is_none_or(|u| u <= now);
        e.until = Some(now + window);
        started
    }

    /// The principals under a distributed attack at `now` (at most `limit`, the longest
    /// attacks first): kind, principal, distinct failing origins in the window, and how
    /// long the attack state lasts without new failures. For the status page: one scan of
    /// the bounded table.
    pub(crate) fn under_attack(
        &self,
        now: Instant,
        limit: usize,
    ) -> Vec<(PrincipalKind, String, usize, Duration)> {
        let mut out = Vec::new();
        for (kind, map) in [PrincipalKind::Client, PrincipalKind::User]
            .into_iter()
            .zip(&self.by_kind)
        {
            for (principal, e) in map.lock().iter() {
                if let Some(until) = e.until.filter(|u| *u > now) {
                    out.push((kind, principal.clone(), e.seen.len(), until - now));
                }
            }
        }
        out.sort_by(|a, b| b.3.cmp(&a.3).then_with(|| a.1.cmp(&b.1)));
        out.truncate(limit);
        out
    }

    /// An untrusted `origin` succeeded on `principal`: it was the user, not an attacker.
    pub(crate) fn succeeded(&self, kind: PrincipalKind, principal: &str, origin: u64) {
        if self.origins == 0 {
            return;
        }
        if let Some(e) = self.by_kind[kind_idx(kind)].lock().get_mut(principal) {
            e.seen.retain(|&(o, _)| o != origin);
        }
    }

    /// When the attack state of `principal` ends, if it is under attack at `now`.
    pub(crate) fn attacked_until(
        &self,
        kind: PrincipalKind,
        principal: &str,
        now: Instant,
    ) -> Option<Instant> {
        self.by_kind[kind_idx(kind)]
            .lock()
            .get(principal)
            .and_then(|e| e.until)
            .filter(|u| *u > now)
    }

    /// An operator lifted the principal's block (issue 27): forget its failing origins
    /// and end its attack state; a wave still going on is detected again.
    pub(crate) fn forget(&self, kind: PrincipalKind, principal: &str) {
        self.by_kind[kind_idx(kind)].lock().remove(principal);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_kind.iter().map(|m| m.lock().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: PrincipalKind = PrincipalKind::User;

    #[test]
    fn issue_16_three_origins_start_an_attack_and_the_window_ends_it() {
        let s = Spread::new(3, Duration::from_secs(60), 100);
        let t0 = Instant::now();
        assert!(!s.failed(U, "alice", 1, t0));
        // The same origin again is not spread.
        assert!(!s.failed(U, "alice", 1, t0));
        assert!(!s.failed(U, "alice", 2, t0));
        assert!(!s.attacked(U, "alice", t0));
        assert!(s.failed(U, "alice", 3, t0));
        assert!(s.attacked(U, "alice", t0));
        // Other principals and kinds are untouched.
        assert!(!s.attacked(U, "bob", t0));
        assert!(!s.attacked(PrincipalKind::Client, "alice", t0));
        // Further origins extend it without a second alert.
        let t1 = t0 + Duration::from_secs(30);
        assert!(!s.failed(U, "alice", 4, t1));
        assert!(s.attacked(U, "alice", t1 + Duration::from_secs(59)));
        assert!(!s.attacked(U, "alice", t1 + Duration::from_secs(60)));
    }

    #[test]
    fn issue_16_origins_outside_the_window_do_not_add_up() {
        let s = Spread::new(3, Duration::from_secs(60), 100);
        let t0 = Instant::now();
        s.failed(U, "alice", 1, t0);
        s.failed(U, "alice", 2, t0 + Duration::from_secs(30));
        assert!(!s.failed(U, "alice", 3, t0 + Duration::from_secs(61)));
        assert!(!s.attacked(U, "alice", t0 + Duration::from_secs(61)));
    }

    #[test]
    fn issue_16_a_success_clears_its_origin() {
        let s = Spread::new(3, Duration::from_secs(60), 100);
        let t0 = Instant::now();
        s.failed(U, "alice", 1, t0);
        s.failed(U, "alice", 2, t0);
        // Origin 2 was alice mistyping: not an attacker.
        s.succeeded(U, "alice", 2);
        assert!(!s.failed(U, "alice", 3, t0));
    }

    #[test]
    fn issue_16_memory_is_bounded_under_a_flood_of_names() {
        let s = Spread::new(3, Duration::from_secs(60), 64);
        let t0 = Instant::now();
        for n in 0..10_000u64 {
            s.failed(U, &format!("name-{n}"), n, t0);
        }
        assert!(s.len() <= 64, "{} entries", s.len());
    }

    #[test]
    fn issue_16_zero_turns_detection_off() {
        let s = Spread::new(0, Duration::from_secs(60), 64);
        let t0 = Instant::now();
        for o in 0..10 {
            assert!(!s.failed(U, "alice", o, t0));
        }
        assert!(!s.attacked(U, "alice", t0));
        assert_eq!(s.len(), 0);
    }
}
