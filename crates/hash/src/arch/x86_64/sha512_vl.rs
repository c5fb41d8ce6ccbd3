//! SHA-512 PBKDF2 loop with the message schedule in AVX-512VL vectors and the rounds in
//! scalar BMI2 registers.
//!
//! This CPU has no SHA-512 instructions. Scalar SHA-512 rounds are bound by both the
//! dependency chains through `a` and `e` and the integer ALU throughput (about 4.5
//! operations a cycle on Zen 5), so every scalar instruction and every cycle of chain
//! counts. What this file does about it, each measured in cycles per compression with
//! `examples/kernel_cycles.rs` (ARCHITECTURE.md, "Hash kernel"):
//! - The rounds are inline assembly (see `round!`) so that the adds are associated
//!   for a four-cycle chain through `e`; left to itself the compiler produced longer
//!   chains and 20% more cycles.
//! - The message schedule runs four words per 256-bit vector (`vprorq` and `vpternlogq`
//!   make each sigma three instructions), sixteen rounds ahead of its use, with the round
//!   constant added, on the vector units the rounds leave idle; a round only loads its
//!   `W + K`.
//! - The inner and outer compressions run through one copy of the code (a two-trip loop
//!   the compiler may not unroll): two fully unrolled copies (some 5,000 instructions)
//!   overflow the op cache, and decoding them again each time cost about 15%; a call per
//!   compression cost 5% more than the loop.

#![allow(clippy::many_single_char_names, clippy::unreadable_literal)]

use core::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_alignr_epi64, _mm256_ror_epi64, _mm256_set_epi64x,
    _mm256_setzero_si256, _mm256_srli_epi64, _mm256_storeu_si256, _mm256_ternarylogic_epi64,
};

use crate::pbkdf2::soft::K512;

/// Signature of the PBKDF2 loop: (inner state, outer state, U_1 in / XOR out, iterations).
pub(crate) type LoopFn = fn(&[u64; 8], &[u64; 8], &mut [u64; 8], u32);
/// Signature of the multi-block compression (whole 128-byte blocks only).
pub(crate) type BlocksFn = fn(&mut [u64; 8], &[u8]);

