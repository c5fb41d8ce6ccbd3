//! The TLS side of 802.1X: the rustls configurations of EAP-TLS (client certificate
//! required, checked against `client_ca` and the CRLs) and EAP-TTLS (none), each with
//! its own ticket keys and session cache so a session of one method never resumes the
//! other; the identity read from a client certificate; revocation, checked again on
//! every resumed login (rustls does not re-verify a resumed session's chain; the dates are
//! checked here too, while the signatures need no second check: the ticket that carries
//! the chain is sealed under our own key and was issued only after the handshake verified
//! it).

use std::collections::HashSet;
use std::sync::Arc;

use portcullis_store::MasterKey;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateRevocationListDer;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ResolvesServerCert, WebPkiClientVerifier};
use x509_cert::Certificate;
use x509_cert::der::Decode;

use super::chain::ChainFacts;
use super::config::{EapConfig, TlsIdentity};
use portcullis_door::tls::{TlsError, TlsSettings, order};

/// What the EAP door checks client certificates with, after the handshake.
pub struct ClientCheck {
    /// [`super::chain::crl_key`] of every revoked certificate in the CRLs.
    revoked: HashSet<Vec<u8>>,
}

impl std::fmt::Debug for ClientCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCheck")
            .field("revoked", &self.revoked.len())
            .finish_non_exhaustive()
    }
}

impl ClientCheck {
    /// Revoked certificates known (for the reload's log line).
    pub fn revoked(&self) -> usize {
        self.revoked.len()
    }

    /// Whether the chain `facts` describes is revoked, or (for a resumed session) no
    /// longer valid now.
    pub fn refuse(&self, facts: &ChainFacts, resumed: bool) -> Option<&'static str> {
        let Some(leaf) = &facts.leaf else {
            return Some("certificate_unreadable");
        };
        if self.revoked.contains(leaf.crl_key.as_slice()) {
            return Some("certificate_revoked");
        }
        if resumed {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let rest_in_date = facts
                .rest
                .as_ref()
                .is_some_and(|r| r.iter().all(|w| w.contains(now)));
            if !leaf.window.contains(now) || !rest_in_date {
                return Some("certificate_expired");
            }
        }
        None
    }
}

