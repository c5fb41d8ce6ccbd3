//! Multi-buffer PBKDF2-HMAC-SHA256 with SHA-NI: N independent chains (N = 1..=4)
//! interleaved instruction by instruction in one thread.
//!
//! `sha256rnds2` has a latency of several cycles but can issue more often than that, so a
//! single chain leaves the SHA unit idle most of the time. Every step below is written as
//! "do this for lane 0, lane 1, ..., lane N-1" over `[__m128i; N]` arrays; with N a
//! constant the loops unroll into straight code whose consecutive `sha256rnds2` are
//! independent, and the out-of-order core overlaps them. One const-generic body gives the
//! 1-, 2-, 3- and 4-lane variants. Beyond four lanes the live set (state, four message
//! registers and the XOR per lane) no longer fits the sixteen xmm registers the
//! legacy-encoded SHA instructions can name, and spills eat the gain.
//!
//! Per lane the layout is that of the single-stream kernel: the HMAC states in the
//! ABEF/CDGH pair `sha256rnds2` works on, the message as [W0..W3], [W4..W7] built from the
//! previous digest with an unpack and a shuffle (the digest words are the message words, no
//! byte swap), constant padding words, and the running XOR kept in message layout.

// Lane loops index several arrays in lockstep; iterator chains would hide that.
#![allow(clippy::needless_range_loop)]

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_extract_epi32, _mm_set_epi32, _mm_setzero_si128,
    _mm_sha256msg1_epu32, _mm_sha256msg2_epu32, _mm_sha256rnds2_epu32, _mm_shuffle_epi32,
    _mm_unpackhi_epi64, _mm_unpacklo_epi64, _mm_xor_si128,
};

use crate::batch::chain::Chain;
use crate::batch::sha::Sha256;
use crate::pbkdf2::soft::K256;

/// A lane kernel: runs PBKDF2 iterations 2..=c on every chain of the slice, in groups of
/// the kernel's width (a short last group is padded with idle lanes).
pub(crate) type LanesFn = fn(&mut [Chain<Sha256>], u32);

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

/// Four rounds on every lane with message words `$w` and constants `K[4*$i..4*$i+4]`.
macro_rules! rounds4 {
    ($abef:ident, $cdgh:ident, $w:ident, $i:expr) => {{
        let k = _mm_set_epi32(
            K256[4 * $i + 3] as i32,
            K256[4 * $i + 2] as i32,
            K256[4 * $i + 1] as i32,
            K256[4 * $i] as i32,
        );
        for l in 0..N {
            let kw = _mm_add_epi32($w[l], k);
            $cdgh[l] = _mm_sha256rnds2_epu32($cdgh[l], $abef[l], kw);
            $abef[l] = _mm_sha256rnds2_epu32($abef[l], $cdgh[l], _mm_shuffle_epi32(kw, 0x0E));
        }
    }};
}

/// Four rounds on every lane with the constant `W + K` `$kw` (padding-only rounds).
macro_rules! rounds4_kw {
    ($abef:ident, $cdgh:ident, $kw:expr) => {{
        let kw = $kw;
        for l in 0..N {
            $cdgh[l] = _mm_sha256rnds2_epu32($cdgh[l], $abef[l], kw);
            $abef[l] = _mm_sha256rnds2_epu32($abef[l], $cdgh[l], _mm_shuffle_epi32(kw, 0x0E));
        }
    }};
}

/// Next four schedule words on every lane from the previous sixteen (`$w0` oldest),
/// stored into `$w0`.
macro_rules! schedule {
    ($w0:ident, $w1:ident, $w2:ident, $w3:ident) => {
        for l in 0..N {
            $w0[l] = _mm_sha256msg2_epu32(
                _mm_add_epi32(
                    _mm_sha256msg1_epu32($w0[l], $w1[l]),
                    _mm_alignr_epi8($w3[l], $w2[l], 4),
                ),
                $w3[l],
            );
        }
    };
}

