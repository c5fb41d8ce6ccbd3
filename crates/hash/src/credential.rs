//! A stored credential of any supported format, parsed once and then verified many times.
//!
//! The `core` crate's hash pool sees only this type: it asks for the [`Cost`] (to weigh
//! fair queuing and decide whether the pool is needed at all), the [`BatchKey`] (to group
//! PBKDF2 jobs that can be derived together) and calls [`Credential::verify`].
//!
//! Format detection and the per-system parsers live in [`crate::formats`]; this type is the
//! algorithm-level result: whichever system wrote a PBKDF2 hash, it is a
//! [`Credential::Pbkdf2`] and batches with every other PBKDF2 hash of the same parameters.

use crate::error::VerifyError;
use crate::formats::argon2::Argon2Hash;
use crate::formats::bcrypt::BcryptHash;
use crate::formats::salted_sha::SaltedSha;
use crate::formats::scrypt::ScryptHash;
use crate::pbkdf2::{self, Prf};
use crate::pepper::{PepperedHmac, Peppers};

/// Expected cost of one verification, used for scheduling, never for security decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cost {
    /// Microseconds of work (peppered HMAC, salted SHA): verified inline, no pool needed.
    Cheap,
    /// Expensive KDF work measured in SHA-256-compression equivalents (one unit is roughly
    /// the cost of one SHA-256 block compression on the machine).
    Work(u64),
}

/// Jobs with equal keys can be derived together by the batch kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BatchKey {
    /// PBKDF2 PRF.
    pub prf: Prf,
    /// PBKDF2 iteration count.
    pub iterations: u32,
}

/// Cost-model constants: work units (SHA-256 compressions) per unit of each KDF's own cost
/// parameter. From `portcullis hash calibrate` on the reference machine (AMD EPYC with
/// SHA-NI, shared and loaded, so the figures are medians of a few noisy runs): a SHA-256
/// compression took 36-57 ns, an argon2 block-pass 0.4-0.7 us (more at large memory), a
/// bcrypt round 60-130 us, a scrypt N*r step 0.55-0.8 us. They only need to be right within
/// about a factor of two: they weigh scheduling, never security.
pub mod cost_model {
    /// Units per argon2 1 KiB block per pass.
    pub const ARGON2_PER_BLOCK_PASS: u64 = 16;
    /// Units per bcrypt round (a cost-`c` hash runs `2^c` rounds).
    pub const BCRYPT_PER_ROUND: u64 = 2_700;
    /// Units per scrypt `N * r * p` step (one 128-byte block through ROMix).
    pub const SCRYPT_PER_NRP: u64 = 16;
}

/// A parsed stored credential. Its `Debug` shows parameters, never salts or hashes.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// PBKDF2 in any of the encodings we read; `format` says which system wrote it.
    Pbkdf2 {
        /// PRF.
        prf: Prf,
        /// Iteration count.
        iterations: u32,
        /// Raw salt.
        salt: Vec<u8>,
        /// Raw expected derived key (its length is the derived-key length).
        hash: Vec<u8>,
        /// Which encoding it came from (`"phc"`, `"django"`, ...), for reports and rehash.
        format: &'static str,
    },
    /// Argon2id / argon2i / argon2d.
    Argon2(Argon2Hash),
    /// bcrypt, possibly behind a SHA-256 pre-hash (Django, passlib wrappers).
    Bcrypt(BcryptHash),
    /// scrypt.
    Scrypt(ScryptHash),
    /// LDAP-style (salted) SHA: migration only, always rehashed.
    SaltedSha(SaltedSha),
    /// HMAC-SHA256 under a server pepper (server-generated secrets).
    Peppered(PepperedHmac),
}

impl Credential {
    /// Check `secret` against this credential in constant time (for the comparison).
    pub fn verify(&self, secret: &[u8], peppers: &Peppers) -> Result<bool, VerifyError> {
        self.verify_lanes(secret, peppers, &crate::argon2_kernel::Serial)
    }

    /// [`Credential::verify`], with the lanes of an argon2 hash of more than one lane run
    /// through `lanes` (the hash pool lends them to its idle threads); other KDFs ignore it.
    pub fn verify_lanes(
        &self,
        secret: &[u8],
        peppers: &Peppers,
        lanes: &dyn crate::argon2_kernel::LaneExecutor,
    ) -> Result<bool, VerifyError> {
        match self {
            Credential::Peppered(p) => p.verify(secret, peppers),
            Credential::Pbkdf2 {
                prf,
                iterations,
                salt,
                hash,
                ..
            } => {
                let mut out = zeroize::Zeroizing::new(vec![0u8; hash.len()]);
                pbkdf2::pbkdf2_hmac(*prf, secret, salt, *iterations, &mut out);
                Ok(crate::ct_eq(&out, hash))
            }
            Credential::Argon2(h) => h.verify_lanes(secret, lanes),
            Credential::Bcrypt(h) => h.verify(secret),
            Credential::Scrypt(h) => h.verify(secret),
            Credential::SaltedSha(h) => Ok(h.verify(secret)),
        }
    }