/// The EAP settings and the client-certificate check built from `[radius.eap]`: the
/// certificate, key, client CAs and CRLs read and checked now. On a reload, `previous`
/// passes the settings in force, whose ticket keys and session caches the new
/// configurations keep: re-reading a CRL must not end every device's resumption.
pub fn build(
    c: &EapConfig,
    master_key: &MasterKey,
    max_conversations: usize,
    previous: Option<&portcullis_eap::Settings>,
) -> Result<(portcullis_eap::Settings, Option<ClientCheck>), TlsError> {
    let loaded = portcullis_door::tls::load_certified(&c.cert, &c.key)?;
    let mut s = TlsSettings::new(c.cert.clone(), c.key.clone());
    s.versions.clone_from(&c.versions);
    s.cipher_suites.clone_from(&c.cipher_suites);
    let configured = !c.cipher_suites.is_empty();
    let suites = order::server_order(
        portcullis_door::tls::enabled_suites(&s, loaded.key_alg)?,
        configured,
    );
    // With the default suites, the server's order prefers those whose hash the CPU
    // computes in hardware. Supplicants (OpenSSL's defaults) put AES-256-GCM-SHA384
    // first, whose TLS 1.2 PRF and TLS 1.3 key schedule run SHA-384 in software: with
    // SHA-NI, AES-128-GCM-SHA256 does the same handshake for less CPU (a resumed EAP-TLS
    // login is mostly PRF and HMAC), and both suites are strong. Without the
    // instructions, or with an explicit list, the client's order is kept.
    let server_order = !configured && order::sha256_in_hardware();
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::aws_lc_rs::default_provider()
    });
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = c
        .versions
        .iter()
        .map(|v| match v {
            portcullis_door::tls::TlsVersion::Tls12 => &rustls::version::TLS12,
            portcullis_door::tls::TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    let certified = Arc::new(loaded.certified);
    let offers = |m: u8| c.methods.contains(&m) || c.nas_methods.values().any(|l| l.contains(&m));
    let rotation =
        u32::try_from(c.resumption_lifetime.as_secs().clamp(60, 21_600)).unwrap_or(21_600);
    let make = |verifier: Option<Arc<dyn ClientCertVerifier>>,
                label: &str,
                kept: Option<&Arc<rustls::ServerConfig>>|
     -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let b = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)?;
        let b = match verifier {
            Some(v) => b.with_client_cert_verifier(v),
            None => b.with_no_client_auth(),
        };
        let mut config = b.with_cert_resolver(Arc::new(Fixed(Arc::clone(&certified))));
        config.ignore_client_order = server_order;
        config.key_log = Arc::new(portcullis_eap::SessionDigest);
        config.session_storage =
            rustls::server::ServerSessionMemoryCache::new(max_conversations.clamp(256, 1 << 20));
        if c.resumption {
            config.ticketer = if c.shared_ticket_keys {
                Arc::new(portcullis_door::tls::tickets::SharedTickets::new(
                    master_key.derive(label),
                    rotation,
                ))
            } else {
                portcullis_door::tls::tickets::ticketer(rotation)?
            };
            config.send_tls13_tickets = 1;
        } else {
            config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
            config.send_tls13_tickets = 0;
        }
        if let Some(old) = kept {
            config.ticketer = Arc::clone(&old.ticketer);
            config.session_storage = Arc::clone(&old.session_storage);
        }
        Ok(Arc::new(config))
    };
    let mut check = None;
    let tls = if offers(portcullis_eap::method::TLS) {
        let Some(ca) = &c.client_ca else {
            return Err(TlsError::Mismatch(
                "radius.eap.client_ca is required for EAP-TLS".into(),
            ));
        };
        let (roots, n) = load_roots(ca)?;
        if n == 0 {
            return Err(TlsError::Pem(format!(
                "{}: no CERTIFICATE block (radius.eap.client_ca)",
                ca.display()
            )));
        }
        let mut crls = Vec::new();
        let mut revoked = HashSet::new();
        for path in &c.crl {
            for der in read_crls(path)? {
                let list = x509_cert::crl::CertificateList::from_der(der.as_ref())
                    .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
                let issuer =
                    x509_cert::der::Encode::to_der(&list.tbs_cert_list.issuer).unwrap_or_default();
                for r in list.tbs_cert_list.revoked_certificates.iter().flatten() {
                    revoked.insert(super::chain::crl_key(&issuer, r.serial_number.as_bytes()));
                }
                crls.push(der);
            }
        }
        let mut vb =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider));
        if !crls.is_empty() {
            vb = vb.with_crls(crls).allow_unknown_revocation_status();
        }
        let verifier = vb
            .build()
            .map_err(|e| TlsError::Pem(format!("{}: {e}", ca.display())))?;
        check = Some(ClientCheck { revoked });
        Some(make(
            Some(verifier),
            "eap-tls session tickets",
            previous.and_then(|p| p.tls.as_ref()),
        )?)
    } else {
        None
    };
    let ttls = if offers(portcullis_eap::method::TTLS) {
        Some(make(
            None,
            "eap-ttls session tickets",
            previous.and_then(|p| p.ttls.as_ref()),
        )?)
    } else {
        None
    };
    Ok((
        portcullis_eap::Settings {
            tls,
            ttls,
            fragment_size: c.fragment_size,
            max_message: 64 * 1024,
            max_fragments: 128,
            max_rounds: c.max_round_trips,
        },
        check,
    ))
}

/// Serves the one EAP certificate.
#[derive(Debug)]
struct Fixed(Arc<rustls::sign::CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }
}

pub(crate) fn load_roots(
    path: &std::path::Path,
) -> Result<(rustls::RootCertStore, usize), TlsError> {
    let pem = portcullis_door::tls::read(path)?;
    let mut roots = rustls::RootCertStore::empty();
    let mut n = 0;
    let certs = portcullis_door::pem::certs(&pem)
        .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
        n += 1;
    }
    Ok((roots, n))
}

pub(crate) fn read_crls(
    path: &std::path::Path,
) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    let pem = portcullis_door::tls::read(path)?;
    let crls = portcullis_door::pem::crls(&pem)
        .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
    if crls.is_empty() {
        return Err(TlsError::Pem(format!(
            "{}: no X509 CRL block (radius.eap.crl)",
            path.display()
        )));
    }
    Ok(crls)
}

/// The identity of an EAP-TLS login, read from the leaf certificate.
pub fn identity(leaf: &[u8], how: TlsIdentity) -> Option<String> {
    super::chain::identity_of(&Certificate::from_der(leaf).ok()?, how)
}
