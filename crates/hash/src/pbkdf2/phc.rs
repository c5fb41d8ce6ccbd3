//! The PHC string form of PBKDF2: `$pbkdf2-<prf>$i=<iterations>[,l=<len>]$<salt>$<hash>`,
//! salt and hash in standard base64 without padding (the form RustCrypto's `pbkdf2` and
//! the PHC string format specification use; passlib's `$pbkdf2-sha256$<rounds>$` form with
//! its `ab64` alphabet is a different format, parsed elsewhere).
//!
//! Stored strings are imported from other systems, so parsing is strict and every reject
//! says what is wrong without echoing the salt or hash.

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;

use super::{Prf, pbkdf2_hmac};
use crate::error::{FormatError, RandomError};

const FORMAT: &str = "pbkdf2 PHC";
/// Longest string we look at; real ones are under 200 bytes.
const MAX_STRING: usize = 4096;
/// Highest iteration count we accept: 100 million is minutes of CPU per login, far above any
/// real deployment, and a larger number in an imported string is a mistake or an attack.
pub const MAX_ITERATIONS: u32 = 100_000_000;
/// Longest derived key we accept (bytes).
pub const MAX_HASH_LEN: usize = 1024;
/// Longest salt we accept (bytes).
pub const MAX_SALT_LEN: usize = 1024;
/// Salt length of hashes we create (bytes).
pub const SALT_LEN: usize = 16;

/// A parsed `$pbkdf2-<prf>$i=<iterations>[,l=<len>]$<salt>$<hash>` PHC string.
#[derive(Clone, PartialEq, Eq)]
pub struct PhcPbkdf2 {
    /// The PRF named in the identifier.
    pub prf: Prf,
    /// Iteration count (`i=`).
    pub iterations: u32,
    /// Raw salt bytes.
    pub salt: Vec<u8>,
    /// Raw expected derived key.
    pub hash: Vec<u8>,
}

impl std::fmt::Debug for PhcPbkdf2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhcPbkdf2")
            .field("prf", &self.prf)
            .field("iterations", &self.iterations)
            .field("salt_len", &self.salt.len())
            .field("hash", &"<redacted>")
            .finish()
    }
}

impl PhcPbkdf2 {
    /// Whether `password` derives the stored hash (constant-time comparison).
    pub fn verify(&self, password: &[u8]) -> bool {
        let mut out = vec![0u8; self.hash.len()];
        pbkdf2_hmac(self.prf, password, &self.salt, self.iterations, &mut out);
        crate::ct_eq(&out, &self.hash)
    }
}

impl std::fmt::Display for PhcPbkdf2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "$pbkdf2-{}$i={},l={}${}${}",
            self.prf.name(),
            self.iterations,
            self.hash.len(),
            STANDARD_NO_PAD.encode(&self.salt),
            STANDARD_NO_PAD.encode(&self.hash)
        )
    }
}

/// Format a PHC string (always with `l=`).
pub fn format_phc(prf: Prf, iterations: u32, salt: &[u8], hash: &[u8]) -> String {
    PhcPbkdf2 {
        prf,
        iterations,
        salt: salt.to_vec(),
        hash: hash.to_vec(),
    }
    .to_string()
}

/// Hash `password` with a fresh 16-byte salt from the OS and a derived key of one digest,
/// returning the PHC string.
pub fn hash_password(prf: Prf, iterations: u32, password: &[u8]) -> Result<String, RandomError> {
    let mut salt = [0u8; SALT_LEN];
    crate::os_random(&mut salt)?;
    let mut out = vec![0u8; prf.output_len()];
    pbkdf2_hmac(prf, password, &salt, iterations.max(1), &mut out);
    Ok(format_phc(prf, iterations.max(1), &salt, &out))
}

fn bad(reason: impl Into<String>) -> FormatError {
    FormatError::malformed(FORMAT, reason)
}

