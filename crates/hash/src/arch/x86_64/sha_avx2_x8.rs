//! Multi-buffer PBKDF2-HMAC-SHA1 and -SHA256 with AVX2: eight chains, one per 32-bit lane
//! of the ymm registers (the shared body is `lanes32`), for CPUs without AVX-512.
//!
//! AVX2 has neither vector rotates nor three-input logic, so a rotation is two shifts and
//! an OR, and Ch/Maj/Parity take two or three instructions; with three vector ports that
//! is still eight chains for roughly the time four take on SHA-NI-less scalar code. On
//! CPUs that also have SHA-NI the calibration decides which is faster.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_and_si256, _mm256_or_si256, _mm256_set1_epi32,
    _mm256_slli_epi32, _mm256_srli_epi32, _mm256_xor_si256,
};

use super::lanes32::{Kernels, lane_kernels};

type V = __m256i;
const LANES: usize = 8;

/// The eight-lane kernels, if this CPU has AVX2.
pub(crate) fn detect() -> Option<Kernels> {
    (std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("avx2"))
        .then(kernels)
}

/// Rotate every lane right by `$n` bits (0 < n < 32).
macro_rules! ror {
    ($x:expr, $n:literal) => {
        _mm256_or_si256(_mm256_srli_epi32($x, $n), _mm256_slli_epi32($x, 32 - $n))
    };
}

#[target_feature(enable = "avx2")]
#[inline]
fn splat(x: u32) -> V {
    _mm256_set1_epi32(x as i32)
}

#[target_feature(enable = "avx2")]
#[inline]
fn add(a: V, b: V) -> V {
    _mm256_add_epi32(a, b)
}

#[target_feature(enable = "avx2")]
#[inline]
fn xor(a: V, b: V) -> V {
    _mm256_xor_si256(a, b)
}

/// `a ^ b ^ c` (also SHA-1's Parity).
#[target_feature(enable = "avx2")]
#[inline]
fn xor3(a: V, b: V, c: V) -> V {
    xor(xor(a, b), c)
}

/// `(e & f) ^ (!e & g)`, as `((f ^ g) & e) ^ g`.
#[target_feature(enable = "avx2")]
#[inline]
fn ch(e: V, f: V, g: V) -> V {
    xor(_mm256_and_si256(xor(f, g), e), g)
}

/// `(a & b) ^ (a & c) ^ (b & c)`, as `(a & b) | ((a | b) & c)`.
#[target_feature(enable = "avx2")]
#[inline]
fn maj(a: V, b: V, c: V) -> V {
    _mm256_or_si256(
        _mm256_and_si256(a, b),
        _mm256_and_si256(_mm256_or_si256(a, b), c),
    )
}

/// SHA-256 Σ0.
#[target_feature(enable = "avx2")]
#[inline]
fn bsig0(x: V) -> V {
    xor3(ror!(x, 2), ror!(x, 13), ror!(x, 22))
}

/// SHA-256 Σ1.
#[target_feature(enable = "avx2")]
#[inline]
fn bsig1(x: V) -> V {
    xor3(ror!(x, 6), ror!(x, 11), ror!(x, 25))
}

/// SHA-256 σ0.
#[target_feature(enable = "avx2")]
#[inline]
fn ssig0(x: V) -> V {
    xor3(ror!(x, 7), ror!(x, 18), _mm256_srli_epi32(x, 3))
}

/// SHA-256 σ1.
#[target_feature(enable = "avx2")]
#[inline]
fn ssig1(x: V) -> V {
    xor3(ror!(x, 17), ror!(x, 19), _mm256_srli_epi32(x, 10))
}

#[target_feature(enable = "avx2")]
#[inline]
fn rotl1(x: V) -> V {
    ror!(x, 31)
}

#[target_feature(enable = "avx2")]
#[inline]
fn rotl5(x: V) -> V {
    ror!(x, 27)
}

#[target_feature(enable = "avx2")]
#[inline]
fn rotl30(x: V) -> V {
    ror!(x, 2)
}

lane_kernels!("avx2");
