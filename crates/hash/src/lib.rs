//! Portcullis hash kernel: pure, synchronous, allocation-free where it matters.
//!
//! This crate owns every computation on a secret: the PBKDF2 kernel (ours, because its
//! speed is the product), batch (multi-buffer) derivation, Argon2 (ours too, for the same
//! reason), bcrypt and scrypt (through well-kept crates), server-peppered HMAC for
//! high-entropy secrets, and the stored formats of other systems so users migrate without
//! password resets.
//!
//! It knows nothing of time, networks or storage, and runs on the caller's thread: callers
//! (the `core` crate's hash pool) decide where and when the work runs (the only threads it
//! can start are `argon2_kernel::ScopedThreads`, for tools that ask for parallel lanes).
//!
//! Module map:
//! - [`pbkdf2`]: PBKDF2-HMAC-SHA1/256/512, single stream, plus PHC `$pbkdf2-*$` strings.
//! - [`batch`]: several PBKDF2 derivations with the same parameters interleaved per core.
//! - [`argon2_kernel`]: Argon2d/i/id (RFC 9106): block fill, kernels, per-thread arenas.
//! - `arch` (private): every `unsafe` block (CPU intrinsics, memory mappings) lives there.
//! - [`credential`]: a parsed stored credential of any supported format; verify, cost,
//!   batch key.
//! - [`pepper`]: server-side pepper keys and the `$hmac-sha256$` format for generated secrets.
//! - [`formats`]: stored formats of other systems (Django, passlib, Werkzeug, ASP.NET
//!   Identity, FreeRADIUS, Keycloak, LDAP, PHC, bcrypt), detection and `--format` names,
//!   and the argon2 / bcrypt / scrypt / salted-SHA hash types.
//! - [`policy`]: the algorithm and cost of new hashes, rehash decisions, `PolicyConfig`.
//! - [`import`]: reading existing password stores for `portcullis user import`.
//! - [`calibrate`]: measuring each KDF to suggest parameters for a target time.
//! - [`contest`]: re-checking a kernel choice in service from the process's own runs.

mod arch;
pub mod argon2_kernel;
pub mod batch;
pub mod calibrate;
pub mod contest;
pub mod credential;
pub mod error;
pub mod formats;
pub mod import;
pub mod pbkdf2;
pub mod pepper;
pub mod policy;

pub use credential::{BatchKey, Cost, Credential};
pub use error::{FormatError, VerifyError};
pub use formats::Format;
pub use pbkdf2::Prf;
pub use pepper::{PepperKey, Peppers};
pub use policy::{HashError, Policy, PolicyConfig};

/// Compare two byte strings in constant time (for equal lengths; lengths are not secret).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// CPU time consumed by the calling thread, in nanoseconds (`None` where the OS has no
/// per-thread CPU clock): what kernel timings are measured in.
pub fn thread_cpu_ns() -> Option<u64> {
    arch::clock::thread_cpu_ns()
}

/// How many times a kernel choice of this process has moved in service (PBKDF2 batch
/// kernels and the argon2 block kernel): callers that publish the choice refresh it
/// when this changes.
pub fn kernel_choice_changes() -> u64 {
    contest::changes()
}

/// Fill `buf` with bytes from the operating system's CSPRNG.
pub fn os_random(buf: &mut [u8]) -> Result<(), error::RandomError> {
    getrandom::fill(buf).map_err(|e| error::RandomError(e.to_string()))
}
