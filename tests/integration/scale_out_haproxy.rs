//! Issue #13 with an unmodified third-party load balancer: HAProxy (Debian's package,
//! installed by scripts/test) in HTTP mode with `option forwardfor`, and in TCP mode with
//! `send-proxy-v2`, in front of a Portcullis that trusts it. Clients connect to HAProxy
//! from distinct loopback addresses; Portcullis must throttle them apart.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use portcullis_store::Grant;
use portcullis_store::testing::free_port;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server_support::{Answer, form, parse_answer, post_bytes, start_with};

/// HAProxy on a free loopback port in front of `backend`, killed on drop.
struct Haproxy {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    fn start(backend: SocketAddr, proxy_protocol: bool) -> Haproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let (mode, send) = if proxy_protocol {
            ("mode tcp", " send-proxy-v2")
        } else {
            ("mode http\n  option forwardfor", "")
        };
        let cfg = dir.path().join("haproxy.cfg");
        std::fs::write(
            &cfg,
            format!(
                "defaults\n  {mode}\n  timeout connect 2s\n  timeout client 10s\n  \
                 timeout server 10s\n\nfrontend f\n  bind 127.0.0.1:{port}\n  \
                 default_backend b\n\nbackend b\n  server p {backend}{send}\n"
            ),
        )
        .unwrap();
        let child = Command::new("haproxy")
            .arg("-f")
            .arg(&cfg)
            .arg("-db")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy (scripts/test installs it)");
        // Owned at once, so Drop kills it even if it never comes up.
        let lb = Haproxy {
            child,
            port,
            _dir: dir,
        };
        // An external process: poll until it accepts connections.
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return lb;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("haproxy did not come up on port {port}");
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A token request to `port` from local address `from`, read to EOF.
async fn via(port: u16, from: [u8; 4], secret: &str) -> Answer {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::from((from, 0))).unwrap();
    let mut s = sock
        .connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let req = post_bytes(
        "/oauth2/token",
        Some(("svc", secret)),
        &form(&[("grant_type", "client_credentials")]),
    );
    s.write_all(&req).await.unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    parse_answer(&buf)
}

async fn two_clients_apart_through(proxy_protocol: bool) {
    let s = start_with(|c| {
        c.trusted_proxies.ranges = vec!["127.0.0.1".parse().unwrap()];
        c.proxy_protocol = proxy_protocol;
    })
    .await;
    let secret = s.add_client("svc", &[Grant::ClientCredentials], &[]).await;
    let lb = Haproxy::start(s.server.local_addr(), proxy_protocol);
    // Client A (127.0.0.2) guesses until throttled.
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(via(lb.port, [127, 0, 0, 2], "wrong").await.status);
    }
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    assert_eq!(via(lb.port, [127, 0, 0, 2], &secret).await.status, 429);
    // Client B (127.0.0.3) through the same HAProxy is its own source.
    let b = via(lb.port, [127, 0, 0, 3], &secret).await;
    assert_eq!(b.status, 200, "{}", String::from_utf8_lossy(&b.body));
    drop(lb);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_haproxy_forwardfor_clients_are_throttled_apart() {
    two_clients_apart_through(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_haproxy_send_proxy_v2_clients_are_throttled_apart() {
    two_clients_apart_through(true).await;
}
