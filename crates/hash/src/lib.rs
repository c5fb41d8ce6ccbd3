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

mod arch;
pub mod argon2_kernel;
pub mod batch;
pub mod calibrate;
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

/// Fill `buf` with bytes from the operating system's CSPRNG.
pub fn os_random(buf: &mut [u8]) -> Result<(), error::RandomError> {
    getrandom::fill(buf).map_err(|e| error::RandomError(e.to_string()))
}
