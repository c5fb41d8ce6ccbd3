//! TLS for the HTTP front end: explicit versions and cipher suites (rustls with the AWS-LC
//! provider), a start-up check that the certificate can actually serve them, session
//! resumption ([`tickets`]), client certificates for RFC 8705 ([`client_certs`]), and
//! certificate reloads without dropping connections ([`CertStore`]).
//!
//! Why the check: a field report had sporadic handshake failures because the certificate's
//! key usage did not fit the enabled suites; only clients that happened to negotiate the
//! unfit suite failed. Here every enabled suite must be usable with the certificate's key
//! type, a present KeyUsage extension must allow `digitalSignature` (all suites rustls
//! offers sign the handshake: ECDHE or TLS 1.3) and a present ExtendedKeyUsage must allow
//! `serverAuth`. Any mismatch stops the server at start-up with a message naming it.

pub mod client_certs;
pub mod config;
pub mod facts;
pub mod order;
pub mod peer;
pub mod pin;
#[cfg(test)]
mod tests;
pub mod tickets;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
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

impl TlsVersion {
    /// A version as configuration and the command line name it: `1.2` or `1.3`.
    pub fn parse(name: &str) -> Option<TlsVersion> {
        match name {
            "1.2" => Some(TlsVersion::Tls12),
            "1.3" => Some(TlsVersion::Tls13),
            _ => None,
        }
    }
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
    /// Enabled suites by IANA name, in the server's order of preference; empty: every
    /// suite fit for the key, in [`order::server_order`].
    pub cipher_suites: Vec<String>,
    /// Issue session tickets (TLS 1.3 and TLS 1.2) so clients resume without a full
    /// handshake.
    pub session_tickets: bool,
    /// A new ticket key this often (seconds); the previous one keeps opening tickets for
    /// one more period.
    pub ticket_key_rotation_secs: u32,
    /// Derive ticket keys from the secrets file's master key, so every instance sharing it
    /// opens every other's tickets (default: random keys per instance).
    pub shared_ticket_keys: bool,
    /// Sessions kept in memory for TLS 1.2 session-id resumption (and TLS 1.3 when
    /// tickets are off).
    pub session_cache_entries: usize,
    /// Ask clients for a certificate (optional) for RFC 8705 client authentication.
    pub client_certificates: bool,
    /// PEM bundle of CAs that issue `tls_client_auth` certificates.
    pub client_ca: Option<PathBuf>,
    /// `Strict-Transport-Security: max-age` of the HTTP door's HTTPS answers, in seconds;
    /// 0: no header.
    pub hsts_max_age_secs: u32,
    /// Add `includeSubDomains` to that header.
    pub hsts_include_subdomains: bool,
}

impl TlsSettings {
    /// Settings with these files and every other field at its documented default.
    pub fn new(cert: PathBuf, key: PathBuf) -> Self {
        TlsSettings {
            cert,
            key,
            versions: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            cipher_suites: Vec::new(),
            session_tickets: true,
            ticket_key_rotation_secs: DEFAULT_TICKET_ROTATION_SECS,
            shared_ticket_keys: false,
            session_cache_entries: DEFAULT_SESSION_CACHE,
            client_certificates: true,
            client_ca: None,
            hsts_max_age_secs: DEFAULT_HSTS_MAX_AGE_SECS,
            hsts_include_subdomains: false,
        }
    }

    /// The `Strict-Transport-Security` value of the HTTP door's HTTPS answers (RFC 6797
    /// 6.1); `None` when turned off (`hsts_max_age_secs = 0`).
    pub fn hsts(&self) -> Option<String> {
        match (self.hsts_max_age_secs, self.hsts_include_subdomains) {
            (0, _) => None,
            (age, false) => Some(format!("max-age={age}")),
            (age, true) => Some(format!("max-age={age}; includeSubDomains")),
        }
    }
}

/// Default ticket key rotation: six hours (tickets resume for up to twelve).
pub const DEFAULT_TICKET_ROTATION_SECS: u32 = 6 * 3600;
/// Default HSTS max-age: one year, what browsers' preload lists ask for.
pub const DEFAULT_HSTS_MAX_AGE_SECS: u32 = 365 * 24 * 3600;
/// Default TLS 1.2 session cache size.
pub const DEFAULT_SESSION_CACHE: usize = 16_384;

/// The HTTP front end's TLS: the rustls configuration and what can change under it.
#[derive(Debug, Clone)]
pub struct TlsServer {
    /// Handed to the acceptor.
    pub config: Arc<rustls::ServerConfig>,
    /// The served certificate, swapped by [`CertStore::reload`].
    pub certs: Arc<CertStore>,
    /// CAs for `tls_client_auth`, if configured.
    pub client_ca: Option<Arc<client_certs::ClientCa>>,
}

/// The certificate being served: read at every handshake, replaced on reload (SIGHUP)
/// after the same checks as at start-up; connections already open keep theirs.
#[derive(Debug)]
pub struct CertStore {
    current: RwLock<Arc<CertifiedKey>>,
    /// The enabled suites: a new certificate must fit all of them.
    suites: Vec<SupportedCipherSuite>,
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.current.read()))
    }
}

