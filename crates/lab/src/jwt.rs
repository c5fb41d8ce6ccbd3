//! Checking issued access tokens: RFC 9068 JWTs signed with EdDSA (Ed25519), verified
//! against the issuer's JWKS (RFC 7517/8037 `OKP` keys), and bound to the client that
//! asked. A token that verifies but names another client is *misdelivered*: the worst thing
//! a token server can do under load, and it fails the run.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;

use crate::LabError;

/// The issuer's Ed25519 verification keys, by `kid`.
#[derive(Debug, Clone, Default)]
pub struct Jwks {
    keys: HashMap<String, VerifyingKey>,
    /// Keys without a `kid` (tried when a token has none).
    unnamed: Vec<VerifyingKey>,
}

#[derive(Deserialize)]
struct RawJwks {
    keys: Vec<RawJwk>,
}

#[derive(Deserialize)]
struct RawJwk {
    kty: String,
    #[serde(default)]
    crv: Option<String>,
    #[serde(default)]
    x: Option<String>,
    #[serde(default)]
    kid: Option<String>,
}

impl Jwks {
    /// Parse a JWKS document, keeping its Ed25519 keys (others are ignored).
    pub fn parse(json: &[u8]) -> Result<Jwks, LabError> {
        let raw: RawJwks = serde_json::from_slice(json)
            .map_err(|e| LabError::Target(format!("JWKS is not valid JSON: {e}")))?;
        let mut out = Jwks::default();
        for k in raw.keys {
            if k.kty != "OKP" || k.crv.as_deref() != Some("Ed25519") {
                continue;
            }
            let x =
                k.x.ok_or_else(|| LabError::Target("JWKS Ed25519 key without x".into()))?;
            let bytes: [u8; 32] = URL_SAFE_NO_PAD
                .decode(x.as_bytes())
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    LabError::Target("JWKS Ed25519 x is not 32 base64url bytes".into())
                })?;
            let key = VerifyingKey::from_bytes(&bytes)
                .map_err(|e| LabError::Target(format!("JWKS Ed25519 key invalid: {e}")))?;
            match k.kid {
                Some(kid) => {
                    out.keys.insert(kid, key);
                }
                None => out.unnamed.push(key),
            }
        }
        if out.keys.is_empty() && out.unnamed.is_empty() {
            return Err(LabError::Target("JWKS has no Ed25519 (OKP) key".into()));
        }
        Ok(out)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len() + self.unnamed.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Who the token must be for.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// `client_id` claim.
    pub client_id: &'a str,
    /// `sub` claim.
    pub sub: &'a str,
    /// `iss` claim, when known.
    pub issuer: Option<&'a str>,
}

/// Result of checking one token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Signature, lifetime and binding all good.
    Valid,
    /// Malformed, bad signature, unknown key or expired.
    Invalid(&'static str),
    /// Correctly signed, but for another client or subject.
    Misdelivered,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    exp: Option<i64>,
}

