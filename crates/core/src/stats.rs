//! Rolling measurements the admission rules and the unknown-principal delay draw on:
//! recent hash times (median, per unit of [`portcullis_hash::Cost`]) and recent real
//! verification latencies (to sample from).

use std::cell::RefCell;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Cost units of PBKDF2-SHA256 x600,000 (two compressions per iteration), the reference
/// job `initial_hash_estimate_ms` describes.
pub(crate) const REFERENCE_COST: u64 = 2 * 600_000;

const WINDOW: usize = 128;

/// The last [`WINDOW`] hash measurements and their medians.
#[derive(Debug)]
pub(crate) struct HashTimes {
    /// Wall time of one derivation (one job, or one batch call).
    durations: Vec<Duration>,
    /// Nanoseconds per cost unit of pool throughput (batch time / summed cost).
    per_unit: Vec<f64>,
    /// Cost units per job.
    job_costs: Vec<u64>,
    /// Nanoseconds per cost unit of one job derived alone: a batch run's time divided by
    /// its batch time factor ([`portcullis_hash::batch::batch_time_factor`]). What a job's
    /// latency in a batch of any width is estimated from.
    single_per_unit: Vec<f64>,
    next: usize,
    median_duration: Duration,
    median_per_unit: f64,
    median_job_cost: u64,
    median_single_per_unit: f64,
}

impl HashTimes {
    pub(crate) fn new(initial: Duration) -> Self {
        HashTimes {
            durations: Vec::with_capacity(WINDOW),
            per_unit: Vec::with_capacity(WINDOW),
            job_costs: Vec::with_capacity(WINDOW),
            single_per_unit: Vec::with_capacity(WINDOW),
            next: 0,
            median_duration: initial,
            median_per_unit: initial.as_nanos() as f64 / REFERENCE_COST as f64,
            median_job_cost: REFERENCE_COST,
            median_single_per_unit: initial.as_nanos() as f64 / REFERENCE_COST as f64,
        }
    }

    /// Record one pool run: `took` for `jobs` jobs totalling `cost` units, a run that
    /// takes `factor` times as long as one of its jobs derived alone (1 for a single job,
    /// the jobs' count when derived one after another).
    pub(crate) fn record(&mut self, took: Duration, cost: u64, jobs: usize, factor: f64) {
        let per_unit = took.as_nanos() as f64 / cost.max(1) as f64;
        let job_cost = cost / jobs.max(1) as u64;
        let single = took.as_nanos() as f64 / factor.max(1e-9) / job_cost.max(1) as f64;
        if self.durations.len() < WINDOW {
            self.durations.push(took);
            self.per_unit.push(per_unit);
            self.job_costs.push(job_cost);
            self.single_per_unit.push(single);
        } else {
            self.durations[self.next] = took;
            self.per_unit[self.next] = per_unit;
            self.job_costs[self.next] = job_cost;
            self.single_per_unit[self.next] = single;
        }
        self.next = (self.next + 1) % WINDOW;
        let mut d = self.durations.clone();
        d.sort_unstable();
        self.median_duration = d[d.len() / 2];
        let mut u = self.per_unit.clone();
        u.sort_unstable_by(f64::total_cmp);
        self.median_per_unit = u[u.len() / 2];
        let mut c = self.job_costs.clone();
        c.sort_unstable();
        self.median_job_cost = c[c.len() / 2].max(1);
        let mut u = self.single_per_unit.clone();
        u.sort_unstable_by(f64::total_cmp);
        self.median_single_per_unit = u[u.len() / 2];
    }

    /// A first figure from outside the pool (a calibration hash at start: `took` for one
    /// job of `cost` units), taken only while nothing has been measured, when the
    /// figures are still the configured guess for a reference job.
    pub(crate) fn seed(&mut self, took: Duration, cost: u64) {
        if self.durations.is_empty() {
            self.record(took, cost, 1, 1.0);
        }
    }

    /// Median nanoseconds per cost unit of one job derived alone (its latency, where
    /// [`HashTimes::ns_per_unit`] is the pool's throughput).
    pub(crate) fn single_ns_per_unit(&self) -> f64 {
        self.median_single_per_unit
    }

    /// Median cost units of one job (what an unknown principal's job would have cost).
    pub(crate) fn job_cost(&self) -> u64 {
        self.median_job_cost
    }

    /// Median wall time of one pool run.
    pub(crate) fn median(&self) -> Duration {
        self.median_duration
    }

    /// Median nanoseconds per cost unit.
    pub(crate) fn ns_per_unit(&self) -> f64 {
        self.median_per_unit
    }
}

