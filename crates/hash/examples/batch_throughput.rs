//! Batch PBKDF2 throughput on one thread, against the single-stream kernel measured in the
//! same run (alternating, so machine noise hits both alike).
//!
//! ```text
//! taskset -c 1 cargo run --release -p portcullis-hash --example batch_throughput -- \
//!     <sha1|sha256|sha512> <iterations> <batch> [rounds] [backend]
//! ```
//!
//! `backend` forces one batch code path (`shani-x2`, `avx512-x8`, ...; default: the
//! planner, as `batch::derive`). Prints one line per round and the median ratio.

#[path = "common/cli.rs"]
mod cli;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use portcullis_hash::batch::{self, Backend, Job};
use portcullis_hash::pbkdf2::{Prf, pbkdf2_hmac};

/// Nanoseconds this thread has spent on a CPU (Linux `schedstat`), if available. On a
/// shared machine the wall clock also counts time other processes held the core; the
/// on-CPU time is what a dedicated core would take.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Derivations per second of `f`, which performs `per_call` derivations, run for at least
/// `min` of wall time: (per wall second, per on-CPU second).
fn rate(per_call: usize, min: Duration, mut f: impl FnMut()) -> (f64, f64) {
    let start = Instant::now();
    let cpu0 = cpu_ns();
    let mut calls = 0u64;
    while start.elapsed() < min || calls == 0 {
        f();
        calls += 1;
    }
    let wall = start.elapsed().as_secs_f64();
    let n = calls as f64 * per_call as f64;
    let cpu = match (cpu0, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => wall,
    };
    (n / wall, n / cpu)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: batch_throughput <sha1|sha256|sha512> <iterations> <batch> [rounds] [backend]";
    let (Some(prf), Some(iterations), Some(k)) = (
        args.first().and_then(|s| Prf::from_name(s)),
        args.get(1).and_then(|s| s.parse::<u32>().ok()),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5);
    let backend = match cli::backend_arg(prf, args.get(4)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let plan = batch::plan_for(prf, k);
    println!(
        "prf {} iterations {iterations} batch {k} backend {} plan {:?} preferred_batch {}",
        prf.name(),
        backend.map_or("auto", Backend::name),
        plan.iter()
            .map(|(b, n)| format!("{}x{n}", b.name()))
            .collect::<Vec<_>>(),
        batch::preferred_batch(prf),
    );
    let passwords: Vec<Vec<u8>> = (0..k)
        .map(|i| format!("password {i}").into_bytes())
        .collect();
    let salts: Vec<Vec<u8>> = (0..k)
        .map(|i| format!("salt-{i:04}").into_bytes())
        .collect();
    let hlen = prf.output_len();
    let mut outs = vec![vec![0u8; hlen]; k];
    let mut single_out = vec![0u8; hlen];
    let min = Duration::from_millis(1000);
    let mut ratios = Vec::new();
    let mut rates: Vec<(f64, f64, f64, f64)> = Vec::new();
    for round in 0..rounds {
        let single = rate(1, min, || {
            pbkdf2_hmac(prf, &passwords[0], &salts[0], iterations, &mut single_out);
        });
        let batched = rate(k, min, || {
            let mut jobs: Vec<Job<'_>> = passwords
                .iter()
                .zip(&salts)
                .zip(outs.iter_mut())
                .map(|((p, s), o)| Job {
                    password: p,
                    salt: s,
                    out: o,
                })
                .collect();
            match backend {
                Some(b) => {
                    if let Err(e) = batch::derive_on(b, prf, iterations, &mut jobs) {
                        eprintln!("{e}");
                    }
                }
                None => batch::derive(prf, iterations, &mut jobs),
            }
        });
        let ratio = batched.0 / single.0;
        let cpu_ratio = batched.1 / single.1;
        ratios.push((ratio, cpu_ratio));
        rates.push((single.0, batched.0, single.1, batched.1));
        println!(
            "round {round}: wall: single {:.2}/s batch {:.2}/s ratio {ratio:.3} | on-CPU: \
             single {:.2}/s batch {:.2}/s ratio {cpu_ratio:.3}",
            single.0, batched.0, single.1, batched.1
        );
    }
    // Every lane must equal the single-stream result.
    for ((p, s), o) in passwords.iter().zip(&salts).zip(&outs) {
        pbkdf2_hmac(prf, p, s, iterations, &mut single_out);
        if *o != single_out {
            eprintln!("MISMATCH between batch and single-stream output");
            return ExitCode::FAILURE;
        }
    }
    for (what, mut r) in [
        ("wall", ratios.iter().map(|r| r.0).collect::<Vec<_>>()),
        ("on-CPU", ratios.iter().map(|r| r.1).collect()),
    ] {
        r.sort_by(f64::total_cmp);
        println!(
            "{what}: median ratio {:.3} (min {:.3}, max {:.3})",
            r[r.len() / 2],
            r[0],
            r[r.len() - 1]
        );
    }
    // Best of the rounds for each side: interference from other processes only ever
    // slows a round down, so the fastest round is the least disturbed estimate.
    let best = |f: fn(&(f64, f64, f64, f64)) -> f64| rates.iter().map(f).fold(0.0, f64::max);
    let (bs, bb) = (best(|r| r.2), best(|r| r.3));
    println!(
        "on-CPU best of {rounds}: single {bs:.2} derivations/s, batch {bb:.2} derivations/s, \
         ratio {:.3}",
        bb / bs
    );
    println!("all {k} lanes equal the single stream");
    ExitCode::SUCCESS
}