    /// Expected cost, for scheduling (units: see [`Cost::Work`] and [`cost_model`]).
    pub fn cost(&self) -> Cost {
        use cost_model::*;
        match self {
            // One or two hash calls: microseconds, like the peppered HMAC.
            Credential::Peppered(_) | Credential::SaltedSha(_) => Cost::Cheap,
            Credential::Pbkdf2 {
                prf,
                iterations,
                hash,
                ..
            } => {
                let blocks = hash.len().div_ceil(prf.output_len()).max(1) as u64;
                // Two compressions per iteration; SHA-512 blocks cost about twice a SHA-256 one
                // on CPUs with SHA-NI for SHA-256 only.
                let per = match prf {
                    Prf::Sha1 | Prf::Sha256 => 2,
                    Prf::Sha512 => 4,
                };
                Cost::Work(blocks * u64::from(*iterations) * per)
            }
            Credential::Argon2(h) => {
                Cost::Work(u64::from(h.m_cost) * u64::from(h.t_cost) * ARGON2_PER_BLOCK_PASS)
            }
            Credential::Bcrypt(h) => Cost::Work((1u64 << h.cost) * BCRYPT_PER_ROUND),
            Credential::Scrypt(h) => {
                Cost::Work((1u64 << h.log_n) * u64::from(h.r) * u64::from(h.p) * SCRYPT_PER_NRP)
            }
        }
    }

    /// Working memory one verification needs, in bytes (0 for the KDFs that need next to
    /// none): what the pool's memory budget counts.
    pub fn memory_bytes(&self) -> u64 {
        match self {
            Credential::Argon2(h) => {
                crate::argon2_kernel::block_count(h.m_cost, h.p_cost) as u64
                    * crate::argon2_kernel::BLOCK_BYTES as u64
            }
            // V: N blocks of 128 r bytes (p runs one after another, reusing it).
            Credential::Scrypt(h) => (1u64 << h.log_n).saturating_mul(128 * u64::from(h.r)),
            _ => 0,
        }
    }

    /// Batch key if this credential can be derived by the batch kernel (PBKDF2 only).
    pub fn batch_key(&self) -> Option<BatchKey> {
        match self {
            Credential::Pbkdf2 {
                prf, iterations, ..
            } => Some(BatchKey {
                prf: *prf,
                iterations: *iterations,
            }),
            _ => None,
        }
    }

    /// Short algorithm name for logs, metrics and reports (never secret).
    pub fn algorithm(&self) -> &'static str {
        match self {
            Credential::Peppered(_) => "hmac-sha256",
            Credential::Pbkdf2 { prf, .. } => match prf {
                Prf::Sha1 => "pbkdf2-sha1",
                Prf::Sha256 => "pbkdf2-sha256",
                Prf::Sha512 => "pbkdf2-sha512",
            },
            Credential::Argon2(h) => h.variant.ident(),
            Credential::Bcrypt(h) => match h.prehash {
                crate::formats::bcrypt::BcryptPrehash::None => "bcrypt",
                _ => "bcrypt-sha256",
            },
            Credential::Scrypt(_) => "scrypt",
            Credential::SaltedSha(h) => match (h.digest, h.salt.is_empty()) {
                (crate::formats::salted_sha::ShaDigest::Sha1, false) => "ssha",
                (crate::formats::salted_sha::ShaDigest::Sha256, false) => "ssha256",
                (crate::formats::salted_sha::ShaDigest::Sha384, false) => "ssha384",
                (crate::formats::salted_sha::ShaDigest::Sha512, false) => "ssha512",
                (crate::formats::salted_sha::ShaDigest::Sha1, true) => "sha1",
                (crate::formats::salted_sha::ShaDigest::Sha256, true) => "sha256",
                (crate::formats::salted_sha::ShaDigest::Sha384, true) => "sha384",
                (crate::formats::salted_sha::ShaDigest::Sha512, true) => "sha512",
            },
        }
    }

    /// Which system's encoding the credential was read from (`"phc"`, `"django"`,
    /// `"aspnet"`, ...; `"portcullis"` for peppered HMAC), for reports and rehash decisions.
    pub fn format(&self) -> &'static str {
        match self {
            Credential::Pbkdf2 { format, .. } => format,
            Credential::Argon2(h) => h.format,
            Credential::Bcrypt(h) => h.format,
            Credential::Scrypt(h) => h.format,
            Credential::SaltedSha(h) => h.format,
            Credential::Peppered(_) => "portcullis",
        }
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Pbkdf2 {
                prf,
                iterations,
                format,
                ..
            } => f
                .debug_struct("Pbkdf2")
                .field("prf", prf)
                .field("iterations", iterations)
                .field("format", format)
                .finish_non_exhaustive(),
            Credential::Argon2(h) => f.debug_tuple("Argon2").field(h).finish(),
            Credential::Bcrypt(h) => f.debug_tuple("Bcrypt").field(h).finish(),
            Credential::Scrypt(h) => f.debug_tuple("Scrypt").field(h).finish(),
            Credential::SaltedSha(h) => f.debug_tuple("SaltedSha").field(h).finish(),
            Credential::Peppered(p) => f
                .debug_struct("Peppered")
                .field("key_id", &p.key_id)
                .finish_non_exhaustive(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_salt_or_hash() {
        let c = Credential::parse(
            "pbkdf2_sha256$1000$seasalt$aZOLUDnbVq4qfmIhIFCkAqvDNHspRzj9l43SgVe7GOM=",
        )
        .unwrap();
        let shown = format!("{c:?}");
        assert!(shown.contains("1000") && !shown.contains("seasalt") && !shown.contains("105"));
        let a = Credential::parse(
            "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        )
        .unwrap();
        let shown = format!("{a:?}");
        assert!(shown.contains("65536") && !shown.contains("salt: ") && !shown.contains("hash: "));
    }
}