/// Parse a PHC pbkdf2 string.
pub fn parse_phc(s: &str) -> Result<PhcPbkdf2, FormatError> {
    if s.len() > MAX_STRING {
        return Err(bad(format!("longer than {MAX_STRING} bytes")));
    }
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(format!(
            "contains whitespace or control character {c:?}"
        )));
    }
    let rest = s
        .strip_prefix("$pbkdf2-")
        .ok_or_else(|| bad("does not start with $pbkdf2-"))?;
    let parts: Vec<&str> = rest.split('$').collect();
    let [prf_name, params, salt_b64, hash_b64] = parts[..] else {
        return Err(bad(format!(
            "expected 4 '$'-separated fields after $pbkdf2-, found {}",
            parts.len()
        )));
    };
    if !params.is_empty() && params.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("expected i=<iterations>[,l=<len>] parameters \
             (passlib's $pbkdf2-<prf>$<rounds>$ form is a different format)"));
    }
    let prf = Prf::from_name(prf_name).ok_or_else(|| {
        let shown: String = prf_name.chars().take(16).collect();
        FormatError::unsupported(
            FORMAT,
            format!("unknown PRF {shown:?} (expected sha1, sha256 or sha512)"),
        )
    })?;

    let mut iterations = None;
    let mut length = None;
    if params.is_empty() {
        return Err(bad("empty parameter field (expected i=<iterations>)"));
    }
    for param in params.split(',') {
        let (key, value) = param
            .split_once('=')
            .ok_or_else(|| bad(format!("parameter {:?} is not key=value", short(param))))?;
        let slot = match key {
            "i" => &mut iterations,
            "l" => &mut length,
            _ => {
                return Err(bad(format!(
                    "unknown parameter {:?} (expected i and l)",
                    short(key)
                )));
            }
        };
        if slot.is_some() {
            return Err(bad(format!("parameter {key} given twice")));
        }
        *slot = Some(parse_decimal(key, value)?);
    }
    let iterations = iterations.ok_or_else(|| bad("missing i=<iterations>"))?;
    if iterations == 0 {
        return Err(FormatError::unsupported(
            FORMAT,
            "i=0 (at least 1 iteration)",
        ));
    }
    if iterations > u64::from(MAX_ITERATIONS) {
        return Err(FormatError::unsupported(
            FORMAT,
            format!("i={iterations} is above the limit of {MAX_ITERATIONS} iterations"),
        ));
    }
    let iterations = iterations as u32;

    let salt = decode(salt_b64, "salt")?;
    if salt.len() > MAX_SALT_LEN {
        return Err(FormatError::unsupported(
            FORMAT,
            format!("salt of {} bytes (at most {MAX_SALT_LEN})", salt.len()),
        ));
    }
    if hash_b64.is_empty() {
        return Err(bad("empty hash"));
    }
    let hash = decode(hash_b64, "hash")?;
    if hash.len() > MAX_HASH_LEN {
        return Err(FormatError::unsupported(
            FORMAT,
            format!("hash of {} bytes (at most {MAX_HASH_LEN})", hash.len()),
        ));
    }
    if let Some(l) = length
        && l != hash.len() as u64
    {
        return Err(bad(format!(
            "l={l} but the hash decodes to {} bytes",
            hash.len()
        )));
    }
    Ok(PhcPbkdf2 {
        prf,
        iterations,
        salt,
        hash,
    })
}

/// A decimal parameter value: digits only, no sign, no leading zeros, fits in u64.
fn parse_decimal(key: &str, value: &str) -> Result<u64, FormatError> {
    if value.is_empty() {
        return Err(bad(format!("{key}= has no value")));
    }
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!(
            "{key}={:?} is not a decimal number",
            short(value)
        )));
    }
    if value.len() > 1 && value.starts_with('0') {
        return Err(bad(format!("{key}={} has a leading zero", short(value))));
    }
    value.parse::<u64>().map_err(|_| {
        FormatError::unsupported(FORMAT, format!("{key}={} is too large", short(value)))
    })
}

fn decode(b64: &str, what: &str) -> Result<Vec<u8>, FormatError> {
    if b64.contains('=') {
        return Err(bad(format!(
            "{what} has base64 padding '=' (PHC strings use unpadded base64)"
        )));
    }
    STANDARD_NO_PAD.decode(b64).map_err(|e| {
        let hint = if b64.contains('.') {
            " ('.' suggests passlib's ab64 alphabet, a different format)"
        } else {
            ""
        };
        bad(format!("{what} is not valid base64: {e}{hint}"))
    })
}

/// At most 24 characters of a (non-secret) parameter, for error messages.
fn short(s: &str) -> String {
    let mut out: String = s.chars().take(24).collect();
    if s.chars().count() > 24 {
        out.push('…');
    }
    out
}
