//! How wide a batch may be: as wide as the kernel likes, but only as wide as the earliest
//! deadline in it allows (every job of a batch finishes when the widest group does).

use std::time::Duration;

/// The widest batch, up to `preferred`, whose run time (`time(k)` for `k` jobs) still fits
/// in `slack`; at least 1 (a job alone is never held back by this).
pub(crate) fn deadline_width(
    preferred: usize,
    slack: Duration,
    time: impl Fn(usize) -> Duration,
) -> usize {
    (2..=preferred.max(1))
        .take_while(|&k| time(k) <= slack)
        .last()
        .unwrap_or(1)
}
