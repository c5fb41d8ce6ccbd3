//! The hash pool's memory budget for memory-hard KDFs (argon2, scrypt).
//!
//! CPU is scheduled by the pool's thread count; memory is not: 64 threads verifying
//! argon2id at m=256 MiB want 16 GiB at once. So a worker asks the budget for a job's
//! working memory before it hashes and waits (on a condition variable, holding its job)
//! while the memory in use would exceed it; the jobs behind it stay queued where the
//! scheduler keeps them. Accounting counts what threads actually hold: the memory of jobs
//! in flight and the argon2 arenas threads keep between hashes (reused so a verification
//! faults no pages in). A thread keeps its arena only while it is at most
//! `budget / (2 * threads)`, so retained arenas never hold more than half the budget, and a
//! job of up to half the budget always gets in once the jobs in flight finish. A job
//! larger than that runs when no other memory-hard job is in flight (it cannot be split);
//! then the total is that job plus the retained arenas.

use parking_lot::{Condvar, Mutex};

/// Bytes of memory counted against the budget and the high-water mark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MemoryStats {
    /// The configured budget.
    pub budget: u64,
    /// Held now (jobs in flight and retained arenas).
    pub held: u64,
    /// Most ever held at once.
    pub peak: u64,
}

#[derive(Default)]
struct Held {
    /// Retained arenas plus jobs in flight.
    held: u64,
    /// The part of `held` that belongs to jobs in flight (freed when they finish).
    in_flight: u64,
    peak: u64,
}

/// The budget (see the module doc).
pub(crate) struct MemoryBudget {
    budget: u64,
    retain_limit: u64,
    state: Mutex<Held>,
    freed: Condvar,
}

impl MemoryBudget {
    /// A budget of `budget` bytes shared by `threads` workers.
    pub(crate) fn new(budget: u64, threads: usize) -> MemoryBudget {
        MemoryBudget {
            budget,
            retain_limit: budget / (2 * threads.max(1) as u64),
            state: Mutex::new(Held::default()),
            freed: Condvar::new(),
        }
    }

    /// Largest arena a thread may keep between hashes.
    pub(crate) fn retain_limit(&self) -> u64 {
        self.retain_limit
    }

    /// Block until a job needing `need` bytes may start on a thread that already holds
    /// (and has counted) `retained` bytes; returns the extra bytes now counted for it.
    pub(crate) fn acquire(&self, need: u64, retained: u64) -> u64 {
        let extra = need.saturating_sub(retained);
        if extra == 0 {
            return 0;
        }
        let mut st = self.state.lock();
        while st.held + extra > self.budget && st.in_flight > 0 {
            self.freed.wait(&mut st);
        }
        st.held += extra;
        st.in_flight += extra;
        st.peak = st.peak.max(st.held);
        extra
    }

    /// The job that acquired `extra` on a thread that held `retained` has finished; the
    /// thread now keeps `now_retained` bytes.
    pub(crate) fn release(&self, retained: u64, extra: u64, now_retained: u64) {
        let mut st = self.state.lock();
        st.in_flight = st.in_flight.saturating_sub(extra);
        st.held = (st.held + now_retained).saturating_sub(retained + extra);
        drop(st);
        self.freed.notify_all();
    }

    pub(crate) fn stats(&self) -> MemoryStats {
        let st = self.state.lock();
        MemoryStats {
            budget: self.budget,
            held: st.held,
            peak: st.peak,
        }
    }
}

/// The default budget: half of the machine's physical memory (Linux `/proc/meminfo`),
/// 1 GiB where it cannot be read.
pub(crate) fn default_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(1 << 30, |kib| kib * 1024 / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_over_the_budget_wait_for_memory_and_retained_arenas_count() {
        let m = MemoryBudget::new(100, 2);
        assert_eq!(m.retain_limit(), 25);
        // Thread A: 60 in flight.
        let a = m.acquire(60, 0);
        assert_eq!(a, 60);
        // Thread B would need 60 more: waits until A releases. Run it on a thread and
        // release A from here; B can only get in after the release.
        std::thread::scope(|s| {
            let b = s.spawn(|| {
                let extra = m.acquire(60, 0);
                let held = m.stats().held;
                m.release(0, extra, 20);
                held
            });
            // A keeps a 20-byte arena.
            m.release(0, a, 20);
            assert_eq!(
                b.join().ok(),
                Some(80),
                "B ran with A's arena still counted"
            );
        });
        assert_eq!(m.stats().held, 40);
        assert!(m.stats().peak <= 100);
        // A job already covered by the thread's arena takes nothing more.
        assert_eq!(m.acquire(20, 20), 0);
        // A job larger than the budget runs alone rather than never.
        let big = m.acquire(500, 0);
        m.release(0, big, 0);
        assert_eq!(m.stats().held, 40);
    }

    #[test]
    fn default_budget_is_half_the_memory() {
        let b = default_budget();
        assert!(b >= 64 << 20, "{b}");
    }
}