/// The AVX-512VL kernels, if this CPU has AVX-512F/VL and BMI1/2.
pub(crate) fn detect() -> Option<(LoopFn, BlocksFn)> {
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
    {
        Some((pbkdf2_loop, compress_blocks))
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn pbkdf2_loop(istate: &[u64; 8], ostate: &[u64; 8], acc: &mut [u64; 8], iterations: u32) {
    // SAFETY: private; its address escapes only from `detect`, after avx512f, avx512vl,
    // bmi1 and bmi2 were detected, the features `loop_vl` enables.
    unsafe { loop_vl(istate, ostate, acc, iterations) }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn compress_blocks(state: &mut [u64; 8], data: &[u8]) {
    // SAFETY: as for `pbkdf2_loop`: only reachable after `detect` checked the features.
    unsafe { blocks_vl(state, data) }
}

/// sigma0 and sigma1 of the message schedule on four words at once (`vprorq` and
/// `vpternlogq` make each three instructions).
macro_rules! sigma {
    (0, $x:expr) => {
        _mm256_ternarylogic_epi64(
            _mm256_ror_epi64($x, 1),
            _mm256_ror_epi64($x, 8),
            _mm256_srli_epi64($x, 7),
            0x96,
        )
    };
    (1, $x:expr) => {
        _mm256_ternarylogic_epi64(
            _mm256_ror_epi64($x, 19),
            _mm256_ror_epi64($x, 61),
            _mm256_srli_epi64($x, 6),
            0x96,
        )
    };
}

/// Four message words W[t..t+4] (t = 16 + 4 * `$s`) from the sixteen before them, kept
/// as a ring of four quads `$q`, and their `W + K` stored into `$wk`.
///
/// W[t] needs sigma1(W[t-2]), so the quad is finished in two halves: the low two words
/// from the previous quad's top two, then the top two from the low two just made.
macro_rules! schedule_quad {
    ($q:ident, $wk:ident, $s:expr) => {{
        let w16 = $q[$s % 4];
        let w12 = $q[($s + 1) % 4];
        let w8 = $q[($s + 2) % 4];
        let w4 = $q[($s + 3) % 4];
        let zero = _mm256_setzero_si256();
        let w15 = _mm256_alignr_epi64(w12, w16, 1);
        let w7 = _mm256_alignr_epi64(w4, w8, 1);
        let mut x = _mm256_add_epi64(_mm256_add_epi64(w16, sigma!(0, w15)), w7);
        x = _mm256_add_epi64(x, _mm256_alignr_epi64(zero, sigma!(1, w4), 2));
        x = _mm256_add_epi64(x, _mm256_alignr_epi64(sigma!(1, x), zero, 2));
        $q[$s % 4] = x;
        let t = 16 + 4 * $s;
        let k = _mm256_set_epi64x(
            K512[t + 3] as i64,
            K512[t + 2] as i64,
            K512[t + 1] as i64,
            K512[t] as i64,
        );
        // SAFETY: `$wk` has 80 u64s and t + 3 < 80, so the 32 bytes at t are in bounds;
        // `storeu` has no alignment requirement.
        unsafe {
            _mm256_storeu_si256(
                $wk.as_mut_ptr().add(t).cast::<__m256i>(),
                _mm256_add_epi64(x, k),
            )
        };
    }};
}

/// One round, in assembly so that the dependency chains are the ones written here.
///
/// - new e = d + h + WK + Ch(e, f, g) + Sigma1(e): d + h + WK is summed before e is known,
///   Ch is `(e & f) | (!e & g)` (two steps from e) and is added to d and h separately, and
///   Sigma1 is added last, so the chain through e is Sigma1's three steps and one add.
///   OpenSSL's round adds T1 to d after T1 is complete: one add fewer, one cycle more.
/// - new a = T1 + Maj(a, b, c) + Sigma0(a), with Maj = `((a ^ b) & (b ^ c)) ^ b` and
///   `b ^ c` carried from the previous round (`$bx` in, the next round's `$nbx` out; the
///   two alternate so no register copy is needed).
///
/// A variant with a four-cycle chain through a as well (Maj as `(a & (b ^ c)) +
/// (c & !(b ^ c))`) costs one more instruction and measured the same.
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident,
     $wk:ident, $bx:ident, $nbx:ident, $i:expr) => {
        // SAFETY: register-only apart from one 8-byte load of `$wk[$i]`: `$wk` points to
        // 80 initialised u64s and `$i` < 80. No stack use; flags are clobbered (the
        // default).
        unsafe {
            core::arch::asm!(
                "add {h}, qword ptr [{wk} + {off}]",
                "add {d}, {h}",
                "andn {t0}, {e}, {g}",
                "mov {t1}, {e}",
                "and {t1}, {f}",
                "or {t0}, {t1}",
                "add {d}, {t0}",
                "add {h}, {t0}",
                "rorx {t0}, {e}, 14",
                "rorx {t1}, {e}, 18",
                "xor {t0}, {t1}",
                "rorx {t1}, {e}, 41",
                "xor {t0}, {t1}",
                "add {d}, {t0}",
                "add {h}, {t0}",
                "mov {nbx}, {a}",
                "xor {nbx}, {b}",
                "and {bx}, {nbx}",
                "xor {bx}, {b}",
                "add {h}, {bx}",
                "rorx {t0}, {a}, 28",
                "rorx {t1}, {a}, 34",
                "xor {t0}, {t1}",
                "rorx {t1}, {a}, 39",
                "xor {t0}, {t1}",
                "add {h}, {t0}",
                a = in(reg) $a,
                b = in(reg) $b,
                d = inout(reg) $d,
                e = in(reg) $e,
                f = in(reg) $f,
                g = in(reg) $g,
                h = inout(reg) $h,
                bx = inout(reg) $bx => _,
                nbx = out(reg) $nbx,
                wk = in(reg) $wk.as_ptr(),
                off = const 8 * $i,
                t0 = out(reg) _,
                t1 = out(reg) _,
                options(pure, readonly, nostack),
            );
        }
    };
}

/// Eight rounds from `$i`, scheduling the words sixteen rounds ahead as it goes.
macro_rules! round8 {
    ($s:ident, $p:ident, $wk:ident, $i:expr) => {{
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = $s;
        let mut bx = b ^ c;
        sched!($p, $wk, $i / 4);
        let mut by: u64;
        round!(a, b, c, d, e, f, g, h, $wk, bx, by, $i);
        round!(h, a, b, c, d, e, f, g, $wk, by, bx, $i + 1);
        round!(g, h, a, b, c, d, e, f, $wk, bx, by, $i + 2);
        round!(f, g, h, a, b, c, d, e, $wk, by, bx, $i + 3);
        sched!($p, $wk, $i / 4 + 1);
        round!(e, f, g, h, a, b, c, d, $wk, bx, by, $i + 4);
        round!(d, e, f, g, h, a, b, c, $wk, by, bx, $i + 5);
        round!(c, d, e, f, g, h, a, b, $wk, bx, by, $i + 6);
        round!(b, c, d, e, f, g, h, a, $wk, by, bx, $i + 7);
        $s = [a, b, c, d, e, f, g, h];
    }};
}

/// Schedule quad `$j` (if it exists; 16 quads make W[16..80]) and store its `W + K`.
macro_rules! sched {
    ($p:ident, $wk:ident, $j:expr) => {{
        if $j < 16 {
            schedule_quad!($p, $wk, $j);
        }
    }};
}

/// One compression of the big-endian message words `$w` into `$state` (a macro: each
/// caller gets its own inlined copy).
macro_rules! compress {
    ($state:expr, $w:expr, $wk:expr) => {{
        let state: &mut [u64; 8] = $state;
        let w: &[u64; 16] = $w;
        let wk: &mut [u64; 80] = $wk;
        let mut p = [_mm256_setzero_si256(); 4];
        for (j, p) in p.iter_mut().enumerate() {
            *p = _mm256_set_epi64x(
                w[4 * j + 3] as i64,
                w[4 * j + 2] as i64,
                w[4 * j + 1] as i64,
                w[4 * j] as i64,
            );
        }
        for (j, wk) in wk.iter_mut().enumerate().take(16) {
            *wk = w[j].wrapping_add(K512[j]);
        }
        let mut s = *state;
        round8!(s, p, wk, 0);
        round8!(s, p, wk, 8);
        round8!(s, p, wk, 16);
        round8!(s, p, wk, 24);
        round8!(s, p, wk, 32);
        round8!(s, p, wk, 40);
        round8!(s, p, wk, 48);
        round8!(s, p, wk, 56);
        round8!(s, p, wk, 64);
        round8!(s, p, wk, 72);
        for (x, v) in state.iter_mut().zip(s) {
            *x = x.wrapping_add(v);
        }
    }};
}

// The Maj carry and the schedule ring are written once more after the last round.
#[allow(unused_assignments)]
#[target_feature(enable = "avx512f,avx512vl,bmi1,bmi2")]
fn loop_vl(istate: &[u64; 8], ostate: &[u64; 8], acc: &mut [u64; 8], iterations: u32) {
    let mut u = *acc;
    let mut x = *acc;
    let mut wk = [0u64; 80];
    // The message block: U (the last digest), then the padding of a 64-byte message
    // after a 128-byte key block, the same for the inner and the outer hash.
    let mut w = [0u64; 16];
    w[8] = 0x8000_0000_0000_0000;
    w[15] = (128 + 64) * 8;
    let states = [istate, ostate];
    for _ in 1..iterations {
        // Inner then outer compression through one copy of the code: two inlined copies
        // (some 5,000 instructions) overflow the op cache, and a call per compression
        // costs more than this loop. The opaque trip count keeps the compiler from
        // unrolling it back into two copies.
        for state in states.iter().take(std::hint::black_box(2)) {
            let mut s = **state;
            w[..8].copy_from_slice(&u);
            compress!(&mut s, &w, &mut wk);
            u = s;
        }
        for (x, u) in x.iter_mut().zip(u) {
            *x ^= u;
        }
    }
    *acc = x;
}

// The Maj carry is written once more after the last round.
#[allow(unused_assignments)]
#[target_feature(enable = "avx512f,avx512vl,bmi1,bmi2")]
fn blocks_vl(state: &mut [u64; 8], data: &[u8]) {
    let mut wk = [0u64; 80];
    for block in data.chunks_exact(128) {
        let mut w = [0u64; 16];
        for (w, b) in w.iter_mut().zip(block.chunks_exact(8)) {
            let mut x = [0u8; 8];
            x.copy_from_slice(b);
            *w = u64::from_be_bytes(x);
        }
        compress!(state, &w, &mut wk);
    }
}
