//! TLS for the HTTP front end: explicit versions and cipher suites (rustls with the AWS-LC
//! provider), and a start-up check that the certificate can actually serve them.
//!
//! Why the check: a field report had sporadic handshake failures because the certificate's
//! key usage did not fit the enabled suites; only clients that happened to negotiate the
//! unfit suite failed. Here every enabled suite must be usable with the certificate's key
//! type, a present KeyUsage extension must allow `digitalSignature` (all suites rustls
//! offers sign the handshake: ECDHE or TLS 1.3) and a present ExtendedKeyUsage must allow
//! `serverAuth`. Any mismatch stops the server at start-up with a message naming it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{SignatureAlgorithm, SupportedCipherSuite};
use thiserror::Error;
use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::ext::pkix::{ExtendedKeyUsage, KeyUsage};

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

/// Validated `[tls]` settings (files are read at start-up, not at config parse time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// Enabled versions (non-empty, no duplicates).
    pub versions: Vec<TlsVersion>,
    /// Enabled suites by IANA name; empty: every suite fit for the key.
    pub cipher_suites: Vec<String>,
}

/// TLS cannot be set up as configured.
#[derive(Debug, Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("tls: cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The PEM holds no usable certificate or key, or it is malformed.
    #[error("tls: {0}")]
    Pem(String),
    /// Certificate, key and settings do not fit together.
    #[error("tls: {0}")]
    Mismatch(String),
    /// rustls refused the configuration.
    #[error("tls: {0}")]
    Rustls(#[from] rustls::Error),
}

const ID_KP_SERVER_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.1");
const ANY_EXTENDED_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.37.0");
const ID_CE_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.15");
const ID_CE_EXT_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.37");

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn suite_name(s: &SupportedCipherSuite) -> String {
    s.suite()
        .as_str()
        .map_or_else(|| format!("{:?}", s.suite()), str::to_owned)
}

fn key_name(alg: SignatureAlgorithm) -> &'static str {
    match alg {
        SignatureAlgorithm::RSA => "RSA",
        SignatureAlgorithm::ECDSA => "ECDSA",
        SignatureAlgorithm::ED25519 => "Ed25519",
        _ => "unsupported",
    }
}

