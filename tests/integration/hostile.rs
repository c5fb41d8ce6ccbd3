//! Issue 15: hostile connections. Slow-loris headers and bodies, a pile of idle
//! connections, oversized heads, a pipelining flood and half-open TLS handshakes: each is
//! bounded by a configured limit (`header_timeout_ms`, `request_timeout_ms`,
//! `max_connections_per_source`, `max_header_bytes`, the core's failure budgets), and a
//! legitimate client from another address is served while it lasts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use portcullis_store::Grant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::server_support::*;

/// A connection to `to` from the loopback address `from`.
async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))
        .unwrap();
    s.connect(to).await.unwrap()
}

/// How long until the server closes `s` (reading and discarding whatever it sends),
/// giving up after `limit`.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((t0 + limit).into(), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(t0.elapsed()),
            Ok(Ok(_)) => {}
            Err(_) => return None,
        }
    }
}

/// A legitimate client (its own address) gets a token, and quickly.
async fn legit_is_served(s: &TestServer, secret: &str) {
    let t0 = Instant::now();
    let mut c = connect_from("127.0.0.2", s.server.local_addr()).await;
    let body = "grant_type=client_credentials";
    let req = format!(
        "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: {}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        basic_header("svc", secret),
        body.len()
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).await.unwrap();
    assert_eq!(parse_answer(&buf).status, 200);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}

