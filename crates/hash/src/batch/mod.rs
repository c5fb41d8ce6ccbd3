//! Batch (multi-buffer) PBKDF2: several derivations with the same PRF and iteration count
//! run interleaved in one thread, because SHA-NI is bound by instruction latency, not
//! throughput, so independent chains fill each other's bubbles.
//!
//! TEMPORARY: derives each job in turn with the single-stream kernel until the batch issue
//! (#3) lands. The signatures are what the hash pool and the CLI code against; keep them.

use crate::pbkdf2::{Prf, pbkdf2_hmac};

/// One derivation in a batch.
#[derive(Debug)]
pub struct Job<'a> {
    /// The password (any length).
    pub password: &'a [u8],
    /// The salt (any length).
    pub salt: &'a [u8],
    /// Where the derived key goes; its length is the derived-key length.
    pub out: &'a mut [u8],
}

/// Derive every job in `jobs` (any number; split internally into the best lane width).
pub fn derive(prf: Prf, iterations: u32, jobs: &mut [Job<'_>]) {
    for job in jobs.iter_mut() {
        pbkdf2_hmac(prf, job.password, job.salt, iterations, job.out);
    }
}

/// How many jobs a caller should gather for one [`derive`] call to get the most
/// derivations per second on this CPU (1 means batching does not help).
pub fn preferred_batch(prf: Prf) -> usize {
    let _ = prf;
    1
}
