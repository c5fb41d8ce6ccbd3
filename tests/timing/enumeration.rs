//! Issue 16: a wrong secret for an existing principal and any secret for an unknown one
//! get the same answer *and the same latency distribution*, measured from outside the
//! server's process as an attacker would: the real `portcullis serve` binary, one attempt
//! per candidate name, each on a fresh connection from a fresh /24 of 127/8 (so no
//! throttle state links them), existing and unknown names interleaved in a seeded random
//! order. The two latency samples are compared with a two-sample Kolmogorov-Smirnov test.
//!
//! With 300 samples each, two identical distributions give D > 0.2 with probability
//! below 1e-4 (the asymptotic critical value at alpha = 0.001 is 0.16), so the bound is
//! not flaky; the distributions the issue measured (mimic delay off by a timer tick and
//! narrower) gave D = 0.55.
// Test setup: a failed step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use portcullis_hash::Policy;
use portcullis_hash::pbkdf2::Prf;
use portcullis_hash::pepper::PepperedHmac;
use portcullis_store::{ClientRecord, ClientStore, DataDir, Grant, UserRecord, UserStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use super::server_support::{basic_header, form, parse_answer};

/// Samples per side.
const SAMPLES: usize = 300;

/// Cheaper than production so the test is quick, still a full KDF per wrong secret.
fn policy() -> Policy {
    Policy::Pbkdf2 {
        prf: Prf::Sha256,
        iterations: 60_000,
    }
}

/// `portcullis serve` in its own process over a provisioned data directory.
struct Serve {
    child: Child,
    addr: SocketAddr,
    app_secret: String,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Users `user-i` with password `pw-i`, clients `client-i` with chosen secrets
/// `secret-i` (KDF-hashed, as `client add --secret-stdin` stores them), and `app`, a
/// password-grant client with a generated secret.
async fn serve() -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let app_secret = {
        let data = DataDir::open(dir.path()).await.unwrap();
        let store = data.store();
        let p = policy();
        for i in 0..SAMPLES {
            store
                .put_user(
                    &UserRecord::new(
                        format!("user-{i}"),
                        p.hash(format!("pw-{i}").as_bytes()).unwrap(),
                        0,
                    )
                    .unwrap(),
                )
                .await
                .unwrap();
            store
                .put_client(&ClientRecord {
                    id: format!("client-{i}"),
                    auth: portcullis_store::ClientAuth::Secret,
                    secret_hashes: vec![p.hash(format!("secret-{i}").as_bytes()).unwrap()],
                    grants: vec![Grant::ClientCredentials],
                    scopes: vec![],
                    token_lifetime: 3600,
                    created_at: 0,
                })
                .await
                .unwrap();
        }
        let secret = portcullis_store::generate_client_secret().unwrap();
        store
            .put_client(&ClientRecord {
                id: "app".into(),
                auth: portcullis_store::ClientAuth::Secret,
                secret_hashes: vec![PepperedHmac::create(
                    data.peppers().current().unwrap(),
                    secret.as_bytes(),
                )],
                grants: vec![Grant::Password],
                scopes: vec![],
                token_lifetime: 3600,
                created_at: 0,
            })
            .await
            .unwrap();
        secret.to_string()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args(["serve", "--http", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("serve exited before listening")
            .unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split(';').next().unwrap().parse().unwrap();
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Serve {
        child,
        addr,
        app_secret,
        _dir: dir,
    }
}

/// One attempt on a fresh connection from `source`: (status, body, latency from the
/// first request byte sent to the last answer byte read).
async fn attempt(to: SocketAddr, source: Ipv4Addr, request: &[u8]) -> (u16, String, Duration) {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(IpAddr::V4(source), 0)).unwrap();
    let mut conn = s.connect(to).await.unwrap();
    let t0 = Instant::now();
    conn.write_all(request).await.unwrap();
    let mut buf = Vec::new();
    conn.read_to_end(&mut buf).await.unwrap();
    let took = t0.elapsed();
    let a = parse_answer(&buf);
    (
        a.status,
        String::from_utf8_lossy(&a.body).into_owned(),
        took,
    )
}

fn token_request(basic: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /oauth2/token HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Authorization: {basic}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Probe `SAMPLES` existing and `SAMPLES` unknown names, interleaved in a seeded random
/// order, each from its own /24 (`127.<net>.<k>.1`); returns both latency samples after
/// checking that every answer was `(status, body)`.
async fn probe(
    srv: &Serve,
    net: u8,
    expect: (u16, &str),
    request: impl Fn(bool, usize) -> Vec<u8>,
) -> (Vec<f64>, Vec<f64>) {
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..SAMPLES {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let order = if rng & 1 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for (j, exists) in order.into_iter().enumerate() {
            let k = 2 * i + j;
            let source = Ipv4Addr::new(127, net + (k / 256) as u8, (k % 256) as u8, 1);
            let (status, body, took) = attempt(srv.addr, source, &request(exists, i)).await;
            assert_eq!(
                (status, body.contains(expect.1)),
                (expect.0, true),
                "exists={exists}: {body}"
            );
            let ms = took.as_secs_f64() * 1e3;
            if exists {
                known.push(ms);
            } else {
                unknown.push(ms);
            }
        }
    }
    (known, unknown)
}

/// Two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical
/// distribution functions.
fn ks(a: &[f64], b: &[f64]) -> f64 {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

fn quantiles(v: &[f64]) -> String {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]
        .iter()
        .map(|q| format!("{:.2}", v[((v.len() - 1) as f64 * q).round() as usize]))
        .collect::<Vec<_>>()
        .join(" ")
}

fn check(what: &str, known: &[f64], unknown: &[f64]) {
    let d = ks(known, unknown);
    let report = format!(
        "{what}: KS D = {d:.3}; quantiles ms (0/10/25/50/75/90/100%): existing {} | unknown {}",
        quantiles(known),
        quantiles(unknown)
    );
    eprintln!("{report}");
    assert!(d <= 0.2, "timing tells existing from unknown: {report}");
}

#[test]
fn ks_statistic_matches_hand_computed_values() {
    // Identical samples: no gap. Disjoint: the whole distribution.
    assert_eq!(ks(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), 0.0);
    assert_eq!(ks(&[1.0, 2.0], &[3.0, 4.0]), 1.0);
    // F_a jumps to 0.5 at 1; F_b is still 0 there.
    assert_eq!(ks(&[1.0, 3.0], &[2.0, 3.0]), 0.5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_16_usernames_do_not_leak_through_password_grant_timing() {
    let _exclusive = crate::server_support::exclusive();
    let srv = serve().await;
    let basic = basic_header("app", &srv.app_secret);
    let (known, unknown) = probe(&srv, 100, (400, "invalid_grant"), |exists, i| {
        let user = if exists {
            format!("user-{i}")
        } else {
            format!("nobody-{i}")
        };
        let body = form(&[
            ("grant_type", "password"),
            ("username", &user),
            ("password", "not-the-password"),
        ]);
        token_request(&basic, &body)
    })
    .await;
    check("usernames (password grant)", &known, &unknown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_16_client_ids_do_not_leak_through_client_credentials_timing() {
    let _exclusive = crate::server_support::exclusive();
    let srv = serve().await;
    let (known, unknown) = probe(&srv, 110, (401, "invalid_client"), |exists, i| {
        let id = if exists {
            format!("client-{i}")
        } else {
            format!("stranger-{i}")
        };
        let body = form(&[("grant_type", "client_credentials")]);
        token_request(&basic_header(&id, "not-the-secret"), &body)
    })
    .await;
    check("client ids (chosen secrets)", &known, &unknown);
}
