//! What the hash pool alone can derive on this machine: the yardstick for a server's
//! verifications per second at saturation (`portcullis hash bench --pool-seconds`, and the
//! demo's "LDAP binds under a guessing wave" section, in the same run as its servers).
//!
//! It runs the pool's work without the server around it: OS threads (the pool's default
//! is one per core) each derive batches of `batch::preferred_batch` passwords through the
//! same batch kernels the pool uses, for a fixed wall-clock time. The width is read again
//! before every batch, as the pool does: the batch kernels' in-service contest (issue 26)
//! may move the choice made at start-up.
//!
//! Saturated is not the only yardstick. A closed loop of sixteen clients is sixteen jobs
//! in flight, never more: on a CPU whose best kernel is sixteen lanes wide, two threads
//! cannot both run full batches of them. [`Width::InFlight`] measures what the kernels
//! give that many jobs split evenly between the threads, which is the most any server on
//! this machine can derive for those clients, and so what a door's rate is compared with
//! to see what the door itself costs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use portcullis_hash::{Prf, batch};

/// The widest batch the loop prepares passwords for (wider than any kernel's lanes).
pub const MAX_WIDTH: usize = 64;

/// What the threads derived.
#[derive(Debug, Clone, Copy)]
pub struct PoolRun {
    /// Derivations finished in all.
    pub derivations: u64,
    /// Derivations per second: each thread's count over the time to its last finished
    /// batch, summed (the batch cut off by the stop neither counts nor dilutes the rate).
    pub per_s: f64,
    /// Wall-clock length of the run (s).
    pub seconds: f64,
}

/// How wide each thread's batches are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// The pool's own choice at saturation (`batch::preferred_batch`, read before every
    /// batch).
    Saturated,
    /// This many jobs in flight across all the threads: each thread derives batches of
    /// its even share (rounded up), planned as the pool plans them.
    InFlight(usize),
    /// Always this kernel at this width (it must be offered by this CPU).
    Forced(batch::Backend, usize),
}

/// Runs `threads` hashing threads for `length` at `width`. Blocks the caller for `length`;
/// an error only when a thread cannot be started.
pub fn measure(
    prf: Prf,
    iterations: u32,
    threads: usize,
    length: Duration,
    width: Width,
) -> Result<PoolRun, std::io::Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let flag = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name(format!("bench-pool-{t}"))
            .spawn(move || derive_until(prf, iterations, (t, threads), width, &flag, start));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }
    std::thread::sleep(length);
    stop.store(true, Ordering::Relaxed);
    let seconds = start.elapsed().as_secs_f64();
    let (mut derivations, mut per_s) = (0u64, 0.0f64);
    for h in handles {
        if let Ok((n, last)) = h.join() {
            let secs = last.duration_since(start).as_secs_f64();
            derivations += n;
            if secs > 0.0 {
                per_s += n as f64 / secs;
            }
        }
    }
    Ok(PoolRun {
        derivations,
        per_s,
        seconds,
    })
}

/// One thread's loop: (derivations, when the last of them finished).
fn derive_until(
    prf: Prf,
    iterations: u32,
    (t, threads): (usize, usize),
    width: Width,
    stop: &AtomicBool,
    start: Instant,
) -> (u64, Instant) {
    // Enough for the widest batch any kernel could ask for.
    let passwords: Vec<Vec<u8>> = (0..MAX_WIDTH)
        .map(|i| format!("pool bench password {t}-{i}").into_bytes())
        .collect();
    let mut outs = vec![vec![0u8; prf.output_len()]; MAX_WIDTH];
    let mut done = (0u64, start);
    while !stop.load(Ordering::Relaxed) {
        let n = match width {
            Width::Forced(_, w) => w,
            Width::Saturated => batch::preferred_batch(prf),
            Width::InFlight(jobs) => jobs.div_ceil(threads.max(1)),
        }
        .clamp(1, MAX_WIDTH);
        let mut jobs: Vec<batch::Job<'_>> = passwords[..n]
            .iter()
            .zip(outs.iter_mut())
            .map(|(p, o)| batch::Job {
                password: p,
                salt: b"0123456789abcdef",
                out: o,
            })
            .collect();
        match width {
            Width::Forced(b, _) => {
                // Offered by this CPU: the caller checked when it resolved the name.
                let _ = batch::derive_on(b, prf, iterations, &mut jobs);
            }
            Width::Saturated | Width::InFlight(_) => batch::derive(prf, iterations, &mut jobs),
        }
        done = (done.0 + n as u64, Instant::now());
    }
    done
}
