//! Helpers of the RadSec tests (issue 28): throwaway certificates (a NAS CA that also
//! issues the server's certificate, NAS certificates, a second CA nobody trusts), NASes
//! registered with `portcullis nas add --certificate ...` before the server starts, and
//! a small RadSec client (rustls over a blocking TCP stream, packets from the codec crate
//! with the RFC 6614 secret "radsec").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use portcullis_lab::certs::{Pair, TestCa};
use portcullis_radius::{Code, attr, encode_request, hide_user_password, verify_response};
use portcullis_server::radius::radsec::config::{FileRadsec, RadsecConfig};

use crate::process_support::cli;
use crate::server_support::{TestServer, start_in};

/// The RadSec shared secret (RFC 6614 §2.3).
pub const RADSEC: &[u8] = b"radsec";

/// Certificates of the RadSec tests, in their own directory.
pub struct Certs {
    /// Keeps the files.
    pub dir: tempfile::TempDir,
    /// The CA of NAS certificates (and of the server's).
    pub ca: PathBuf,
    /// The server's certificate (localhost, 127.0.0.1).
    pub server: Pair,
    /// NAS `ap1`'s certificate, registered by its pin.
    pub ap1: Pair,
    /// A certificate with CN `ap2.example.net`, registered by name for NAS `ap2`.
    pub ap2: Pair,
    /// A certificate of the NAS CA that no NAS is registered for.
    pub stranger: Pair,
    /// NAS `far`'s certificate (registered for 10.0.0.0/8: never our loopback source).
    pub far: Pair,
    /// A certificate from another CA.
    pub rogue: Pair,
    /// NAS `gone`'s certificate (pinned, 127.0.0.0/16), revoked by the CA's CRL.
    pub revoked: Pair,
    /// The NAS CA's CRL (PEM), listing `revoked`.
    pub crl: PathBuf,
    /// The NAS CA itself (to issue a new CRL).
    pub issuer: TestCa,
}

/// Make every certificate.
pub fn certs() -> Certs {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "nas-ca").unwrap();
    let other = TestCa::new(dir.path(), "other-ca").unwrap();
    let revoked = ca.client("revoked", "gone.example.net").unwrap();
    let crl = ca.crl("nas-ca", &[&revoked]).unwrap();
    Certs {
        ca: ca.cert.clone(),
        server: ca
            .server("radsec-server", &["localhost", "127.0.0.1"])
            .unwrap(),
        ap1: ca.client("ap1", "ap1.example.net").unwrap(),
        ap2: ca.client("ap2", "ap2.example.net").unwrap(),
        stranger: ca.client("stranger", "stranger.example.net").unwrap(),
        far: ca.client("far", "far.example.net").unwrap(),
        rogue: other.client("rogue", "ap1.example.net").unwrap(),
        revoked,
        crl,
        issuer: ca,
        dir,
    }
}

/// A server with RadSec on 127.0.0.1:0 (and nothing on UDP), and NASes `ap1` (pinned
/// certificate, 127.0.0.1), `ap2` (certificate name, 127.0.0.0/8) and `far` (pinned,
/// 10.0.0.0/8).
pub struct RadsecServer {
    /// The server.
    pub s: TestServer,
    /// Where RadSec listens.
    pub addr: SocketAddr,
    /// Its certificates.
    pub certs: Certs,
}

/// The `[radius.radsec]` of the tests, with `tweak` applied to the file layer.
pub fn radsec_config(c: &Certs, tweak: impl FnOnce(&mut FileRadsec)) -> RadsecConfig {
    let mut f = FileRadsec {
        cert: Some(c.server.cert.clone()),
        key: Some(c.server.key.clone()),
        client_ca: Some(c.ca.clone()),
        crl: vec![c.crl.clone()],
        ..FileRadsec::default()
    };
    tweak(&mut f);
    RadsecConfig::from_file(f).unwrap().unwrap()
}

