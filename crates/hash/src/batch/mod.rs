//! Batch (multi-buffer) PBKDF2: several derivations with the same PRF and iteration count
//! run interleaved in one thread.
//!
//! One derivation is a serial chain of compressions, so its latency cannot beat the
//! compression limit. But SHA-NI is bound by instruction latency, not throughput, and
//! SHA-512 (no SHA instructions on x86) is bound by scalar ALU width: independent chains
//! interleaved in one thread (SHA-NI) or laid side by side in vector lanes (AVX-512, AVX2)
//! give more derivations per second per core. The hash pool gathers queued jobs with equal
//! [`crate::BatchKey`] and hands them to [`derive`].
//!
//! # Lanes
//!
//! The unit of work is a *chain*: one PBKDF2 output block of one job (RFC 8018's `T_i`).
//! A job whose output fits one digest (the usual stored hash: 20, 32 or 64 bytes) is one
//! chain; a job asking for more contributes one chain per output block (a 64-byte
//! PBKDF2-HMAC-SHA256 output is two chains, blocks 1 and 2), and its last block is
//! truncated when written back. Different passwords, salts and output lengths mix freely:
//! the salt is only read by the first iteration, which runs per chain before the lanes
//! start ([`chain`]); every later iteration has the same shape for every chain.
//!
//! # Why one iteration count per call
//!
//! All lanes of a kernel advance in lockstep, one instruction for every lane. A chain that
//! needed fewer iterations would finish early and leave its lane idle until the longest
//! chain ends (or the kernel would have to swap a new chain into a live transposed register
//! set, per iteration checking who is done), so mixed counts waste exactly the work
//! batching is meant to save, and different PRFs cannot share instructions at all. A
//! deployment stores almost all hashes under one policy, so grouping by
//! [`crate::BatchKey`] (`prf`, `iterations`) in the caller costs nothing and keeps the
//! kernels simple: that is the contract of [`derive`].
//!
//! # Kernels and the plan
//!
//! CPU features are detected once per call. The kernels on x86-64 (all in `crate::arch`):
//! SHA-1 and SHA-256 with SHA-NI at 1, 2, 3 or 4 interleaved chains (more spill the
//! sixteen xmm registers the SHA instructions can use), and with AVX-512 (16 lanes) or
//! AVX2 (8 lanes); SHA-512 with AVX-512 (8 lanes) or AVX2 (4 lanes); and the
//! single-stream loop of [`crate::pbkdf2`] for one chain. Chains are split into groups by
//! a small dynamic program over relative costs per group, so that, for example, five
//! SHA-256 chains run as 3 + 2 rather than 4 + 1, and a single SHA-512 chain runs on the
//! scalar loop rather than in one lane of eight. Without any of these CPU features every
//! chain runs the single-stream loop.
//!
//! The costs are measured on the running CPU ([`calibrate`]), once per process and PRF:
//! how much SHA-NI interleaving gains (1.3x on recent Intel cores, 2x on Zen 5) and how
//! fast wide vectors are differ too much between CPUs for any fixed table.

mod calibrate;
pub(crate) mod chain;
mod service;
pub(crate) mod sha;

pub use calibrate::{Calibration, InService, KernelCost, calibration, measure_now};

use chain::Chain;
use service::{Menu, MenuItem};
use sha::{Hash, Sha1, Sha256, Sha512};

use crate::pbkdf2::Prf;

/// One derivation in a batch.
pub struct Job<'a> {
    /// The password (any length).
    pub password: &'a [u8],
    /// The salt (any length).
    pub salt: &'a [u8],
    /// Where the derived key goes; its length is the derived-key length.
    pub out: &'a mut [u8],
}

impl core::fmt::Debug for Job<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The password and the derived key are secrets; lengths are not.
        f.debug_struct("Job")
            .field("password", &format_args!("<{} bytes>", self.password.len()))
            .field("salt_len", &self.salt.len())
            .field("out_len", &self.out.len())
            .finish()
    }
}

