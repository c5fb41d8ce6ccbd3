//! Which compression kernel this process runs: measured once, not only detected.
//!
//! Every kernel the CPU offers hashes the same small memory (256 KiB, one pass: in L2, so
//! the compression and not the memory decides) in interleaved rounds, and the kernel with
//! the lowest median wins: a median over interleaved rounds is not moved by a neighbour
//! that loads the other core during one window, which a single timing is (issue 17). The
//! whole measurement takes a few milliseconds on the first argon2 hash of the process.
//!
//! That choice is a first guess. Hashes the process computes afterwards with
//! [`Backend::Auto`] on one lane (the pool's: the whole hash on the calling thread) are
//! timed in thread CPU time per block and feed a [`Contest`] among the kernels: now and
//! then one runs on a challenger within range, and a challenger that is faster on the
//! process's own work takes over (see [`crate::contest`] for the rules and what exploring
//! costs).

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use super::{Backend, Block, Params, Serial, Variant, Version, backends, hash_in};
use crate::arch::mem::Wipe;
use crate::contest::Contest;

/// Hashes of fewer blocks are not timed for the contest: too short to time well.
pub(crate) const MIN_TIMED_BLOCKS: usize = 1024;

/// Rounds after which the probe stops if one kernel is clearly ahead ([`separated`]).
const MIN_ROUNDS: usize = 3;
/// Rounds per kernel at most; the median decides. Seven, not more: the in-service contest
/// re-checks the choice on real hashes, and every round is CPU a one-shot process (a
/// CLI verification) pays before its first hash.
const ROUNDS: usize = 7;
/// Rounds of the portable kernel when a vector kernel is also on offer: it is some 2-6x
/// slower than any of them, so its figure is for the record only (and never in the
/// contest's range), and more rounds of it would be most of the probe's cost.
const PORTABLE_ROUNDS_BESIDE_VECTORS: usize = 1;
/// Blocks per timed hash.
const PROBE_BLOCKS: u32 = 256;

/// One kernel's measured cost.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTiming {
    /// The kernel.
    pub backend: Backend,
    /// Median nanoseconds per block compression (walk included).
    pub ns_per_block: f64,
}

/// The measured kernels and the one chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelChoice {
    /// The fastest kernel.
    pub backend: Backend,
    /// Every kernel measured, portable first.
    pub timings: Vec<KernelTiming>,
}

/// The process-wide choice (measured on first call).
pub fn kernel_choice() -> &'static KernelChoice {
    CHOICE.get_or_init(|| measure(None))
}

/// The process-wide choice, measured (on first call) in `scratch` if it holds a probe's
/// blocks: the memory an automatic hash is about to use anyway, already mapped, so the
/// probe faults in nothing the hash would not (in a VM each first touch of fresh memory
/// can cost the host a fault too; a heap buffer of its own cost a one-shot process
/// several milliseconds). `scratch` is left with arbitrary content.
pub(crate) fn kernel_choice_in(scratch: &mut [Block]) -> &'static KernelChoice {
    CHOICE.get_or_init(|| measure(Some(scratch)))
}

static CHOICE: OnceLock<KernelChoice> = OnceLock::new();

/// The in-service contest among the measured kernels (indices into
/// [`KernelChoice::timings`]), if the CPU offers more than one and has a thread CPU clock.
fn contest() -> Option<std::sync::MutexGuard<'static, Contest>> {
    static CONTEST: OnceLock<Option<Mutex<Contest>>> = OnceLock::new();
    CONTEST
        .get_or_init(|| {
            let choice = kernel_choice();
            let startup: Vec<f64> = choice.timings.iter().map(|t| t.ns_per_block).collect();
            let current = choice
                .timings
                .iter()
                .position(|t| t.backend == choice.backend)?;
            (startup.len() >= 2 && crate::thread_cpu_ns().is_some())
                .then(|| Mutex::new(Contest::new(startup, current)))
        })
        .as_ref()
        .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// The kernel an automatic hash runs now: the start-up choice until the in-service
/// contest moves it.
pub fn kernel_in_service() -> Backend {
    let choice = kernel_choice();
    match contest() {
        Some(c) => choice
            .timings
            .get(c.current())
            .map_or(choice.backend, |t| t.backend),
        None => choice.backend,
    }
}

