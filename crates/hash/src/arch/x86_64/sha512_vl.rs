//! SHA-512 PBKDF2 loop with the message schedule in AVX-512VL vectors and the rounds in
//! scalar BMI2 registers.
//!
//! This CPU has no SHA-512 instructions, and scalar SHA-512 is bound by ALU throughput,
//! not latency: about a third of the scalar instructions are the message schedule. Here
//! the schedule runs two words per 128-bit vector (`vprorq` and `vpternlogq` make each
//! sigma three instructions), sixteen rounds ahead of its use, with the round constant
//! already added; the scalar rounds only load `W + K`. Same structure as OpenSSL's
//! AVX2 SHA-512, on one block at a time because each PBKDF2 block depends on the last.

#![allow(clippy::many_single_char_names, clippy::unreadable_literal)]

use core::arch::x86_64::{
    __m128i, _mm_add_epi64, _mm_alignr_epi8, _mm_ror_epi64, _mm_set_epi64x, _mm_srli_epi64,
    _mm_storeu_si128, _mm_ternarylogic_epi64,
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

/// Two message words (lane 0 first) from the sixteen before them, `$p` the ring of
/// eight pairs and `$j` the pair index (8..40).
macro_rules! schedule_pair {
    ($p:ident, $j:expr) => {{
        let w16 = $p[($j - 8) % 8];
        let w15 = _mm_alignr_epi8($p[($j - 7) % 8], w16, 8);
        let w7 = _mm_alignr_epi8($p[($j - 3) % 8], $p[($j - 4) % 8], 8);
        let w2 = $p[($j - 1) % 8];
        let s0 = _mm_ternarylogic_epi64(
            _mm_ror_epi64(w15, 1),
            _mm_ror_epi64(w15, 8),
            _mm_srli_epi64(w15, 7),
            0x96,
        );
        let s1 = _mm_ternarylogic_epi64(
            _mm_ror_epi64(w2, 19),
            _mm_ror_epi64(w2, 61),
            _mm_srli_epi64(w2, 6),
            0x96,
        );
        $p[$j % 8] = _mm_add_epi64(_mm_add_epi64(w16, s0), _mm_add_epi64(w7, s1));
    }};
}

/// Store `W + K` for pair `$j` into `$wk`.
macro_rules! store_wk {
    ($p:ident, $wk:ident, $j:expr) => {{
        let k = _mm_set_epi64x(K512[2 * $j + 1] as i64, K512[2 * $j] as i64);
        let v = _mm_add_epi64($p[$j % 8], k);
        // SAFETY: `$wk` has 80 u64s and 2 * $j + 1 < 80, so the 16 bytes at 2 * $j are in
        // bounds; `storeu` has no alignment requirement.
        unsafe { _mm_storeu_si128($wk.as_mut_ptr().add(2 * $j).cast::<__m128i>(), v) };
    }};
}

macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident,
     $wk:ident, $bc:ident, $i:expr) => {
        // h + W + K and d + h + W + K do not depend on e, so the new e is two adds
        // after Sigma1(e) and Ch(e, f, g) (a shorter chain than d + t1).
        let hk = $h.wrapping_add(
            // SAFETY: `$wk` has 80 initialised u64s and `$i` < 80. The read is volatile
            // so it stays a memory operand of the add (as in OpenSSL): forwarding the
            // vector store through lane extracts measured ~3% slower.
            unsafe { core::ptr::read_volatile($wk.as_ptr().add($i)) },
        );
        let ch = $g ^ ($e & ($f ^ $g));
        let s1 = $e.rotate_right(14) ^ $e.rotate_right(18) ^ $e.rotate_right(41);
        // Maj(a, b, c) = b ^ ((a ^ b) & (b ^ c)); this round's a ^ b is the next one's b ^ c.
        let ab = $a ^ $b;
        let t2 = ($a.rotate_right(28) ^ $a.rotate_right(34) ^ $a.rotate_right(39))
            .wrapping_add($b ^ (ab & $bc));
        $bc = ab;
        $d = $d.wrapping_add(hk).wrapping_add(ch).wrapping_add(s1);
        $h = hk.wrapping_add(ch).wrapping_add(t2).wrapping_add(s1);
    };
}

/// Eight rounds from `$i`, scheduling the pairs sixteen rounds ahead as it goes.
macro_rules! round8 {
    ($s:ident, $p:ident, $wk:ident, $i:expr) => {{
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = $s;
        let mut bc = b ^ c;
        for q in 0..4 {
            let j = $i / 2 + q + 8;
            if j < 40 {
                schedule_pair!($p, j);
                store_wk!($p, $wk, j);
            }
        }
        round!(a, b, c, d, e, f, g, h, $wk, bc, $i);
        round!(h, a, b, c, d, e, f, g, $wk, bc, $i + 1);
        round!(g, h, a, b, c, d, e, f, $wk, bc, $i + 2);
        round!(f, g, h, a, b, c, d, e, $wk, bc, $i + 3);
        round!(e, f, g, h, a, b, c, d, $wk, bc, $i + 4);
        round!(d, e, f, g, h, a, b, c, $wk, bc, $i + 5);
        round!(c, d, e, f, g, h, a, b, $wk, bc, $i + 6);
        round!(b, c, d, e, f, g, h, a, $wk, bc, $i + 7);
        $s = [a, b, c, d, e, f, g, h];
    }};
}

/// One compression of the big-endian message words `$w` into `$state` (a macro so that
/// it is inlined and the constant padding words fold through the schedule).
macro_rules! compress {
    ($state:expr, $w:expr) => {{
        let state: &mut [u64; 8] = $state;
        let w: &[u64; 16] = $w;
        let mut p = [_mm_set_epi64x(0, 0); 8];
        for (j, p) in p.iter_mut().enumerate() {
            *p = _mm_set_epi64x(w[2 * j + 1] as i64, w[2 * j] as i64);
        }
        let mut wk = [0u64; 80];
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

// The Maj carry (`bc`) is written once more after the last round.
#[allow(unused_assignments)]
#[target_feature(enable = "avx512f,avx512vl,bmi1,bmi2")]
fn loop_vl(istate: &[u64; 8], ostate: &[u64; 8], acc: &mut [u64; 8], iterations: u32) {
    let mut u = *acc;
    let mut x = *acc;
    for _ in 1..iterations {
        let mut m = [0u64; 16];
        m[..8].copy_from_slice(&u);
        m[8] = 0x8000_0000_0000_0000;
        m[15] = (128 + 64) * 8;
        let mut s = *istate;
        compress!(&mut s, &m);
        m[..8].copy_from_slice(&s);
        let mut o = *ostate;
        compress!(&mut o, &m);
        u = o;
        for (x, o) in x.iter_mut().zip(o) {
            *x ^= o;
        }
    }
    *acc = x;
}

#[allow(unused_assignments)]
#[target_feature(enable = "avx512f,avx512vl,bmi1,bmi2")]
fn blocks_vl(state: &mut [u64; 8], data: &[u8]) {
    for block in data.chunks_exact(128) {
        let mut w = [0u64; 16];
        for (w, b) in w.iter_mut().zip(block.chunks_exact(8)) {
            let mut x = [0u8; 8];
            x.copy_from_slice(b);
            *w = u64::from_be_bytes(x);
        }
        compress!(state, &w);
    }
}
