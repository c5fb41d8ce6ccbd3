//! Our Argon2 (RFC 9106): Argon2d, Argon2i and Argon2id, versions 0x10 and 0x13, any
//! memory, passes, lanes, secret (K) and associated data (X).
//!
//! This module owns the algorithm around the block compression: H0 and the variable-length
//! hash H' (Blake2b from the `blake2` crate: it runs a few times per hash, nothing to gain),
//! the first blocks of each lane, the final XOR and tag, the choice of compression kernel
//! and the per-thread memory. `walk` owns the memory walk (segments, reference indexing,
//! data-independent address blocks), `fill` drives it slice by slice with the chosen
//! kernel, `block` holds the block type all of them share; `soft` is the portable BlaMka
//! compression, `arch/x86_64/argon2_avx2.rs` the AVX2 one and `argon2_avx512.rs` the
//! AVX-512 one, chosen once per process by [`kernel_choice`] (measured, not only
//! detected: AVX-512 is not faster on every CPU that has it).
//!
//! Lanes of one slice are independent; [`LaneExecutor`] (module `lanes`) lets a caller
//! that owns threads run them in parallel: [`Lent`] lends them to threads the caller
//! already has (the hash pool's: no thread is spawned per hash), [`ScopedThreads`] spawns
//! scoped threads (tools and tests), [`Serial`] runs them in turn on the calling thread.
//!
//! Memory: each thread keeps one arena ([`crate::arch::mem::Arena`]: 2 MiB-aligned, huge
//! pages asked for with `madvise`) between hashes and zeroes the part it used after each
//! one, so a verification after the first faults no pages in and leaves no password-derived
//! block behind.

pub(crate) mod block;
pub(crate) mod fill;
mod lanes;
mod select;
pub(crate) mod soft;
pub(crate) mod walk;

use std::cell::{Cell, RefCell};

use blake2::Blake2bVar;
use blake2::digest::{Update, VariableOutput};
use zeroize::Zeroize;

use crate::arch::mem::Arena;
pub use block::{BLOCK_BYTES, BLOCK_WORDS, Block};
pub use lanes::{LaneExecutor, LaneWork, Lent, ScopedThreads, Serial};
pub use select::{
    KernelChoice, KernelTiming, kernel_choice, kernel_in_service, kernels_in_service,
    wipes_in_service,
};

/// Largest arena (in blocks) a thread keeps between hashes: 256 MiB. A larger hash maps
/// its own memory and unmaps it afterwards, so one huge imported hash does not pin
/// gigabytes per thread for the life of the process.
pub const RETAIN_MAX_BLOCKS: usize = 256 * 1024;

/// Argon2 variant (the `y` of RFC 9106).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Argon2d: data-dependent addressing.
    D = 0,
    /// Argon2i: data-independent addressing.
    I = 1,
    /// Argon2id: independent for the first half of the first pass, dependent after.
    Id = 2,
}

/// Argon2 version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// 0x10: later passes overwrite blocks.
    V0x10 = 0x10,
    /// 0x13 (RFC 9106): later passes XOR into the old block.
    V0x13 = 0x13,
}

/// Parameters of one hash.
#[derive(Debug, Clone, Copy)]
pub struct Params<'a> {
    /// Variant.
    pub variant: Variant,
    /// Version.
    pub version: Version,
    /// Memory in KiB (blocks); at least 8 per lane.
    pub m_cost: u32,
    /// Passes; at least 1.
    pub t_cost: u32,
    /// Lanes; 1..=2^24-1.
    pub p_cost: u32,
    /// Secret value K (may be empty).
    pub secret: &'a [u8],
    /// Associated data X (may be empty).
    pub ad: &'a [u8],
}

/// Why a hash could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Argon2Error {
    /// Parameters outside RFC 9106's ranges.
    #[error("argon2 parameters: {0}")]
    Params(&'static str),
    /// The memory could not be allocated.
    #[error("argon2: cannot allocate {0} KiB")]
    Alloc(usize),
}

