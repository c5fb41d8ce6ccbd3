//! Issue 28: the RadSec door (RADIUS over TLS, RFC 6614).
//!
//! - Unmodified `radsecproxy` (Debian package, installed by ./scripts/radius-tools; a
//!   missing binary FAILS the test) relays unmodified `radclient` authentication and
//!   accounting from UDP into the RadSec listener with a NAS certificate; the answers are
//!   checked by radclient against its own secret, the record is read back with
//!   `portcullis acct sessions`. The server has no UDP listener at all.
//! - A NAS is named by its certificate (pinned or by name); a certificate from another
//!   CA, none at all, one that names no NAS, one whose NAS is registered for other
//!   addresses, or one the CA's CRL revokes gets no answer. Each refusal is paired with a NAS that is served the same
//!   way, so a test client that cannot talk RadSec at all would fail.
//! - Hostile peers: a silent TCP connection is closed at the handshake deadline, a
//!   NAS that stops mid-packet or trickles octets at the idle deadline, an impossible
//!   Length at once, and the per-source limit holds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use portcullis_radius::{Code, encode_request, verify_response};

use crate::process_support::cli;
use crate::radius_support::radclient;
use crate::radsec_support::{
    Conn, RADSEC, RadsecServer, client_config, connect, login, read_packet, start_radsec,
};

/// A free UDP port on loopback (bound and released: radsecproxy binds it next).
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// radsecproxy, killed when dropped.
struct Proxy(Child, std::path::PathBuf);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proxy {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }
}

/// Start radsecproxy: UDP clients on 127.0.0.1:`udp` with `secret`, every realm relayed
/// (authentication and accounting) to the RadSec server `r` with NAS `ap1`'s certificate.
fn radsecproxy(r: &RadsecServer, udp: u16, secret: &str) -> Proxy {
    let dir = r.certs.dir.path();
    let conf = dir.join("radsecproxy.conf");
    let log = dir.join("radsecproxy.log");
    let text = format!(
        "ListenUDP 127.0.0.1:{udp}\n\
         LogLevel 4\n\
         LogDestination file://{log}\n\
         tls default {{\n\
         \tCACertificateFile {ca}\n\
         \tCertificateFile {cert}\n\
         \tCertificateKeyFile {key}\n\
         }}\n\
         client nas {{\n\
         \thost 127.0.0.1\n\
         \ttype udp\n\
         \tsecret {secret}\n\
         }}\n\
         server portcullis {{\n\
         \thost 127.0.0.1\n\
         \tport {port}\n\
         \ttype tls\n\
         \tsecret radsec\n\
         \tStatusServer off\n\
         }}\n\
         realm * {{\n\
         \tserver portcullis\n\
         \taccountingServer portcullis\n\
         }}\n",
        log = log.display(),
        ca = r.certs.ca.display(),
        cert = r.certs.ap1.cert.display(),
        key = r.certs.ap1.key.display(),
        port = r.addr.port(),
    );
    std::fs::write(&conf, text).unwrap();
    let child = Command::new("radsecproxy")
        .arg("-f")
        .arg("-c")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run radsecproxy ({e}): ./scripts/radius-tools installs it")
        });
    Proxy(child, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_radsecproxy_relays_radclient_auth_and_accounting_into_radsec() {
    let _x = crate::server_support::exclusive();
    let r = start_radsec(|_| {}, |_| {}).await;
    assert!(
        r.s.server.radius_addrs().is_empty(),
        "no UDP door: RadSec only"
    );
    r.s.add_user("fred", "fr3d's password").await;
    let udp = free_udp_port();
    let proxy = radsecproxy(&r, udp, "proxy-client-secret");
    let to = SocketAddr::from(([127, 0, 0, 1], udp));
    let run = |kind: &'static str, attrs: &'static str| {
        // Retransmitting (as a NAS does) until radsecproxy has its connection.
        tokio::task::spawn_blocking(move || {
            radclient(to, kind, "proxy-client-secret", attrs, 10, 2)
        })
    };

    let (ok, out) = run(
        "auth",
        "User-Name = fred, User-Password = \"fr3d's password\", \
         Calling-Station-Id = \"02-11-22-33-44-55\", Message-Authenticator = 0x00",
    )
    .await
    .unwrap();
    assert!(
        ok && out.contains("Received Access-Accept"),
        "{out}\nradsecproxy log:\n{}",
        proxy.log()
    );
    let (ok, out) = run(
        "auth",
        "User-Name = fred, User-Password = wrong, Message-Authenticator = 0x00",
    )
    .await
    .unwrap();
    assert!(!ok && out.contains("Received Access-Reject"), "{out}");

    let (ok, out) = run(
        "acct",
        "User-Name = fred, Acct-Status-Type = Start, Acct-Session-Id = \"radsec-sess-1\", \
         Calling-Station-Id = \"02-11-22-33-44-55\", Framed-IP-Address = 10.9.8.7, \
         NAS-IP-Address = 127.0.0.1",
    )
    .await
    .unwrap();
    assert!(
        ok && out.contains("Received Accounting-Response"),
        "{out}\nradsecproxy log:\n{}",
        proxy.log()
    );
    // Acknowledged means durable: the record is there for the CLI right away.
    let out = cli(
        r.s.dir.path(),
        &["acct", "sessions", "--json", "--nas", "ap1"],
        "",
    );
    let sessions: serde_json::Value = serde_json::from_str(&out).unwrap();
    let s = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "radsec-sess-1")
        .unwrap_or_else(|| panic!("no radsec-sess-1 in {out}"));
    assert_eq!(s["nas"], "ap1", "{s}");
    assert_eq!(s["user"], "fred", "{s}");
    assert_eq!(s["address"], "10.9.8.7", "{s}");
    assert_eq!(s["station"], "02-11-22-33-44-55", "{s}");
    drop(proxy);
}

