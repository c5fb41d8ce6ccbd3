//! Argon2 (argon2id / argon2i / argon2d, versions 0x10 and 0x13) stored hashes: parsing,
//! validation and verification through our own kernel ([`crate::argon2_kernel`]).
//!
//! Verification runs on the calling thread (lanes one after another: the hash pool's
//! threads never spawn threads per hash) in the thread's reused, wiped arena: allocating
//! and faulting in 19 MiB of fresh memory on every call roughly doubled the cost of a
//! verification (15.8 ms vs 30.4 ms measured for m=19 MiB, t=2 with the `argon2` crate).

use zeroize::Zeroize;

use super::common::{b64_std, check_salt, limits, parse_dec};
use crate::argon2_kernel::{self as kernel, Backend, LaneExecutor, Params, Serial, Version};
use crate::error::{FormatError, VerifyError};

/// Largest buffer (in 1 KiB blocks) kept per thread between calls: 256 MiB.
pub const RETAIN_MAX_BLOCKS: usize = kernel::RETAIN_MAX_BLOCKS;

/// Shortest salt accepted (RFC 9106 recommends 16 bytes; 8 is the reference minimum).
pub const MIN_SALT_LEN: usize = 8;

/// Argon2 variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Argon2Variant {
    /// Argon2id (hybrid; the recommended one).
    Id,
    /// Argon2i (data-independent).
    I,
    /// Argon2d (data-dependent).
    D,
}

impl Argon2Variant {
    /// PHC identifier (`argon2id`).
    pub const fn ident(self) -> &'static str {
        match self {
            Argon2Variant::Id => "argon2id",
            Argon2Variant::I => "argon2i",
            Argon2Variant::D => "argon2d",
        }
    }

    fn kernel(self) -> kernel::Variant {
        match self {
            Argon2Variant::Id => kernel::Variant::Id,
            Argon2Variant::I => kernel::Variant::I,
            Argon2Variant::D => kernel::Variant::D,
        }
    }
}

/// A parsed argon2 hash with validated parameters.
#[derive(Clone, PartialEq, Eq)]
pub struct Argon2Hash {
    /// Variant.
    pub variant: Argon2Variant,
    /// Version: 0x10 or 0x13.
    pub version: u32,
    /// Memory cost in KiB (1 KiB blocks).
    pub m_cost: u32,
    /// Passes over memory.
    pub t_cost: u32,
    /// Lanes.
    pub p_cost: u32,
    /// Raw salt.
    pub salt: Vec<u8>,
    /// Raw expected output (its length is the output length).
    pub hash: Vec<u8>,
    /// Which system's encoding it came from (`"phc"`, `"django"`, `"keycloak"`, ...).
    pub format: &'static str,
}

impl Argon2Hash {
    /// Build and validate (every parser ends here, so the limits hold for all encodings).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        format: &'static str,
        variant: Argon2Variant,
        version: u32,
        m_cost: u32,
        t_cost: u32,
        p_cost: u32,
        salt: Vec<u8>,
        hash: Vec<u8>,
    ) -> Result<Self, FormatError> {
        if version != 0x10 && version != 0x13 {
            return Err(FormatError::unsupported(
                format,
                format!("argon2 version {version} (expected 16 or 19)"),
            ));
        }
        if p_cost == 0 || p_cost > limits::MAX_ARGON2_P {
            return Err(FormatError::unsupported(
                format,
                format!(
                    "argon2 parallelism {p_cost} outside 1..={}",
                    limits::MAX_ARGON2_P
                ),
            ));
        }
        if t_cost == 0 {
            return Err(FormatError::unsupported(format, "argon2 t=0"));
        }
        if m_cost > limits::MAX_ARGON2_M_KIB {
            return Err(FormatError::unsupported(
                format,
                format!("argon2 memory {m_cost} KiB is above the 4 GiB limit"),
            ));
        }
        if m_cost < 8 * p_cost {
            return Err(FormatError::unsupported(
                format,
                "argon2 memory below 8 KiB per lane",
            ));
        }
        if u64::from(m_cost) * u64::from(t_cost) > limits::MAX_ARGON2_WORK {
            return Err(FormatError::unsupported(
                format,
                "argon2 memory x passes is above the work limit",
            ));
        }
        check_salt(format, &salt, MIN_SALT_LEN)?;
        if hash.len() < 4 || hash.len() > limits::MAX_KDF_OUTPUT_LEN {
            return Err(FormatError::malformed(
                format,
                format!("argon2 output of {} bytes", hash.len()),
            ));
        }
        Ok(Argon2Hash {
            variant,
            version,
            m_cost,
            t_cost,
            p_cost,
            salt,
            hash,
            format,
        })
    }

    /// Check `secret`; the comparison is constant-time. Lanes run in turn on this thread.
    pub fn verify(&self, secret: &[u8]) -> Result<bool, VerifyError> {
        self.verify_lanes(secret, &Serial)
    }

    /// [`Argon2Hash::verify`] with the lanes of each slice run through `lanes` (the hash
    /// pool lends them to its idle threads).
    pub fn verify_lanes(
        &self,
        secret: &[u8],
        lanes: &dyn LaneExecutor,
    ) -> Result<bool, VerifyError> {
        let mut out = vec![0u8; self.hash.len()];
        derive(
            self.variant,
            self.version,
            (self.m_cost, self.t_cost, self.p_cost),
            secret,
            &self.salt,
            &mut out,
            lanes,
        )?;
        let ok = crate::ct_eq(&out, &self.hash);
        out.zeroize();
        Ok(ok)
    }

    /// The standard PHC encoding (`$argon2id$v=19$m=..,t=..,p=..$salt$hash`).
    pub fn to_phc(&self) -> String {
        format!(
            "${}$v={}$m={},t={},p={}${}${}",
            self.variant.ident(),
            self.version,
            self.m_cost,
            self.t_cost,
            self.p_cost,
            super::common::b64_encode(&self.salt),
            super::common::b64_encode(&self.hash)
        )
    }
}

