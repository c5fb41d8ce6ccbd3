//! TLS client certificates for RFC 8705 client authentication (issue 14).
//!
//! The handshake asks for a certificate but does not require one, so clients without
//! certificates are served as before. Any certificate is accepted *at the handshake*
//! (its holder still proves possession of the private key: rustls checks the
//! CertificateVerify signature); what it is worth is decided per request by the
//! client's registered method: `self_signed_tls_client_auth` compares it with the
//! registered certificates, `tls_client_auth` validates its chain against `[tls]
//! client_ca` here ([`ClientCa::verify`]) and then compares the subject DN. Deciding
//! per request is what lets self-signed and CA-issued certificates share one listener.

use std::sync::Arc;

use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};

use super::TlsError;

/// The handshake side: ask, accept any certificate whose key signs the handshake.
#[derive(Debug)]
pub struct AnyClientCert {
    provider: Arc<CryptoProvider>,
    /// Subjects of `client_ca`, sent as hints so clients pick the right certificate.
    hints: Vec<DistinguishedName>,
}

impl AnyClientCert {
    /// A verifier using `provider`'s signature algorithms, hinting `ca`'s subjects.
    pub fn new(provider: Arc<CryptoProvider>, ca: Option<&ClientCa>) -> Self {
        AnyClientCert {
            provider,
            hints: ca.map(|c| c.hints.clone()).unwrap_or_default(),
        }
    }
}

impl ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        use x509_cert::der::Decode;
        // Only well-formed X.509 here; the chain is judged per request.
        x509_cert::Certificate::from_der(end_entity.as_ref())
            .map(|_| ClientCertVerified::assertion())
            .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The CAs trusted to issue `tls_client_auth` certificates (`[tls] client_ca`).
pub struct ClientCa {
    verifier: Arc<dyn ClientCertVerifier>,
    hints: Vec<DistinguishedName>,
}

impl std::fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCa")
            .field("subjects", &self.hints.len())
            .finish()
    }
}

impl ClientCa {
    /// Load the PEM bundle at `path`.
    pub fn load(path: &std::path::Path, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let pem = super::read(path)?;
        let mut roots = rustls::RootCertStore::empty();
        let mut n = 0;
        let certs = crate::pem::certs(&pem)
            .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
        for c in certs {
            roots
                .add(c)
                .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
            n += 1;
        }
        if n == 0 {
            return Err(TlsError::Pem(format!(
                "{}: no CERTIFICATE block (tls.client_ca)",
                path.display()
            )));
        }
        let hints = roots.subjects();
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
        Ok(ClientCa { verifier, hints })
    }

    /// Whether `chain` (leaf first) chains to one of the CAs, is valid now and allows
    /// client authentication (ExtendedKeyUsage).
    pub fn verify(&self, chain: &[CertificateDer<'static>]) -> bool {
        match chain.split_first() {
            Some((leaf, rest)) => self
                .verifier
                .verify_client_cert(leaf, rest, UnixTime::now())
                .is_ok(),
            None => false,
        }
    }
}