/// Derive every job in `jobs` (any number; split internally into the best lane widths).
///
/// All jobs use `prf` and `iterations` (0 counts as 1, as in
/// [`crate::pbkdf2::pbkdf2_hmac`]); results are identical to deriving each job alone.
pub fn derive(prf: Prf, iterations: u32, jobs: &mut [Job<'_>]) {
    let cpu = Cpu::detect();
    match prf {
        Prf::Sha1 => derive_as::<Sha1>(&cpu, None, iterations, jobs),
        Prf::Sha256 => derive_as::<Sha256>(&cpu, None, iterations, jobs),
        Prf::Sha512 => derive_as::<Sha512>(&cpu, None, iterations, jobs),
    }
}

/// How many jobs a caller should gather for one [`derive`] call to get the most
/// derivations per second on this CPU (1 means batching does not help). Counted for jobs
/// whose output is at most one digest long (one chain each), as stored hashes are. Now and
/// then wider than the best kernel needs: when the in-service re-check wants to time a
/// wider kernel (`service.rs`), until a batch that wide has run.
pub fn preferred_batch(prf: Prf) -> usize {
    menu_of(prf).preferred_width()
}

/// The time [`derive`] takes for `n` one-chain jobs of `prf`, in units of one
/// single-stream derivation (its plan's summed group costs; 1.0 for one job). What a
/// caller needs to know whether a wider batch still meets a deadline.
pub fn batch_time_factor(prf: Prf, n: usize) -> f64 {
    let menu = &menu_of(prf).items;
    let cost: u64 = plan(menu, n)
        .iter()
        .filter_map(|(k, _)| menu.iter().find(|o| o.kernel == *k))
        .map(|o| u64::from(o.cost()))
        .sum();
    cost as f64 / f64::from(SINGLE_COST)
}

/// The calibrated menu of `prf` on this CPU.
fn menu_of(prf: Prf) -> &'static Menu {
    let cpu = Cpu::detect();
    match prf {
        Prf::Sha1 => Sha1::menu(&cpu),
        Prf::Sha256 => Sha256::menu(&cpu),
        Prf::Sha512 => Sha512::menu(&cpu),
    }
}

/// The kernel with the lowest cost per chain; ties go to the narrower kernel (less
/// waiting to fill a batch for the same throughput).
fn best_item(menu: &[MenuItem]) -> Option<&MenuItem> {
    menu.iter().min_by(|x, y| {
        (u64::from(x.cost()) * y.width as u64)
            .cmp(&(u64::from(y.cost()) * x.width as u64))
            .then(x.width.cmp(&y.width))
    })
}

/// A code path to force for every chain of a batch (tests and benchmarks cover each one
/// the CPU offers; production uses [`derive`], which plans over all of them).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// One chain at a time on the single-stream kernel of [`crate::pbkdf2`] (its fastest
    /// code for this CPU).
    Single,
    /// One chain at a time on the portable scalar loop (what CPUs without SHA-NI/AVX run).
    Scalar,
    /// SHA-1/SHA-256, SHA-NI, one chain per group (the interleaved code without partners).
    ShaNiX1,
    /// SHA-1/SHA-256, SHA-NI, two chains interleaved.
    ShaNiX2,
    /// SHA-1/SHA-256, SHA-NI, three chains interleaved.
    ShaNiX3,
    /// SHA-1/SHA-256, SHA-NI, four chains interleaved.
    ShaNiX4,
    /// [`Backend::ShaNiX1`] built for the SHA-NI baseline (SSE4.1, no AVX-512), which
    /// [`derive`] uses on CPUs without AVX-512VL.
    ShaNiSseX1,
    /// [`Backend::ShaNiX2`], baseline build.
    ShaNiSseX2,
    /// [`Backend::ShaNiX3`], baseline build.
    ShaNiSseX3,
    /// [`Backend::ShaNiX4`], baseline build.
    ShaNiSseX4,
    /// SHA-512, AVX2, four lanes.
    Avx2X4,
    /// SHA-512, AVX-512, eight lanes.
    Avx512X8,
    /// SHA-1/SHA-256, AVX2, eight lanes.
    Avx2X8,
    /// SHA-1/SHA-256, AVX-512, sixteen lanes.
    Avx512X16,
    /// SHA-1/SHA-256, AVX-512VL, eight lanes (ymm).
    Avx512VlX8,
}

