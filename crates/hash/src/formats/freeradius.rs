//! FreeRADIUS `PBKDF2-Password` values, as parsed by `rlm_pap` (`pap_auth_pbkdf2` in
//! `src/modules/rlm_pap/rlm_pap.c`):
//!
//! - `{X-PBKDF2}<digest>:<b64 iterations>:<b64 salt>:<b64 hash>` (Crypt::PBKDF2's LDAP
//!   form; the iteration count is a 4-byte big-endian integer in base64, e.g. `AAAnEA`).
//! - `$PBKDF2$<digest>:<decimal iterations>:<b64 salt>$<b64 hash>` (Crypt::PBKDF2's crypt
//!   form).
//!
//! `<digest>` is `HMACSHA1`, `HMACSHA2+256` or `HMACSHA2+512` (the SHA-224/384 and SHA-3
//! variants FreeRADIUS also lists are refused as unsupported), and the hash must be exactly
//! the digest length. FreeRADIUS's passlib-form support is [`super::passlib`]; its
//! `{SSHA*}` headers are [`super::salted_sha`].

use super::common::{b64_std, check_pbkdf2, parse_dec};
use crate::credential::Credential;
use crate::error::FormatError;
use crate::pbkdf2::Prf;

const FORMAT: &str = "freeradius";
const LDAP_HEADER: &str = "{X-PBKDF2}";
const CRYPT_HEADER: &str = "$PBKDF2$";

/// Whether `s` starts with the `{X-PBKDF2}` header (case-insensitive, as FreeRADIUS's
/// header table is).
pub fn looks_like(s: &str) -> bool {
    s.len() >= LDAP_HEADER.len()
        && s.is_char_boundary(LDAP_HEADER.len())
        && s[..LDAP_HEADER.len()].eq_ignore_ascii_case(LDAP_HEADER)
}

/// Parse either FreeRADIUS PBKDF2 form. A value without any header is taken as the
/// `{X-PBKDF2}` body, as rlm_pap does.
pub fn parse(s: &str) -> Result<Credential, FormatError> {
    if let Some(body) = s.strip_prefix(CRYPT_HEADER) {
        // <digest>:<rounds>:<salt>$<hash>
        let (head, hash) = body.split_once('$').ok_or_else(|| {
            FormatError::malformed(FORMAT, "expected $PBKDF2$<digest>:<rounds>:<salt>$<hash>")
        })?;
        let fields: Vec<&str> = head.split(':').collect();
        let [digest, rounds, salt] = fields.as_slice() else {
            return Err(FormatError::malformed(
                FORMAT,
                "expected <digest>:<rounds>:<salt>",
            ));
        };
        let iterations: u32 = parse_dec(FORMAT, "iterations", rounds)?;
        return build(digest, iterations, salt, hash);
    }
    let body = if looks_like(s) {
        &s[LDAP_HEADER.len()..]
    } else if s.starts_with('{') || s.starts_with('$') {
        return Err(FormatError::malformed(
            FORMAT,
            "expected {X-PBKDF2} or $PBKDF2$ header",
        ));
    } else {
        s
    };
    let fields: Vec<&str> = body.split(':').collect();
    let [digest, rounds, salt, hash] = fields.as_slice() else {
        return Err(FormatError::malformed(
            FORMAT,
            "expected {X-PBKDF2}<digest>:<b64 rounds>:<b64 salt>:<b64 hash>",
        ));
    };
    let rounds = b64_std(FORMAT, "iteration count", rounds)?;
    let rounds: [u8; 4] = rounds
        .try_into()
        .map_err(|_| FormatError::malformed(FORMAT, "iteration count must be 4 bytes"))?;
    build(digest, u32::from_be_bytes(rounds), salt, hash)
}

fn build(digest: &str, iterations: u32, salt: &str, hash: &str) -> Result<Credential, FormatError> {
    let prf = match digest {
        "HMACSHA1" => Prf::Sha1,
        "HMACSHA2+256" => Prf::Sha256,
        "HMACSHA2+512" => Prf::Sha512,
        "HMACSHA2+224" | "HMACSHA2+384" | "HMACSHA3+224" | "HMACSHA3+256" | "HMACSHA3+384"
        | "HMACSHA3+512" => {
            return Err(FormatError::unsupported(
                FORMAT,
                format!("PBKDF2 digest {digest}"),
            ));
        }
        _ => return Err(FormatError::malformed(FORMAT, "unknown PBKDF2 digest name")),
    };
    if salt.is_empty() || hash.is_empty() {
        return Err(FormatError::malformed(FORMAT, "empty salt or hash"));
    }
    let salt = b64_std(FORMAT, "salt", salt)?;
    let hash = b64_std(FORMAT, "hash", hash)?;
    if hash.len() != prf.output_len() {
        return Err(FormatError::malformed(
            FORMAT,
            format!("hash must be {} bytes for {digest}", prf.output_len()),
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

    #[test]
    fn iteration_count_is_big_endian_base64() {
        // AAAnEA = 00 00 27 10 = 10000.
        let c = parse(
            "{X-PBKDF2}HMACSHA2+256:AAAnEA:c2FsdHNhbHQ=:\
             AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        )
        .unwrap();
        let Credential::Pbkdf2 {
            iterations, salt, ..
        } = c
        else {
            panic!("variant")
        };
        assert_eq!(iterations, 10000);
        assert_eq!(salt, b"saltsalt");
    }

    #[test]
    fn wrong_hash_length_and_digest_are_errors() {
        assert!(parse("{X-PBKDF2}HMACSHA2+256:AAAnEA:c2FsdA==:AAAA").is_err());
        assert!(parse("{X-PBKDF2}HMACMD5:AAAnEA:c2FsdA==:AAAA").is_err());
        assert!(parse("{X-PBKDF2}HMACSHA2+256:AAAA:c2FsdA==:AAAA").is_err());
        assert!(parse("$PBKDF2$HMACSHA1:1000:c2FsdA==").is_err());
    }
}