/// Register the NASes with the CLI, as an operator would, then start the server.
pub async fn start_radsec(
    tweak_radsec: impl FnOnce(&mut FileRadsec),
    tweak: impl FnOnce(&mut portcullis_server::Config),
) -> RadsecServer {
    let certs = certs();
    let dir = tempfile::tempdir().unwrap();
    add_nas(
        dir.path(),
        "ap1",
        "127.0.0.1",
        &["--certificate", path(&certs.ap1.cert)],
    );
    add_nas(
        dir.path(),
        "ap2",
        "127.0.0.0/8",
        &["--certificate-name", "AP2.example.net"],
    );
    add_nas(
        dir.path(),
        "far",
        "10.0.0.0/8",
        &["--certificate", path(&certs.far.cert)],
    );
    let radsec = radsec_config(&certs, tweak_radsec);
    let s = start_in(dir, |c| {
        c.radius.radsec_listen = vec!["127.0.0.1:0".parse().unwrap()];
        c.radius.radsec = Some(radsec);
        c.radius.reject_delay = Duration::from_millis(100);
        c.radius.reject_jitter = Duration::ZERO;
        c.verifier.initial_hash_estimate_ms = 5;
        tweak(c);
    })
    .await;
    let addr = s.server.radsec_addrs()[0];
    RadsecServer { s, addr, certs }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn add_nas(data: &Path, name: &str, cidr: &str, extra: &[&str]) {
    let mut args = vec!["nas", "add", name, "--address", cidr];
    args.extend_from_slice(extra);
    cli(data, &args, "");
}

/// A rustls client configuration trusting the NAS CA, presenting `cert` (none: no client
/// certificate), offering `alpn`.
pub fn client_config(ca: &Path, cert: Option<&Pair>, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    for c in CertificateDer::pem_slice_iter(&std::fs::read(ca).unwrap()) {
        roots.add(c.unwrap()).unwrap();
    }
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match cert {
        Some(p) => {
            let chain = CertificateDer::pem_slice_iter(&std::fs::read(&p.cert).unwrap())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(&std::fs::read(&p.key).unwrap()).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
        None => b.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    Arc::new(config)
}

/// A RadSec connection (blocking; use from `spawn_blocking`).
pub type Conn = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Connect and finish the handshake from our side (TLS 1.3 reports a refused client
/// certificate only on the first read).
pub fn connect(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> std::io::Result<Conn> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(Duration::from_secs(20)))?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// Read one packet (by its Length field); an error or EOF is `Err`.
pub fn read_packet(s: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut head = [0u8; 4];
    s.read_exact(&mut head)?;
    let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
    let mut p = vec![0u8; len.max(4)];
    p[..4].copy_from_slice(&head);
    s.read_exact(&mut p[4..])?;
    Ok(p)
}

/// An Access-Request for `user`/`password` from `station`, signed with "radsec", with
/// Message-Authenticator; returns the bytes and its Request Authenticator.
pub fn access_request(id: u8, user: &str, password: &str, station: &str) -> (Vec<u8>, [u8; 16]) {
    let mut authenticator = [0x42u8; 16];
    authenticator[0] = id;
    let hidden = hide_user_password(password.as_bytes(), RADSEC, &authenticator).unwrap();
    let attrs: Vec<(u8, &[u8])> = vec![
        (attr::USER_NAME, user.as_bytes()),
        (attr::USER_PASSWORD, &hidden),
        (attr::CALLING_STATION_ID, station.as_bytes()),
    ];
    let bytes = encode_request(Code::AccessRequest, id, authenticator, &attrs, RADSEC).unwrap();
    (bytes, authenticator)
}

/// Send an Access-Request and return the code of its verified answer.
pub fn login(s: &mut Conn, id: u8, user: &str, password: &str) -> std::io::Result<Code> {
    let (req, auth) = access_request(id, user, password, "02-00-00-00-00-01");
    s.write_all(&req)?;
    s.flush()?;
    let raw = read_packet(s)?;
    let reply = verify_response(&raw, &auth, RADSEC, true)
        .unwrap_or_else(|e| panic!("RadSec reply does not verify with \"radsec\": {e}"));
    assert_eq!(reply.identifier, id);
    Ok(reply.code)
}
