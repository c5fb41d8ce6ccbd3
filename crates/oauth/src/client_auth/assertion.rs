//! `private_key_jwt` client assertions (RFC 7523 section 3, RFC 7521 section 4.2): a JWS
//! the client signs with its own private key and sends as `client_assertion`. [`peek`]
//! reads who it claims to be without any cryptography (the throttle keys on that before
//! work is spent); [`Unverified::check`] then verifies the signature against the client's
//! registered keys and enforces the claims:
//!
//! - `iss` and `sub` are the client id (RFC 7523 3 items 1-2, RFC 7521 5.2);
//! - `aud` names this server: its issuer identifier, its token endpoint, or the endpoint
//!   the assertion was sent to (item 3);
//! - `exp` is present and not past; an assertion living longer than
//!   `max_assertion_lifetime_secs` from now is refused, which also bounds how long its
//!   `jti` must be remembered (item 4);
//! - `nbf`, if present, is not in the future; `iat`, if present, is neither in the future
//!   nor older than the longest lifetime (items 5-6), all with `clock_skew_secs`;
//! - `jti` is present (item 7: the server "MAY ensure that JWTs are not replayed"; we do,
//!   so a `jti` is required) and its first use is recorded by the caller after all of this
//!   passed.
//!
//! The algorithm comes from the header but must be one of RS256, PS256, ES256, EdDSA and
//! fit the key that verifies it; `none`, HMAC and `crit` headers are refused.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::keys::{Alg, VerifyKey};

/// Longest assertion accepted, in bytes (an RS256 assertion with a 4096-bit key is ~1 KB).
pub const MAX_ASSERTION_LEN: usize = 8192;

/// Longest `jti` remembered.
pub const MAX_JTI_LEN: usize = 256;

/// The assertion is not a JWS we can even read (answered before the core: there is no
/// principal to throttle).
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// What the server accepts now.
#[derive(Debug, Clone)]
pub struct Rules<'a> {
    /// Values `aud` may name (any one suffices).
    pub audiences: &'a [&'a str],
    /// Unix seconds.
    pub now: i64,
    /// Longest accepted `exp - now`, and oldest accepted `iat`.
    pub max_lifetime: i64,
    /// Tolerated clock difference.
    pub skew: i64,
}

/// A readable assertion whose signature is not yet checked.
#[derive(Debug)]
pub struct Unverified<'a> {
    /// `iss` (which must equal `sub`): the client id it claims.
    pub client_id: String,
    alg: Option<Alg>,
    kid: Option<String>,
    signing_input: &'a str,
    signature: Vec<u8>,
    claims: serde_json::Map<String, Value>,
}

/// A valid assertion: what the replay check needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The assertion's unique id.
    pub jti: String,
    /// Its expiry (unix seconds): the `jti` is remembered until then.
    pub exp: i64,
}

fn seg(s: &str) -> Result<Vec<u8>, Malformed> {
    URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| Malformed("assertion is not base64url"))
}

/// Read an assertion's header and claims (no signature check).
pub fn peek(assertion: &str) -> Result<Unverified<'_>, Malformed> {
    if assertion.len() > MAX_ASSERTION_LEN {
        return Err(Malformed("assertion too long"));
    }
    let mut parts = assertion.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Malformed("assertion is not a compact JWS (three parts)"));
    };
    let header: serde_json::Map<String, Value> =
        serde_json::from_slice(&seg(h)?).map_err(|_| Malformed("assertion header is not JSON"))?;
    let claims: serde_json::Map<String, Value> =
        serde_json::from_slice(&seg(p)?).map_err(|_| Malformed("assertion claims are not JSON"))?;
    let iss = claims
        .get("iss")
        .and_then(Value::as_str)
        .ok_or(Malformed("assertion has no iss"))?;
    if iss.is_empty() || iss.len() > 256 || iss.chars().any(char::is_control) {
        return Err(Malformed("assertion iss is not a client id"));
    }
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Alg::parse);
    let kid = header.get("kid").and_then(Value::as_str).map(str::to_owned);
    // Unsupported algorithms and critical extensions fail in `check`, as failures of the
    // claimed client (so guessing them is throttled like any other failure).
    let alg = if header.contains_key("crit") {
        None
    } else {
        alg
    };
    Ok(Unverified {
        client_id: iss.to_owned(),
        alg,
        kid,
        signing_input: &assertion[..h.len() + 1 + p.len()],
        signature: seg(s)?,
        claims,
    })
}

fn time(v: Option<&Value>) -> Option<Option<i64>> {
    match v {
        None => Some(None),
        // NumericDate may be fractional (RFC 7519 2).
        Some(Value::Number(n)) => n.as_f64().filter(|f| f.is_finite()).map(|f| Some(f as i64)),
        Some(_) => None,
    }
}

impl Unverified<'_> {
    /// Verify the signature with one of `keys` and the claims against `rules`. The error
    /// is the audit reason.
    pub fn check(&self, keys: &[VerifyKey], rules: &Rules<'_>) -> Result<Verified, &'static str> {
        let alg = self.alg.ok_or("assertion_algorithm")?;
        let candidates =
            keys.iter()
                .filter(|k| k.allows(alg))
                .filter(|k| match (&self.kid, &k.kid) {
                    (Some(want), Some(have)) => want == have,
                    _ => true,
                });
        let mut verified = false;
        for k in candidates {
            if k.verify(alg, self.signing_input.as_bytes(), &self.signature) {
                verified = true;
                break;
            }
        }
        if !verified {
            return Err("assertion_signature");
        }
        let c = &self.claims;
        let sub = c.get("sub").and_then(Value::as_str);
        if sub != Some(self.client_id.as_str()) {
            return Err("assertion_subject");
        }
        let aud_ok = match c.get("aud") {
            Some(Value::String(a)) => rules.audiences.contains(&a.as_str()),
            Some(Value::Array(v)) => v
                .iter()
                .filter_map(Value::as_str)
                .any(|a| rules.audiences.contains(&a)),
            _ => false,
        };
        if !aud_ok {
            return Err("assertion_audience");
        }
        let (Some(exp), Some(nbf), Some(iat)) =
            (time(c.get("exp")), time(c.get("nbf")), time(c.get("iat")))
        else {
            return Err("assertion_claims");
        };
        let exp = exp.ok_or("assertion_claims")?;
        let now = rules.now;
        if exp <= now - rules.skew {
            return Err("assertion_expired");
        }
        if exp - now > rules.max_lifetime + rules.skew {
            return Err("assertion_lifetime");
        }
        if nbf.is_some_and(|t| t > now + rules.skew) {
            return Err("assertion_not_yet_valid");
        }
        if let Some(t) = iat
            && (t > now + rules.skew || now - t > rules.max_lifetime + rules.skew)
        {
            return Err("assertion_issued_at");
        }
        let jti = match c.get("jti") {
            Some(Value::String(j)) if !j.is_empty() && j.len() <= MAX_JTI_LEN => j.clone(),
            _ => return Err("assertion_jti"),
        };
        // Remembered at least until every clock we tolerate has passed `exp`.
        Ok(Verified {
            jti,
            exp: exp + rules.skew,
        })
    }
}