impl Backend {
    /// Every backend, for iteration in tests and benchmarks.
    pub const ALL: [Backend; 15] = [
        Backend::Single,
        Backend::Scalar,
        Backend::ShaNiX1,
        Backend::ShaNiX2,
        Backend::ShaNiX3,
        Backend::ShaNiX4,
        Backend::ShaNiSseX1,
        Backend::ShaNiSseX2,
        Backend::ShaNiSseX3,
        Backend::ShaNiSseX4,
        Backend::Avx2X4,
        Backend::Avx512X8,
        Backend::Avx2X8,
        Backend::Avx512X16,
        Backend::Avx512VlX8,
    ];

    /// Short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Single => "single",
            Backend::Scalar => "scalar",
            Backend::ShaNiX1 => "shani-x1",
            Backend::ShaNiX2 => "shani-x2",
            Backend::ShaNiX3 => "shani-x3",
            Backend::ShaNiX4 => "shani-x4",
            Backend::ShaNiSseX1 => "shani-sse-x1",
            Backend::ShaNiSseX2 => "shani-sse-x2",
            Backend::ShaNiSseX3 => "shani-sse-x3",
            Backend::ShaNiSseX4 => "shani-sse-x4",
            Backend::Avx2X4 => "avx2-x4",
            Backend::Avx512X8 => "avx512-x8",
            Backend::Avx2X8 => "avx2-x8",
            Backend::Avx512X16 => "avx512-x16",
            Backend::Avx512VlX8 => "avx512vl-x8",
        }
    }

    fn kernel(self) -> Kernel {
        match self {
            Backend::Single => Kernel::Single,
            Backend::Scalar => Kernel::Scalar,
            Backend::ShaNiX1 => Kernel::ShaNi(1),
            Backend::ShaNiX2 => Kernel::ShaNi(2),
            Backend::ShaNiX3 => Kernel::ShaNi(3),
            Backend::ShaNiX4 => Kernel::ShaNi(4),
            Backend::ShaNiSseX1 => Kernel::ShaNiBaseline(1),
            Backend::ShaNiSseX2 => Kernel::ShaNiBaseline(2),
            Backend::ShaNiSseX3 => Kernel::ShaNiBaseline(3),
            Backend::ShaNiSseX4 => Kernel::ShaNiBaseline(4),
            Backend::Avx2X4 => Kernel::Avx2X4,
            Backend::Avx512X8 => Kernel::Avx512X8,
            Backend::Avx2X8 => Kernel::Avx2X8,
            Backend::Avx512X16 => Kernel::Avx512X16,
            Backend::Avx512VlX8 => Kernel::Avx512VlX8,
        }
    }
}

/// A forced backend that this CPU (or this PRF) does not have.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("batch backend {backend} is not available for {prf} on this CPU")]
pub struct BackendUnavailable {
    /// The backend asked for.
    pub backend: &'static str,
    /// The PRF it was asked for.
    pub prf: &'static str,
}

/// The forced backends this CPU offers for `prf`.
#[doc(hidden)]
pub fn backends(prf: Prf) -> Vec<Backend> {
    let cpu = Cpu::detect();
    Backend::ALL
        .into_iter()
        .filter(|b| match prf {
            Prf::Sha1 => Sha1::has(&cpu, b.kernel()),
            Prf::Sha256 => Sha256::has(&cpu, b.kernel()),
            Prf::Sha512 => Sha512::has(&cpu, b.kernel()),
        })
        .collect()
}

