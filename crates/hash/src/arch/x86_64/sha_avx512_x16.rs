//! Multi-buffer PBKDF2-HMAC-SHA1 and -SHA256 with AVX-512: sixteen chains, one per 32-bit
//! lane of the zmm registers (the shared body is `lanes32`).
//!
//! AVX-512F has what SHA needs in one instruction each: `vprord`/`vprold` for the
//! rotations and `vpternlogd` for any three-input boolean function (the sigma XORs, Ch,
//! Maj, Parity). The state, the sixteen-word message ring and temporaries fit the 32 zmm
//! registers; the HMAC states are read from memory once per compression.

use core::arch::x86_64::{
    __m512i, _mm512_add_epi32, _mm512_rol_epi32, _mm512_ror_epi32, _mm512_set1_epi32,
    _mm512_srli_epi32, _mm512_ternarylogic_epi32, _mm512_xor_si512,
};

use super::lanes32::{Kernels, lane_kernels};

type V = __m512i;
const LANES: usize = 16;

/// The sixteen-lane kernels, if this CPU has AVX-512F.
pub(crate) fn detect() -> Option<Kernels> {
    std::arch::is_x86_feature_detected!("avx512f").then(kernels)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn splat(x: u32) -> V {
    _mm512_set1_epi32(x as i32)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn add(a: V, b: V) -> V {
    _mm512_add_epi32(a, b)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn xor(a: V, b: V) -> V {
    _mm512_xor_si512(a, b)
}

/// `a ^ b ^ c` (also SHA-1's Parity).
#[target_feature(enable = "avx512f")]
#[inline]
fn xor3(a: V, b: V, c: V) -> V {
    _mm512_ternarylogic_epi32(a, b, c, 0x96)
}

/// `(e & f) ^ (!e & g)`.
#[target_feature(enable = "avx512f")]
#[inline]
fn ch(e: V, f: V, g: V) -> V {
    _mm512_ternarylogic_epi32(e, f, g, 0xCA)
}

/// `(a & b) ^ (a & c) ^ (b & c)`.
#[target_feature(enable = "avx512f")]
#[inline]
fn maj(a: V, b: V, c: V) -> V {
    _mm512_ternarylogic_epi32(a, b, c, 0xE8)
}

/// SHA-256 Σ0.
#[target_feature(enable = "avx512f")]
#[inline]
fn bsig0(x: V) -> V {
    xor3(
        _mm512_ror_epi32(x, 2),
        _mm512_ror_epi32(x, 13),
        _mm512_ror_epi32(x, 22),
    )
}

/// SHA-256 Σ1.
#[target_feature(enable = "avx512f")]
#[inline]
fn bsig1(x: V) -> V {
    xor3(
        _mm512_ror_epi32(x, 6),
        _mm512_ror_epi32(x, 11),
        _mm512_ror_epi32(x, 25),
    )
}

/// SHA-256 σ0.
#[target_feature(enable = "avx512f")]
#[inline]
fn ssig0(x: V) -> V {
    xor3(
        _mm512_ror_epi32(x, 7),
        _mm512_ror_epi32(x, 18),
        _mm512_srli_epi32(x, 3),
    )
}

/// SHA-256 σ1.
#[target_feature(enable = "avx512f")]
#[inline]
fn ssig1(x: V) -> V {
    xor3(
        _mm512_ror_epi32(x, 17),
        _mm512_ror_epi32(x, 19),
        _mm512_srli_epi32(x, 10),
    )
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rotl1(x: V) -> V {
    _mm512_rol_epi32(x, 1)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rotl5(x: V) -> V {
    _mm512_rol_epi32(x, 5)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rotl30(x: V) -> V {
    _mm512_rol_epi32(x, 30)
}

lane_kernels!("avx512f");
