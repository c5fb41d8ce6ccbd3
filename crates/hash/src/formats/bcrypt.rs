//! bcrypt (`$2a$`, `$2b$`, `$2y$`) through the `bcrypt` crate, and the two SHA-256
//! pre-hashing wrappers found in the wild: Django's `bcrypt_sha256$` (hex SHA-256 of the
//! password) and passlib's `$bcrypt-sha256$` (v1: base64 SHA-256; v2: base64
//! HMAC-SHA256 keyed by the salt string).
//!
//! Like OpenBSD and pyca/bcrypt, the password (plus its NUL terminator) is cut at 72 bytes:
//! hashes stored by those systems were computed that way, so verification must match.

use base64::Engine;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose::STANDARD};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::common::{limits, parse_dec};
use crate::error::{FormatError, VerifyError};

/// bcrypt's own base64 alphabet (`./A-Za-z0-9`), tolerant of non-zero trailing bits in the
/// 22nd salt character, which some implementations leave set.
const BCRYPT_B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::BCRYPT,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// Longest bcrypt key (password plus NUL terminator) in bytes.
pub const MAX_KEY_LEN: usize = 72;

/// How the password is transformed before bcrypt sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BcryptPrehash {
    /// Plain bcrypt.
    None,
    /// Django `bcrypt_sha256$`: lowercase hex of SHA-256(password).
    DjangoSha256Hex,
    /// passlib `$bcrypt-sha256$` v1: standard base64 of SHA-256(password).
    PasslibSha256V1,
    /// passlib `$bcrypt-sha256$` v2: standard base64 of HMAC-SHA256(salt string, password).
    PasslibHmacSha256V2,
}

/// A parsed bcrypt hash.
#[derive(Clone, PartialEq, Eq)]
pub struct BcryptHash {
    /// Minor version letter: `a`, `b` or `y` (`$2x$` is refused).
    pub minor: char,
    /// log2 of the number of rounds.
    pub cost: u32,
    /// Raw 16-byte salt.
    pub salt: [u8; 16],
    /// The 22 salt characters as stored (passlib v2 keys its HMAC with them).
    pub salt_text: String,
    /// The stored 23-byte digest.
    pub hash: [u8; 23],
    /// Password pre-hashing.
    pub prehash: BcryptPrehash,
    /// Which system's encoding it came from.
    pub format: &'static str,
}

impl BcryptHash {
    /// Check `secret`; the comparison is constant-time.
    pub fn verify(&self, secret: &[u8]) -> Result<bool, VerifyError> {
        let key: Zeroizing<Vec<u8>> = Zeroizing::new(match self.prehash {
            BcryptPrehash::None => secret.to_vec(),
            BcryptPrehash::DjangoSha256Hex => hex::encode(Sha256::digest(secret)).into_bytes(),
            BcryptPrehash::PasslibSha256V1 => STANDARD.encode(Sha256::digest(secret)).into_bytes(),
            BcryptPrehash::PasslibHmacSha256V2 => {
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.salt_text.as_bytes())
                    .map_err(|_| VerifyError::Kdf("hmac key".into()))?;
                mac.update(secret);
                STANDARD.encode(mac.finalize().into_bytes()).into_bytes()
            }
        });
        let out = raw(self.cost, self.salt, &key)?;
        Ok(crate::ct_eq(&out[..23], &self.hash))
    }
}

/// bcrypt of `password` as the C implementations do it: NUL-terminated, cut at 72 bytes.
pub(crate) fn raw(cost: u32, salt: [u8; 16], password: &[u8]) -> Result<[u8; 24], VerifyError> {
    if !(4..=31).contains(&cost) {
        return Err(VerifyError::Kdf(format!("bcrypt cost {cost}")));
    }
    let mut key = Zeroizing::new(Vec::with_capacity(password.len().min(MAX_KEY_LEN) + 1));
    key.extend_from_slice(&password[..password.len().min(MAX_KEY_LEN)]);
    key.push(0);
    key.truncate(MAX_KEY_LEN);
    Ok(::bcrypt::bcrypt(cost, salt, &key))
}

/// Whether `s` starts like a modular-crypt bcrypt hash (`$2?$`).
pub fn is_modular(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 4 && b[0] == b'$' && b[1] == b'2' && b[3] == b'$'
}

/// Parse `$2b$12$<22 salt chars><31 hash chars>`.
pub fn parse_modular(s: &str, format: &'static str) -> Result<BcryptHash, FormatError> {
    parse_modular_hash(s, format, BcryptPrehash::None)
}

/// As [`parse_modular`] with a given pre-hash (Django's wrappers embed this encoding).
pub fn parse_modular_hash(
    s: &str,
    format: &'static str,
    prehash: BcryptPrehash,
) -> Result<BcryptHash, FormatError> {
    let mut parts = s.split('$');
    if parts.next() != Some("") {
        return Err(FormatError::malformed(format, "expected a leading $"));
    }
    let minor = match parts.next() {
        Some("2a") => 'a',
        Some("2b") => 'b',
        Some("2y") => 'y',
        Some("2x") => {
            return Err(FormatError::unsupported(
                format,
                "$2x$ (crypt_blowfish's buggy variant) cannot be verified reliably",
            ));
        }
        _ => {
            return Err(FormatError::malformed(
                format,
                "expected $2a$, $2b$ or $2y$",
            ));
        }
    };
    let (Some(cost), Some(body), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(FormatError::malformed(
            format,
            "expected $2b$<cost>$<salt+hash>",
        ));
    };
    let cost = parse_cost(format, cost)?;
    if body.len() != 53 || !body.is_ascii() {
        return Err(FormatError::malformed(
            format,
            "salt and hash must be 53 characters",
        ));
    }
    let (salt_text, hash_text) = body.split_at(22);
    build(format, minor, cost, salt_text, hash_text, prehash)
}

