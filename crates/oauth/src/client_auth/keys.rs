//! Public keys a `private_key_jwt` client registers (issue 14): a PEM `PUBLIC KEY` or
//! `CERTIFICATE`, or a JWKS document (or one JWK). Parsed once into [`VerifyKey`]s that
//! check RS256 (RSA PKCS#1 v1.5), PS256 (RSA-PSS), ES256 (P-256) or EdDSA (Ed25519)
//! signatures through AWS-LC. RSA keys under 2048 bits, other curves, symmetric keys and
//! any private key material are refused when the key is registered, with a message that
//! says which.

use aws_lc_rs::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::spki::SubjectPublicKeyInfoOwned;

const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const PRIME256V1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");

/// Most keys one client may register (rotation needs two; a few more do no harm).
pub const MAX_KEYS: usize = 8;

/// A JWS algorithm we accept on client assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PSS with SHA-256.
    Ps256,
    /// ECDSA P-256 with SHA-256 (JWS raw `r || s`).
    Es256,
    /// Ed25519 (RFC 8037).
    EdDsa,
}

impl Alg {
    /// Every accepted algorithm, as advertised in the discovery metadata.
    pub const ALL: [Alg; 4] = [Alg::Rs256, Alg::Ps256, Alg::Es256, Alg::EdDsa];

    /// The JWS `alg` name.
    pub const fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Ps256 => "PS256",
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }

    /// Parse a JWS `alg` name (exact, case-sensitive as RFC 7515 requires).
    pub fn parse(s: &str) -> Option<Alg> {
        Alg::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// The key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Material {
    /// RSA modulus and exponent (big-endian, no leading zeros required).
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// Uncompressed P-256 point.
    P256(Vec<u8>),
    /// Ed25519 public key.
    Ed25519(Vec<u8>),
}

/// One registered verification key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyKey {
    /// `kid`, if the JWK named one.
    pub kid: Option<String>,
    /// The JWK's `alg`, if it pinned one.
    pub alg: Option<Alg>,
    material: Material,
}

impl VerifyKey {
    /// Whether this key may verify `alg` (key type fits, and the JWK's `alg` if pinned).
    pub fn allows(&self, alg: Alg) -> bool {
        let fits = matches!(
            (&self.material, alg),
            (Material::Rsa { .. }, Alg::Rs256 | Alg::Ps256)
                | (Material::P256(_), Alg::Es256)
                | (Material::Ed25519(_), Alg::EdDsa)
        );
        fits && self.alg.is_none_or(|a| a == alg)
    }

    /// Check `sig` over `msg` with `alg` (which [`Self::allows`] must accept).
    pub fn verify(&self, alg: Alg, msg: &[u8], sig: &[u8]) -> bool {
        if !self.allows(alg) {
            return false;
        }
        match (&self.material, alg) {
            (Material::Rsa { n, e }, Alg::Rs256) => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, msg, sig)
                .is_ok(),
            (Material::Rsa { n, e }, Alg::Ps256) => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PSS_2048_8192_SHA256, msg, sig)
                .is_ok(),
            (Material::P256(p), Alg::Es256) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, p)
                    .verify(msg, sig)
                    .is_ok()
            }
            (Material::Ed25519(k), Alg::EdDsa) => UnparsedPublicKey::new(&signature::ED25519, k)
                .verify(msg, sig)
                .is_ok(),
            _ => false,
        }
    }

    /// The public JWK (what the store keeps for keys registered as JWKs).
    fn to_jwk(&self) -> Value {
        let b = |v: &[u8]| Value::String(URL_SAFE_NO_PAD.encode(v));
        let mut m = Map::new();
        match &self.material {
            Material::Rsa { n, e } => {
                m.insert("kty".into(), "RSA".into());
                m.insert("n".into(), b(n));
                m.insert("e".into(), b(e));
            }
            Material::P256(p) => {
                m.insert("kty".into(), "EC".into());
                m.insert("crv".into(), "P-256".into());
                m.insert("x".into(), b(&p[1..33]));
                m.insert("y".into(), b(&p[33..65]));
            }
            Material::Ed25519(k) => {
                m.insert("kty".into(), "OKP".into());
                m.insert("crv".into(), "Ed25519".into());
                m.insert("x".into(), b(k));
            }
        }
        if let Some(kid) = &self.kid {
            m.insert("kid".into(), kid.clone().into());
        }
        if let Some(alg) = self.alg {
            m.insert("alg".into(), alg.name().into());
        }
        Value::Object(m)
    }
}

