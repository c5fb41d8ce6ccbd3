//! Django's `<algorithm>$<fields>` encodings (django.contrib.auth.hashers):
//!
//! - `pbkdf2_sha256$<iterations>$<salt>$<base64 hash>` and `pbkdf2_sha1$...`: the salt is
//!   used as the bytes of the salt *string*; the key length is the digest length.
//! - `argon2$argon2id$v=19$m=..,t=..,p=..$<salt>$<hash>`: the PHC string minus its `$`.
//! - `bcrypt_sha256$$2b$12$...`: bcrypt of the hex SHA-256 of the password.
//! - `bcrypt$$2b$12$...`: plain bcrypt.
//! - `scrypt$<N>$<salt>$<r>$<p>$<base64 hash>`: salt string bytes, 64-byte output.

use super::common::{b64_std, check_pbkdf2, parse_dec, prf_from_hashlib_name};
use crate::credential::Credential;
use crate::error::FormatError;
use crate::formats::{argon2, bcrypt, scrypt};

const FORMAT: &str = "django";

/// Parse `s` if it carries a Django algorithm prefix; `None` if it does not look like one.
pub fn try_parse(s: &str) -> Option<Result<Credential, FormatError>> {
    let (algorithm, rest) = s.split_once('$')?;
    let parsed = match algorithm {
        "pbkdf2_sha256" => parse_pbkdf2("sha256", rest),
        "pbkdf2_sha1" => parse_pbkdf2("sha1", rest),
        "pbkdf2_sha512" => parse_pbkdf2("sha512", rest),
        "argon2" => argon2::parse_phc_hash(&s["argon2".len()..], FORMAT).map(Credential::Argon2),
        "bcrypt_sha256" => {
            bcrypt::parse_modular_hash(rest, FORMAT, bcrypt::BcryptPrehash::DjangoSha256Hex)
                .map(Credential::Bcrypt)
        }
        "bcrypt" => bcrypt::parse_modular_hash(rest, FORMAT, bcrypt::BcryptPrehash::None)
            .map(Credential::Bcrypt),
        "scrypt" => parse_scrypt(rest),
        _ => return None,
    };
    Some(parsed)
}

fn parse_pbkdf2(digest: &str, rest: &str) -> Result<Credential, FormatError> {
    let prf = prf_from_hashlib_name(FORMAT, digest)?;
    let parts: Vec<&str> = rest.split('$').collect();
    let [iterations, salt, hash] = parts.as_slice() else {
        return Err(FormatError::malformed(
            FORMAT,
            "expected pbkdf2_<digest>$<iterations>$<salt>$<hash>",
        ));
    };
    let iterations: u32 = parse_dec(FORMAT, "iterations", iterations)?;
    let hash = b64_std(FORMAT, "hash", hash)?;
    if hash.len() != prf.output_len() {
        return Err(FormatError::malformed(
            FORMAT,
            format!("hash must be {} bytes for {digest}", prf.output_len()),
        ));
    }
    let salt = salt.as_bytes().to_vec();
    check_pbkdf2(FORMAT, iterations, &salt, &hash)?;
    Ok(Credential::Pbkdf2 {
        prf,
        iterations,
        salt,
        hash,
        format: FORMAT,
    })
}

fn parse_scrypt(rest: &str) -> Result<Credential, FormatError> {
    let parts: Vec<&str> = rest.split('$').collect();
    let [n, salt, r, p, hash] = parts.as_slice() else {
        return Err(FormatError::malformed(
            FORMAT,
            "expected scrypt$<N>$<salt>$<r>$<p>$<hash>",
        ));
    };
    let log_n = scrypt::log2_exact(FORMAT, parse_dec(FORMAT, "scrypt N", n)?)?;
    let r: u32 = parse_dec(FORMAT, "scrypt r", r)?;
    let p: u32 = parse_dec(FORMAT, "scrypt p", p)?;
    let hash = b64_std(FORMAT, "hash", hash)?;
    // Django always derives 64 bytes; a shorter key would be a truncated string.
    if hash.len() != 64 {
        return Err(FormatError::malformed(
            FORMAT,
            "scrypt hash must be 64 bytes",
        ));
    }
    scrypt::ScryptHash::new(FORMAT, log_n, r, p, salt.as_bytes().to_vec(), hash)
        .map(Credential::Scrypt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Peppers;

    #[test]
    fn django_docs_style_pbkdf2() {
        // Python: base64.b64encode(hashlib.pbkdf2_hmac("sha256", b"hunter2", b"seasalt", 1000))
        let c =
            try_parse("pbkdf2_sha256$1000$seasalt$aZOLUDnbVq4qfmIhIFCkAqvDNHspRzj9l43SgVe7GOM=")
                .unwrap()
                .unwrap();
        assert!(c.verify(b"hunter2", &Peppers::new()).unwrap());
        assert!(!c.verify(b"hunter3", &Peppers::new()).unwrap());
    }

    #[test]
    fn non_django_strings_are_not_claimed() {
        assert!(try_parse("$2b$12$abc").is_none());
        assert!(try_parse("md5$salt$abc").is_none());
        assert!(try_parse("pbkdf2:sha256:1000$salt$00").is_none());
    }
}
