//! How wide a batch may be: as wide as the kernel likes, but only as wide as the earliest
//! deadline in it allows (every job of a batch finishes when the widest group does), and
//! no wider than a fair share of the work when splitting it between threads finishes it
//! sooner.

use std::time::Duration;

/// Splitting must save at least this fraction of a batch's time to be worth a second
/// thread: a narrower kernel that saves less (or nothing, as a half-empty group of the
/// widest one) would only spend a second core on the same answers.
const SPLIT_SAVES: f64 = 0.1;

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

/// The most jobs one worker should take when `active` jobs are queued or in service on a
/// pool of `threads` threads and one batch of `k` jobs takes `factor(k)` (any unit): its
/// fair share, `active / threads` rounded up, when running shares side by side finishes
/// them at least [`SPLIT_SAVES`] sooner than one batch of them all (up to `preferred`);
/// otherwise no cap (`usize::MAX`).
///
/// Why: a closed loop of sixteen clients on two threads is sixteen jobs in flight, never
/// more. With a sixteen-lane kernel one worker took all sixteen and the other idled, so
/// the clients got half of the pool's derivations per second; on a CPU with an eight-lane
/// kernel that takes about half the time (AVX-512VL), eight a thread serves them faster.
/// A thread that takes only its share leaves the rest to the other, which comes back for
/// them when its batch ends, so the split also settles from any uneven start.
pub(crate) fn fair_share(
    active: usize,
    threads: usize,
    preferred: usize,
    factor: impl Fn(usize) -> f64,
) -> usize {
    if threads < 2 || active < 2 {
        return usize::MAX;
    }
    let share = active.div_ceil(threads);
    let all = active.min(preferred.max(1));
    if share >= all {
        return usize::MAX;
    }
    match factor(share) <= (1.0 - SPLIT_SAVES) * factor(all) {
        true => share,
        false => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative times on the Xeon of issue 41 (avx512-x16 at 0.0736 s for sixteen chains of
    /// 100,000 iterations, avx512vl-x8 at 0.0537 s for eight): groups of eight and sixteen.
    fn xeon(k: usize) -> f64 {
        match k {
            0 => 0.0,
            1..=8 => 0.0537,
            _ => 0.0736,
        }
    }

    /// Only a sixteen-lane kernel: half a group takes as long as a whole one.
    fn wide_only(k: usize) -> f64 {
        if k == 0 { 0.0 } else { 0.0736 }
    }

    #[test]
    fn sixteen_closed_loop_jobs_on_two_threads_split_eight_and_eight() {
        assert_eq!(fair_share(16, 2, 16, xeon), 8);
        // Ten trusted clients: five a thread, each group of five in eight-lane time.
        assert_eq!(fair_share(10, 2, 16, xeon), 5);
    }

    #[test]
    fn no_split_when_it_saves_no_time() {
        assert_eq!(fair_share(16, 2, 16, wide_only), usize::MAX);
    }

    #[test]
    fn no_cap_when_the_share_fills_the_kernel_or_one_thread_serves() {
        // A saturated pool: each thread's share is a full batch anyway.
        assert_eq!(fair_share(40, 2, 16, xeon), usize::MAX);
        assert_eq!(fair_share(16, 1, 16, xeon), usize::MAX);
        assert_eq!(fair_share(1, 2, 16, xeon), usize::MAX);
        // A narrow preferred kernel (SHA-NI x2): the share is wider than a batch.
        assert_eq!(fair_share(16, 2, 2, |k| k as f64), usize::MAX);
    }
}
