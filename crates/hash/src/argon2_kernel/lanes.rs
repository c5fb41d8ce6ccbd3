//! Where the lanes of one slice run: the [`LaneExecutor`] a caller hands to
//! [`super::hash_into`], and the executors this crate provides.
//!
//! During one slice every lane fills its own segment and reads only finished ones (see
//! `walk`), so the lanes of a slice may run on as many threads as there are lanes, with
//! one synchronisation point per slice (the executor returns when all have run).

use std::sync::Arc;

use crate::arch::lanes::Offer;

/// Runs the lanes of one slice (each job fills one lane's segment) and returns when all
/// have finished. Implementations may run the jobs on several threads.
pub trait LaneExecutor: Sync {
    /// Run every job exactly once.
    fn run_all<'a>(&self, jobs: Vec<Box<dyn FnOnce() + Send + 'a>>);
}

/// Lanes one after another on the calling thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Serial;

impl LaneExecutor for Serial {
    fn run_all<'a>(&self, jobs: Vec<Box<dyn FnOnce() + Send + 'a>>) {
        for job in jobs {
            job();
        }
    }
}

/// Lanes on scoped threads, one per job but the first (which runs on the caller): for
/// tools and tests; the server's pool lends them to its own threads ([`Lent`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScopedThreads;

impl LaneExecutor for ScopedThreads {
    fn run_all<'a>(&self, jobs: Vec<Box<dyn FnOnce() + Send + 'a>>) {
        let mut jobs = jobs.into_iter();
        let first = jobs.next();
        std::thread::scope(|s| {
            for job in jobs {
                s.spawn(job);
            }
            if let Some(job) = first {
                job();
            }
        });
    }
}

/// The lanes of one slice, lent by a hashing thread to whichever threads will help: a
/// cheap handle (`Clone`), `'static`, safe to keep after the slice ended (it then holds
/// nothing and [`LaneWork::help`] does nothing).
#[derive(Clone)]
pub struct LaneWork(Arc<Offer>);

impl LaneWork {
    /// Run one lane nobody has claimed yet, on the calling thread; `false` if none was
    /// left. Never blocks on other threads: a lane is pure computation.
    pub fn help(&self) -> bool {
        self.0.help()
    }

    /// Whether every lane has been claimed (a helper can drop the handle).
    pub fn exhausted(&self) -> bool {
        self.0.exhausted()
    }
}

impl std::fmt::Debug for LaneWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneWork")
            .field("exhausted", &self.exhausted())
            .finish()
    }
}

/// Lanes lent to threads the caller already runs: for each slice with more than one lane,
/// `offer` is called with the slice's [`LaneWork`] (the caller makes it visible to its
/// idle threads, which call [`LaneWork::help`]); the hashing thread runs every lane
/// nobody claimed and then waits only for lanes that helpers are running. So the hash
/// finishes whether or not any helper comes: a pool whose every thread holds such a hash
/// cannot deadlock, each one simply runs its own lanes.
pub struct Lent<F: Fn(LaneWork) + Sync>(pub F);

impl<F: Fn(LaneWork) + Sync> LaneExecutor for Lent<F> {
    fn run_all<'a>(&self, jobs: Vec<Box<dyn FnOnce() + Send + 'a>>) {
        if jobs.len() < 2 {
            return Serial.run_all(jobs);
        }
        Offer::lend(jobs, |offer| (self.0)(LaneWork(Arc::clone(offer))));
    }
}
