//! Argon2 block compression G on AVX-512: the BlaMka permutation on 512-bit vectors.
//!
//! A block is 16 zmm vectors, `n_k` = words `8k .. 8k + 8` (the memory order), so row `r`
//! is `n_2r` (its words 0..8) and `n_2r+1` (words 8..16). The whole state fits in the 32
//! zmm registers with room for temporaries, so unlike the AVX2 kernel nothing of it is
//! stored between the row and the column rounds.
//!
//! - Rows, two at a time: P's column step needs `a` = words 0..4 of a row, `b` = 4..8,
//!   `c` = 8..12, `d` = 12..16 in matching lanes, so rows `r` and `r + 1` are gathered with
//!   one `vshufi64x2` each into `a = (a_r | a_r+1)` and so on (eight GB lanes per vector).
//!   The diagonal step rotates `b`, `c`, `d` inside each 256-bit half (`vpermq` with an
//!   immediate); instead of rotating them back, the two-source `vpermt2q` that returns the
//!   rows to memory order undoes the rotation in the same instruction (four per row pair).
//! - Columns need no gathering at all: lane `2j` / `2j + 1` of `n_2r` holds words `2j`,
//!   `2j + 1` of row `r`, which is exactly the word pair of column `j` (columns 0..4 in the
//!   `n_2r`, columns 4..8 in the `n_2r+1`). The column step is lane-wise on rows 0, 2, 4, 6
//!   and on rows 1, 3, 5, 7; the diagonal step pairs the halves of neighbouring rows inside
//!   each 128-bit lane (`vpalignr`, four each way per group of four columns) and renames
//!   `c`.
//! - The rotations are native (`vprorq`; a `vpshufd` for the one by 32, one cycle of
//!   latency less and off the multipliers' units, measured no faster on Zen 5); the
//!   output `Q ^ X ^ Y` (and the old block on later passes of version 0x13) is one or two
//!   `vpternlogq` per vector with `X` and `Y` reloaded from L1 (both were just read, and
//!   keeping `R = X ^ Y` would need 16 more registers than exist).
//! - Latency, not throughput, bounds one compression (a GB is a chain of some 30 cycles;
//!   the ~500 vector operations would issue in about 125 on Zen 5), so the four row pairs
//!   run step by step in lockstep, and so do the two groups of four columns: four GB
//!   chains in flight at every step instead of relying on the out-of-order window to find
//!   them. Measured on Zen 5 in L2: ~260 cycles per block
//!   (Argon2i), 2.0-2.4x the AVX2 kernel.
//! - The first output word goes to the walk's `hint` (the next reference block's
//!   prefetch, for data-dependent addressing) before the other 15 vectors are stored.
//!   Everything is unrolled by macros, and the whole segment walk is instantiated inside
//!   [`fill_avx512`].
//!
//! The previous block is read back from memory (just stored) rather than carried in
//! registers across the walk: carrying it would take 16 of the 32 registers from the
//! rounds for the whole compression (the lockstep rounds use all 16 state vectors plus
//! temporaries) and change the walk's interface shared with the other kernels, and it
//! would buy nothing here: on Zen 5 a 512-bit store, a load of it and an add measured
//! 1.9 cycles in a dependent loop against 1.7 for the add alone (the load is forwarded
//! at almost no latency).

use std::arch::x86_64::*;

use crate::argon2_kernel::block::Block;
use crate::argon2_kernel::walk::{Compress, Segment, fill_segment};