/// One compression on every lane: message `$m0`, `$m1` (digest words) then the constant
/// padding, from the state `$abef`/`$cdgh`, which is updated in place.
macro_rules! compress {
    ($abef:ident, $cdgh:ident, $m0:ident, $m1:ident) => {{
        let (abef0, cdgh0) = ($abef, $cdgh);
        let (mut w0, mut w1) = ($m0, $m1);
        let mut w2 = [_mm_set_epi32(0, 0, 0, 0x8000_0000_u32 as i32); N];
        let mut w3 = [_mm_set_epi32(768, 0, 0, 0); N];
        rounds4!($abef, $cdgh, w0, 0);
        rounds4!($abef, $cdgh, w1, 1);
        // Rounds 8..16 see only padding: W + K is a constant.
        rounds4_kw!(
            $abef,
            $cdgh,
            _mm_set_epi32(
                K256[11] as i32,
                K256[10] as i32,
                K256[9] as i32,
                K256[8].wrapping_add(0x8000_0000) as i32,
            )
        );
        rounds4_kw!(
            $abef,
            $cdgh,
            _mm_set_epi32(
                K256[15].wrapping_add(768) as i32,
                K256[14] as i32,
                K256[13] as i32,
                K256[12] as i32,
            )
        );
        schedule!(w0, w1, w2, w3);
        rounds4!($abef, $cdgh, w0, 4);
        schedule!(w1, w2, w3, w0);
        rounds4!($abef, $cdgh, w1, 5);
        schedule!(w2, w3, w0, w1);
        rounds4!($abef, $cdgh, w2, 6);
        schedule!(w3, w0, w1, w2);
        rounds4!($abef, $cdgh, w3, 7);
        schedule!(w0, w1, w2, w3);
        rounds4!($abef, $cdgh, w0, 8);
        schedule!(w1, w2, w3, w0);
        rounds4!($abef, $cdgh, w1, 9);
        schedule!(w2, w3, w0, w1);
        rounds4!($abef, $cdgh, w2, 10);
        schedule!(w3, w0, w1, w2);
        rounds4!($abef, $cdgh, w3, 11);
        schedule!(w0, w1, w2, w3);
        rounds4!($abef, $cdgh, w0, 12);
        schedule!(w1, w2, w3, w0);
        rounds4!($abef, $cdgh, w1, 13);
        schedule!(w2, w3, w0, w1);
        rounds4!($abef, $cdgh, w2, 14);
        schedule!(w3, w0, w1, w2);
        rounds4!($abef, $cdgh, w3, 15);
        for l in 0..N {
            $abef[l] = _mm_add_epi32($abef[l], abef0[l]);
            $cdgh[l] = _mm_add_epi32($cdgh[l], cdgh0[l]);
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
            pub(super) fn run<const N: usize>(chains: &mut [Chain<Sha256>], iterations: u32) {
                for group in chains.chunks_mut(N) {
                    // SAFETY: `run` is private to this file and its address escapes only
                    // from `detect`, after it confirmed every feature in `$features`
                    // (SHA-NI and SSE4.1 for the baseline; also AVX, AVX2, AVX-512F/VL
                    // for `vl`), the features `lanes` enables.
                    unsafe { lanes::<N>(group, iterations) }
                }
            }

            /// State words (a..h) to the (ABEF, CDGH) register pair.
            #[target_feature(enable = $features)]
            fn to_regs(s: &[u32; 8]) -> (__m128i, __m128i) {
                let w = s.map(|x| x as i32);
                (
                    _mm_set_epi32(w[0], w[1], w[4], w[5]),
                    _mm_set_epi32(w[2], w[3], w[6], w[7]),
                )
            }

            #[target_feature(enable = $features)]
            fn lanes<const N: usize>(chains: &mut [Chain<Sha256>], iterations: u32) {
                let zero = _mm_setzero_si128();
                let (mut ia, mut ic, mut oa, mut oc) = ([zero; N], [zero; N], [zero; N], [zero; N]);
                let (mut m0, mut m1) = ([zero; N], [zero; N]);
                // Lanes beyond `chains.len()` stay all-zero: they compute garbage nobody reads.
                for (l, chain) in chains.iter().enumerate().take(N) {
                    (ia[l], ic[l]) = to_regs(&chain.inner);
                    (oa[l], oc[l]) = to_regs(&chain.outer);
                    let u = chain.acc.map(|x| x as i32);
                    m0[l] = _mm_set_epi32(u[3], u[2], u[1], u[0]);
                    m1[l] = _mm_set_epi32(u[7], u[6], u[5], u[4]);
                }
                let (mut x0, mut x1) = (m0, m1);
                for _ in 1..iterations {
                    let (mut abef, mut cdgh) = (ia, ic);
                    compress!(abef, cdgh, m0, m1);
                    // ABEF = [F, E, B, A] and CDGH = [H, G, D, C] from dword 0 up; the next message
                    // wants [A, B, C, D] and [E, F, G, H].
                    for l in 0..N {
                        m0[l] = _mm_shuffle_epi32(_mm_unpackhi_epi64(cdgh[l], abef[l]), 0x1B);
                        m1[l] = _mm_shuffle_epi32(_mm_unpacklo_epi64(cdgh[l], abef[l]), 0x1B);
                    }
                    let (mut abef, mut cdgh) = (oa, oc);
                    compress!(abef, cdgh, m0, m1);
                    for l in 0..N {
                        m0[l] = _mm_shuffle_epi32(_mm_unpackhi_epi64(cdgh[l], abef[l]), 0x1B);
                        m1[l] = _mm_shuffle_epi32(_mm_unpacklo_epi64(cdgh[l], abef[l]), 0x1B);
                        x0[l] = _mm_xor_si128(x0[l], m0[l]);
                        x1[l] = _mm_xor_si128(x1[l], m1[l]);
                    }
                }
                for (l, chain) in chains.iter_mut().enumerate().take(N) {
                    chain.acc = [
                        _mm_extract_epi32(x0[l], 0),
                        _mm_extract_epi32(x0[l], 1),
                        _mm_extract_epi32(x0[l], 2),
                        _mm_extract_epi32(x0[l], 3),
                        _mm_extract_epi32(x1[l], 0),
                        _mm_extract_epi32(x1[l], 1),
                        _mm_extract_epi32(x1[l], 2),
                        _mm_extract_epi32(x1[l], 3),
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
