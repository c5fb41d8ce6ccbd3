//! Lanes of one Argon2 slice lent to other threads: the one `unsafe` that lets a
//! long-lived thread (the hash pool's) run a closure that borrows the lending thread's
//! memory.
//!
//! The jobs borrow the hash's memory (a `&mut` segment each and shared views of the
//! others), so they cannot be `'static`; a pool thread can only be handed `'static`
//! values. [`Offer::lend`] erases the lifetime and restores the guarantee by construction:
//! it does not return, nor unwind, until every job has either run to completion (on
//! whichever thread claimed it) or been dropped unrun on the lending thread. After that
//! the shared [`Offer`] holds no job, so the `Arc` that helpers may still hold for a while
//! refers to nothing borrowed. The lender runs every job nobody claimed itself, so its
//! progress never depends on another thread being free: it only ever waits for jobs a
//! helper is already running, and a running job never waits for anything.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// One job with its borrow erased (see the module doc for why that is sound).
type Job = Box<dyn FnOnce() + Send + 'static>;

struct Progress {
    /// Jobs nobody has claimed yet.
    unclaimed: Vec<Job>,
    /// Jobs claimed and still running.
    running: usize,
    /// A job panicked on a helper thread: the lender re-raises it (a bug in the kernel
    /// must not pass for a finished hash).
    panic: Option<Box<dyn std::any::Any + Send + 'static>>,
}

/// The jobs of one slice, shared between the lender and its helpers.
pub(crate) struct Offer {
    progress: Mutex<Progress>,
    /// Signalled when a claimed job finishes.
    finished: Condvar,
}

impl Offer {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        // Jobs run outside the lock, so a poisoned lock only means a panic between two
        // plain field updates: the state is still consistent.
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `jobs`, lending them to other threads through `offer` (which makes the shared
    /// handle visible to helpers that call [`Offer::help`]); returns when all have run.
    /// A job that panicked, here or on a helper, panics here after all the others ended.
    pub(crate) fn lend<'a>(
        jobs: Vec<Box<dyn FnOnce() + Send + 'a>>,
        offer: impl FnOnce(&Arc<Offer>),
    ) {
        let jobs: Vec<Job> = jobs
            .into_iter()
            .map(|job| {
                // SAFETY: only the lifetime changes (same layout, same vtable). Every job
                // is consumed before `lend` returns or unwinds: `Drain` below runs or
                // drops the unclaimed ones on this thread and waits until no claimed one
                // is still running, on every path out of this function.
                unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'a>, Job>(job) }
            })
            .collect();
        let shared = Arc::new(Offer {
            progress: Mutex::new(Progress {
                unclaimed: jobs,
                running: 0,
                panic: None,
            }),
            finished: Condvar::new(),
        });
        let drain = Drain(&shared);
        offer(&shared);
        // Our own share: whatever nobody claimed, until nothing is left to claim.
        while shared.help() {}
        drop(drain);
        let panic = shared.lock().panic.take();
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }

    /// Claim and run one job; `false` when none was left to claim.
    pub(crate) fn help(&self) -> bool {
        let job = {
            let mut p = self.lock();
            match p.unclaimed.pop() {
                Some(job) => {
                    p.running += 1;
                    job
                }
                None => return false,
            }
        };
        // The job is consumed (run, or dropped by the unwind) inside this call, before
        // `running` goes down: the lender then knows nothing of its borrow is left.
        let outcome = catch_unwind(AssertUnwindSafe(job));
        let mut p = self.lock();
        p.running -= 1;
        if let Err(e) = outcome {
            p.panic.get_or_insert(e);
        }
        drop(p);
        self.finished.notify_all();
        true
    }

    /// Whether every job has been claimed (the handle is of no more use to a helper).
    pub(crate) fn exhausted(&self) -> bool {
        self.lock().unclaimed.is_empty()
    }
}

/// Ends the borrow of [`Offer::lend`]'s jobs on every path out of it, unwinding included:
/// drops the unclaimed jobs here and waits for the claimed ones to finish.
struct Drain<'s>(&'s Arc<Offer>);

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        let mut p = self.0.lock();
        let unrun = std::mem::take(&mut p.unclaimed);
        while p.running > 0 {
            p = self
                .0
                .finished
                .wait(p)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(p);
        drop(unrun);
    }
}
