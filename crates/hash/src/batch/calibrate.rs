//! Per-CPU kernel costs: the planner's menu measured on the running CPU.
//!
//! Which kernel gives the most derivations per second depends on the core, not just on its
//! feature flags: four SHA-NI chains give 1.25x one chain on an Intel Xeon (model 167) and
//! about 2x on Zen 5, and sixteen AVX-512 lanes beat both on the Xeon but not necessarily
//! on a core that splits 512-bit operations in two. So the first use of a PRF in a process
//! times every kernel the CPU offers for it on a full group, a few thousand iterations at
//! a time (about a millisecond each), in [`ROUNDS`] interleaved rounds (each round starts
//! at a different kernel), in thread CPU time, and keeps each kernel's fastest round.
//! Thread CPU time leaves out preemption, and a neighbour that is busy during some rounds
//! only ever makes those rounds slower, so the fastest round is the kernel's own speed
//! (a median would let a burst of load during half the rounds of one kernel decide the
//! plan, and the planner would then avoid multi-chain kernels it should use). What this
//! cannot see is a neighbour that stays busy for the whole window and slows the kernels
//! unequally: that is what the in-service contest ([`super::service`]) is for, comparing
//! medians of the process's own runs. The whole measurement takes 10 to 40 ms per PRF;
//! [`calibration`] runs it eagerly (the server does at start-up, before it takes traffic)
//! and reports it.
//!
//! Costs are relative to the single-stream loop on one chain ([`SINGLE_COST`]), which is
//! always on the menu, so the planner never prefers a kernel that measured slower than
//! running the chains one after another.

use std::time::Instant;

use super::chain::Chain;
use super::sha::{Sha1, Sha256, Sha512};
use super::{Backend, Cpu, Kernel, Lanes, MenuItem, SINGLE_COST, best_item};
use crate::pbkdf2::Prf;

/// Measurement rounds; each kernel keeps its fastest.
const ROUNDS: usize = 7;

/// One kernel's measured cost on this CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelCost {
    /// The kernel ([`Backend::name`]).
    pub backend: &'static str,
    /// Chains per group.
    pub width: usize,
    /// Nanoseconds per PBKDF2 iteration of a full group.
    pub group_ns: f64,
    /// Time per chain relative to the single stream (1.0); below 1 is faster.
    pub per_chain: f64,
}

/// The measured menu of one PRF and what the planner makes of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The PRF.
    pub prf: Prf,
    /// Every kernel the CPU offers the planner for it, single stream first.
    pub kernels: Vec<KernelCost>,
    /// The kernel with the lowest cost per chain (what a saturated pool runs).
    pub best: &'static str,
    /// Its width: the batch size a caller should gather ([`super::preferred_batch`]).
    pub best_width: usize,
    /// Derivations per second at that width relative to the single stream.
    pub best_speedup: f64,
    /// What the process's own derivations measured since (see [`super::service`]): per
    /// multi-chain kernel that ran full groups, its runs and median time per chain.
    pub in_service: Vec<InService>,
    /// How many times the in-service contest moved the choice.
    pub switches: u64,
}

/// One kernel's in-service record.
#[derive(Debug, Clone, PartialEq)]
pub struct InService {
    /// The kernel ([`Backend::name`]).
    pub backend: &'static str,
    /// Full groups timed (within the contest's window).
    pub runs: usize,
    /// Median thread-CPU nanoseconds per chain and PBKDF2 iteration over those runs (the
    /// start-up figure while fewer than the contest's minimum have run).
    pub ns_per_chain: f64,
}

/// The calibrated menu of `prf` on this CPU (measured on the first call in the process).
pub fn calibration(prf: Prf) -> Calibration {
    let full = super::menu_of(prf);
    let menu = &full.items;
    let kernels = costs(menu);
    let best = best_item(menu);
    let (rows, switches) = full.in_service();
    let in_service = rows
        .into_iter()
        .map(|(i, runs, ns_per_chain)| InService {
            backend: menu[i].kernel.backend().name(),
            runs,
            ns_per_chain,
        })
        .collect();
    Calibration {
        prf,
        kernels,
        best: best.map_or(Backend::Single, |o| o.kernel.backend()).name(),
        best_width: best.map_or(1, |o| o.width),
        best_speedup: best.map_or(1.0, |o| {
            f64::from(SINGLE_COST) * o.width as f64 / f64::from(o.cost().max(1))
        }),
        in_service,
        switches,
    }
}

