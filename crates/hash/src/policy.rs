//! The current hashing policy: which algorithm and cost new password hashes get, and
//! whether a stored credential should be upgraded after a successful login.
//!
//! A stored credential is rehashed when it does not match the policy exactly (algorithm,
//! every cost parameter, our own PHC encoding, a 16-byte salt and 32-byte output), in
//! either direction: lowering the policy's cost is how an operator takes load off the
//! hash pool, so stronger-than-policy hashes are brought down too (as Django and
//! argon2-cffi do). Salted SHA and every imported legacy encoding are always rehashed;
//! peppered HMAC credentials (server-generated secrets) never are.
//!
//! [`PolicyConfig`] is the serde form for the server's TOML config, validated into
//! [`Policy`] by [`PolicyConfig::into_policy`].

use serde::Deserialize;
use zeroize::Zeroizing;

use crate::credential::Credential;
use crate::error::RandomError;
use crate::formats::argon2::{self, Argon2Variant};
use crate::formats::bcrypt::BcryptPrehash;
use crate::formats::common::b64_encode;
use crate::formats::{limits, scrypt};
use crate::pbkdf2::{self, Prf};

/// Salt length of every hash we write.
pub const SALT_LEN: usize = 16;
/// Output length of every argon2 / scrypt / PBKDF2-SHA256 hash we write.
pub const OUTPUT_LEN: usize = 32;

