//! Werkzeug's `generate_password_hash` output (werkzeug.security):
//!
//! - `pbkdf2:<digest>:<iterations>$<salt>$<hex hash>`
//! - `scrypt:<N>:<r>:<p>$<salt>$<hex hash>` (64-byte output, as `hashlib.scrypt`'s default)
//!
//! Werkzeug uses the salt STRING's UTF-8 bytes as the salt (it never decodes it). Strings
//! without explicit parameters (`pbkdf2:sha256$...`) are refused: their meaning depends on
//! the Werkzeug version that wrote them, whose defaults have changed several times.

use super::common::{check_pbkdf2, parse_dec, prf_from_hashlib_name};
use crate::credential::Credential;
use crate::error::FormatError;
use crate::formats::scrypt;

const FORMAT: &str = "werkzeug";

/// Parse `s` if it carries a Werkzeug method prefix; `None` if it does not look like one.
pub fn try_parse(s: &str) -> Option<Result<Credential, FormatError>> {
    if !(s.starts_with("pbkdf2:") || s.starts_with("scrypt:")) {
        return None;
    }
    Some(parse(s))
}

fn parse(s: &str) -> Result<Credential, FormatError> {
    let parts: Vec<&str> = s.split('$').collect();
    let [method, salt, hex_hash] = parts.as_slice() else {
        return Err(FormatError::malformed(
            FORMAT,
            "expected <method>$<salt>$<hex hash>",
        ));
    };
    if salt.is_empty() {
        return Err(FormatError::malformed(FORMAT, "empty salt"));
    }
    let hash = hex::decode(hex_hash)
        .map_err(|_| FormatError::malformed(FORMAT, "hash is not hexadecimal"))?;
    let args: Vec<&str> = method.split(':').collect();
    match args.as_slice() {
        ["pbkdf2", digest, iterations] => {
            let prf = prf_from_hashlib_name(FORMAT, digest)?;
            let iterations: u32 = parse_dec(FORMAT, "iterations", iterations)?;
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
        ["scrypt", n, r, p] => {
            let log_n = scrypt::log2_exact(FORMAT, parse_dec(FORMAT, "scrypt N", n)?)?;
            let r: u32 = parse_dec(FORMAT, "scrypt r", r)?;
            let p: u32 = parse_dec(FORMAT, "scrypt p", p)?;
            // hashlib.scrypt's dklen is 64 in every Werkzeug version; a shorter key would
            // be a truncated string that still verifies (scrypt outputs are prefixes).
            if hash.len() != 64 {
                return Err(FormatError::malformed(
                    FORMAT,
                    "scrypt hash must be 64 bytes",
                ));
            }
            scrypt::ScryptHash::new(FORMAT, log_n, r, p, salt.as_bytes().to_vec(), hash)
                .map(Credential::Scrypt)
        }
        ["pbkdf2"] | ["pbkdf2", _] | ["scrypt"] | ["scrypt", ..] => Err(FormatError::unsupported(
            FORMAT,
            "method without explicit parameters (their defaults depend on the Werkzeug version)",
        )),
        _ => Err(FormatError::malformed(FORMAT, "unknown method")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Peppers;

    #[test]
    fn salt_string_bytes_are_the_salt() {
        // Python: hashlib.pbkdf2_hmac("sha256", b"pw", b"abcdEFGH12345678", 1000).hex()
        let s = "pbkdf2:sha256:1000$abcdEFGH12345678$\
                 c88a379b9289f0b5f3df362b8d395e3381fdb6ce93ebbd3a9eaf859197860ba6";
        let c = try_parse(s).unwrap().unwrap();
        assert!(c.verify(b"pw", &Peppers::new()).unwrap());
        assert!(!c.verify(b"pW", &Peppers::new()).unwrap());
    }

    #[test]
    fn implicit_parameters_are_refused() {
        assert!(matches!(
            try_parse("pbkdf2:sha256$salt$00").unwrap(),
            Err(FormatError::Unsupported { .. })
        ));
    }
}
