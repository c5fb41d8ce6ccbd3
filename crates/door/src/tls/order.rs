//! The order in which a TLS server of ours prefers its cipher suites, shared by the HTTP
//! and admin listeners (`[tls]`) and the 802.1X door (`[radius.eap]`).
//!
//! An operator's `cipher_suites` list is the order, as written. The default list is the
//! provider's, strongest first (TLS 1.3 before TLS 1.2; AES-256-GCM, then AES-128-GCM,
//! then ChaCha20-Poly1305), except where SHA-256 runs in hardware: there the SHA-256
//! suites move first (stable sort, so the rest keep their order), because the TLS 1.2 PRF
//! and the TLS 1.3 key schedule, most of a handshake's symmetric cryptography, then run
//! on the SHA instructions while SHA-384 stays in software; every suite offered is strong.

use rustls::SupportedCipherSuite;
use rustls::crypto::hash::HashAlgorithm;

/// `suites` (as [`super::enabled_suites`] returns them) in the server's order of
/// preference; `configured`: they are an operator's list, kept as written.
pub fn server_order(
    mut suites: Vec<SupportedCipherSuite>,
    configured: bool,
) -> Vec<SupportedCipherSuite> {
    if !configured && sha256_in_hardware() {
        suites.sort_by_key(|suite| hash_of(suite) != HashAlgorithm::SHA256);
    }
    suites
}

/// Whether SHA-256 runs in hardware here (x86 SHA-NI, the ARMv8 SHA-2 instructions).
pub fn sha256_in_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sha")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("sha2")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// The hash of a suite's PRF (TLS 1.2) or key schedule (TLS 1.3).
fn hash_of(suite: &SupportedCipherSuite) -> HashAlgorithm {
    match suite {
        SupportedCipherSuite::Tls12(s) => s.common.hash_provider.algorithm(),
        SupportedCipherSuite::Tls13(s) => s.common.hash_provider.algorithm(),
    }
}
