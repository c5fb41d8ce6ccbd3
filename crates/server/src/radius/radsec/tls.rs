//! The RadSec door's TLS: the rustls server configuration built from `[radius.radsec]`
//! with the same start-up checks as `[tls]` (certificate usage, every enabled suite fit
//! for the key, every enabled version keeping a suite), and a client certificate
//! *required* and chained to `client_ca` (CRLs honoured): a NAS without one, or with one
//! from another CA, fails the handshake. Which NAS a good certificate names is decided
//! after the handshake ([`LeafNames`], the NAS table).
//!
//! ALPN per `radius_1_1` (RFC 9765 §3.3): "off" configures none (a client's offer gets no
//! answer: RADIUS/1.0); "allow" answers "radius/1.1" when offered, else "radius/1.0"
//! (rustls picks the server's first protocol the client offered; a client offering
//! neither gets the no_application_protocol alert); "require" offers only "radius/1.1".
//! With ALPN on, the server keeps no session state for resumption: a resumed session
//! would renegotiate ALPN from scratch, and RFC 9765 §3.5 forbids letting a session that
//! was RADIUS/1.1 come back as 1.0; RadSec connections are long-lived, so a full
//! handshake per connection costs nothing that matters.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::der::asn1::ObjectIdentifier;

use portcullis_radius::v11::{ALPN_RADIUS_1_0, ALPN_RADIUS_1_1};

use super::config::{Radius11, RadsecConfig};
use crate::tls::{TlsError, TlsSettings, TlsVersion};

const ID_CE_SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");

/// Build the door's rustls configuration, reading and checking its files now.
pub fn server_config(c: &RadsecConfig) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let loaded = crate::tls::load_certified(&c.cert, &c.key)?;
    let mut s = TlsSettings::new(c.cert.clone(), c.key.clone());
    s.versions.clone_from(&c.versions);
    s.cipher_suites.clone_from(&c.cipher_suites);
    let suites = crate::tls::enabled_suites(&s, loaded.key_alg)?;
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::aws_lc_rs::default_provider()
    });
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = c
        .versions
        .iter()
        .map(|v| match v {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    let (roots, n) = crate::radius::eap::tls::load_roots(&c.client_ca)?;
    if n == 0 {
        return Err(TlsError::Pem(format!(
            "{}: no CERTIFICATE block (radius.radsec.client_ca)",
            c.client_ca.display()
        )));
    }
    let mut crls = Vec::new();
    for path in &c.crl {
        crls.extend(crate::radius::eap::tls::read_crls(path)?);
    }
    let mut vb =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider));
    if !crls.is_empty() {
        // A CRL covers its own CA; a certificate of another listed CA without a CRL of
        // its own is still accepted (its status is unknown, not revoked).
        vb = vb.with_crls(crls).allow_unknown_revocation_status();
    }
    let verifier = vb
        .build()
        .map_err(|e| TlsError::Pem(format!("{}: {e}", c.client_ca.display())))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(loaded.chain, key_der(&c.key)?)?;
    config.alpn_protocols = match c.radius_1_1 {
        Radius11::Off => Vec::new(),
        Radius11::Allow => vec![ALPN_RADIUS_1_1.to_vec(), ALPN_RADIUS_1_0.to_vec()],
        Radius11::Require => vec![ALPN_RADIUS_1_1.to_vec()],
    };
    if c.radius_1_1 != Radius11::Off {
        config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(Arc::new(config))
}

fn key_der(path: &std::path::Path) -> Result<rustls::pki_types::PrivateKeyDer<'static>, TlsError> {
    let pem = crate::tls::read(path)?;
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?
        .ok_or_else(|| TlsError::Pem(format!("{}: no PRIVATE KEY block", path.display())))
}

/// What a NAS's leaf certificate is recognised by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafNames {
    /// SHA-256 of its DER.
    pub sha256: [u8; 32],
    /// Its subjectAltName dNSNames.
    pub dns_names: Vec<String>,
    /// Its subject commonName.
    pub common_name: Option<String>,
}

impl LeafNames {
    /// Read a leaf certificate (the handshake verified it already; a certificate that
    /// does not decode here names nothing).
    pub fn of(der: &[u8]) -> Option<LeafNames> {
        use x509_cert::ext::pkix::name::GeneralName;
        let cert = Certificate::from_der(der).ok()?;
        let mut dns_names = Vec::new();
        for ext in cert.tbs_certificate.extensions.iter().flatten() {
            if ext.extn_id == ID_CE_SUBJECT_ALT_NAME {
                let san = x509_cert::ext::pkix::SubjectAltName::from_der(ext.extn_value.as_bytes())
                    .ok()?;
                for n in san.0 {
                    if let GeneralName::DnsName(d) = n {
                        dns_names.push(d.to_string());
                    }
                }
            }
        }
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, der).as_ref());
        Some(LeafNames {
            sha256,
            dns_names,
            common_name: crate::radius::eap::tls::identity(
                der,
                crate::radius::eap::config::TlsIdentity::SubjectCn,
            ),
        })
    }

    /// For logs: the pin and the names, as `portcullis nas add` takes them.
    pub fn describe(&self) -> String {
        let names = if self.dns_names.is_empty() {
            self.common_name
                .as_deref()
                .map(|cn| format!("CN {cn}"))
                .unwrap_or_else(|| "no name".into())
        } else {
            format!("dNSName {}", self.dns_names.join(", "))
        };
        let pin = portcullis_store::NasCertificate::Sha256(self.sha256);
        format!("{pin} ({names})")
    }
}

/// The pin of the certificate in `path` (`portcullis nas add --certificate FILE`): the
/// first certificate of a PEM file (the leaf of a chain), or a DER file.
pub fn pin_file(path: &std::path::Path) -> Result<portcullis_store::NasCertificate, TlsError> {
    let bytes = crate::tls::read(path)?;
    pin_bytes(bytes, &path.display().to_string())
}

/// The pin of a certificate given as PEM (its first certificate) or DER bytes; `what`
/// names their origin in errors (the admin API's `certificate_pem`, a file).
pub fn pin_bytes(bytes: Vec<u8>, what: &str) -> Result<portcullis_store::NasCertificate, TlsError> {
    let der = if bytes.starts_with(b"-----") || bytes.iter().take(64).all(u8::is_ascii) {
        rustls_pemfile::certs(&mut &bytes[..])
            .next()
            .ok_or_else(|| TlsError::Pem(format!("{what}: no CERTIFICATE block")))?
            .map_err(|e| TlsError::Pem(format!("{what}: {e}")))?
            .as_ref()
            .to_vec()
    } else {
        bytes
    };
    if LeafNames::of(&der).is_none() {
        return Err(TlsError::Pem(format!("{what}: not an X.509 certificate")));
    }
    Ok(portcullis_store::NasCertificate::pin(&der))
}
