//! Issue 39: 1,000 malformed LDAP messages (truncated BER, wrong and huge lengths,
//! indefinite lengths, unknown operations, filters nested far too deep, too many elements,
//! garbage) against a real `portcullis serve`, each on its own connection: every one is
//! answered or closed, an honest bind succeeds after every hundred, and the server's
//! resident memory (from /proc) stays within a generous bound of what it was before.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::process_support::{Serve, cli, serve};

const BASE: &str = "dc=example,dc=com";

/// A TLV with a definite length in the shortest form.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn message(id: u8, op: Vec<u8>) -> Vec<u8> {
    tlv(0x30, &[tlv(0x02, &[id]), op].concat())
}

/// A simple BindRequest.
fn bind(id: u8, dn: &str, password: &str) -> Vec<u8> {
    let body = [
        tlv(0x02, &[3]),
        tlv(0x04, dn.as_bytes()),
        tlv(0x80, password.as_bytes()),
    ]
    .concat();
    message(id, tlv(0x60, &body))
}

/// A SearchRequest around `filter`.
fn search(id: u8, filter: Vec<u8>) -> Vec<u8> {
    let body = [
        tlv(0x04, BASE.as_bytes()),
        tlv(0x0a, &[2]),
        tlv(0x0a, &[0]),
        tlv(0x02, &[0]),
        tlv(0x02, &[0]),
        tlv(0x01, &[0]),
        filter,
        tlv(0x30, &[]),
    ]
    .concat();
    message(id, tlv(0x63, &body))
}

/// An AND nested `depth` deep around a presence filter.
fn deep_filter(depth: usize) -> Vec<u8> {
    let mut f = tlv(0x87, b"cn");
    for _ in 0..depth {
        f = tlv(0xa0, &f);
    }
    f
}

/// The `i`th malformed message (deterministic, varied by a small LCG).
fn malformed(i: usize) -> Vec<u8> {
    let mut seed = (i as u64)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (seed >> 33) as usize
    };
    let honest = bind(1, "uid=alice,ou=people,dc=example,dc=com", "alice-password");
    match i % 10 {
        // Truncated BER: a bind cut anywhere.
        0 => honest[..1 + next() % (honest.len() - 1)].to_vec(),
        // A wrong inner length: the bind's DN length off by some.
        1 => {
            let mut m = honest.clone();
            let at = 11; // the DN's length octet
            m[at] = m[at].wrapping_add(1 + (next() % 40) as u8);
            m
        }
        // Huge declared lengths, outer or inner.
        2 => vec![0x30, 0x84, 0xff, 0xff, 0xff, 0xf0, 0x02, 0x01, 0x01],
        3 => {
            let mut m = vec![
                0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x84, 0x7f, 0xff, 0xff, 0xff,
            ];
            m.extend([0u8; 3]);
            m
        }
        // Indefinite and over-long length forms.
        4 => vec![0x30, 0x80, 0x02, 0x01, 0x01, 0x42, 0x00, 0x00, 0x00],
        5 => vec![0x30, 0x89, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        // Filters nested far deeper than any client sends.
        6 => search(2, deep_filter(40 + next() % 400)),
        // Too many elements: an OR of thousands of presence filters.
        7 => {
            let items: Vec<u8> = (0..5000).flat_map(|_| tlv(0x87, b"cn")).collect();
            search(3, tlv(0xa1, &items))
        }
        // An operation tag no LDAP message has, and a non-SEQUENCE start.
        8 => message(4, tlv(0x5f - (next() % 8) as u8, &[])),
        // Garbage of a plausible length.
        _ => {
            let len = 1 + next() % 200;
            let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            tlv(0x30, &body)
        }
    }
}

/// Send `bytes`, end our side, and read until the server closes (bounded): whatever it
/// answered, the connection must end.
fn send_malformed(addr: SocketAddr, bytes: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut sink = Vec::new();
    let read = s.read_to_end(&mut sink);
    assert!(
        read.is_ok() || sink.len() < 1 << 20,
        "the server neither answered nor closed: {read:?}"
    );
}

/// Read one whole LDAP message (short or long form length).
fn read_message(s: &mut TcpStream) -> Vec<u8> {
    let mut head = [0u8; 2];
    s.read_exact(&mut head).unwrap();
    let mut len = usize::from(head[1]);
    let mut out = head.to_vec();
    if head[1] & 0x80 != 0 {
        let mut octets = vec![0u8; usize::from(head[1] & 0x7f)];
        s.read_exact(&mut octets).unwrap();
        len = octets.iter().fold(0, |acc, b| (acc << 8) | usize::from(*b));
        out.extend(&octets);
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    out.extend(body);
    out
}

/// An honest bind on a fresh connection: its result code.
fn honest_bind(addr: SocketAddr) -> u8 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(&bind(
        1,
        "uid=alice,ou=people,dc=example,dc=com",
        "alice-password",
    ))
    .unwrap();
    let reply = read_message(&mut s);
    // ... 61 LL 0a 01 CODE: the BindResponse's resultCode.
    let at = reply
        .windows(3)
        .position(|w| w[0] == 0x0a && w[1] == 0x01)
        .expect("a resultCode in the BindResponse");
    reply[at + 2]
}

/// `portcullis_ldap_malformed_total` from the server's /metrics.
fn malformed_total(http: SocketAddr) -> u64 {
    let mut s = TcpStream::connect(http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("portcullis_ldap_malformed_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// The LDAP listener `srv` logged, waited for with a deadline.
fn ldap_addr(srv: &Serve) -> SocketAddr {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = srv.log.lock().unwrap().iter().find_map(|l| {
            l.split("LDAP listening on tcp ")
                .nth(1)?
                .trim()
                .parse()
                .ok()
        });
        if let Some(a) = found {
            return a;
        }
        assert!(Instant::now() < deadline, "no LDAP listener logged");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn issue_39_a_thousand_malformed_messages_leave_honest_binds_answered_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    cli(
        &data,
        &["user", "add", "--password-stdin", "alice"],
        "alice-password\n",
    );
    let config = dir.path().join("portcullis.toml");
    std::fs::write(
        &config,
        format!(
            "[policy]\niterations = 10000\n[ldap]\nbase_dn = \"{BASE}\"\n\
             listen = \"127.0.0.1:0\"\nallow_plain_binds = true\n"
        ),
    )
    .unwrap();
    let mut srv = serve(&config, &data);
    let addr = ldap_addr(&srv);
    let pid = srv.child.id();
    // Warm up (the first bind rehashes alice under the policy) before the baseline.
    for _ in 0..5 {
        assert_eq!(honest_bind(addr), 0);
    }
    let before = rss_kib(pid);
    for i in 0..1000 {
        send_malformed(addr, &malformed(i));
        if i % 100 == 99 {
            assert_eq!(honest_bind(addr), 0, "after {} malformed messages", i + 1);
        }
    }
    let after = rss_kib(pid);
    assert_eq!(honest_bind(addr), 0);
    assert!(srv.child.try_wait().unwrap().is_none(), "the server exited");
    // Generous: decoding one message peaks near 1 MB (portcullis-ldap's limits), and the
    // allocator keeps some of what it freed; a leak of every message would be far more.
    assert!(
        after < before + 64 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
    // Most of them were read and refused (the truncated ones just end at our EOF).
    let refused = malformed_total(srv.addr);
    assert!(
        refused >= 700,
        "portcullis_ldap_malformed_total = {refused}"
    );
    let errors: Vec<String> = srv
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("ERROR") || l.contains("panicked"))
        .cloned()
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let _ = srv.child.kill();
    let _ = srv.child.wait();
}
