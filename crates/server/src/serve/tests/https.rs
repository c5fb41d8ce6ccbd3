//! Issue 41 item 6, the HTTPS defaults testssl.sh looks at: the HTTP door (and the admin
//! listener, same `[tls]`) picks the cipher suite by its own order whatever the client's,
//! checked with a rustls client and OpenSSL's `s_client` each listing the suites weakest
//! first; `Strict-Transport-Security` on HTTPS answers and never over plain HTTP, as
//! curl sees them. The expected suites are written out here from the documented order.

use std::process::{Command, Stdio};

use rustls::SupportedCipherSuite;
use rustls::crypto::aws_lc_rs::cipher_suite as cs;

use super::*;

/// Whether this CPU has SHA-256 instructions, read from the kernel's CPU flags (x86
/// `sha_ni`, ARMv8 `sha2`), independently of the server's own detection.
fn cpu_has_sha256() -> bool {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    info.lines()
        .filter(|l| l.starts_with("flags") || l.starts_with("Features"))
        .any(|l| l.split_whitespace().any(|f| f == "sha_ni" || f == "sha2"))
}

/// A server on fixture `ec_server` (ECDSA P-256), with an admin listener, `tweak`ed.
async fn https(tweak: impl FnOnce(&mut TlsSettings)) -> (tempfile::TempDir, Server) {
    let (dir, data, mut config) = tls_setup("ec_server").await;
    if let Some(t) = config.tls.as_mut() {
        tweak(t);
    }
    plain_or_https(dir, data, config).await
}

async fn plain_or_https(
    dir: tempfile::TempDir,
    data: portcullis_store::DataDir,
    mut config: Config,
) -> (tempfile::TempDir, Server) {
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    config.admin.listen = Some(admin.local_addr().unwrap());
    let addr = http.local_addr().unwrap();
    let app = Assembly::from_data_dir(config, &data, addr).await.unwrap();
    let listeners = Listeners {
        http,
        radius: Vec::new(),
        accounting: Vec::new(),
        radsec: Vec::new(),
        admin: Some(admin),
        ldap: Default::default(),
    };
    (dir, Server::launch(listeners, app).await.unwrap())
}

/// The suite the server at `addr` chooses when a rustls client offers `offer`, in that
/// order of the client's preference.
async fn chosen(addr: SocketAddr, offer: &[SupportedCipherSuite]) -> String {
    let pem = std::fs::read(tls_fixtures().join("ec_server.crt")).unwrap();
    let cert = portcullis_door::pem::certs(&pem).unwrap().remove(0);
    let provider = Arc::new(rustls::crypto::CryptoProvider {
        cipher_suites: offer.to_vec(),
        ..rustls::crypto::aws_lc_rs::default_provider()
    });
    let client = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned::new(cert, Arc::clone(&provider))))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let suite = tls.get_ref().1.negotiated_cipher_suite().unwrap().suite();
    suite.as_str().unwrap().to_owned()
}

