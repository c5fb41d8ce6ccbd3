//! The TLS client configuration of a directory: the configured CA's certificates as the
//! only roots, on the AWS-LC provider (as every TLS endpoint of the project).
//!
//! A leaf module: configuration validation reads the CA file with it, connections use the
//! connector it builds.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::{self, PemObject};

/// Builds the root store from a PEM file's contents; an error when it holds no certificate.
pub fn root_store(pem: &[u8]) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| pem_error(&e))?;
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    if roots.is_empty() {
        return Err("no certificate in the file".into());
    }
    Ok(roots)
}

/// A PEM fault in words (rustls-pki-types prints a bad line as a list of byte values).
fn pem_error(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { end_marker } => format!(
            "\"-----END {}-----\" missing: a block is cut short",
            String::from_utf8_lossy(end_marker)
        ),
        pem::Error::IllegalSectionStart { line } => {
            format!("illegal section start: {:?}", String::from_utf8_lossy(line))
        }
        other => other.to_string(),
    }
}

/// The TLS client configuration shared by every connection of a directory.
pub fn tls_connector(ca_pem: &[u8]) -> Result<tokio_rustls::TlsConnector, String> {
    let roots = root_store(ca_pem)?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_or_empty_ca_file_is_a_clear_error() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../door/tests/fixtures/tls/ec_server.crt"
        );
        let mut pem = std::fs::read(path).unwrap();
        assert!(root_store(&pem).is_ok());
        pem.truncate(pem.len() / 2);
        let e = root_store(&pem).unwrap_err();
        assert!(e.contains("\"-----END CERTIFICATE-----\" missing"), "{e}");
        let e = root_store(b"no PEM here\n").unwrap_err();
        assert_eq!(e, "no certificate in the file");
    }
}
