//! Which identity lookups may go to a PostgreSQL replica (`[store] read_url`, issue 30).
//!
//! A cache miss reads the replica, except when the replica may not have the change yet:
//! a record the change feed named within the last cache TTL is read from the primary,
//! and so is everything while the feed is down or within a TTL of it coming back (changes
//! may have been missed). So a change is seen at once by every instance, as without a
//! replica, as long as the replica's replay lag stays below the cache TTL; a replica
//! lagging more than that serves a record at most (lag - TTL) older than the primary's
//! after the window, then catches up. Writes and the change feed always use the primary.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Most remembered changes; beyond it, everything reads the primary for one window.
const MAX_CHANGED: usize = 65_536;

/// Recent changes, by `c:id` / `u:name`.
#[derive(Debug)]
pub struct ReadRouting {
    window: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    changed: HashMap<String, Instant>,
    /// Everything reads the primary until then (feed down or just back, overflow).
    all_until: Option<Instant>,
    feed_up: bool,
}

impl ReadRouting {
    /// Routing with a primary-only window of `window` (the cache TTL).
    pub fn new(window: Duration) -> Self {
        ReadRouting {
            window,
            state: Mutex::new(State::default()),
        }
    }

    /// The feed named `key`: read it from the primary for one window.
    pub fn changed(&self, key: String) {
        let now = Instant::now();
        let mut s = self.state.lock();
        if s.changed.len() >= MAX_CHANGED {
            let w = self.window;
            s.changed.retain(|_, t| now.duration_since(*t) < w);
            if s.changed.len() >= MAX_CHANGED {
                s.changed.clear();
                s.all_until = Some(now + self.window);
            }
        }
        s.changed.insert(key, now);
    }

    /// The feed is up (again): changes may have been missed, so one window on the primary.
    pub fn feed_up(&self) {
        let mut s = self.state.lock();
        s.feed_up = true;
        s.all_until = Some(Instant::now() + self.window);
    }

    /// The feed is down: everything reads the primary until it is back.
    pub fn feed_down(&self) {
        self.state.lock().feed_up = false;
    }

    /// Whether a lookup of `key` may read the replica now.
    pub fn replica_ok(&self, key: &str) -> bool {
        let now = Instant::now();
        let s = self.state.lock();
        s.feed_up
            && s.all_until.is_none_or(|t| now >= t)
            && s.changed
                .get(key)
                .is_none_or(|t| now.duration_since(*t) >= self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_30_the_replica_is_used_only_when_it_cannot_be_behind_a_known_change() {
        let r = ReadRouting::new(Duration::from_millis(50));
        assert!(!r.replica_ok("c:a"), "no feed yet: primary");
        r.feed_up();
        assert!(
            !r.replica_ok("c:a"),
            "just (re)subscribed: primary for a window"
        );
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(60) {
            std::hint::spin_loop();
        }
        assert!(r.replica_ok("c:a"));
        r.changed("c:a".into());
        assert!(!r.replica_ok("c:a"), "changed: primary");
        assert!(r.replica_ok("c:b"), "others unaffected");
        r.feed_down();
        assert!(!r.replica_ok("c:b"), "feed down: primary");
    }
}