/// Algorithm and cost for newly stored password hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Policy {
    /// PBKDF2 with this PRF and iteration count (OWASP 2023: SHA-256 x600,000,
    /// SHA-512 x210,000). Written as `$pbkdf2-<prf>$i=..,l=..$salt$hash`.
    Pbkdf2 {
        /// PRF.
        prf: Prf,
        /// Iterations.
        iterations: u32,
    },
    /// Argon2id v1.3 (OWASP: m=19456 KiB, t=2, p=1). Written as `$argon2id$v=19$...`.
    Argon2id {
        /// Memory in KiB.
        m: u32,
        /// Passes.
        t: u32,
        /// Lanes.
        p: u32,
    },
    /// bcrypt `$2b$` (OWASP: cost >= 10). Passwords over 72 bytes are refused by
    /// [`Policy::hash`] rather than silently truncated.
    Bcrypt {
        /// log2 rounds.
        cost: u32,
    },
    /// scrypt (OWASP: N=2^17, r=8, p=1). Written as `$scrypt$ln=..,r=..,p=..$salt$hash`.
    Scrypt {
        /// log2(N).
        log_n: u8,
        /// Block size.
        r: u32,
        /// Parallelism.
        p: u32,
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

/// [`Policy::hash`] could not produce a hash.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum HashError {
    /// The OS RNG failed (no salt).
    #[error(transparent)]
    Random(#[from] RandomError),
    /// bcrypt reads at most 72 bytes; longer passwords would be silently truncated.
    #[error("password longer than {max} bytes cannot be hashed with bcrypt")]
    PasswordTooLong {
        /// Longest accepted password in bytes.
        max: usize,
    },
    /// The KDF refused its parameters (only if a `Policy` was built with invalid values;
    /// [`Policy::validate`] catches those first).
    #[error("hash computation failed: {0}")]
    Kdf(String),
}

/// A policy's parameters are out of range.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("invalid hash policy: {0}")]
pub struct PolicyError(pub String);

impl Policy {
    /// Check that hashes written under this policy are ones our own parsers accept.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let bad = |s: String| Err(PolicyError(s));
        match *self {
            Policy::Pbkdf2 { iterations, .. } => {
                if !(1000..=limits::MAX_PBKDF2_ITERATIONS).contains(&iterations) {
                    return bad(format!(
                        "pbkdf2 iterations must be 1000..={}",
                        limits::MAX_PBKDF2_ITERATIONS
                    ));
                }
            }
            Policy::Argon2id { m, t, p } => {
                argon2::Argon2Hash::new(
                    "policy",
                    Argon2Variant::Id,
                    0x13,
                    m,
                    t,
                    p,
                    vec![0; SALT_LEN],
                    vec![0; OUTPUT_LEN],
                )
                .map_err(|e| PolicyError(e.to_string()))?;
            }
            Policy::Bcrypt { cost } => {
                if !(4..=limits::MAX_BCRYPT_COST).contains(&cost) {
                    return bad(format!(
                        "bcrypt cost must be 4..={}",
                        limits::MAX_BCRYPT_COST
                    ));
                }
            }
            Policy::Scrypt { log_n, r, p } => {
                scrypt::ScryptHash::new(
                    "policy",
                    log_n,
                    r,
                    p,
                    vec![0; SALT_LEN],
                    vec![0; OUTPUT_LEN],
                )
                .map_err(|e| PolicyError(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Whether `stored` is weaker than or different from this policy (see the module doc).
    /// Peppered credentials are server-generated secrets and are never rehashed.
    pub fn needs_rehash(&self, stored: &Credential) -> bool {
        match (self, stored) {
            (_, Credential::Peppered(_)) => false,
            (_, Credential::SaltedSha(_)) => true,
            (
                Policy::Pbkdf2 { prf, iterations },
                Credential::Pbkdf2 {
                    prf: p,
                    iterations: i,
                    format,
                    salt,
                    hash,
                },
            ) => {
                p != prf
                    || i != iterations
                    || *format != "phc"
                    || salt.len() < SALT_LEN
                    || hash.len() != prf.output_len()
            }
            (Policy::Argon2id { m, t, p }, Credential::Argon2(h)) => {
                h.variant != Argon2Variant::Id
                    || h.version != 0x13
                    || h.m_cost != *m
                    || h.t_cost != *t
                    || h.p_cost != *p
                    || h.format != "phc"
                    || h.salt.len() < SALT_LEN
                    || h.hash.len() < OUTPUT_LEN
            }
            (Policy::Bcrypt { cost }, Credential::Bcrypt(h)) => {
                h.cost != *cost
                    || h.prehash != BcryptPrehash::None
                    || h.minor != 'b'
                    || h.format != "bcrypt"
            }
            (Policy::Scrypt { log_n, r, p }, Credential::Scrypt(h)) => {
                h.log_n != *log_n
                    || h.r != *r
                    || h.p != *p
                    || h.format != "phc"
                    || h.salt.len() < SALT_LEN
                    || h.hash.len() < OUTPUT_LEN
            }
            // A different algorithm than the policy's.
            _ => true,
        }
    }

    /// Hash `secret` under this policy with a fresh random salt, in our stored encoding
    /// (PHC strings; `$2b$` for bcrypt). [`crate::Credential::parse`] reads it back and
    /// [`Policy::needs_rehash`] is false for it.
    pub fn hash(&self, secret: &[u8]) -> Result<String, HashError> {
        let mut salt = [0u8; SALT_LEN];
        crate::os_random(&mut salt)?;
        match *self {
            Policy::Pbkdf2 { prf, iterations } => {
                let mut out = Zeroizing::new(vec![0u8; prf.output_len()]);
                pbkdf2::pbkdf2_hmac(prf, secret, &salt, iterations, &mut out);
                Ok(pbkdf2::format_phc(prf, iterations, &salt, &out))
            }
            Policy::Argon2id { m, t, p } => {
                let mut out = Zeroizing::new([0u8; OUTPUT_LEN]);
                argon2::derive(
                    Argon2Variant::Id,
                    0x13,
                    (m, t, p),
                    secret,
                    &salt,
                    &mut out[..],
                    &crate::argon2_kernel::Serial,
                )
                .map_err(|e| HashError::Kdf(e.to_string()))?;
                Ok(format!(
                    "$argon2id$v=19$m={m},t={t},p={p}${}${}",
                    b64_encode(&salt),
                    b64_encode(&out[..])
                ))
            }
            Policy::Bcrypt { cost } => {
                let parts = ::bcrypt::non_truncating_hash_with_salt(secret, cost, salt).map_err(
                    |e| match e {
                        ::bcrypt::BcryptError::Truncation(_) => HashError::PasswordTooLong {
                            max: crate::formats::bcrypt::MAX_KEY_LEN - 1,
                        },
                        other => HashError::Kdf(other.to_string()),
                    },
                )?;
                Ok(parts.format_for_version(::bcrypt::Version::TwoB))
            }
            Policy::Scrypt { log_n, r, p } => {
                let mut out = Zeroizing::new([0u8; OUTPUT_LEN]);
                scrypt::derive(log_n, r, p, secret, &salt, &mut out[..])
                    .map_err(|e| HashError::Kdf(e.to_string()))?;
                Ok(format!(
                    "$scrypt$ln={log_n},r={r},p={p}${}${}",
                    b64_encode(&salt),
                    b64_encode(&out[..])
                ))
            }
        }
    }
}

/// The `[hash]` policy section of a config file, validated into a [`Policy`].
///
/// ```toml
/// algorithm = "argon2id"   # pbkdf2-sha256 | pbkdf2-sha512 | argon2id | bcrypt | scrypt
/// memory_kib = 19456       # argon2id only
/// time_cost = 2            # argon2id only
/// parallelism = 1          # argon2id and scrypt
/// ```
///
/// Parameters that do not belong to the chosen algorithm are an error (a typo or a
/// half-edited config should not silently fall back to defaults).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Algorithm for new hashes. Default `"pbkdf2-sha256"`.
    pub algorithm: Option<String>,
    /// PBKDF2 iterations. Default 600,000 for SHA-256, 210,000 for SHA-512.
    pub iterations: Option<u32>,
    /// Argon2id memory in KiB. Default 19,456 (19 MiB).
    pub memory_kib: Option<u32>,
    /// Argon2id passes. Default 2.
    pub time_cost: Option<u32>,
    /// Argon2id lanes / scrypt p. Default 1.
    pub parallelism: Option<u32>,
    /// bcrypt cost (log2 rounds). Default 12.
    pub cost: Option<u32>,
    /// scrypt log2(N). Default 17.
    pub log_n: Option<u8>,
    /// scrypt block size r. Default 8.
    pub block_size: Option<u32>,
}

impl PolicyConfig {
    /// Validate into a [`Policy`].
    pub fn into_policy(self) -> Result<Policy, PolicyError> {
        let algorithm = self.algorithm.as_deref().unwrap_or("pbkdf2-sha256");
        let allowed: &[&str];
        let policy = match algorithm {
            "pbkdf2-sha256" | "pbkdf2-sha512" | "pbkdf2-sha1" => {
                allowed = &["iterations"];
                let prf = match algorithm {
                    "pbkdf2-sha512" => Prf::Sha512,
                    "pbkdf2-sha1" => Prf::Sha1,
                    _ => Prf::Sha256,
                };
                let default = match prf {
                    Prf::Sha512 => 210_000,
                    Prf::Sha1 => 1_300_000,
                    Prf::Sha256 => 600_000,
                };
                Policy::Pbkdf2 {
                    prf,
                    iterations: self.iterations.unwrap_or(default),
                }
            }
            "argon2id" => {
                allowed = &["memory_kib", "time_cost", "parallelism"];
                Policy::Argon2id {
                    m: self.memory_kib.unwrap_or(19_456),
                    t: self.time_cost.unwrap_or(2),
                    p: self.parallelism.unwrap_or(1),
                }
            }
            "bcrypt" => {
                allowed = &["cost"];
                Policy::Bcrypt {
                    cost: self.cost.unwrap_or(12),
                }
            }
            "scrypt" => {
                allowed = &["log_n", "block_size", "parallelism"];
                Policy::Scrypt {
                    log_n: self.log_n.unwrap_or(17),
                    r: self.block_size.unwrap_or(8),
                    p: self.parallelism.unwrap_or(1),
                }
            }
            other => {
                return Err(PolicyError(format!(
                    "unknown algorithm {other:?} (expected pbkdf2-sha256, pbkdf2-sha512, argon2id, bcrypt or scrypt)"
                )));
            }
        };
        let set = [
            ("iterations", self.iterations.is_some()),
            ("memory_kib", self.memory_kib.is_some()),
            ("time_cost", self.time_cost.is_some()),
            ("parallelism", self.parallelism.is_some()),
            ("cost", self.cost.is_some()),
            ("log_n", self.log_n.is_some()),
            ("block_size", self.block_size.is_some()),
        ];
        if let Some((name, _)) = set
            .iter()
            .find(|(name, present)| *present && !allowed.contains(name))
        {
            return Err(PolicyError(format!(
                "`{name}` does not apply to algorithm {algorithm:?}"
            )));
        }
        policy.validate()?;
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Peppers;

    fn cheap_policies() -> Vec<Policy> {
        vec![
            Policy::Pbkdf2 {
                prf: Prf::Sha256,
                iterations: 1000,
            },
            Policy::Argon2id { m: 64, t: 1, p: 1 },
            Policy::Bcrypt { cost: 4 },
            Policy::Scrypt {
                log_n: 4,
                r: 8,
                p: 1,
            },
        ]
    }

    #[test]
    fn hashes_round_trip_and_match_their_policy() {
        for policy in cheap_policies() {
            policy.validate().unwrap();
            let s = policy.hash(b"correct horse").unwrap();
            let c = Credential::parse(&s).unwrap_or_else(|e| panic!("{policy:?}: {s}: {e}"));
            assert!(c.verify(b"correct horse", &Peppers::new()).unwrap(), "{s}");
            assert!(!c.verify(b"correct horsf", &Peppers::new()).unwrap(), "{s}");
            assert!(
                !policy.needs_rehash(&c),
                "{policy:?} wants to rehash its own {s}"
            );
            for other in cheap_policies() {
                if other != policy {
                    assert!(other.needs_rehash(&c), "{other:?} keeps {s}");
                }
            }
        }
    }

    #[test]
    fn bcrypt_refuses_to_truncate() {
        let long = [b'a'; 73];
        assert_eq!(
            Policy::Bcrypt { cost: 4 }.hash(&long),
            Err(HashError::PasswordTooLong { max: 71 })
        );
    }

    #[test]
    fn config_reads_from_toml_and_refuses_unknown_fields() {
        let cfg: PolicyConfig =
            toml::from_str("algorithm = \"scrypt\"\nlog_n = 15\nblock_size = 8\n").unwrap();
        assert_eq!(
            cfg.into_policy(),
            Ok(Policy::Scrypt {
                log_n: 15,
                r: 8,
                p: 1
            })
        );
        assert!(toml::from_str::<PolicyConfig>("algoritm = \"bcrypt\"\n").is_err());
        assert!(toml::from_str::<PolicyConfig>("cost = \"12\"\n").is_err());
    }

    #[test]
    fn config_validation() {
        let cfg = |algorithm: &str| PolicyConfig {
            algorithm: Some(algorithm.into()),
            ..PolicyConfig::default()
        };
        assert_eq!(PolicyConfig::default().into_policy(), Ok(Policy::default()));
        assert_eq!(
            cfg("argon2id").into_policy(),
            Ok(Policy::Argon2id {
                m: 19_456,
                t: 2,
                p: 1
            })
        );
        assert!(cfg("md5").into_policy().is_err());
        let mut mixed = cfg("bcrypt");
        mixed.iterations = Some(5);
        assert!(mixed.into_policy().is_err());
        let mut weak = cfg("bcrypt");
        weak.cost = Some(3);
        assert!(weak.into_policy().is_err());
    }
}
