//! A stored credential of any supported format, parsed once and then verified many times.
//!
//! The `core` crate's hash pool sees only this type: it asks for the [`Cost`] (to weigh
//! fair queuing and decide whether the pool is needed at all), the [`BatchKey`] (to group
//! PBKDF2 jobs that can be derived together) and calls [`Credential::verify`].
//!
//! Format detection lives here; each format's parser lives beside its algorithm.

use crate::error::{FormatError, VerifyError};
use crate::pbkdf2::{self, Prf};
use crate::pepper::{PepperedHmac, Peppers};

/// Expected cost of one verification, used for scheduling, never for security decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cost {
    /// Microseconds of work (peppered HMAC): verified inline, no pool needed.
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

/// A parsed stored credential.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// HMAC-SHA256 under a server pepper (server-generated secrets).
    Peppered(PepperedHmac),
}

impl Credential {
    /// Detect the format of `s` and parse it.
    pub fn parse(s: &str) -> Result<Self, FormatError> {
        let s = s.trim();
        if s.starts_with("$hmac-sha256$") {
            return PepperedHmac::parse(s).map(Credential::Peppered);
        }
        if s.starts_with("$pbkdf2-") {
            let p = pbkdf2::parse_phc(s)?;
            return Ok(Credential::Pbkdf2 {
                prf: p.prf,
                iterations: p.iterations,
                salt: p.salt,
                hash: p.hash,
                format: "phc",
            });
        }
        Err(FormatError::Unrecognised(String::new()))
    }

    /// Check `secret` against this credential in constant time (for the comparison).
    pub fn verify(&self, secret: &[u8], peppers: &Peppers) -> Result<bool, VerifyError> {
        match self {
            Credential::Peppered(p) => p.verify(secret, peppers),
            Credential::Pbkdf2 {
                prf,
                iterations,
                salt,
                hash,
                ..
            } => {
                let mut out = vec![0u8; hash.len()];
                pbkdf2::pbkdf2_hmac(*prf, secret, salt, *iterations, &mut out);
                Ok(crate::ct_eq(&out, hash))
            }
        }
    }

    /// Expected cost, for scheduling.
    pub fn cost(&self) -> Cost {
        match self {
            Credential::Peppered(_) => Cost::Cheap,
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
        }
    }

    /// Batch key if this credential can be derived by the batch kernel.
    pub fn batch_key(&self) -> Option<BatchKey> {
        match self {
            Credential::Pbkdf2 {
                prf, iterations, ..
            } => Some(BatchKey {
                prf: *prf,
                iterations: *iterations,
            }),
            Credential::Peppered(_) => None,
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
        }
    }
}