/// Which compression kernel runs the block fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The one [`kernel_choice`] picked on this CPU.
    Auto,
    /// Portable scalar code (any CPU).
    Portable,
    /// AVX2 (x86-64 CPUs that have it; falls back to portable elsewhere).
    Avx2,
    /// AVX-512 F and BW (x86-64 CPUs that have them; falls back to portable elsewhere).
    Avx512,
}

impl Backend {
    /// Short name (`"avx512"`, `"avx2"`, `"portable"`); `Auto` names what it resolves to.
    pub fn name(self) -> &'static str {
        match self.resolve() {
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
            _ => "portable",
        }
    }

    /// The concrete kernel this CPU runs for `self` (for `Auto`: the in-service choice).
    pub fn resolve(self) -> Backend {
        match self {
            Backend::Auto => kernel_in_service(),
            Backend::Avx2 if fill::avx2_available() => Backend::Avx2,
            Backend::Avx512 if fill::avx512_available() => Backend::Avx512,
            _ => Backend::Portable,
        }
    }
}

/// Every concrete kernel this CPU can run, portable first.
pub fn backends() -> Vec<Backend> {
    let mut v = vec![Backend::Portable];
    if fill::avx2_available() {
        v.push(Backend::Avx2);
    }
    if fill::avx512_available() {
        v.push(Backend::Avx512);
    }
    v
}

thread_local! {
    static ARENA: RefCell<Arena> = const { RefCell::new(Arena::new()) };
    /// The last timed wipe of this thread's arena: (wipe contest arm, its thread CPU
    /// nanoseconds, blocks wiped), until the next hash records it (select.rs).
    static LAST_WIPE: Cell<Option<(usize, u64, usize)>> = const { Cell::new(None) };
}

/// Number of blocks a hash with `m_cost` and `p_cost` uses (m' of RFC 9106).
pub fn block_count(m_cost: u32, p_cost: u32) -> usize {
    let p = p_cost.max(1) as usize;
    (m_cost as usize / (4 * p)) * 4 * p
}

fn check(params: &Params<'_>, pwd: &[u8], salt: &[u8], out: &[u8]) -> Result<(), Argon2Error> {
    let fits = |n: usize| u32::try_from(n).is_ok();
    if params.p_cost == 0 || params.p_cost >= 1 << 24 {
        return Err(Argon2Error::Params("lanes outside 1..2^24"));
    }
    if params.t_cost == 0 {
        return Err(Argon2Error::Params("passes must be at least 1"));
    }
    if u64::from(params.m_cost) < 8 * u64::from(params.p_cost) {
        return Err(Argon2Error::Params("memory below 8 KiB per lane"));
    }
    if out.len() < 4 || !fits(out.len()) {
        return Err(Argon2Error::Params("tag length below 4 bytes"));
    }
    if !(fits(pwd.len()) && fits(salt.len()) && fits(params.secret.len()) && fits(params.ad.len()))
    {
        return Err(Argon2Error::Params("input longer than 2^32-1 bytes"));
    }
    Ok(())
}

