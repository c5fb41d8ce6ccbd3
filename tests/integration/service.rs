//! Issue 29: running as a service. `serve` under a `Type=notify` manager (the test plays
//! systemd: it binds the NOTIFY_SOCKET datagram socket) sends READY=1 only after its own
//! `/readyz` answered, feeds the watchdog, and says STOPPING=1 on SIGTERM;
//! `portcullis healthcheck` answers for a running server (plain HTTP, and TLS pinned to
//! the configured certificate) and fails when there is none.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::Duration;

use portcullis_lab::certs::TestCa;
use portcullis_store::testing::free_port;

use crate::process_support::{BIN, serve};

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    (raw[9..12].parse().unwrap(), raw)
}

/// The next notification (one datagram), or a test failure after a minute.
fn next(sock: &UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).expect("no notification within 60 s");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn healthcheck(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .arg("healthcheck")
        .args(args)
        .env_remove("PORTCULLIS_CONFIG")
        .env_remove("PORTCULLIS_HTTP")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn issue_29_ready_after_the_server_answers_then_watchdog_then_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&socket_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .env("NOTIFY_SOCKET", &socket_path)
        // 400 ms: a ping every 200 ms. No WATCHDOG_PID: libsystemd accepts its absence.
        .env("WATCHDOG_USEC", "400000")
        .env_remove("WATCHDOG_PID")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    // The first message is readiness, with the address in the status line.
    let ready = next(&sock);
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready:?}");
    let status = ready
        .lines()
        .find_map(|l| l.strip_prefix("STATUS=serving on "))
        .unwrap_or_else(|| panic!("no status with the address: {ready:?}"));
    let addr: SocketAddr = status.split(',').next().unwrap().parse().unwrap();
    // Ready means answering: /readyz answers at once, and the server's own counters show
    // that a /readyz had already been answered 200 before READY=1 was sent (the test
    // sent none yet: this GET /metrics is its first request).
    let (code, metrics) = get(addr, "/metrics");
    assert_eq!(code, 200);
    let probes = metrics
        .lines()
        .find(|l| {
            l.starts_with("http_requests_total")
                && l.contains("route=\"/readyz\"")
                && l.contains("status=\"200\"")
        })
        .unwrap_or_else(|| panic!("no /readyz answered before READY=1:\n{metrics}"));
    assert!(probes.ends_with(" 1"), "{probes}");
    assert_eq!(get(addr, "/readyz").0, 200);
    let (code, out) = healthcheck(&["--http", &addr.to_string()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ready"), "{out}");
    // The watchdog is fed from the runtime while it serves.
    for _ in 0..3 {
        let m = next(&sock);
        assert_eq!(m.trim_end(), "WATCHDOG=1", "{m:?}");
    }
    // SIGTERM: the manager hears STOPPING=1 (watchdog pings may still come first).
    signal(child.id(), "TERM");
    let stopping = (0..50)
        .map(|_| next(&sock))
        .find(|m| m.contains("STOPPING=1"));
    assert!(stopping.is_some(), "no STOPPING=1");
    assert!(child.wait().unwrap().success());
    let log = log.join().unwrap();
    assert!(
        log.iter()
            .any(|l| l.contains("systemd watchdog: pinging every")),
        "{log:?}"
    );
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn issue_29_healthcheck_fails_without_a_server() {
    let addr = format!("127.0.0.1:{}", free_port());
    let (code, out) = healthcheck(&["--http", &addr, "--timeout-ms", "3000"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not ready") && out.contains(&addr), "{out}");
}

#[test]
fn issue_29_healthcheck_over_tls_trusts_only_the_configured_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca").unwrap();
    let served = ca.server("served", &["127.0.0.1"]).unwrap();
    let other = ca.server("other", &["127.0.0.1"]).unwrap();
    let config = dir.path().join("p.toml");
    let write = |pair: &portcullis_lab::certs::Pair| {
        std::fs::write(
            &config,
            format!(
                "[tls]\ncert = \"{}\"\nkey = \"{}\"\n",
                pair.cert.display(),
                pair.key.display()
            ),
        )
        .unwrap();
    };
    write(&served);
    let mut s = serve(&config, &dir.path().join("data"));
    let at = s.addr.to_string();
    let cfg = config.to_str().unwrap();
    let (code, out) = healthcheck(&["--config", cfg, "--http", &at]);
    assert_eq!(code, 0, "{out}");
    // Same CA, same name, another certificate: refused (pinned, not CA-trusted).
    write(&other);
    let (code, out) = healthcheck(&["--config", cfg, "--http", &at]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not the configured [tls] cert"), "{out}");
    s.child.kill().unwrap();
    s.child.wait().unwrap();
}

#[test]
fn issue_29_healthcheck_behind_proxy_protocol_sends_a_local_header() {
    // HAProxy on the same host with send-proxy-v2: the server requires a PROXY header
    // from 127.0.0.1, so a plain probe would be closed; the probe sends LOCAL.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("p.toml");
    std::fs::write(
        &config,
        "[server]\ntrusted_proxies = [\"127.0.0.1\"]\nproxy_protocol = true\n",
    )
    .unwrap();
    let mut s = serve(&config, &dir.path().join("data"));
    let at = s.addr.to_string();
    let (code, out) = healthcheck(&["--config", config.to_str().unwrap(), "--http", &at]);
    assert_eq!(code, 0, "{out}");
    // The server does require the header from there: without the config the probe sends
    // none and is refused.
    let (code, out) = healthcheck(&["--http", &at, "--timeout-ms", "3000"]);
    assert_eq!(code, 1, "{out}");
    s.child.kill().unwrap();
    s.child.wait().unwrap();
}
