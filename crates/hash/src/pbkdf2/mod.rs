//! PBKDF2-HMAC (RFC 8018) with SHA-1, SHA-256 and SHA-512.
//!
//! TEMPORARY IMPLEMENTATION: delegates to RustCrypto until our kernel lands (issue #2).
//! The public signatures below are what the rest of the workspace codes against; keep them.

use crate::error::FormatError;

/// The pseudo-random function of a PBKDF2 derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prf {
    /// HMAC-SHA-1 (20-byte blocks of output).
    Sha1,
    /// HMAC-SHA-256 (32-byte blocks of output).
    Sha256,
    /// HMAC-SHA-512 (64-byte blocks of output).
    Sha512,
}

impl Prf {
    /// Output size of the underlying hash in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            Prf::Sha1 => 20,
            Prf::Sha256 => 32,
            Prf::Sha512 => 64,
        }
    }

    /// Name as used in PHC identifiers (`pbkdf2-sha256`) and on the CLI.
    pub const fn name(self) -> &'static str {
        match self {
            Prf::Sha1 => "sha1",
            Prf::Sha256 => "sha256",
            Prf::Sha512 => "sha512",
        }
    }
}

/// Derive `out.len()` bytes of PBKDF2-HMAC-`prf` from `password` and `salt`.
///
/// `iterations` must be at least 1 (callers validate; 0 is treated as 1).
pub fn pbkdf2_hmac(prf: Prf, password: &[u8], salt: &[u8], iterations: u32, out: &mut [u8]) {
    let rounds = iterations.max(1);
    match prf {
        Prf::Sha1 => ::pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, rounds, out),
        Prf::Sha256 => ::pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, rounds, out),
        Prf::Sha512 => ::pbkdf2::pbkdf2_hmac::<sha2::Sha512>(password, salt, rounds, out),
    }
}

/// A parsed `$pbkdf2-<prf>$i=<iterations>[,l=<len>]$<salt>$<hash>` PHC string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhcPbkdf2 {
    /// The PRF named in the identifier.
    pub prf: Prf,
    /// Iteration count (`i=`).
    pub iterations: u32,
    /// Raw salt bytes.
    pub salt: Vec<u8>,
    /// Raw expected derived key.
    pub hash: Vec<u8>,
}

/// Parse a PHC pbkdf2 string. (Owned by the kernel issue; full implementation pending.)
pub fn parse_phc(_s: &str) -> Result<PhcPbkdf2, FormatError> {
    Err(FormatError::Unrecognised(String::new()))
}
