//! Assertions signed with AWS-LC's signing side (a different code path from the
//! verification under test) for every accepted algorithm, registered as PEM and as JWK,
//! and the RFC 7523 claim rules one at a time. Python's authlib/cryptography sign the
//! interop test's assertions (`tests/integration/client_auth.rs`).

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;

use super::assertion::{self, Rules};
use super::keys::{self, Alg};

const NOW: i64 = 1_800_000_000;
const AUD: &str = "https://as.example/oauth2/token";

enum Signer {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
}

impl Signer {
    fn new(alg: Alg) -> Signer {
        match alg {
            Alg::Rs256 | Alg::Ps256 => Signer::Rsa(RsaKeyPair::generate(KeySize::Rsa2048).unwrap()),
            Alg::Es256 => Signer::Ec(
                EcdsaKeyPair::generate(&signature::ECDSA_P256_SHA256_FIXED_SIGNING).unwrap(),
            ),
            Alg::EdDsa => Signer::Ed(Ed25519KeyPair::generate().unwrap()),
        }
    }

    fn spki_pem(&self) -> String {
        let der = match self {
            Signer::Rsa(k) => k.public_key().as_der().unwrap().as_ref().to_vec(),
            Signer::Ec(k) => k.public_key().as_der().unwrap().as_ref().to_vec(),
            Signer::Ed(k) => k.public_key().as_der().unwrap().as_ref().to_vec(),
        };
        let b64 = STANDARD.encode(der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    fn jwk(&self, kid: &str) -> serde_json::Value {
        let b = |v: &[u8]| URL_SAFE_NO_PAD.encode(v);
        match self {
            Signer::Rsa(k) => {
                use x509_cert::der::asn1::UintRef;
                use x509_cert::der::{Decode, Reader, SliceReader};
                // PKCS#1 RSAPublicKey: SEQUENCE { n, e }.
                let der = k.public_key().as_ref();
                let mut r = SliceReader::new(der).unwrap();
                let (n, e) = r
                    .sequence(|s| {
                        let n = UintRef::decode(s)?.as_bytes().to_vec();
                        Ok((n, UintRef::decode(s)?.as_bytes().to_vec()))
                    })
                    .unwrap();
                json!({"kty": "RSA", "kid": kid, "n": b(&n), "e": b(&e)})
            }
            Signer::Ec(k) => {
                let p = k.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "kid": kid, "x": b(&p[1..33]), "y": b(&p[33..])})
            }
            Signer::Ed(k) => {
                json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": b(k.public_key().as_ref())})
            }
        }
    }

    fn sign(&self, alg: Alg, msg: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match self {
            Signer::Rsa(k) => {
                let pad: &dyn signature::RsaEncoding = match alg {
                    Alg::Ps256 => &signature::RSA_PSS_SHA256,
                    _ => &signature::RSA_PKCS1_SHA256,
                };
                let mut sig = vec![0; k.public_modulus_len()];
                k.sign(pad, &rng, msg, &mut sig).unwrap();
                sig
            }
            Signer::Ec(k) => k.sign(&rng, msg).unwrap().as_ref().to_vec(),
            Signer::Ed(k) => k.sign(msg).as_ref().to_vec(),
        }
    }
}

fn jws(signer: &Signer, header: serde_json::Value, claims: serde_json::Value, alg: Alg) -> String {
    let h = URL_SAFE_NO_PAD.encode(header.to_string());
    let p = URL_SAFE_NO_PAD.encode(claims.to_string());
    let input = format!("{h}.{p}");
    let s = URL_SAFE_NO_PAD.encode(signer.sign(alg, input.as_bytes()));
    format!("{input}.{s}")
}

fn claims() -> serde_json::Value {
    json!({"iss": "c1", "sub": "c1", "aud": AUD, "exp": NOW + 60, "iat": NOW, "jti": "j-1"})
}

fn rules<'a>(auds: &'a [&'a str]) -> Rules<'a> {
    Rules {
        audiences: auds,
        now: NOW,
        max_lifetime: 300,
        skew: 30,
    }
}

fn check(token: &str, keys: &[keys::VerifyKey]) -> Result<assertion::Verified, &'static str> {
    let u = assertion::peek(token).unwrap();
    assert_eq!(u.client_id, "c1");
    u.check(keys, &rules(&[AUD, "https://as.example"]))
}