/// Derive argon2 output into `out` on this thread (its reused arena), with cost
/// `(m, t, p)`; the lanes of each slice run through `lanes`.
pub(crate) fn derive(
    variant: Argon2Variant,
    version: u32,
    (m_cost, t_cost, p_cost): (u32, u32, u32),
    secret: &[u8],
    salt: &[u8],
    out: &mut [u8],
    lanes: &dyn LaneExecutor,
) -> Result<(), VerifyError> {
    let params = Params {
        variant: variant.kernel(),
        version: if version == 0x10 {
            Version::V0x10
        } else {
            Version::V0x13
        },
        m_cost,
        t_cost,
        p_cost,
        secret: &[],
        ad: &[],
    };
    kernel::hash_into(&params, secret, salt, out, Backend::Auto, lanes)
        .map_err(|e| VerifyError::Kdf(e.to_string()))
}

/// Parse the PHC encoding `$argon2{id,i,d}$[v=N$]m=..,t=..,p=..$salt$hash` (also
/// embedded by Django and Keycloak's formats).
pub fn parse_phc_hash(s: &str, format: &'static str) -> Result<Argon2Hash, FormatError> {
    let mut parts = s.split('$');
    if parts.next() != Some("") {
        return Err(FormatError::malformed(format, "expected a leading $"));
    }
    let variant = match parts.next() {
        Some("argon2id") => Argon2Variant::Id,
        Some("argon2i") => Argon2Variant::I,
        Some("argon2d") => Argon2Variant::D,
        Some(other) => {
            return Err(FormatError::unsupported(
                format,
                format!("argon2 variant {:?}", super::common::truncate(other)),
            ));
        }
        None => return Err(FormatError::malformed(format, "missing identifier")),
    };
    let rest: Vec<&str> = parts.collect();
    // Version is optional (absent means 0x10, as in the reference implementation).
    let (version, params, salt, hash) = match rest.as_slice() {
        [v, params, salt, hash] if v.starts_with("v=") => (
            parse_dec::<u32>(format, "argon2 version", &v[2..])?,
            *params,
            *salt,
            *hash,
        ),
        [params, salt, hash] if !params.starts_with("v=") => (0x10, *params, *salt, *hash),
        _ => {
            return Err(FormatError::malformed(
                format,
                "expected $argon2*$v=19$m=..,t=..,p=..$salt$hash",
            ));
        }
    };
    let (mut m, mut t, mut p) = (None, None, None);
    for kv in params.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| FormatError::malformed(format, "argon2 parameter without ="))?;
        let slot = match k {
            "m" => &mut m,
            "t" => &mut t,
            "p" => &mut p,
            // keyid / data: we hold no argon2 secret key, so such hashes cannot be verified.
            "keyid" | "data" => {
                return Err(FormatError::unsupported(
                    format,
                    "argon2 keyid/data parameters",
                ));
            }
            _ => return Err(FormatError::malformed(format, "unknown argon2 parameter")),
        };
        if slot.is_some() {
            return Err(FormatError::malformed(format, "repeated argon2 parameter"));
        }
        *slot = Some(parse_dec::<u32>(format, "argon2 parameter", v)?);
    }
    let (Some(m), Some(t), Some(p)) = (m, t, p) else {
        return Err(FormatError::malformed(format, "argon2 needs m, t and p"));
    };
    let salt = b64_std(format, "salt", salt)?;
    let hash = b64_std(format, "hash", hash)?;
    Argon2Hash::new(format, variant, version, m, t, p, salt, hash)
}

impl std::fmt::Debug for Argon2Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Salt and hash are offline-guessing material: never in logs.
        f.debug_struct("Argon2Hash")
            .field("variant", &self.variant)
            .field("version", &self.version)
            .field("m_cost", &self.m_cost)
            .field("t_cost", &self.t_cost)
            .field("p_cost", &self.p_cost)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Produced by the reference implementation through argon2-cffi 25.1:
    // python: argon2.low_level.hash_secret(b"password", b"somesalt", time_cost=2,
    //         memory_cost=65536, parallelism=1, hash_len=32, type=Type.ID)
    const REF: &str =
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";

    #[test]
    fn reference_vector_verifies() {
        let h = parse_phc_hash(REF, "phc").unwrap();
        assert!(h.verify(b"password").unwrap());
        assert!(!h.verify(b"passwore").unwrap());
    }

    #[test]
    fn absurd_parameters_are_unsupported() {
        for s in [
            "$argon2id$v=19$m=4194305,t=1,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=65536,t=0,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=65536,t=100000,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=18$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        ] {
            assert!(
                matches!(
                    parse_phc_hash(s, "phc"),
                    Err(FormatError::Unsupported { .. })
                ),
                "{s}"
            );
        }
    }
}
