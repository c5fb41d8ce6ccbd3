//! The data directory's master key and the AEAD sealing built on it: secrets the server
//! must keep in the database but must not leave readable there (the private halves of
//! token signing keys) are sealed with XChaCha20-Poly1305 under a key that lives only in
//! the 0600 secrets file. A database dump alone then cannot sign tokens.
//!
//! Sealed format: `0x01` (version) || 24-byte random nonce || ciphertext || 16-byte tag.
//! Random 192-bit nonces make nonce reuse negligible without any counter state.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use zeroize::Zeroizing;

use crate::error::StoreError;

const VERSION: u8 = 1;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;

/// A 256-bit key-encryption key. `Debug` never shows it; it is wiped on drop.
#[derive(Clone)]
pub struct MasterKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

impl MasterKey {
    /// A key from existing material.
    pub fn new(key: [u8; 32]) -> Self {
        MasterKey(Zeroizing::new(key))
    }

    /// A fresh key from the OS CSPRNG.
    pub fn generate() -> Result<Self, StoreError> {
        let mut key = Zeroizing::new([0u8; 32]);
        portcullis_hash::os_random(&mut key[..]).map_err(|e| StoreError::Backend(e.to_string()))?;
        Ok(MasterKey(key))
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A key for `purpose`, derived from this one (HMAC-SHA256 under the master key of a
    /// domain-separated label): every instance holding the same secrets file derives the
    /// same key, and no derived key reveals the master key or another purpose's key.
    pub fn derive(&self, purpose: &str) -> Zeroizing<[u8; 32]> {
        use hmac::{Hmac, Mac};
        let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.0[..])
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(b"portcullis derived key v1\0");
        mac.update(purpose.as_bytes());
        let mut out = Zeroizing::new([0u8; 32]);
        out.copy_from_slice(&mac.finalize().into_bytes());
        out
    }

    /// Encrypt and authenticate `plaintext`, binding it to `aad` (e.g. the key id, so a
    /// sealed blob cannot be moved to another row unnoticed).
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, StoreError> {
        let mut nonce = [0u8; NONCE_LEN];
        portcullis_hash::os_random(&mut nonce).map_err(|e| StoreError::Backend(e.to_string()))?;
        let ct = self
            .cipher()
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .map_err(|_| StoreError::Backend("sealing failed".into()))?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + ct.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        Ok(out)
    }

    /// Decrypt what [`MasterKey::seal`] produced with the same `aad`. Any tampering, a
    /// different `aad` or a different master key is an error.
    pub fn open(&self, sealed: &[u8], aad: &[u8]) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        if sealed.len() < 1 + NONCE_LEN + TAG_LEN || sealed[0] != VERSION {
            return Err(StoreError::invalid("sealed data is malformed"));
        }
        let (nonce, ct) = sealed[1..].split_at(NONCE_LEN);
        self.cipher()
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad })
            .map(Zeroizing::new)
            .map_err(|_| {
                StoreError::invalid(
                    "sealed data failed authentication (tampered, or sealed under another master key)",
                )
            })
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&*self.0).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_keys_are_stable_per_purpose_and_apart_from_the_master() {
        use hmac::{Hmac, Mac};
        let k = MasterKey::new([3u8; 32]);
        let same = MasterKey::new([3u8; 32]);
        let a = k.derive("tls session tickets");
        assert_eq!(*a, *same.derive("tls session tickets"), "instances agree");
        assert_ne!(*a, *k.derive("something else"));
        assert_ne!(*a, *MasterKey::new([4u8; 32]).derive("tls session tickets"));
        assert_ne!(&a[..], &k.bytes()[..]);
        // HMAC-SHA256(master, label || purpose), computed independently.
        let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&[3u8; 32]).unwrap();
        mac.update(b"portcullis derived key v1\0tls session tickets");
        assert_eq!(&a[..], &mac.finalize().into_bytes()[..]);
    }

    #[test]
    fn round_trip_and_binding() {
        let k = MasterKey::generate().unwrap();
        let sealed = k.seal(b"private key", b"kid-1").unwrap();
        assert_eq!(&k.open(&sealed, b"kid-1").unwrap()[..], b"private key");
        assert!(k.open(&sealed, b"kid-2").is_err());
        assert!(
            MasterKey::generate()
                .unwrap()
                .open(&sealed, b"kid-1")
                .is_err()
        );
        let mut flipped = sealed.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(k.open(&flipped, b"kid-1").is_err());
        assert!(k.open(&sealed[..10], b"kid-1").is_err());
        assert!(!sealed.windows(11).any(|w| w == b"private key"));
    }

    #[test]
    fn matches_independent_xchacha20poly1305_vector() {
        // draft-irtf-cfrg-xchacha-03, appendix A.3.1 (AEAD_XChaCha20_Poly1305).
        let key: [u8; 32] = core::array::from_fn(|i| 0x80 + i as u8);
        let nonce: [u8; 24] = core::array::from_fn(|i| 0x40 + i as u8);
        let aad = [
            0x50, 0x51, 0x52, 0x53, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
        ];
        let pt = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let mut sealed = vec![VERSION];
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&hex_decode(
            "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb\
             731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452\
             2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9\
             21f9664c97637da9768812f615c68b13b52e\
             c0875924c1c7987947deafd8780acf49",
        ));
        assert_eq!(&MasterKey::new(key).open(&sealed, &aad).unwrap()[..], pt);
    }

    fn hex_decode(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
