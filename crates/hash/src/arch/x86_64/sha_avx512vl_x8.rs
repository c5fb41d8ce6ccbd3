//! Multi-buffer PBKDF2-HMAC-SHA1 and -SHA256 with AVX-512VL: eight chains, one per 32-bit
//! lane of the ymm registers (the shared body is `lanes32`).
//!
//! The sixteen-lane kernel's instructions (`vprord`/`vprold`, `vpternlogd`) on 256-bit
//! registers. Why a second width: a caller with eight derivations (a closed loop of
//! sixteen clients on two threads, eight a thread) would otherwise run them in half a
//! sixteen-lane group, for the whole group's time. And on Intel cores a 512-bit rotate
//! issues on one port where a 256-bit one issues on two, so eight lanes can cost about
//! half of sixteen (on Zen 4 a zmm operation is two ymm halves anyway). The calibration
//! measures which is cheaper per chain on the running CPU; the planner mixes both.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_rol_epi32, _mm256_ror_epi32, _mm256_set1_epi32,
    _mm256_srli_epi32, _mm256_ternarylogic_epi32, _mm256_xor_si256,
};

use super::lanes32::{Kernels, avx512_ops, lane_kernels};

type V = __m256i;
const LANES: usize = 8;

/// The eight-lane kernels, if this CPU has AVX-512F and AVX-512VL.
pub(crate) fn detect() -> Option<Kernels> {
    (std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl"))
    .then(kernels)
}

avx512_ops!(
    "avx512f,avx512vl",
    set1: _mm256_set1_epi32,
    add: _mm256_add_epi32,
    xor: _mm256_xor_si256,
    ternlog: _mm256_ternarylogic_epi32,
    ror: _mm256_ror_epi32,
    rol: _mm256_rol_epi32,
    srli: _mm256_srli_epi32,
);
