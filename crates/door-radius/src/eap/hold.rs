//! Stations the core's throttle refuses, remembered so their next conversations cost no
//! TLS handshake (issue 25).
//!
//! A TTLS login reaches the core's throttle only after the tunnel is up: the inner
//! password is the first thing with a principal to charge. A station guessing passwords
//! is refused there without a hash, but each of its logins still cost a full handshake
//! (a signature and a key agreement), which is most of a refused login's CPU. So when the
//! core refuses a station's login (`Outcome::Throttled`), or a rejection leaves its
//! budgets refusing the next attempt (`Verifier::throttle_report`), the door notes the
//! station (NAS and Calling-Station-Id) until the core's `retry_after`; a *new*
//! conversation from a noted station is answered with EAP-Failure after the reject delay
//! (a timer), before any TLS. This is the core's decision, not a second throttle: the
//! budgets, their sizes and when they refill stay the core's; the door only skips a
//! handshake whose inner attempt the core would refuse.
//!
//! Only the station is held: other stations behind the same NAS, and the same user
//! from any other station, are untouched (the station is the throttle's origin of a TTLS
//! attempt). A request without Calling-Station-Id is never held (its origin would be the
//! inner user, unknown before the handshake). Bounded: at most [`CAPACITY`] stations,
//! expired ones swept when a shard fills; past that the soonest to end is forgotten (it
//! then costs one handshake more, never a wrong answer).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Stations remembered at most.
pub const CAPACITY: usize = 1 << 16;
const SHARDS: usize = 16;
/// The longest hold, whatever the core answered (a refusal is re-learned on the next
/// login once a hold ends).
const LONGEST: Duration = Duration::from_secs(15 * 60);

/// The held stations: a hash of (NAS, station) → end of the hold.
pub struct Holds {
    shards: Vec<Mutex<HashMap<u64, Instant>>>,
    hasher: std::collections::hash_map::RandomState,
}

impl std::fmt::Debug for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holds").finish_non_exhaustive()
    }
}

impl Default for Holds {
    fn default() -> Self {
        Holds {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl Holds {
    fn key(&self, nas: &str, station: &str) -> (usize, u64) {
        let h = self.hasher.hash_one((nas, station));
        ((h as usize) % SHARDS, h)
    }

    /// Hold `station` of `nas` for `for_` from `now` (a longer hold already noted stays).
    pub fn hold(&self, nas: &str, station: &str, for_: Duration, now: Instant) {
        if for_.is_zero() {
            return;
        }
        let until = now + for_.min(LONGEST);
        let (s, k) = self.key(nas, station);
        let mut map = self.shards[s].lock();
        if map.len() >= CAPACITY / SHARDS && !map.contains_key(&k) {
            map.retain(|_, u| *u > now);
            if map.len() >= CAPACITY / SHARDS
                && let Some(soonest) = map.iter().min_by_key(|(_, u)| **u).map(|(k, _)| *k)
            {
                map.remove(&soonest);
            }
        }
        let e = map.entry(k).or_insert(until);
        *e = (*e).max(until);
    }

    /// How much longer `station` of `nas` is held at `now` (`None`: not held).
    pub fn held(&self, nas: &str, station: &str, now: Instant) -> Option<Duration> {
        let (s, k) = self.key(nas, station);
        let mut map = self.shards[s].lock();
        match map.get(&k) {
            Some(u) if *u > now => Some(u.saturating_duration_since(now)),
            Some(_) => {
                map.remove(&k);
                None
            }
            None => None,
        }
    }

    /// Stations held or not yet swept.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_25_a_hold_is_per_station_and_nas_and_ends() {
        let h = Holds::default();
        let t0 = Instant::now();
        h.hold("nas-a", "02-00-00-00-00-01", Duration::from_secs(30), t0);
        assert!(h.held("nas-a", "02-00-00-00-00-01", t0).is_some());
        assert_eq!(
            h.held("nas-a", "02-00-00-00-00-02", t0),
            None,
            "other station"
        );
        assert_eq!(h.held("nas-b", "02-00-00-00-00-01", t0), None, "other NAS");
        let later = t0 + Duration::from_secs(31);
        assert_eq!(h.held("nas-a", "02-00-00-00-00-01", later), None);
        assert!(h.is_empty(), "an ended hold is forgotten when asked");
    }

    #[test]
    fn issue_25_holds_never_grow_past_capacity_nor_past_the_longest_hold() {
        let h = Holds::default();
        let t0 = Instant::now();
        for i in 0..(CAPACITY + 5000) {
            h.hold("nas", &i.to_string(), Duration::from_secs(60), t0);
        }
        assert!(h.len() <= CAPACITY);
        h.hold("nas", "long", Duration::from_secs(86_400), t0);
        assert!(h.held("nas", "long", t0).is_some_and(|d| d <= LONGEST));
        // A shorter refusal never shortens a longer hold.
        h.hold("nas", "long", Duration::from_secs(1), t0);
        assert!(h.held("nas", "long", t0 + Duration::from_secs(2)).is_some());
    }
}