/// The backend called `name` ([`Backend::name`]), if this CPU offers it for `prf`
/// (benchmark command lines).
#[doc(hidden)]
pub fn backend_named(prf: Prf, name: &str) -> Option<Backend> {
    backends(prf).into_iter().find(|b| b.name() == name)
}

/// Start the process on `backend` for `prf` as if the start-up calibration had ranked it
/// first (a busy window can), before the first derivation: for showing from outside that
/// the in-service contest corrects such a choice (`hash bench --start-on`,
/// scripts/kernel-choice). Errors for a kernel the CPU lacks or a single-chain one.
#[doc(hidden)]
pub fn start_on(backend: Backend, prf: Prf) -> Result<(), BackendUnavailable> {
    let menu = menu_of(prf);
    match menu.index_of(backend.kernel()) {
        Some(item) if menu.start_on(item) => Ok(()),
        _ => Err(BackendUnavailable {
            backend: backend.name(),
            prf: prf.name(),
        }),
    }
}

/// [`derive`] with every chain on `backend` (short last groups padded with idle lanes).
#[doc(hidden)]
pub fn derive_on(
    backend: Backend,
    prf: Prf,
    iterations: u32,
    jobs: &mut [Job<'_>],
) -> Result<(), BackendUnavailable> {
    let cpu = Cpu::detect();
    let kernel = backend.kernel();
    let has = match prf {
        Prf::Sha1 => Sha1::has(&cpu, kernel),
        Prf::Sha256 => Sha256::has(&cpu, kernel),
        Prf::Sha512 => Sha512::has(&cpu, kernel),
    };
    if !has {
        return Err(BackendUnavailable {
            backend: backend.name(),
            prf: prf.name(),
        });
    }
    match prf {
        Prf::Sha1 => derive_as::<Sha1>(&cpu, Some(kernel), iterations, jobs),
        Prf::Sha256 => derive_as::<Sha256>(&cpu, Some(kernel), iterations, jobs),
        Prf::Sha512 => derive_as::<Sha512>(&cpu, Some(kernel), iterations, jobs),
    }
    Ok(())
}

/// The plan [`derive`] would run for `chains` chains of `prf`: backend and chains per
/// group, in order (benchmark reports).
#[doc(hidden)]
pub fn plan_for(prf: Prf, chains: usize) -> Vec<(Backend, usize)> {
    plan(&menu_of(prf).items, chains)
        .into_iter()
        .map(|(k, n)| (k.backend(), n))
        .collect()
}

/// A lane kernel as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// The single-stream loop of `crate::pbkdf2` (fastest for this CPU), one chain.
    Single,
    /// The portable single-stream loop, one chain.
    Scalar,
    /// SHA-NI with this many interleaved chains (1..=4), best build for this CPU.
    ShaNi(usize),
    /// SHA-NI with this many interleaved chains (1..=4), baseline build.
    ShaNiBaseline(usize),
    /// AVX2, four 64-bit lanes (SHA-512).
    Avx2X4,
    /// AVX-512, eight 64-bit lanes (SHA-512).
    Avx512X8,
    /// AVX2, eight 32-bit lanes (SHA-1, SHA-256).
    Avx2X8,
    /// AVX-512, sixteen 32-bit lanes (SHA-1, SHA-256).
    Avx512X16,
    /// AVX-512VL, eight 32-bit lanes (SHA-1, SHA-256).
    Avx512VlX8,
}

impl Kernel {
    /// The forced backend that runs this kernel.
    fn backend(self) -> Backend {
        Backend::ALL
            .into_iter()
            .find(|b| b.kernel() == self)
            .unwrap_or(Backend::Single)
    }
}

