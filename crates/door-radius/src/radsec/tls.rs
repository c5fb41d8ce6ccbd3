//! The RadSec door's TLS: the rustls server configuration built from `[radius.radsec]`
//! with the same start-up checks as `[tls]` (certificate usage, every enabled suite fit
//! for the key, every enabled version keeping a suite), and a client certificate
//! *required* and chained to `client_ca` (CRLs honoured): a NAS without one, or with one
//! from another CA, fails the handshake. Which NAS a good certificate names is decided
//! after the handshake ([`portcullis_door::tls::pin::LeafNames`], the NAS table).
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

use portcullis_radius::v11::{ALPN_RADIUS_1_0, ALPN_RADIUS_1_1};

use super::config::{Radius11, RadsecConfig};
use portcullis_door::tls::{TlsError, TlsSettings, TlsVersion};

/// Build the door's rustls configuration, reading and checking its files now.
pub fn server_config(c: &RadsecConfig) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let loaded = portcullis_door::tls::load_certified(&c.cert, &c.key)?;
    let mut s = TlsSettings::new(c.cert.clone(), c.key.clone());
    s.versions.clone_from(&c.versions);
    s.cipher_suites.clone_from(&c.cipher_suites);
    let suites = portcullis_door::tls::enabled_suites(&s, loaded.key_alg)?;
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
    let (roots, n) = crate::eap::tls::load_roots(&c.client_ca)?;
    if n == 0 {
        return Err(TlsError::Pem(format!(
            "{}: no CERTIFICATE block (radius.radsec.client_ca)",
            c.client_ca.display()
        )));
    }
    let mut crls = Vec::new();
    for path in &c.crl {
        crls.extend(crate::eap::tls::read_crls(path)?);
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
    let pem = portcullis_door::tls::read(path)?;
    portcullis_door::pem::private_key(&pem)
        .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?
        .ok_or_else(|| TlsError::Pem(format!("{}: no PRIVATE KEY block", path.display())))
}
