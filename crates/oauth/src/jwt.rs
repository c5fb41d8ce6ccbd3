//! JWT access tokens (RFC 9068) signed with Ed25519 (RFC 8037 `EdDSA`), and the JWKS that
//! publishes their public keys.
//!
//! The compact JWS is assembled here with serde_json and base64url rather than through a
//! JWT library: it is forty lines, there is exactly one algorithm, and the verifier below
//! accepts only that algorithm with a known `kid` (no `alg: none`, no key confusion).
//! The header of each key is encoded once when the key is loaded, and so is the expanded
//! secret key (RFC 8032 5.1.5: SHA-512 of the seed, clamped), so issuing a token costs one
//! JSON serialisation, two base64 encodings and one signature (two SHA-512 passes over the
//! signing input and one fixed-base scalar multiplication).
//!
//! Signing is about half of the token endpoint's CPU, so it goes through AWS-LC
//! (`aws-lc-rs`, the library rustls uses here too), whose fixed-base multiplication is
//! s2n-bignum's formally verified assembly: 7 us a signature on this machine against 15 us
//! for curve25519-dalek. Ed25519 is deterministic, so the signatures are byte-identical
//! (tested against dalek below). Verification of presented tokens stays on
//! curve25519-dalek's `verify_strict`.

use std::sync::Arc;

use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use zeroize::Zeroizing;

/// Claims of an access token (RFC 9068 section 2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    /// Issuer: the server's issuer URL.
    pub iss: String,
    /// Subject: client id (client_credentials) or username (password grant).
    pub sub: String,
    /// Audience: the configured resource identifier.
    pub aud: String,
    /// The client the token was issued to.
    pub client_id: String,
    /// Granted scopes, space-separated (RFC 8693 style); absent when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// Unique token id, used for revocation.
    pub jti: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Expiry, seconds since the Unix epoch.
    pub exp: u64,
    /// Confirmation (RFC 7800): the client certificate the token is bound to, when the
    /// client authenticated with one (RFC 8705 3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Confirmation>,
}

/// `cnf` of a certificate-bound token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    /// base64url SHA-256 of the certificate's DER.
    #[serde(rename = "x5t#S256")]
    pub x5t_s256: String,
}

/// Why a presented token is not one of ours or no longer valid.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum JwtError {
    /// Not three base64url segments of JSON.
    #[error("malformed token")]
    Malformed,
    /// Header names an algorithm, type or key we do not issue.
    #[error("unsupported token header")]
    Header,
    /// Signature does not verify.
    #[error("bad signature")]
    Signature,
    /// `exp` has passed.
    #[error("token expired")]
    Expired,
    /// Issued by someone else.
    #[error("wrong issuer")]
    Issuer,
}

/// A signing key seed the crypto library would not load (never expected for 32 bytes).
#[derive(Debug, Error)]
#[error("Ed25519 seed rejected: {0}")]
pub struct SeedRejected(String);

/// One Ed25519 key pair with its id.
pub struct KeyPair {
    kid: String,
    /// The seed expanded once (SHA-512, clamped scalar and nonce prefix); AWS-LC wipes it
    /// on drop.
    signer: Ed25519KeyPair,
    /// The public half, as published and used for verification.
    public: VerifyingKey,
    /// base64url of the JOSE header, computed once.
    header_b64: String,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize, Deserialize)]
struct Header<'a> {
    alg: &'a str,
    typ: &'a str,
    kid: &'a str,
}

impl KeyPair {
    /// A key pair from its 32-byte secret seed.
    pub fn from_seed(kid: &str, seed: &Zeroizing<[u8; 32]>) -> Result<Self, SeedRejected> {
        let signer = Ed25519KeyPair::from_seed_unchecked(&seed[..])
            .map_err(|e| SeedRejected(e.to_string()))?;
        let public_bytes: [u8; 32] = signer
            .public_key()
            .as_ref()
            .try_into()
            .map_err(|_| SeedRejected("public key is not 32 bytes".into()))?;
        let public =
            VerifyingKey::from_bytes(&public_bytes).map_err(|e| SeedRejected(e.to_string()))?;
        let header = serde_json::json!({"alg": "EdDSA", "typ": "at+jwt", "kid": kid});
        Ok(KeyPair {
            kid: kid.to_owned(),
            signer,
            public,
            header_b64: URL_SAFE_NO_PAD.encode(header.to_string()),
        })
    }

