//! The current hashing policy: which algorithm and cost new password hashes get, and
//! whether a stored credential should be upgraded after a successful login.
//!
//! SKELETON: pbkdf2-sha256 only; the formats issue (#7) extends it to argon2id, bcrypt and
//! scrypt. The signatures are what `core` codes against; keep them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;

use crate::credential::Credential;
use crate::error::RandomError;
use crate::pbkdf2::{self, Prf};

/// Algorithm and cost for newly stored password hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// PBKDF2 with this PRF and iteration count (OWASP 2023: SHA-256 x600,000).
    Pbkdf2 {
        /// PRF.
        prf: Prf,
        /// Iterations.
        iterations: u32,
    },
}

impl Default for Policy {
    fn default() -> Self {
        Policy::Pbkdf2 {
            prf: Prf::Sha256,
            iterations: 600_000,
        }
    }
}

impl Policy {
    /// Whether `stored` is weaker than (or different from) this policy.
    /// Peppered credentials are server-generated secrets and are never rehashed.
    pub fn needs_rehash(&self, stored: &Credential) -> bool {
        match (self, stored) {
            (_, Credential::Peppered(_)) => false,
            (
                Policy::Pbkdf2 { prf, iterations },
                Credential::Pbkdf2 {
                    prf: p,
                    iterations: i,
                    format,
                    salt,
                    ..
                },
            ) => p != prf || i < iterations || *format != "phc" || salt.len() < 16,
        }
    }

    /// Hash `secret` under this policy with a fresh random salt, as a PHC string.
    pub fn hash(&self, secret: &[u8]) -> Result<String, RandomError> {
        match self {
            Policy::Pbkdf2 { prf, iterations } => {
                let mut salt = [0u8; 16];
                crate::os_random(&mut salt)?;
                let mut out = vec![0u8; prf.output_len()];
                pbkdf2::pbkdf2_hmac(*prf, secret, &salt, *iterations, &mut out);
                Ok(format!(
                    "$pbkdf2-{}$i={},l={}${}${}",
                    prf.name(),
                    iterations,
                    out.len(),
                    STANDARD_NO_PAD.encode(salt),
                    STANDARD_NO_PAD.encode(&out)
                ))
            }
        }
    }
}
