//! Client authentication without a shared secret (issue 14): `private_key_jwt` (RFC 7523)
//! and mutual TLS (RFC 8705). Neither spends a hash: an assertion costs one signature
//! verification (tens of microseconds), a certificate one SHA-256 or one chain check. Both
//! still go through the verification core ([`portcullis_core::Verifier::verify_proof`]):
//! the throttle admits or refuses the attempt *before* the check runs, a failed check is
//! charged like a wrong secret, and every attempt gets its audit event.
//!
//! What a client registered decides which proof counts: a `private_key_jwt` client can
//! only present assertions, a TLS client only its certificate, a secret client only its
//! secret. A proof of the wrong kind fails as an unknown principal would.

pub mod assertion;
pub mod config;
pub mod keys;
pub use portcullis_door::tls::peer as mtls;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use portcullis_core::ProofCheck;
use portcullis_store::{ClientAuth, ClientRecord};
use subtle::ConstantTimeEq;

use crate::OAuth;
use keys::VerifyKey;

/// The audit reason of a proof for a client that does not exist or registered another
/// method (answered like a bad proof: existence is not revealed).
pub const UNKNOWN: &str = "unknown_principal";

/// Registered key material parsed once per client, so a busy client's assertions do not
/// parse its JWKS (nor its certificates) every time. Entries are replaced when the stored
/// text changes (a key rotation), and a map is dropped whole when it reaches its bound.
#[derive(Debug, Default)]
pub struct KeyCache {
    /// `private_key_jwt` clients' verification keys.
    keys: Parsed<Vec<VerifyKey>>,
    /// `self_signed_tls_client_auth` clients' certificate thumbprints.
    thumbprints: Parsed<Vec<String>>,
}

/// Per client: the stored text and what was parsed from it.
#[derive(Debug)]
struct Parsed<T>(Mutex<HashMap<String, (String, Arc<T>)>>);

impl<T> Default for Parsed<T> {
    fn default() -> Self {
        Parsed(Mutex::new(HashMap::new()))
    }
}

/// Clients whose parsed material is kept.
const KEY_CACHE_ENTRIES: usize = 16_384;

impl<T> Parsed<T> {
    /// What `text` parses to for `client`; `None` if it does not parse (material edited
    /// by hand into something unusable authenticates no one).
    fn get(
        &self,
        client: &str,
        text: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Option<Arc<T>> {
        if let Some((t, v)) = self.0.lock().get(client)
            && t == text
        {
            return Some(Arc::clone(v));
        }
        let parsed = Arc::new(parse(text)?);
        let mut map = self.0.lock();
        if map.len() >= KEY_CACHE_ENTRIES {
            map.clear();
        }
        map.insert(client.to_owned(), (text.to_owned(), Arc::clone(&parsed)));
        Some(parsed)
    }
}

impl KeyCache {
    fn keys(&self, client: &str, jwks: &str) -> Option<Arc<Vec<VerifyKey>>> {
        self.keys.get(client, jwks, |t| keys::parse(t).ok())
    }

