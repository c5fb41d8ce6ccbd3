//! passlib's own PBKDF2 encodings: `$pbkdf2$<rounds>$<salt>$<hash>` (SHA-1),
//! `$pbkdf2-sha256$...`, `$pbkdf2-sha512$...`, with salt and hash in passlib's "ab64"
//! base64 (`.` instead of `+`, no padding), and the LDAP-flavoured wrappers
//! `{PBKDF2}`, `{PBKDF2-SHA256}`, `{PBKDF2-SHA512}` around the same body.
//!
//! passlib's `$scrypt$`, `$bcrypt-sha256$`, argon2 and LDAP `{SSHA}` hashes are parsed by
//! their algorithm modules. The standard PHC `$pbkdf2-sha256$i=...` form (with `i=`) is
//! the PBKDF2 kernel's parser; [`super::detect`] tells the two apart by that `i=`.

use super::common::{b64_ab64, check_pbkdf2, parse_dec};
use crate::credential::Credential;
use crate::error::FormatError;
use crate::pbkdf2::Prf;

const FORMAT: &str = "passlib";

const LDAP_PREFIXES: [(&str, Prf); 4] = [
    ("{PBKDF2}", Prf::Sha1),
    ("{PBKDF2-SHA1}", Prf::Sha1),
    ("{PBKDF2-SHA256}", Prf::Sha256),
    ("{PBKDF2-SHA512}", Prf::Sha512),
];

/// Whether `s` starts with one of passlib's `{PBKDF2...}` LDAP prefixes.
pub fn looks_like_ldap_pbkdf2(s: &str) -> bool {
    LDAP_PREFIXES.iter().any(|(p, _)| starts_with_ci(s, p))
}

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Parse a passlib PBKDF2 hash in modular-crypt or LDAP form.
pub fn parse(s: &str) -> Result<Credential, FormatError> {
    let (prf, body) = if let Some(b) = s.strip_prefix("$pbkdf2$") {
        (Prf::Sha1, b)
    } else if let Some(b) = s.strip_prefix("$pbkdf2-sha256$") {
        (Prf::Sha256, b)
    } else if let Some(b) = s.strip_prefix("$pbkdf2-sha512$") {
        (Prf::Sha512, b)
    } else if let Some(b) = s.strip_prefix("$pbkdf2-sha1$") {
        (Prf::Sha1, b)
    } else if let Some((p, prf)) = LDAP_PREFIXES.iter().find(|(p, _)| starts_with_ci(s, p)) {
        (*prf, &s[p.len()..])
    } else if s.starts_with("$pbkdf2-") {
        return Err(FormatError::unsupported(
            FORMAT,
            "PBKDF2 digest is not sha1, sha256 or sha512",
        ));
    } else {
        return Err(FormatError::malformed(
            FORMAT,
            "expected $pbkdf2[-sha256|-sha512]$ or {PBKDF2[-SHA256|-SHA512]}",
        ));
    };
    let parts: Vec<&str> = body.split('$').collect();
    let [rounds, salt, hash] = parts.as_slice() else {
        return Err(FormatError::malformed(
            FORMAT,
            "expected <rounds>$<salt>$<hash>",
        ));
    };
    let iterations: u32 = parse_dec(FORMAT, "rounds", rounds)?;
    let salt = b64_ab64(FORMAT, "salt", salt)?;
    let hash = b64_ab64(FORMAT, "hash", hash)?;
    // passlib's checksums are always one digest long; anything else is a damaged string
    // (a truncated PBKDF2 key would otherwise still verify: it is a prefix of the full one).
    if hash.len() != prf.output_len() {
        return Err(FormatError::malformed(
            FORMAT,
            format!("hash must be {} bytes for this digest", prf.output_len()),
        ));
    }
    check_pbkdf2(FORMAT, iterations, &salt, &hash)?;
    Ok(Credential::Pbkdf2 {
        prf,
        iterations,
        salt,
        hash,
        format: FORMAT,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Peppers;

    #[test]
    fn passlib_documentation_example() {
        // The example hash of "password" in passlib's pbkdf2_digest documentation.
        let c = parse("$pbkdf2-sha256$6400$.6UI/S.nXIk8jcbdHx3Fhg$98jZicV16ODfEsEZeYPGHU3kbrUrvUEXOPimVSQDD44")
            .unwrap();
        assert!(c.verify(b"password", &Peppers::new()).unwrap());
        assert!(!c.verify(b"Password", &Peppers::new()).unwrap());
    }

    #[test]
    fn malformed_are_errors() {
        for s in [
            "$pbkdf2-sha256$",
            "$pbkdf2-sha256$6400$",
            "$pbkdf2-sha256$6400$.6UI/S.nXIk8jcbdHx3Fhg",
            "$pbkdf2-sha256$0$.6UI/S.nXIk8jcbdHx3Fhg$98jZicV16ODfEsEZeYPGHU3kbrUrvUEXOPimVSQDD44",
            "$pbkdf2-sha256$x$.6UI/S.nXIk8jcbdHx3Fhg$98jZicV16ODfEsEZeYPGHU3kbrUrvUEXOPimVSQDD44",
            "$pbkdf2-md5$6400$.6UI/S.nXIk8jcbdHx3Fhg$98jZicV16ODfEsEZeYPGHU3kbrUrvUEXOPimVSQDD44",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
    }
}