/// The cost of one single-stream chain: the unit of [`MenuItem::cost`]. Fine enough that
/// a 16-lane group of a slow vector kernel still has a distinct integer cost.
const SINGLE_COST: u32 = 1000;

/// The CPU's kernels, detected once per call.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    #[cfg(target_arch = "x86_64")]
    sha1_ni: Option<crate::arch::x86_64::sha1_ni_x4::Kernels>,
    #[cfg(target_arch = "x86_64")]
    sha256_ni: Option<crate::arch::x86_64::sha256_ni_x4::Kernels>,
    #[cfg(target_arch = "x86_64")]
    avx2: Option<crate::arch::x86_64::sha512_avx2_x4::LanesFn>,
    #[cfg(target_arch = "x86_64")]
    avx512: Option<crate::arch::x86_64::sha512_avx512_x8::LanesFn>,
    /// SHA-1 and SHA-256 in sixteen 32-bit lanes (AVX-512).
    #[cfg(target_arch = "x86_64")]
    lanes16: Option<crate::arch::x86_64::lanes32::Kernels>,
    /// SHA-1 and SHA-256 in eight 32-bit lanes (AVX2).
    #[cfg(target_arch = "x86_64")]
    lanes8: Option<crate::arch::x86_64::lanes32::Kernels>,
    /// SHA-1 and SHA-256 in eight 32-bit lanes with AVX-512VL's rotates and logic.
    #[cfg(target_arch = "x86_64")]
    lanes8vl: Option<crate::arch::x86_64::lanes32::Kernels>,
}

