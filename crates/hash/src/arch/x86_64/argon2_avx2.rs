//! Argon2 block compression G on AVX2: the BlaMka permutation on 256-bit vectors.
//!
//! A block is 32 ymm vectors. Row rounds take four consecutive vectors per row (words
//! `v0..v3`, `v4..v7`, ...), so the column step of P is lane-wise and the diagonal step
//! rotates `b`, `c`, `d` across lanes with `vpermq`. Column rounds need no cross-lane
//! shuffle at all: the natural vector `k * 4 + c` holds the word pair of column `2c` in
//! its low half and of column `2c + 1` in its high half, so two columns run side by side
//! in the two 128-bit halves; the diagonal step is then two `vpalignr` per pair of
//! registers and a register rename for `c` (one cycle, in-lane, instead of `vpermq`).
//! Everything is unrolled by macros. Sixteen ymm registers hold neither a block nor the
//! previous one, so the state goes through one stack block; the input XOR `R = X ^ Y`
//! is recomputed from L1 where needed instead of stored (see [`compress`]).
//!
//! Latency, not throughput, bounds one compression on Zen 3 (the CPU issue 26 is
//! measured on without AVX-512): a GB is a chain of about 29 cycles (three BlaMka steps
//! of `vpmuludq` + two adds, each followed by a XOR and a rotation) with only four lanes
//! of work per vector, and the ~1,000 vector operations of a block would issue in about
//! 250 cycles on its four vector pipes. Written one row (one GB chain) after another,
//! the out-of-order window holds two or three rows' chains, and a block took ~600 cycles
//! (216 ns at the ~2.8 GHz this guest runs at).
//! So the GBs run step by step in lockstep, as in the AVX-512 kernel: four rows at a
//! time (four chains), then two column pairs at a time (four chains). That needs more
//! than 16 registers, and the compiler spills some state vectors; the spill reloads are
//! mostly folded into operands and Zen 3 has three load ports, so it pays. Measured on
//! Zen 3, argon2id m=19456 t=2, thread CPU per verification, whole processes pinned to
//! one core and interleaved, each step against the one before: two rows in lockstep
//! instead of one 8.46 -> 7.90 ms, four rows 7.63 -> 7.09, two column pairs 7.24 -> 7.04
//! (16-18% in all). Eight rows at once spill more and were 1% slower, three (3 + 3 + 2)
//! 1.7% slower than four; the rotation masks as memory operands (inline `vpshufb` from
//! a static, two registers freed) changed nothing, and plain constants let LLVM turn
//! the rotation by 16 into two shuffles (1.4% slower).
//!
//! The first output word goes to the walk's `hint` after the first two column pairs, so
//! the next reference block's prefetch overlaps the other two (handing it over after one
//! pair, with the others run as one, then two, then one, measured the same), and the
//! whole segment walk is instantiated inside [`fill_avx2`].
//!
//! The AVX-512 kernel (`argon2_avx512.rs`) replaces this one where the CPU has it and it
//! measures faster (`kernel_choice`).

use std::arch::x86_64::*;

use crate::argon2_kernel::block::Block;
use crate::argon2_kernel::walk::{Compress, Segment, fill_segment};

