//! What the 802.1X driver records beyond an attempt's outcome and latency: per login its
//! round trips, whether it resumed, whether the keys of an Access-Accept matched; per group
//! accepted logins full and resumed, their rates and p99s, and the mean round trips.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::station::EapLogin;
use crate::outcome::{Outcome, hist, pct_ms};

/// A group's 802.1X counters (shared by its tasks).
#[derive(Debug)]
pub struct EapStats {
    answered: AtomicU64,
    round_trips: AtomicU64,
    full: AtomicU64,
    resumed: AtomicU64,
    wrong_keys: AtomicU64,
    full_us: Mutex<Histogram<u64>>,
    resumed_us: Mutex<Histogram<u64>>,
}

impl Default for EapStats {
    fn default() -> Self {
        EapStats {
            answered: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            full: AtomicU64::new(0),
            resumed: AtomicU64::new(0),
            wrong_keys: AtomicU64::new(0),
            full_us: Mutex::new(hist(3)),
            resumed_us: Mutex::new(hist(3)),
        }
    }
}

impl EapStats {
    /// Record a login that came to `outcome` after `latency`.
    pub fn record(&self, login: &EapLogin, outcome: Outcome, latency: Duration) {
        self.answered.fetch_add(1, Ordering::Relaxed);
        self.round_trips
            .fetch_add(u64::from(login.round_trips), Ordering::Relaxed);
        if login.wrong_keys {
            self.wrong_keys.fetch_add(1, Ordering::Relaxed);
        }
        if outcome != Outcome::Success {
            return;
        }
        let us = (latency.as_micros() as u64).max(1);
        let (n, h) = if login.resumed {
            (&self.resumed, &self.resumed_us)
        } else {
            (&self.full, &self.full_us)
        };
        n.fetch_add(1, Ordering::Relaxed);
        h.lock().saturating_record(us);
    }

    /// The summary over the group's active time (`None`: no EAP login was answered).
    pub fn summary(&self, active: Duration) -> Option<EapSummary> {
        let answered = self.answered.load(Ordering::Relaxed);
        if answered == 0 {
            return None;
        }
        let secs = active.as_secs_f64().max(1e-9);
        let full = self.full.load(Ordering::Relaxed);
        let resumed = self.resumed.load(Ordering::Relaxed);
        Some(EapSummary {
            logins: answered,
            accepted_full: full,
            accepted_resumed: resumed,
            full_per_s: full as f64 / secs,
            resumed_per_s: resumed as f64 / secs,
            full_p99_ms: pct_ms(&self.full_us.lock(), 99.0),
            resumed_p99_ms: pct_ms(&self.resumed_us.lock(), 99.0),
            round_trips_mean: self.round_trips.load(Ordering::Relaxed) as f64 / answered as f64,
            wrong_keys: self.wrong_keys.load(Ordering::Relaxed),
        })
    }
}

/// A group's 802.1X figures (in `summary.json` beside the attempt figures).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EapSummary {
    /// Logins that got a final answer (Accept, Reject, or a wrong response).
    pub logins: u64,
    /// Accepted logins with a full TLS handshake.
    pub accepted_full: u64,
    /// Accepted logins that resumed a session.
    pub accepted_resumed: u64,
    /// Accepted full logins per second of the group's active time.
    pub full_per_s: f64,
    /// Accepted resumed logins per second.
    pub resumed_per_s: f64,
    /// p99 latency of accepted full logins, first request to Access-Accept (ms).
    pub full_p99_ms: f64,
    /// p99 of accepted resumed logins (ms).
    pub resumed_p99_ms: f64,
    /// Mean Access-Requests per answered login.
    pub round_trips_mean: f64,
    /// Accepts whose MS-MPPE keys did not match the station's (fails the run).
    pub wrong_keys: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_logins_split_into_full_and_resumed() {
        let s = EapStats::default();
        let full = EapLogin {
            round_trips: 8,
            resumed: false,
            wrong_keys: false,
        };
        let resumed = EapLogin {
            round_trips: 4,
            ..full
        };
        let resumed = EapLogin {
            resumed: true,
            ..resumed
        };
        s.record(&full, Outcome::Success, Duration::from_millis(20));
        for _ in 0..3 {
            s.record(&resumed, Outcome::Success, Duration::from_millis(5));
        }
        s.record(&full, Outcome::AuthFailure, Duration::from_millis(900));
        let bad = EapLogin {
            wrong_keys: true,
            ..full
        };
        s.record(&bad, Outcome::WrongResponse, Duration::from_millis(20));
        let r = s.summary(Duration::from_secs(2)).unwrap();
        assert_eq!((r.logins, r.accepted_full, r.accepted_resumed), (6, 1, 3));
        assert_eq!(r.wrong_keys, 1);
        assert!((r.resumed_per_s - 1.5).abs() < 1e-9);
        assert!((r.round_trips_mean - (8.0 * 3.0 + 4.0 * 3.0) / 6.0).abs() < 1e-9);
        assert!((r.full_p99_ms - 20.0).abs() < 0.1, "{}", r.full_p99_ms);
        assert!((r.resumed_p99_ms - 5.0).abs() < 0.1);
        assert!(
            EapStats::default()
                .summary(Duration::from_secs(1))
                .is_none()
        );
    }
}