    fn thumbprints(&self, client: &str, pem: &str) -> Option<Arc<Vec<String>>> {
        self.thumbprints.get(client, pem, |t| {
            mtls::registered_thumbprints(t, keys::MAX_KEYS).ok()
        })
    }
}

/// The values an assertion's `aud` may name for a request to `path`: the issuer, the
/// token endpoint, and the endpoint itself (introspection and revocation clients sign
/// for those).
pub fn audiences(issuer: &str, path: &str) -> Vec<String> {
    let mut v = vec![issuer.to_owned(), format!("{issuer}/oauth2/token")];
    let this = format!("{issuer}{path}");
    if !v.contains(&this) {
        v.push(this);
    }
    v
}

async fn client(oauth: &OAuth, id: &str) -> Result<Option<Arc<ClientRecord>>, ProofCheck> {
    oauth
        .clients
        .get(id)
        .await
        .map_err(|_| ProofCheck::Unavailable("store_unavailable"))
}

/// Check a `private_key_jwt` assertion claimed by `unverified.client_id`: the client
/// exists with that method, a registered key verifies it, its claims hold, and its `jti`
/// is used for the first time.
pub async fn check_assertion(
    oauth: &OAuth,
    unverified: &assertion::Unverified<'_>,
    audiences: &[String],
) -> ProofCheck {
    let id = unverified.client_id.as_str();
    let record = match client(oauth, id).await {
        Ok(Some(c)) => c,
        Ok(None) => return ProofCheck::Invalid(UNKNOWN),
        Err(e) => return e,
    };
    let ClientAuth::PrivateKeyJwt { jwks } = &record.auth else {
        return ProofCheck::Invalid(UNKNOWN);
    };
    let Some(keys) = oauth.key_cache.keys(id, jwks) else {
        tracing::warn!(
            client = id,
            "stored public keys do not parse; re-register them"
        );
        return ProofCheck::Invalid("registered_key_unusable");
    };
    let now = portcullis_door::unix_now();
    let c = &oauth.client_auth;
    let auds: Vec<&str> = audiences.iter().map(String::as_str).collect();
    let rules = assertion::Rules {
        audiences: &auds,
        now,
        max_lifetime: i64::try_from(c.max_assertion_lifetime.as_secs()).unwrap_or(86_400),
        skew: i64::try_from(c.clock_skew.as_secs()).unwrap_or(0),
    };
    let verified = match unverified.check(&keys, &rules) {
        Ok(v) => v,
        Err(why) => return ProofCheck::Invalid(why),
    };
    // Length-prefixed, so no client id and jti pair can spell another's key.
    let key = format!("{}:{id}:{}", id.len(), verified.jti);
    match oauth.nonces.first_use(&key, verified.exp, now).await {
        Ok(true) => ProofCheck::Valid,
        Ok(false) => ProofCheck::Invalid("assertion_replayed"),
        Err(e) => {
            tracing::warn!("assertion replay check unavailable: {e}");
            ProofCheck::Unavailable("replay_store_unavailable")
        }
    }
}

/// Check the TLS client certificate of the connection against client `id`'s registration.
pub async fn check_certificate(
    oauth: &OAuth,
    id: &str,
    certs: Option<&mtls::ClientCerts>,
) -> ProofCheck {
    let record = match client(oauth, id).await {
        Ok(Some(c)) => c,
        Ok(None) => return ProofCheck::Invalid(UNKNOWN),
        Err(e) => return e,
    };
    let chain = match certs {
        Some(c) if !c.0.is_empty() => &c.0,
        _ => {
            return if matches!(
                record.auth,
                ClientAuth::Secret | ClientAuth::PrivateKeyJwt { .. }
            ) {
                ProofCheck::Invalid(UNKNOWN)
            } else {
                ProofCheck::Invalid("no_client_certificate")
            };
        }
    };
    let leaf = chain[0].as_ref();
    match &record.auth {
        ClientAuth::SelfSignedTlsClientAuth { certs } => {
            let presented = mtls::thumbprint(leaf);
            match oauth.key_cache.thumbprints(id, certs) {
                Some(t)
                    if t.iter()
                        .any(|r| bool::from(r.as_bytes().ct_eq(presented.as_bytes()))) =>
                {
                    ProofCheck::Valid
                }
                Some(_) => ProofCheck::Invalid("certificate_not_registered"),
                None => ProofCheck::Invalid("registered_key_unusable"),
            }
        }
        ClientAuth::TlsClientAuth { subject_dn } => {
            let Some(ca) = oauth.client_ca.as_ref() else {
                tracing::warn!(client = id, "tls_client_auth client but no [tls] client_ca");
                return ProofCheck::Invalid("no_client_ca");
            };
            if !ca.verify(chain) {
                ProofCheck::Invalid("certificate_untrusted")
            } else if !mtls::subject_is(leaf, subject_dn) {
                ProofCheck::Invalid("certificate_subject")
            } else {
                ProofCheck::Valid
            }
        }
        ClientAuth::Secret | ClientAuth::PrivateKeyJwt { .. } => ProofCheck::Invalid(UNKNOWN),
    }
}

/// Check and normalise what an operator registers (`client add`): the key material must
/// be usable by the method. Returns the form to store.
pub fn registration(method: &str, material: &str) -> Result<ClientAuth, String> {
    match method {
        "private_key_jwt" => keys::normalize(material)
            .map(|jwks| ClientAuth::PrivateKeyJwt { jwks })
            .map_err(|e| e.to_string()),
        "self_signed_tls_client_auth" => {
            mtls::registered_thumbprints(material, keys::MAX_KEYS).map_err(|e| e.to_string())?;
            Ok(ClientAuth::SelfSignedTlsClientAuth {
                certs: material.trim().to_owned() + "\n",
            })
        }
        "tls_client_auth" => {
            mtls::parse_dn(material).map_err(|e| e.to_string())?;
            Ok(ClientAuth::TlsClientAuth {
                subject_dn: material.trim().to_owned(),
            })
        }
        other => Err(format!(
            "unknown auth method {other:?}: client_secret_basic, private_key_jwt, \
             tls_client_auth or self_signed_tls_client_auth"
        )),
    }
}
