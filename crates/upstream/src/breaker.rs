//! The circuit breaker of one server.
//!
//! This module owns the decision whether a check may try a server: closed (try it), open
//! (skip it until the open period has passed: a dead server costs no connect timeout), and
//! half-open (one check at a time probes it; success closes the breaker, failure opens it
//! again for another period). Only the server's own faults count (connect, TLS, timeouts,
//! server errors), never a user's wrong password.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The breaker's state, as shown in status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Checks go to the server.
    Closed,
    /// The server is skipped.
    Open,
    /// One probing check may go to the server.
    HalfOpen,
}

#[derive(Debug)]
struct Inner {
    state: BreakerState,
    consecutive_failures: u32,
    opened_at: Option<Instant>,
    probe_in_flight: bool,
}

/// One server's breaker.
#[derive(Debug)]
pub struct Breaker {
    inner: Mutex<Inner>,
    failures_to_open: u32,
    open_for: Duration,
}

/// Leave to try the server, as an ordinary check or as the half-open probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The breaker is closed.
    Normal,
    /// This check is the probe.
    Probe,
}

impl Breaker {
    /// A closed breaker that opens after `failures_to_open` consecutive failures for
    /// `open_for`.
    pub fn new(failures_to_open: u32, open_for: Duration) -> Self {
        Self {
            inner: Mutex::new(Inner {
                state: BreakerState::Closed,
                consecutive_failures: 0,
                opened_at: None,
                probe_in_flight: false,
            }),
            failures_to_open: failures_to_open.max(1),
            open_for,
        }
    }

    /// Whether a check may try the server now; `None` means skip it.
    pub fn pass(&self, now: Instant) -> Option<Pass> {
        let mut s = self.inner.lock();
        if s.state == BreakerState::Open {
            let opened = s.opened_at.unwrap_or(now);
            if now.saturating_duration_since(opened) < self.open_for {
                return None;
            }
            s.state = BreakerState::HalfOpen;
            s.probe_in_flight = false;
        }
        match s.state {
            BreakerState::Closed => Some(Pass::Normal),
            BreakerState::HalfOpen if !s.probe_in_flight => {
                s.probe_in_flight = true;
                Some(Pass::Probe)
            }
            _ => None,
        }
    }

    /// The server answered (whatever the user's outcome).
    pub fn success(&self) {
        let mut s = self.inner.lock();
        s.state = BreakerState::Closed;
        s.consecutive_failures = 0;
        s.opened_at = None;
        s.probe_in_flight = false;
    }

    /// The server failed. Returns true when this failure opened the breaker.
    pub fn failure(&self, now: Instant) -> bool {
        let mut s = self.inner.lock();
        s.consecutive_failures = s.consecutive_failures.saturating_add(1);
        let open = match s.state {
            BreakerState::HalfOpen => true,
            BreakerState::Closed => s.consecutive_failures >= self.failures_to_open,
            BreakerState::Open => false,
        };
        if open {
            s.state = BreakerState::Open;
            s.opened_at = Some(now);
            s.probe_in_flight = false;
        }
        open
    }

    /// A probe that ended without an answer either way (its check was cancelled): another
    /// check may probe.
    pub fn probe_abandoned(&self) {
        self.inner.lock().probe_in_flight = false;
    }

    /// The state, after moving an expired open period to half-open.
    pub fn state(&self, now: Instant) -> BreakerState {
        let s = self.inner.lock();
        match (s.state, s.opened_at) {
            (BreakerState::Open, Some(at))
                if now.saturating_duration_since(at) >= self.open_for =>
            {
                BreakerState::HalfOpen
            }
            (state, _) => state,
        }
    }

    /// Consecutive failures so far.
    pub fn consecutive_failures(&self) -> u32 {
        self.inner.lock().consecutive_failures
    }
}

#[cfg(test)]
mod tests;
