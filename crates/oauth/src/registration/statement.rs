//! Software statements (RFC 7591 2.3): a JWS whose claims are client metadata, signed by
//! someone the operator trusts (a partner programme, a platform team's pipeline). A
//! statement is accepted only when its `iss` is a configured issuer and one of that
//! issuer's keys verifies it (the same key parsing and signature code as
//! `private_key_jwt`, `client_auth::keys`); its claims then take precedence over the
//! metadata sent beside it.
//!
//! Refusals use RFC 7591's two codes: `invalid_software_statement` for one that cannot be
//! read or whose time claims fail, `unapproved_software_statement` for one from an issuer
//! or key this server does not trust.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use super::RegError;
use super::config::StatementIssuer;
use crate::client_auth::keys::Alg;

/// Longest statement accepted, in bytes.
pub const MAX_STATEMENT_LEN: usize = 16 * 1024;

/// JWT claims that describe the statement itself, not the client: never copied into the
/// client's metadata.
pub const JWT_CLAIMS: [&str; 7] = ["iss", "sub", "aud", "exp", "nbf", "iat", "jti"];

fn invalid(why: &str) -> RegError {
    RegError::InvalidStatement(why.to_owned())
}

fn seg(s: &str) -> Result<Vec<u8>, RegError> {
    URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| invalid("software statement is not base64url"))
}

fn time(c: &Map<String, Value>, name: &str) -> Result<Option<i64>, RegError> {
    match c.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.is_finite())
            .map(|f| Some(f as i64))
            .ok_or_else(|| invalid("software statement time claim is not a number")),
        Some(_) => Err(invalid("software statement time claim is not a number")),
    }
}

/// Verify `jws` against the trusted `issuers` at `now` (unix seconds, `skew` tolerated)
/// and return its claims (the issuer's `iss` included).
pub fn verify(
    jws: &str,
    issuers: &[StatementIssuer],
    now: i64,
    skew: i64,
) -> Result<Map<String, Value>, RegError> {
    if jws.len() > MAX_STATEMENT_LEN {
        return Err(invalid("software statement too long"));
    }
    let mut parts = jws.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("software statement is not a compact JWS"));
    };
    let header: Map<String, Value> = serde_json::from_slice(&seg(h)?)
        .map_err(|_| invalid("software statement header is not a JSON object"))?;
    let claims: Map<String, Value> = serde_json::from_slice(&seg(p)?)
        .map_err(|_| invalid("software statement claims are not a JSON object"))?;
    let signature = seg(s)?;
    if header.contains_key("crit") {
        return Err(invalid("software statement has critical header extensions"));
    }
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Alg::parse)
        .ok_or_else(|| invalid("software statement alg must be RS256, PS256, ES256 or EdDSA"))?;
    let iss = claims
        .get("iss")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("software statement has no iss"))?;
    let Some(issuer) = issuers.iter().find(|i| i.issuer == iss) else {
        return Err(RegError::UnapprovedStatement(
            "the software statement's issuer is not trusted here".into(),
        ));
    };
    let kid = header.get("kid").and_then(Value::as_str);
    let signing_input = &jws[..h.len() + 1 + p.len()];
    let verified = issuer
        .keys
        .iter()
        .filter(|k| match (kid, &k.kid) {
            (Some(want), Some(have)) => want == have,
            _ => true,
        })
        .any(|k| k.verify(alg, signing_input.as_bytes(), &signature));
    if !verified {
        return Err(RegError::UnapprovedStatement(
            "the software statement is not signed by a key of its issuer".into(),
        ));
    }
    if time(&claims, "exp")?.is_some_and(|exp| exp <= now - skew) {
        return Err(invalid("software statement expired"));
    }
    if time(&claims, "nbf")?.is_some_and(|nbf| nbf > now + skew) {
        return Err(invalid("software statement not yet valid"));
    }
    if time(&claims, "iat")?.is_some_and(|iat| iat > now + skew) {
        return Err(invalid("software statement issued in the future"));
    }
    Ok(claims)
}
