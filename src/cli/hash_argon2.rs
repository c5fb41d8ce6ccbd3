//! `portcullis hash bench --algorithm argon2id [--memory KiB --time T --lanes P]`: one
//! verification on one core against the kernel's compute floor, page faults per
//! verification cold and warm, and what a pool of one thread per core verifies per second.
//!
//! The verification is the product path (`Credential::verify` of a `$argon2id$` string
//! made by the policy code), so it includes the per-thread arena, its wipe and the lanes
//! run one after another on one core (the pool lends them to idle threads when it has
//! any: one core is the figure compared here). The compute floor is the block count
//! times the chosen kernel's time per block measured in L2 (the kernel choice's own
//! probe): what a verification would cost if no reference block ever missed the cache.
//!
//! The pool figure compares all threads with one thread in interleaved windows (one, all,
//! one, all, ...), in wall-clock verifications/s and in verifications per second of each
//! thread's own CPU time, with the load average before and after: on a shared machine the
//! wall-clock ratio says as much about the neighbours as about the pool, while the CPU
//! figure still shows what the threads cost each other (cache, memory bandwidth).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use portcullis_hash::argon2_kernel::{self as kernel, Backend, Params, Serial, Variant, Version};
use portcullis_hash::{Credential, Peppers, Policy};

/// What to measure.
pub struct Argon2Bench {
    pub m: u32,
    pub t: u32,
    pub p: u32,
    pub runs: usize,
    pub json: bool,
    /// Force the portable kernel (the verification then calls the kernel directly).
    pub portable: bool,
    pub pool_seconds: f64,
    pub threads: usize,
}

