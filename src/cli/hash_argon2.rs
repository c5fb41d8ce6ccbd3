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
    let (pool_rate, verified) = if b.portable {
        (f64::NAN, 0)
    } else {
        pool(&cred, b.threads, b.pool_seconds)
    };
    let single_rate = 1e3 / ms;
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
        if !b.portable {
            println!(
                "  pool:              {pool_rate:.1} verifications/s on {} threads ({:.2}x one core at {single_rate:.1}/s)",
                b.threads,
                pool_rate / single_rate
            );
        }
    }
    ExitCode::SUCCESS
}

/// `threads` threads verifying `cred` for `seconds`: verifications per second in total.
fn pool(cred: &Credential, threads: usize, seconds: f64) -> (f64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .filter_map(|_| {
            let stop = Arc::clone(&stop);
            let cred = cred.clone();
            std::thread::Builder::new()
                .name("bench-argon2".into())
                .spawn(move || {
                    let peppers = Peppers::new();
                    // (verifications, when the last finished): the one cut off by the
                    // stop neither counts nor dilutes the rate.
                    let mut done = (0u64, start);
                    while !stop.load(Ordering::Relaxed) {
                        if cred.verify(b"portcullis bench password", &peppers) != Ok(true) {
                            break;
                        }
                        done = (done.0 + 1, Instant::now());
                    }
                    done
                })
                .ok()
        })
        .collect();
    // A fixed measuring window, not synchronisation: the threads stop on the flag.
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let (mut rate, mut n) = (0.0, 0);
    for h in handles {
        if let Ok((count, last)) = h.join() {
            let secs = last.duration_since(start).as_secs_f64();
            n += count;
            if secs > 0.0 {
                rate += count as f64 / secs;
            }
        }
    }
    (rate, n)
}
