//! Multi-buffer PBKDF2-HMAC-SHA512 with AVX2: four chains, one per 64-bit lane of the
//! ymm registers. The fallback for CPUs with AVX2 but without AVX-512.
//!
//! Same transposed layout as `sha512_avx512_x8` (register j holds word j of every chain).
//! AVX2 has no 64-bit rotate and no three-input logic, so rotations are two shifts and an
//! OR (a byte shuffle for the rotation by 8), and Ch/Maj are spelled out. With sixteen ymm
//! registers the message schedule lives on the stack; the loads are cheap next to the
//! ALU work.
//!
//! Fewer than four chains run with idle (all-zero) lanes; the planner in `batch` decides
//! when that is still worth it over the single-stream loop.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_or_si256, _mm256_set_epi64x,
    _mm256_set1_epi64x, _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_slli_epi64,
    _mm256_srli_epi64, _mm256_xor_si256,
};

use crate::batch::chain::Chain;
use crate::batch::sha::Sha512;
use crate::pbkdf2::soft::K512;

/// A lane kernel: runs PBKDF2 iterations 2..=c on every chain of the slice, in groups of
/// four (a short last group is padded with idle lanes).
pub(crate) type LanesFn = fn(&mut [Chain<Sha512>], u32);

/// Lanes per group.
pub(crate) const LANES: usize = 4;

/// The 4-lane kernel, if this CPU has AVX2.
pub(crate) fn detect() -> Option<LanesFn> {
    if std::arch::is_x86_feature_detected!("avx2") {
        Some(run)
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn run(chains: &mut [Chain<Sha512>], iterations: u32) {
    for group in chains.chunks_mut(LANES) {
        // SAFETY: `run` is private and its address escapes only from `detect`, after
        // avx2 was detected, the only feature `lanes` enables.
        unsafe { lanes(group, iterations) }
    }
}
/// The round constants in blocks of sixteen, so the unrolled chunks index them statically.
const K_BLOCKS: [[u64; 16]; 5] = {
    let mut t = [[0u64; 16]; 5];
    let mut i = 0;
    while i < 80 {
        t[i / 16][i % 16] = K512[i];
        i += 1;
    }
    t
};

/// Padding of a 128 + 64 byte message: word 8 is the 0x80 byte, word 15 the bit length.
const PAD8: u64 = 0x8000_0000_0000_0000;
const BITS: u64 = (128 + 64) * 8;

/// `x` in every lane.
#[target_feature(enable = "avx2")]
fn splat(x: u64) -> __m256i {
    _mm256_set1_epi64x(x as i64)
}

/// Four u64 lanes (lane 0 first) to a register.
fn from_lanes(v: [u64; 4]) -> __m256i {
    // SAFETY: `[u64; 4]` and `__m256i` are both 32 bytes of plain integer data; every bit
    // pattern is valid for both.
    unsafe { core::mem::transmute::<[u64; 4], __m256i>(v) }
}

/// A register to its four u64 lanes (lane 0 first).
fn to_lanes(v: __m256i) -> [u64; 4] {
    // SAFETY: as for `from_lanes`.
    unsafe { core::mem::transmute::<__m256i, [u64; 4]>(v) }
}

/// Rotate every lane right by `$n` bits.
macro_rules! ror {
    ($x:expr, 8) => {
        // A whole-byte rotation is one shuffle: byte i of each qword takes byte i + 1.
        _mm256_shuffle_epi8(
            $x,
            _mm256_set_epi64x(
                0x080F_0E0D_0C0B_0A09,
                0x0007_0605_0403_0201,
                0x080F_0E0D_0C0B_0A09,
                0x0007_0605_0403_0201,
            ),
        )
    };
    ($x:expr, $n:literal) => {{
        let x = $x;
        _mm256_or_si256(
            _mm256_srli_epi64::<$n>(x),
            _mm256_slli_epi64::<{ 64 - $n }>(x),
        )
    }};
}

/// Three-way XOR.
macro_rules! xor3 {
    ($x:expr, $y:expr, $z:expr) => {
        _mm256_xor_si256(_mm256_xor_si256($x, $y), $z)
    };
}

/// One round with the eight state registers named in rotated order and `$kw` = K + W.
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $kw:expr) => {{
        let s1 = xor3!(ror!($e, 14), ror!($e, 18), ror!($e, 41));
        // Ch(e, f, g) = ((f ^ g) & e) ^ g
        let ch = _mm256_xor_si256(_mm256_and_si256(_mm256_xor_si256($f, $g), $e), $g);
        let t1 = _mm256_add_epi64(_mm256_add_epi64($h, $kw), _mm256_add_epi64(s1, ch));
        let s0 = xor3!(ror!($a, 28), ror!($a, 34), ror!($a, 39));
        // Maj(a, b, c) = (a & b) | (c & (a | b))
        let maj = _mm256_or_si256(
            _mm256_and_si256($a, $b),
            _mm256_and_si256($c, _mm256_or_si256($a, $b)),
        );
        $d = _mm256_add_epi64($d, t1);
        $h = _mm256_add_epi64(t1, _mm256_add_epi64(s0, maj));
    }};
}