/// Registered key text that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("public key: {0}")]
pub struct KeyError(pub String);

fn bad(msg: impl Into<String>) -> KeyError {
    KeyError(msg.into())
}

/// Parse registered key text: PEM (`PUBLIC KEY` and/or `CERTIFICATE` blocks) or JSON (a
/// JWKS `{"keys": [...]}` or a single JWK).
pub fn parse(text: &str) -> Result<Vec<VerifyKey>, KeyError> {
    let t = text.trim_start();
    let keys = if t.starts_with('{') {
        parse_json(t)?
    } else if t.starts_with("-----BEGIN") {
        parse_pem(t)?
    } else {
        return Err(bad(
            "expected a PEM PUBLIC KEY or CERTIFICATE, or a JWKS / JWK JSON document",
        ));
    };
    if keys.is_empty() {
        return Err(bad("no key found"));
    }
    if keys.len() > MAX_KEYS {
        return Err(bad(format!(
            "{} keys; at most {MAX_KEYS} per client",
            keys.len()
        )));
    }
    Ok(keys)
}

/// The form the store keeps: PEM as given (trimmed), JSON re-encoded as a JWKS of the
/// public members only (so nothing unchecked or private is stored).
pub fn normalize(text: &str) -> Result<String, KeyError> {
    let keys = parse(text)?;
    if text.trim_start().starts_with('{') {
        let jwks: Vec<Value> = keys.iter().map(VerifyKey::to_jwk).collect();
        Ok(serde_json::json!({ "keys": jwks }).to_string())
    } else {
        Ok(text.trim().to_owned() + "\n")
    }
}

/// Any registrable key text (PEM or JSON) as a JWKS of its public keys: the form a
/// `private_key_jwt` client sends inline when it registers itself (RFC 7591 `jwks`).
pub fn to_jwks(text: &str) -> Result<String, KeyError> {
    let jwks: Vec<Value> = parse(text)?.iter().map(VerifyKey::to_jwk).collect();
    Ok(serde_json::json!({ "keys": jwks }).to_string())
}

fn parse_pem(text: &str) -> Result<Vec<VerifyKey>, KeyError> {
    use portcullis_door::pem::SectionKind;
    let mut out = Vec::new();
    let sections = portcullis_door::pem::sections(text.as_bytes())
        .map_err(|e| bad(format!("malformed PEM: {e}")))?;
    for (kind, der) in sections {
        let spki = match kind {
            SectionKind::PublicKey => SubjectPublicKeyInfoOwned::from_der(&der)
                .map_err(|e| bad(format!("malformed PUBLIC KEY: {e}")))?,
            SectionKind::Certificate => {
                Certificate::from_der(&der)
                    .map_err(|e| bad(format!("malformed CERTIFICATE: {e}")))?
                    .tbs_certificate
                    .subject_public_key_info
            }
            SectionKind::RsaPrivateKey | SectionKind::PrivateKey | SectionKind::EcPrivateKey => {
                return Err(bad(
                    "this is a PRIVATE key; register the public key (openssl pkey -pubout)",
                ));
            }
            _ => continue,
        };
        out.push(from_spki(&spki)?);
    }
    Ok(out)
}