#[test]
fn issue_14_every_algorithm_verifies_from_pem_and_from_jwk() {
    for alg in Alg::ALL {
        let s = Signer::new(alg);
        let token = jws(&s, json!({"alg": alg.name(), "kid": "k1"}), claims(), alg);
        let from_pem = keys::parse(&s.spki_pem()).unwrap();
        let from_jwk = keys::parse(&json!({"keys": [s.jwk("k1")]}).to_string()).unwrap();
        for ks in [&from_pem, &from_jwk] {
            let v = check(&token, ks).unwrap_or_else(|e| panic!("{alg:?}: {e}"));
            assert_eq!(v.jti, "j-1");
            assert_eq!(v.exp, NOW + 60 + 30);
        }
        // Another key of the same type does not verify it.
        let other = Signer::new(alg);
        let wrong = keys::parse(&other.spki_pem()).unwrap();
        assert_eq!(check(&token, &wrong), Err("assertion_signature"), "{alg:?}");
        // A flipped payload byte fails.
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut c = claims();
        c["jti"] = "j-2".into();
        parts[1] = URL_SAFE_NO_PAD.encode(c.to_string());
        assert_eq!(
            check(&parts.join("."), &from_pem),
            Err("assertion_signature")
        );
    }
}

#[test]
fn issue_14_algorithm_confusion_is_refused() {
    let ed = Signer::new(Alg::EdDsa);
    let keys_ed = keys::parse(&ed.spki_pem()).unwrap();
    let good = jws(&ed, json!({"alg": "EdDSA"}), claims(), Alg::EdDsa);
    let sig = good.rsplit('.').next().unwrap();
    let body = |h: serde_json::Value| {
        format!(
            "{}.{}.{sig}",
            URL_SAFE_NO_PAD.encode(h.to_string()),
            URL_SAFE_NO_PAD.encode(claims().to_string())
        )
    };
    for h in [
        json!({"alg": "none"}),
        json!({"alg": "HS256"}),
        json!({"alg": "ES256"}),
        json!({"alg": "EdDSA", "crit": ["exp"]}),
        json!({}),
    ] {
        let r = check(&body(h.clone()), &keys_ed);
        assert!(r.is_err(), "{h}");
    }
    // An RSA key pinned to PS256 does not verify RS256.
    let rsa = Signer::new(Alg::Rs256);
    let mut jwk = rsa.jwk("r");
    jwk["alg"] = "PS256".into();
    let pinned = keys::parse(&jwk.to_string()).unwrap();
    let rs = jws(&rsa, json!({"alg": "RS256"}), claims(), Alg::Rs256);
    assert_eq!(check(&rs, &pinned), Err("assertion_signature"));
}

#[test]
fn issue_14_rfc_7523_claim_rules() {
    let s = Signer::new(Alg::Es256);
    let keys = keys::parse(&s.spki_pem()).unwrap();
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut c = claims();
        f(&mut c);
        check(&jws(&s, json!({"alg": "ES256"}), c, Alg::Es256), &keys)
    };
    assert!(with(&|_| {}).is_ok());
    assert!(with(&|c| c["aud"] = json!(["x", AUD])).is_ok());
    assert!(with(&|c| c["aud"] = json!("https://as.example")).is_ok());
    assert!(with(&|c| c["exp"] = json!(NOW - 10)).is_ok(), "within skew");
    assert_eq!(
        with(&|c| c["aud"] = json!("https://other.example/token")),
        Err("assertion_audience")
    );
    assert_eq!(
        with(&|c| c["aud"] = json!(["a", "b"])),
        Err("assertion_audience")
    );
    assert_eq!(
        with(&|c| {
            c.as_object_mut().unwrap().remove("aud");
        }),
        Err("assertion_audience")
    );
    assert_eq!(
        with(&|c| c["exp"] = json!(NOW - 31)),
        Err("assertion_expired")
    );
    assert_eq!(
        with(&|c| {
            c.as_object_mut().unwrap().remove("exp");
        }),
        Err("assertion_claims")
    );
    assert_eq!(with(&|c| c["exp"] = json!("soon")), Err("assertion_claims"));
    assert_eq!(
        with(&|c| c["exp"] = json!(NOW + 400)),
        Err("assertion_lifetime")
    );
    assert_eq!(
        with(&|c| c["nbf"] = json!(NOW + 60)),
        Err("assertion_not_yet_valid")
    );
    assert_eq!(
        with(&|c| c["iat"] = json!(NOW + 60)),
        Err("assertion_issued_at")
    );
    assert_eq!(
        with(&|c| c["iat"] = json!(NOW - 3600)),
        Err("assertion_issued_at")
    );
    assert_eq!(with(&|c| c["sub"] = json!("c2")), Err("assertion_subject"));
    assert_eq!(
        with(&|c| {
            c.as_object_mut().unwrap().remove("jti");
        }),
        Err("assertion_jti")
    );
    assert_eq!(
        with(&|c| c["jti"] = json!("x".repeat(300))),
        Err("assertion_jti")
    );
}