/// The AVX-512 segment filler, if this CPU has AVX-512 F and BW (`vpalignr` on zmm).
pub(crate) fn detect() -> Option<fn(Segment<'_>)> {
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
    {
        Some(fill)
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn fill(s: Segment<'_>) {
    // SAFETY: private; its address escapes only from `detect`, after AVX-512 F and BW
    // were detected.
    unsafe { fill_avx512(s) }
}

#[target_feature(enable = "avx512f,avx512bw")]
fn fill_avx512(s: Segment<'_>) {
    fill_segment(Avx512(()), s);
}

/// Proof that AVX-512 F and BW were detected: constructed only inside [`fill_avx512`].
#[derive(Clone, Copy)]
struct Avx512(());

impl Compress for Avx512 {
    #[inline(always)]
    fn compress(
        self,
        prev: &Block,
        refb: &Block,
        out: &mut Block,
        xor: bool,
        hint: impl FnOnce(u64),
    ) {
        // SAFETY: an `Avx512` value exists only inside `fill_avx512`, reached after
        // detection.
        unsafe { compress::<false>(prev, refb, out, xor, hint) }
    }

    #[inline(always)]
    fn compress_dependent(
        self,
        prev: &Block,
        refb: &Block,
        out: &mut Block,
        xor: bool,
        hint: impl FnOnce(u64),
    ) {
        // SAFETY: as in `compress`.
        unsafe { compress::<true>(prev, refb, out, xor, hint) }
    }

    #[inline(always)]
    fn prefetch(self, block: &Block) {
        let p = block.0.as_ptr().cast::<i8>();
        for line in 0..16 {
            // SAFETY: SSE is part of the x86-64 baseline, and a prefetch never faults (the
            // addresses are inside `block` anyway).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * line)) };
        }
    }
}

/// `a + b + 2 * lo32(a) * lo32(b)` on eight lanes.
macro_rules! blamka {
    ($a:expr, $b:expr) => {{
        let m = _mm512_mul_epu32($a, $b);
        _mm512_add_epi64(_mm512_add_epi64($a, $b), _mm512_add_epi64(m, m))
    }};
}

/// The quarter-round GB on several groups of eight lanes at once, step by step across the
/// groups: one GB is a chain of 28 dependent operations (some 30 cycles), so written one
/// after another the groups leave the vector units mostly idle unless the out-of-order
/// window holds several whole GBs; interleaved, four chains are in flight at every step.
macro_rules! gb {
    ($(($a:ident, $b:ident, $c:ident, $d:ident)),+) => {
        $($a = blamka!($a, $b);)+
        $($d = _mm512_ror_epi64::<32>(_mm512_xor_si512($d, $a));)+
        $($c = blamka!($c, $d);)+
        $($b = _mm512_ror_epi64::<24>(_mm512_xor_si512($b, $c));)+
        $($a = blamka!($a, $b);)+
        $($d = _mm512_ror_epi64::<16>(_mm512_xor_si512($d, $a));)+
        $($c = blamka!($c, $d);)+
        $($b = _mm512_ror_epi64::<63>(_mm512_xor_si512($b, $c));)+
    };
}

/// Rows `2 $p` and `2 $p + 1` (in `$n[4 $p .. 4 $p + 4]`, memory order) gathered into
/// `(a, b, c, d)` of P's column step: `a = (a_r | a_r+1)` and so on.
macro_rules! gather {
    ($n:ident, $p:expr) => {{
        let (lo, hi) = ($n[4 * $p], $n[4 * $p + 2]);
        let a = _mm512_shuffle_i64x2::<0b01_00_01_00>(lo, hi);
        let b = _mm512_shuffle_i64x2::<0b11_10_11_10>(lo, hi);
        let (lo, hi) = ($n[4 * $p + 1], $n[4 * $p + 3]);
        let c = _mm512_shuffle_i64x2::<0b01_00_01_00>(lo, hi);
        let d = _mm512_shuffle_i64x2::<0b11_10_11_10>(lo, hi);
        (a, b, c, d)
    }};
}

/// Diagonals of a row pair: lane i of each 256-bit half meets b[i+1], c[i+2], d[i+3].
macro_rules! diagonals {
    ($b:ident, $c:ident, $d:ident) => {
        $b = _mm512_permutex_epi64::<0b00_11_10_01>($b);
        $c = _mm512_permutex_epi64::<0b01_00_11_10>($c);
        $d = _mm512_permutex_epi64::<0b10_01_00_11>($d);
    };
}

/// A row pair back to memory order, undoing the diagonal rotation in the same `vpermt2q`.
macro_rules! scatter {
    ($n:ident, $p:expr, $undo:ident, $a:ident, $b:ident, $c:ident, $d:ident) => {
        $n[4 * $p] = _mm512_permutex2var_epi64($a, $undo[0], $b);
        $n[4 * $p + 2] = _mm512_permutex2var_epi64($a, $undo[1], $b);
        $n[4 * $p + 1] = _mm512_permutex2var_epi64($c, $undo[2], $d);
        $n[4 * $p + 3] = _mm512_permutex2var_epi64($c, $undo[3], $d);
    };
}

/// `p` unchanged, but opaque to the optimiser (see its use in [`compress`]).
// The asm only passes the pointer through a register; it reads and writes no memory, so
// `nomem` is true (the lint guards against asm that dereferences such a pointer).
#[allow(clippy::pointers_in_nomem_asm_block)]
#[inline(always)]
fn opaque(mut p: *const __m512i) -> *const __m512i {
    // SAFETY: an empty instruction sequence: reads and writes nothing but the register.
    unsafe { std::arch::asm!("/* {0} */", inout(reg) p, options(nomem, nostack, preserves_flags)) };
    p
}

/// G (see the module doc); `out` is XORed into when `xor` (version 0x13, later passes).
/// `X_FIRST`: finish output word 0 before the columns that do not feed it.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn compress<const X_FIRST: bool>(
    prev: &Block,
    refb: &Block,
    out: &mut Block,
    xor: bool,
    hint: impl FnOnce(u64),
) {
    let x = prev.0.as_ptr().cast::<__m512i>();
    let y = refb.0.as_ptr().cast::<__m512i>();
    let o = out.0.as_mut_ptr().cast::<__m512i>();
    // The output reloads X and Y from L1 through pointers the compiler cannot prove equal
    // to `x` and `y`: otherwise it keeps the 32 vectors it loaded at the start live
    // across the rounds, which do not fit beside the state, and spills them to the stack
    // (28 extra stores and reloads per block, measured in the disassembly).
    let (xr, yr) = (opaque(x), opaque(y));
    // SAFETY (every `ld!` and the store in `emit!`): `Block` is 1024 bytes, 64-byte
    // aligned, so vectors 0..16 of each are in bounds and aligned; `out` is exclusively
    // borrowed and distinct from `prev` and `refb` (the borrow checker saw to that).
    macro_rules! ld {
        ($p:expr, $k:expr) => {
            unsafe { _mm512_load_si512($p.add($k)) }
        };
    }
    // Output vector k from its `Q` vector: Q ^ X ^ Y (^ the old block).
    macro_rules! emit {
        ($q:expr, $k:expr) => {{
            let k = $k;
            let mut v = _mm512_ternarylogic_epi64::<0x96>($q, ld!(xr, k), ld!(yr, k));
            if xor {
                v = _mm512_xor_si512(v, ld!(o, k));
            }
            // SAFETY: as for `ld!`.
            unsafe { _mm512_store_si512(o.add(k), v) };
            v
        }};
    }
    // `vpermt2q` indices from the diagonal layout back to memory order: (a | b') and
    // (c' | d') of rows r (low halves) and r + 1 (high halves); index 8.. is the second
    // source. b' was rotated by one lane, c' by two, d' by three.
    let undo = [
        _mm512_setr_epi64(0, 1, 2, 3, 11, 8, 9, 10),
        _mm512_setr_epi64(4, 5, 6, 7, 15, 12, 13, 14),
        _mm512_setr_epi64(2, 3, 0, 1, 9, 10, 11, 8),
        _mm512_setr_epi64(6, 7, 4, 5, 13, 14, 15, 12),
    ];
    let mut n = [
        _mm512_xor_si512(ld!(x, 0), ld!(y, 0)),
        _mm512_xor_si512(ld!(x, 1), ld!(y, 1)),
        _mm512_xor_si512(ld!(x, 2), ld!(y, 2)),
        _mm512_xor_si512(ld!(x, 3), ld!(y, 3)),
        _mm512_xor_si512(ld!(x, 4), ld!(y, 4)),
        _mm512_xor_si512(ld!(x, 5), ld!(y, 5)),
        _mm512_xor_si512(ld!(x, 6), ld!(y, 6)),
        _mm512_xor_si512(ld!(x, 7), ld!(y, 7)),
        _mm512_xor_si512(ld!(x, 8), ld!(y, 8)),
        _mm512_xor_si512(ld!(x, 9), ld!(y, 9)),
        _mm512_xor_si512(ld!(x, 10), ld!(y, 10)),
        _mm512_xor_si512(ld!(x, 11), ld!(y, 11)),
        _mm512_xor_si512(ld!(x, 12), ld!(y, 12)),
        _mm512_xor_si512(ld!(x, 13), ld!(y, 13)),
        _mm512_xor_si512(ld!(x, 14), ld!(y, 14)),
        _mm512_xor_si512(ld!(x, 15), ld!(y, 15)),
    ];
    // Rows: the four row pairs at once.
    let (mut a0, mut b0, mut c0, mut d0) = gather!(n, 0);
    let (mut a1, mut b1, mut c1, mut d1) = gather!(n, 1);
    let (mut a2, mut b2, mut c2, mut d2) = gather!(n, 2);
    let (mut a3, mut b3, mut c3, mut d3) = gather!(n, 3);
    gb!(
        (a0, b0, c0, d0),
        (a1, b1, c1, d1),
        (a2, b2, c2, d2),
        (a3, b3, c3, d3)
    );
    diagonals!(b0, c0, d0);
    diagonals!(b1, c1, d1);
    diagonals!(b2, c2, d2);
    diagonals!(b3, c3, d3);
    gb!(
        (a0, b0, c0, d0),
        (a1, b1, c1, d1),
        (a2, b2, c2, d2),
        (a3, b3, c3, d3)
    );
    scatter!(n, 0, undo, a0, b0, c0, d0);
    scatter!(n, 1, undo, a1, b1, c1, d1);
    scatter!(n, 2, undo, a2, b2, c2, d2);
    scatter!(n, 3, undo, a3, b3, c3, d3);
    // Columns: `x_k` / `y_k` = row k's word pair of columns 0..4 / 4..8, i.e. `(v_2k,
    // v_2k+1)` of each column, in memory order.
    if X_FIRST {
        // Columns 0..4 (the `x`, which hold output word 0) first: word 0 decides the next
        // data-dependent reference, so the walk's prefetch of it is issued while columns
        // 4..8 still compute, not after (the scheduler favours older instructions). With
        // data-independent addressing nothing waits for word 0 but the next block waits for
        // all of this one, and the lockstep order below finishes all of it sooner (Zen 4 in
        // L2: Argon2d 2.5% faster x-first, Argon2i 6% slower).
        let [mut x0, mut x1, mut x2, mut x3] = [n[0], n[2], n[4], n[6]];
        let [mut x4, mut x5, mut x6, mut x7] = [n[8], n[10], n[12], n[14]];
        gb!((x0, x2, x4, x6), (x1, x3, x5, x7));
        // Diagonals: b = (v5, v6) and (v7, v4), c = (v10, v11) and (v8, v9) (a rename),
        // d = (v15, v12) and (v13, v14); `vpalignr` works inside each 128-bit lane, which
        // holds one column's pair.
        let mut xb0 = _mm512_alignr_epi8::<8>(x3, x2);
        let mut xb1 = _mm512_alignr_epi8::<8>(x2, x3);
        let mut xd0 = _mm512_alignr_epi8::<8>(x6, x7);
        let mut xd1 = _mm512_alignr_epi8::<8>(x7, x6);
        gb!((x0, xb0, x5, xd0), (x1, xb1, x4, xd1));
        let first = emit!(x0, 0);
        hint(_mm_cvtsi128_si64(_mm512_castsi512_si128(first)) as u64);
        emit!(x1, 2);
        emit!(_mm512_alignr_epi8::<8>(xb0, xb1), 4);
        emit!(_mm512_alignr_epi8::<8>(xb1, xb0), 6);
        emit!(x4, 8);
        emit!(x5, 10);
        emit!(_mm512_alignr_epi8::<8>(xd1, xd0), 12);
        emit!(_mm512_alignr_epi8::<8>(xd0, xd1), 14);
        let [mut y0, mut y1, mut y2, mut y3] = [n[1], n[3], n[5], n[7]];
        let [mut y4, mut y5, mut y6, mut y7] = [n[9], n[11], n[13], n[15]];
        gb!((y0, y2, y4, y6), (y1, y3, y5, y7));
        let mut yb0 = _mm512_alignr_epi8::<8>(y3, y2);
        let mut yb1 = _mm512_alignr_epi8::<8>(y2, y3);
        let mut yd0 = _mm512_alignr_epi8::<8>(y6, y7);
        let mut yd1 = _mm512_alignr_epi8::<8>(y7, y6);
        gb!((y0, yb0, y5, yd0), (y1, yb1, y4, yd1));
        emit!(y0, 1);
        emit!(y1, 3);
        emit!(_mm512_alignr_epi8::<8>(yb0, yb1), 5);
        emit!(_mm512_alignr_epi8::<8>(yb1, yb0), 7);
        emit!(y4, 9);
        emit!(y5, 11);
        emit!(_mm512_alignr_epi8::<8>(yd1, yd0), 13);
        emit!(_mm512_alignr_epi8::<8>(yd0, yd1), 15);
    } else {
        // Both groups of four columns at once.
        let [
            mut x0,
            mut y0,
            mut x1,
            mut y1,
            mut x2,
            mut y2,
            mut x3,
            mut y3,
        ] = [n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]];
        let [
            mut x4,
            mut y4,
            mut x5,
            mut y5,
            mut x6,
            mut y6,
            mut x7,
            mut y7,
        ] = [n[8], n[9], n[10], n[11], n[12], n[13], n[14], n[15]];
        gb!(
            (x0, x2, x4, x6),
            (x1, x3, x5, x7),
            (y0, y2, y4, y6),
            (y1, y3, y5, y7)
        );
        // Diagonals: b = (v5, v6) and (v7, v4), c = (v10, v11) and (v8, v9) (a rename),
        // d = (v15, v12) and (v13, v14); `vpalignr` works inside each 128-bit lane, which
        // holds one column's pair.
        let mut xb0 = _mm512_alignr_epi8::<8>(x3, x2);
        let mut xb1 = _mm512_alignr_epi8::<8>(x2, x3);
        let mut xd0 = _mm512_alignr_epi8::<8>(x6, x7);
        let mut xd1 = _mm512_alignr_epi8::<8>(x7, x6);
        let mut yb0 = _mm512_alignr_epi8::<8>(y3, y2);
        let mut yb1 = _mm512_alignr_epi8::<8>(y2, y3);
        let mut yd0 = _mm512_alignr_epi8::<8>(y6, y7);
        let mut yd1 = _mm512_alignr_epi8::<8>(y7, y6);
        gb!(
            (x0, xb0, x5, xd0),
            (x1, xb1, x4, xd1),
            (y0, yb0, y5, yd0),
            (y1, yb1, y4, yd1)
        );
        n = [
            x0,
            y0,
            x1,
            y1,
            _mm512_alignr_epi8::<8>(xb0, xb1),
            _mm512_alignr_epi8::<8>(yb0, yb1),
            _mm512_alignr_epi8::<8>(xb1, xb0),
            _mm512_alignr_epi8::<8>(yb1, yb0),
            x4,
            y4,
            x5,
            y5,
            _mm512_alignr_epi8::<8>(xd1, xd0),
            _mm512_alignr_epi8::<8>(yd1, yd0),
            _mm512_alignr_epi8::<8>(xd0, xd1),
            _mm512_alignr_epi8::<8>(yd0, yd1),
        ];
        let first = emit!(n[0], 0);
        hint(_mm_cvtsi128_si64(_mm512_castsi512_si128(first)) as u64);
        emit!(n[2], 2);
        emit!(n[4], 4);
        emit!(n[6], 6);
        emit!(n[8], 8);
        emit!(n[10], 10);
        emit!(n[12], 12);
        emit!(n[14], 14);
        emit!(n[1], 1);
        emit!(n[3], 3);
        emit!(n[5], 5);
        emit!(n[7], 7);
        emit!(n[9], 9);
        emit!(n[11], 11);
        emit!(n[13], 13);
        emit!(n[15], 15);
    }
}
