//! Issue 41, item 2: accounting retransmissions, with real datagrams. A copy of a record
//! that FreeRADIUS' `radclient` sends again with an updated Acct-Delay-Time (so a new
//! Identifier and authenticator, RFC 2866 §5.2) and no Event-Timestamp is answered and
//! stored once; the very same datagram again after the duplicate cache forgot it (bounded
//! cache, a later second) is answered and stored once; a record that waited in the queue
//! past `[accounting] max_queue_age_ms` is neither stored nor answered, counted as
//! `stale`, and stored when the NAS sends it again; one committed after it (issue 41
//! item 8) is stored, answered and counted as a late answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use portcullis_radius::{attr, encode_accounting_request, verify_response};
use portcullis_server::radius::ThreadPriority;

use crate::acct::{authenticator, counters, export, hold_write_lock, start, wait_counter};
use crate::radius_support::{Nas, SECRET, radclient};

/// The records `portcullis acct export` holds for session `id`.
fn stored(r: &crate::radius_support::RadiusServer, id: &str) -> usize {
    export(r).iter().filter(|x| x["session_id"] == id).count()
}

/// An Interim-Update of session `session` without Event-Timestamp (the server dates it
/// arrival minus Acct-Delay-Time), with a Message-Authenticator.
fn interim(id: u8, session: &str, session_time: u32) -> Vec<u8> {
    let (st, tm) = (3u32.to_be_bytes(), session_time.to_be_bytes());
    let attrs: Vec<(u8, &[u8])> = vec![
        (attr::ACCT_STATUS_TYPE, &st),
        (attr::ACCT_SESSION_ID, session.as_bytes()),
        (attr::USER_NAME, b"fred"),
        (attr::ACCT_SESSION_TIME, &tm),
    ];
    encode_accounting_request(id, &attrs, SECRET, true).unwrap()
}