/// Compute the tag of `pwd` and `salt` into `out` (its length is the tag length) with the
/// calling thread's reused arena. Lanes run through `lanes`.
pub fn hash_into(
    params: &Params<'_>,
    pwd: &[u8],
    salt: &[u8],
    out: &mut [u8],
    backend: Backend,
    lanes: &dyn LaneExecutor,
) -> Result<(), Argon2Error> {
    check(params, pwd, salt, out)?;
    let n = block_count(params.m_cost, params.p_cost);
    // `retained`: `arena` is this thread's own, kept between hashes.
    let mut run = |arena: &mut Arena, retained: bool| -> Result<(), Argon2Error> {
        let memory = arena.blocks(n).ok_or(Argon2Error::Alloc(n))?;
        if backend == Backend::Auto {
            // The first automatic hash of the process measures the kernels in its own
            // memory (select.rs); the hash then overwrites it.
            select::kernel_choice_in(memory);
        }
        // One lane runs wholly on this thread, so its thread CPU time is the hash's: an
        // automatic hash then feeds the in-service kernel contest (select.rs).
        let (kernel, timed) = match backend {
            Backend::Auto if params.p_cost == 1 => select::auto_pick(n),
            _ => (backend.resolve(), None),
        };
        // Automatic one-lane hashes large enough to time well are timed (thread CPU):
        // for the kernel contest when there is one, and for the wipe contest.
        let measured =
            backend == Backend::Auto && params.p_cost == 1 && n >= select::MIN_TIMED_BLOCKS;
        let start = measured.then(crate::thread_cpu_ns).flatten();
        hash_in(params, pwd, salt, out, kernel, lanes, memory);
        let end = start.and_then(|_| crate::thread_cpu_ns());
        // The previous wipe of this thread's arena, recorded with this hash (what it cost
        // shows here) when this one ran the kernel in service on the same memory size.
        let previous = if retained { LAST_WIPE.take() } else { None };
        if let (Some(start), Some(end)) = (start, end) {
            let ns = end.saturating_sub(start);
            let in_service = timed.is_none_or(|k| select::auto_record(k, ns, n));
            if let Some((arm, wipe_ns, _)) = previous.filter(|p| p.2 == n && in_service) {
                select::wipe_record(arm, wipe_ns + ns, n);
            }
        }
        let (how, arm) = match end {
            Some(_) if retained => select::wipe_pick(),
            _ => (select::wipe_in_service(), None),
        };
        let wipe_start = arm.and_then(|_| crate::thread_cpu_ns());
        arena.wipe(n, how);
        if let (Some(arm), Some(s), Some(e)) = (arm, wipe_start, crate::thread_cpu_ns()) {
            LAST_WIPE.set(Some((arm, e.saturating_sub(s), n)));
        }
        Ok(())
    };
    if n > RETAIN_MAX_BLOCKS {
        return run(&mut Arena::new(), false);
    }
    ARENA.with(|cell| match cell.try_borrow_mut() {
        Ok(mut arena) => run(&mut arena, true),
        // Re-entered on this thread (a lane executor that runs a hash inside a job):
        // a memory of its own.
        Err(_) => run(&mut Arena::new(), false),
    })
}

/// Bytes of memory this thread's arena holds between hashes (what it keeps mapped).
pub fn thread_arena_bytes() -> usize {
    ARENA.with(|cell| cell.try_borrow().map_or(0, |a| a.capacity_bytes()))
}

/// Unmap this thread's arena (the next hash maps a new one). The hash pool calls it when
/// keeping the arena would hold memory its budget no longer allows.
pub fn release_thread_arena() {
    ARENA.with(|cell| {
        if let Ok(mut arena) = cell.try_borrow_mut() {
            *arena = Arena::new();
        }
    });
}

/// Page faults are only taken once per thread; callers that measure them (the bench)
/// fault the arena in first with this.
pub fn warm_thread_arena(m_cost: u32, p_cost: u32) -> Result<(), Argon2Error> {
    let n = block_count(m_cost, p_cost);
    if n > RETAIN_MAX_BLOCKS {
        return Ok(());
    }
    ARENA.with(|cell| match cell.try_borrow_mut() {
        Ok(mut arena) => arena.blocks(n).map(|_| ()).ok_or(Argon2Error::Alloc(n)),
        Err(_) => Ok(()),
    })
}

