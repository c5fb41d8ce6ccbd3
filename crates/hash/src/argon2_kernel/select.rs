//! Which compression kernel this process runs: measured once, not only detected.
//!
//! Every kernel the CPU offers hashes the same small memory (256 KiB, one pass: in L2, so
//! the compression and not the memory decides) in interleaved rounds, and the kernel with
//! the lowest median wins: a median over interleaved rounds is not moved by a neighbour
//! that loads the other core during one window, which a single timing is (issue 17). The
//! whole measurement takes a few milliseconds on the first argon2 hash of the process.

use std::sync::OnceLock;
use std::time::Instant;

use super::{Backend, Params, Serial, Variant, Version, backends, hash_in};
use crate::arch::mem::Arena;

/// Rounds per kernel; the median decides.
const ROUNDS: usize = 9;
/// Rounds of the portable kernel when a vector kernel is also on offer: it is some 2-6x
/// slower than any of them, so its figure is for the record only, and nine rounds of it
/// would be most of the probe's cost (a millisecond of every process's first hash).
const PORTABLE_ROUNDS_BESIDE_VECTORS: usize = 3;
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
    static CHOICE: OnceLock<KernelChoice> = OnceLock::new();
    CHOICE.get_or_init(measure)
}

fn measure() -> KernelChoice {
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
    let mut arena = Arena::new();
    let Some(memory) = arena.blocks(PROBE_BLOCKS as usize) else {
        // No memory for a probe: the portable kernel always works.
        return KernelChoice {
            backend: Backend::Portable,
            timings: Vec::new(),
        };
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