/// The suite OpenSSL's client reports after offering `suites` (OpenSSL names, its order
/// of preference) with `version` (`-tls1_2`, `-tls1_3`).
fn openssl_chosen(addr: SocketAddr, version: &str, suites: &str) -> String {
    let list = if version == "-tls1_3" {
        "-ciphersuites"
    } else {
        "-cipher"
    };
    let out = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &addr.to_string(),
            version,
            list,
            suites,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("openssl (scripts/test installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    let cipher = text
        .lines()
        .find_map(|l| l.split_once("Cipher is ").map(|(_, c)| c.trim().to_owned()));
    cipher.unwrap_or_else(|| panic!("no cipher in: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_default_suites_follow_the_server_order_not_the_clients() {
    let (_dir, server) = https(|_| {}).await;
    let sha = cpu_has_sha256();
    // The documented order: strongest first, the SHA-256 suites first with SHA
    // instructions. Clients list the suites in reverse (ChaCha20 first).
    let (want13, want12) = if sha {
        (
            "TLS13_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        )
    } else {
        (
            "TLS13_AES_256_GCM_SHA384",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        )
    };
    let reverse13 = [
        cs::TLS13_CHACHA20_POLY1305_SHA256,
        cs::TLS13_AES_128_GCM_SHA256,
        cs::TLS13_AES_256_GCM_SHA384,
    ];
    let reverse12 = [
        cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ];
    let admin = server.admin_addr().unwrap();
    for addr in [server.local_addr(), admin] {
        assert_eq!(
            chosen(addr, &reverse13).await,
            want13,
            "{addr} (sha: {sha})"
        );
        assert_eq!(
            chosen(addr, &reverse12).await,
            want12,
            "{addr} (sha: {sha})"
        );
    }
    // OpenSSL's client, its own names, weakest first.
    let addr = server.local_addr();
    let (o13, o12) = tokio::task::spawn_blocking(move || {
        (
            openssl_chosen(
                addr,
                "-tls1_3",
                "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384",
            ),
            openssl_chosen(
                addr,
                "-tls1_2",
                "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:\
                 ECDHE-ECDSA-AES256-GCM-SHA384",
            ),
        )
    })
    .await
    .unwrap();
    let (openssl13, openssl12) = if sha {
        ("TLS_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256")
    } else {
        ("TLS_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384")
    };
    assert_eq!((o13.as_str(), o12.as_str()), (openssl13, openssl12));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_an_operators_suite_list_is_the_servers_order_as_written() {
    let (_dir, server) = https(|t| {
        t.cipher_suites = [
            "TLS13_CHACHA20_POLY1305_SHA256",
            "TLS13_AES_256_GCM_SHA384",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        ]
        .map(str::to_owned)
        .to_vec();
    })
    .await;
    let addr = server.local_addr();
    let offer13 = [
        cs::TLS13_AES_256_GCM_SHA384,
        cs::TLS13_CHACHA20_POLY1305_SHA256,
    ];
    let offer12 = [
        cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ];
    assert_eq!(
        chosen(addr, &offer13).await,
        "TLS13_CHACHA20_POLY1305_SHA256"
    );
    assert_eq!(
        chosen(addr, &offer12).await,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
    );
    let o12 = tokio::task::spawn_blocking(move || {
        openssl_chosen(
            addr,
            "-tls1_2",
            "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305",
        )
    })
    .await
    .unwrap();
    assert_eq!(o12, "ECDHE-ECDSA-CHACHA20-POLY1305");
    server.shutdown().await.unwrap();
}

/// The `Strict-Transport-Security` headers curl sees on `url` (`/healthz` and a path
/// that is not found), lower-cased header lines.
async fn hsts_seen(url: String) -> Vec<String> {
    let ca = tls_fixtures().join("ec_server.crt");
    tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        for path in ["/healthz", "/no-such-page"] {
            let out = Command::new("curl")
                .args(["-sS", "-o", "/dev/null", "-D", "-", "--cacert"])
                .arg(&ca)
                .arg(format!("{url}{path}"))
                .output()
                .expect("curl (scripts/test installs it)");
            let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
            assert!(head.starts_with("http/1.1 "), "{url}{path}: {head}");
            seen.extend(
                head.lines()
                    .filter(|l| l.starts_with("strict-transport-security:"))
                    .map(|l| l.trim().to_owned()),
            );
        }
        seen
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_hsts_on_every_https_answer_and_never_over_plain_http() {
    let one_year = "strict-transport-security: max-age=31536000".to_owned();
    let (_dir, server) = https(|_| {}).await;
    let url = format!("https://127.0.0.1:{}", server.local_addr().port());
    assert_eq!(hsts_seen(url).await, [one_year.clone(), one_year]);
    server.shutdown().await.unwrap();

    let (_dir, server) = https(|t| {
        t.hsts_max_age_secs = 600;
        t.hsts_include_subdomains = true;
    })
    .await;
    let url = format!("https://127.0.0.1:{}", server.local_addr().port());
    let want = "strict-transport-security: max-age=600; includesubdomains".to_owned();
    assert_eq!(hsts_seen(url).await, [want.clone(), want]);
    server.shutdown().await.unwrap();

    let (_dir, server) = https(|t| t.hsts_max_age_secs = 0).await;
    let url = format!("https://127.0.0.1:{}", server.local_addr().port());
    assert!(hsts_seen(url).await.is_empty());
    server.shutdown().await.unwrap();

    // Plain HTTP: no header, whatever the defaults.
    let (dir, data, mut config) = tls_setup("ec_server").await;
    config.tls = None;
    let (_dir, server) = plain_or_https(dir, data, config).await;
    let url = format!("http://127.0.0.1:{}", server.local_addr().port());
    assert!(hsts_seen(url).await.is_empty());
    server.shutdown().await.unwrap();
}
