//! PBKDF2-HMAC (RFC 8018) with SHA-1, SHA-256 and SHA-512, and its PHC string form
//! `$pbkdf2-<prf>$i=<iterations>[,l=<len>]$<salt>$<hash>`.
//!
//! The speed of this module is the product: a verification is `iterations` times two
//! compressions and nothing else. The HMAC inner and outer states are computed once per
//! password; each iteration compresses one fixed-layout block through the inner state and
//! one through the outer state, and the running XOR stays in registers. On x86-64 the
//! SHA-1 and SHA-256 loops use SHA-NI (selected at run time, so a plain release build is as
//! fast as a `target-cpu=native` one); SHA-512 (no SHA-512 instructions on x86 CPUs of
//! today) runs unrolled scalar BMI2 rounds with the message schedule in AVX-512VL vectors,
//! or plain BMI2 scalar code. Other CPUs get the portable scalar loops.
//!
//! Layout: [`kernel`] drives a derivation, [`soft`] holds the portable compressions and
//! loops, `crate::arch` the intrinsics, [`phc`] the string format.

pub(crate) mod kernel;
mod phc;
pub(crate) mod soft;

pub use phc::{MAX_ITERATIONS, PhcPbkdf2, format_phc, hash_password, parse_phc};

use kernel::{Sha1, Sha256, Sha512};

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

    /// Block size of the underlying hash in bytes (what one compression consumes).
    pub const fn block_len(self) -> usize {
        match self {
            Prf::Sha1 | Prf::Sha256 => 64,
            Prf::Sha512 => 128,
        }
    }

    /// Iterations OWASP recommends for new hashes (2023 cheat sheet).
    pub const fn default_iterations(self) -> u32 {
        match self {
            Prf::Sha1 => 1_300_000,
            Prf::Sha256 => 600_000,
            Prf::Sha512 => 210_000,
        }
    }

    /// Parse a PRF name (`sha256`) as used in PHC identifiers.
    pub fn from_name(name: &str) -> Option<Prf> {
        match name {
            "sha1" => Some(Prf::Sha1),
            "sha256" => Some(Prf::Sha256),
            "sha512" => Some(Prf::Sha512),
            _ => None,
        }
    }
}

/// Which implementation runs a derivation. Tests and benchmarks force `Portable` to cover
/// and measure the code CPUs without SHA-NI/BMI2 run; everything else uses `Auto`.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The fastest backend this CPU supports (detected at run time).
    Auto,
    /// The portable scalar code, whatever the CPU.
    Portable,
}

/// Derive `out.len()` bytes of PBKDF2-HMAC-`prf` from `password` and `salt`.
///
/// `iterations` must be at least 1 (callers validate; 0 is treated as 1). Any output
/// length works; outputs longer than one digest are computed block by block.
pub fn pbkdf2_hmac(prf: Prf, password: &[u8], salt: &[u8], iterations: u32, out: &mut [u8]) {
    pbkdf2_hmac_on(Backend::Auto, prf, password, salt, iterations, out);
}

/// [`pbkdf2_hmac`] on a chosen backend (tests and benchmarks).
#[doc(hidden)]
pub fn pbkdf2_hmac_on(
    backend: Backend,
    prf: Prf,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
) {
    match prf {
        Prf::Sha1 => kernel::derive::<Sha1>(backend, password, salt, iterations, out),
        Prf::Sha256 => kernel::derive::<Sha256>(backend, password, salt, iterations, out),
        Prf::Sha512 => kernel::derive::<Sha512>(backend, password, salt, iterations, out),
    }
}

/// Name of the implementation `backend` resolves to for `prf` on this CPU
/// (`sha-ni`, `scalar-bmi2`, `portable`).
#[doc(hidden)]
pub fn backend_name(prf: Prf, backend: Backend) -> &'static str {
    match prf {
        Prf::Sha1 => kernel::backend_name::<Sha1>(backend),
        Prf::Sha256 => kernel::backend_name::<Sha256>(backend),
        Prf::Sha512 => kernel::backend_name::<Sha512>(backend),
    }
}

/// Run the raw compression function of `prf` over every whole block of `data` on the
/// same code path the derivation uses (benchmarks: the compression-bound reference).
/// Returns the first state word so the work cannot be optimised away.
#[doc(hidden)]
pub fn raw_compress(prf: Prf, backend: Backend, data: &[u8]) -> u64 {
    match prf {
        Prf::Sha1 => u64::from(kernel::raw_blocks::<Sha1>(backend, data)[0]),
        Prf::Sha256 => u64::from(kernel::raw_blocks::<Sha256>(backend, data)[0]),
        Prf::Sha512 => kernel::raw_blocks::<Sha512>(backend, data)[0],
    }
}