async fn server() -> (TestServer, String) {
    let s = start_with(|c| {
        c.header_timeout = Duration::from_millis(400);
        c.request_timeout = Duration::from_millis(1500);
        c.max_connections = 500;
        c.max_connections_per_source = 16;
    })
    .await;
    let secret = s.add_client("svc", &[Grant::ClientCredentials], &[]).await;
    (s, secret)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_15_slow_loris_headers_and_bodies_are_cut_off() {
    let _exclusive = crate::server_support::exclusive();
    let (s, secret) = server().await;
    let addr = s.server.local_addr();
    let mut heads = Vec::new();
    let mut bodies = Vec::new();
    for i in 0..12 {
        let from = format!("127.0.3.{}", 1 + i);
        // Headers: a request line and one header, then a byte now and then, never done.
        let mut c = connect_from(&from, addr).await;
        c.write_all(b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        heads.push(c);
        // Body: complete headers promising 1000 bytes, then a trickle.
        let mut c = connect_from(&from, addr).await;
        c.write_all(
            b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: \
              application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ngrant_type=",
        )
        .await
        .unwrap();
        bodies.push(c);
    }
    let trickle = tokio::spawn(async move {
        for _ in 0..30 {
            for c in heads.iter_mut().chain(bodies.iter_mut()) {
                let _ = c.write_all(b"x").await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (heads, bodies)
    });
    legit_is_served(&s, &secret).await;
    let (mut heads, mut bodies) = trickle.await.unwrap();
    for c in &mut heads {
        // header_timeout_ms (400 ms) bounds the head however it trickles.
        let t = closed_within(c, Duration::from_secs(5)).await;
        assert!(t.is_some(), "a trickled head was never cut off");
    }
    for c in &mut bodies {
        // request_timeout_ms (1.5 s) bounds the whole request, body included.
        let t = closed_within(c, Duration::from_secs(5)).await;
        assert!(t.is_some(), "a trickled body was never cut off");
    }
    legit_is_served(&s, &secret).await;
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_15_idle_connections_are_capped_per_source_and_closed_when_idle() {
    let _exclusive = crate::server_support::exclusive();
    let (s, secret) = server().await;
    let addr = s.server.local_addr();
    // One host opens a hundred connections and says nothing.
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(connect_from("127.0.4.1", addr).await);
    }
    legit_is_served(&s, &secret).await;
    // All but max_connections_per_source (16) are closed at once; the 16 when they have
    // been idle for header_timeout_ms (400 ms).
    let mut quick = 0;
    for c in &mut idle {
        let t = closed_within(c, Duration::from_secs(5)).await;
        let t = t.expect("an idle connection stayed open");
        quick += usize::from(t < Duration::from_millis(300));
    }
    assert!(quick >= 100 - 16, "only {quick} refused at once");
    let m = String::from_utf8(s.get("/metrics").await.body).unwrap();
    let refused = m
        .lines()
        .find(|l| l.starts_with("portcullis_connections_refused_total{reason=\"per_source\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap();
    assert!(refused >= 84.0, "{refused}");
    // The table forgets closed connections: the host can connect again.
    let mut again = connect_from("127.0.4.1", addr).await;
    again
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    again.read_to_end(&mut buf).await.unwrap();
    assert_eq!(parse_answer(&buf).status, 200);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_15_oversized_heads_get_431_and_the_server_goes_on() {
    let (s, secret) = server().await;
    // Default max_header_bytes is 16 KiB: one long header, and many short ones.
    let long = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n",
        "a".repeat(20 * 1024)
    );
    let many: String = (0..2000).map(|i| format!("X-H{i}: v\r\n")).collect();
    let many = format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{many}\r\n");
    for req in [long, many] {
        let a = s.raw(req.as_bytes()).await;
        assert_eq!(a.status, 431, "{} bytes", req.len());
    }
    // Just under the limit is fine.
    let fits = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Long: {}\r\n\r\n",
        "a".repeat(12 * 1024)
    );
    assert_eq!(s.raw(fits.as_bytes()).await.status, 200);
    legit_is_served(&s, &secret).await;
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_15_pipelining_flood_is_answered_in_order_and_throttled() {
    let _exclusive = crate::server_support::exclusive();
    let (s, secret) = server().await;
    let addr = s.server.local_addr();
    // 400 requests in one write on one connection: every fourth a wrong client secret.
    let mut flood = Vec::new();
    let body = "grant_type=client_credentials";
    for i in 0..400 {
        let req = if i % 4 == 3 {
            format!(
                "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
                basic_header("svc", "wrong"),
                body.len()
            )
        } else {
            format!("GET /healthz?n={i} HTTP/1.1\r\nHost: x\r\n\r\n")
        };
        flood.extend_from_slice(req.as_bytes());
    }
    flood.extend_from_slice(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut c = connect_from("127.0.5.1", addr).await;
    let writer = tokio::spawn(async move {
        c.write_all(&flood).await.unwrap();
        let mut buf = Vec::new();
        c.read_to_end(&mut buf).await.unwrap();
        buf
    });
    legit_is_served(&s, &secret).await;
    let buf = writer.await.unwrap();
    let text = String::from_utf8_lossy(&buf);
    let statuses: Vec<&str> = text
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| &text[i + 9..i + 12])
        .collect();
    assert_eq!(statuses.len(), 401, "every pipelined request answered");
    let wrong: Vec<&str> = statuses
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 4 == 3 && *i < 400)
        .map(|(_, s)| *s)
        .collect();
    assert!(
        wrong.iter().all(|s| *s == "401" || *s == "429"),
        "{wrong:?}"
    );
    assert!(
        wrong.contains(&"429"),
        "the failure budget throttled the flood"
    );
    assert!(
        statuses
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 4 != 3)
            .all(|(_, s)| *s == "200"),
        "health checks in order"
    );
    legit_is_served(&s, &secret).await;
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_15_half_open_tls_handshakes_are_cut_off() {
    let _exclusive = crate::server_support::exclusive();
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/door/tests/fixtures/tls");
    let s = start_with(|c| {
        c.header_timeout = Duration::from_millis(400);
        c.max_connections_per_source = 16;
        c.tls = Some(portcullis_server::tls::TlsSettings::new(
            fixtures.join("ec_server.crt"),
            fixtures.join("ec_server.key"),
        ));
    })
    .await;
    let addr = s.server.local_addr();
    // Thirty handshakes that stop after the record header of a ClientHello.
    let mut half = Vec::new();
    for i in 0..30 {
        let mut c = connect_from(&format!("127.0.6.{}", 1 + i), addr).await;
        c.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
            .await
            .unwrap();
        half.push(c);
    }
    // A real HTTPS client is served meanwhile.
    let url = format!("https://127.0.0.1:{}/healthz", addr.port());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("curl")
            .args([
                "-sk",
                "--max-time",
                "5",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &url,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
    for c in &mut half {
        let t = closed_within(c, Duration::from_secs(5)).await;
        assert!(t.is_some(), "a half-open handshake was never cut off");
    }
    s.server.shutdown().await.unwrap();
}