impl CertStore {
    /// Load `cert` and `key`, check them like at start-up against the enabled suites,
    /// and serve them from the next handshake on. On error the old certificate stays.
    pub fn reload(&self, cert: &Path, key: &Path) -> Result<facts::CertFacts, TlsError> {
        let loaded = load_certified(cert, key)?;
        for suite in &self.suites {
            if !suite.usable_for_signature_algorithm(loaded.key_alg) {
                return Err(TlsError::Mismatch(format!(
                    "the new certificate's {} key cannot serve the enabled suite {}; the \
                     old certificate stays",
                    key_name(loaded.key_alg),
                    suite_name(suite)
                )));
            }
        }
        let facts = facts::CertFacts::of(&loaded.chain)?;
        *self.current.write() = Arc::new(loaded.certified);
        Ok(facts)
    }

    /// Facts of the certificate served now.
    pub fn facts(&self) -> Result<facts::CertFacts, TlsError> {
        facts::CertFacts::of(&self.current.read().cert)
    }
}

/// A certificate chain and key, read and checked.
pub struct Loaded {
    pub chain: Vec<CertificateDer<'static>>,
    pub certified: CertifiedKey,
    pub key_alg: SignatureAlgorithm,
}

/// Read `cert` and `key` and check them like at start-up (key matches, usage fits a TLS
/// server); the RADIUS door's EAP certificate goes through it too.
pub fn load_certified(cert: &Path, key: &Path) -> Result<Loaded, TlsError> {
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let chain = crate::pem::certs(&cert_pem)
        .map_err(|e| TlsError::Pem(format!("{}: {e}", cert.display())))?;
    let leaf = chain
        .first()
        .ok_or_else(|| TlsError::Pem(format!("{}: no CERTIFICATE block", cert.display())))?;
    let key_der = crate::pem::private_key(&key_pem)
        .map_err(|e| TlsError::Pem(format!("{}: {e}", key.display())))?
        .ok_or_else(|| TlsError::Pem(format!("{}: no PRIVATE KEY block", key.display())))?;
    let base = rustls::crypto::aws_lc_rs::default_provider();
    let signing_key = base
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| TlsError::Pem(format!("{}: {e}", key.display())))?;
    let key_alg = signing_key.algorithm();
    check_certificate_usage(leaf)?;
    let certified = CertifiedKey::new(chain.clone(), signing_key);
    certified.keys_match().map_err(|e| {
        TlsError::Mismatch(format!("private key does not match the certificate: {e}"))
    })?;
    Ok(Loaded {
        chain,
        certified,
        key_alg,
    })
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

pub fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
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
/// `ticket_secret`: with `shared_ticket_keys`, the secret ticket keys derive from (the
/// secrets file's master key's `tls session tickets` key); without it keys are random.
pub fn server_config(
    s: &TlsSettings,
    ticket_secret: Option<zeroize::Zeroizing<[u8; 32]>>,
) -> Result<TlsServer, TlsError> {
    let loaded = load_certified(&s.cert, &s.key)?;
    // The server picks the suite by its own order (`ignore_client_order` below): a client
    // that lists a weaker suite first (testssl.sh flags "no server cipher order") gets
    // the strongest both support, or the SHA-256 suite where the CPU hashes in hardware.
    let suites = order::server_order(
        enabled_suites(s, loaded.key_alg)?,
        !s.cipher_suites.is_empty(),
    );
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = s
        .versions
        .iter()
        .map(|v| match v {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites.clone(),
        ..rustls::crypto::aws_lc_rs::default_provider()
    });
    let client_ca = match &s.client_ca {
        Some(path) => Some(Arc::new(client_certs::ClientCa::load(
            path,
            Arc::clone(&provider),
        )?)),
        None => None,
    };
    let certs = Arc::new(CertStore {
        current: RwLock::new(Arc::new(loaded.certified)),
        suites,
    });
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)?;
    let builder = if s.client_certificates {
        builder.with_client_cert_verifier(Arc::new(client_certs::AnyClientCert::new(
            Arc::clone(&provider),
            client_ca.as_deref(),
        )))
    } else {
        builder.with_no_client_auth()
    };
    let mut config = builder.with_cert_resolver(Arc::clone(&certs) as Arc<dyn ResolvesServerCert>);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.ignore_client_order = true;
    config.session_storage =
        rustls::server::ServerSessionMemoryCache::new(s.session_cache_entries.max(1));
    if s.session_tickets {
        config.ticketer = match ticket_secret.filter(|_| s.shared_ticket_keys) {
            Some(secret) => Arc::new(tickets::SharedTickets::new(
                secret,
                s.ticket_key_rotation_secs,
            )),
            None => tickets::ticketer(s.ticket_key_rotation_secs)?,
        };
    } else {
        // Without tickets TLS 1.3 resumes from the session cache; with both off, no
        // resumption at all.
        config.send_tls13_tickets = if s.session_cache_entries > 0 { 2 } else { 0 };
    }
    Ok(TlsServer {
        config: Arc::new(config),
        certs,
        client_ca,
    })
}

/// The suites to enable: the named ones (each must fit the key and an enabled version),
/// or every suite fit for the key; every enabled version must keep at least one.
pub fn enabled_suites(
    s: &TlsSettings,
    key_alg: SignatureAlgorithm,
) -> Result<Vec<SupportedCipherSuite>, TlsError> {
    let base = rustls::crypto::aws_lc_rs::default_provider();
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
    Ok(suites)
}

/// The IANA names of the suites a configuration enables (for `tls check`).
pub fn suite_names(config: &rustls::ServerConfig) -> Vec<String> {
    config
        .crypto_provider()
        .cipher_suites
        .iter()
        .map(suite_name)
        .collect()
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
