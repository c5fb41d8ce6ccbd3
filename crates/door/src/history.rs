//! The status page's memory (issue 18): one sample per second of the core's counters for
//! the last 15 minutes, and the sources failing most in that time.
//!
//! Both are bounded: [`KEEP`] samples in a ring, and at most [`MAX_SOURCES`] source
//! prefixes on the failure board (when it is full, the eighth least recently seen are
//! forgotten at once, so a flood from ever new prefixes costs one sort per many events).
//! A wave that ended a minute ago is still on the page, which the counters alone (totals
//! since start) could not show.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use portcullis_core::{AuditEvent, AuditOutcome, IpPrefix, PoolSnapshot};

/// Samples kept: 15 minutes at one per second.
pub const KEEP: usize = 900;
/// How far back the failure board looks.
pub const BOARD_WINDOW: Duration = Duration::from_secs(15 * 60);
/// Source prefixes on the failure board at most.
pub const MAX_SOURCES: usize = 4096;

/// One second of the core's activity.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Seconds since the Unix epoch at the end of the second.
    pub t: u64,
    /// Answers in the second, by outcome.
    pub accepted: u64,
    /// See `accepted`.
    pub rejected: u64,
    /// See `accepted`.
    pub throttled: u64,
    /// See `accepted`.
    pub overloaded: u64,
    /// Jobs shed by the pool in the second.
    pub shed: u64,
    /// KDF derivations done in the second.
    pub verifications: u64,
    /// Answers in the second by class: trusted, unknown, suspect.
    pub by_class: [u64; 3],
    /// Jobs waiting at the end of the second, by class.
    pub queued: [usize; 3],
    /// Mean queue wait of the jobs that reached a hash thread in the second (ms).
    pub queue_wait_ms: f64,
    /// Hash threads busy at the end of the second.
    pub pool_busy: usize,
}

/// The ring of samples and the previous snapshot they are differences of.
#[derive(Debug, Default)]
pub struct History {
    inner: Mutex<(VecDeque<Sample>, Option<PoolSnapshot>)>,
}

impl History {
    /// Take the second that ended at `t` (Unix seconds) from `snap`, the core's counters
    /// now. The first sample counts from zero: what was answered before the first tick
    /// (the sampler starts with the server, but not before its first request) is in it.
    pub fn tick(&self, t: u64, snap: PoolSnapshot) {
        let mut g = self.inner.lock();
        let (ring, prev) = &mut *g;
        {
            let p = prev.get_or_insert_with(PoolSnapshot::default);
            let d = |now: u64, before: u64| now.saturating_sub(before);
            let waits = d(snap.queue_waits, p.queue_waits);
            let sample = Sample {
                t,
                accepted: d(snap.accepted, p.accepted),
                rejected: d(snap.rejected, p.rejected),
                throttled: d(snap.throttled, p.throttled),
                overloaded: d(snap.overloaded, p.overloaded),
                shed: d(snap.shed, p.shed),
                verifications: d(snap.hashes_computed, p.hashes_computed),
                by_class: [0, 1, 2].map(|c| d(snap.attempts_by_class[c], p.attempts_by_class[c])),
                queued: snap.queued_by_class,
                queue_wait_ms: if waits == 0 {
                    0.0
                } else {
                    d(snap.queue_wait_us_total, p.queue_wait_us_total) as f64 / waits as f64 / 1e3
                },
                pool_busy: snap.busy_threads,
            };
            if ring.len() == KEEP {
                ring.pop_front();
            }
            ring.push_back(sample);
        }
        *prev = Some(snap);
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.inner.lock().0.iter().copied().collect()
    }

    /// The samples as columns (what the page draws).
    pub fn json(&self) -> serde_json::Value {
        let s = self.samples();
        let col = |f: &dyn Fn(&Sample) -> serde_json::Value| -> Vec<serde_json::Value> {
            s.iter().map(f).collect()
        };
        serde_json::json!({
            "t": col(&|x| x.t.into()),
            "accepted": col(&|x| x.accepted.into()),
            "rejected": col(&|x| x.rejected.into()),
            "throttled": col(&|x| x.throttled.into()),
            "overloaded": col(&|x| x.overloaded.into()),
            "shed": col(&|x| x.shed.into()),
            "verifications": col(&|x| x.verifications.into()),
            "trusted": col(&|x| x.by_class[0].into()),
            "unknown": col(&|x| x.by_class[1].into()),
            "suspect": col(&|x| x.by_class[2].into()),
            "queued_trusted": col(&|x| x.queued[0].into()),
            "queued_unknown": col(&|x| x.queued[1].into()),
            "queued_suspect": col(&|x| x.queued[2].into()),
            "queue_wait_ms": col(&|x| ((x.queue_wait_ms * 100.0).round() / 100.0).into()),
            "pool_busy": col(&|x| x.pool_busy.into()),
        })
    }
}

/// One source prefix on the failure board.
#[derive(Debug, Clone)]
struct Failing {
    /// Failures (rejected, unknown principal, throttled, dropped) in the current window.
    failures: u64,
    /// When the window started (reset once it is older than [`BOARD_WINDOW`]).
    since: Instant,
    last: Instant,
    /// The principal of its latest failure (as given), to see what it is after.
    last_principal: String,
}

/// The sources failing most in the last 15 minutes, fed with every audit event.
#[derive(Debug, Default)]
pub struct FailureBoard {
    map: Mutex<HashMap<IpPrefix, Failing>>,
}

