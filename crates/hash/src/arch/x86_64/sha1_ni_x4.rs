//! Multi-buffer PBKDF2-HMAC-SHA1 with SHA-NI: N independent chains (N = 1..=4)
//! interleaved instruction by instruction in one thread.
//!
//! Same idea as `sha256_ni_x4`: `sha1rnds4` is latency-bound in a single chain, so every
//! step is issued for lane 0, lane 1, ..., lane N-1 over `[__m128i; N]` arrays and the
//! out-of-order core overlaps the independent chains. Per lane the layout is that of the
//! single-stream kernel: ABCD in one register (a in the top dword), e in the top dword of
//! another, the digest reused as message words 0..4 with the padding laid out once.

// Lane loops index several arrays in lockstep; iterator chains would hide that.
#![allow(clippy::needless_range_loop)]

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_blend_epi16, _mm_extract_epi32, _mm_set_epi32, _mm_setzero_si128,
    _mm_sha1msg1_epu32, _mm_sha1msg2_epu32, _mm_sha1nexte_epu32, _mm_sha1rnds4_epu32,
    _mm_xor_si128,
};

use crate::batch::chain::Chain;
use crate::batch::sha::Sha1;

/// A lane kernel: runs PBKDF2 iterations 2..=c on every chain of the slice, in groups of
/// the kernel's width (a short last group is padded with idle lanes).
pub(crate) type LanesFn = fn(&mut [Chain<Sha1>], u32);

/// The SHA-NI lane kernels of this CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernels {
    /// The 1-, 2-, 3- and 4-lane kernels (index = lanes - 1), built for the widest
    /// instruction set this CPU has.
    pub(crate) best: [LanesFn; 4],
    /// The same kernels built for the SHA-NI baseline (SSE4.1 only), which CPUs with
    /// SHA-NI but without AVX-512 run; offered to tests so that build is covered too.
    pub(crate) baseline: [LanesFn; 4],
}

/// The lane kernels, if this CPU has SHA-NI.
///
/// With AVX-512VL the compiler may keep values in xmm16..31 and use three-operand
/// encodings for everything but the SHA instructions (which are legacy-encoded and can only
/// name xmm0..15); at three and four lanes that replaces most spills with register moves
/// and is measurably faster (ARCHITECTURE.md, "Batch kernel").
pub(crate) fn detect() -> Option<Kernels> {
    if !super::has_sha_ni() {
        return None;
    }
    let baseline: [LanesFn; 4] = [sse::run::<1>, sse::run::<2>, sse::run::<3>, sse::run::<4>];
    let best = if has_avx512vl() {
        [vl::run::<1>, vl::run::<2>, vl::run::<3>, vl::run::<4>]
    } else {
        baseline
    };
    Some(Kernels { best, baseline })
}

/// AVX-512F/VL and the AVX levels below them (on top of SHA-NI).
fn has_avx512vl() -> bool {
    std::arch::is_x86_feature_detected!("avx")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
}

/// Four rounds (function `$f`) on every lane: `$h1 = rnds4($h0, nexte($h1, $w))`.
macro_rules! rounds4 {
    ($h0:ident, $h1:ident, $w:ident, $f:literal) => {
        for l in 0..N {
            $h1[l] = _mm_sha1rnds4_epu32::<$f>($h0[l], _mm_sha1nexte_epu32($h1[l], $w[l]));
        }
    };
}

/// Next four schedule words into `$w4`, then four rounds with them.
macro_rules! schedule_rounds4 {
    ($h0:ident, $h1:ident, $w0:ident, $w1:ident, $w2:ident, $w3:ident, $w4:ident, $f:literal) => {
        for l in 0..N {
            $w4[l] = _mm_sha1msg2_epu32(
                _mm_xor_si128(_mm_sha1msg1_epu32($w0[l], $w1[l]), $w2[l]),
                $w3[l],
            );
        }
        rounds4!($h0, $h1, $w4, $f);
    };
}

/// One compression on every lane of the message `$m0`, `$m1`, zeros, `$m3` into the
/// state `$abcd`/`$e`, updated in place.
macro_rules! compress {
    ($abcd:ident, $e:ident, $m0:ident, $m1:ident, $m3:ident) => {{
        let zero = _mm_setzero_si128();
        let (mut w0, mut w1, mut w2, mut w3) = ($m0, $m1, [zero; N], $m3);
        let mut w4 = [zero; N];
        let mut h0 = $abcd;
        let mut h1 = [zero; N];
        for l in 0..N {
            h1[l] = _mm_add_epi32($e[l], w0[l]);
        }
        // Rounds 0..20
        for l in 0..N {
            h1[l] = _mm_sha1rnds4_epu32::<0>(h0[l], h1[l]);
        }
        rounds4!(h1, h0, w1, 0);
        rounds4!(h0, h1, w2, 0);
        rounds4!(h1, h0, w3, 0);
        schedule_rounds4!(h0, h1, w0, w1, w2, w3, w4, 0);
        // Rounds 20..40
        schedule_rounds4!(h1, h0, w1, w2, w3, w4, w0, 1);
        schedule_rounds4!(h0, h1, w2, w3, w4, w0, w1, 1);
        schedule_rounds4!(h1, h0, w3, w4, w0, w1, w2, 1);
        schedule_rounds4!(h0, h1, w4, w0, w1, w2, w3, 1);
        schedule_rounds4!(h1, h0, w0, w1, w2, w3, w4, 1);
        // Rounds 40..60
        schedule_rounds4!(h0, h1, w1, w2, w3, w4, w0, 2);
        schedule_rounds4!(h1, h0, w2, w3, w4, w0, w1, 2);
        schedule_rounds4!(h0, h1, w3, w4, w0, w1, w2, 2);
        schedule_rounds4!(h1, h0, w4, w0, w1, w2, w3, 2);
        schedule_rounds4!(h0, h1, w0, w1, w2, w3, w4, 2);
        // Rounds 60..80
        schedule_rounds4!(h1, h0, w1, w2, w3, w4, w0, 3);
        schedule_rounds4!(h0, h1, w2, w3, w4, w0, w1, 3);
        schedule_rounds4!(h1, h0, w3, w4, w0, w1, w2, 3);
        schedule_rounds4!(h0, h1, w4, w0, w1, w2, w3, 3);
        schedule_rounds4!(h1, h0, w0, w1, w2, w3, w4, 3);
        let _ = (w1, w2, w3);
        for l in 0..N {
            $abcd[l] = _mm_add_epi32($abcd[l], h0[l]);
            $e[l] = _mm_sha1nexte_epu32(h1[l], $e[l]);
        }
    }};
}

