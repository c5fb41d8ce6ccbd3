//! What every format's parser shares, below all of them: the parameter limits enforced
//! before anything is allocated, PBKDF2/salt validation, strict decimal parsing, and the
//! base64 flavours. A leaf: the per-format modules and the dispatcher in `mod.rs` import
//! it, it imports no format (so the hash types of `argon2`, `bcrypt`, `scrypt` and
//! `salted_sha`, which `Credential` holds, never import back above themselves).

use std::str::FromStr;

use base64::Engine;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};

use crate::error::FormatError;
use crate::pbkdf2::Prf;

/// Limits on parameters read from stored strings. Anything above is refused with
/// [`FormatError::Unsupported`] at parse time, before memory is allocated or work started,
/// because a hostile or corrupt import must not be able to pin a core or exhaust memory.
pub mod limits {
    /// Most PBKDF2 iterations accepted: the kernel's PHC limit, so every encoding agrees.
    pub const MAX_PBKDF2_ITERATIONS: u32 = crate::pbkdf2::MAX_ITERATIONS;
    /// Longest PBKDF2 derived key accepted, in bytes (each extra PRF block multiplies work).
    pub const MAX_PBKDF2_KEY_LEN: usize = 256;
    /// Longest salt accepted by any format, in bytes.
    pub const MAX_SALT_LEN: usize = 1024;
    /// Largest argon2 memory cost: 4 GiB, in KiB.
    pub const MAX_ARGON2_M_KIB: u32 = 4 * 1024 * 1024;
    /// Largest argon2 memory x passes product (KiB-blocks processed; ~30 s of work).
    pub const MAX_ARGON2_WORK: u64 = 1 << 26;
    /// Largest argon2 parallelism (lanes) accepted.
    pub const MAX_ARGON2_P: u32 = 255;
    /// Longest argon2 / scrypt output accepted, in bytes.
    pub const MAX_KDF_OUTPUT_LEN: usize = 1024;
    /// Largest bcrypt cost accepted (2^20 rounds is about a minute).
    pub const MAX_BCRYPT_COST: u32 = 20;
    /// Largest scrypt memory `128 * N * r`, in bytes (4 GiB, as for argon2).
    pub const MAX_SCRYPT_MEMORY: u64 = 4 << 30;
    /// Largest scrypt work `N * r * p` (128-byte BlockMix units; ~1 minute).
    pub const MAX_SCRYPT_WORK: u64 = 1 << 30;
    /// Longest stored string accepted (any format, Keycloak JSON included), in bytes.
    pub const MAX_JSON_LEN: usize = 64 * 1024;
}

// ---- shared validation -------------------------------------------------------------

/// Validate PBKDF2 parameters read from any format.
pub(crate) fn check_pbkdf2(
    format: &'static str,
    iterations: u32,
    salt: &[u8],
    hash: &[u8],
) -> Result<(), FormatError> {
    if iterations == 0 {
        return Err(FormatError::unsupported(format, "iteration count is 0"));
    }
    if iterations > limits::MAX_PBKDF2_ITERATIONS {
        return Err(FormatError::unsupported(
            format,
            format!(
                "{iterations} iterations is above the limit of {}",
                limits::MAX_PBKDF2_ITERATIONS
            ),
        ));
    }
    check_salt(format, salt, 1)?;
    if hash.len() < 8 {
        return Err(FormatError::malformed(
            format,
            "derived key shorter than 8 bytes",
        ));
    }
    if hash.len() > limits::MAX_PBKDF2_KEY_LEN {
        return Err(FormatError::unsupported(
            format,
            format!(
                "derived key of {} bytes is above the limit of {}",
                hash.len(),
                limits::MAX_PBKDF2_KEY_LEN
            ),
        ));
    }
    Ok(())
}

/// Salt length within `[min, MAX_SALT_LEN]`.
pub(crate) fn check_salt(format: &'static str, salt: &[u8], min: usize) -> Result<(), FormatError> {
    if salt.len() < min {
        return Err(FormatError::malformed(
            format,
            format!("salt shorter than {min} bytes"),
        ));
    }
    if salt.len() > limits::MAX_SALT_LEN {
        return Err(FormatError::unsupported(
            format,
            format!("salt longer than {} bytes", limits::MAX_SALT_LEN),
        ));
    }
    Ok(())
}

