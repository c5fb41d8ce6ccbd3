//! What one attempt came to ([`Outcome`]) and the latency histograms every recorder
//! uses. A leaf below the drivers, the 802.1X counters and the run record, which all
//! name outcomes: it imports none of them.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A token (or 200 for `http-get`) that passed every check.
    Success,
    /// The server refused the credentials (400 invalid_client/invalid_grant, 401).
    AuthFailure,
    /// 429 Too Many Requests.
    Throttled,
    /// 503 Service Unavailable (load shed).
    Shed,
    /// No complete answer within the timeout (counted from the intended send time).
    Timeout,
    /// Connect, write or read failed.
    ConnectionError,
    /// Any other status, a malformed body, or a token that failed verification.
    WrongResponse,
}

/// Every outcome, in report order.
pub const OUTCOMES: [Outcome; 7] = [
    Outcome::Success,
    Outcome::AuthFailure,
    Outcome::Throttled,
    Outcome::Shed,
    Outcome::Timeout,
    Outcome::ConnectionError,
    Outcome::WrongResponse,
];

impl Outcome {
    /// Index into count arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// snake_case name used in JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::AuthFailure => "auth_failure",
            Outcome::Throttled => "throttled",
            Outcome::Shed => "shed",
            Outcome::Timeout => "timeout",
            Outcome::ConnectionError => "connection_error",
            Outcome::WrongResponse => "wrong_response",
        }
    }
}

pub(crate) const HIGHEST_US: u64 = 3_600_000_000;

pub(crate) fn hist(sigfig: u8) -> Histogram<u64> {
    // Bounds are constants within hdrhistogram's limits, so construction cannot fail;
    // fall back to an auto-resizing histogram rather than panic.
    Histogram::new_with_bounds(1, HIGHEST_US, sigfig).unwrap_or_else(|_| {
        let mut h = Histogram::new(sigfig.min(5)).unwrap_or_else(|_| unreachable_hist());
        h.auto(true);
        h
    })
}

#[allow(clippy::expect_used)] // sigfig 2 is always valid for hdrhistogram
fn unreachable_hist() -> Histogram<u64> {
    Histogram::new(2).expect("2 significant figures is valid")
}

pub(crate) fn pct_ms(h: &Histogram<u64>, p: f64) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        h.value_at_percentile(p) as f64 / 1000.0
    }
}
