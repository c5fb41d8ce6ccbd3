//! How wide a batch may be: as wide as the kernel likes, but only as wide as the earliest
//! deadline in it allows (every job of a batch finishes when the widest group does), and,
//! with few jobs in flight, only this worker's part of the split between the threads that
//! derives the most per second.

use std::time::Duration;

/// Splits whose rates are within this fraction of the best one count as equally fast;
/// among them the one whose slowest batch ends first wins (the clients' p99).
const SAME_RATE: f64 = 0.02;

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

/// How many of `active` jobs (queued or in service, in one class) one worker should take
/// on a pool of `threads` threads, when a batch of `k` jobs takes `time[k]` (any unit;
/// `time[1..]` up to the widest batch worth gathering): the split of the jobs between this
/// worker and the others (evenly among them) that derives the most per second; among
/// splits within [`SAME_RATE`] of the best, the one whose slowest batch ends first, then
/// the widest for this worker (no gain: one batch, as before).
///
/// Why: a closed loop of N clients is N jobs in flight, never more, and for a closed loop
/// the most derivations per second is also the shortest mean wait. With a sixteen-lane
/// kernel and sixteen clients one worker took all sixteen and the other idled: half the
/// pool. On the Xeon of issue 41 sixteen run best as eight a thread (AVX-512VL's eight
/// lanes, 0.73 of a sixteen-lane group's time) and ten as two (SHA-NI) beside eight,
/// not five and five, which leaves three lanes of each group empty. A worker that takes
/// only its part leaves the rest to the others, and the split settles from any start.
pub(crate) fn best_share(active: usize, threads: usize, time: &[f64]) -> usize {
    let widest = time.len().saturating_sub(1).max(1);
    let take_all = active.clamp(1, widest);
    if threads < 2 || active < 2 || time.len() < 2 {
        return take_all;
    }
    let rate = |k: usize| match time.get(k) {
        Some(&t) if k > 0 && t > 0.0 => k as f64 / t,
        _ => 0.0,
    };
    // The other threads split what this worker leaves evenly, each at most a batch.
    let others = |rest: usize| -> (f64, f64) {
        if rest == 0 {
            return (0.0, 0.0);
        }
        let share = rest.div_ceil(threads - 1).min(widest);
        let used = (threads - 1).min(rest.div_ceil(share)) as f64;
        (used * rate(share), time.get(share).copied().unwrap_or(0.0))
    };
    let options: Vec<(usize, f64, f64)> = (1..=take_all)
        .map(|k| {
            let (r, t) = others(active - k);
            (k, rate(k) + r, time[k].max(t))
        })
        .collect();
    let best = options.iter().map(|o| o.1).fold(0.0, f64::max);
    options
        .iter()
        .filter(|o| o.1 >= (1.0 - SAME_RATE) * best)
        .min_by(|x, y| x.2.total_cmp(&y.2).then(y.0.cmp(&x.0)))
        .map_or(take_all, |o| o.0)
}

/// Longest a worker holds a partial batch for more jobs of its parameters.
pub(crate) const MAX_GATHER_WAIT: Duration = Duration::from_millis(25);

/// Share of a batch's run a worker may spend waiting for it to fill.
const GATHER_SHARE: u32 = 20;