fn costs(menu: &[MenuItem]) -> Vec<KernelCost> {
    menu.iter()
        .map(|o| KernelCost {
            backend: o.kernel.backend().name(),
            width: o.width,
            group_ns: o.ns,
            per_chain: f64::from(o.cost()) / f64::from(SINGLE_COST) / o.width as f64,
        })
        .collect()
}

/// A fresh start-up measurement of `prf`'s kernels, not kept, and the kernel it ranks
/// first: what [`calibration`] would choose if the process started now. The process's
/// own menu is measured once; this lets a test judge the rule against an independent
/// timing taken right around it, on a shared machine whose kernels' relative speeds
/// move from one second to the next.
#[doc(hidden)]
pub fn measure_now(prf: Prf) -> (Vec<KernelCost>, &'static str) {
    let cpu = Cpu::detect();
    let menu = match prf {
        Prf::Sha1 => measure::<Sha1>(&cpu),
        Prf::Sha256 => measure::<Sha256>(&cpu),
        Prf::Sha512 => measure::<Sha512>(&cpu),
    };
    let best = best_item(&menu).map_or(Backend::Single, |o| o.kernel.backend());
    (costs(&menu), best.name())
}

/// Iterations per timed run: about a millisecond for the slowest full group.
fn iterations_for<H: Lanes>() -> u32 {
    if H::BLOCK_BYTES == 128 { 1024 } else { 2048 }
}

/// Measure every kernel `H` offers on `cpu` (see the module doc).
pub(super) fn measure<H: Lanes>(cpu: &Cpu) -> Vec<MenuItem> {
    let offered = H::offered(cpu);
    let widest = offered.iter().map(|o| o.1).max().unwrap_or(1);
    // Distinct, arbitrary chain states: the kernels' speed does not depend on the data.
    let mut chains: Vec<Chain<H>> = (0..widest)
        .map(|i| {
            let mut c = Chain {
                inner: H::IV,
                outer: H::IV,
                acc: H::IV,
            };
            if let Some(w) = AsMut::<[H::Word]>::as_mut(&mut c.acc).first_mut() {
                *w ^= H::IV.as_ref()[i % H::IV.as_ref().len()];
            }
            c
        })
        .collect();
    let iterations = iterations_for::<H>();
    // Warm-up: page in the code and let the clock settle on vector work.
    for &(kernel, width) in &offered {
        H::run(cpu, kernel, &mut chains[..width], iterations / 8);
    }
    let mut rounds = vec![Vec::with_capacity(ROUNDS); offered.len()];
    for round in 0..ROUNDS {
        for i in 0..offered.len() {
            let k = (i + round) % offered.len();
            let (kernel, width) = offered[k];
            let ns = elapsed_ns(|| H::run(cpu, kernel, &mut chains[..width], iterations));
            rounds[k].push(ns / f64::from(iterations));
        }
    }
    let best: Vec<f64> = rounds
        .iter()
        .map(|r| r.iter().copied().fold(f64::INFINITY, f64::min))
        .collect();
    let single = best.first().copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
    offered
        .iter()
        .zip(best)
        .map(|(&(kernel, width), ns)| {
            let cost = if kernel == Kernel::Single {
                SINGLE_COST
            } else {
                (ns / single * f64::from(SINGLE_COST)).round().max(1.0) as u32
            };
            MenuItem::new(kernel, width, cost, ns)
        })
        .collect()
}

/// Nanoseconds `f` took in thread CPU time (wall time where there is no such clock).
fn elapsed_ns(f: impl FnOnce()) -> f64 {
    match crate::thread_cpu_ns() {
        Some(start) => {
            f();
            crate::thread_cpu_ns().map_or(f64::NAN, |end| end.saturating_sub(start) as f64)
        }
        None => {
            let start = Instant::now();
            f();
            start.elapsed().as_nanos() as f64
        }
    }
}