/// Unix seconds now, as the server's clock reads it.
fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_radclient_copy_with_a_new_acct_delay_time_and_no_event_timestamp_is_stored_once()
{
    let (r, acct) = start(|_| {}).await;
    let run = |attrs: String| {
        tokio::task::spawn_blocking(move || {
            radclient(
                acct,
                "acct",
                std::str::from_utf8(SECRET).unwrap(),
                &attrs,
                1,
                10,
            )
        })
    };
    let record = "Acct-Status-Type = Interim-Update, Acct-Session-Id = \"d-1\", \
                  User-Name = fred, Acct-Input-Octets = 1000, Acct-Session-Time = 60";
    let (ok, out) = run(format!("{record}, Acct-Delay-Time = 0")).await.unwrap();
    assert!(ok && out.contains("Received Accounting-Response"), "{out}");
    // The NAS heard nothing and sends the record again with Acct-Delay-Time updated: a
    // new packet (radclient picks its own Identifier and authenticator). Sent at once
    // here, so the event time the server derives (arrival minus delay) is 5 s before the
    // first copy's, where a real NAS's copy lands a second or two off (rounding, transit).
    let (ok, out) = run(format!("{record}, Acct-Delay-Time = 5")).await.unwrap();
    assert!(ok && out.contains("Received Accounting-Response"), "{out}");
    assert_eq!(stored(&r, "d-1"), 1, "a copy is stored once");
    assert_eq!(counters(&r, "lab").await["duplicates"], 1);
    assert_eq!(
        export(&r)[0]["delay"],
        "0",
        "the first copy is the one kept"
    );
    // The next Interim of the session (its counters moved) is a record of its own, though
    // its derived event time is as close.
    let next = "Acct-Status-Type = Interim-Update, Acct-Session-Id = \"d-1\", \
                User-Name = fred, Acct-Input-Octets = 1500, Acct-Session-Time = 61, \
                Acct-Delay-Time = 5";
    let (ok, out) = run(next.to_owned()).await.unwrap();
    assert!(ok && out.contains("Received Accounting-Response"), "{out}");
    assert_eq!(stored(&r, "d-1"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_same_datagram_after_the_duplicate_cache_forgot_it_is_stored_once() {
    // The smallest duplicate cache: 16 other requests evict the first.
    let (r, acct) = start(|c| c.radius.duplicate_cache_entries = 16).await;
    let nas = Nas::bind("127.0.0.8:0", acct).await;
    let first = interim(0, "c-1", 60);
    nas.send(&first).await;
    let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
    verify_response(&raw, &authenticator(&first), SECRET, false).unwrap();
    let answered_in = unix_secs();
    for i in 1..=16u8 {
        let other = interim(i, &format!("evict-{i}"), 60);
        nas.send(&other).await;
        let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
        verify_response(&raw, &authenticator(&other), SECRET, false).unwrap();
    }
    // Its answer was lost; the NAS sends the same datagram again (RFC 5080 §2.2.1: same
    // Identifier and authenticator, Acct-Delay-Time not updated), in a later second than
    // the first arrived in (so arrival minus delay differs).
    let deadline = Instant::now() + Duration::from_secs(5);
    while unix_secs() <= answered_in {
        assert!(Instant::now() < deadline, "the clock did not move");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    nas.send(&first).await;
    let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
    verify_response(&raw, &authenticator(&first), SECRET, false).unwrap();
    assert_eq!(stored(&r, "c-1"), 1, "the same datagram is stored once");
    assert_eq!(counters(&r, "lab").await["duplicates"], 1);
    assert_eq!(export(&r).len(), 17);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_a_record_queued_past_max_queue_age_is_dropped_unanswered() {
    let _heavy = crate::server_support::exclusive();
    let age = Duration::from_millis(500);
    let (r, acct) = start(|c| {
        c.accounting.max_batch = 1;
        // The writer takes the first record at once, not after the cap (not starved).
        c.accounting.priority = ThreadPriority::Normal;
        c.accounting.max_queue_age = age;
    })
    .await;
    let nas = Nas::bind("127.0.0.8:0", acct).await;
    let mut lock = hold_write_lock(&r).await;
    let requests: Vec<Vec<u8>> = (0..5u8)
        .map(|i| interim(i, &format!("q-{i}"), 60))
        .collect();
    for req in &requests {
        nas.send(req).await;
    }
    wait_counter(&r, "lab", &["requests"], 5).await;
    // All five arrived before this instant. The writer holds one (max_batch 1, its commit
    // waits for the lock); the other four wait in the queue until they are older than
    // the cap.
    let all_in = Instant::now();
    while all_in.elapsed() <= age * 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(nas.nothing_queued(), "answered before the commit");
    sqlx::query("ROLLBACK").execute(&mut lock).await.unwrap();
    drop(lock);
    // The four behind it are dropped when the writer comes to them (or, had the door
    // already timed the stuck commit when they arrived, at the door: `late`).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = counters(&r, "lab").await;
        let shed = c["dropped"]["stale"].as_u64().unwrap() + c["dropped"]["late"].as_u64().unwrap();
        if shed == 4 {
            break;
        }
        assert!(Instant::now() < deadline, "{c}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The one in the writer's hands is stored and answered, committed after the cap.
    let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
    let taken = usize::from(raw[1]);
    verify_response(&raw, &authenticator(&requests[taken]), SECRET, false).unwrap();
    assert_eq!(export(&r).len(), 1, "stale records are not stored");
    let status = r.s.get("/status.json").await.json();
    assert_eq!(
        status["radius"]["accounting"]["late_answers"], 1,
        "{status}"
    );
    // A fresh record goes through at once: its answer comes, and none for the others.
    let fresh = interim(9, "fresh", 60);
    nas.send(&fresh).await;
    let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
    assert_eq!(raw[1], 9, "a stale or late record was answered");
    assert!(nas.nothing_queued(), "a stale or late record was answered");
    assert_eq!(export(&r).len(), 2, "stale records are not stored");
    // The NAS sends them again: they are new work now (not "in progress"), stored and
    // answered.
    for (i, req) in requests.iter().enumerate().filter(|(i, _)| *i != taken) {
        nas.send(req).await;
        let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
        assert_eq!(usize::from(raw[1]), i);
    }
    assert_eq!(export(&r).len(), 6);
    let c = counters(&r, "lab").await;
    assert!(c["dropped"]["stale"].as_u64().unwrap() >= 1, "{c}");
    // The series (the Prometheus recorder is shared by every server of this process).
    let metrics = String::from_utf8(r.s.get("/metrics").await.body).unwrap();
    assert!(
        metrics.contains("portcullis_acct_dropped_total{nas=\"lab\",reason=\"stale\"} "),
        "{metrics}"
    );
}