/// Verify `token` for `expected` at unix time `now`.
pub fn check(token: &str, jwks: &Jwks, expected: Expected<'_>, now: i64) -> Check {
    let mut parts = token.split('.');
    let (Some(h64), Some(p64), Some(s64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Check::Invalid("not a compact JWS");
    };
    let Ok(header) = URL_SAFE_NO_PAD.decode(h64) else {
        return Check::Invalid("header is not base64url");
    };
    let Ok(header) = serde_json::from_slice::<Header>(&header) else {
        return Check::Invalid("header is not JSON");
    };
    if header.alg != "EdDSA" && header.alg != "Ed25519" {
        return Check::Invalid("alg is not EdDSA");
    }
    let Some(sig) = URL_SAFE_NO_PAD
        .decode(s64)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b.as_slice()).ok())
    else {
        return Check::Invalid("signature is not 64 base64url bytes");
    };
    let sig = Signature::from_bytes(&sig);
    let signed = &token.as_bytes()[..h64.len() + 1 + p64.len()];
    let ok = match &header.kid {
        Some(kid) => match jwks.keys.get(kid) {
            Some(k) => k.verify_strict(signed, &sig).is_ok(),
            None => return Check::Invalid("unknown kid"),
        },
        None => jwks
            .unnamed
            .iter()
            .chain(jwks.keys.values())
            .any(|k| k.verify_strict(signed, &sig).is_ok()),
    };
    if !ok {
        return Check::Invalid("bad signature");
    }
    let Ok(payload) = URL_SAFE_NO_PAD.decode(p64) else {
        return Check::Invalid("payload is not base64url");
    };
    let Ok(claims) = serde_json::from_slice::<Claims>(&payload) else {
        return Check::Invalid("payload is not JSON claims");
    };
    match claims.exp {
        Some(exp) if exp + 60 >= now => {}
        Some(_) => return Check::Invalid("expired"),
        None => return Check::Invalid("no exp"),
    }
    if let Some(iss) = expected.issuer
        && claims.iss.as_deref() != Some(iss)
    {
        return Check::Invalid("wrong issuer");
    }
    if claims.client_id.as_deref() != Some(expected.client_id)
        || claims.sub.as_deref() != Some(expected.sub)
    {
        return Check::Misdelivered;
    }
    Check::Valid
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn jwks_for(k: &SigningKey, kid: &str) -> Jwks {
        let x = URL_SAFE_NO_PAD.encode(k.verifying_key().to_bytes());
        Jwks::parse(
            format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"{kid}"}},{{"kty":"RSA","n":"AQAB","e":"AQAB"}}]}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    // Built by hand here (not with the baseline's signer) so the check is independent.
    fn token(k: &SigningKey, kid: &str, claims: &str) -> String {
        let h =
            URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"EdDSA","typ":"at+jwt","kid":"{kid}"}}"#));
        let p = URL_SAFE_NO_PAD.encode(claims);
        let input = format!("{h}.{p}");
        let s = URL_SAFE_NO_PAD.encode(k.sign(input.as_bytes()).to_bytes());
        format!("{input}.{s}")
    }

    const EXP: &str = r#""exp":2000000000"#;

    fn exp(c: &str, s: &str) -> Expected<'static> {
        Expected {
            client_id: Box::leak(c.to_string().into_boxed_str()),
            sub: Box::leak(s.to_string().into_boxed_str()),
            issuer: None,
        }
    }

    #[test]
    fn rfc8037_example_key_parses() {
        // RFC 8037 appendix A.2 public key.
        let j = Jwks::parse(
            br#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
        )
        .unwrap();
        assert_eq!(j.len(), 1);
    }

    #[test]
    fn rfc8037_example_signature_verifies() {
        // RFC 8037 appendix A.4: JWS over "Example of Ed25519 signing" with the A.2 key.
        let j = Jwks::parse(
            br#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
        )
        .unwrap();
        let jws = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg";
        // The payload is not JSON claims, so the check gets past the signature and stops
        // at the claims: proof that the signature itself verified.
        assert_eq!(
            check(jws, &j, exp("a", "a"), 0),
            Check::Invalid("payload is not JSON claims")
        );
        let mut bad = jws.to_string();
        bad.replace_range(bad.len() - 3..bad.len() - 2, "B");
        assert_eq!(
            check(&bad, &j, exp("a", "a"), 0),
            Check::Invalid("bad signature")
        );
    }

    #[test]
    fn token_for_the_right_client_is_valid_and_for_another_is_misdelivered() {
        let k = key(1);
        let j = jwks_for(&k, "k1");
        let t = token(
            &k,
            "k1",
            &format!(r#"{{"sub":"c1","client_id":"c1",{EXP}}}"#),
        );
        assert_eq!(check(&t, &j, exp("c1", "c1"), 1_700_000_000), Check::Valid);
        assert_eq!(
            check(&t, &j, exp("c2", "c2"), 1_700_000_000),
            Check::Misdelivered
        );
    }

    #[test]
    fn forged_expired_and_unknown_key_tokens_are_invalid() {
        let k = key(1);
        let j = jwks_for(&k, "k1");
        let forged = token(
            &key(2),
            "k1",
            &format!(r#"{{"sub":"c1","client_id":"c1",{EXP}}}"#),
        );
        assert_eq!(
            check(&forged, &j, exp("c1", "c1"), 0),
            Check::Invalid("bad signature")
        );
        let old = token(&k, "k1", r#"{"sub":"c1","client_id":"c1","exp":1000}"#);
        assert_eq!(
            check(&old, &j, exp("c1", "c1"), 2000),
            Check::Invalid("expired")
        );
        let other = token(
            &k,
            "k9",
            &format!(r#"{{"sub":"c1","client_id":"c1",{EXP}}}"#),
        );
        assert_eq!(
            check(&other, &j, exp("c1", "c1"), 0),
            Check::Invalid("unknown kid")
        );
        assert_eq!(
            check("a.b", &j, exp("c1", "c1"), 0),
            Check::Invalid("not a compact JWS")
        );
    }
}
