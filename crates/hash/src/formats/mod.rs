//! Stored password formats of other systems, so users migrate without password resets.
//!
//! Each submodule owns one system's encodings (`django`, `passlib`, `werkzeug`, ...) or one
//! algorithm's own hash type (`argon2`, `bcrypt`, `scrypt`, `salted_sha`). This module owns
//! format *detection* ([`detect`]), the `--format` names ([`Format`]), the shared decoding
//! helpers and the parameter limits every parser enforces before anything is allocated.
//!
//! Detection is purely syntactic and unambiguous: every format starts with a distinctive
//! prefix (`$argon2id$`, `pbkdf2_sha256$`, `{SSHA}`, `{"credentialData"...`), except
//! ASP.NET Identity's bare base64 blob, which is recognised by its version byte and exact
//! layout once nothing else matched.

pub mod argon2;
pub mod aspnet;
pub mod bcrypt;
pub mod django;
pub mod freeradius;
pub mod keycloak;
pub mod passlib;
pub mod salted_sha;
pub mod scrypt;
pub mod werkzeug;

use std::fmt;
use std::str::FromStr;

use base64::Engine;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};

use crate::credential::Credential;
use crate::error::FormatError;
use crate::pbkdf2::{self, Prf};
use crate::pepper::PepperedHmac;

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

/// A stored-format family, as named by `--format` on the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// PHC strings: `$pbkdf2-sha256$i=..`, `$argon2id$..`, `$scrypt$..`, and our own
    /// `$hmac-sha256$` peppered format.
    Phc,
    /// Modular-crypt bcrypt: `$2a$`, `$2b$`, `$2y$`.
    Bcrypt,
    /// Python passlib: `$pbkdf2-sha256$<rounds>$..` (ab64), `$scrypt$`, `$bcrypt-sha256$`,
    /// LDAP-style `{PBKDF2-SHA256}`, plus everything passlib reads in PHC/bcrypt/LDAP form.
    Passlib,
    /// Django: `pbkdf2_sha256$`, `pbkdf2_sha1$`, `argon2$`, `bcrypt_sha256$`, `bcrypt$`,
    /// `scrypt$`.
    Django,
    /// ASP.NET Core Identity v2 and v3 base64 blobs.
    AspNet,
    /// FreeRADIUS PBKDF2-Password: `{X-PBKDF2}HMACSHA2+256:..` and `$PBKDF2$..`.
    FreeRadius,
    /// Werkzeug: `pbkdf2:sha256:N$salt$hex`, `scrypt:N:r:p$salt$hex`.
    Werkzeug,
    /// A Keycloak credential object (`credentialData` / `secretData` JSON strings).
    Keycloak,
    /// LDAP / RFC 2307 salted SHA: `{SSHA}`, `{SSHA256}`, `{SSHA384}`, `{SSHA512}` (and the
    /// unsalted `{SHA}` family).
    Ldap,
}

impl Format {
    /// Every format, in the order they are listed to users.
    pub const ALL: [Format; 9] = [
        Format::Phc,
        Format::Bcrypt,
        Format::Passlib,
        Format::Django,
        Format::AspNet,
        Format::FreeRadius,
        Format::Werkzeug,
        Format::Keycloak,
        Format::Ldap,
    ];