/// One build of the lane kernels for the target features `$features`.
macro_rules! variant {
    ($name:ident, $features:literal, $why:literal) => {
        #[doc = $why]
        mod $name {
            use super::*;

            /// Only reachable through [`detect`](super::detect), which checked the CPU
            /// features.
            pub(super) fn run<const N: usize>(chains: &mut [Chain<Sha1>], iterations: u32) {
                for group in chains.chunks_mut(N) {
                    // SAFETY: `run` is private to this file and its address escapes only
                    // from `detect`, after it confirmed every feature in `$features`
                    // (SHA-NI and SSE4.1 for the baseline; also AVX, AVX2, AVX-512F/VL
                    // for `vl`), the features `lanes` enables.
                    unsafe { lanes::<N>(group, iterations) }
                }
            }

            /// State words to the (ABCD, E) register pair (a and e in the top dwords, zeros below e).
            #[target_feature(enable = $features)]
            fn to_regs(s: &[u32; 5]) -> (__m128i, __m128i) {
                let w = s.map(|x| x as i32);
                (
                    _mm_set_epi32(w[0], w[1], w[2], w[3]),
                    _mm_set_epi32(w[4], 0, 0, 0),
                )
            }

            #[target_feature(enable = $features)]
            fn lanes<const N: usize>(chains: &mut [Chain<Sha1>], iterations: u32) {
                let zero = _mm_setzero_si128();
                let (mut ia, mut ie, mut oa, mut oe) = ([zero; N], [zero; N], [zero; N], [zero; N]);
                let (mut abcd, mut e) = ([zero; N], [zero; N]);
                // Lanes beyond `chains.len()` stay all-zero: they compute garbage nobody reads.
                for (l, chain) in chains.iter().enumerate().take(N) {
                    (ia[l], ie[l]) = to_regs(&chain.inner);
                    (oa[l], oe[l]) = to_regs(&chain.outer);
                    (abcd[l], e[l]) = to_regs(&chain.acc);
                }
                let (mut xa, mut xe) = (abcd, e);
                // Padding of a 64 + 20 byte message: word 5 is 0x80000000, word 15 the bit length 672.
                // Message registers hold the first word of each group of four in the top dword.
                let pad1 = _mm_set_epi32(0, 0x8000_0000_u32 as i32, 0, 0);
                let pad3 = [_mm_set_epi32(0, 0, 0, 672); N];
                let mut m1 = [zero; N];
                for _ in 1..iterations {
                    // The digest (a..e) is message words 0..4: abcd as is, e over the padding word.
                    for l in 0..N {
                        m1[l] = _mm_blend_epi16(pad1, e[l], 0xC0);
                    }
                    let m0 = abcd;
                    (abcd, e) = (ia, ie);
                    compress!(abcd, e, m0, m1, pad3);
                    for l in 0..N {
                        m1[l] = _mm_blend_epi16(pad1, e[l], 0xC0);
                    }
                    let m0 = abcd;
                    (abcd, e) = (oa, oe);
                    compress!(abcd, e, m0, m1, pad3);
                    for l in 0..N {
                        xa[l] = _mm_xor_si128(xa[l], abcd[l]);
                        xe[l] = _mm_xor_si128(xe[l], e[l]);
                    }
                }
                for (l, chain) in chains.iter_mut().enumerate().take(N) {
                    chain.acc = [
                        _mm_extract_epi32(xa[l], 3),
                        _mm_extract_epi32(xa[l], 2),
                        _mm_extract_epi32(xa[l], 1),
                        _mm_extract_epi32(xa[l], 0),
                        _mm_extract_epi32(xe[l], 3),
                    ]
                    .map(|x| x as u32);
                }
            }
        }
    };
}

variant!(
    sse,
    "sha,sse2,ssse3,sse4.1",
    "Baseline build: SHA-NI with SSE4.1."
);
variant!(
    vl,
    "sha,sse2,ssse3,sse4.1,avx,avx2,avx512f,avx512vl",
    "AVX-512VL build: 32 vector registers and three-operand encodings around the SHA \
     instructions."
);
