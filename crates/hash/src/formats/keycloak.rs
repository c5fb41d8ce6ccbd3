//! Keycloak password credentials as they appear in realm exports (`users[].credentials[]`):
//! a JSON object whose `credentialData` and `secretData` fields are themselves JSON strings
//! (Keycloak's `PasswordCredentialData` and `PasswordSecretData`):
//!
//! ```json
//! {"type":"password",
//!  "credentialData":"{\"hashIterations\":27500,\"algorithm\":\"pbkdf2-sha256\",\"additionalParameters\":{}}",
//!  "secretData":"{\"value\":\"<base64 hash>\",\"salt\":\"<base64 salt>\",\"additionalParameters\":{}}"}
//! ```
//!
//! Algorithms: `pbkdf2` (HMAC-SHA1), `pbkdf2-sha256`, `pbkdf2-sha512` (key length = stored
//! hash length, as `Pbkdf2PasswordHashProvider.keySize` computes it) and `argon2`
//! (`additionalParameters`: `type` id/i/d, `version` 1.3/1.0, `hashLength`, `memory` KiB,
//! `parallelism`; `hashIterations` is t), as in Keycloak's `Argon2PasswordHashProvider`.
//! Keycloak pads short PBKDF2 passwords with NULs to 14 characters; HMAC zero-pads keys, so
//! that padding never changes the result and needs no special handling here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{b64_std, check_pbkdf2, limits};
use crate::credential::Credential;
use crate::error::FormatError;
use crate::formats::argon2::{Argon2Hash, Argon2Variant};
use crate::pbkdf2::Prf;

const FORMAT: &str = "keycloak";

/// The credential object (other fields of the export, like `id` or `createdDate`, are
/// ignored).
#[derive(Debug, Deserialize)]
struct CredentialRepresentation {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(rename = "credentialData")]
    credential_data: Option<String>,
    #[serde(rename = "secretData")]
    secret_data: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PasswordCredentialData {
    hash_iterations: i64,
    algorithm: String,
    #[serde(default)]
    additional_parameters: Option<BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Deserialize)]
struct PasswordSecretData {
    value: String,
    salt: String,
}

/// The canonical stored form we keep for an imported Keycloak credential.
#[derive(Debug, Serialize)]
struct Stored<'a> {
    #[serde(rename = "credentialData")]
    credential_data: &'a str,
    #[serde(rename = "secretData")]
    secret_data: &'a str,
}

/// Parse a Keycloak credential object.
pub fn parse(s: &str) -> Result<Credential, FormatError> {
    let rep = representation(s)?;
    let (Some(cd), Some(sd)) = (&rep.credential_data, &rep.secret_data) else {
        return Err(FormatError::malformed(
            FORMAT,
            "credential needs credentialData and secretData",
        ));
    };
    from_parts(cd, sd)
}

/// The compact stored form (`{"credentialData":..,"secretData":..}`) of a credential
/// object, validated; import keeps this so [`crate::Credential::parse`] reads it back.
pub fn normalize(s: &str) -> Result<String, FormatError> {
    let rep = representation(s)?;
    let (Some(cd), Some(sd)) = (&rep.credential_data, &rep.secret_data) else {
        return Err(FormatError::malformed(
            FORMAT,
            "credential needs credentialData and secretData",
        ));
    };
    from_parts(cd, sd)?;
    serde_json::to_string(&Stored {
        credential_data: cd,
        secret_data: sd,
    })
    .map_err(|e| FormatError::malformed(FORMAT, e.to_string()))
}

fn representation(s: &str) -> Result<CredentialRepresentation, FormatError> {
    if s.len() > limits::MAX_JSON_LEN {
        return Err(FormatError::unsupported(
            FORMAT,
            "credential JSON is too long",
        ));
    }
    let rep: CredentialRepresentation = serde_json::from_str(s).map_err(|e| {
        FormatError::malformed(FORMAT, format!("invalid JSON ({})", e.classify_name()))
    })?;
    if let Some(kind) = &rep.kind
        && kind != "password"
    {
        return Err(FormatError::unsupported(
            FORMAT,
            format!(
                "credential type {:?} is not a password",
                super::common::truncate(kind)
            ),
        ));
    }
    Ok(rep)
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "I/O",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "unexpected fields or types",
            serde_json::error::Category::Eof => "truncated",
        }
    }
}