/// How long a worker whose batch is not full, while every other thread is busy, waits for
/// more jobs of its parameters: a twentieth of the run it would start (`run`, the batch
/// at the width it aims for), at most [`MAX_GATHER_WAIT`], and never so long that the
/// run would end past the first job's deadline (`slack`).
///
/// Why so long: the jobs that would fill it are the clients this pool has just answered.
/// A closed-loop client comes back after its own turn-around, and on a real door that is
/// milliseconds, not microseconds: an LDAP client unbinds, closes, connects and binds
/// again, each step waiting for a core the hash threads hold. With a wait of a fiftieth
/// of one job's share of a batch (0.5-0.9 ms on the Xeon of issue 41), most batches of
/// sixteen LDAP clients started with one job and the door derived 0.81-0.83 of what the
/// kernels give sixteen jobs in flight; waiting up to 5 ms gave 0.91, 10 ms 0.94. The
/// lanes it fills cost almost nothing (a batch of eight runs as long as one of five on
/// an eight-lane kernel), and a wait that gathers nobody costs at most a twentieth of
/// the run.
pub(crate) fn gather_window(run: Duration, slack: Duration) -> Duration {
    (run / GATHER_SHARE)
        .min(MAX_GATHER_WAIT)
        .min(slack.saturating_sub(run))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batch times (s, PBKDF2-SHA256 x600,000) on the Xeon of issue 41 for 0..=16 jobs, as
    /// its planner runs them: one on the single stream, two to four on SHA-NI, five to
    /// eight on avx512vl-x8, more on avx512-x16 (measured one thread at a time).
    fn xeon() -> Vec<f64> {
        (0..=16)
            .map(|k| match k {
                0 => 0.0,
                1 => 0.064,
                2 => 0.111,
                3 => 0.150,
                4 => 0.198,
                5..=8 => 0.322,
                _ => 0.441,
            })
            .collect()
    }

    #[test]
    fn a_partial_batch_waits_for_clients_as_long_as_they_take_to_come_back() {
        // An eight-lane batch of 0.2 s waits 10 ms, long enough for a client that opens
        // a new connection per login; under the old wait (a fiftieth of one job's share,
        // 0.5 ms) the LDAP door's batches started with one job.
        let eight = Duration::from_millis(200);
        assert_eq!(
            gather_window(eight, Duration::from_secs(10)),
            Duration::from_millis(10)
        );
        // A sixteen-lane run of 0.9 s is held to the cap.
        let wide = Duration::from_millis(900);
        assert_eq!(
            gather_window(wide, Duration::from_secs(10)),
            MAX_GATHER_WAIT
        );
        // Never past the first job's deadline, and not at all when the run already
        // fills it.
        assert_eq!(
            gather_window(eight, Duration::from_millis(204)),
            Duration::from_millis(4)
        );
        assert_eq!(
            gather_window(eight, Duration::from_millis(150)),
            Duration::ZERO
        );
        // A short run (cheap hashes) waits a short time.
        let cheap = Duration::from_micros(400);
        assert_eq!(
            gather_window(cheap, Duration::from_secs(1)),
            Duration::from_micros(20)
        );
    }

    #[test]
    fn sixteen_closed_loop_jobs_on_two_threads_split_eight_and_eight() {
        // 1 + 15 and 2 + 14 derive as many per second, but fifteen wait 0.44 s a batch.
        assert_eq!(best_share(16, 2, &xeon()), 8);
    }

    #[test]
    fn ten_jobs_split_two_and_eight_not_five_and_five() {
        // Five and five leave three lanes of each eight-lane group empty (31/s); two on
        // SHA-NI beside eight derive 43/s.
        let k = best_share(10, 2, &xeon());
        assert!(k == 2 || k == 8, "{k}");
    }

    #[test]
    fn one_batch_when_splitting_gains_nothing() {
        // Only a sixteen-lane kernel: every split derives the same, so one worker takes
        // them all and the other core stays free.
        let wide: Vec<f64> = (0..=16).map(|k| if k == 0 { 0.0 } else { 0.44 }).collect();
        assert_eq!(best_share(16, 2, &wide), 16);
    }

    #[test]
    fn saturated_pools_and_single_threads_take_full_batches() {
        assert_eq!(best_share(40, 2, &xeon()), 16);
        assert_eq!(best_share(16, 1, &xeon()), 16);
        assert_eq!(best_share(1, 2, &xeon()), 1);
        // A narrow widest batch (SHA-NI x2 on a Zen 3): each thread takes a full one.
        let narrow = [0.0, 0.064, 0.08];
        assert_eq!(best_share(16, 2, &narrow), 2);
    }
}
