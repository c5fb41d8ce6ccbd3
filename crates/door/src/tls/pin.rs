//! A RADIUS client's (NAS's) certificate pin: what a leaf certificate is recognised by
//! (its SHA-256, subjectAltName dNSNames and commonName), and the pin of a certificate
//! given as a file or as PEM/DER bytes. RadSec matches connections by it; the admin API
//! and `portcullis nas` register it.

use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::der::asn1::ObjectIdentifier;

use super::TlsError;

const ID_CE_SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");

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
            common_name: super::peer::common_name(&cert.tbs_certificate.subject),
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
    let bytes = super::read(path)?;
    pin_bytes(bytes, &path.display().to_string())
}

/// The pin of a certificate given as PEM (its first certificate) or DER bytes; `what`
/// names their origin in errors (the admin API's `certificate_pem`, a file).
pub fn pin_bytes(bytes: Vec<u8>, what: &str) -> Result<portcullis_store::NasCertificate, TlsError> {
    let der = if bytes.starts_with(b"-----") || bytes.iter().take(64).all(u8::is_ascii) {
        crate::pem::certs(&bytes)
            .map_err(|e| TlsError::Pem(format!("{what}: {e}")))?
            .first()
            .ok_or_else(|| TlsError::Pem(format!("{what}: no CERTIFICATE block")))?
            .to_vec()
    } else {
        bytes
    };
    if LeafNames::of(&der).is_none() {
        return Err(TlsError::Pem(format!("{what}: not an X.509 certificate")));
    }
    Ok(portcullis_store::NasCertificate::pin(&der))
}