/// The whole hash in `memory` (exactly m' blocks, any content).
fn hash_in(
    params: &Params<'_>,
    pwd: &[u8],
    salt: &[u8],
    out: &mut [u8],
    backend: Backend,
    lanes: &dyn LaneExecutor,
    memory: &mut [Block],
) {
    let mut h0 = initial_hash(params, pwd, salt, out.len());
    let p = params.p_cost as usize;
    let lane_len = memory.len() / p;
    let mut input = [0u8; 72];
    input[..64].copy_from_slice(&h0);
    let mut bytes = [0u8; BLOCK_BYTES];
    for (lane, lane_blocks) in memory.chunks_exact_mut(lane_len).enumerate() {
        input[68..72].copy_from_slice(&(lane as u32).to_le_bytes());
        for (i, block) in lane_blocks.iter_mut().take(2).enumerate() {
            input[64..68].copy_from_slice(&(i as u32).to_le_bytes());
            h_prime(&[&input], &mut bytes);
            *block = Block::from_bytes(&bytes);
        }
    }
    input.zeroize();
    bytes.zeroize();
    h0.zeroize();

    let geometry = fill::Geometry {
        variant: params.variant,
        xor_later_passes: params.version == Version::V0x13,
        lanes: params.p_cost,
        lane_len: lane_len as u32,
        passes: params.t_cost,
    };
    fill::fill_memory(&geometry, memory, backend, lanes);

    let mut last = memory[lane_len - 1];
    for lane in 1..p {
        last.xor_assign(&memory[lane * lane_len + lane_len - 1]);
    }
    let mut c = [0u8; BLOCK_BYTES];
    for (dst, w) in c.chunks_exact_mut(8).zip(last.0.iter()) {
        dst.copy_from_slice(&w.to_le_bytes());
    }
    h_prime(&[&c], out);
    c.zeroize();
    last.0.zeroize();
}

/// H0 of RFC 9106 section 3.2, step 1.
fn initial_hash(params: &Params<'_>, pwd: &[u8], salt: &[u8], tag_len: usize) -> [u8; 64] {
    let le = |n: usize| (n as u32).to_le_bytes();
    let mut h = blake2b(64);
    for word in [
        params.p_cost,
        tag_len as u32,
        params.m_cost,
        params.t_cost,
        params.version as u32,
        params.variant as u32,
    ] {
        h.update(&word.to_le_bytes());
    }
    for field in [pwd, salt, params.secret, params.ad] {
        h.update(&le(field.len()));
        h.update(field);
    }
    let mut out = [0u8; 64];
    finish(h, &mut out);
    out
}

/// Blake2b with an output of `len` bytes (1..=64, always so here).
fn blake2b(len: usize) -> Blake2bVar {
    match Blake2bVar::new(len) {
        Ok(h) => h,
        // Unreachable: every caller passes 1..=64.
        Err(_) => unreachable!("blake2b output length {len}"),
    }
}

fn finish(h: Blake2bVar, out: &mut [u8]) {
    // The length matches the one the hasher was built with.
    if h.finalize_variable(out).is_err() {
        unreachable!("blake2b output length mismatch");
    }
}

/// H' (RFC 9106 section 3.3) of the concatenation of `parts` into `out`.
fn h_prime(parts: &[&[u8]], out: &mut [u8]) {
    let t = out.len();
    let mut h = blake2b(t.min(64));
    h.update(&(t as u32).to_le_bytes());
    for part in parts {
        h.update(part);
    }
    if t <= 64 {
        finish(h, out);
        return;
    }
    let mut v = [0u8; 64];
    finish(h, &mut v);
    let mut pos = 0;
    // r = ceil(t / 32) - 2 blocks of 32 bytes, then the last t - 32 r (33..=64) in one.
    loop {
        out[pos..pos + 32].copy_from_slice(&v[..32]);
        pos += 32;
        let remaining = t - pos;
        let mut h = blake2b(remaining.min(64));
        h.update(&v);
        if remaining <= 64 {
            finish(h, &mut out[pos..]);
            v.zeroize();
            return;
        }
        finish(h, &mut v);
    }
}

#[cfg(test)]
mod tests;