/// Eight rounds, the register names rotating by one each round; `$kw(i)` gives K + W for
/// round `$o + i` of the current sixteen.
macro_rules! rounds8 {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $kw:ident, $o:expr) => {{
        round!($a, $b, $c, $d, $e, $f, $g, $h, $kw($o));
        round!($h, $a, $b, $c, $d, $e, $f, $g, $kw($o + 1));
        round!($g, $h, $a, $b, $c, $d, $e, $f, $kw($o + 2));
        round!($f, $g, $h, $a, $b, $c, $d, $e, $kw($o + 3));
        round!($e, $f, $g, $h, $a, $b, $c, $d, $kw($o + 4));
        round!($d, $e, $f, $g, $h, $a, $b, $c, $kw($o + 5));
        round!($c, $d, $e, $f, $g, $h, $a, $b, $kw($o + 6));
        round!($b, $c, $d, $e, $f, $g, $h, $a, $kw($o + 7));
    }};
}

/// One compression of the block `msg || padding` into `s` (four chains at once).
#[target_feature(enable = "avx2")]
fn compress(s: &mut [__m256i; 8], msg: &[__m256i; 8]) {
    let mut w = [_mm256_setzero_si256(); 16];
    w[..8].copy_from_slice(msg);
    w[8] = splat(PAD8);
    w[15] = splat(BITS);
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *s;
    // Rounds 0..8 see the message, 8..16 only padding (K + W constant).
    let kw = |i: usize| _mm256_add_epi64(w[i], splat(K_BLOCKS[0][i]));
    rounds8!(a, b, c, d, e, f, g, h, kw, 0);
    let kw = |i: usize| {
        let pad = match i {
            8 => PAD8,
            15 => BITS,
            _ => 0,
        };
        splat(K_BLOCKS[0][i].wrapping_add(pad))
    };
    rounds8!(a, b, c, d, e, f, g, h, kw, 8);
    for k in &K_BLOCKS[1..] {
        // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], in a ring of sixteen.
        let mut kw = |i: usize| {
            let w15 = w[(i + 1) % 16];
            let w2 = w[(i + 14) % 16];
            let s0 = xor3!(ror!(w15, 1), ror!(w15, 8), _mm256_srli_epi64::<7>(w15));
            let s1 = xor3!(ror!(w2, 19), ror!(w2, 61), _mm256_srli_epi64::<6>(w2));
            w[i] = _mm256_add_epi64(
                _mm256_add_epi64(w[i], s0),
                _mm256_add_epi64(w[(i + 9) % 16], s1),
            );
            _mm256_add_epi64(w[i], splat(k[i]))
        };
        rounds8!(a, b, c, d, e, f, g, h, kw, 0);
        rounds8!(a, b, c, d, e, f, g, h, kw, 8);
    }
    for (s, x) in s.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = _mm256_add_epi64(*s, x);
    }
}

#[target_feature(enable = "avx2")]
fn lanes(chains: &mut [Chain<Sha512>], iterations: u32) {
    // Transpose: register j holds word j of every chain; missing chains are zero lanes.
    let zero = _mm256_setzero_si256();
    let (mut ist, mut ost, mut u) = ([zero; 8], [zero; 8], [zero; 8]);
    for (j, ((ist, ost), u)) in ist.iter_mut().zip(&mut ost).zip(&mut u).enumerate() {
        let (mut i, mut o, mut a) = ([0u64; 4], [0u64; 4], [0u64; 4]);
        for (l, chain) in chains.iter().enumerate().take(LANES) {
            i[l] = chain.inner[j];
            o[l] = chain.outer[j];
            a[l] = chain.acc[j];
        }
        *ist = from_lanes(i);
        *ost = from_lanes(o);
        *u = from_lanes(a);
    }
    let mut acc = u;
    for _ in 1..iterations {
        // The same code serves the inner and the outer compression (one copy in the
        // instruction cache): the digest of one is the message of the next.
        for base in [&ist, &ost] {
            let mut s = *base;
            compress(&mut s, &u);
            u = s;
        }
        for (x, u) in acc.iter_mut().zip(u) {
            *x = _mm256_xor_si256(*x, u);
        }
    }
    for (j, x) in acc.into_iter().enumerate() {
        for (chain, word) in chains.iter_mut().zip(to_lanes(x)) {
            chain.acc[j] = word;
        }
    }
}