impl Cpu {
    #[cfg(target_arch = "x86_64")]
    fn detect() -> Self {
        use crate::arch::x86_64::{
            sha_avx2_x8, sha_avx512_x16, sha_avx512vl_x8, sha1_ni_x4, sha256_ni_x4, sha512_avx2_x4,
            sha512_avx512_x8,
        };
        Cpu {
            sha1_ni: sha1_ni_x4::detect(),
            sha256_ni: sha256_ni_x4::detect(),
            avx2: sha512_avx2_x4::detect(),
            avx512: sha512_avx512_x8::detect(),
            lanes16: sha_avx512_x16::detect(),
            lanes8: sha_avx2_x8::detect(),
            lanes8vl: sha_avx512vl_x8::detect(),
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn detect() -> Self {
        Cpu::default()
    }
}

/// A hash with lane kernels: what this CPU offers for it and how to run a group.
trait Lanes: Hash {
    /// The kernels this CPU offers the planner for this hash, with their widths; the
    /// single stream first. (Forced runs may use a few more, see [`Lanes::has`].)
    fn offered(cpu: &Cpu) -> Vec<(Kernel, usize)>;
    /// Run PBKDF2 iterations 2..=c on `chains` with `kernel`.
    fn run(cpu: &Cpu, kernel: Kernel, chains: &mut [Chain<Self>], iterations: u32);
    /// Whether this CPU offers `kernel` for this hash (planned or forced).
    fn has(cpu: &Cpu, kernel: Kernel) -> bool;
    /// Where this hash's calibrated menu is kept for the process.
    fn table() -> &'static std::sync::OnceLock<Menu>;
    /// The offered kernels with their measured costs (measured on first use) and their
    /// in-service contest.
    fn menu(cpu: &Cpu) -> &'static Menu {
        Self::table().get_or_init(|| Menu::new(calibrate::measure::<Self>(cpu)))
    }
}

/// Run one chain at a time on the single-stream loop.
fn run_single<H: Hash>(portable: bool, chains: &mut [Chain<H>], iterations: u32) {
    let f = H::single(portable);
    for c in chains {
        f(&c.inner, &c.outer, &mut c.acc, iterations);
    }
}

/// What a CPU offers SHA-1 or SHA-256 (32-bit words): SHA-NI at 2..=4 interleaved chains
/// (one chain is the single stream's job) and 32-bit vector lanes.
#[cfg(target_arch = "x86_64")]
fn offered32(shani: bool, cpu: &Cpu) -> Vec<(Kernel, usize)> {
    let mut menu = vec![(Kernel::Single, 1)];
    if shani {
        menu.extend((2..=4).map(|n| (Kernel::ShaNi(n), n)));
    }
    if let Some(k) = cpu.lanes16 {
        menu.push((Kernel::Avx512X16, k.lanes));
    }
    // Eight lanes: AVX-512VL's build where the CPU has it (never slower than AVX2's:
    // one instruction per rotate and per boolean function), AVX2's otherwise.
    match (cpu.lanes8vl, cpu.lanes8) {
        (Some(k), _) => menu.push((Kernel::Avx512VlX8, k.lanes)),
        (None, Some(k)) => menu.push((Kernel::Avx2X8, k.lanes)),
        (None, None) => {}
    }
    menu
}

/// Whether a CPU offers `kernel` for SHA-1 or SHA-256.
fn has32(shani: bool, cpu: &Cpu, kernel: Kernel) -> bool {
    match kernel {
        Kernel::Single | Kernel::Scalar => true,
        Kernel::ShaNi(n) | Kernel::ShaNiBaseline(n) => shani && (1..=4).contains(&n),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512X16 => cpu.lanes16.is_some(),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2X8 => cpu.lanes8.is_some(),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512VlX8 => cpu.lanes8vl.is_some(),
        _ => {
            let _ = cpu;
            false
        }
    }
}

/// Implements [`Lanes`] for a 32-bit-word hash: `$ni` is its SHA-NI field of [`Cpu`],
/// `$vec` its entry in the 32-bit lane kernels.
macro_rules! lanes32_impl {
    ($hash:ty, $ni:ident, $vec:ident) => {
        impl Lanes for $hash {
            fn offered(cpu: &Cpu) -> Vec<(Kernel, usize)> {
                #[cfg(target_arch = "x86_64")]
                return offered32(cpu.$ni.is_some(), cpu);
                #[cfg(not(target_arch = "x86_64"))]
                {
                    let _ = cpu;
                    vec![(Kernel::Single, 1)]
                }
            }

            fn has(cpu: &Cpu, kernel: Kernel) -> bool {
                #[cfg(target_arch = "x86_64")]
                let shani = cpu.$ni.is_some();
                #[cfg(not(target_arch = "x86_64"))]
                let shani = false;
                has32(shani, cpu, kernel)
            }

            fn table() -> &'static std::sync::OnceLock<Menu> {
                static TABLE: std::sync::OnceLock<Menu> = std::sync::OnceLock::new();
                &TABLE
            }

            fn run(cpu: &Cpu, kernel: Kernel, chains: &mut [Chain<Self>], iterations: u32) {
                #[cfg(target_arch = "x86_64")]
                match (kernel, cpu.$ni) {
                    (Kernel::ShaNi(n @ 1..=4), Some(k)) => {
                        return k.best[n - 1](chains, iterations);
                    }
                    (Kernel::ShaNiBaseline(n @ 1..=4), Some(k)) => {
                        return k.baseline[n - 1](chains, iterations);
                    }
                    _ => {}
                }
                #[cfg(target_arch = "x86_64")]
                let lanes = match kernel {
                    Kernel::Avx512X16 => cpu.lanes16,
                    Kernel::Avx2X8 => cpu.lanes8,
                    Kernel::Avx512VlX8 => cpu.lanes8vl,
                    _ => None,
                };
                #[cfg(target_arch = "x86_64")]
                if let Some(k) = lanes {
                    return (k.$vec)(chains, iterations);
                }
                let _ = cpu;
                run_single(kernel == Kernel::Scalar, chains, iterations);
            }
        }
    };
}

lanes32_impl!(Sha1, sha1_ni, sha1);
lanes32_impl!(Sha256, sha256_ni, sha256);