fn from_parts(credential_data: &str, secret_data: &str) -> Result<Credential, FormatError> {
    let cd: PasswordCredentialData = serde_json::from_str(credential_data).map_err(|e| {
        FormatError::malformed(
            FORMAT,
            format!("credentialData: invalid JSON ({})", e.classify_name()),
        )
    })?;
    let sd: PasswordSecretData = serde_json::from_str(secret_data).map_err(|e| {
        FormatError::malformed(
            FORMAT,
            format!("secretData: invalid JSON ({})", e.classify_name()),
        )
    })?;
    let iterations = u32::try_from(cd.hash_iterations)
        .map_err(|_| FormatError::unsupported(FORMAT, "hashIterations out of range"))?;
    let salt = b64_std(FORMAT, "salt", &sd.salt)?;
    let hash = b64_std(FORMAT, "value", &sd.value)?;
    let prf = match cd.algorithm.as_str() {
        "pbkdf2" => Some(Prf::Sha1),
        "pbkdf2-sha256" => Some(Prf::Sha256),
        "pbkdf2-sha512" => Some(Prf::Sha512),
        "argon2" => None,
        other => {
            return Err(FormatError::unsupported(
                FORMAT,
                format!("algorithm {:?}", super::common::truncate(other)),
            ));
        }
    };
    if let Some(prf) = prf {
        check_pbkdf2(FORMAT, iterations, &salt, &hash)?;
        return Ok(Credential::Pbkdf2 {
            prf,
            iterations,
            salt,
            hash,
            format: FORMAT,
        });
    }
    let params = cd.additional_parameters.unwrap_or_default();
    let get = |key: &str| -> Result<&str, FormatError> {
        params
            .get(key)
            .and_then(|v| v.first())
            .map(String::as_str)
            .ok_or_else(|| {
                FormatError::malformed(FORMAT, format!("argon2 needs additionalParameters.{key}"))
            })
    };
    let number = |key: &str| -> Result<u32, FormatError> {
        super::common::parse_dec(FORMAT, key, get(key)?)
    };
    let variant = match get("type")? {
        "id" => Argon2Variant::Id,
        "i" => Argon2Variant::I,
        "d" => Argon2Variant::D,
        _ => return Err(FormatError::unsupported(FORMAT, "argon2 type")),
    };
    let version = match get("version")? {
        "1.3" => 0x13,
        "1.0" => 0x10,
        _ => return Err(FormatError::unsupported(FORMAT, "argon2 version")),
    };
    let hash_length = number("hashLength")?;
    if usize::try_from(hash_length).ok() != Some(hash.len()) {
        return Err(FormatError::malformed(
            FORMAT,
            "argon2 hashLength does not match the stored value",
        ));
    }
    let memory = number("memory")?;
    let parallelism = number("parallelism")?;
    Argon2Hash::new(
        FORMAT,
        variant,
        version,
        memory,
        iterations,
        parallelism,
        salt,
        hash,
    )
    .map(Credential::Argon2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangled_json_is_an_error_not_a_panic() {
        for s in [
            "{",
            "{\"credentialData\":\"{}\"}",
            "{\"credentialData\":\"{}\",\"secretData\":\"{}\"}",
            "{\"credentialData\":\"{\\\"hashIterations\\\":-1,\\\"algorithm\\\":\\\"pbkdf2\\\"}\",\"secretData\":\"{\\\"value\\\":\\\"AAAA\\\",\\\"salt\\\":\\\"AAAA\\\"}\"}",
            "{\"type\":\"otp\",\"credentialData\":\"{}\",\"secretData\":\"{}\"}",
            "[1,2]",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
    }
}
