//! Server-side pepper keys and the `$hmac-sha256$k=<key id>$<tag>` stored format.
//!
//! Server-generated client secrets carry 256 bits of entropy, so a slow KDF buys nothing
//! against offline guessing; what protects them at rest is a keyed hash under a pepper that
//! never lives in the database. Verification costs microseconds, so it never needs the
//! hash pool. Keys carry ids so a pepper can be rotated: old ids stay verifiable.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::error::{FormatError, VerifyError};

const FORMAT: &str = "hmac-sha256";
const PREFIX: &str = "$hmac-sha256$";

/// One pepper key: 32 random bytes with a short, non-secret id.
#[derive(Clone)]
pub struct PepperKey {
    id: String,
    key: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for PepperKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PepperKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl PepperKey {
    /// A key from existing material. `id` must be 1-32 characters of `[A-Za-z0-9_-]`.
    pub fn new(id: &str, key: [u8; 32]) -> Result<Self, FormatError> {
        if !valid_id(id) {
            return Err(FormatError::malformed(
                FORMAT,
                "pepper key id must be 1-32 characters of A-Z a-z 0-9 _ -",
            ));
        }
        Ok(PepperKey {
            id: id.to_owned(),
            key: Zeroizing::new(key),
        })
    }

    /// A fresh random key.
    pub fn generate(id: &str) -> Result<Self, FormatError> {
        let mut key = [0u8; 32];
        crate::os_random(&mut key).map_err(|e| FormatError::unsupported(FORMAT, e.to_string()))?;
        Self::new(id, key)
    }

    /// The key's id (stored in every credential it produced).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The raw key bytes (for persisting it in the server's key file).
    pub fn key_bytes(&self) -> &[u8; 32] {
        &self.key
    }

    fn tag(&self, secret: &[u8]) -> [u8; 32] {
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = match <Hmac<Sha256> as Mac>::new_from_slice(&self.key[..]) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        };
        mac.update(secret);
        mac.finalize().into_bytes().into()
    }
}

fn valid_id(id: &str) -> bool {
    (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The set of pepper keys a server holds; `current` is used for new credentials.
#[derive(Debug, Clone, Default)]
pub struct Peppers {
    current: Option<String>,
    keys: BTreeMap<String, PepperKey>,
}

impl Peppers {
    /// An empty set (peppered credentials then fail with [`VerifyError::UnknownPepper`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a key; the last key added with `make_current` is used for new credentials.
    pub fn insert(&mut self, key: PepperKey, make_current: bool) {
        if make_current || self.current.is_none() {
            self.current = Some(key.id.clone());
        }
        self.keys.insert(key.id.clone(), key);
    }

    /// The key used for new credentials, if any.
    pub fn current(&self) -> Option<&PepperKey> {
        self.current.as_ref().and_then(|id| self.keys.get(id))
    }

    /// Look a key up by id.
    pub fn get(&self, id: &str) -> Option<&PepperKey> {
        self.keys.get(id)
    }

    /// All keys, for persisting.
    pub fn keys(&self) -> impl Iterator<Item = &PepperKey> {
        self.keys.values()
    }
}

/// A parsed peppered credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PepperedHmac {
    /// Id of the pepper key that produced it.
    pub key_id: String,
    /// HMAC-SHA256(pepper, secret).
    pub tag: [u8; 32],
}

impl PepperedHmac {
    /// Hash `secret` under `key` into its stored string.
    pub fn create(key: &PepperKey, secret: &[u8]) -> String {
        format!(
            "{PREFIX}k={}${}",
            key.id,
            STANDARD_NO_PAD.encode(key.tag(secret))
        )
    }

    /// Parse `$hmac-sha256$k=<id>$<tag>`.
    pub fn parse(s: &str) -> Result<Self, FormatError> {
        let rest = s
            .strip_prefix(PREFIX)
            .ok_or_else(|| FormatError::malformed(FORMAT, "missing $hmac-sha256$ prefix"))?;
        let (params, tag_b64) = rest
            .split_once('$')
            .ok_or_else(|| FormatError::malformed(FORMAT, "expected k=<id>$<tag>"))?;
        let key_id = params
            .strip_prefix("k=")
            .ok_or_else(|| FormatError::malformed(FORMAT, "expected k=<key id>"))?;
        if !valid_id(key_id) {
            return Err(FormatError::malformed(FORMAT, "invalid pepper key id"));
        }
        let raw = STANDARD_NO_PAD
            .decode(tag_b64)
            .map_err(|_| FormatError::malformed(FORMAT, "tag is not base64"))?;
        let tag: [u8; 32] = raw
            .try_into()
            .map_err(|_| FormatError::malformed(FORMAT, "tag must be 32 bytes"))?;
        Ok(PepperedHmac {
            key_id: key_id.to_owned(),
            tag,
        })
    }

    /// Constant-time check of `secret` against this credential.
    pub fn verify(&self, secret: &[u8], peppers: &Peppers) -> Result<bool, VerifyError> {
        let key = peppers
            .get(&self.key_id)
            .ok_or_else(|| VerifyError::UnknownPepper(self.key_id.clone()))?;
        Ok(crate::ct_eq(&key.tag(secret), &self.tag))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_mismatch() {
        let key = PepperKey::new("k1", [7u8; 32]).unwrap();
        let mut peppers = Peppers::new();
        peppers.insert(key.clone(), true);
        let stored = PepperedHmac::create(&key, b"s3cret");
        let parsed = PepperedHmac::parse(&stored).unwrap();
        assert!(parsed.verify(b"s3cret", &peppers).unwrap());
        assert!(!parsed.verify(b"s3cret!", &peppers).unwrap());
    }

    #[test]
    fn known_tag_matches_rfc4231_style_hmac() {
        // HMAC-SHA256 with key = 32 x 0x0b over "Hi There" computed independently
        // (Python: hmac.new(b"\x0b"*32, b"Hi There", "sha256").hexdigest()).
        let key = PepperKey::new("a", [0x0b; 32]).unwrap();
        let expected = "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7";
        assert_eq!(hex_of(&key.tag(b"Hi There")), expected);
    }

    fn hex_of(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn unknown_key_is_an_error_not_a_mismatch() {
        let key = PepperKey::new("k1", [7u8; 32]).unwrap();
        let parsed = PepperedHmac::parse(&PepperedHmac::create(&key, b"x")).unwrap();
        assert_eq!(
            parsed.verify(b"x", &Peppers::new()),
            Err(VerifyError::UnknownPepper("k1".into()))
        );
    }

    #[test]
    fn malformed_strings_are_errors() {
        for s in [
            "",
            "$hmac-sha256$",
            "$hmac-sha256$k=$AAAA",
            "$hmac-sha256$k=a$!!!",
            "$hmac-sha256$k=a$AAAA",
            "$hmac-sha256$x=a$AAAA",
        ] {
            assert!(PepperedHmac::parse(s).is_err(), "{s:?} parsed");
        }
    }
}