#[test]
fn malformed_assertions_are_refused_before_any_crypto() {
    for bad in ["", "a.b", "a.b.c.d", "!!.!!.!!", &"a".repeat(9000)] {
        assert!(assertion::peek(bad).is_err(), "{bad:?}");
    }
    let no_iss = format!(
        "{}.{}.AA",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"EdDSA"}"#),
        URL_SAFE_NO_PAD.encode(r#"{"sub":"c1"}"#)
    );
    assert!(assertion::peek(&no_iss).is_err());
}

#[test]
fn issue_14_registration_refuses_private_weak_and_foreign_keys() {
    let err = |t: &str| keys::parse(t).unwrap_err().0;
    let ed = Signer::new(Alg::EdDsa);
    let mut jwk = ed.jwk("k");
    jwk["d"] = "AAAA".into();
    assert!(err(&jwk.to_string()).contains("private"));
    assert!(err(r#"{"kty":"oct","k":"AAAA"}"#).contains("private"));
    assert!(err(r#"{"keys":[{"kty":"EC","crv":"P-384","x":"AA","y":"AA"}]}"#).contains("curve"));
    assert!(err(r#"{"kty":"RSA","n":"AQAB","e":"AQAB"}"#).contains("2048"));
    assert!(err(r#"{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}"#).contains("32 bytes"));
    let mut off_curve = ed.jwk("k");
    off_curve["alg"] = "RS256".into();
    assert!(err(&off_curve.to_string()).contains("does not fit"));
    let pkcs8 = ed25519_pkcs8_pem();
    assert!(err(&pkcs8).contains("PRIVATE key"), "{}", err(&pkcs8));
    assert!(err("hello").contains("expected"));
    // Normalised JWKS keeps public members only, and parses back to the same keys.
    let mut extra = ed.jwk("k");
    extra["x5c"] = json!(["ignored"]);
    let text = json!({"keys": [extra]}).to_string();
    let stored = keys::normalize(&text).unwrap();
    assert!(!stored.contains("x5c"));
    assert_eq!(keys::parse(&stored).unwrap(), keys::parse(&text).unwrap());
}

fn ed25519_pkcs8_pem() -> String {
    let doc = Ed25519KeyPair::generate().unwrap().to_pkcs8v1().unwrap();
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(doc.as_ref())
    )
}

#[test]
fn issue_14_a_jwks_for_several_purposes_registers_its_signing_keys_only() {
    let ec = Signer::new(Alg::Es256);
    let rsa = Signer::new(Alg::Rs256);
    let mut enc = rsa.jwk("enc-key");
    enc["use"] = "enc".into();
    let p384 = json!({"kty": "EC", "crv": "P-384", "kid": "p384", "x": "AA", "y": "AA"});
    let text = json!({"keys": [enc, p384, ec.jwk("sig-key")]}).to_string();
    let keys = keys::parse(&text).unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].kid.as_deref(), Some("sig-key"));
    let skipped = keys::skipped(&text);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped[0].contains("enc-key") && skipped[0].contains("use"),
        "{skipped:?}"
    );
    assert!(
        skipped[1].contains("p384") && skipped[1].contains("curve"),
        "{skipped:?}"
    );
    // Stored: the usable key only.
    let stored = keys::normalize(&text).unwrap();
    assert!(stored.contains("sig-key") && !stored.contains("enc-key"));
    // Nothing usable: refused, naming why; private material anywhere: refused.
    let only_enc = json!({"keys": [rsa.jwk("x")]})
        .to_string()
        .replace("\"kty\"", "\"use\":\"enc\",\"kty\"");
    assert!(
        keys::parse(&only_enc)
            .unwrap_err()
            .0
            .contains("no usable signing key")
    );
    let mut private = ec.jwk("p");
    private["d"] = "AAAA".into();
    let with_private = json!({"keys": [ec.jwk("ok"), private]}).to_string();
    assert!(
        keys::parse(&with_private)
            .unwrap_err()
            .0
            .contains("private")
    );
}
