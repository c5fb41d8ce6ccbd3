//! `private_key_jwt` client assertions for the lab's OAuth driver (issue 14): each attempt
//! signs a fresh RFC 7523 assertion (new `jti`, `iat` now, `exp` a minute later, `aud` the
//! token endpoint) with the scenario's private key, as a real client would, so the
//! client-side signing cost is part of what the lab measures.

use std::path::{Path, PathBuf};

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, RsaKeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::LabError;

enum Key {
    Rsa(RsaKeyPair, &'static dyn signature::RsaEncoding),
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
}

/// A client's signing key and the JWS header that goes with it.
pub struct AssertionKey {
    key: Key,
    /// `base64url(header) + "."`, encoded once.
    header: String,
    alg: &'static str,
    rng: SystemRandom,
}

impl std::fmt::Debug for AssertionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertionKey")
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

fn bad(msg: impl Into<String>) -> LabError {
    LabError::Scenario(msg.into())
}

impl AssertionKey {
    /// Load a PEM private key (PKCS#8, or PKCS#1 for RSA, SEC1 for P-256). The algorithm
    /// follows the key (EdDSA, ES256, RS256), or `alg` when given (PS256 for RSA).
    pub fn load(path: &Path, alg: Option<&str>) -> Result<AssertionKey, LabError> {
        let pem = crate::safety::read_file(path, 1 << 20)
            .map_err(|e| bad(format!("driver.private_key: {e}")))?;
        let secret = crate::tls::private_key(&pem)
            .map_err(|e| bad(format!("driver.private_key: {}: {e}", path.display())))?
            .ok_or_else(|| {
                bad(format!(
                    "driver.private_key: {} holds no private key",
                    path.display()
                ))
            })?;
        let der: &[u8] = secret.secret_der();
        let key = if let Ok(k) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
            Key::Ed(k)
        } else if let Ok(k) =
            EcdsaKeyPair::from_private_key_der(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der)
        {
            Key::Ec(k)
        } else if let Ok(k) = RsaKeyPair::from_pkcs8(der).or_else(|_| RsaKeyPair::from_der(der)) {
            match alg {
                Some("PS256") => Key::Rsa(k, &signature::RSA_PSS_SHA256),
                _ => Key::Rsa(k, &signature::RSA_PKCS1_SHA256),
            }
        } else {
            return Err(bad(format!(
                "driver.private_key: {}: not an Ed25519, P-256 or RSA key",
                path.display()
            )));
        };
        let natural = match &key {
            Key::Ed(_) => "EdDSA",
            Key::Ec(_) => "ES256",
            Key::Rsa(_, enc) if std::ptr::addr_eq(*enc, &signature::RSA_PSS_SHA256) => "PS256",
            Key::Rsa(..) => "RS256",
        };
        if let Some(a) = alg
            && a != natural
        {
            return Err(bad(format!(
                "driver.assertion_alg {a:?} does not fit the key ({natural})"
            )));
        }
        let header = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{natural}","typ":"JWT"}}"#));
        Ok(AssertionKey {
            key,
            header: header + ".",
            alg: natural,
            rng: SystemRandom::new(),
        })
    }

    /// The JWS algorithm.
    pub fn alg(&self) -> &'static str {
        self.alg
    }

    /// A fresh assertion for `client_id` to `audience`, valid `lifetime_secs` from `now`.
    pub fn sign(
        &self,
        client_id: &str,
        audience: &str,
        now: i64,
        lifetime_secs: i64,
    ) -> Option<String> {
        let mut jti = [0u8; 16];
        self.rng.fill(&mut jti).ok()?;
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "iat": now,
            "exp": now + lifetime_secs,
        });
        let mut input = self.header.clone();
        input.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
        let sig = match &self.key {
            Key::Ed(k) => k.sign(input.as_bytes()).as_ref().to_vec(),
            Key::Ec(k) => k.sign(&self.rng, input.as_bytes()).ok()?.as_ref().to_vec(),
            Key::Rsa(k, enc) => {
                let mut s = vec![0u8; k.public_modulus_len()];
                k.sign(*enc, &self.rng, input.as_bytes(), &mut s).ok()?;
                s
            }
        };
        input.push('.');
        input.push_str(&URL_SAFE_NO_PAD.encode(sig));
        Some(input)
    }
}

/// How `private_key_jwt` assertions are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionSpec {
    /// The private key file.
    pub key: PathBuf,
    /// `PS256` for RSA-PSS, else after the key.
    pub alg: Option<String>,
    /// `aud` (`None`: the token endpoint URL).
    pub audience: Option<String>,
    /// Seconds from `iat` to `exp`.
    pub lifetime_secs: i64,
}

/// What a client needs to make assertions: its key, the audience and the lifetime.
#[derive(Debug)]
pub struct Signer {
    /// The signing key.
    pub key: AssertionKey,
    /// `aud`.
    pub audience: String,
    /// Seconds from `iat` to `exp`.
    pub lifetime_secs: i64,
}

impl Signer {
    /// Load the key of `spec`; `token_url` is the default audience.
    pub fn load(spec: &AssertionSpec, token_url: &str) -> Result<Signer, LabError> {
        Ok(Signer {
            key: AssertionKey::load(&spec.key, spec.alg.as_deref())?,
            audience: spec
                .audience
                .clone()
                .unwrap_or_else(|| token_url.to_owned()),
            lifetime_secs: spec.lifetime_secs,
        })
    }

    /// A fresh assertion for `client_id` now.
    pub fn assertion(&self, client_id: &str) -> Option<String> {
        self.key.sign(
            client_id,
            &self.audience,
            crate::clock::unix_now(),
            self.lifetime_secs,
        )
    }
}
