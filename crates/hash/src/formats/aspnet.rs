//! ASP.NET Core Identity `PasswordHasher<TUser>` blobs (base64, no prefix), as laid out in
//! dotnet/aspnetcore `src/Identity/Extensions.Core/src/PasswordHasher.cs`:
//!
//! - v2: `0x00 | salt (16) | subkey (32)`, PBKDF2-HMAC-SHA1, 1000 iterations.
//! - v3: `0x01 | prf (u32 BE: 0 SHA1, 1 SHA256, 2 SHA512) | iterations (u32 BE) |
//!   salt length (u32 BE) | salt | subkey (the rest)`; salt and subkey at least 16 bytes.
//!
//! The password is the UTF-8 encoding of the .NET string, which is what we receive.
//! Detection: the string must be canonical padded base64 whose decoding has exactly one of
//! those layouts; nothing else in [`super::detect`] is bare base64, so this is unambiguous.

use super::common::{b64_std_padded, check_pbkdf2};
use crate::credential::Credential;
use crate::error::FormatError;
use crate::pbkdf2::Prf;

const FORMAT: &str = "aspnet";

/// Parse `s` if it decodes to an Identity v2 or v3 blob; `None` if it does not look like one.
pub fn try_parse(s: &str) -> Option<Result<Credential, FormatError>> {
    // The shortest valid blob (v3, 16-byte salt and subkey) is 45 bytes: 60 characters.
    if !s.len().is_multiple_of(4) || s.len() < 60 {
        return None;
    }
    let raw = b64_std_padded(s)?;
    match raw.first() {
        Some(0x00) if raw.len() == 49 => Some(parse_raw(&raw)),
        Some(0x01) if raw.len() >= 13 + 16 + 16 => Some(parse_raw(&raw)),
        _ => None,
    }
}

/// Parse `s` as an Identity blob (for `--format aspnet`: every failure is explained).
pub fn parse(s: &str) -> Result<Credential, FormatError> {
    let raw = b64_std_padded(s)
        .ok_or_else(|| FormatError::malformed(FORMAT, "not padded standard base64"))?;
    parse_raw(&raw)
}

fn parse_raw(raw: &[u8]) -> Result<Credential, FormatError> {
    let (prf, iterations, salt, hash) = match raw.first() {
        Some(0x00) => {
            if raw.len() != 49 {
                return Err(FormatError::malformed(
                    FORMAT,
                    "v2 hash must be 49 bytes (marker, 16-byte salt, 32-byte subkey)",
                ));
            }
            (Prf::Sha1, 1000, &raw[1..17], &raw[17..])
        }
        Some(0x01) => {
            let word = |at: usize| -> Result<u32, FormatError> {
                raw.get(at..at + 4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(u32::from_be_bytes)
                    .ok_or_else(|| FormatError::malformed(FORMAT, "v3 header is truncated"))
            };
            let prf = match word(1)? {
                0 => Prf::Sha1,
                1 => Prf::Sha256,
                2 => Prf::Sha512,
                other => {
                    return Err(FormatError::unsupported(
                        FORMAT,
                        format!("v3 PRF id {other} (expected 0, 1 or 2)"),
                    ));
                }
            };
            let iterations = word(5)?;
            let salt_len = usize::try_from(word(9)?).unwrap_or(usize::MAX);
            if salt_len < 16 {
                return Err(FormatError::malformed(
                    FORMAT,
                    "v3 salt shorter than 16 bytes",
                ));
            }
            let body = &raw[13..];
            if salt_len > body.len() || body.len() - salt_len < 16 {
                return Err(FormatError::malformed(
                    FORMAT,
                    "v3 salt length leaves no 16-byte subkey",
                ));
            }
            let (salt, hash) = body.split_at(salt_len);
            (prf, iterations, salt, hash)
        }
        Some(v) => {
            return Err(FormatError::unsupported(
                FORMAT,
                format!("format marker 0x{v:02x} (expected 0x00 or 0x01)"),
            ));
        }
        None => return Err(FormatError::malformed(FORMAT, "empty")),
    };
    check_pbkdf2(FORMAT, iterations, salt, hash)?;
    Ok(Credential::Pbkdf2 {
        prf,
        iterations,
        salt: salt.to_vec(),
        hash: hash.to_vec(),
        format: FORMAT,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_v3_headers_are_errors() {
        use base64::Engine;
        let enc = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut blob = vec![1u8, 0, 0, 0, 1, 0, 0, 0x27, 0x10, 0, 0, 0, 16];
        blob.extend([7u8; 16 + 32]);
        assert!(parse(&enc(&blob)).is_ok());
        for cut in [0, 1, 5, 12, 13, 20, 13 + 16 + 15] {
            assert!(parse(&enc(&blob[..cut])).is_err(), "cut at {cut}");
        }
        let mut huge_salt = blob.clone();
        huge_salt[9..13].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse(&enc(&huge_salt)).is_err());
        let mut zero_iter = blob.clone();
        zero_iter[5..9].copy_from_slice(&[0, 0, 0, 0]);
        assert!(matches!(
            parse(&enc(&zero_iter)),
            Err(FormatError::Unsupported { .. })
        ));
    }
}
