//! Single-stream PBKDF2 cost in core clock cycles per compression, frequency-independent.
//!
//! ```text
//! taskset -c 1 cargo run --release -p portcullis-hash --example kernel_cycles -- \
//!     <sha1|sha256|sha512> [iterations] [rounds] [batch-backend lanes]
//! ```
//!
//! With a batch backend (`shani-x4`, `avx512-x8`, ...) and a lane count it
//! times one `batch::derive_on` call of that many jobs instead, and reports cycles per
//! compression per lane (the single stream's figure divided by this one is the batch
//! speed-up).
//!
//! Shared cloud machines change clock speed by tens of percent from one second to the
//! next, which swamps the few-percent differences a kernel change makes. Each round here
//! measures the cycle length right before and after one derivation (`common/cycles.rs`)
//! and divides. The result is cycles per compression with the clock speed cancelled out;
//! compare kernels by it, then confirm against `openssl speed` as usual.

#[path = "common/cli.rs"]
mod cli;
use std::hint::black_box;
use std::process::ExitCode;

use portcullis_hash::batch::{self, Job};
use portcullis_hash::pbkdf2::{Prf, pbkdf2_hmac};

#[path = "common/cycles.rs"]
mod cycles;
use cycles::{median, seconds_per_cycle, thread_seconds};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(prf) = args.first().and_then(|s| Prf::from_name(s)) else {
        eprintln!(
            "usage: kernel_cycles <sha1|sha256|sha512> [iterations] [rounds] [batch-backend lanes]"
        );
        return ExitCode::from(2);
    };
    let iterations: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(21);
    let backend = match cli::backend_arg(prf, args.get(3)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let lanes: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let passwords: Vec<Vec<u8>> = (0..lanes)
        .map(|i| format!("password {i}").into_bytes())
        .collect();
    let mut outs = vec![vec![0u8; prf.output_len()]; lanes];
    let mut out = vec![0u8; prf.output_len()];
    let compressions = 2.0 * f64::from(iterations) * backend.map_or(1.0, |_| lanes as f64);
    let mut per_block = Vec::with_capacity(rounds);
    let mut ghz = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let before = seconds_per_cycle(20_000_000);
        let start = thread_seconds();
        match backend {
            None => pbkdf2_hmac(prf, b"password", b"salt", iterations, &mut out),
            Some(b) => {
                let mut jobs: Vec<Job<'_>> = passwords
                    .iter()
                    .zip(outs.iter_mut())
                    .map(|(p, o)| Job {
                        password: p,
                        salt: b"salt",
                        out: o,
                    })
                    .collect();
                if let Err(e) = batch::derive_on(b, prf, iterations, &mut jobs) {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            }
        }
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
