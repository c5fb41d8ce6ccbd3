//! Issue 28's part of the crash-consistency test (`crash.rs`): an accounting storm from a
//! NAS that records every Accounting-Response it received, raced against the same SIGKILLs.
//! After the last restart every acknowledged record must be in the store, each once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portcullis_radius::{attr, encode_accounting_request, verify_response};

use crate::process_support::Serve;

/// The NAS's shared secret in the crash test.
pub const SECRET: &str = "crash test accounting secret";

/// Acknowledged (session id, status) pairs.
pub type Acked = Arc<Mutex<BTreeSet<(String, u32)>>>;

/// The accounting address `serve` logged (bounded wait: it is logged as the door starts).
pub fn acct_addr(srv: &Serve) -> SocketAddr {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = srv.log.lock().unwrap().iter().find_map(|l| {
            l.split("RADIUS accounting listening on udp ")
                .nth(1)
                .and_then(|a| a.trim().parse().ok())
        });
        if let Some(a) = found {
            return a;
        }
        assert!(Instant::now() < deadline, "no accounting address logged");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Send bursts of Accounting-Requests (Start then Stop per session, and every Stop sent
/// twice with a new identifier and a larger Acct-Delay-Time, as a NAS that heard nothing
/// does) until `stop`, noting each request whose verified Accounting-Response came back.
pub fn storm(addr: SocketAddr, round: usize, stop: Arc<AtomicBool>, acked: Acked) {
    let sock = UdpSocket::bind("127.0.0.9:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut n = 0u32;
    let mut id = 0u8;
    while !stop.load(Ordering::Relaxed) {
        // One burst: id -> (authenticator, session, status).
        let mut sent: BTreeMap<u8, ([u8; 16], String, u32)> = BTreeMap::new();
        for _ in 0..16 {
            let session = format!("r{round}-{}", n / 3);
            // Start and Stop of a session share this event time; the Stop's second copy
            // repeats it (Event-Timestamp is the event's, whatever the delay).
            let ts = (1_700_000_000 + n / 3).to_be_bytes();
            let (status, delay) = match n % 3 {
                0 => (1u32, 0u32),
                1 => (2, 0),
                _ => (2, 5),
            };
            n += 1;
            let (st, dl) = (status.to_be_bytes(), delay.to_be_bytes());
            let attrs: Vec<(u8, &[u8])> = vec![
                (attr::ACCT_STATUS_TYPE, &st),
                (attr::ACCT_SESSION_ID, session.as_bytes()),
                (attr::USER_NAME, b"crash"),
                (attr::EVENT_TIMESTAMP, &ts),
                (attr::ACCT_DELAY_TIME, &dl),
            ];
            let packet = encode_accounting_request(id, &attrs, SECRET.as_bytes(), false).unwrap();
            if sock.send_to(&packet, addr).is_err() {
                return;
            }
            sent.insert(id, (packet[4..20].try_into().unwrap(), session, status));
            id = id.wrapping_add(1);
        }
        let mut buf = [0u8; 4096];
        while !sent.is_empty() {
            let Ok((len, _)) = sock.recv_from(&mut buf) else {
                break;
            };
            let Some((auth, _, _)) = sent.get(&buf[1]) else {
                continue;
            };
            if verify_response(&buf[..len], auth, SECRET.as_bytes(), false).is_ok()
                && let Some((_, session, status)) = sent.remove(&buf[1])
            {
                acked.lock().unwrap().insert((session, status));
            }
        }
    }
}

/// Check the store (through `portcullis acct export`, the server stopped): every
/// acknowledged (session, status) is there, and each (session, status) once.
pub fn check(data: &Path, acked: &Acked) -> (usize, Vec<String>) {
    let out = crate::process_support::cli(
        data,
        &[
            "acct",
            "export",
            "--format",
            "jsonl",
            "--limit",
            "100000000",
        ],
        "",
    );
    let mut stored: BTreeMap<(String, u32), usize> = BTreeMap::new();
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let status = match v["status"].as_str().unwrap() {
            "Start" => 1,
            "Stop" => 2,
            other => panic!("unexpected status {other}"),
        };
        let key = (v["session_id"].as_str().unwrap().to_owned(), status);
        *stored.entry(key).or_default() += 1;
    }
    let acked = acked.lock().unwrap();
    let mut lost: Vec<String> = acked
        .iter()
        .filter(|k| !stored.contains_key(*k))
        .map(|k| format!("accounting record {k:?}"))
        .collect();
    lost.extend(
        stored
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, n)| format!("accounting record {k:?} stored {n} times")),
    );
    (acked.len(), lost)
}