impl Lanes for Sha512 {
    fn offered(cpu: &Cpu) -> Vec<(Kernel, usize)> {
        let mut menu = vec![(Kernel::Single, 1)];
        #[cfg(target_arch = "x86_64")]
        {
            if cpu.avx512.is_some() {
                menu.push((Kernel::Avx512X8, 8));
            }
            if cpu.avx2.is_some() {
                menu.push((Kernel::Avx2X4, 4));
            }
        }
        let _ = cpu;
        menu
    }

    fn has(cpu: &Cpu, kernel: Kernel) -> bool {
        matches!(kernel, Kernel::Single | Kernel::Scalar)
            || Self::offered(cpu).iter().any(|o| o.0 == kernel)
    }

    fn table() -> &'static std::sync::OnceLock<Menu> {
        static TABLE: std::sync::OnceLock<Menu> = std::sync::OnceLock::new();
        &TABLE
    }

    fn run(cpu: &Cpu, kernel: Kernel, chains: &mut [Chain<Self>], iterations: u32) {
        #[cfg(target_arch = "x86_64")]
        match (kernel, cpu.avx512, cpu.avx2) {
            (Kernel::Avx512X8, Some(k), _) | (Kernel::Avx2X4, _, Some(k)) => {
                return k(chains, iterations);
            }
            _ => {}
        }
        let _ = cpu;
        run_single(kernel == Kernel::Scalar, chains, iterations);
    }
}

/// Split `n` chains into groups minimising the summed group cost: `(kernel, chains)` in
/// order. A group may be narrower than its kernel (idle lanes cost the same as busy ones).
fn plan(menu: &[MenuItem], n: usize) -> Vec<(Kernel, usize)> {
    // best[i] = (cost of the cheapest plan for i chains, menu index of its last group).
    let mut best: Vec<(u64, usize)> = Vec::with_capacity(n + 1);
    best.push((0, 0));
    for i in 1..=n {
        let choice = menu
            .iter()
            .enumerate()
            .map(|(j, o)| (best[i - o.width.min(i)].0 + u64::from(o.cost()), j))
            .min()
            .unwrap_or((u64::MAX, 0));
        best.push(choice);
    }
    let mut groups = Vec::new();
    let mut i = n;
    while i > 0 {
        let Some(o) = menu.get(best[i].1) else { break };
        let take = o.width.min(i);
        groups.push((o.kernel, take));
        i -= take;
    }
    groups.reverse();
    groups
}

/// Derive `jobs` as hash `H`, on `forced` for every chain or on the plan.
fn derive_as<H: Lanes>(cpu: &Cpu, forced: Option<Kernel>, iterations: u32, jobs: &mut [Job<'_>]) {
    let iterations = iterations.max(1);
    let mut chains: Vec<Chain<H>> = Vec::new();
    chain::prepare::<H>(jobs, &mut chains);
    match forced {
        Some(kernel) => H::run(cpu, kernel, &mut chains, iterations),
        None => {
            let menu = H::menu(cpu);
            let mut rest = &mut chains[..];
            // Now and then one full group on a challenger kernel (service.rs): how the
            // choice made at start-up is re-checked on this process's own work.
            if let Some(item) = menu.explore(rest.len(), iterations) {
                let (group, tail) = rest.split_at_mut(menu.items[item].width);
                menu.run::<H>(cpu, item, group, iterations);
                rest = tail;
            }
            for (kernel, take) in plan(&menu.items, rest.len()) {
                let (group, tail) = rest.split_at_mut(take);
                match menu.index_of(kernel) {
                    Some(item) => menu.run::<H>(cpu, item, group, iterations),
                    None => H::run(cpu, kernel, group, iterations),
                }
                rest = tail;
            }
        }
    }
    chain::write_out::<H>(&chains, jobs);
}

#[cfg(test)]
mod tests;
