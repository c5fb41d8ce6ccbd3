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
pub mod common;
pub mod django;
pub mod freeradius;
pub mod keycloak;
pub mod passlib;
pub mod salted_sha;
pub mod scrypt;
pub mod werkzeug;

use std::fmt;
use std::str::FromStr;

pub use self::common::limits;
use crate::credential::Credential;
use crate::error::FormatError;
use crate::pbkdf2;
use crate::pepper::PepperedHmac;

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

/// Parsing lives here, above the hash types `Credential` holds, so `credential.rs` never
/// imports the formats that import it.
impl Credential {
    /// Detect the format of `s` and parse it.
    pub fn parse(s: &str) -> Result<Self, FormatError> {
        detect(s.trim())
    }

    /// Parse `s` as `format` only (the CLI's `--format`): a string of another format is an
    /// error even if it would parse.
    pub fn parse_as(s: &str, format: Format) -> Result<Self, FormatError> {
        parse_as(s.trim(), format)
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
        return salted_sha::parse(s).map(Credential::SaltedSha);
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
                bcrypt::parse_modular(s, "bcrypt").map(Credential::Bcrypt)
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
                bcrypt::parse_passlib_sha256(s).map(Credential::Bcrypt)
            } else if s.starts_with("$scrypt$") {
                scrypt::parse_phc(s, "passlib").map(Credential::Scrypt)
            } else if s.starts_with("$argon2") {
                argon2::parse_phc_hash(s, "passlib").map(Credential::Argon2)
            } else if bcrypt::is_modular(s) {
                bcrypt::parse_modular(s, "passlib").map(Credential::Bcrypt)
            } else if s.starts_with('{') && !freeradius::looks_like(s) {
                salted_sha::parse(s).map(Credential::SaltedSha)
            } else {
                not_this()
            }
        }
        Format::Django => django::try_parse(s).unwrap_or_else(not_this),
        Format::AspNet => aspnet::parse(s),
        Format::FreeRadius => {
            if s.starts_with('{') && !freeradius::looks_like(s) {
                // FreeRADIUS also reads {SSHA*} via Password-With-Header.
                salted_sha::parse(s).map(Credential::SaltedSha)
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
                    salted_sha::parse(s).map(Credential::SaltedSha)
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
        return argon2::parse_phc_hash(s, "phc").map(Credential::Argon2);
    }
    if s.starts_with("$scrypt$") {
        return scrypt::parse_phc(s, "phc").map(Credential::Scrypt);
    }
    if s.starts_with("$bcrypt-sha256$") {
        return bcrypt::parse_passlib_sha256(s).map(Credential::Bcrypt);
    }
    if bcrypt::is_modular(s) {
        return bcrypt::parse_modular(s, "bcrypt").map(Credential::Bcrypt);
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
}