/// Build the rustls server configuration, checking certificate against settings.
pub fn server_config(s: &TlsSettings) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let cert_pem = read(&s.cert)?;
    let key_pem = read(&s.key)?;
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Pem(format!("{}: {e}", s.cert.display())))?;
    let leaf = chain
        .first()
        .ok_or_else(|| TlsError::Pem(format!("{}: no CERTIFICATE block", s.cert.display())))?;
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| TlsError::Pem(format!("{}: {e}", s.key.display())))?
        .ok_or_else(|| TlsError::Pem(format!("{}: no PRIVATE KEY block", s.key.display())))?;

    let base = rustls::crypto::aws_lc_rs::default_provider();
    let signing_key = base
        .key_provider
        .load_private_key(key)
        .map_err(|e| TlsError::Pem(format!("{}: {e}", s.key.display())))?;
    let key_alg = signing_key.algorithm();
    check_certificate_usage(leaf)?;

    let version_ok = |suite: &SupportedCipherSuite| {
        let v = match suite {
            SupportedCipherSuite::Tls12(_) => TlsVersion::Tls12,
            SupportedCipherSuite::Tls13(_) => TlsVersion::Tls13,
        };
        s.versions.contains(&v)
    };
    let suites: Vec<SupportedCipherSuite> = if s.cipher_suites.is_empty() {
        base.cipher_suites
            .iter()
            .filter(|c| version_ok(c) && c.usable_for_signature_algorithm(key_alg))
            .copied()
            .collect()
    } else {
        let mut chosen = Vec::new();
        for name in &s.cipher_suites {
            let suite = base
                .cipher_suites
                .iter()
                .find(|c| suite_name(c) == *name)
                .ok_or_else(|| {
                    TlsError::Mismatch(format!("unknown or unsupported cipher suite '{name}'"))
                })?;
            if !version_ok(suite) {
                return Err(TlsError::Mismatch(format!(
                    "cipher suite {name} belongs to a TLS version not enabled in tls.versions"
                )));
            }
            if !suite.usable_for_signature_algorithm(key_alg) {
                return Err(TlsError::Mismatch(format!(
                    "cipher suite {name} cannot be used with the certificate's {} key \
                     (clients negotiating it would fail); remove it or use a matching certificate",
                    key_name(key_alg)
                )));
            }
            chosen.push(*suite);
        }
        chosen
    };
    for v in &s.versions {
        let has = suites.iter().any(|c| {
            matches!(
                (c, v),
                (SupportedCipherSuite::Tls12(_), TlsVersion::Tls12)
                    | (SupportedCipherSuite::Tls13(_), TlsVersion::Tls13)
            )
        });
        if !has {
            return Err(TlsError::Mismatch(format!(
                "no enabled cipher suite for TLS {} fits the certificate's {} key",
                match v {
                    TlsVersion::Tls12 => "1.2",
                    TlsVersion::Tls13 => "1.3",
                },
                key_name(key_alg)
            )));
        }
    }

    let versions: Vec<&'static rustls::SupportedProtocolVersion> = s
        .versions
        .iter()
        .map(|v| match v {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    let provider = CryptoProvider {
        cipher_suites: suites,
        ..base
    };
    let certified = rustls::sign::CertifiedKey::new(chain, signing_key);
    certified.keys_match().map_err(|e| {
        TlsError::Mismatch(format!("private key does not match the certificate: {e}"))
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&versions)?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// KeyUsage must allow digitalSignature and ExtendedKeyUsage must allow serverAuth, when
/// present (absent extensions place no restriction, RFC 5280 4.2.1.3 / 4.2.1.12).
pub fn check_certificate_usage(leaf: &[u8]) -> Result<(), TlsError> {
    let cert = Certificate::from_der(leaf)
        .map_err(|e| TlsError::Pem(format!("leaf certificate is not valid DER X.509: {e}")))?;
    for ext in cert.tbs_certificate.extensions.iter().flatten() {
        if ext.extn_id == ID_CE_KEY_USAGE {
            let ku = KeyUsage::from_der(ext.extn_value.as_bytes())
                .map_err(|e| TlsError::Pem(format!("malformed KeyUsage extension: {e}")))?;
            if !ku.digital_signature() {
                return Err(TlsError::Mismatch(
                    "the certificate's KeyUsage lacks digitalSignature, which every enabled \
                     suite (ECDHE or TLS 1.3) needs to sign the handshake"
                        .into(),
                ));
            }
        } else if ext.extn_id == ID_CE_EXT_KEY_USAGE {
            let eku = ExtendedKeyUsage::from_der(ext.extn_value.as_bytes())
                .map_err(|e| TlsError::Pem(format!("malformed ExtendedKeyUsage extension: {e}")))?;
            if !eku
                .0
                .iter()
                .any(|o| *o == ID_KP_SERVER_AUTH || *o == ANY_EXTENDED_KEY_USAGE)
            {
                return Err(TlsError::Mismatch(
                    "the certificate's ExtendedKeyUsage does not include serverAuth; TLS \
                     clients will reject it"
                        .into(),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(name: &str, versions: &[TlsVersion], suites: &[&str]) -> TlsSettings {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
        TlsSettings {
            cert: dir.join(format!("{name}.crt")),
            key: dir.join(format!("{name}.key")),
            versions: versions.to_vec(),
            cipher_suites: suites.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    const BOTH: &[TlsVersion] = &[TlsVersion::Tls12, TlsVersion::Tls13];

    fn err(s: &TlsSettings) -> String {
        match server_config(s) {
            Ok(_) => panic!("accepted {s:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn defaults_pick_the_suites_that_fit_the_key() {
        let cfg = server_config(&settings("rsa_server", BOTH, &[])).unwrap();
        let names: Vec<String> = cfg
            .crypto_provider()
            .cipher_suites
            .iter()
            .map(suite_name)
            .collect();
        assert!(
            names
                .iter()
                .any(|n| n == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
        );
        assert!(names.iter().all(|n| !n.contains("ECDSA")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("TLS13_")));
        let cfg = server_config(&settings("ec_server", BOTH, &[])).unwrap();
        assert!(
            cfg.crypto_provider()
                .cipher_suites
                .iter()
                .all(|s| !suite_name(s).contains("_RSA_"))
        );
    }

    #[test]
    fn issue_5_suite_not_fit_for_the_key_is_a_startup_error() {
        let e = err(&settings(
            "rsa_server",
            &[TlsVersion::Tls12],
            &["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"],
        ));
        assert!(
            e.contains("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256") && e.contains("RSA"),
            "{e}"
        );
        let e = err(&settings(
            "ec_server",
            BOTH,
            &[
                "TLS13_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            ],
        ));
        assert!(e.contains("ECDSA"), "{e}");
    }

    #[test]
    fn issue_5_key_usage_without_digital_signature_is_a_startup_error() {
        let e = err(&settings("rsa_keyencipherment_only", BOTH, &[]));
        assert!(e.contains("digitalSignature"), "{e}");
    }

    #[test]
    fn eku_without_server_auth_is_a_startup_error() {
        let e = err(&settings("ec_client_auth_only", BOTH, &[]));
        assert!(e.contains("serverAuth"), "{e}");
    }

    #[test]
    fn version_without_suites_and_unknown_suites_are_errors() {
        let e = err(&settings("ec_server", BOTH, &["TLS13_AES_128_GCM_SHA256"]));
        assert!(e.contains("TLS 1.2"), "{e}");
        let e = err(&settings("ec_server", BOTH, &["TLS_RSA_WITH_RC4_128_MD5"]));
        assert!(e.contains("TLS_RSA_WITH_RC4_128_MD5"), "{e}");
        let e = err(&settings(
            "ec_server",
            &[TlsVersion::Tls13],
            &["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"],
        ));
        assert!(e.contains("not enabled"), "{e}");
    }

    #[test]
    fn mismatched_key_and_missing_files() {
        let mut s = settings("rsa_server", BOTH, &[]);
        s.key = settings("rsa_keyencipherment_only", BOTH, &[]).key;
        assert!(err(&s).contains("does not match"));
        s.key = PathBuf::from("/nonexistent/key.pem");
        assert!(err(&s).contains("cannot read"));
    }
}
