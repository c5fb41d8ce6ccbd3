//! Where EAP conversations live between round trips: keyed by the random State attribute
//! the server chose, bound to the NAS that started it, bounded in all and per NAS,
//! forgotten when idle. Sharded so conversations do not queue behind one lock (the
//! weakness of a single global tree); a conversation is checked out while a round trip
//! works on it, so two requests can never advance it at once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use portcullis_eap::{Conversation, Pending};

const SHARDS: usize = 16;

/// One conversation's slot.
struct Entry {
    /// The NAS that started it: only it may continue it.
    nas: String,
    /// The machine; `None` while a round trip works on it.
    conv: Option<Box<Conversation>>,
    /// A decision that could not be made (core overloaded): retried on the retransmit.
    pending: Option<Pending>,
    /// Last activity, for expiry.
    last: Instant,
}

/// Why a State found no conversation to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Unknown or expired.
    Unknown,
    /// It belongs to another NAS.
    OtherNas,
    /// A round trip is working on it.
    Busy,
}

/// The conversation table.
pub struct Table {
    shards: Vec<Mutex<HashMap<[u8; 16], Entry>>>,
    /// Conversations per NAS, and in all (the sum), kept with the shards' entries.
    per_nas: Mutex<(HashMap<String, usize>, usize)>,
    max: usize,
    max_per_nas: usize,
    timeout: Duration,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// What a checkout hands to a round trip.
pub type Checkout = (Box<Conversation>, Option<Pending>);

impl Table {
    /// An empty table with these bounds.
    pub fn new(max: usize, max_per_nas: usize, timeout: Duration) -> Table {
        Table {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_nas: Mutex::new((HashMap::new(), 0)),
            max,
            max_per_nas,
            timeout,
        }
    }

    fn shard(&self, key: &[u8; 16]) -> &Mutex<HashMap<[u8; 16], Entry>> {
        &self.shards[usize::from(key[0]) % SHARDS]
    }

    /// Conversations in the table.
    pub fn len(&self) -> usize {
        self.per_nas.lock().1
    }

    /// Whether no conversation is in progress.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a new conversation from `nas` may start: it must fit the per-NAS bound,
    /// and only 7/8 of the global bound is open to new conversations, so those in
    /// progress are never the ones refused.
    pub fn admit(&self, nas: &str) -> bool {
        let g = self.per_nas.lock();
        g.1 < self.max - self.max / 8 && g.0.get(nas).copied().unwrap_or(0) < self.max_per_nas
    }

    /// Take the conversation under `key` for one round trip.
    pub fn checkout(&self, key: &[u8; 16], nas: &str) -> Result<Checkout, Miss> {
        let mut shard = self.shard(key).lock();
        let Some(e) = shard.get_mut(key) else {
            return Err(Miss::Unknown);
        };
        if e.nas != nas {
            return Err(Miss::OtherNas);
        }
        let conv = e.conv.take().ok_or(Miss::Busy)?;
        Ok((conv, e.pending.take()))
    }

    /// Put a conversation (back) after a round trip. A new one is refused (false) when
    /// the table is full.
    pub fn checkin(
        &self,
        key: [u8; 16],
        nas: &str,
        conv: Box<Conversation>,
        pending: Option<Pending>,
        now: Instant,
    ) -> bool {
        let mut shard = self.shard(&key).lock();
        if let Some(e) = shard.get_mut(&key) {
            e.conv = Some(conv);
            e.pending = pending;
            e.last = now;
            return true;
        }
        let mut g = self.per_nas.lock();
        if g.1 >= self.max || g.0.get(nas).copied().unwrap_or(0) >= self.max_per_nas {
            return false;
        }
        g.1 += 1;
        *g.0.entry(nas.to_owned()).or_insert(0) += 1;
        shard.insert(
            key,
            Entry {
                nas: nas.to_owned(),
                conv: Some(conv),
                pending,
                last: now,
            },
        );
        true
    }

    /// Forget a conversation (finished).
    pub fn remove(&self, key: &[u8; 16]) {
        let removed = self.shard(key).lock().remove(key);
        if let Some(e) = removed {
            self.forget_count(&e.nas);
        }
    }