impl FailureBoard {
    /// Count `event` if it is a failure.
    pub fn record(&self, event: &AuditEvent, now: Instant) {
        if !matches!(
            event.outcome,
            AuditOutcome::Rejected
                | AuditOutcome::UnknownPrincipal
                | AuditOutcome::Throttled
                | AuditOutcome::Dropped
        ) {
            return;
        }
        let prefix = IpPrefix::of(event.source, 24, 64);
        let mut map = self.map.lock();
        if !map.contains_key(&prefix) && map.len() >= MAX_SOURCES {
            map.retain(|_, f| now.saturating_duration_since(f.last) < BOARD_WINDOW);
            if map.len() >= MAX_SOURCES {
                let mut by_age: Vec<(Instant, IpPrefix)> =
                    map.iter().map(|(p, f)| (f.last, *p)).collect();
                by_age.sort_unstable_by_key(|x| x.0);
                for (_, p) in by_age.into_iter().take(MAX_SOURCES / 8 + 1) {
                    map.remove(&p);
                }
            }
        }
        let f = map.entry(prefix).or_insert_with(|| Failing {
            failures: 0,
            since: now,
            last: now,
            last_principal: String::new(),
        });
        if now.saturating_duration_since(f.since) >= BOARD_WINDOW {
            f.failures = 0;
            f.since = now;
        }
        f.failures += 1;
        f.last = now;
        f.last_principal = event.principal.chars().take(64).collect();
    }

    /// The `n` prefixes with the most failures seen in the last 15 minutes.
    pub fn top(&self, n: usize, now: Instant) -> Vec<serde_json::Value> {
        let map = self.map.lock();
        let mut live: Vec<(&IpPrefix, &Failing)> = map
            .iter()
            .filter(|(_, f)| now.saturating_duration_since(f.last) < BOARD_WINDOW)
            .collect();
        live.sort_by(|a, b| {
            b.1.failures
                .cmp(&a.1.failures)
                .then(a.0.to_string().cmp(&b.0.to_string()))
        });
        live.into_iter()
            .take(n)
            .map(|(p, f)| {
                serde_json::json!({
                    "source": p.to_string(),
                    "failures": f.failures,
                    "last_seen_secs_ago": now.saturating_duration_since(f.last).as_secs(),
                    "last_principal": f.last_principal,
                })
            })
            .collect()
    }

    /// Prefixes on the board (tests).
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Whether the board is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::time::SystemTime;

    use portcullis_core::{AuditContext, PrincipalKind, Protocol};

    use super::*;

    fn snap(accepted: u64, rejected: u64, waits: u64, wait_us: u64) -> PoolSnapshot {
        PoolSnapshot {
            accepted,
            rejected,
            queue_waits: waits,
            queue_wait_us_total: wait_us,
            ..PoolSnapshot::default()
        }
    }

    #[test]
    fn issue_18_history_keeps_per_second_differences_for_fifteen_minutes() {
        let h = History::default();
        // Answered before the first tick: counted in the first sample, not lost.
        h.tick(1000, snap(1, 0, 0, 0));
        assert_eq!(h.samples()[0].accepted, 1);
        h.tick(1001, snap(6, 2, 4, 8000));
        h.tick(1002, snap(6, 9, 4, 8000));
        let s = &h.samples()[1..];
        assert_eq!(
            (s[0].accepted, s[0].rejected, s[0].queue_wait_ms),
            (5, 2, 2.0)
        );
        assert_eq!(
            (s[1].accepted, s[1].rejected, s[1].queue_wait_ms),
            (0, 7, 0.0)
        );
        for t in 0..2000u64 {
            h.tick(2000 + t, snap(10 + t, 9, 4, 8000));
        }
        let s = h.samples();
        assert_eq!(s.len(), KEEP);
        assert_eq!(s.last().map(|x| x.t), Some(3999));
        assert!(s.iter().all(|x| x.accepted == 1));
        assert_eq!(h.json()["accepted"].as_array().map(Vec::len), Some(KEEP));
    }

    fn failure(source: &str, principal: &str) -> AuditEvent {
        AuditEvent {
            time: SystemTime::now(),
            protocol: Protocol::OAuthClient,
            kind: PrincipalKind::Client,
            principal: principal.into(),
            context: AuditContext::default(),
            source: source.parse::<IpAddr>().unwrap(),
            station: None,
            outcome: AuditOutcome::Rejected,
            reason: "wrong_secret",
            latency: Duration::ZERO,
            class: None,
            directory: None,
        }
    }

    #[test]
    fn issue_18_failure_board_ranks_and_stays_bounded() {
        let b = FailureBoard::default();
        let now = Instant::now();
        for _ in 0..5 {
            b.record(&failure("203.0.113.9", "admin"), now);
        }
        b.record(&failure("198.51.100.1", "bob"), now);
        let mut ok = failure("192.0.2.1", "carol");
        ok.outcome = AuditOutcome::Accepted;
        b.record(&ok, now);
        let top = b.top(10, now);
        assert_eq!(top.len(), 2, "successes are not failures: {top:?}");
        assert_eq!(top[0]["source"], "203.0.113.0/24");
        assert_eq!(top[0]["failures"], 5);
        assert_eq!(top[0]["last_principal"], "admin");
        // Old entries leave the page.
        assert!(b.top(10, now + BOARD_WINDOW).is_empty());
        // Ever new prefixes: the board never grows past its bound.
        for i in 0..(MAX_SOURCES as u32 * 2) {
            let ip = IpAddr::from((0x0a00_0000u32 + (i << 8)).to_be_bytes());
            let mut e = failure("10.0.0.1", "x");
            e.source = ip;
            b.record(&e, now + Duration::from_millis(u64::from(i)));
        }
        assert!(b.len() <= MAX_SOURCES, "{}", b.len());
    }
}
