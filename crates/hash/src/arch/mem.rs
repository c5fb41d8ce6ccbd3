//! Working memory for the memory-hard KDFs: one arena per thread, mapped once, reused.
//!
//! On Linux the arena is an anonymous mapping aligned to 2 MiB and advised
//! `MADV_HUGEPAGE`, so with transparent huge pages in `madvise` or `always` mode a 19 MiB
//! argon2 memory is ten page-table entries instead of 4,864, and TLB misses on the
//! data-dependent reference reads mostly disappear. The arena grows (unmap, map) and is
//! never shrunk by the arena itself; callers drop it for oversized hashes. Elsewhere it is
//! a plain `Vec` of blocks (64-byte aligned by the block type).

use crate::argon2_kernel::block::Block;

/// Alignment and rounding of the mapping: the x86-64 / AArch64 huge page size.
#[cfg(target_os = "linux")]
const HUGE: usize = 2 << 20;

/// How an arena is zeroed after a hash. Which is faster depends on the CPU, and the
/// difference lies mostly in the *next* hash on the same thread, so it is measured in
/// service (`argon2_kernel::select`, the wipe contest), not fixed here:
/// - [`Wipe::InCache`], ordinary stores: the lines the hash just wrote are still in L2/L3,
///   the wipe overwrites them there, and the next hash writes into cached lines. On an
///   Intel Xeon (KVM family 6 model 167, AVX-512, 2 MiB L2) a warm m=19456 t=2
///   verification took 6.1-6.5 ms after it against 9.7-10.1 ms after a streaming wipe
///   (`kdf_runner ours argon2id 19456 2 1 10` on one core, interleaved).
/// - [`Wipe::Streaming`], non-temporal stores: the arena goes to DRAM without being read
///   for ownership, and the cache keeps its other lines. On Zen 3 (AVX2) this measured 7%
///   faster overall than a cached wipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wipe {
    InCache,
    Streaming,
}

impl Wipe {
    /// Its name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Wipe::InCache => "in-cache",
            Wipe::Streaming => "streaming",
        }
    }

    /// The modes this target has, the default first: where nothing is measured (no thread
    /// CPU clock), a cached wipe, which never costs the next hash a read from DRAM.
    pub(crate) const ALL: &'static [Wipe] = if cfg!(target_arch = "x86_64") {
        &[Wipe::InCache, Wipe::Streaming]
    } else {
        &[Wipe::InCache]
    };
}

/// A reusable block buffer (see the module doc).
pub(crate) struct Arena {
    #[cfg(target_os = "linux")]
    map: Option<Mapping>,
    #[cfg(not(target_os = "linux"))]
    vec: Vec<Block>,
}

#[cfg(target_os = "linux")]
struct Mapping {
    ptr: std::ptr::NonNull<Block>,
    /// Capacity in blocks.
    blocks: usize,
    bytes: usize,
}

// SAFETY: the mapping is owned exclusively by the arena (no other pointer to it exists
// outside borrows of the arena), so moving it to another thread is moving a `Vec`.
#[cfg(target_os = "linux")]
unsafe impl Send for Mapping {}

impl Arena {
    /// An empty arena (maps nothing until first use).
    pub(crate) const fn new() -> Arena {
        Arena {
            #[cfg(target_os = "linux")]
            map: None,
            #[cfg(not(target_os = "linux"))]
            vec: Vec::new(),
        }
    }

    /// The first `n` blocks (contents unspecified), growing the arena if needed; `None`
    /// if the memory cannot be had.
    #[cfg(target_os = "linux")]
    pub(crate) fn blocks(&mut self, n: usize) -> Option<&mut [Block]> {
        if self.map.as_ref().is_none_or(|m| m.blocks < n) {
            self.map = None; // unmaps the old one first: never both at once
            self.map = Some(Mapping::new(n)?);
        }
        let m = self.map.as_mut()?;
        // SAFETY: the mapping holds `m.blocks >= n` blocks, readable and writable, every
        // bit pattern is a valid `Block`, and `&mut self` makes this the only reference.
        Some(unsafe { std::slice::from_raw_parts_mut(m.ptr.as_ptr(), n) })
    }