    /// The key id (`kid`).
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        PublicKey::new(&self.kid, self.public)
    }

    /// Sign `claims` into a compact JWS.
    pub fn sign(&self, claims: &AccessClaims) -> Result<String, serde_json::Error> {
        Ok(self.sign_payload(&serde_json::to_vec(claims)?))
    }

    /// A compact JWS of any payload bytes under our header (fuzzing and tests reach the
    /// claims parser of [`KeySet::verify`] with it; tokens are made by [`KeyPair::sign`]).
    #[doc(hidden)]
    pub fn sign_payload(&self, payload: &[u8]) -> String {
        let b64_len = |n: usize| n.div_ceil(3) * 4;
        let mut token = String::with_capacity(self.header_b64.len() + b64_len(payload.len()) + 90);
        token.push_str(&self.header_b64);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(payload, &mut token);
        let sig = self.signer.sign(token.as_bytes());
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(sig.as_ref(), &mut token);
        token
    }

    /// PureEdDSA (RFC 8032 5.1.6) of `message` with this key.
    #[cfg(test)]
    fn sign_bytes(&self, message: &[u8]) -> Signature {
        let sig = self.signer.sign(message);
        Signature::from_slice(sig.as_ref()).unwrap()
    }
}

/// A public key as published in the JWKS and used to verify presented tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// Key id.
    pub kid: String,
    /// The Ed25519 public key.
    pub key: VerifyingKey,
}

impl PublicKey {
    /// Wrap a verifying key.
    pub fn new(kid: &str, key: VerifyingKey) -> Self {
        PublicKey {
            kid: kid.to_owned(),
            key,
        }
    }

    /// The JWK (RFC 8037 section 2) of this key.
    pub fn to_jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(self.key.as_bytes()),
            "kid": self.kid,
            "use": "sig",
            "alg": "EdDSA",
        })
    }
}

/// The keys in force: the one that signs new tokens and every key whose tokens may still
/// be alive. Immutable; rotation swaps in a new `KeySet`.
#[derive(Debug)]
pub struct KeySet {
    /// Signs new tokens.
    pub current: Arc<KeyPair>,
    /// Published in the JWKS and accepted on introspection (includes `current`).
    pub published: Vec<PublicKey>,
}

impl KeySet {
    /// The JWKS document.
    pub fn jwks(&self) -> serde_json::Value {
        let keys: Vec<_> = self.published.iter().map(PublicKey::to_jwk).collect();
        serde_json::json!({ "keys": keys })
    }

    /// Verify a token we issued: header, signature, issuer and expiry (at `now`, Unix
    /// seconds). Audience is not checked: introspection answers for all our tokens.
    pub fn verify(&self, token: &str, issuer: &str, now: u64) -> Result<AccessClaims, JwtError> {
        if token.len() > 8192 {
            return Err(JwtError::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed);
        };
        let header_raw = URL_SAFE_NO_PAD.decode(h).map_err(|_| JwtError::Malformed)?;
        let header: Header<'_> =
            serde_json::from_slice(&header_raw).map_err(|_| JwtError::Malformed)?;
        if header.alg != "EdDSA" || header.typ != "at+jwt" {
            return Err(JwtError::Header);
        }
        let key = self
            .published
            .iter()
            .find(|k| k.kid == header.kid)
            .ok_or(JwtError::Header)?;
        let sig_raw = URL_SAFE_NO_PAD.decode(s).map_err(|_| JwtError::Malformed)?;
        let sig = Signature::from_slice(&sig_raw).map_err(|_| JwtError::Malformed)?;
        let signing_input = &token[..h.len() + 1 + p.len()];
        key.key
            .verify_strict(signing_input.as_bytes(), &sig)
            .map_err(|_| JwtError::Signature)?;
        let payload = URL_SAFE_NO_PAD.decode(p).map_err(|_| JwtError::Malformed)?;
        let claims: AccessClaims =
            serde_json::from_slice(&payload).map_err(|_| JwtError::Malformed)?;
        if claims.iss != issuer {
            return Err(JwtError::Issuer);
        }
        if claims.exp <= now {
            return Err(JwtError::Expired);
        }
        Ok(claims)
    }
}

