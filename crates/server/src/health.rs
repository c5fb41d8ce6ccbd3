//! The readiness probe client: `GET /readyz` on the server's own HTTP listener, for
//! `portcullis healthcheck` (a container `HEALTHCHECK` without curl) and for `serve`'s
//! systemd readiness (notified only once the listener answers).
//!
//! One request on its own connection, `Connection: close`, no redirects. With `[tls]` the
//! probe speaks TLS and trusts exactly the configured certificate (pinned by its bytes):
//! a local probe needs no CA, and pinning still refuses a different server on the port.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::Config;
use portcullis_door::tls::TlsSettings;

/// Why the probe did not get `200` from `/readyz`.
#[derive(Debug, Error)]
pub enum HealthError {
    /// No TCP connection.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The whole exchange took longer than allowed.
    #[error("no answer from {0} within the timeout")]
    Timeout(SocketAddr),
    /// Reading the certificate or the TLS handshake failed.
    #[error("TLS: {0}")]
    Tls(String),
    /// Reading or writing the connection failed.
    #[error("talking to {addr}: {source}")]
    Io {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An answer that is not HTTP.
    #[error("{0} did not answer HTTP")]
    Malformed(SocketAddr),
    /// An HTTP answer other than 200: the server runs but is not ready.
    #[error("/readyz answered {status}: {body}")]
    NotReady {
        /// HTTP status.
        status: u16,
        /// The body's first line (e.g. "store unavailable").
        body: String,
    },
}

/// Where to reach a listener bound to `listen` from this machine: a wildcard address is
/// reached on loopback of the same family.
pub fn probe_addr(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// PROXY protocol v2 header with the LOCAL command and no addresses: "a connection the
/// proxy made on its own, e.g. a health check" (the server keeps the peer's address).
const PROXY_V2_LOCAL: [u8; 16] = [
    0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, 0x20, 0x00, 0x00, 0x00,
];

/// How to probe the server `config` describes from this machine: its address, and whether
/// the probe must open with a PROXY header (`proxy_protocol` and the probe's source, the
/// same host, among `trusted_proxies`: the server requires one from them).
pub fn probe_for(config: &Config, listen: SocketAddr) -> (SocketAddr, bool) {
    let at = probe_addr(listen);
    let proxied = config.proxy_protocol && config.trusted_proxies.trusts(at.ip());
    (at, proxied)
}

/// `GET /readyz` at `addr` (after a PROXY v2 LOCAL header when `proxy_local`; over TLS
/// pinned to `tls`'s certificate when given); `Ok` with the body's first line on 200.
pub async fn readyz(
    addr: SocketAddr,
    proxy_local: bool,
    tls: Option<&TlsSettings>,
    timeout: Duration,
) -> Result<String, HealthError> {
    let connector = tls.map(pinned_connector).transpose()?;
    tokio::time::timeout(timeout, exchange(addr, proxy_local, connector))
        .await
        .map_err(|_| HealthError::Timeout(addr))?
}

async fn exchange(
    addr: SocketAddr,
    proxy_local: bool,
    tls: Option<tokio_rustls::TlsConnector>,
) -> Result<String, HealthError> {
    let mut tcp = TcpStream::connect(addr)
        .await
        .map_err(|source| HealthError::Connect { addr, source })?;
    if proxy_local {
        tcp.write_all(&PROXY_V2_LOCAL)
            .await
            .map_err(|source| HealthError::Io { addr, source })?;
    }
    match tls {
        None => get(tcp, addr).await,
        Some(connector) => {
            let name = ServerName::IpAddress(addr.ip().into());
            let stream = connector
                .connect(name, tcp)
                .await
                .map_err(|e| HealthError::Tls(e.to_string()))?;
            get(stream, addr).await
        }
    }
}

async fn get<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    addr: SocketAddr,
) -> Result<String, HealthError> {
    let io = |source| HealthError::Io { addr, source };
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.map_err(io)?;
    // The answer is a few dozen bytes; a bound keeps a wrong server from feeding us forever.
    let mut raw = Vec::new();
    (&mut s)
        .take(64 * 1024)
        .read_to_end(&mut raw)
        .await
        .map_err(io)?;
    let text = String::from_utf8_lossy(&raw);
    let status: u16 = text
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| text.strip_prefix("HTTP/1.0 "))
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or(HealthError::Malformed(addr))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.lines().next().unwrap_or("").trim().to_owned())
        .unwrap_or_default();
    if status == 200 {
        Ok(body)
    } else {
        Err(HealthError::NotReady { status, body })
    }
}

/// A TLS client that accepts exactly the leaf certificate of `tls.cert`.
fn pinned_connector(tls: &TlsSettings) -> Result<tokio_rustls::TlsConnector, HealthError> {
    let pem = std::fs::read(&tls.cert)
        .map_err(|e| HealthError::Tls(format!("{}: {e}", tls.cert.display())))?;
    let leaf = portcullis_door::pem::certs(&pem)
        .map_err(|e| HealthError::Tls(format!("{}: {e}", tls.cert.display())))?
        .into_iter()
        .next()
        .ok_or_else(|| HealthError::Tls(format!("{}: no certificate", tls.cert.display())))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = Arc::new(Pinned::new(leaf, Arc::clone(&provider)));
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| HealthError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Trusts one certificate by its exact bytes; handshake signatures are still verified,
/// so only the holder of its key passes. The health probe's client, and the TLS tests'.
#[derive(Debug)]
pub(crate) struct Pinned {
    leaf: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

impl Pinned {
    pub(crate) fn new(leaf: CertificateDer<'static>, provider: Arc<CryptoProvider>) -> Self {
        Pinned { leaf, provider }
    }
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.leaf.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "the server's certificate is not the configured [tls] cert".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
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
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
