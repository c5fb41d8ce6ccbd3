//! `portcullis hash bench --pool-seconds S`: what the hash pool alone can derive on this
//! machine, the yardstick for a server's verifications per second at saturation.
//!
//! It runs the pool's work without the server around it: `--threads` OS threads (default:
//! one per core, the pool's default) each derive batches of `batch::preferred_batch`
//! passwords through the same batch kernels the pool uses, for a fixed wall-clock time,
//! and the total derivations per second are reported. A server's accepts/s at saturation
//! divided by this figure is the share of the hardware it turns into answers.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use portcullis_hash::{Prf, batch};

/// Run `threads` hashing threads for `seconds`; print the result (JSON or text).
pub fn run(prf: Prf, iterations: u32, threads: usize, seconds: f64, json: bool) -> ExitCode {
    let width = batch::preferred_batch(prf).max(1);
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let stop = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name(format!("bench-pool-{t}"))
            .spawn(move || {
                let passwords: Vec<Vec<u8>> = (0..width)
                    .map(|i| format!("pool bench password {t}-{i}").into_bytes())
                    .collect();
                let mut outs = vec![vec![0u8; prf.output_len()]; width];
                // (derivations, when the last of them finished): a thread's rate is
                // measured up to its last finished batch, so the batch cut off by the
                // stop neither counts nor dilutes the rate.
                let mut done = (0u64, start);
                while !stop.load(Ordering::Relaxed) {
                    let mut jobs: Vec<batch::Job<'_>> = passwords
                        .iter()
                        .zip(outs.iter_mut())
                        .map(|(p, o)| batch::Job {
                            password: p,
                            salt: b"0123456789abcdef",
                            out: o,
                        })
                        .collect();
                    batch::derive(prf, iterations, &mut jobs);
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
    if json {
        println!(
            "{}",
            serde_json::json!({
                "algorithm": format!("pbkdf2-{}", prf.name()),
                "iterations": iterations,
                "threads": threads,
                "batch": width,
                "seconds": elapsed,
                "derivations": counted,
                "derivations_per_s": rate,
            })
        );
    } else {
        println!(
            "pbkdf2-{} x{iterations}: {threads} threads x batches of {width}: {counted} derivations in {elapsed:.1} s = {rate:.1}/s",
            prf.name()
        );
    }
    ExitCode::SUCCESS
}