    /// The name used on the CLI and in reports (also the `format` field of credentials).
    pub const fn name(self) -> &'static str {
        match self {
            Format::Phc => "phc",
            Format::Bcrypt => "bcrypt",
            Format::Passlib => "passlib",
            Format::Django => "django",
            Format::AspNet => "aspnet",
            Format::FreeRadius => "freeradius",
            Format::Werkzeug => "werkzeug",
            Format::Keycloak => "keycloak",
            Format::Ldap => "ldap",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--format` value that names no format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown hash format {0:?} (expected one of: phc, bcrypt, passlib, django, aspnet, freeradius, werkzeug, keycloak, ldap)"
)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let found = match lower.as_str() {
            "asp.net" | "aspnetcore" | "aspnet-identity" => Some(Format::AspNet),
            "radius" => Some(Format::FreeRadius),
            "mcf" | "crypt" => Some(Format::Bcrypt),
            other => Format::ALL.into_iter().find(|f| f.name() == other),
        };
        found.ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// Detect the format of `s` (already trimmed) and parse it.
pub fn detect(s: &str) -> Result<Credential, FormatError> {
    if s.is_empty() {
        return Err(FormatError::Unrecognised(": empty string".into()));
    }
    check_len(s)?;
    if s.starts_with('{') {
        if s.starts_with("{\"") || s.starts_with("{ ") || s.starts_with("{\n") {
            return keycloak::parse(s);
        }
        if freeradius::looks_like(s) {
            return freeradius::parse(s);
        }
        if passlib::looks_like_ldap_pbkdf2(s) {
            return passlib::parse(s);
        }
        return salted_sha::parse(s);
    }
    if s.starts_with('$') {
        return parse_dollar(s);
    }
    if let Some(c) = django::try_parse(s) {
        return c;
    }
    if let Some(c) = werkzeug::try_parse(s) {
        return c;
    }
    if let Some(c) = aspnet::try_parse(s) {
        return c;
    }
    Err(unrecognised())
}

/// Parse `s` as `format` only (for `--format`): strings of other formats are refused.
pub fn parse_as(s: &str, format: Format) -> Result<Credential, FormatError> {
    let s = s.trim();
    check_len(s)?;
    let not_this = || {
        Err(FormatError::Unrecognised(format!(
            ": not a {} hash",
            format.name()
        )))
    };
    match format {
        Format::Phc => {
            if s.starts_with("$pbkdf2-") && !is_phc_pbkdf2(s) {
                return not_this();
            }
            if s.starts_with("$pbkdf2-")
                || s.starts_with("$argon2")
                || s.starts_with("$scrypt$")
                || s.starts_with("$hmac-sha256$")
            {
                parse_dollar(s)
            } else {
                not_this()
            }
        }
        Format::Bcrypt => {
            if bcrypt::is_modular(s) {
                bcrypt::parse_modular(s, "bcrypt")
            } else {
                not_this()
            }
        }
        Format::Passlib => {
            if s.starts_with("$pbkdf2$")
                || (s.starts_with("$pbkdf2-") && !is_phc_pbkdf2(s))
                || passlib::looks_like_ldap_pbkdf2(s)
            {
                passlib::parse(s)
            } else if s.starts_with("$bcrypt-sha256$") {
                bcrypt::parse_passlib_sha256(s)
            } else if s.starts_with("$scrypt$") {
                scrypt::parse_phc(s, "passlib")
            } else if s.starts_with("$argon2") {
                argon2::parse_phc(s, "passlib")
            } else if bcrypt::is_modular(s) {
                bcrypt::parse_modular(s, "passlib")
            } else if s.starts_with('{') && !freeradius::looks_like(s) {
                salted_sha::parse(s)
            } else {
                not_this()
            }
        }
        Format::Django => django::try_parse(s).unwrap_or_else(not_this),
        Format::AspNet => aspnet::parse(s),
        Format::FreeRadius => {
            if s.starts_with('{') && !freeradius::looks_like(s) {
                // FreeRADIUS also reads {SSHA*} via Password-With-Header.
                salted_sha::parse(s)
            } else {
                freeradius::parse(s)
            }
        }
        Format::Werkzeug => werkzeug::try_parse(s).unwrap_or_else(not_this),
        Format::Keycloak => keycloak::parse(s),
        Format::Ldap => {
            if s.starts_with('{') && !freeradius::looks_like(s) {
                if passlib::looks_like_ldap_pbkdf2(s) {
                    passlib::parse(s)
                } else {
                    salted_sha::parse(s)
                }
            } else {
                not_this()
            }
        }
    }
}

fn parse_dollar(s: &str) -> Result<Credential, FormatError> {
    if s.starts_with("$hmac-sha256$") {
        return PepperedHmac::parse(s).map(Credential::Peppered);
    }
    if s.starts_with("$pbkdf2-") {
        if is_phc_pbkdf2(s) {
            // The kernel's parser enforces the same limits (zero / huge iterations, lengths).
            let p = pbkdf2::parse_phc(s)?;
            return Ok(Credential::Pbkdf2 {
                prf: p.prf,
                iterations: p.iterations,
                salt: p.salt,
                hash: p.hash,
                format: "phc",
            });
        }
        return passlib::parse(s);
    }
    if s.starts_with("$pbkdf2$") {
        return passlib::parse(s);
    }
    if s.starts_with("$argon2") {
        return argon2::parse_phc(s, "phc");
    }
    if s.starts_with("$scrypt$") {
        return scrypt::parse_phc(s, "phc");
    }
    if s.starts_with("$bcrypt-sha256$") {
        return bcrypt::parse_passlib_sha256(s);
    }
    if bcrypt::is_modular(s) {
        return bcrypt::parse_modular(s, "bcrypt");
    }
    if s.starts_with("$PBKDF2$") {
        return freeradius::parse(s);
    }
    Err(unrecognised())
}

/// Real stored strings are at most a few hundred bytes (a Keycloak object a few KiB);
/// refusing longer ones up front bounds every decoder's allocation.
fn check_len(s: &str) -> Result<(), FormatError> {
    if s.len() > limits::MAX_JSON_LEN {
        return Err(FormatError::Unrecognised(format!(
            ": longer than {} bytes",
            limits::MAX_JSON_LEN
        )));
    }
    Ok(())
}

/// Standard PHC pbkdf2 has `i=` parameters; passlib's variant has a bare rounds number.
fn is_phc_pbkdf2(s: &str) -> bool {
    s.split('$').nth(2).is_some_and(|p| p.starts_with("i="))
}

/// An "unrecognised" error that echoes nothing of the string: in an import file the hash
/// column may hold a plaintext password by mistake, and error lines go to terminals and logs.
fn unrecognised() -> FormatError {
    FormatError::Unrecognised(
        " (no supported scheme prefix such as $pbkdf2-sha256$, $argon2id$, $2b$, pbkdf2_sha256$, {SSHA})"
            .to_owned(),
    )
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
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
        }
        assert_eq!("ASPNET".parse::<Format>(), Ok(Format::AspNet));
        assert!("md5".parse::<Format>().is_err());
    }

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
