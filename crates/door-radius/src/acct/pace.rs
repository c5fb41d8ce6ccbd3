//! The writer's pace: how long its commits take, and so how long a record that arrives
//! now will wait for its commit (issue 41 item 8).
//!
//! Under a storm a FIFO queue that is bounded only by its length fills, and from then on
//! every record waits the whole queue: on two shared cores at nice 19, 16,384 records are
//! many seconds of work, so every answer came after the NAS had retransmitted or given up
//! and the store did work nobody was waiting for. The door therefore bounds the queue by
//! *time*: a record is admitted only if the writer is expected to commit it within
//! `[accounting] max_queue_age_ms` of its arrival, and the writer builds each batch no
//! longer than its oldest record can wait. Both need the cost of a commit, which changes
//! with the CPU the writer gets (it runs below authentication's priority) and the disk.
//!
//! The model: a commit of `n` records takes `c0 + n * c1` (a fixed part: the transaction
//! and its fsync; a part per record: the insert and the session fold). `c0` and `c1` are a
//! least-squares fit over the recent commits, each older one weighing [`DECAY`] of the
//! one after it; while every recent commit had the same size (no slope to fit) the cost
//! is the mean time per record. A commit that overruns its prediction makes the estimate
//! of the records queued behind it grow with it at once, before it ends.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Weight of the previous commits' sums against the newest one's (about the last ten
/// commits count).
const DECAY: f64 = 0.9;

/// What a record is taken to cost before the first commit is measured: 10 ms (a slow
/// disk's fsync), so a cold start's first batches stay small until they are measured.
const PRIOR_SECS_PER_RECORD: f64 = 0.010;

/// One commit, as the model sees it.
#[derive(Debug, Clone, Copy)]
struct Running {
    /// Records in it.
    records: usize,
    /// When it began.
    started: Instant,
    /// Its predicted length, seconds.
    predicted: f64,
}

/// Decayed sums of (size, seconds) over the recent commits.
#[derive(Debug, Default, Clone, Copy)]
struct Fit {
    w: f64,
    n: f64,
    nn: f64,
    t: f64,
    nt: f64,
}

impl Fit {
    fn add(&mut self, n: f64, t: f64) {
        let d = DECAY;
        self.w = self.w * d + 1.0;
        self.n = self.n * d + n;
        self.nn = self.nn * d + n * n;
        self.t = self.t * d + t;
        self.nt = self.nt * d + n * t;
    }

    /// (c0, c1) in seconds; the prior before the first commit.
    fn costs(&self) -> (f64, f64) {
        if self.n <= 0.0 {
            return (0.0, PRIOR_SECS_PER_RECORD);
        }
        let per_record = self.t / self.n;
        let det = self.w * self.nn - self.n * self.n;
        // Sizes that hardly differ give no slope: the mean cost per record instead.
        if det <= 1e-6 * self.w * self.nn {
            return (0.0, per_record);
        }
        let c1 = (self.w * self.nt - self.n * self.t) / det;
        let c0 = (self.t - c1 * self.n) / self.w;
        if c1 <= 0.0 || c0 < 0.0 {
            // Noise (a shared machine) can tilt the fit; the mean is never optimistic
            // for batches at least as large as the recent ones.
            return (0.0, per_record);
        }
        (c0, c1)
    }
}

#[derive(Debug, Default)]
struct State {
    fit: Fit,
    /// Records admitted and not yet taken out by the writer.
    queued: usize,
    /// The commit under way.
    running: Option<Running>,
}

/// The writer's pace and the records waiting for it; shared by the receive path (which
/// asks [`Pace::admit`]) and the writer (which reports each commit).
#[derive(Debug, Default)]
pub struct Pace {
    state: Mutex<State>,
}

impl Pace {
    /// Predicted length of a commit of `n` records.
    pub fn predict(&self, n: usize) -> Duration {
        let (c0, c1) = self.state.lock().fit.costs();
        secs(c0 + n as f64 * c1)
    }

    /// Take a place for one record if the writer is expected to commit it within `left`
    /// from `now` (the records queued before it committed first, in batches of at most
    /// `max_batch`), or if the writer is idle. `false`: it would be answered too late;
    /// nothing was taken.
    pub fn admit(&self, now: Instant, left: Duration, max_batch: usize) -> bool {
        let mut s = self.state.lock();
        // An idle writer commits it at once, whatever the estimate says: and only a
        // commit can correct an estimate that a stalled one (a lock held, a disk that
        // hung) left too high.
        let idle = s.queued == 0 && s.running.is_none();
        if !idle && wait(&s, now, s.queued + 1, max_batch) > left {
            return false;
        }
        s.queued += 1;
        true
    }

