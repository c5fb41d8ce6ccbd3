//! Issue 28: RADIUS/1.1 (RFC 9765) on the RadSec door, negotiated by TLS ALPN.
//!
//! - The lab's RadSec driver in RADIUS/1.1 mode (ALPN "radius/1.1" only, Token, no MD5)
//!   runs PAP, EAP-TTLS (MS-MPPE keys in the clear, checked against the station's own)
//!   and accounting against a real `portcullis serve`; every login and record it counts
//!   is one the server counted or stored. A Status-Server is answered with the Token.
//! - No MD5 at all: over a RADIUS/1.1 connection a password hidden the RFC 2865 way with
//!   "radsec" is just wrong octets (rejected), the plaintext is accepted, and no reply
//!   carries a Message-Authenticator or an authenticator.
//! - Negotiation (RFC 9765 §3.3): with "allow", a NAS offering no ALPN or only
//!   "radius/1.0" speaks RADIUS/1.0 (MD5 with "radsec", verified), one offering both gets
//!   1.1; with "require", a NAS offering only "radius/1.0" fails the handshake and one
//!   offering no ALPN reads a Protocol-Error (Token zero, Error-Cause 406) and is closed;
//!   with "off", an offer of "radius/1.1" gets no answer and the connection is 1.0.
//!
//! Debian's radsecproxy (1.9.2 in bookworm) has no ALPN setting and no RADIUS/1.1 (it came
//! with radsecproxy 1.11), so no third-party interop test of 1.1 is possible with it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};

use portcullis_lab::record::Outcome;
use portcullis_radius::{Code, Packet, attr, hide_user_password, v11};
use portcullis_server::radius::eap::config::{EapConfig, FileEap};

use crate::process_support::cli;
use crate::radsec_support::{
    Conn, RADSEC, RadsecServer, client_config, connect, login, read_packet, start_radsec,
};

const ALPN_10: &[u8] = b"radius/1.0";
const ALPN_11: &[u8] = b"radius/1.1";

/// A RADIUS/1.1 Access-Request for `user` with `password` as sent (no hiding).
fn request_v11(token: [u8; 4], user: &str, password: &[u8]) -> Vec<u8> {
    v11::encode_request(
        Code::AccessRequest,
        token,
        &[
            (attr::USER_NAME, user.as_bytes()),
            (attr::USER_PASSWORD, password),
            (attr::CALLING_STATION_ID, b"02-00-00-00-11-01"),
        ],
    )
    .unwrap()
}

/// Send `packet` and read the answer to `token` (checked with the RFC 9765 sender rules).
fn trip_v11(c: &mut Conn, packet: &[u8], token: [u8; 4]) -> Code {
    c.write_all(packet).unwrap();
    c.flush().unwrap();
    let raw = read_packet(c).unwrap();
    let reply = v11::verify_response(&raw, token)
        .unwrap_or_else(|e| panic!("not a RADIUS/1.1 answer to our Token: {e}"));
    reply.code
}

