use std::path::Path;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::health::Pinned;
use portcullis_door::tls::TlsSettings;

fn tls_fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../door/tests/fixtures/tls")
}

/// A fresh data dir and a config serving TLS 1.2 and 1.3 with fixture `name`.crt/.key.
async fn tls_setup(name: &str) -> (tempfile::TempDir, portcullis_store::DataDir, Config) {
    let dir = tempfile::tempdir().unwrap();
    let data = portcullis_store::DataDir::open(dir.path()).await.unwrap();
    let config = Config {
        data_dir: dir.path().to_path_buf(),
        tls: Some(TlsSettings::new(
            tls_fixtures().join(format!("{name}.crt")),
            tls_fixtures().join(format!("{name}.key")),
        )),
        ..Config::default()
    };
    (dir, data, config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_serves_https_with_both_configured_versions() {
    let fixtures = tls_fixtures();
    let (_dir, data, config) = tls_setup("ec_server").await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Assembly::from_data_dir(config, &data, addr).await.unwrap();
    let server = Server::launch(
        Listeners {
            http: listener,
            radius: Vec::new(),
            accounting: Vec::new(),
            radsec: Vec::new(),
            admin: None,
            ldap: Default::default(),
        },
        app,
    )
    .await
    .unwrap();
    assert!(server.issuer().starts_with("https://"));

    let pem = std::fs::read(fixtures.join("ec_server.crt")).unwrap();
    let cert = portcullis_door::pem::certs(&pem).unwrap().remove(0);
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let client = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[version])
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned::new(
                cert.clone(),
                Arc::clone(&provider),
            )))
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut tls = connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap();
        assert_eq!(tls.get_ref().1.protocol_version(), Some(version.version));
        tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        assert!(
            out.starts_with(b"HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&out)
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn issue_5_certificate_unfit_for_the_suites_stops_startup() {
    let (_dir, data, config) = tls_setup("rsa_keyencipherment_only").await;
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let err = Assembly::from_data_dir(config, &data, addr)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("digitalSignature"), "{err}");
}

mod https;