/// A fresh random token id (128 bits, base64url) from a per-thread CSPRNG (ChaCha12
/// seeded from the OS), so issuing a token costs no `getrandom` system call.
pub fn new_jti() -> Result<String, portcullis_hash::error::RandomError> {
    use rand::{RngCore, SeedableRng, rngs::StdRng};
    thread_local! {
        static RNG: std::cell::RefCell<Option<StdRng>> = const { std::cell::RefCell::new(None) };
    }
    let mut b = [0u8; 16];
    RNG.with(|cell| {
        let mut slot = cell.borrow_mut();
        let rng = match slot.as_mut() {
            Some(r) => r,
            None => {
                let mut seed = Zeroizing::new([0u8; 32]);
                portcullis_hash::os_random(&mut seed[..])?;
                slot.insert(StdRng::from_seed(*seed))
            }
        };
        rng.fill_bytes(&mut b);
        Ok::<(), portcullis_hash::error::RandomError>(())
    })?;
    Ok(URL_SAFE_NO_PAD.encode(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: u64) -> AccessClaims {
        AccessClaims {
            iss: "https://issuer.test".into(),
            sub: "alice".into(),
            aud: "api".into(),
            client_id: "c1".into(),
            scope: "read write".into(),
            jti: "j1".into(),
            iat: 1000,
            exp,
            cnf: None,
        }
    }

    fn set(kp: KeyPair) -> KeySet {
        let published = vec![kp.public()];
        KeySet {
            current: Arc::new(kp),
            published,
        }
    }

    #[test]
    fn rfc8032_test_vector_1_signs_identically() {
        // RFC 8032 7.1 TEST 1: empty message.
        let seed = hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .unwrap();
        let seed: [u8; 32] = seed.try_into().unwrap();
        let kp = KeyPair::from_seed("k", &Zeroizing::new(seed)).unwrap();
        assert_eq!(
            hex::encode(kp.public.as_bytes()),
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
        assert_eq!(
            hex::encode(kp.sign_bytes(b"").to_bytes()),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
             5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
    }

    #[test]
    fn signatures_match_the_reference_signer() {
        use ed25519_dalek::{Signer, SigningKey};
        use rand::{RngCore, SeedableRng, rngs::StdRng};
        let mut rng = StdRng::seed_from_u64(5);
        for len in 0..300 {
            let mut seed = [0u8; 32];
            rng.fill_bytes(&mut seed);
            let mut msg = vec![0u8; len];
            rng.fill_bytes(&mut msg);
            let kp = KeyPair::from_seed("k", &Zeroizing::new(seed)).unwrap();
            let reference = SigningKey::from_bytes(&seed);
            assert_eq!(kp.public, reference.verifying_key());
            let sig = kp.sign_bytes(&msg);
            assert_eq!(sig, reference.sign(&msg), "length {len}");
            reference.verifying_key().verify_strict(&msg, &sig).unwrap();
        }
    }

    #[test]
    fn round_trip_and_header() {
        let ks = set(KeyPair::from_seed("kid-1", &Zeroizing::new([7u8; 32])).unwrap());
        let token = ks.current.sign(&claims(2000)).unwrap();
        let header: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], "EdDSA");
        assert_eq!(header["typ"], "at+jwt");
        assert_eq!(header["kid"], "kid-1");
        assert_eq!(
            ks.verify(&token, "https://issuer.test", 1500).unwrap(),
            claims(2000)
        );
        assert_eq!(
            ks.verify(&token, "https://issuer.test", 2000),
            Err(JwtError::Expired)
        );
        assert_eq!(
            ks.verify(&token, "https://other", 1500),
            Err(JwtError::Issuer)
        );
    }

    #[test]
    fn tampering_and_foreign_keys_are_rejected() {
        let ks = set(KeyPair::from_seed("k", &Zeroizing::new([1u8; 32])).unwrap());
        let other = KeyPair::from_seed("k", &Zeroizing::new([2u8; 32])).unwrap();
        let forged = other.sign(&claims(2000)).unwrap();
        assert_eq!(
            ks.verify(&forged, "https://issuer.test", 1500),
            Err(JwtError::Signature)
        );
        let mut c = claims(2000);
        let good = ks.current.sign(&c).unwrap();
        c.sub = "mallory".into();
        let evil_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&c).unwrap());
        let parts: Vec<&str> = good.split('.').collect();
        let tampered = format!("{}.{}.{}", parts[0], evil_payload, parts[2]);
        assert_eq!(
            ks.verify(&tampered, "https://issuer.test", 1500),
            Err(JwtError::Signature)
        );
        let none_alg = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"at+jwt","kid":"k"}"#),
            parts[1]
        );
        assert_eq!(
            ks.verify(&none_alg, "https://issuer.test", 1500),
            Err(JwtError::Header)
        );
        for junk in ["", "a.b", "a.b.c.d", "!!.!!.!!", &"x".repeat(10_000)] {
            assert!(ks.verify(junk, "https://issuer.test", 1500).is_err());
        }
    }

    #[test]
    fn token_ids_are_unique_and_128_bits() {
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|_| new_jti().unwrap()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(
            ids.iter()
                .all(|i| URL_SAFE_NO_PAD.decode(i).unwrap().len() == 16)
        );
    }

    #[test]
    fn jwk_has_rfc8037_shape() {
        let kp = KeyPair::from_seed("k", &Zeroizing::new([3u8; 32])).unwrap();
        let jwk = kp.public().to_jwk();
        assert_eq!(jwk["kty"], "OKP");
        assert_eq!(jwk["crv"], "Ed25519");
        let x = URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap();
        assert_eq!(x, kp.public.as_bytes());
    }
}