fn from_spki(spki: &SubjectPublicKeyInfoOwned) -> Result<VerifyKey, KeyError> {
    let bits = spki
        .subject_public_key
        .as_bytes()
        .ok_or_else(|| bad("public key bit string is not whole bytes"))?;
    let oid = spki.algorithm.oid;
    let material = if oid == RSA_ENCRYPTION {
        rsa_from_pkcs1(bits)?
    } else if oid == EC_PUBLIC_KEY {
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        if curve != Some(PRIME256V1) {
            return Err(bad("EC keys must be on P-256 (ES256)"));
        }
        p256(bits.to_vec())?
    } else if oid == ED25519 {
        ed25519(bits.to_vec())?
    } else {
        return Err(bad(format!(
            "unsupported key algorithm {oid}; use RSA, EC P-256 or Ed25519"
        )));
    };
    Ok(VerifyKey {
        kid: None,
        alg: None,
        material,
    })
}

/// PKCS#1 `RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }`.
fn rsa_from_pkcs1(der: &[u8]) -> Result<Material, KeyError> {
    use x509_cert::der::asn1::UintRef;
    use x509_cert::der::{Reader, SliceReader};
    let malformed = |e: x509_cert::der::Error| bad(format!("malformed RSA public key: {e}"));
    let mut r = SliceReader::new(der).map_err(malformed)?;
    let (n, e) = r
        .sequence(|s| {
            let n = UintRef::decode(s)?;
            let e = UintRef::decode(s)?;
            Ok((n.as_bytes().to_vec(), e.as_bytes().to_vec()))
        })
        .map_err(malformed)?;
    r.finish(()).map_err(malformed)?;
    rsa(n, e)
}

fn rsa(n: Vec<u8>, e: Vec<u8>) -> Result<Material, KeyError> {
    let n: Vec<u8> = n.into_iter().skip_while(|b| *b == 0).collect();
    let bits = n.len() * 8 - n.first().map_or(8, |b| b.leading_zeros() as usize);
    if !(2048..=8192).contains(&bits) {
        return Err(bad(format!(
            "RSA keys must be 2048-8192 bits, this one has {bits}"
        )));
    }
    if e.is_empty() || e.len() > 4 {
        return Err(bad("RSA public exponent out of range"));
    }
    Ok(Material::Rsa { n, e })
}

fn p256(point: Vec<u8>) -> Result<Material, KeyError> {
    // Checking that the point is on the curve: AWS-LC parses it as a key.
    if point.len() != 65
        || point[0] != 4
        || signature::ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &point).is_err()
    {
        return Err(bad("not a valid uncompressed P-256 point"));
    }
    Ok(Material::P256(point))
}

fn ed25519(k: Vec<u8>) -> Result<Material, KeyError> {
    if k.len() != 32 {
        return Err(bad("Ed25519 public keys are 32 bytes"));
    }
    Ok(Material::Ed25519(k))
}

fn parse_json(text: &str) -> Result<Vec<VerifyKey>, KeyError> {
    parse_json_noting(text).map(|(keys, _)| keys)
}

/// The keys of a JWKS this server cannot use for client assertions (encryption keys,
/// other curves or algorithms, RSA under 2048 bits), each with why; `client add` prints
/// them. A JWKS's usable keys are registered without them.
pub fn skipped(text: &str) -> Vec<String> {
    if !text.trim_start().starts_with('{') {
        return Vec::new();
    }
    parse_json_noting(text).map_or_else(|_| Vec::new(), |(_, skipped)| skipped)
}

/// A JWKS published for several purposes may hold keys we cannot use: those are skipped
/// (and named), while private or symmetric material anywhere refuses the whole document.
fn parse_json_noting(text: &str) -> Result<(Vec<VerifyKey>, Vec<String>), KeyError> {
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let Value::Object(obj) = v else {
        return Err(bad("expected a JSON object"));
    };
    match obj.get("keys") {
        Some(Value::Array(keys)) => {
            let (mut usable, mut skipped) = (Vec::new(), Vec::new());
            for (i, k) in keys.iter().enumerate() {
                let Value::Object(m) = k else {
                    return Err(bad("every member of \"keys\" must be a JWK object"));
                };
                match from_jwk(m) {
                    Ok(key) => usable.push(key),
                    Err(Problem::Unusable(e)) => skipped.push(format!(
                        "key {i}{}: {}",
                        m.get("kid")
                            .and_then(Value::as_str)
                            .map_or_else(String::new, |k| format!(" ({k:?})")),
                        e.0
                    )),
                    Err(Problem::Refused(e)) => return Err(e),
                }
            }
            if usable.is_empty()
                && let Some(first) = skipped.first()
            {
                return Err(bad(format!("no usable signing key; {first}")));
            }
            Ok((usable, skipped))
        }
        Some(_) => Err(bad("\"keys\" must be an array")),
        None if obj.contains_key("kty") => {
            let key = from_jwk(&obj).map_err(|p| match p {
                Problem::Unusable(e) | Problem::Refused(e) => e,
            })?;
            Ok((vec![key], Vec::new()))
        }
        None => Err(bad("expected a JWKS (\"keys\") or a JWK (\"kty\")")),
    }
}