/// Recent real verification latencies (attempt start to verdict), one reservoir per
/// principal kind, sampled to time unknown principals like known ones.
#[derive(Debug)]
pub(crate) struct Latencies {
    ring: Vec<Duration>,
    next: usize,
}

/// The most recent real latencies a mimicked one is drawn from. Recent, not all since
/// start: real latencies drift (a fresh process warms its caches and store, load comes
/// and goes), and a mimic drawn from a long history lags the drift. With 1,024 (more
/// than the whole of issue 16's timing test) the unknown principals' answers on an Intel
/// Xeon VM came out ~0.1-0.2 ms slower than real rejections, KS D 0.07-0.29 at 300
/// samples each (4 of 10 above the test's 0.2); with 64, D 0.06-0.17 (10 of 10 below).
const LATENCY_WINDOW: usize = 64;

impl Latencies {
    pub(crate) fn new() -> Self {
        Latencies {
            ring: Vec::with_capacity(LATENCY_WINDOW),
            next: 0,
        }
    }

    pub(crate) fn record(&mut self, d: Duration) {
        if self.ring.len() < LATENCY_WINDOW {
            self.ring.push(d);
        } else {
            self.ring[self.next] = d;
        }
        self.next = (self.next + 1) % LATENCY_WINDOW;
    }

    /// A uniformly drawn recent latency, or `None` before any was recorded.
    pub(crate) fn sample(&self) -> Option<Duration> {
        if self.ring.is_empty() {
            return None;
        }
        let i = with_rng(|r| r.random_range(0..self.ring.len()));
        self.ring.get(i).copied()
    }
}

thread_local! {
    // Jitter and sampling need no cryptographic strength, only independence per thread.
    static RNG: RefCell<SmallRng> = RefCell::new(seed_rng());
}

fn seed_rng() -> SmallRng {
    let mut seed = [0u8; 32];
    if portcullis_hash::os_random(&mut seed).is_err() {
        // Fall back to the address of a stack value and the time: only jitter suffers.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let a = &seed as *const _ as u64;
        seed[..8].copy_from_slice(&t.to_le_bytes());
        seed[8..16].copy_from_slice(&a.to_le_bytes());
    }
    SmallRng::from_seed(seed)
}

/// Run `f` with this thread's random generator.
pub(crate) fn with_rng<R>(f: impl FnOnce(&mut SmallRng) -> R) -> R {
    RNG.with(|r| f(&mut r.borrow_mut()))
}

/// `d` stretched by a random factor in `[1, 1 + jitter]`, at least one millisecond, rounded
/// up to whole milliseconds (what Retry-After style headers carry).
pub(crate) fn jittered(d: Duration, jitter: f64) -> Duration {
    let f = if jitter > 0.0 {
        1.0 + with_rng(|r| r.random_range(0.0..=jitter))
    } else {
        1.0
    };
    let ms = (d.as_secs_f64() * 1000.0 * f).ceil().max(1.0);
    Duration::from_millis(ms.min(u64::MAX as f64 / 2.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_follows_recent_window() {
        let mut h = HashTimes::new(Duration::from_millis(250));
        assert_eq!(h.median(), Duration::from_millis(250));
        for ms in [10, 30, 20] {
            h.record(Duration::from_millis(ms), 1000, 1, 1.0);
        }
        assert_eq!(h.median(), Duration::from_millis(20));
        assert!((h.ns_per_unit() - 20_000.0).abs() < 1e-6);
        for _ in 0..WINDOW {
            h.record(Duration::from_millis(100), 1000, 2, 2.0);
        }
        assert_eq!(h.median(), Duration::from_millis(100));
        assert_eq!(h.job_cost(), 500);
        // Two jobs in a run as long as two single derivations: each alone takes 50 ms.
        assert!((h.single_ns_per_unit() - 100_000.0).abs() < 1e-6);
    }

    #[test]
    fn jitter_stays_in_bounds() {
        for _ in 0..1000 {
            let j = jittered(Duration::from_millis(100), 0.5);
            assert!(j >= Duration::from_millis(100) && j <= Duration::from_millis(150));
        }
        assert_eq!(jittered(Duration::ZERO, 0.0), Duration::from_millis(1));
    }

    #[test]
    fn latency_samples_come_from_the_recorded_set() {
        let mut l = Latencies::new();
        assert_eq!(l.sample(), None);
        l.record(Duration::from_millis(7));
        l.record(Duration::from_millis(9));
        for _ in 0..100 {
            let s = l.sample().unwrap();
            assert!(s == Duration::from_millis(7) || s == Duration::from_millis(9));
        }
    }
}
