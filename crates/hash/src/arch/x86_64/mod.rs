//! x86-64 kernels. Add one `mod` line per backend file.

pub(crate) mod argon2_avx2;
pub(crate) mod argon2_avx512;
pub(crate) mod sha1_ni;
pub(crate) mod sha256_ni;
pub(crate) mod sha512_bmi2;
pub(crate) mod sha512_vl;
// Multi-buffer (batch) kernels, used by `crate::batch`.
pub(crate) mod lanes32;
pub(crate) mod sha1_ni_x4;
pub(crate) mod sha256_ni_x4;
pub(crate) mod sha512_avx2_x4;
pub(crate) mod sha512_avx512_x8;
pub(crate) mod sha_avx2_x8;
pub(crate) mod sha_avx512_x16;
pub(crate) mod sha_avx512vl_x8;

/// Whether this CPU has SHA-NI and the SSE levels our SHA-NI code also uses.
pub(crate) fn has_sha_ni() -> bool {
    std::arch::is_x86_feature_detected!("sha")
        && std::arch::is_x86_feature_detected!("sse2")
        && std::arch::is_x86_feature_detected!("ssse3")
        && std::arch::is_x86_feature_detected!("sse4.1")
}