/// Parse a decimal parameter (ASCII digits only: no sign, no spaces, no `0x`).
pub(crate) fn parse_dec<T: FromStr>(
    format: &'static str,
    what: &str,
    s: &str,
) -> Result<T, FormatError> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(FormatError::malformed(
            format,
            format!("{what} is not a decimal number"),
        ));
    }
    s.parse::<T>()
        .map_err(|_| FormatError::unsupported(format, format!("{what} is out of range")))
}

/// A PBKDF2 PRF named the way Python's hashlib / Django / Werkzeug name digests.
pub(crate) fn prf_from_hashlib_name(format: &'static str, name: &str) -> Result<Prf, FormatError> {
    match name {
        "sha1" => Ok(Prf::Sha1),
        "sha256" => Ok(Prf::Sha256),
        "sha512" => Ok(Prf::Sha512),
        "" => Err(FormatError::malformed(format, "missing digest name")),
        other => Err(FormatError::unsupported(
            format,
            format!("PBKDF2 digest {:?} is not supported", truncate(other)),
        )),
    }
}

/// At most 16 characters of an identifier for an error message.
pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(16).collect()
}

// ---- base64 flavours ---------------------------------------------------------------

const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_encode_padding(false)
    .with_decode_padding_mode(DecodePaddingMode::Indifferent);

/// Standard alphabet, padding optional (PHC strings, Django, Keycloak, LDAP, ...).
const STD_LENIENT: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);

/// Decode standard base64 with or without padding; `what` names the field in errors.
pub(crate) fn b64_std(format: &'static str, what: &str, s: &str) -> Result<Vec<u8>, FormatError> {
    if s.len() > 4 * limits::MAX_JSON_LEN {
        return Err(FormatError::unsupported(
            format,
            format!("{what} is too long"),
        ));
    }
    STD_LENIENT
        .decode(s)
        .map_err(|_| FormatError::malformed(format, format!("{what} is not valid base64")))
}

/// Decode passlib's "adapted base64" (`.` instead of `+`, no padding); plain standard
/// base64 is accepted too, since passlib's own scrypt and PHC hashes use `+`.
pub(crate) fn b64_ab64(format: &'static str, what: &str, s: &str) -> Result<Vec<u8>, FormatError> {
    if s.contains('+') && s.contains('.') {
        return Err(FormatError::malformed(
            format,
            format!("{what} mixes base64 alphabets"),
        ));
    }
    let mapped: String = s.chars().map(|c| if c == '.' { '+' } else { c }).collect();
    b64_std(format, what, &mapped)
}

/// Strict standard base64 with padding (ASP.NET Identity's `Convert.ToBase64String`).
pub(crate) fn b64_std_padded(s: &str) -> Option<Vec<u8>> {
    general_purpose::STANDARD.decode(s).ok()
}

/// PHC-style unpadded standard base64 for strings we write.
pub(crate) fn b64_encode(bytes: &[u8]) -> String {
    general_purpose::STANDARD_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ab64_accepts_dot_alphabet() {
        // passlib's ab64 of bytes fb ef be: standard "++++" becomes "....".
        assert_eq!(b64_ab64("t", "x", "....").unwrap(), vec![0xfb, 0xef, 0xbe]);
        assert_eq!(b64_ab64("t", "x", "++++").unwrap(), vec![0xfb, 0xef, 0xbe]);
        assert!(b64_ab64("t", "x", "+.++").is_err());
    }

    #[test]
    fn decimal_parser_is_strict() {
        assert_eq!(parse_dec::<u32>("t", "n", "42"), Ok(42));
        for bad in ["", "+1", "-1", " 1", "0x10", "1e3"] {
            assert!(parse_dec::<u32>("t", "n", bad).is_err(), "{bad:?}");
        }
        assert!(matches!(
            parse_dec::<u32>("t", "n", "99999999999"),
            Err(FormatError::Unsupported { .. })
        ));
    }
}