    /// As above, on a `Vec`.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn blocks(&mut self, n: usize) -> Option<&mut [Block]> {
        if self.vec.len() < n {
            self.vec.try_reserve_exact(n - self.vec.len()).ok()?;
            self.vec.resize(n, Block::ZERO);
        }
        self.vec.get_mut(..n)
    }

    /// Bytes held.
    #[cfg(target_os = "linux")]
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.bytes)
    }

    /// Bytes held.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.vec.capacity() * std::mem::size_of::<Block>()
    }

    /// Zero the first `n` blocks (after a hash: no password-derived block stays behind)
    /// the way `how` says (see [`Wipe`]; both leave zeroes, only their speed differs).
    pub(crate) fn wipe(&mut self, n: usize, how: Wipe) {
        if let Some(blocks) = self.blocks_if_present(n) {
            let ptr = blocks.as_mut_ptr();
            #[cfg(target_arch = "x86_64")]
            match how {
                // SAFETY (both): `ptr` points at `blocks.len()` valid, exclusively
                // borrowed blocks.
                Wipe::InCache => unsafe { zero_in_cache(ptr, blocks.len()) },
                Wipe::Streaming => unsafe { zero_streaming(ptr, blocks.len()) },
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                let _ = how;
                // SAFETY: `ptr` points at `blocks.len()` valid, exclusively borrowed blocks.
                // `write_bytes` becomes `memset`.
                unsafe { std::ptr::write_bytes(ptr, 0, blocks.len()) };
            }
            // The fence and `black_box` keep the zeroing from being treated as a dead store.
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            std::hint::black_box(ptr);
        }
    }

    #[cfg(target_os = "linux")]
    fn blocks_if_present(&mut self, n: usize) -> Option<&mut [Block]> {
        let m = self.map.as_mut()?;
        // SAFETY: as in `blocks`, for `min(n, capacity)` blocks.
        Some(unsafe { std::slice::from_raw_parts_mut(m.ptr.as_ptr(), n.min(m.blocks)) })
    }

    #[cfg(not(target_os = "linux"))]
    fn blocks_if_present(&mut self, n: usize) -> Option<&mut [Block]> {
        let len = n.min(self.vec.len());
        self.vec.get_mut(..len)
    }
}

/// Zero `n` blocks at `ptr` with ordinary stores ([`Wipe::InCache`]). Explicit stores
/// rather than `memset`: newer C libraries switch large `memset`s to non-temporal stores.
///
/// # Safety
/// `ptr` must point at `n` valid blocks the caller may write.
#[cfg(target_arch = "x86_64")]
unsafe fn zero_in_cache(ptr: *mut Block, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_setzero_si128, _mm_store_si128};
    let words = n * (std::mem::size_of::<Block>() / 16);
    let p = ptr.cast::<__m128i>();
    // SAFETY: SSE2 is part of the x86-64 baseline.
    let zero = unsafe { _mm_setzero_si128() };
    for i in 0..words {
        // SAFETY: SSE2 is part of the x86-64 baseline; `i < words` keeps the 16-byte
        // aligned store (blocks are 64-byte aligned) inside the caller's `n` blocks.
        unsafe { _mm_store_si128(p.add(i), zero) };
    }
}

/// Zero `n` blocks at `ptr` with non-temporal stores ([`Wipe::Streaming`]).
///
/// # Safety
/// `ptr` must point at `n` valid blocks the caller may write.
#[cfg(target_arch = "x86_64")]
unsafe fn zero_streaming(ptr: *mut Block, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_setzero_si128, _mm_sfence, _mm_stream_si128};
    let words = n * (std::mem::size_of::<Block>() / 16);
    let p = ptr.cast::<__m128i>();
    // SAFETY: SSE2 is part of the x86-64 baseline.
    let zero = unsafe { _mm_setzero_si128() };
    for i in 0..words {
        // SAFETY: SSE2 is part of the x86-64 baseline; `i < words` keeps the 16-byte
        // aligned store (blocks are 64-byte aligned) inside the caller's `n` blocks.
        unsafe { _mm_stream_si128(p.add(i), zero) };
    }
    // Streaming stores are weakly ordered: later ordinary stores (the next hash) must
    // not be overtaken by them.
    // SAFETY: SSE is part of the x86-64 baseline.
    unsafe { _mm_sfence() };
}

#[cfg(target_os = "linux")]
impl Mapping {
    fn new(blocks: usize) -> Option<Mapping> {
        let bytes = blocks
            .checked_mul(std::mem::size_of::<Block>())?
            .checked_next_multiple_of(HUGE)?;
        let padded = bytes.checked_add(HUGE)?;
        // SAFETY: anonymous private mapping of `padded` bytes; the result is checked.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                padded,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let start = raw as usize;
        let aligned = start.next_multiple_of(HUGE);
        let head = aligned - start;
        let tail = padded - head - bytes;
        // SAFETY: both ranges lie inside the mapping just made and are not used again.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((aligned + bytes) as *mut libc::c_void, tail);
            }
            // Advisory only: a kernel without THP returns an error and we carry on.
            libc::madvise(aligned as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        }
        Some(Mapping {
            ptr: std::ptr::NonNull::new(aligned as *mut Block)?,
            blocks: bytes / std::mem::size_of::<Block>(),
            bytes,
        })
    }
}

#[cfg(target_os = "linux")]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the range `new` kept; no borrow of it outlives `&mut self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_26_every_wipe_mode_leaves_only_zeroes() {
        for &how in Wipe::ALL {
            let mut arena = Arena::new();
            for b in arena.blocks(300).unwrap().iter_mut() {
                b.0.fill(u64::MAX);
            }
            // Fewer blocks than held: only those are the hash's, and only those are wiped.
            arena.wipe(257, how);
            let blocks = arena.blocks(300).unwrap();
            assert!(
                blocks[..257].iter().all(|b| b.0.iter().all(|&w| w == 0)),
                "{how:?} left a non-zero word"
            );
            assert!(
                blocks[257..]
                    .iter()
                    .all(|b| b.0.iter().all(|&w| w == u64::MAX))
            );
        }
    }
}