/// Run a lab scenario over RadSec with RADIUS/1.1 (NAS `ap2`); `extra` adds driver keys.
/// The group's successes, after checking the run was clean.
async fn lab_v11(r: &RadsecServer, name: &str, extra: &str) -> u64 {
    let c = &r.certs;
    let text = format!(
        r#"
name = "lab-{name}"
[target]
url = "radius://{addr}"
metrics = "off"
[driver]
kind = "radius"
retransmit_ms = 5000
retries = 1
radius_1_1 = true
radsec = {{ ca = "{ca}", cert = "{cert}", key = "{key}", server_name = "localhost" }}
{extra}
[principals]
count = 4
[run]
duration = "2s"
timeout = "12s"
[[group]]
name = "nas"
size = 4
think = "50ms"
sources = "127.0.0.50-127.0.0.53"
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
    assert_eq!((rep.misdelivered, rep.breaches), (0, 0), "{name}");
    let g = rep.groups.iter().find(|g| g.name == "nas").unwrap();
    assert_eq!(g.success_rate, 1.0, "{name}: {g:?}");
    assert_eq!(g.outcomes[&Outcome::Timeout], 0, "{name}");
    g.outcomes[&Outcome::Success]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_radius_1_1_carries_pap_eap_accounting_and_status_server() {
    let _x = crate::server_support::exclusive();
    let r = start_radsec(
        |f| f.radius_1_1 = "require".into(),
        move |c| {
            // EAP-TTLS with the RadSec server's own certificate (the lab trusts its CA).
            let rs = c.radius.radsec.clone().unwrap();
            let eap = EapConfig::from_file(FileEap {
                cert: Some(rs.cert.clone()),
                key: Some(rs.key.clone()),
                client_ca: Some(rs.client_ca.clone()),
                methods: vec!["ttls".into()],
                ..FileEap::default()
            })
            .unwrap()
            .unwrap();
            c.radius.eap = Some(eap);
        },
    )
    .await;
    for i in 0..4 {
        r.s.add_user(&format!("lab-client-{i}"), &format!("lab-secret-{i}"))
            .await;
    }
    let pap = lab_v11(&r, "pap", "").await;
    assert!(pap > 4, "{pap}");
    let status = r.s.get("/status.json").await.json();
    assert_eq!(
        status["radius"]["nas"]["ap2"]["accepts"].as_u64(),
        Some(pap),
        "{}",
        status["radius"]
    );

    let eap = lab_v11(
        &r,
        "eap",
        &format!(
            "eap = {{ method = \"ttls\", ca = \"{}\" }}",
            r.certs.ca.display()
        ),
    )
    .await;
    assert!(eap >= 4, "{eap}");
    let status = r.s.get("/status.json").await.json();
    assert_eq!(
        status["radius"]["nas"]["ap2"]["accepts"].as_u64(),
        Some(pap + eap),
        "every EAP accept the lab verified (keys in the clear) is the server's"
    );

    let records = lab_v11(&r, "acct", "accounting = true").await;
    assert!(records > 4, "{records}");
    let out = cli(r.s.dir.path(), &["acct", "export", "--format", "jsonl"], "");
    let stored = out
        .lines()
        .filter(|l| l.contains("\"nas\":\"ap2\""))
        .count() as u64;
    assert_eq!(stored, records, "acknowledged {records}, stored {stored}");

    r.s.add_user("fred", "fr3d's password").await;
    let addr = r.addr;
    let (ca, ap1) = (r.certs.ca.clone(), r.certs.ap1.clone());
    tokio::task::spawn_blocking(move || {
        let mut c = connect(addr, client_config(&ca, Some(&ap1), &[ALPN_11])).unwrap();
        assert_eq!(c.conn.alpn_protocol(), Some(ALPN_11));
        let status = v11::encode_request(Code::StatusServer, [0, 0, 0, 0], &[]).unwrap();
        assert_eq!(trip_v11(&mut c, &status, [0; 4]), Code::AccessAccept);
        let good = request_v11([9, 9, 9, 1], "fred", b"fr3d's password");
        assert_eq!(trip_v11(&mut c, &good, [9, 9, 9, 1]), Code::AccessAccept);
        // The RFC 2865 way with "radsec": no MD5 here, so these are wrong octets.
        let mut authenticator = [0u8; 16];
        authenticator[..4].copy_from_slice(&[9, 9, 9, 2]);
        let hidden = hide_user_password(b"fr3d's password", RADSEC, &authenticator).unwrap();
        let md5 = request_v11([9, 9, 9, 2], "fred", &hidden);
        assert_eq!(trip_v11(&mut c, &md5, [9, 9, 9, 2]), Code::AccessReject);
        // A Message-Authenticator, even a garbage one, is ignored (RFC 9765 §5.2).
        let mut with_ma = request_v11([9, 9, 9, 3], "fred", b"fr3d's password");
        with_ma.extend_from_slice(&[attr::MESSAGE_AUTHENTICATOR, 18]);
        with_ma.extend_from_slice(&[0xee; 16]);
        let len = with_ma.len() as u16;
        with_ma[2..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(trip_v11(&mut c, &with_ma, [9, 9, 9, 3]), Code::AccessAccept);
    })
    .await
    .unwrap();
}

/// Whether the peer closed `c` (EOF or error) before sending anything more.
fn closed(c: &mut Conn) -> bool {
    let mut b = [0u8; 1];
    matches!(c.read(&mut b), Ok(0) | Err(_))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_radius_1_1_negotiation_follows_rfc_9765() {
    let _x = crate::server_support::exclusive();
    for mode in ["allow", "require", "off"] {
        let r = start_radsec(|f| f.radius_1_1 = mode.into(), |_| {}).await;
        r.s.add_user("fred", "fr3d's password").await;
        let before = refusals(&r).await;
        let addr = r.addr;
        let (ca, ap1) = (r.certs.ca.clone(), r.certs.ap1.clone());
        tokio::task::spawn_blocking(move || {
            let offer = |alpn: &[&[u8]]| connect(addr, client_config(&ca, Some(&ap1), alpn));
            // RADIUS/1.0 (RFC 6614): MD5 with "radsec", verified by `login`.
            let speaks_1_0 = |c: &mut Conn| {
                assert_eq!(
                    login(c, 7, "fred", "fr3d's password").unwrap(),
                    Code::AccessAccept
                );
            };
            let speaks_1_1 = |c: &mut Conn| {
                let req = request_v11([1, 2, 3, 4], "fred", b"fr3d's password");
                assert_eq!(trip_v11(c, &req, [1, 2, 3, 4]), Code::AccessAccept);
            };
            match mode {
                "allow" => {
                    let mut none = offer(&[]).unwrap();
                    assert_eq!(none.conn.alpn_protocol(), None);
                    speaks_1_0(&mut none);
                    let mut old = offer(&[ALPN_10]).unwrap();
                    assert_eq!(old.conn.alpn_protocol(), Some(ALPN_10));
                    speaks_1_0(&mut old);
                    let mut both = offer(&[ALPN_10, ALPN_11]).unwrap();
                    assert_eq!(both.conn.alpn_protocol(), Some(ALPN_11), "the highest");
                    speaks_1_1(&mut both);
                    // Nothing in common: the handshake fails (no_application_protocol).
                    assert!(offer(&[b"h2"]).is_err());
                }
                "require" => {
                    assert!(offer(&[ALPN_10]).is_err(), "a 1.0-only NAS got through");
                    let mut none = offer(&[]).unwrap();
                    let raw = read_packet(&mut none).unwrap();
                    let p = Packet::parse(&raw).unwrap();
                    assert_eq!(p.code, Code::Other(v11::PROTOCOL_ERROR));
                    assert_eq!(v11::token(&p), [0; 4]);
                    assert_eq!(
                        p.attr(v11::ERROR_CAUSE),
                        Some(&v11::UNSUPPORTED_EXTENSION.to_be_bytes()[..])
                    );
                    assert!(closed(&mut none), "left open after the Protocol-Error");
                    let mut new = offer(&[ALPN_11]).unwrap();
                    speaks_1_1(&mut new);
                }
                _ => {
                    let mut c = offer(&[ALPN_11]).unwrap();
                    assert_eq!(c.conn.alpn_protocol(), None, "off answers no ALPN");
                    speaks_1_0(&mut c);
                }
            }
        })
        .await
        .unwrap();
        // Each refusal is counted (the server counts after the client saw it: wait for
        // the count, with a deadline). The metrics recorder is the test process's, shared
        // by every server it started: compare with the count before this mode's runs.
        let expected = match mode {
            "allow" => 1.0,
            "require" => 2.0,
            _ => 0.0,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let refused = refusals(&r).await - before;
            if refused == expected {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{mode}: refusals {refused}, expected {expected}"
            );
            tokio::task::yield_now().await;
        }
    }
}

/// `portcullis_radsec_connections_total{outcome="no_common_version"}` (0 when absent).
async fn refusals(r: &RadsecServer) -> f64 {
    let metrics = String::from_utf8(r.s.get("/metrics").await.body).unwrap();
    metrics
        .lines()
        .find(|l| {
            l.starts_with("portcullis_radsec_connections_total") && l.contains("no_common_version")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
}