/// Connect with `cert` (a file pair of the test CAs; `None`: no client certificate) and
/// try one login: `Ok(code)` or the error that ended the connection.
async fn try_login(
    r: &RadsecServer,
    cert: Option<&portcullis_lab::certs::Pair>,
    alpn: &'static [&'static [u8]],
) -> Result<Code, String> {
    let config = client_config(&r.certs.ca, cert, alpn);
    let addr = r.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = connect(addr, config).map_err(|e| format!("connect: {e}"))?;
        if !alpn.is_empty() {
            assert_eq!(
                c.conn.alpn_protocol(),
                Some(&b"radius/1.0"[..]),
                "a client offering RADIUS/1.0 only is answered radius/1.0 (RFC 9765 §3.2)"
            );
        }
        login(&mut c, 7, "fred", "fr3d's password").map_err(|e| format!("login: {e}"))
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_radsec_nas_is_named_by_its_certificate_and_others_are_refused() {
    let r = start_radsec(|_| {}, |c| c.radius.nas_refresh = Duration::from_secs(1)).await;
    r.s.add_user("fred", "fr3d's password").await;
    let c = &r.certs;
    // Pinned certificate, and a certificate registered by name: served.
    assert_eq!(
        try_login(&r, Some(&c.ap1), &[]).await,
        Ok(Code::AccessAccept)
    );
    assert_eq!(
        try_login(&r, Some(&c.ap2), &[]).await,
        Ok(Code::AccessAccept)
    );
    // A client offering RADIUS/1.0 by ALPN is served RADIUS/1.0 (RADIUS/1.1 and the
    // other ALPN outcomes: radsec_v11.rs).
    assert_eq!(
        try_login(&r, Some(&c.ap1), &[b"radius/1.0"]).await,
        Ok(Code::AccessAccept)
    );
    // Another CA (with the very CN of ap1), no certificate, a certificate of the right CA
    // that names no NAS, and a NAS registered for other addresses: no answer.
    for (who, cert) in [
        ("another CA", Some(&c.rogue)),
        ("no certificate", None),
        ("unregistered", Some(&c.stranger)),
        ("outside its CIDR", Some(&c.far)),
        ("revoked by the CA's CRL", Some(&c.revoked)),
    ] {
        let got = try_login(&r, cert, &[]).await;
        assert!(got.is_err(), "{who}: {got:?}");
    }

    // Status-Server over the connection of a recognised NAS (RFC 5997 with "radsec").
    let config = client_config(&c.ca, Some(&c.ap1), &[]);
    let addr = r.addr;
    let code = tokio::task::spawn_blocking(move || {
        let mut s = connect(addr, config).unwrap();
        let auth = [0x33u8; 16];
        let req = encode_request(Code::StatusServer, 9, auth, &[], RADSEC).unwrap();
        s.write_all(&req).unwrap();
        let raw = read_packet(&mut s).unwrap();
        verify_response(&raw, &auth, RADSEC, true).unwrap().code
    })
    .await
    .unwrap();
    assert_eq!(code, Code::AccessAccept);

    // Removing the NAS closes its connection at the next request.
    let config = client_config(&c.ca, Some(&c.ap2), &[]);
    let mut conn = tokio::task::spawn_blocking(move || {
        let mut s = connect(addr, config).unwrap();
        assert_eq!(
            login(&mut s, 1, "fred", "fr3d's password").unwrap(),
            Code::AccessAccept
        );
        s
    })
    .await
    .unwrap();
    assert!(r.s.store().remove_nas("ap2").await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = tokio::task::spawn_blocking(move || {
        // Until the server's NAS table refresh drops ap2, logins still work.
        let mut id = 2u8;
        loop {
            match login(&mut conn, id, "fred", "fr3d's password") {
                Ok(_) if Instant::now() < deadline => id = id.wrapping_add(1),
                Ok(_) => return false,
                Err(_) => return true,
            }
        }
    })
    .await
    .unwrap();
    assert!(refused, "the connection of a removed NAS stayed open");
}

/// Whether the server closes `s` within `within` (EOF or an error on read).
fn closed_within(s: &mut impl Read, within: Duration) -> bool {
    let start = Instant::now();
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return start.elapsed() <= within,
            Ok(_) => {}
        }
        if start.elapsed() > within {
            return false;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_radsec_hostile_peers_cannot_hold_the_door() {
    let _x = crate::server_support::exclusive();
    let r = start_radsec(
        |f| {
            f.handshake_timeout_ms = 500;
            f.idle_timeout_secs = 1;
            f.max_connections_per_source = 2;
            f.max_in_flight = 1;
        },
        |c| c.radius.reject_delay = Duration::from_millis(800),
    )
    .await;
    r.s.add_user("fred", "fr3d's password").await;
    let addr = r.addr;
    let ca = r.certs.ca.clone();
    let ap1 = r.certs.ap1.clone();
    tokio::task::spawn_blocking(move || {
        let good = || client_config(&ca, Some(&ap1), &[]);
        let raw = || {
            let s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s
        };
        // A TCP connection that never starts TLS: closed at the handshake deadline.
        let mut silent = raw();
        assert!(closed_within(&mut silent, Duration::from_secs(5)));

        // Per source: two connections held (mid-handshake), a third is closed before TLS.
        let held = [raw(), raw()];
        assert!(
            connect(addr, good()).is_err(),
            "a third connection from one address got through"
        );
        drop(held);
        // Once they are gone, a NAS is served again (the slots were released).
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut c: Conn = loop {
            match connect(addr, good()) {
                Ok(c) => break c,
                Err(e) => assert!(Instant::now() < deadline, "slots never freed: {e}"),
            }
        };
        assert_eq!(
            login(&mut c, 1, "fred", "fr3d's password").unwrap(),
            Code::AccessAccept
        );

        // Stopping mid-packet: closed at the idle deadline, the partial packet unanswered.
        c.write_all(&[1, 2, 0, 60, 0, 0, 0, 0]).unwrap();
        c.flush().unwrap();
        assert!(closed_within(&mut c, Duration::from_secs(5)));

        // Trickling octets does not keep a connection open.
        let mut t = connect(addr, good()).unwrap();
        let start = Instant::now();
        let mut closed = false;
        for _ in 0..60 {
            if t.write_all(&[0]).and_then(|()| t.flush()).is_err() {
                closed = true;
                break;
            }
            t.sock
                .set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut b = [0u8; 1];
            match t.read(&mut b) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Err(e)
                    if e.kind() != std::io::ErrorKind::WouldBlock
                        && e.kind() != std::io::ErrorKind::TimedOut =>
                {
                    closed = true;
                    break;
                }
                _ => {}
            }
        }
        assert!(
            closed && start.elapsed() < Duration::from_secs(5),
            "trickler held on"
        );

        // One request in flight per connection: two pipelined wrong logins are read one
        // after the other, so the second is answered a whole reject delay after the first
        // (with room for both, both would be answered together).
        let mut p = connect(addr, good()).unwrap();
        let (one, a1) =
            crate::radsec_support::access_request(21, "fred", "wrong", "02-00-00-00-00-09");
        let (two, a2) =
            crate::radsec_support::access_request(22, "fred", "wrong", "02-00-00-00-00-09");
        p.write_all(&[one, two].concat()).unwrap();
        p.flush().unwrap();
        let sent = Instant::now();
        let first = read_packet(&mut p).unwrap();
        let t1 = sent.elapsed();
        let second = read_packet(&mut p).unwrap();
        let t2 = sent.elapsed();
        assert_eq!(
            verify_response(&first, &a1, RADSEC, true).unwrap().code,
            Code::AccessReject
        );
        assert_eq!(
            verify_response(&second, &a2, RADSEC, true).unwrap().code,
            Code::AccessReject
        );
        assert!(
            t2 >= t1 + Duration::from_millis(700),
            "the second request was answered {:?} after the first: it was read early",
            t2 - t1
        );

        // An impossible Length loses the stream at once (RFC 6613 §2.6.4).
        let mut b = connect(addr, good()).unwrap();
        b.write_all(&[1, 3, 0x13, 0x88]).unwrap();
        b.flush().unwrap();
        assert!(closed_within(&mut b, Duration::from_millis(900)));
    })
    .await
    .unwrap();
}

/// Run a lab scenario over RadSec against `r` with NAS `ap2`'s certificate; the
/// legitimate group's successes.
async fn lab_over_radsec(r: &RadsecServer, accounting: bool) -> u64 {
    use portcullis_lab::record::Outcome;
    let c = &r.certs;
    let text = format!(
        r#"
name = "lab-radsec"
[target]
url = "radius://{addr}"
metrics = "off"
[driver]
kind = "radius"
accounting = {accounting}
retransmit_ms = 5000
retries = 1
radsec = {{ ca = "{ca}", cert = "{cert}", key = "{key}", server_name = "localhost" }}
[principals]
count = 4
[run]
duration = "2s"
timeout = "12s"
[[group]]
name = "legitimate"
size = 4
think = "50ms"
sources = "127.0.0.40-127.0.0.43"
"#,
        addr = r.addr,
        ca = c.ca.display(),
        cert = c.ap2.cert.display(),
        key = c.ap2.key.display(),
    );
    let scn = portcullis_lab::Scenario::parse(&text, None).unwrap();
    let res = portcullis_lab::run_scenario(&scn, &portcullis_lab::RunOptions::default())
        .await
        .unwrap();
    let rep = &res.repeats[0];
    assert_eq!((rep.misdelivered, rep.breaches), (0, 0));
    let g = rep.groups.iter().find(|g| g.name == "legitimate").unwrap();
    assert_eq!(g.success_rate, 1.0, "{g:?}");
    assert_eq!(g.outcomes[&Outcome::Timeout], 0);
    g.outcomes[&Outcome::Success]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_lab_radsec_transport_logins_and_records_match_the_server() {
    let _x = crate::server_support::exclusive();
    let r = start_radsec(|_| {}, |_| {}).await;
    for i in 0..4 {
        r.s.add_user(&format!("lab-client-{i}"), &format!("lab-secret-{i}"))
            .await;
    }
    let logins = lab_over_radsec(&r, false).await;
    assert!(logins > 4, "{logins}");
    let status = r.s.get("/status.json").await.json();
    let accepts = status["radius"]["nas"]["ap2"]["accepts"].as_u64();
    assert_eq!(accepts, Some(logins), "{}", status["radius"]);

    let records = lab_over_radsec(&r, true).await;
    assert!(records > 4, "{records}");
    // Every acknowledged record is stored (each attempt is a distinct record).
    let out = cli(r.s.dir.path(), &["acct", "export", "--format", "jsonl"], "");
    let stored = out
        .lines()
        .filter(|l| l.contains("\"nas\":\"ap2\""))
        .count() as u64;
    assert_eq!(stored, records, "acknowledged {records}, stored {stored}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_nas_certificate_cli_pins_lists_and_changes_the_certificate() {
    let r = start_radsec(|_| {}, |c| c.radius.nas_refresh = Duration::from_secs(1)).await;
    r.s.add_user("fred", "fr3d's password").await;
    let dir = r.s.dir.path();
    // The pin is the certificate's SHA-256 fingerprint, as OpenSSL computes it.
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(&r.certs.ap1.cert)
        .output()
        .expect("openssl (Debian openssl) is needed for this test");
    let text = String::from_utf8(out.stdout).unwrap();
    let hex: String = text
        .split('=')
        .nth(1)
        .unwrap()
        .trim()
        .replace(':', "")
        .to_ascii_lowercase();
    let listed: serde_json::Value =
        serde_json::from_str(&cli(dir, &["nas", "list", "--json"], "")).unwrap();
    let ap1 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "ap1")
        .unwrap();
    assert_eq!(ap1["certificate"], format!("sha256:{hex}"), "{ap1}");

    // Forgetting the certificate shuts ap1 out of RadSec; a new pin lets its other
    // certificate in (running servers pick both up at their NAS table refresh).
    let attempt = |cert: portcullis_lab::certs::Pair| {
        let config = client_config(&r.certs.ca, Some(&cert), &[]);
        let addr = r.addr;
        tokio::task::spawn_blocking(move || {
            connect(addr, config).and_then(|mut c| login(&mut c, 3, "fred", "fr3d's password"))
        })
    };
    cli(dir, &["nas", "certificate", "ap1", "--none"], "");
    let deadline = Instant::now() + Duration::from_secs(20);
    while attempt(r.certs.ap1.clone()).await.unwrap().is_ok() {
        assert!(
            Instant::now() < deadline,
            "ap1 still served without a certificate"
        );
    }
    let stranger = r.certs.stranger.cert.to_str().unwrap().to_owned();
    cli(
        dir,
        &["nas", "certificate", "ap1", "--certificate", &stranger],
        "",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match attempt(r.certs.stranger.clone()).await.unwrap() {
            Ok(code) => break assert_eq!(code, Code::AccessAccept),
            Err(e) => assert!(Instant::now() < deadline, "the new pin never took: {e}"),
        }
    }
    assert!(
        attempt(r.certs.ap1.clone()).await.unwrap().is_err(),
        "the old one is out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_reload_rereads_the_radsec_crl() {
    let r = start_radsec(|_| {}, |_| {}).await;
    r.s.add_user("fred", "fr3d's password").await;
    assert_eq!(
        try_login(&r, Some(&r.certs.ap1), &[]).await,
        Ok(Code::AccessAccept)
    );
    // The CA revokes ap1 too; SIGHUP's reload re-reads the CRL for new connections.
    r.certs
        .issuer
        .crl("nas-ca", &[&r.certs.revoked, &r.certs.ap1])
        .unwrap();
    let outcomes = r.s.server.parts().reloads.reload_all();
    let radsec = outcomes
        .iter()
        .find(|(name, _)| *name == "radius.radsec")
        .expect("the RadSec door registers for reloads");
    assert!(radsec.1.is_ok(), "{radsec:?}");
    assert!(
        try_login(&r, Some(&r.certs.ap1), &[]).await.is_err(),
        "revoked ap1 served"
    );
    assert_eq!(
        try_login(&r, Some(&r.certs.ap2), &[]).await,
        Ok(Code::AccessAccept)
    );
    // A CRL that no longer reads is refused and the configuration in force stays.
    std::fs::write(&r.certs.crl, "not a CRL").unwrap();
    let outcomes = r.s.server.parts().reloads.reload_all();
    let radsec = outcomes
        .iter()
        .find(|(n, _)| *n == "radius.radsec")
        .unwrap();
    assert!(radsec.1.is_err(), "{radsec:?}");
    assert_eq!(
        try_login(&r, Some(&r.certs.ap2), &[]).await,
        Ok(Code::AccessAccept)
    );
    assert!(try_login(&r, Some(&r.certs.ap1), &[]).await.is_err());
}
