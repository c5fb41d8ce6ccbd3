//! The TLS client configuration of a directory: the configured CA's certificates as the
//! only roots, on the AWS-LC provider (as every TLS endpoint of the project).
//!
//! A leaf module: configuration validation reads the CA file with it, connections use the
//! connector it builds.

use std::sync::Arc;

/// Builds the root store from a PEM file's contents; an error when it holds no certificate.
pub fn root_store(pem: &[u8]) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        let cert = cert.map_err(|e| e.to_string())?;
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    if roots.is_empty() {
        return Err("no certificate in the file".into());
    }
    Ok(roots)
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