/// In-service record per measured kernel: (kernel, hashes timed in the window, median
/// thread-CPU nanoseconds per block), and the switches so far.
pub fn kernels_in_service() -> (Vec<(Backend, usize, f64)>, u64) {
    let choice = kernel_choice();
    let Some(c) = contest() else {
        return (Vec::new(), 0);
    };
    let rows = choice
        .timings
        .iter()
        .enumerate()
        .filter(|&(k, _)| c.samples(k) > 0)
        .map(|(k, t)| (t.backend, c.samples(k), c.estimate(k)))
        .collect();
    (rows, c.switches())
}

/// For an automatic hash of `blocks` blocks on the calling thread: the kernel to run and,
/// when it is to be timed, its contest index.
pub(crate) fn auto_pick(blocks: usize) -> (Backend, Option<usize>) {
    let choice = kernel_choice();
    let Some(mut c) = contest().filter(|_| blocks >= MIN_TIMED_BLOCKS) else {
        return (kernel_in_service(), None);
    };
    let k = c.pick();
    let backend = choice.timings.get(k).map_or(choice.backend, |t| t.backend);
    (backend, Some(k))
}

/// Record a timed automatic hash: contest index `k`, `ns` thread CPU for `blocks` blocks.
/// Returns whether `k` was the kernel in service (not a challenger's exploring run).
pub(crate) fn auto_record(k: usize, ns: u64, blocks: usize) -> bool {
    let Some(mut c) = contest() else {
        return false;
    };
    let current = c.current() == k;
    c.record(k, ns as f64 / blocks.max(1) as f64);
    current
}

/// The in-service contest between the ways of wiping an arena after a hash
/// ([`Wipe::ALL`]; indices into it), if this target has more than one and a thread CPU
/// clock. What a wipe costs shows mostly in the next hash on the same thread (whether
/// the lines it writes are still in the cache: 37% of a verification on an Intel Xeon,
/// the other way round and 7% on Zen 3), so an arm's run is the wipe's thread CPU plus
/// that of the next hash of the same size on the kernel in service, per block. No
/// start-up probe: it would cost a one-shot process several whole hashes. The default
/// ([`Wipe::InCache`]) runs until the other arm is measured faster on the process's own
/// work, by the kernel contest's rules ([`crate::contest`]).
fn wipe_contest() -> Option<std::sync::MutexGuard<'static, Contest>> {
    static CONTEST: OnceLock<Option<Mutex<Contest>>> = OnceLock::new();
    CONTEST
        .get_or_init(|| {
            (Wipe::ALL.len() >= 2 && crate::thread_cpu_ns().is_some())
                .then(|| Mutex::new(Contest::new(vec![0.0; Wipe::ALL.len()], 0)))
        })
        .as_ref()
        .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// How arenas are wiped now, when the wipe is not timed.
pub(crate) fn wipe_in_service() -> Wipe {
    let current = wipe_contest().map_or(0, |c| c.current());
    Wipe::ALL.get(current).copied().unwrap_or(Wipe::InCache)
}

/// The wipe after a timed hash, and its contest arm.
pub(crate) fn wipe_pick() -> (Wipe, Option<usize>) {
    let Some(mut c) = wipe_contest() else {
        return (wipe_in_service(), None);
    };
    let arm = c.pick();
    (
        Wipe::ALL.get(arm).copied().unwrap_or(Wipe::InCache),
        Some(arm),
    )
}

/// Record arm `arm`: `ns` thread CPU for its wipe and the next hash, `blocks` each.
pub(crate) fn wipe_record(arm: usize, ns: u64, blocks: usize) {
    if let Some(mut c) = wipe_contest() {
        c.record(arm, ns as f64 / blocks.max(1) as f64);
    }
}

