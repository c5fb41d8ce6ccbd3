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
//! measured on the run's own batches. The loop itself is `portcullis_lab::pool_bench`,
//! which the demo's LDAP section runs too.
//!
//! `--in-flight N`: only N jobs in flight, each thread deriving its even share (as the
//! pool splits a few jobs between its threads), for comparing a server that has N
//! closed-loop clients with what the pool can do for exactly those.

use std::process::ExitCode;
use std::time::Duration;

use portcullis_hash::{Prf, batch};
use portcullis_lab::pool_bench::{self, MAX_WIDTH};

/// Run `threads` hashing threads for `seconds`; print the result (JSON or text).
pub fn run(
    prf: Prf,
    iterations: u32,
    threads: usize,
    seconds: f64,
    json: bool,
    forced: Option<batch::Backend>,
    in_flight: Option<usize>,
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
    let length = Duration::from_secs_f64(seconds.max(0.0));
    let width = match (forced, in_flight) {
        (Some((b, w)), _) => pool_bench::Width::Forced(b, w),
        (None, Some(n)) => pool_bench::Width::InFlight(n),
        (None, None) => pool_bench::Width::Saturated,
    };
    let done = match pool_bench::measure(prf, iterations, threads, length, width) {
        Ok(r) => r,
        Err(e) => return super::fail(format_args!("cannot start a hashing thread: {e}")),
    };
    let (counted, rate, elapsed) = (done.derivations, done.per_s, done.seconds);
    let ended = batch::calibration(prf);
    let (kernel, width) = match (forced, in_flight) {
        (Some((b, w)), _) => (b.name().to_owned(), w),
        // Each thread's even share, planned as the pool plans it.
        (None, Some(n)) => {
            let share = n.div_ceil(threads.max(1)).clamp(1, MAX_WIDTH);
            let plan = batch::plan_for(prf, share);
            let names: Vec<&str> = plan.iter().map(|(b, _)| b.name()).collect();
            (names.join("+"), share)
        }
        (None, None) => (ended.best.to_owned(), ended.best_width),
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
                "in_flight": in_flight,
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