/// The AVX2 segment filler, if this CPU has AVX2.
pub(crate) fn detect() -> Option<fn(Segment<'_>)> {
    if std::arch::is_x86_feature_detected!("avx2") {
        Some(fill)
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn fill(s: Segment<'_>) {
    // SAFETY: private; its address escapes only from `detect`, after AVX2 was detected.
    unsafe { fill_avx2(s) }
}

#[target_feature(enable = "avx2")]
fn fill_avx2(s: Segment<'_>) {
    fill_segment(Avx2(()), s);
}

/// Proof that AVX2 was detected: constructed only inside [`fill_avx2`].
#[derive(Clone, Copy)]
struct Avx2(());

impl Compress for Avx2 {
    #[inline(always)]
    fn compress(
        self,
        prev: &Block,
        refb: &Block,
        out: &mut Block,
        xor: bool,
        hint: impl FnOnce(u64),
    ) {
        // SAFETY: an `Avx2` value exists only inside `fill_avx2`, reached after detection.
        unsafe { compress(prev, refb, out, xor, hint) }
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

/// `a = a + b + 2 * lo32(a) * lo32(b)` on four lanes.
macro_rules! blamka {
    ($a:expr, $b:expr) => {{
        let m = _mm256_mul_epu32($a, $b);
        _mm256_add_epi64(_mm256_add_epi64($a, $b), _mm256_add_epi64(m, m))
    }};
}

/// The quarter-round GB on groups of four lanes, step by step across the groups (two
/// chains in flight at every step; see the module doc).
macro_rules! gb {
    ($r24:ident, $r16:ident; $(($a:ident, $b:ident, $c:ident, $d:ident)),+) => {
        $($a = blamka!($a, $b);)+
        $($d = _mm256_shuffle_epi32::<0b10_11_00_01>(_mm256_xor_si256($d, $a));)+
        $($c = blamka!($c, $d);)+
        $($b = _mm256_shuffle_epi8(_mm256_xor_si256($b, $c), $r24);)+
        $($a = blamka!($a, $b);)+
        $($d = _mm256_shuffle_epi8(_mm256_xor_si256($d, $a), $r16);)+
        $($c = blamka!($c, $d);)+
        $(
            let t = _mm256_xor_si256($b, $c);
            $b = _mm256_xor_si256(_mm256_srli_epi64::<63>(t), _mm256_add_epi64(t, t));
        )+
    };
}

/// P on the rows listed (row `i` is words `16 i .. 16 i + 16`, four vectors, named by the
/// four identifiers after it) in lockstep, loaded as `X ^ Y` straight from the input
/// blocks and stored to the state `$q`.
macro_rules! rows {
    ($q:ident, $x:ident, $y:ident, $r24:ident, $r16:ident;
     $(($i:expr, $a:ident, $b:ident, $c:ident, $d:ident)),+) => {{
        $(
            let k = 4 * $i;
            let mut $a = _mm256_xor_si256(ld!($x, k), ld!($y, k));
            let mut $b = _mm256_xor_si256(ld!($x, k + 1), ld!($y, k + 1));
            let mut $c = _mm256_xor_si256(ld!($x, k + 2), ld!($y, k + 2));
            let mut $d = _mm256_xor_si256(ld!($x, k + 3), ld!($y, k + 3));
        )+
        gb!($r24, $r16; $(($a, $b, $c, $d)),+);
        $(
            $b = _mm256_permute4x64_epi64::<0b00_11_10_01>($b);
            $c = _mm256_permute4x64_epi64::<0b01_00_11_10>($c);
            $d = _mm256_permute4x64_epi64::<0b10_01_00_11>($d);
        )+
        gb!($r24, $r16; $(($a, $b, $c, $d)),+);
        $(
            let k = 4 * $i;
            $q[k] = $a;
            $q[k + 1] = _mm256_permute4x64_epi64::<0b10_01_00_11>($b);
            $q[k + 2] = _mm256_permute4x64_epi64::<0b01_00_11_10>($c);
            $q[k + 3] = _mm256_permute4x64_epi64::<0b00_11_10_01>($d);
        )+
    }};
}

/// P on columns `2 $c .. 2 $c + 4`, two column pairs in lockstep (four GB chains in
/// flight). Register `x_k` holds the word pair of row `k` of columns `2 $c` (low half)
/// and `2 $c + 1` (high half), i.e. `(v_2k, v_2k+1)` of each column; `y_k` the same for
/// columns `2 $c + 2` and `2 $c + 3`. Each result goes straight to the output through
/// `$emit` (no store of the state); evaluates to the output vector `$c`.
macro_rules! columns {
    ($q:ident, $c:expr, $r24:ident, $r16:ident, $emit:ident) => {{
        let c = $c;
        let (mut x0, mut x1, mut x2, mut x3) = ($q[c], $q[4 + c], $q[8 + c], $q[12 + c]);
        let (mut x4, mut x5, mut x6, mut x7) = ($q[16 + c], $q[20 + c], $q[24 + c], $q[28 + c]);
        let (mut y0, mut y1, mut y2, mut y3) = ($q[c + 1], $q[5 + c], $q[9 + c], $q[13 + c]);
        let (mut y4, mut y5, mut y6, mut y7) = ($q[17 + c], $q[21 + c], $q[25 + c], $q[29 + c]);
        gb!($r24, $r16; (x0, x2, x4, x6), (x1, x3, x5, x7), (y0, y2, y4, y6), (y1, y3, y5, y7));
        // Diagonals: b = (v5, v6) and (v7, v4), c = (v10, v11) and (v8, v9) (a rename),
        // d = (v15, v12) and (v13, v14).
        let mut b0 = _mm256_alignr_epi8::<8>(x3, x2);
        let mut b1 = _mm256_alignr_epi8::<8>(x2, x3);
        let mut d0 = _mm256_alignr_epi8::<8>(x6, x7);
        let mut d1 = _mm256_alignr_epi8::<8>(x7, x6);
        let mut e0 = _mm256_alignr_epi8::<8>(y3, y2);
        let mut e1 = _mm256_alignr_epi8::<8>(y2, y3);
        let mut f0 = _mm256_alignr_epi8::<8>(y6, y7);
        let mut f1 = _mm256_alignr_epi8::<8>(y7, y6);
        gb!($r24, $r16; (x0, b0, x5, d0), (x1, b1, x4, d1), (y0, e0, y5, f0), (y1, e1, y4, f1));
        let first = $emit!(c, x0);
        $emit!(4 + c, x1);
        $emit!(8 + c, _mm256_alignr_epi8::<8>(b0, b1));
        $emit!(12 + c, _mm256_alignr_epi8::<8>(b1, b0));
        $emit!(16 + c, x4);
        $emit!(20 + c, x5);
        $emit!(24 + c, _mm256_alignr_epi8::<8>(d1, d0));
        $emit!(28 + c, _mm256_alignr_epi8::<8>(d0, d1));
        $emit!(c + 1, y0);
        $emit!(5 + c, y1);
        $emit!(9 + c, _mm256_alignr_epi8::<8>(e0, e1));
        $emit!(13 + c, _mm256_alignr_epi8::<8>(e1, e0));
        $emit!(17 + c, y4);
        $emit!(21 + c, y5);
        $emit!(25 + c, _mm256_alignr_epi8::<8>(f1, f0));
        $emit!(29 + c, _mm256_alignr_epi8::<8>(f0, f1));
        first
    }};
}

/// G (see the module doc); `out` is XORed into when `xor` (version 0x13, later passes).
///
/// Memory traffic is kept low for cores that split ymm stores in two (Zen 1 retires one
/// 128-bit store per cycle): the input XOR `R = X ^ Y` is never stored but loaded again
/// where it is needed (loads are twice as cheap), the row results are the only stores of
/// the state, and the column results go straight to `out`. The first output vector is
/// complete after the first two column pairs, half way through the column rounds, so the
/// walk's prefetch of the next reference block (`hint`) overlaps the other half.
#[target_feature(enable = "avx2")]
#[inline]
fn compress(prev: &Block, refb: &Block, out: &mut Block, xor: bool, hint: impl FnOnce(u64)) {
    let x = prev.0.as_ptr().cast::<__m256i>();
    let y = refb.0.as_ptr().cast::<__m256i>();
    let o = out.0.as_mut_ptr().cast::<__m256i>();
    // SAFETY (every `ld!` and `st!` below): `Block` is 1024 bytes, 64-byte aligned, so
    // vectors 0..32 of each are in bounds and 32-byte aligned; `out` is exclusively
    // borrowed and distinct from `prev` and `refb` (the borrow checker saw to that).
    macro_rules! ld {
        ($p:expr, $k:expr) => {
            unsafe { _mm256_load_si256($p.add($k)) }
        };
    }
    macro_rules! emit {
        ($k:expr, $v:expr) => {{
            let k = $k;
            let r = _mm256_xor_si256(ld!(x, k), ld!(y, k));
            let r = if xor {
                _mm256_xor_si256(r, ld!(o, k))
            } else {
                r
            };
            let v = _mm256_xor_si256($v, r);
            // SAFETY: as for `ld!`.
            unsafe { _mm256_store_si256(o.add(k), v) };
            v
        }};
    }
    // Byte shuffles for 64-bit rotations right by 24 and 16 (per 128-bit lane). Opaque to
    // the optimiser on purpose: seeing a constant mask, LLVM turns the rotation by 16
    // into `vpshuflw` + `vpshufhw`, two shuffles where one `vpshufb` does, and the
    // shuffle ports are the scarce ones on this kernel.
    let r24 = std::hint::black_box(_mm256_setr_epi8(
        3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10, 3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13,
        14, 15, 8, 9, 10,
    ));
    let r16 = std::hint::black_box(_mm256_setr_epi8(
        2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9, 2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12,
        13, 14, 15, 8, 9,
    ));
    let mut q = [_mm256_setzero_si256(); 32];
    rows!(q, x, y, r24, r16;
        (0, a0, b0, c0, d0), (1, a1, b1, c1, d1), (2, a2, b2, c2, d2), (3, a3, b3, c3, d3));
    rows!(q, x, y, r24, r16;
        (4, a0, b0, c0, d0), (5, a1, b1, c1, d1), (6, a2, b2, c2, d2), (7, a3, b3, c3, d3));
    let first = columns!(q, 0, r24, r16, emit);
    hint(_mm256_extract_epi64::<0>(first) as u64);
    columns!(q, 2, r24, r16, emit);
}
