//! LDAP / RFC 2307-style SHA hashes: `{SSHA}`, `{SSHA256}`, `{SSHA384}`, `{SSHA512}` are
//! `base64(H(password || salt) || salt)`; `{SHA}`, `{SHA256}`, `{SHA384}`, `{SHA512}` are the
//! unsalted `base64(H(password))`. OpenLDAP, 389-ds, passlib and FreeRADIUS all read them.
//!
//! One hash call costs microseconds, so offline guessing is cheap: these are accepted only
//! to migrate, are always rehashed on the next login ([`crate::Policy::needs_rehash`]), and
//! count as [`crate::Cost::Cheap`] (verified inline, never queued in the hash pool).

use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::common::{b64_std, limits};
use crate::error::FormatError;

const FORMAT: &str = "ldap";

/// The digest of a salted-SHA hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShaDigest {
    /// SHA-1 (20 bytes).
    Sha1,
    /// SHA-256 (32 bytes).
    Sha256,
    /// SHA-384 (48 bytes).
    Sha384,
    /// SHA-512 (64 bytes).
    Sha512,
}

impl ShaDigest {
    /// Digest length in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            ShaDigest::Sha1 => 20,
            ShaDigest::Sha256 => 32,
            ShaDigest::Sha384 => 48,
            ShaDigest::Sha512 => 64,
        }
    }

    fn hash(self, parts: &[&[u8]]) -> Vec<u8> {
        fn run<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
            let mut d = D::new();
            for p in parts {
                d.update(p);
            }
            d.finalize().to_vec()
        }
        match self {
            ShaDigest::Sha1 => run::<Sha1>(parts),
            ShaDigest::Sha256 => run::<Sha256>(parts),
            ShaDigest::Sha384 => run::<Sha384>(parts),
            ShaDigest::Sha512 => run::<Sha512>(parts),
        }
    }
}

/// A parsed (salted or unsalted) SHA hash.
#[derive(Clone, PartialEq, Eq)]
pub struct SaltedSha {
    /// Digest.
    pub digest: ShaDigest,
    /// Salt (empty for the unsalted `{SHA*}` schemes).
    pub salt: Vec<u8>,
    /// Expected digest.
    pub hash: Vec<u8>,
    /// Which system's encoding it came from.
    pub format: &'static str,
}

impl SaltedSha {
    /// Check `secret`; the comparison is constant-time.
    pub fn verify(&self, secret: &[u8]) -> bool {
        crate::ct_eq(&self.digest.hash(&[secret, &self.salt]), &self.hash)
    }
}

/// Parse `{SSHA}...` and friends (scheme names are case-insensitive, as in OpenLDAP).
pub fn parse(s: &str) -> Result<SaltedSha, FormatError> {
    let close = s
        .find('}')
        .filter(|_| s.starts_with('{'))
        .ok_or_else(|| FormatError::malformed(FORMAT, "expected {SCHEME}base64"))?;
    let scheme = s[1..close].to_ascii_uppercase();
    let body = &s[close + 1..];
    let (digest, salted) = match scheme.as_str() {
        "SSHA" | "SSHA1" => (ShaDigest::Sha1, true),
        "SSHA256" | "SSHA2-256" => (ShaDigest::Sha256, true),
        "SSHA384" | "SSHA2-384" => (ShaDigest::Sha384, true),
        "SSHA512" | "SSHA2-512" => (ShaDigest::Sha512, true),
        "SHA" | "SHA1" => (ShaDigest::Sha1, false),
        "SHA256" | "SHA2-256" => (ShaDigest::Sha256, false),
        "SHA384" | "SHA2-384" => (ShaDigest::Sha384, false),
        "SHA512" | "SHA2-512" => (ShaDigest::Sha512, false),
        _ => {
            return Err(FormatError::Unrecognised(format!(
                ": unsupported {{scheme}} {:?}",
                super::common::truncate(&scheme)
            )));
        }
    };
    let raw = b64_std(FORMAT, "value", body)?;
    let n = digest.output_len();
    if salted {
        if raw.len() <= n {
            return Err(FormatError::malformed(
                FORMAT,
                format!("{{{scheme}}} value must be longer than the {n}-byte digest"),
            ));
        }
        if raw.len() - n > limits::MAX_SALT_LEN {
            return Err(FormatError::unsupported(FORMAT, "salt is too long"));
        }
    } else if raw.len() != n {
        return Err(FormatError::malformed(
            FORMAT,
            format!("{{{scheme}}} value must be exactly {n} bytes"),
        ));
    }
    let (hash, salt) = raw.split_at(n);
    Ok(SaltedSha {
        digest,
        salt: salt.to_vec(),
        hash: hash.to_vec(),
        format: FORMAT,
    })
}

impl std::fmt::Debug for SaltedSha {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Salt and hash are offline-guessing material: never in logs.
        f.debug_struct("SaltedSha")
            .field("digest", &self.digest)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssha_layout_is_digest_then_salt() {
        // Computed independently with Python:
        // base64.b64encode(hashlib.sha1(b"secret" + b"salt").digest() + b"salt")
        let h = parse("{SSHA}gVK8WC9YyFT1gMsQHTGCgT3sSv5zYWx0").unwrap();
        assert_eq!(h.salt, b"salt");
        assert!(h.verify(b"secret"));
        assert!(!h.verify(b"secreT"));
    }

    #[test]
    fn bad_lengths_are_malformed() {
        assert!(parse("{SSHA}AAAA").is_err());
        assert!(parse("{SHA256}AAAA").is_err());
        assert!(parse("{SSHA").is_err());
        assert!(parse("{MD5}AAAA").is_err());
    }
}
