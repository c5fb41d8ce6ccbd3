//! What an EAP-TLS login needs to know of a client chain, read once per distinct chain:
//! the identity, the leaf's issuer and serial (for the CRLs), and the dates. A resumed
//! session carries the same chain as the login that first proved it, and a device that
//! reconnects all day presents it again and again: parsing the certificates (DER, names,
//! extensions) was a sizeable share of a resumed login's CPU. The facts are a pure function
//! of the chain's octets, so a cached entry is never stale; revocation and the dates are
//! still checked against them on every login ([`super::tls::ClientCheck::refuse`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustls::pki_types::CertificateDer;
use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::der::asn1::ObjectIdentifier;

use super::config::TlsIdentity;

const ID_CE_SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");

/// Distinct chains remembered; beyond it the map starts over (a storm of new devices
/// costs one parse each, as without the cache).
const CAPACITY: usize = 16_384;

/// The validity window of a certificate, as durations since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// notBefore.
    pub not_before: Duration,
    /// notAfter.
    pub not_after: Duration,
}

impl Window {
    fn of(c: &Certificate) -> Window {
        let v = &c.tbs_certificate.validity;
        Window {
            not_before: v.not_before.to_unix_duration(),
            not_after: v.not_after.to_unix_duration(),
        }
    }

    /// Whether `now` lies in the window.
    pub fn contains(&self, now: Duration) -> bool {
        self.not_before <= now && now <= self.not_after
    }
}

/// The leaf's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// Issuer and serial, as the CRL set is keyed ([`crl_key`]).
    pub crl_key: Vec<u8>,
    /// Its dates.
    pub window: Window,
    /// The login's identity as `[radius.eap] tls_identity` reads it (`None`: none there).
    pub identity: Option<String>,
}

/// What one chain came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFacts {
    /// `None`: the leaf is missing or cannot be read.
    pub leaf: Option<Leaf>,
    /// The dates of the other certificates, leaf excluded, in order; `None` if one cannot
    /// be read.
    pub rest: Option<Vec<Window>>,
}

impl ChainFacts {
    /// Read `chain` (leaf first).
    pub fn read(chain: &[CertificateDer<'_>], how: TlsIdentity) -> ChainFacts {
        let Some((leaf, rest)) = chain.split_first() else {
            return ChainFacts {
                leaf: None,
                rest: Some(Vec::new()),
            };
        };
        let leaf = Certificate::from_der(leaf).ok().map(|cert| {
            let tbs = &cert.tbs_certificate;
            Leaf {
                crl_key: crl_key(
                    &x509_cert::der::Encode::to_der(&tbs.issuer).unwrap_or_default(),
                    tbs.serial_number.as_bytes(),
                ),
                window: Window::of(&cert),
                identity: identity_of(&cert, how),
            }
        });
        let rest = rest
            .iter()
            .map(|der| Certificate::from_der(der).ok().map(|c| Window::of(&c)))
            .collect();
        ChainFacts { leaf, rest }
    }
}

/// A certificate's key in the revocation set: its issuer name (DER, a self-delimiting
/// SEQUENCE) followed by its serial number's octets.
pub(super) fn crl_key(issuer_der: &[u8], serial: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(issuer_der.len() + serial.len());
    k.extend_from_slice(issuer_der);
    k.extend_from_slice(serial);
    k
}

/// The identity of an EAP-TLS login read from a parsed leaf certificate
/// ([`super::tls::identity`] for DER).
pub(super) fn identity_of(cert: &Certificate, how: TlsIdentity) -> Option<String> {
    let tbs = &cert.tbs_certificate;
    match how {
        TlsIdentity::SubjectDn => Some(portcullis_door::tls::peer::rfc4514(&tbs.subject)),
        TlsIdentity::SubjectCn => portcullis_door::tls::peer::common_name(&tbs.subject),
        TlsIdentity::SanEmail | TlsIdentity::SanDns => {
            use x509_cert::ext::pkix::name::GeneralName;
            let ext = tbs
                .extensions
                .iter()
                .flatten()
                .find(|e| e.extn_id == ID_CE_SUBJECT_ALT_NAME)?;
            let san =
                x509_cert::ext::pkix::SubjectAltName::from_der(ext.extn_value.as_bytes()).ok()?;
            san.0.iter().find_map(|n| match (n, how) {
                (GeneralName::Rfc822Name(s), TlsIdentity::SanEmail) => Some(s.to_string()),
                (GeneralName::DnsName(s), TlsIdentity::SanDns) => Some(s.to_string()),
                _ => None,
            })
        }
    }
}

/// Chains already read, keyed by a SHA-256 digest of the chain.
pub struct ChainCache {
    /// How identities are read (fixed for the door's life: a change needs a restart).
    how: TlsIdentity,
    /// Facts by chain digest; cleared whole when it reaches [`CAPACITY`].
    map: Mutex<HashMap<[u8; 32], Arc<ChainFacts>>>,
}

impl std::fmt::Debug for ChainCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainCache")
            .field("len", &self.map.lock().len())
            .finish_non_exhaustive()
    }
}

impl ChainCache {
    /// An empty cache reading identities as `how`.
    pub fn new(how: TlsIdentity) -> ChainCache {
        ChainCache {
            how,
            map: Mutex::new(HashMap::new()),
        }
    }

    /// The facts of `chain`, read now if this chain was not seen before.
    pub fn facts(&self, chain: &[CertificateDer<'_>]) -> Arc<ChainFacts> {
        let key = digest(chain);
        if let Some(f) = self.map.lock().get(&key) {
            return Arc::clone(f);
        }
        let facts = Arc::new(ChainFacts::read(chain, self.how));
        let mut map = self.map.lock();
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(key, Arc::clone(&facts));
        facts
    }
}

/// SHA-256 over the chain, each certificate length-prefixed (so no two chains share an
/// encoding).
fn digest(chain: &[CertificateDer<'_>]) -> [u8; 32] {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    for c in chain {
        ctx.update(&(c.len() as u64).to_be_bytes());
        ctx.update(c);
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn chain(cn: &str) -> Vec<CertificateDer<'static>> {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "chain test CA");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(rcgen::DnType::CommonName, cn);
        let leaf = p.signed_by(&KeyPair::generate().unwrap(), &ca).unwrap();
        vec![leaf.der().clone(), ca.der().clone()]
    }

    #[test]
    fn issue_25_chain_facts_are_read_once_and_kept_apart_per_chain() {
        let cache = ChainCache::new(TlsIdentity::SubjectCn);
        let a = chain("alice");
        let b = chain("bob");
        let fa = cache.facts(&a);
        assert_eq!(fa.leaf.as_ref().unwrap().identity.as_deref(), Some("alice"));
        assert_eq!(fa.rest.as_ref().unwrap().len(), 1);
        assert!(
            Arc::ptr_eq(&fa, &cache.facts(&a)),
            "the second login reads nothing"
        );
        let fb = cache.facts(&b);
        assert_eq!(fb.leaf.as_ref().unwrap().identity.as_deref(), Some("bob"));
        assert_eq!(*fa, ChainFacts::read(&a, TlsIdentity::SubjectCn));
        // An unreadable leaf, or an unreadable certificate behind it.
        let junk = CertificateDer::from(vec![0x30, 0x03, 1, 2, 3]);
        let f = cache.facts(std::slice::from_ref(&junk));
        assert!(f.leaf.is_none());
        let f = cache.facts(&[a[0].clone(), junk]);
        assert!(f.leaf.is_some() && f.rest.is_none());
    }
}