    fn forget_count(&self, nas: &str) {
        let mut g = self.per_nas.lock();
        g.1 = g.1.saturating_sub(1);
        if let Some(n) = g.0.get_mut(nas) {
            *n -= 1;
            if *n == 0 {
                g.0.remove(nas);
            }
        }
    }

    /// Forget conversations idle longer than the timeout; returns how many.
    pub fn sweep(&self, now: Instant) -> usize {
        let mut gone = Vec::new();
        for shard in &self.shards {
            shard.lock().retain(|_, e| {
                let keep = e.conv.is_none() || now.saturating_duration_since(e.last) < self.timeout;
                if !keep {
                    gone.push(e.nas.clone());
                }
                keep
            });
        }
        for nas in &gone {
            self.forget_count(nas);
        }
        gone.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use portcullis_eap::{Settings, Start};

    fn conversation() -> Box<Conversation> {
        let settings = Settings {
            tls: None,
            ttls: None,
            fragment_size: 1000,
            max_message: 1 << 16,
            max_fragments: 16,
            max_rounds: 16,
        };
        // An EAP-Start: the machine asks for the identity and keeps the conversation.
        let start = Start {
            methods: &[],
            framed_mtu: None,
            binding: [0; 16],
        };
        let (c, _) = Conversation::start(&settings, &[], &start);
        Box::new(c.unwrap())
    }

    #[test]
    fn issue_25_state_is_bound_to_its_nas_and_checked_out_once() {
        let t = Table::new(64, 8, Duration::from_secs(30));
        let now = Instant::now();
        assert!(t.checkin([1; 16], "wlc-1", conversation(), None, now));
        assert_eq!(t.checkout(&[1; 16], "wlc-2").err(), Some(Miss::OtherNas));
        assert_eq!(t.checkout(&[9; 16], "wlc-1").err(), Some(Miss::Unknown));
        let (c, _) = t.checkout(&[1; 16], "wlc-1").unwrap();
        assert_eq!(
            t.checkout(&[1; 16], "wlc-1").err(),
            Some(Miss::Busy),
            "one round trip at a time"
        );
        assert!(t.checkin([1; 16], "wlc-1", c, None, now));
        assert_eq!(t.len(), 1);
        t.remove(&[1; 16]);
        assert!(t.is_empty());
    }

    #[test]
    fn issue_25_new_conversations_are_refused_before_those_in_progress() {
        let t = Table::new(16, 16, Duration::from_secs(30));
        let now = Instant::now();
        let mut n = 0u8;
        while t.admit("wlc-1") {
            assert!(t.checkin([n; 16], "wlc-1", conversation(), None, now));
            n += 1;
        }
        assert_eq!(t.len(), 14, "new ones stop at 7/8 of the table");
        // Those in progress still go on (checked out and back in).
        let (c, _) = t.checkout(&[0; 16], "wlc-1").unwrap();
        assert!(t.checkin([0; 16], "wlc-1", c, None, now));
        // Per-NAS bound.
        let t = Table::new(64, 2, Duration::from_secs(30));
        assert!(t.checkin([1; 16], "a", conversation(), None, now));
        assert!(t.checkin([2; 16], "a", conversation(), None, now));
        assert!(!t.admit("a") && t.admit("b"));
        assert!(!t.checkin([3; 16], "a", conversation(), None, now));
    }

    #[test]
    fn issue_25_idle_conversations_expire_but_not_while_checked_out() {
        let t = Table::new(64, 64, Duration::from_secs(30));
        let then = Instant::now();
        assert!(t.checkin([1; 16], "a", conversation(), None, then));
        assert!(t.checkin([2; 16], "a", conversation(), None, then));
        let _busy = t.checkout(&[2; 16], "a").unwrap();
        assert_eq!(t.sweep(then + Duration::from_secs(10)), 0);
        assert_eq!(
            t.sweep(then + Duration::from_secs(31)),
            1,
            "the idle one goes"
        );
        assert_eq!(t.len(), 1, "the one being worked on stays");
    }
}