/// Minor page faults of the calling thread so far.
fn minor_faults() -> i64 {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a live `rusage`; RUSAGE_THREAD is Linux's per-thread count.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    if rc == 0 { usage.ru_minflt } else { 0 }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Run the benchmark and print it.
pub fn run(b: Argon2Bench) -> ExitCode {
    let policy = Policy::Argon2id {
        m: b.m,
        t: b.t,
        p: b.p,
    };
    if let Err(e) = policy.validate() {
        return super::fail(format_args!("argon2id m={} t={} p={}: {e}", b.m, b.t, b.p));
    }
    let password = b"portcullis bench password";
    // The kernel choice is measured on the first hash of the process: not timed below.
    let choice = kernel::kernel_choice();
    let backend = if b.portable {
        Backend::Portable
    } else {
        Backend::Auto
    };
    let faults_before = minor_faults();
    // Creating the stored hash is the first hash on this thread: its faults are the cold
    // figure (the arena mapped and touched for the first time).
    let stored = match policy.hash(password) {
        Ok(s) => s,
        Err(e) => return super::fail(format_args!("cannot hash: {e}")),
    };
    let cold_faults = minor_faults() - faults_before;
    let cred = match Credential::parse(&stored) {
        Ok(c) => c,
        Err(e) => return super::fail(format_args!("cannot parse our own hash: {e}")),
    };
    let peppers = Peppers::new();
    let params = Params {
        variant: Variant::Id,
        version: Version::V0x13,
        m_cost: b.m,
        t_cost: b.t,
        p_cost: b.p,
        secret: &[],
        ad: &[],
    };
    let mut out = [0u8; 32];
    let mut verify_once = || -> Result<(), String> {
        if b.portable {
            kernel::hash_into(
                &params,
                password,
                b"0123456789abcdef",
                &mut out,
                backend,
                &Serial,
            )
            .map_err(|e| e.to_string())
        } else {
            match cred.verify(password, &peppers) {
                Ok(true) => Ok(()),
                Ok(false) => Err("our own hash did not verify".to_owned()),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    let mut ms = Vec::with_capacity(b.runs);
    let faults_warm_start = minor_faults();
    for _ in 0..b.runs {
        let start = Instant::now();
        if let Err(e) = verify_once() {
            return super::fail(format_args!("verification failed: {e}"));
        }
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let warm_faults = (minor_faults() - faults_warm_start) as f64 / b.runs as f64;
    let ms = median(&mut ms);
    let blocks = kernel::block_count(b.m, b.p) as f64 * f64::from(b.t);
    let chosen = backend.resolve();
    let ns_per_block = choice
        .timings
        .iter()
        .find(|k| k.backend == chosen)
        .map_or(f64::NAN, |k| k.ns_per_block);
    let floor_ms = blocks * ns_per_block / 1e6;
    let nan = Window {
        wall_rate: f64::NAN,
        cpu_rate: f64::NAN,
        verified: 0,
    };
    let load_before = load_1min();
    let (one, all) = if b.portable {
        (nan, nan)
    } else {
        pool_against_one(&cred, b.threads, b.pool_seconds)
    };
    let load_after = load_1min();
    let (pool_rate, verified, single_rate) = (all.wall_rate, all.verified, one.wall_rate);
    let cpu = super::cpu_model();
    if b.json {
        println!(
            "{}",
            serde_json::json!({
                "algorithm": "argon2id",
                "m_kib": b.m, "t": b.t, "p": b.p,
                "cpu": cpu,
                "kernel": chosen.name(),
                "kernels": choice.timings.iter().map(|k| serde_json::json!({
                    "backend": k.backend.name(), "ns_per_block_in_l2": k.ns_per_block,
                })).collect::<Vec<_>>(),
                "runs": b.runs,
                "ms_per_verification": ms,
                "compute_floor_ms": floor_ms,
                "fraction_of_floor": floor_ms / ms,
                "page_faults_first": cold_faults,
                "page_faults_per_verification_warm": warm_faults,
                "pool_threads": b.threads,
                "pool_verifications_per_s": pool_rate,
                "pool_verifications": verified,
                "single_verifications_per_s": single_rate,
                "pool_speedup": pool_rate / single_rate,
                "pool_verifications_per_cpu_s": all.cpu_rate,
                "single_verifications_per_cpu_s": one.cpu_rate,
                "pool_speedup_cpu": all.cpu_rate / one.cpu_rate,
                "pool_rounds": POOL_ROUNDS,
                "load_1min": [load_before, load_after],
            })
        );
    } else {
        println!(
            "argon2id m={} KiB t={} p={} (lanes in turn on one core), cpu {cpu}",
            b.m, b.t, b.p
        );
        println!(
            "  kernel:            {} (chosen on this CPU)",
            chosen.name()
        );
        for k in &choice.timings {
            println!(
                "    {:<9} {:7.1} ns per block in L2 (median of the start-up probe)",
                k.backend.name(),
                k.ns_per_block
            );
        }
        println!(
            "  verification:      {ms:.2} ms (median of {}, one core)",
            b.runs
        );
        println!(
            "  compute floor:     {floor_ms:.2} ms ({blocks} block compressions at the in-L2 rate; {:.2} of it reached)",
            floor_ms / ms
        );
        println!(
            "  page faults:       {cold_faults} on the first hash of the thread, {warm_faults:.1} per verification after"
        );
        let (wipes, wipe_now, _) = kernel::wipes_in_service();
        let measured: Vec<String> = wipes
            .iter()
            .map(|(name, runs, ns)| format!("{name} {ns:.1} ns per block over {runs} runs"))
            .collect();
        println!(
            "  arena wipe:        {wipe_now} in service{}",
            if measured.is_empty() {
                String::new()
            } else {
                format!(" (wipe + next hash: {})", measured.join(", "))
            }
        );
        if !b.portable {
            println!(
                "  pool:              {pool_rate:.1} verifications/s on {} threads ({:.2}x one thread at {single_rate:.1}/s; medians of {POOL_ROUNDS} interleaved windows each)",
                b.threads,
                pool_rate / single_rate
            );
            println!(
                "  pool, thread CPU:  {:.1} verifications per CPU-second on {} threads ({:.2}x one thread at {:.1}; load {} -> {})",
                all.cpu_rate,
                b.threads,
                all.cpu_rate / one.cpu_rate,
                one.cpu_rate,
                load_before.map_or("?".to_owned(), |l| format!("{l:.2}")),
                load_after.map_or("?".to_owned(), |l| format!("{l:.2}")),
            );
        }
    }
    ExitCode::SUCCESS
}

/// Interleaved windows of the pool's comparison: one thread, then all, this many times.
const POOL_ROUNDS: usize = 3;

/// What one pool window measured.
#[derive(Clone, Copy)]
struct Window {
    /// Verifications per second of wall clock, summed over the threads.
    wall_rate: f64,
    /// Verifications per second of each thread's own CPU time, summed over the threads:
    /// what the threads would verify if no other process took their cores (it still
    /// counts what they cost each other: shared cache, memory bandwidth).
    cpu_rate: f64,
    verified: u64,
}

/// The pool's verifications/s against one thread's: [`POOL_ROUNDS`] interleaved windows
/// of `seconds / POOL_ROUNDS` each, one thread then `threads` threads, so a neighbour's
/// load that comes and goes hits both sides alike. Medians per side.
fn pool_against_one(cred: &Credential, threads: usize, seconds: f64) -> (Window, Window) {
    let window = seconds / POOL_ROUNDS as f64;
    let (mut one, mut all) = (Vec::new(), Vec::new());
    for _ in 0..POOL_ROUNDS {
        one.push(pool(cred, 1, window));
        all.push(pool(cred, threads, window));
    }
    let med = |v: &mut Vec<Window>| -> Window {
        let wall_rate = median(&mut v.iter().map(|w| w.wall_rate).collect::<Vec<_>>());
        let cpu_rate = median(&mut v.iter().map(|w| w.cpu_rate).collect::<Vec<_>>());
        Window {
            wall_rate,
            cpu_rate,
            verified: v.iter().map(|w| w.verified).sum(),
        }
    };
    (med(&mut one), med(&mut all))
}

/// The 1-minute load average (`/proc/loadavg`), for the report.
fn load_1min() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `threads` threads verifying `cred` for `seconds`.
fn pool(cred: &Credential, threads: usize, seconds: f64) -> Window {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..threads)
        .filter_map(|_| {
            let stop = Arc::clone(&stop);
            let cred = cred.clone();
            std::thread::Builder::new()
                .name("bench-argon2".into())
                .spawn(move || {
                    let peppers = Peppers::new();
                    // The arena is faulted in before the clock starts counting.
                    let _ = cred.verify(b"portcullis bench password", &peppers);
                    let cpu_start = portcullis_hash::thread_cpu_ns();
                    let wall_start = Instant::now();
                    // (verifications, when the last finished, thread CPU by then): the
                    // one cut off by the stop neither counts nor dilutes the rate.
                    let mut done = (0u64, wall_start, cpu_start);
                    while !stop.load(Ordering::Relaxed) {
                        if cred.verify(b"portcullis bench password", &peppers) != Ok(true) {
                            break;
                        }
                        done = (done.0 + 1, Instant::now(), portcullis_hash::thread_cpu_ns());
                    }
                    let cpu_ns = match (cpu_start, done.2) {
                        (Some(a), Some(b)) => b.saturating_sub(a),
                        _ => 0,
                    };
                    (
                        done.0,
                        done.1.duration_since(wall_start).as_secs_f64(),
                        cpu_ns,
                    )
                })
                .ok()
        })
        .collect();
    // A fixed measuring window, not synchronisation: the threads stop on the flag.
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut w = Window {
        wall_rate: 0.0,
        cpu_rate: 0.0,
        verified: 0,
    };
    for h in handles {
        if let Ok((count, secs, cpu_ns)) = h.join() {
            w.verified += count;
            if secs > 0.0 {
                w.wall_rate += count as f64 / secs;
            }
            if cpu_ns > 0 {
                w.cpu_rate += count as f64 / (cpu_ns as f64 / 1e9);
            }
        }
    }
    w
}