/// In-service record per wipe mode: (mode, runs in the window, median thread-CPU
/// nanoseconds per block of wipe and next hash), the mode in service and the switches.
pub fn wipes_in_service() -> (Vec<(&'static str, usize, f64)>, &'static str, u64) {
    let now = wipe_in_service().name();
    let Some(c) = wipe_contest() else {
        return (Vec::new(), now, 0);
    };
    let rows = Wipe::ALL
        .iter()
        .enumerate()
        .filter(|&(k, _)| c.samples(k) > 0)
        .map(|(k, w)| (w.name(), c.samples(k), c.estimate(k)))
        .collect();
    (rows, now, c.switches())
}

fn measure(scratch: Option<&mut [Block]>) -> KernelChoice {
    let kernels = backends();
    let params = Params {
        variant: Variant::Id,
        version: Version::V0x13,
        m_cost: PROBE_BLOCKS,
        t_cost: 1,
        p_cost: 1,
        secret: &[],
        ad: &[],
    };
    // Without scratch memory: plain heap memory, not an `Arena` (a 2 MiB huge page that
    // the kernel, and in a VM the host, must clear on first touch, only to be unmapped
    // after the probe).
    let mut own: Vec<Block> = Vec::new();
    let memory = match scratch {
        Some(m) if m.len() >= PROBE_BLOCKS as usize => &mut m[..PROBE_BLOCKS as usize],
        _ => {
            if own.try_reserve_exact(PROBE_BLOCKS as usize).is_err() {
                // No memory for a probe: the portable kernel always works.
                return KernelChoice {
                    backend: Backend::Portable,
                    timings: Vec::new(),
                };
            }
            own.resize(PROBE_BLOCKS as usize, Block::ZERO);
            &mut own[..]
        }
    };
    let mut out = [0u8; 32];
    let mut samples = vec![Vec::with_capacity(ROUNDS); kernels.len()];
    // One untimed round first: code and memory paged in, clock settled on vector work.
    for round in 0..=ROUNDS {
        for (k, &backend) in kernels.iter().enumerate() {
            if backend == Backend::Portable
                && kernels.len() > 1
                && round > PORTABLE_ROUNDS_BESIDE_VECTORS
            {
                continue;
            }
            let start = Instant::now();
            hash_in(
                &params,
                b"probe",
                b"probe salt",
                &mut out,
                backend,
                &Serial,
                memory,
            );
            let ns = start.elapsed().as_nanos() as f64 / f64::from(PROBE_BLOCKS);
            if round > 0 {
                samples[k].push(ns);
            }
        }
        if round >= MIN_ROUNDS && separated(&kernels, &samples) {
            break;
        }
    }
    let timings: Vec<KernelTiming> = kernels
        .iter()
        .zip(samples.iter_mut())
        .map(|(&backend, s)| {
            s.sort_by(f64::total_cmp);
            KernelTiming {
                backend,
                ns_per_block: s.get(s.len() / 2).copied().unwrap_or(f64::INFINITY),
            }
        })
        .collect();
    let backend = timings
        .iter()
        .min_by(|a, b| a.ns_per_block.total_cmp(&b.ns_per_block))
        .map_or(Backend::Portable, |t| t.backend);
    KernelChoice { backend, timings }
}

/// Whether the vector kernel with the lowest median is ahead of every other vector
/// kernel in every round: its slowest round faster than each other's fastest (AVX-512
/// against AVX2 on Zen 4 or 5, some 1.4-2x apart). More rounds would not change such a
/// choice, and each costs a one-shot process CPU before its first hash; close calls get
/// all [`ROUNDS`].
fn separated(kernels: &[Backend], samples: &[Vec<f64>]) -> bool {
    let timed: Vec<&Vec<f64>> = kernels
        .iter()
        .zip(samples)
        .filter(|(b, s)| **b != Backend::Portable && !s.is_empty())
        .map(|(_, s)| s)
        .collect();
    let median = |s: &Vec<f64>| {
        let mut v = s.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let Some(best) = timed.iter().min_by(|a, b| median(a).total_cmp(&median(b))) else {
        return true;
    };
    let slowest = best.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    timed
        .iter()
        .filter(|s| !std::ptr::eq(**s, *best))
        .all(|s| s.iter().all(|&x| x > slowest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_26_the_probe_stops_early_only_when_every_round_agrees() {
        let k = [Backend::Portable, Backend::Avx2, Backend::Avx512];
        let portable = vec![900.0];
        // AVX-512 ahead in every round: no need for more.
        let apart = [
            portable.clone(),
            vec![150.0, 149.0, 160.0],
            vec![105.0, 120.0, 104.0],
        ];
        assert!(separated(&k, &apart));
        // One round of each overlaps the other's: a close call, keep measuring.
        let close = [
            portable.clone(),
            vec![150.0, 110.0, 160.0],
            vec![105.0, 120.0, 104.0],
        ];
        assert!(!separated(&k, &close));
        // The portable kernel's figure never decides (it is for the record only).
        let slow_portable = [
            vec![100.0],
            vec![150.0, 149.0, 160.0],
            vec![105.0, 120.0, 104.0],
        ];
        assert!(separated(&k, &slow_portable));
        // One vector kernel: nothing to choose between.
        assert!(separated(&k[..2], &apart[..2]));
    }
}
