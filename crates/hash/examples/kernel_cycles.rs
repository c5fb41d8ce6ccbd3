//! Single-stream PBKDF2 cost in core clock cycles per compression, frequency-independent.
//!
//! ```text
//! taskset -c 1 cargo run --release -p portcullis-hash --example kernel_cycles -- \
//!     <sha1|sha256|sha512> [iterations] [rounds]
//! ```
//!
//! Shared cloud machines change clock speed by tens of percent from one second to the
//! next, which swamps the few-percent differences a kernel change makes. Each round here
//! times a chain of dependent 64-bit square-and-add steps (a fixed number of cycles each on
//! current x86-64 cores: 3 + 1 on AMD Zen and Intel since Sandy Bridge) right before and after one
//! derivation, and divides. The result is cycles per compression with the clock speed
//! cancelled out; compare kernels by it, then confirm against `openssl speed` as usual.

use std::hint::black_box;
use std::process::ExitCode;

use portcullis_hash::pbkdf2::{Prf, pbkdf2_hmac};

/// Latency of one 64-bit `imul` plus one `add`, in cycles (AMD Zen 1-5, Intel Sandy
/// Bridge and later).
const STEP_LATENCY: f64 = 4.0;

/// Seconds this thread has run on a CPU: other processes that preempt it on a shared
/// machine do not count.
fn thread_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID unavailable");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Seconds per cycle, from a serial chain of `n` square-and-add steps.
fn seconds_per_cycle(n: u64) -> f64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15_u64);
    let start = thread_seconds();
    for _ in 0..n {
        // Each step needs the previous one: the chain runs at the latency of a multiply
        // and an add, whatever the loop overhead (which executes in parallel with it).
        // Squaring, not a constant factor, so the compiler cannot fold steps together.
        x = x.wrapping_mul(x).wrapping_add(0xd6e8_feb8_6659_fd93);
    }
    black_box(x);
    (thread_seconds() - start) / (n as f64 * STEP_LATENCY)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(prf) = args.first().and_then(|s| Prf::from_name(s)) else {
        eprintln!("usage: kernel_cycles <sha1|sha256|sha512> [iterations] [rounds]");
        return ExitCode::from(2);
    };
    let iterations: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(21);
    let mut out = vec![0u8; prf.output_len()];
    let compressions = 2.0 * f64::from(iterations);
    let mut per_block = Vec::with_capacity(rounds);
    let mut ghz = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let before = seconds_per_cycle(20_000_000);
        let start = thread_seconds();
        pbkdf2_hmac(prf, b"password", b"salt", iterations, &mut out);
        let secs = thread_seconds() - start;
        let after = seconds_per_cycle(20_000_000);
        let cycle = (before + after) / 2.0;
        per_block.push(secs / cycle / compressions);
        ghz.push(1e-9 / cycle);
        black_box(&out);
    }
    let spread = {
        let mut v = per_block.clone();
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() - 1])
    };
    println!(
        "{} x{iterations}: {:.1} cycles/compression (median of {rounds}; min {:.1}, max {:.1}), clock ~{:.2} GHz",
        prf.name(),
        median(&mut per_block),
        spread.0,
        spread.1,
        median(&mut ghz),
    );
    ExitCode::SUCCESS
}
