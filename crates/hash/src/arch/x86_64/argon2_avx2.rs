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
//! is recomputed from L1 where needed instead of stored (see [`compress`]). The first
//! output word goes to the walk's `hint` after the first column pair, so the next
//! reference block's prefetch overlaps the other three, and the whole segment walk is
//! instantiated inside [`fill_avx2`].
//!
//! No AVX-512 kernel: the machine this was written on (AMD Zen 1) has none, and a kernel
//! that cannot be run here cannot be tested here.

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

/// The quarter-round GB on four independent lanes.
macro_rules! gb {
    ($a:ident, $b:ident, $c:ident, $d:ident, $r24:ident, $r16:ident) => {
        $a = blamka!($a, $b);
        $d = _mm256_shuffle_epi32::<0b10_11_00_01>(_mm256_xor_si256($d, $a));
        $c = blamka!($c, $d);
        $b = _mm256_shuffle_epi8(_mm256_xor_si256($b, $c), $r24);
        $a = blamka!($a, $b);
        $d = _mm256_shuffle_epi8(_mm256_xor_si256($d, $a), $r16);
        $c = blamka!($c, $d);
        let t = _mm256_xor_si256($b, $c);
        $b = _mm256_xor_si256(_mm256_srli_epi64::<63>(t), _mm256_add_epi64(t, t));
    };
}

/// P on row `$i` (words `16 i .. 16 i + 16`, four vectors), loaded as `X ^ Y` straight
/// from the input blocks and stored to the state `$q`.
macro_rules! row {
    ($q:ident, $x:ident, $y:ident, $i:expr, $r24:ident, $r16:ident) => {{
        let mut a = _mm256_xor_si256(ld!($x, 4 * $i), ld!($y, 4 * $i));
        let mut b = _mm256_xor_si256(ld!($x, 4 * $i + 1), ld!($y, 4 * $i + 1));
        let mut c = _mm256_xor_si256(ld!($x, 4 * $i + 2), ld!($y, 4 * $i + 2));
        let mut d = _mm256_xor_si256(ld!($x, 4 * $i + 3), ld!($y, 4 * $i + 3));
        gb!(a, b, c, d, $r24, $r16);
        b = _mm256_permute4x64_epi64::<0b00_11_10_01>(b);
        c = _mm256_permute4x64_epi64::<0b01_00_11_10>(c);
        d = _mm256_permute4x64_epi64::<0b10_01_00_11>(d);
        gb!(a, b, c, d, $r24, $r16);
        $q[4 * $i] = a;
        $q[4 * $i + 1] = _mm256_permute4x64_epi64::<0b10_01_00_11>(b);
        $q[4 * $i + 2] = _mm256_permute4x64_epi64::<0b01_00_11_10>(c);
        $q[4 * $i + 3] = _mm256_permute4x64_epi64::<0b00_11_10_01>(d);
    }};
}

/// P on columns `2 $c` (low halves) and `2 $c + 1` (high halves): register `x_k` holds
/// the word pair of row `k`, i.e. `(v_2k, v_2k+1)` of each column. Each result goes
/// straight to the output through `$emit` (no store of the state); evaluates to the
/// output vector `$c`.
macro_rules! columns {
    ($q:ident, $c:expr, $r24:ident, $r16:ident, $emit:ident) => {{
        let (mut x0, mut x1, mut x2, mut x3) = ($q[$c], $q[4 + $c], $q[8 + $c], $q[12 + $c]);
        let (mut x4, mut x5, mut x6, mut x7) = ($q[16 + $c], $q[20 + $c], $q[24 + $c], $q[28 + $c]);
        gb!(x0, x2, x4, x6, $r24, $r16);
        gb!(x1, x3, x5, x7, $r24, $r16);
        // Diagonals: b = (v5, v6) and (v7, v4), c = (v10, v11) and (v8, v9) (a rename),
        // d = (v15, v12) and (v13, v14).
        let mut b0 = _mm256_alignr_epi8::<8>(x3, x2);
        let mut b1 = _mm256_alignr_epi8::<8>(x2, x3);
        let mut d0 = _mm256_alignr_epi8::<8>(x6, x7);
        let mut d1 = _mm256_alignr_epi8::<8>(x7, x6);
        gb!(x0, b0, x5, d0, $r24, $r16);
        gb!(x1, b1, x4, d1, $r24, $r16);
        let first = $emit!($c, x0);
        $emit!(4 + $c, x1);
        $emit!(8 + $c, _mm256_alignr_epi8::<8>(b0, b1));
        $emit!(12 + $c, _mm256_alignr_epi8::<8>(b1, b0));
        $emit!(16 + $c, x4);
        $emit!(20 + $c, x5);
        $emit!(24 + $c, _mm256_alignr_epi8::<8>(d1, d0));
        $emit!(28 + $c, _mm256_alignr_epi8::<8>(d0, d1));
        first
    }};
}

/// G (see the module doc); `out` is XORed into when `xor` (version 0x13, later passes).
///
/// Memory traffic is what limits this kernel on cores that split ymm stores in two (Zen
/// 1 retires one 128-bit store per cycle): the input XOR `R = X ^ Y` is never stored but
/// loaded again where it is needed (loads are twice as cheap), the row results are the
/// only stores of the state, and the column results go straight to `out`. The first
/// output vector is complete after the first column pair, a quarter of the way through
/// the column rounds, so the walk's prefetch of the next reference block (`hint`)
/// overlaps three quarters of them.
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
    row!(q, x, y, 0, r24, r16);
    row!(q, x, y, 1, r24, r16);
    row!(q, x, y, 2, r24, r16);
    row!(q, x, y, 3, r24, r16);
    row!(q, x, y, 4, r24, r16);
    row!(q, x, y, 5, r24, r16);
    row!(q, x, y, 6, r24, r16);
    row!(q, x, y, 7, r24, r16);
    let first = columns!(q, 0, r24, r16, emit);
    hint(_mm256_extract_epi64::<0>(first) as u64);
    columns!(q, 1, r24, r16, emit);
    columns!(q, 2, r24, r16, emit);
    columns!(q, 3, r24, r16, emit);
}