fn parse_cost(format: &'static str, cost: &str) -> Result<u32, FormatError> {
    if cost.len() != 2 {
        return Err(FormatError::malformed(format, "cost must be two digits"));
    }
    let cost: u32 = parse_dec(format, "bcrypt cost", cost)?;
    if cost < 4 {
        return Err(FormatError::unsupported(format, "bcrypt cost below 4"));
    }
    if cost > limits::MAX_BCRYPT_COST {
        return Err(FormatError::unsupported(
            format,
            format!(
                "bcrypt cost {cost} is above the limit of {}",
                limits::MAX_BCRYPT_COST
            ),
        ));
    }
    Ok(cost)
}

fn build(
    format: &'static str,
    minor: char,
    cost: u32,
    salt_text: &str,
    hash_text: &str,
    prehash: BcryptPrehash,
) -> Result<BcryptHash, FormatError> {
    let salt: [u8; 16] = BCRYPT_B64
        .decode(salt_text)
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| FormatError::malformed(format, "salt is not 22 bcrypt-base64 characters"))?;
    let hash: [u8; 23] = BCRYPT_B64
        .decode(hash_text)
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| FormatError::malformed(format, "hash is not 31 bcrypt-base64 characters"))?;
    Ok(BcryptHash {
        minor,
        cost,
        salt,
        salt_text: salt_text.to_owned(),
        hash,
        prehash,
        format,
    })
}

/// Parse passlib's `$bcrypt-sha256$v=2,t=2b,r=12$<salt>$<hash>` or the v1
/// `$bcrypt-sha256$2b,12$<salt>$<hash>`.
pub fn parse_passlib_sha256(s: &str) -> Result<BcryptHash, FormatError> {
    const F: &str = "passlib";
    let rest = s
        .strip_prefix("$bcrypt-sha256$")
        .ok_or_else(|| FormatError::malformed(F, "expected $bcrypt-sha256$"))?;
    let parts: Vec<&str> = rest.split('$').collect();
    let [params, salt, hash] = parts.as_slice() else {
        return Err(FormatError::malformed(
            F,
            "expected $bcrypt-sha256$<params>$<salt>$<hash>",
        ));
    };
    let (prehash, minor, cost) = if let Some(v2) = params.strip_prefix("v=") {
        let fields: Vec<&str> = v2.split(',').collect();
        let [version, t, r] = fields.as_slice() else {
            return Err(FormatError::malformed(F, "expected v=2,t=2b,r=<cost>"));
        };
        if *version != "2" {
            return Err(FormatError::unsupported(F, "bcrypt-sha256 version"));
        }
        if *t != "t=2b" {
            return Err(FormatError::malformed(F, "expected t=2b"));
        }
        let cost = r
            .strip_prefix("r=")
            .ok_or_else(|| FormatError::malformed(F, "expected r=<cost>"))?;
        (
            BcryptPrehash::PasslibHmacSha256V2,
            'b',
            parse_cost(F, &format!("{cost:0>2}"))?,
        )
    } else {
        let (t, cost) = params
            .split_once(',')
            .ok_or_else(|| FormatError::malformed(F, "expected 2b,<cost>"))?;
        let minor = match t {
            "2a" => 'a',
            "2b" => 'b',
            _ => return Err(FormatError::malformed(F, "expected 2a or 2b")),
        };
        (
            BcryptPrehash::PasslibSha256V1,
            minor,
            parse_cost(F, &format!("{cost:0>2}"))?,
        )
    };
    if salt.len() != 22 || hash.len() != 31 || !salt.is_ascii() || !hash.is_ascii() {
        return Err(FormatError::malformed(
            F,
            "salt must be 22 and hash 31 characters",
        ));
    }
    build(F, minor, cost, salt, hash, prehash)
}

impl std::fmt::Debug for BcryptHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Salt and hash are offline-guessing material: never in logs.
        f.debug_struct("BcryptHash")
            .field("minor", &self.minor)
            .field("cost", &self.cost)
            .field("prehash", &self.prehash)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openbsd_reference_vector() {
        // From the OpenBSD bcrypt regression tests (also in pyca/bcrypt's test suite):
        // password "U*U", cost 5.
        let h = parse_modular(
            "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
            "bcrypt",
        )
        .unwrap();
        assert!(h.verify(b"U*U").unwrap());
        assert!(!h.verify(b"U*V").unwrap());
    }

    #[test]
    fn mangled_strings_are_errors() {
        for s in [
            "$2b$",
            "$2b$12$",
            "$2b$1$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
            "$2b$99$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
            "$2b$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOe",
            "$2b$05$CCCCCCCCCCCCCCCCCCCCC!E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
            "$2x$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
            "$2b$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOéW",
        ] {
            assert!(parse_modular(s, "bcrypt").is_err(), "{s}");
        }
    }
}
