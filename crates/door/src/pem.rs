//! PEM files (certificates, private keys, CRLs, public keys) read with rustls-pki-types'
//! `pem` parser, with errors an operator can act on: the parser's own messages print a
//! bad line as a list of byte values; here it is quoted text, as `rustls-pemfile` (which
//! this replaced, unmaintained upstream) printed it.

pub use rustls::pki_types::pem::SectionKind;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use zeroize::Zeroizing;

/// A PEM text is malformed (the message says where), or lacks what was asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PemError(pub String);

impl From<pem::Error> for PemError {
    fn from(e: pem::Error) -> Self {
        PemError(describe(&e))
    }
}

/// `e` in words, a bad line quoted as text.
pub fn describe(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { end_marker } => format!(
            "\"-----END {}-----\" missing: a block is cut short",
            String::from_utf8_lossy(end_marker)
        ),
        pem::Error::IllegalSectionStart { line } => {
            format!("illegal section start: {:?}", String::from_utf8_lossy(line))
        }
        pem::Error::Base64Decode(why) => format!("malformed base64 in a PEM block: {why}"),
        pem::Error::NoItemsFound => "no PEM block of the expected kind".to_owned(),
        other => other.to_string(),
    }
}

/// Every CERTIFICATE block, in order (none: an empty list); other blocks are skipped.
pub fn certs(text: &[u8]) -> Result<Vec<CertificateDer<'static>>, PemError> {
    Ok(CertificateDer::pem_slice_iter(text).collect::<Result<_, _>>()?)
}

/// The first private key (PKCS#8 `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC
/// PRIVATE KEY`); `None` when there is none. A malformed block before it is an error.
pub fn private_key(text: &[u8]) -> Result<Option<PrivateKeyDer<'static>>, PemError> {
    match PrivateKeyDer::from_pem_slice(text) {
        Ok(key) => Ok(Some(key)),
        Err(pem::Error::NoItemsFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Every X509 CRL block, in order.
pub fn crls(text: &[u8]) -> Result<Vec<CertificateRevocationListDer<'static>>, PemError> {
    Ok(CertificateRevocationListDer::pem_slice_iter(text).collect::<Result<_, _>>()?)
}

/// One PEM block: its kind and DER, wiped when dropped.
pub type Section = (SectionKind, Zeroizing<Vec<u8>>);

/// Every block of a kind the parser knows, with its DER (blocks of unknown labels are
/// skipped, as are lines outside blocks). The DER is wiped when dropped: a block may be a
/// private key pasted where a public one belongs.
pub fn sections(text: &[u8]) -> Result<Vec<Section>, PemError> {
    <(SectionKind, Vec<u8>)>::pem_slice_iter(text)
        .map(|s| s.map(|(kind, der)| (kind, Zeroizing::new(der))))
        .collect::<Result<_, _>>()
        .map_err(PemError::from)
}

#[cfg(test)]
mod tests;
