//! Shed holds: an untrusted origin is held to the Retry-After its last shed answer gave.
//!
//! A shed attempt (the pool refused it, or dropped it at dequeue, or an unknown
//! principal's mimic failed the same admission check) is refunded: overload is not a
//! failure, so it never counts toward a throttle. Without more, a flood that ignores
//! Retry-After is never throttled while the pool is full, and every one of its requests
//! costs a store lookup, a throttle check and charge, a refused submission and a refund,
//! on the runtime and the store's threads, which on a small machine share the cores with
//! the hash pool. Measured from outside (`scripts/attack-window`, AMD EPYC Zen 3, 2 vCPU):
//! in a 60-s wave 14,600-28,800 attacker requests were shed, the server's other threads
//! took 1.8-4.5 CPU-s more than in the control run and the hash pool 3-6% less, and
//! honest logins read 0.94-0.97 of control.
//!
//! So an untrusted origin that was just shed is answered "overloaded" again, with what is
//! left of the wait it was given, before any lookup or charge, until that wait is over.
//! A client that honours Retry-After never meets a hold (the answer's Retry-After is the
//! wait or more: jitter only lengthens it). A trusted attempt (the origin holds a trust
//! mark for its principal, or an allow-listed source) is never held, so an honest user
//! behind an attacker's NAS or /24 who has logged in before keeps its path; an untrusted
//! one meets what the pool would most likely have answered anyway for those few hundred
//! milliseconds. The answer is the same for known and unknown principals.
//!
//! The table is direct-mapped and fixed in size: each slot one atomic word holding a tag
//! of the origin's hash and the hold's end, so a reader never sees half of a write. Two
//! origins in one slot overwrite each other's hold, which only loses a hold (the old
//! behaviour); a tag collision (1 in 2^24 of those) holds an untrusted origin for at most
//! the other's wait. Holds are node-local: they save work, they decide nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{Admitted, Deferred, Verifier};

/// Slots (a power of two): 128 KiB.
const SLOTS: usize = 1 << 14;
/// Bits of a slot holding the hold's end, in milliseconds since the table was made
/// (2^40 ms is 34 years).
const TIME_BITS: u32 = 40;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;

/// Holds by origin (see the module doc).
pub(super) struct ShedHolds {
    slots: Box<[AtomicU64]>,
    base: Instant,
}

impl ShedHolds {
    pub(super) fn new(now: Instant) -> ShedHolds {
        ShedHolds {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            base: now,
        }
    }

    fn slot(&self, origin: u64) -> &AtomicU64 {
        // The low bits pick the slot, the high bits are the tag: independent bits of a
        // keyed hash.
        &self.slots[(origin as usize) & (SLOTS - 1)]
    }

    /// Whole milliseconds from the table's making to `t`, rounded down.
    fn ms(&self, t: Instant) -> u64 {
        let ms = t.saturating_duration_since(self.base).as_millis();
        u64::try_from(ms).unwrap_or(u64::MAX).min(TIME_MASK)
    }

    /// `origin` was shed at `now` and told to wait `wait` (at least a millisecond, as
    /// every Retry-After is). The end is rounded down, so the hold is over by the time
    /// the client was told to come back, never after it.
    pub(super) fn hold(&self, origin: u64, now: Instant, wait: Duration) {
        let end = now.checked_add(wait).map_or(TIME_MASK, |t| self.ms(t));
        let tag = origin >> TIME_BITS;
        self.slot(origin)
            .store((tag << TIME_BITS) | end, Ordering::Relaxed);
    }

    /// What is left at `now` of `origin`'s hold, if it is held.
    pub(super) fn held(&self, origin: u64, now: Instant) -> Option<Duration> {
        let word = self.slot(origin).load(Ordering::Relaxed);
        if word >> TIME_BITS != origin >> TIME_BITS {
            return None;
        }
        let left = (word & TIME_MASK).saturating_sub(self.ms(now));
        (left > 0).then(|| Duration::from_millis(left))
    }
}

impl Verifier {
    /// The answer to a shed attempt: its reservation given back, "overloaded" with
    /// `wait`, and an untrusted origin held to that wait.
    pub(super) async fn shed_answer(&self, adm: &Admitted, wait: Duration) -> Deferred {
        // The wait the answer advertises (before its jitter, which only lengthens it):
        // a hold past it would meet a client that honours it.
        let wait = super::release::advertised(wait);
        self.refund(&adm.charges).await;
        if !adm.trusted {
            let i = &*self.inner;
            i.holds.hold(adm.origin_id, i.clock.now(), wait);
        }
        self.overloaded(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_lasts_its_wait_and_names_its_origin() {
        let t0 = Instant::now();
        let h = ShedHolds::new(t0);
        let a = 0xdead_beef_1234_5678_u64;
        let b = a ^ (1 << 50); // same slot, another tag
        assert_eq!(h.held(a, t0), None);
        h.hold(a, t0, Duration::from_millis(300));
        assert_eq!(h.held(a, t0), Some(Duration::from_millis(300)));
        assert_eq!(
            h.held(a, t0 + Duration::from_millis(100)),
            Some(Duration::from_millis(200))
        );
        assert_eq!(h.held(a, t0 + Duration::from_millis(300)), None);
        // Rounded down: over by the advertised time even off a millisecond boundary.
        let t1 = t0 + Duration::from_micros(300);
        h.hold(a, t1, Duration::from_millis(1));
        assert_eq!(h.held(a, t1), Some(Duration::from_millis(1)));
        assert_eq!(h.held(a, t1 + Duration::from_millis(1)), None);
        assert_eq!(
            h.held(b, t0),
            None,
            "another origin in the slot is not held"
        );
        assert_eq!(h.held(a ^ 1, t0), None, "another slot is not held");
        // The slot's new owner replaces the hold: the old one is lost, never shared.
        h.hold(b, t0, Duration::from_millis(50));
        assert_eq!(h.held(a, t0), None);
        assert_eq!(h.held(b, t0), Some(Duration::from_millis(50)));
    }

    #[test]
    fn a_wait_past_the_clock_range_holds_to_its_end() {
        let t0 = Instant::now();
        let h = ShedHolds::new(t0);
        h.hold(7, t0, Duration::MAX);
        assert!(h.held(7, t0 + Duration::from_secs(3600)).is_some());
    }
}
