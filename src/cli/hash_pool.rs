//! `portcullis hash bench --pool-seconds S`: what the hash pool alone can derive on this
//! machine, the yardstick for a server's verifications per second at saturation.
//!
//! It runs the pool's work without the server around it: `--threads` OS threads (default:
//! one per core, the pool's default) each derive batches of `batch::preferred_batch`
//! passwords through the same batch kernels the pool uses, for a fixed wall-clock time,
//! and the total derivations per second are reported. A server's accepts/s at saturation
//! divided by this figure is the share of the hardware it turns into answers.
//!
//! The width is read again before every batch, as the pool does: the batch kernels'
//! in-service contest (issue 26) may move the choice made at start-up, and the report
//! says which kernel start-up chose, which one the run ended on, and what each kernel
//! measured on the run's own batches.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use portcullis_hash::{Prf, batch};

/// The widest batch the loop prepares passwords for (wider than any kernel's lanes).
const MAX_WIDTH: usize = 64;

/// Run `threads` hashing threads for `seconds`; print the result (JSON or text).
pub fn run(
    prf: Prf,
    iterations: u32,
    threads: usize,
    seconds: f64,
    json: bool,
    forced: Option<batch::Backend>,
) -> ExitCode {
    let chosen = batch::calibration(prf);
    // A forced kernel runs full groups of its own width.
    let forced = forced.map(|b| {
        let width = chosen
            .kernels
            .iter()
            .find(|k| k.backend == b.name())
            .map_or(1, |k| k.width);
        (b, width.clamp(1, MAX_WIDTH))
    });
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let stop = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name(format!("bench-pool-{t}"))
            .spawn(move || {
                // Enough for the widest batch any kernel could ask for.
                let passwords: Vec<Vec<u8>> = (0..MAX_WIDTH)
                    .map(|i| format!("pool bench password {t}-{i}").into_bytes())
                    .collect();
                let mut outs = vec![vec![0u8; prf.output_len()]; MAX_WIDTH];
                // (derivations, when the last of them finished): a thread's rate is
                // measured up to its last finished batch, so the batch cut off by the
                // stop neither counts nor dilutes the rate.
                let mut done = (0u64, start);
                while !stop.load(Ordering::Relaxed) {
                    let width = match forced {
                        Some((_, w)) => w,
                        None => batch::preferred_batch(prf).clamp(1, MAX_WIDTH),
                    };
                    let mut jobs: Vec<batch::Job<'_>> = passwords[..width]
                        .iter()
                        .zip(outs.iter_mut())
                        .map(|(p, o)| batch::Job {
                            password: p,
                            salt: b"0123456789abcdef",
                            out: o,
                        })
                        .collect();
                    match forced {
                        Some((b, _)) => {
                            // Offered by this CPU: checked when the name was resolved.
                            let _ = batch::derive_on(b, prf, iterations, &mut jobs);
                        }
                        None => batch::derive(prf, iterations, &mut jobs),
                    }
                    done = (done.0 + width as u64, Instant::now());
                }
                done
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => return super::fail(format_args!("cannot start a hashing thread: {e}")),
        }
    }
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    let (mut counted, mut rate) = (0u64, 0.0f64);
    for h in handles {
        if let Ok((n, last)) = h.join() {
            let secs = last.duration_since(start).as_secs_f64();
            counted += n;
            if secs > 0.0 {
                rate += n as f64 / secs;
            }
        }
    }
    let ended = batch::calibration(prf);
    let (kernel, width) = match forced {
        Some((b, w)) => (b.name(), w),
        None => (ended.best, ended.best_width),
    };
    if json {
        let in_service: Vec<serde_json::Value> = ended
            .in_service
            .iter()
            .map(|k| {
                serde_json::json!({
                    "kernel": k.backend,
                    "runs": k.runs,
                    "ns_per_chain_iteration": k.ns_per_chain,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "algorithm": format!("pbkdf2-{}", prf.name()),
                "iterations": iterations,
                "threads": threads,
                "batch": width,
                "kernel": kernel,
                "forced": forced.is_some(),
                "seconds": elapsed,
                "derivations": counted,
                "derivations_per_s": rate,
                "kernel_at_start": chosen.best,
                "kernel_at_end": ended.best,
                "switches": ended.switches,
                "in_service": in_service,
            })
        );
    } else {
        println!(
            "pbkdf2-{} x{iterations}: {threads} threads x batches of {width} ({kernel}{}): {counted} derivations in {elapsed:.1} s = {rate:.1}/s",
            prf.name(),
            if forced.is_some() { ", forced" } else { "" }
        );
        println!(
            "  kernel: {} at start, {} at the end ({} switch(es) in service)",
            chosen.best, ended.best, ended.switches
        );
        for k in &ended.in_service {
            println!(
                "  in service: {:<14} {:>3} full groups, median {:.3} ns per chain-iteration",
                k.backend, k.runs, k.ns_per_chain
            );
        }
    }
    ExitCode::SUCCESS
}
