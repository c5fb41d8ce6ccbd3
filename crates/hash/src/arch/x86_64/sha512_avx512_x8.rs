//! Multi-buffer PBKDF2-HMAC-SHA512 with AVX-512: eight chains, one per 64-bit lane of the
//! zmm registers.
//!
//! This CPU has no SHA-512 instructions, so a single chain is bound by the scalar ALUs.
//! Here the data is transposed: zmm register j holds word j of all eight chains, and every
//! SHA-512 operation is one vector instruction for eight compressions: `vprorq` for the
//! rotations, `vpternlogq` for the three-input XORs, Ch and Maj. State (8), message
//! schedule (16 words, in registers) and temporaries fit the 32 zmm registers. The HMAC
//! states and the running XOR sit in memory and are read once per compression.
//!
//! Fewer than eight chains run with idle (all-zero) lanes; the planner in `batch` decides
//! when that is still worth it over the single-stream loop.

use core::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_ror_epi64, _mm512_set1_epi64, _mm512_setzero_si512,
    _mm512_srli_epi64, _mm512_ternarylogic_epi64, _mm512_xor_si512,
};

use crate::batch::chain::Chain;
use crate::batch::sha::Sha512;
use crate::pbkdf2::soft::K512;

/// A lane kernel: runs PBKDF2 iterations 2..=c on every chain of the slice, in groups of
/// eight (a short last group is padded with idle lanes).
pub(crate) type LanesFn = fn(&mut [Chain<Sha512>], u32);

/// Lanes per group.
pub(crate) const LANES: usize = 8;

/// The 8-lane kernel, if this CPU has AVX-512F.
pub(crate) fn detect() -> Option<LanesFn> {
    if std::arch::is_x86_feature_detected!("avx512f") {
        Some(run)
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn run(chains: &mut [Chain<Sha512>], iterations: u32) {
    for group in chains.chunks_mut(LANES) {
        // SAFETY: `run` is private and its address escapes only from `detect`, after
        // avx512f was detected, the only feature `lanes` enables.
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

/// `x` as eight lanes.
#[target_feature(enable = "avx512f")]
fn splat(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

/// Eight u64 lanes (lane 0 first) to a register.
fn from_lanes(v: [u64; 8]) -> __m512i {
    // SAFETY: `[u64; 8]` and `__m512i` are both 64 bytes of plain integer data; every bit
    // pattern is valid for both.
    unsafe { core::mem::transmute::<[u64; 8], __m512i>(v) }
}

/// A register to its eight u64 lanes (lane 0 first).
fn to_lanes(v: __m512i) -> [u64; 8] {
    // SAFETY: as for `from_lanes`.
    unsafe { core::mem::transmute::<__m512i, [u64; 8]>(v) }
}

/// One round with the eight state registers named in rotated order and `$kw` = K + W.
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $kw:expr) => {{
        let s1 = _mm512_ternarylogic_epi64(
            _mm512_ror_epi64($e, 14),
            _mm512_ror_epi64($e, 18),
            _mm512_ror_epi64($e, 41),
            0x96,
        );
        let ch = _mm512_ternarylogic_epi64($e, $f, $g, 0xCA);
        let t1 = _mm512_add_epi64(_mm512_add_epi64($h, $kw), _mm512_add_epi64(s1, ch));
        let s0 = _mm512_ternarylogic_epi64(
            _mm512_ror_epi64($a, 28),
            _mm512_ror_epi64($a, 34),
            _mm512_ror_epi64($a, 39),
            0x96,
        );
        let maj = _mm512_ternarylogic_epi64($a, $b, $c, 0xE8);
        $d = _mm512_add_epi64($d, t1);
        $h = _mm512_add_epi64(t1, _mm512_add_epi64(s0, maj));
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

/// One compression of the block `msg || padding` into `s` (eight chains at once).
#[target_feature(enable = "avx512f")]
fn compress(s: &mut [__m512i; 8], msg: &[__m512i; 8]) {
    let mut w = [_mm512_setzero_si512(); 16];
    w[..8].copy_from_slice(msg);
    w[8] = splat(PAD8);
    w[15] = splat(BITS);
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *s;
    // Rounds 0..8 see the message, 8..16 only padding (K + W constant).
    let kw = |i: usize| _mm512_add_epi64(w[i], splat(K_BLOCKS[0][i]));
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
            let s0 = _mm512_ternarylogic_epi64(
                _mm512_ror_epi64(w15, 1),
                _mm512_ror_epi64(w15, 8),
                _mm512_srli_epi64(w15, 7),
                0x96,
            );
            let s1 = _mm512_ternarylogic_epi64(
                _mm512_ror_epi64(w2, 19),
                _mm512_ror_epi64(w2, 61),
                _mm512_srli_epi64(w2, 6),
                0x96,
            );
            w[i] = _mm512_add_epi64(
                _mm512_add_epi64(w[i], s0),
                _mm512_add_epi64(w[(i + 9) % 16], s1),
            );
            _mm512_add_epi64(w[i], splat(k[i]))
        };
        rounds8!(a, b, c, d, e, f, g, h, kw, 0);
        rounds8!(a, b, c, d, e, f, g, h, kw, 8);
    }
    for (s, x) in s.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = _mm512_add_epi64(*s, x);
    }
}

#[target_feature(enable = "avx512f")]
fn lanes(chains: &mut [Chain<Sha512>], iterations: u32) {
    // Transpose: register j holds word j of every chain; missing chains are zero lanes.
    let zero = _mm512_setzero_si512();
    let (mut ist, mut ost, mut u) = ([zero; 8], [zero; 8], [zero; 8]);
    for (j, ((ist, ost), u)) in ist.iter_mut().zip(&mut ost).zip(&mut u).enumerate() {
        let (mut i, mut o, mut a) = ([0u64; 8], [0u64; 8], [0u64; 8]);
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
            *x = _mm512_xor_si512(*x, u);
        }
    }
    for (j, x) in acc.into_iter().enumerate() {
        for (chain, word) in chains.iter_mut().zip(to_lanes(x)) {
            chain.acc[j] = word;
        }
    }
}