/// Why a JWK is not registered: not one we can use, or one that must not be stored.
enum Problem {
    /// Another purpose, algorithm or curve, or too weak: skipped in a JWKS.
    Unusable(KeyError),
    /// Private or symmetric material, or malformed: the registration is refused.
    Refused(KeyError),
}

impl From<KeyError> for Problem {
    fn from(e: KeyError) -> Self {
        Problem::Refused(e)
    }
}

fn unusable(msg: impl Into<String>) -> Problem {
    Problem::Unusable(bad(msg))
}

fn from_jwk(m: &Map<String, Value>) -> Result<VerifyKey, Problem> {
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    let b = |k: &str| -> Result<Vec<u8>, KeyError> {
        let v = s(k).ok_or_else(|| bad(format!("JWK member \"{k}\" is missing")))?;
        URL_SAFE_NO_PAD
            .decode(v)
            .map_err(|_| bad(format!("JWK member \"{k}\" is not base64url")))
    };
    for private in ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] {
        if m.contains_key(private) {
            return Err(Problem::Refused(bad(format!(
                "the JWK holds private or symmetric key material (\"{private}\"); register \
                 the public key only"
            ))));
        }
    }
    if let Some(u) = m.get("use")
        && u.as_str() != Some("sig")
    {
        return Err(unusable("JWK \"use\" must be \"sig\""));
    }
    let alg = match m.get("alg") {
        None => None,
        Some(a) => Some(a.as_str().and_then(Alg::parse).ok_or_else(|| {
            unusable(format!(
                "JWK \"alg\" {a} is not one of RS256, PS256, ES256, EdDSA"
            ))
        })?),
    };
    let kid = match m.get("kid") {
        None => None,
        Some(Value::String(k)) if !k.is_empty() && k.len() <= 256 => Some(k.clone()),
        Some(_) => {
            return Err(Problem::Refused(bad(
                "JWK \"kid\" must be a string of 1-256 characters",
            )));
        }
    };
    let material = match (s("kty"), s("crv")) {
        (Some("RSA"), _) => rsa(b("n")?, b("e")?).map_err(Problem::Unusable)?,
        (Some("EC"), Some("P-256")) => {
            let (x, y) = (b("x")?, b("y")?);
            if x.len() != 32 || y.len() != 32 {
                return Err(Problem::Refused(bad("P-256 coordinates are 32 bytes each")));
            }
            p256([&[4u8][..], &x, &y].concat())?
        }
        (Some("OKP"), Some("Ed25519")) => ed25519(b("x")?)?,
        (Some("EC" | "OKP"), crv) => {
            return Err(Problem::Unusable(bad(format!(
                "unsupported curve {crv:?}; use P-256 or Ed25519"
            ))));
        }
        (kty, _) => {
            return Err(Problem::Unusable(bad(format!(
                "unsupported key type {kty:?}; use RSA, EC or OKP"
            ))));
        }
    };
    let key = VerifyKey { kid, alg, material };
    if let Some(a) = alg
        && !key.allows(a)
    {
        return Err(Problem::Unusable(bad(format!(
            "JWK \"alg\" {} does not fit its key type",
            a.name()
        ))));
    }
    Ok(key)
}
