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

use super::lanes32::{Kernels, avx512_ops, lane_kernels};

type V = __m512i;
const LANES: usize = 16;

/// The sixteen-lane kernels, if this CPU has AVX-512F.
pub(crate) fn detect() -> Option<Kernels> {
    std::arch::is_x86_feature_detected!("avx512f").then(kernels)
}

avx512_ops!(
    "avx512f",
    set1: _mm512_set1_epi32,
    add: _mm512_add_epi32,
    xor: _mm512_xor_si512,
    ternlog: _mm512_ternarylogic_epi32,
    ror: _mm512_ror_epi32,
    rol: _mm512_rol_epi32,
    srli: _mm512_srli_epi32,
);
