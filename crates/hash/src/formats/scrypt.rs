//! scrypt through the `scrypt` crate, and its PHC encoding `$scrypt$ln=..,r=..,p=..$salt$hash`
//! (RustCrypto and passlib; passlib may write the salt in its `.`-for-`+` alphabet).
//! Django's and Werkzeug's encodings are parsed in their modules and end in
//! [`ScryptHash::new`], so the limits below hold for every encoding.

use zeroize::Zeroize;

use super::common::{b64_ab64, check_salt, limits, parse_dec};
use crate::error::{FormatError, VerifyError};

/// A parsed scrypt hash with validated parameters.
#[derive(Clone, PartialEq, Eq)]
pub struct ScryptHash {
    /// log2(N).
    pub log_n: u8,
    /// Block size.
    pub r: u32,
    /// Parallelism (sequential here: the hash pool supplies the parallelism).
    pub p: u32,
    /// Raw salt (for Django / Werkzeug: the bytes of the salt string).
    pub salt: Vec<u8>,
    /// Raw expected output.
    pub hash: Vec<u8>,
    /// Which system's encoding it came from.
    pub format: &'static str,
}

impl ScryptHash {
    /// Build and validate.
    pub fn new(
        format: &'static str,
        log_n: u8,
        r: u32,
        p: u32,
        salt: Vec<u8>,
        hash: Vec<u8>,
    ) -> Result<Self, FormatError> {
        if log_n == 0 || log_n > 40 {
            return Err(FormatError::unsupported(
                format,
                format!("scrypt log2(N) = {log_n}"),
            ));
        }
        if r == 0 || p == 0 {
            return Err(FormatError::unsupported(
                format,
                "scrypt r and p must be >= 1",
            ));
        }
        let n = 1u64 << log_n;
        let memory = 128u64.saturating_mul(n).saturating_mul(u64::from(r));
        if memory > limits::MAX_SCRYPT_MEMORY {
            return Err(FormatError::unsupported(
                format,
                format!("scrypt memory 128*N*r = {memory} bytes is above the 4 GiB limit"),
            ));
        }
        if n.saturating_mul(u64::from(r)).saturating_mul(u64::from(p)) > limits::MAX_SCRYPT_WORK {
            return Err(FormatError::unsupported(
                format,
                "scrypt N*r*p is above the work limit",
            ));
        }
        check_salt(format, &salt, 1)?;
        if hash.len() < 8 || hash.len() > limits::MAX_KDF_OUTPUT_LEN {
            return Err(FormatError::malformed(
                format,
                format!("scrypt output of {} bytes", hash.len()),
            ));
        }
        // The crate's own constraints (e.g. N < 2^(16 r)); 32 is a placeholder output length.
        ::scrypt::Params::new(log_n, r, p, 32)
            .map_err(|_| FormatError::unsupported(format, "scrypt parameters rejected"))?;
        Ok(ScryptHash {
            log_n,
            r,
            p,
            salt,
            hash,
            format,
        })
    }

    /// Check `secret`; the comparison is constant-time.
    pub fn verify(&self, secret: &[u8]) -> Result<bool, VerifyError> {
        let mut out = vec![0u8; self.hash.len()];
        derive(self.log_n, self.r, self.p, secret, &self.salt, &mut out)?;
        let ok = crate::ct_eq(&out, &self.hash);
        out.zeroize();
        Ok(ok)
    }
}

/// scrypt into `out`.
pub(crate) fn derive(
    log_n: u8,
    r: u32,
    p: u32,
    secret: &[u8],
    salt: &[u8],
    out: &mut [u8],
) -> Result<(), VerifyError> {
    let params = ::scrypt::Params::new(log_n, r, p, 32)
        .map_err(|e| VerifyError::Kdf(format!("scrypt: {e}")))?;
    ::scrypt::scrypt(secret, salt, &params, out)
        .map_err(|e| VerifyError::Kdf(format!("scrypt: {e}")))
}

/// Parse `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>`.
pub fn parse_phc(s: &str, format: &'static str) -> Result<ScryptHash, FormatError> {
    let rest = s
        .strip_prefix("$scrypt$")
        .ok_or_else(|| FormatError::malformed(format, "expected $scrypt$"))?;
    let parts: Vec<&str> = rest.split('$').collect();
    let [params, salt, hash] = parts.as_slice() else {
        return Err(FormatError::malformed(
            format,
            "expected $scrypt$ln=..,r=..,p=..$salt$hash",
        ));
    };
    let fields: Vec<&str> = params.split(',').collect();
    let [ln, r, p] = fields.as_slice() else {
        return Err(FormatError::malformed(format, "expected ln=..,r=..,p=.."));
    };
    let field = |kv: &str, key: &str| -> Result<u32, FormatError> {
        let v = kv
            .strip_prefix(key)
            .and_then(|v| v.strip_prefix('='))
            .ok_or_else(|| FormatError::malformed(format, format!("expected {key}=")))?;
        parse_dec(format, key, v)
    };
    let log_n = u8::try_from(field(ln, "ln")?)
        .map_err(|_| FormatError::unsupported(format, "scrypt ln out of range"))?;
    let (r, p) = (field(r, "r")?, field(p, "p")?);
    let salt = b64_ab64(format, "salt", salt)?;
    let hash = b64_ab64(format, "hash", hash)?;
    ScryptHash::new(format, log_n, r, p, salt, hash)
}

/// log2 of `n` if it is a power of two >= 2 (Django and Werkzeug store N itself).
pub(crate) fn log2_exact(format: &'static str, n: u64) -> Result<u8, FormatError> {
    if n < 2 || !n.is_power_of_two() {
        return Err(FormatError::unsupported(
            format,
            "scrypt N must be a power of two >= 2",
        ));
    }
    // trailing_zeros of a u64 is at most 63, which fits a u8.
    Ok(n.trailing_zeros() as u8)
}

impl std::fmt::Debug for ScryptHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Salt and hash are offline-guessing material: never in logs.
        f.debug_struct("ScryptHash")
            .field("log_n", &self.log_n)
            .field("r", &self.r)
            .field("p", &self.p)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7914_vector() {
        // RFC 7914 §12: scrypt("password", "NaCl", N=1024, r=8, p=16, dkLen=64).
        let expected = hex::decode(
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162\
             2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640",
        )
        .unwrap();
        let h = ScryptHash::new("phc", 10, 8, 16, b"NaCl".to_vec(), expected).unwrap();
        assert!(h.verify(b"password").unwrap());
        assert!(!h.verify(b"passwore").unwrap());
    }

    #[test]
    fn huge_parameters_are_unsupported_before_allocation() {
        for s in [
            "$scrypt$ln=40,r=8,p=1$c2FsdA$aGFzaGhhc2g",
            "$scrypt$ln=255,r=8,p=1$c2FsdA$aGFzaGhhc2g",
            "$scrypt$ln=300,r=8,p=1$c2FsdA$aGFzaGhhc2g",
            "$scrypt$ln=14,r=8,p=100000000$c2FsdA$aGFzaGhhc2g",
            "$scrypt$ln=0,r=8,p=1$c2FsdA$aGFzaGhhc2g",
        ] {
            assert!(
                matches!(parse_phc(s, "phc"), Err(FormatError::Unsupported { .. })),
                "{s}"
            );
        }
    }
}