    /// Give back a place taken by [`Pace::admit`] (the record did not get into the queue
    /// after all, or the writer took it out).
    pub fn leave(&self, n: usize) {
        let mut s = self.state.lock();
        s.queued = s.queued.saturating_sub(n);
    }

    /// Records admitted and not yet taken out.
    #[cfg(test)]
    pub fn queued(&self) -> usize {
        self.state.lock().queued
    }

    /// A commit of `n` records begins at `now`.
    pub fn begin(&self, n: usize, now: Instant) {
        let mut s = self.state.lock();
        let (c0, c1) = s.fit.costs();
        s.running = Some(Running {
            records: n,
            started: now,
            predicted: c0 + n as f64 * c1,
        });
    }

    /// The commit begun last ended at `now`: it joins the fit.
    pub fn end(&self, now: Instant) {
        let mut s = self.state.lock();
        if let Some(r) = s.running.take() {
            let took = now.saturating_duration_since(r.started).as_secs_f64();
            s.fit.add(r.records as f64, took);
        }
    }
}

/// Expected time from `now` until the commit of the `n`th record in the queue ends: what
/// is left of the running commit, then the queue's records in batches of `max_batch`. A
/// running commit already longer than its prediction stretches the rest by as much.
fn wait(s: &State, now: Instant, n: usize, max_batch: usize) -> Duration {
    let (c0, c1) = s.fit.costs();
    let (left, stretch) = match s.running {
        Some(r) => {
            let elapsed = now.saturating_duration_since(r.started).as_secs_f64();
            let stretch = if r.predicted > 0.0 {
                (elapsed / r.predicted).max(1.0)
            } else {
                1.0
            };
            ((r.predicted - elapsed).max(0.0), stretch)
        }
        None => (0.0, 1.0),
    };
    let batches = n.div_ceil(max_batch.max(1)) as f64;
    secs(left + stretch * (batches * c0 + n as f64 * c1))
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(p: &Pace, n: usize, at: Instant, took: Duration) -> Instant {
        p.begin(n, at);
        p.end(at + took);
        at + took
    }

    #[test]
    fn issue_41_fit_separates_the_commit_from_the_records() {
        let p = Pace::default();
        let mut t = Instant::now();
        // 5 ms per commit, 1 ms per record.
        for n in [1usize, 10, 100, 1, 50, 400] {
            t = commit(&p, n, t, Duration::from_millis(5 + n as u64));
        }
        let (c0, c1) = p.state.lock().fit.costs();
        assert!((c0 - 0.005).abs() < 1e-6, "{c0}");
        assert!((c1 - 0.001).abs() < 1e-6, "{c1}");
        assert_eq!(p.predict(1000).as_millis(), 1005);
    }

    #[test]
    fn issue_41_admission_stops_where_the_wait_would_pass_the_cap() {
        let p = Pace::default();
        let t = commit(&p, 100, Instant::now(), Duration::from_millis(100));
        // Same sizes only: 1 ms per record. 500 ms admits 500 records, in one batch.
        let admitted = (0..10_000)
            .take_while(|_| p.admit(t, Duration::from_millis(500), 10_000))
            .count();
        assert!((499..=500).contains(&admitted), "{admitted}");
        p.leave(admitted);
        assert_eq!(p.queued(), 0);
        // A commit that runs twice as long as predicted halves what is admitted behind it.
        p.begin(100, t);
        let later = t + Duration::from_millis(200);
        let admitted = (0..10_000)
            .take_while(|_| p.admit(later, Duration::from_millis(500), 10_000))
            .count();
        assert!((249..=250).contains(&admitted), "{admitted}");
    }

    #[test]
    fn issue_41_an_idle_writer_takes_a_record_whatever_a_stall_taught_it() {
        let p = Pace::default();
        let t = commit(&p, 1, Instant::now(), Duration::from_secs(10));
        assert!(
            p.admit(t, Duration::from_millis(400), 100),
            "idle: admitted"
        );
        assert!(
            !p.admit(t, Duration::from_millis(400), 100),
            "one queued: 10 s ahead"
        );
    }

    #[test]
    fn issue_41_before_the_first_commit_the_prior_bounds_admission() {
        let p = Pace::default();
        assert_eq!(p.predict(10), Duration::from_millis(100));
        let admitted = (0..10_000)
            .take_while(|_| p.admit(Instant::now(), Duration::from_millis(500), 10_000))
            .count();
        assert!((49..=50).contains(&admitted), "{admitted}");
    }
}
