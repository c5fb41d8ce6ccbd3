//! Issue 28: RADIUS accounting. An unmodified `radclient ... acct` (Debian
//! freeradius-utils, installed by ./scripts/test; a missing client FAILS the test) gets
//! its Accounting-Response and the record shows in `portcullis acct sessions`; a NAS that
//! retransmits with a new identifier and a larger Acct-Delay-Time is answered again and
//! stored once; Accounting-On closes the NAS's open sessions; forged requests get no
//! answer; and no answer ever leaves before its record is committed: while another
//! connection holds SQLite's write lock nothing is acknowledged, a full queue drops
//! (counted, unanswered), and releasing the lock answers exactly what was queued.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use portcullis_radius::{Code, attr, encode_accounting_request, verify_response};
use portcullis_server::radius::ThreadPriority;
use sqlx::Connection;

use crate::process_support::cli;
use crate::radius_support::{
    Nas, RadiusServer, SECRET, radclient, start_radius, start_radius_nases,
};

/// A server with RADIUS auth and accounting on loopback port 0 and NAS `lab` for
/// 127.0.0.0/8.
pub(crate) async fn start(
    tweak: impl FnOnce(&mut portcullis_server::Config),
) -> (RadiusServer, SocketAddr) {
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.accounting_listen = vec!["127.0.0.1:0".parse().unwrap()];
        tweak(c);
    })
    .await;
    let acct = r.s.server.accounting_addrs()[0];
    (r, acct)
}

/// `portcullis acct sessions --json ARGS` on the server's data directory.
fn sessions(r: &RadiusServer, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["acct", "sessions", "--json"];
    all.extend_from_slice(args);
    let out = cli(r.s.dir.path(), &all, "");
    serde_json::from_str::<serde_json::Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// `portcullis acct export` lines (JSON) on the server's data directory.
pub(crate) fn export(r: &RadiusServer) -> Vec<serde_json::Value> {
    cli(r.s.dir.path(), &["acct", "export", "--format", "jsonl"], "")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The accounting counters of NAS `nas` from `/status.json`.
pub(crate) async fn counters(r: &RadiusServer, nas: &str) -> serde_json::Value {
    r.s.get("/status.json").await.json()["radius"]["accounting"]["nas"][nas].clone()
}

/// Wait (bounded) until `nas`'s counter at `path` reaches `want`.
pub(crate) async fn wait_counter(r: &RadiusServer, nas: &str, path: &[&str], want: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut v = counters(r, nas).await;
        for p in path {
            v = v[*p].clone();
        }
        if v.as_u64() == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{nas} {path:?} = {v}, want {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An Accounting-Request built with the codec, with Event-Timestamp `t`.
fn acct_request(id: u8, session: &str, status: u32, t: u32, delay: u32) -> Vec<u8> {
    let (st, ts, dl) = (status.to_be_bytes(), t.to_be_bytes(), delay.to_be_bytes());
    let attrs: Vec<(u8, &[u8])> = vec![
        (attr::ACCT_STATUS_TYPE, &st),
        (attr::ACCT_SESSION_ID, session.as_bytes()),
        (attr::USER_NAME, b"bulk"),
        (attr::EVENT_TIMESTAMP, &ts),
        (attr::ACCT_DELAY_TIME, &dl),
    ];
    encode_accounting_request(id, &attrs, SECRET, false).unwrap()
}

/// The Request Authenticator of a request we built (to check its reply).
pub(crate) fn authenticator(req: &[u8]) -> [u8; 16] {
    req[4..20].try_into().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_radclient_acct_is_answered_and_its_sessions_show() {
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
    let start = "Acct-Status-Type = Start, Acct-Session-Id = \"s-1\", User-Name = fred, \
                 Calling-Station-Id = \"02-00-00-00-00-01\", Framed-IP-Address = 10.1.2.3, \
                 Event-Timestamp = 1700000000";
    let (ok, out) = run(start.to_owned()).await.unwrap();
    assert!(ok && out.contains("Received Accounting-Response"), "{out}");
    let online = sessions(&r, &["--active"]);
    assert_eq!(online.len(), 1, "{online:?}");
    assert_eq!(online[0]["user"], "fred");
    assert_eq!(online[0]["address"], "10.1.2.3");
    assert_eq!(online[0]["started_at"], "2023-11-14T22:13:20Z");

    // The NAS heard nothing and retries with a new identifier and a larger delay: same
    // event, answered again, stored once.
    let (ok, out) = run(format!("{start}, Acct-Delay-Time = 7")).await.unwrap();
    assert!(ok && out.contains("Received Accounting-Response"), "{out}");
    assert_eq!(export(&r).len(), 1, "a retransmission is stored once");
    assert_eq!(counters(&r, "lab").await["duplicates"], 1);

    // Interim with Gigawords, then Stop: one closed session with the Stop's counters.
    let interim = "Acct-Status-Type = Interim-Update, Acct-Session-Id = \"s-1\", \
                   User-Name = fred, Acct-Input-Octets = 10, Acct-Input-Gigawords = 1, \
                   Acct-Session-Time = 60, Event-Timestamp = 1700000060";
    let (ok, out) = run(interim.to_owned()).await.unwrap();
    assert!(ok, "{out}");
    let stop = "Acct-Status-Type = Stop, Acct-Session-Id = \"s-1\", User-Name = fred, \
                Acct-Input-Octets = 20, Acct-Input-Gigawords = 1, Acct-Output-Octets = 5, \
                Acct-Session-Time = 120, Acct-Terminate-Cause = User-Request, \
                Event-Timestamp = 1700000120";
    let (ok, out) = run(stop.to_owned()).await.unwrap();
    assert!(ok, "{out}");
    assert!(sessions(&r, &["--active"]).is_empty());
    // "Who had 10.1.2.3 at 22:14?" fred; at 22:16 (after the Stop) nobody.
    let at = sessions(
        &r,
        &["--address", "10.1.2.3", "--at", "2023-11-14T22:14:00Z"],
    );
    assert_eq!(at.len(), 1);
    assert_eq!(at[0]["input_octets"], (1u64 << 32) + 20);
    assert_eq!(at[0]["terminate_cause"], 1);
    assert!(sessions(&r, &["--address", "10.1.2.3", "--at", "1700000200"]).is_empty());

    // Two sessions open, then the NAS reboots: Accounting-On closes both.
    for s in ["s-2", "s-3"] {
        let (ok, out) = run(format!(
            "Acct-Status-Type = Start, Acct-Session-Id = \"{s}\", User-Name = ann, \
             Event-Timestamp = 1700000300"
        ))
        .await
        .unwrap();
        assert!(ok, "{out}");
    }
    assert_eq!(sessions(&r, &["--active", "--user", "ann"]).len(), 2);
    // The status page counts them (refreshed every 5 s).
    let deadline = Instant::now() + Duration::from_secs(20);
    while r.s.get("/status.json").await.json()["radius"]["accounting"]["sessions_online"] != 2 {
        assert!(Instant::now() < deadline, "sessions_online never reached 2");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (ok, out) = run("Acct-Status-Type = Accounting-On, Event-Timestamp = 1700000400".into())
        .await
        .unwrap();
    assert!(ok, "{out}");
    assert!(sessions(&r, &["--active"]).is_empty());
    let ann = sessions(&r, &["--user", "ann"]);
    assert!(
        ann.iter()
            .all(|s| s["stopped_at"] == "2023-11-14T22:20:00Z"),
        "{ann:?}"
    );

    let records = export(&r);
    assert_eq!(records.len(), 6);
    let first = records
        .iter()
        .find(|r| r["session_id"] == "s-1" && r["status"] == "Start")
        .unwrap();
    assert_eq!(first["address"], "10.1.2.3");
    assert_eq!(first["delay"], "0", "the original, not the retransmission");
    assert!(
        first["attributes"].as_str().unwrap().contains("0a010203"),
        "raw attributes kept: {first}"
    );
    let csv = cli(r.s.dir.path(), &["acct", "export", "--format", "csv"], "");
    assert_eq!(csv.lines().count(), 7, "header and six records");
    let c = counters(&r, "lab").await;
    assert_eq!(c["records"]["start"], 3);
    assert_eq!(c["records"]["accounting_on"], 1);
    // With a Message-Authenticator (radclient computes it as RFC 3579 does for
    // accounting): checked and accepted.
    let (ok, out) = run("Acct-Status-Type = Start, Acct-Session-Id = \"s-ma\", \
                         User-Name = mia, Message-Authenticator = 0x00"
        .into())
    .await
    .unwrap();
    assert!(ok && out.contains("Received Accounting-Response"), "{out}");
    assert_eq!(sessions(&r, &["--user", "mia"]).len(), 1);
    // This server's own count; the Prometheus recorder is shared by every server this
    // test process starts (other tests also name a NAS "lab"), so there only the series.
    assert_eq!(counters(&r, "lab").await["records"]["stop"], 1);
    let metrics = String::from_utf8(r.s.get("/metrics").await.body).unwrap();
    assert!(
        metrics.contains("portcullis_acct_records_total{nas=\"lab\",status=\"stop\"} "),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_forged_and_unknown_requests_get_no_answer() {
    let (r, acct) = start(|_| {}).await;
    let nas = Nas::bind("127.0.0.7:0", acct).await;
    // Signed with another secret: its Request Authenticator does not verify.
    let st = 1u32.to_be_bytes();
    let forged = encode_accounting_request(
        1,
        &[(attr::ACCT_STATUS_TYPE, &st), (attr::ACCT_SESSION_ID, b"f")],
        b"not the shared secret",
        false,
    )
    .unwrap();
    nas.send(&forged).await;
    // A good one after it; datagrams from one socket are handled in order, so once it is
    // answered the forged one was judged.
    let good = acct_request(2, "g", 1, 1_700_000_000, 0);
    nas.send(&good).await;
    let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
    let reply = verify_response(&raw, &authenticator(&good), SECRET, false).unwrap();
    assert_eq!(
        (reply.code, reply.identifier),
        (Code::AccountingResponse, 2)
    );
    let c = counters(&r, "lab").await;
    assert_eq!(c["dropped"]["bad_authenticator"], 1, "{c}");
    assert!(nas.nothing_queued(), "the forged request got an answer");
    assert_eq!(export(&r).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_nothing_is_acknowledged_before_its_commit_and_a_full_queue_drops() {
    let _heavy = crate::server_support::exclusive();
    let (r, acct) = start(|c| {
        c.accounting.queue = 4;
        c.accounting.queue_per_nas = 4;
        c.accounting.max_batch = 1;
        // The lock is held for as long as the test takes: nothing ages out meanwhile.
        c.accounting.max_queue_age = Duration::from_secs(600);
    })
    .await;
    let nas = Nas::bind("127.0.0.8:0", acct).await;
    let mut lock = hold_write_lock(&r).await;
    let n = 12u8;
    let requests: Vec<Vec<u8>> = (0..n)
        .map(|i| acct_request(i, &format!("q-{i}"), 1, 1_700_000_000, 0))
        .collect();
    for req in &requests {
        nas.send(req).await;
    }
    wait_counter(&r, "lab", &["requests"], u64::from(n)).await;
    // The queue is full exactly when the NAS holds all of it (queue_per_nas = queue): the
    // share refuses first.
    let c = counters(&r, "lab").await;
    let dropped =
        c["dropped"]["overload"].as_u64().unwrap() + c["dropped"]["nas_share"].as_u64().unwrap();
    // One record in the writer's hands (max_batch 1) and four queued, or four if the
    // writer had not taken the first yet when the rest arrived.
    assert!((7..=8).contains(&dropped), "dropped {dropped}");
    assert!(
        nas.nothing_queued(),
        "an Accounting-Response left before its record was committed"
    );
    sqlx::query("ROLLBACK").execute(&mut lock).await.unwrap();
    lock.close().await.unwrap();
    let accepted = u64::from(n) - dropped;
    let mut answered = std::collections::BTreeSet::new();
    for _ in 0..accepted {
        let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
        let id = raw[1];
        verify_response(
            &raw,
            &authenticator(&requests[usize::from(id)]),
            SECRET,
            false,
        )
        .unwrap();
        answered.insert(id);
    }
    assert_eq!(
        export(&r).len() as u64,
        accepted,
        "exactly the acknowledged ones"
    );
    // The NAS retransmits the dropped ones: now they are stored and answered.
    for (i, req) in requests.iter().enumerate() {
        if !answered.contains(&(i as u8)) {
            nas.send(req).await;
            let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
            assert_eq!(raw[1], i as u8);
        }
    }
    assert_eq!(export(&r).len(), usize::from(n));
    // A copy of an answered request (same bytes) is answered from the duplicate cache.
    nas.send(&requests[0]).await;
    let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
    verify_response(&raw, &authenticator(&requests[0]), SECRET, false).unwrap();
    assert_eq!(export(&r).len(), usize::from(n));
}

/// Take SQLite's write lock from another connection: no commit can happen until it goes.
pub(crate) async fn hold_write_lock(r: &RadiusServer) -> sqlx::SqliteConnection {
    let db = r.s.dir.path().join("portcullis.db");
    let mut lock = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut lock)
        .await
        .unwrap();
    lock
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_one_nas_storm_leaves_the_other_nases_their_places_in_the_queue() {
    let _heavy = crate::server_support::exclusive();
    // NAS `storm` behind 127.0.0.8 (a rebooted controller), NAS `quiet` at 127.0.0.9.
    let r = start_radius_nases(
        "127.0.0.1:0",
        &[("storm", "127.0.0.8/32"), ("quiet", "127.0.0.9/32")],
        |c| {
            c.radius.accounting_listen = vec!["127.0.0.1:0".parse().unwrap()];
            c.accounting.queue = 8;
            c.accounting.queue_per_nas = 2;
            c.accounting.max_batch = 1;
            c.accounting.max_queue_age = Duration::from_secs(600);
        },
    )
    .await;
    let acct = r.s.server.accounting_addrs()[0];
    let (storm, quiet) = (
        Nas::bind("127.0.0.8:0", acct).await,
        Nas::bind("127.0.0.9:0", acct).await,
    );
    // The writer is stuck: whatever is admitted stays queued while the storm goes on.
    let mut lock = hold_write_lock(&r).await;
    let n = 40u8;
    for i in 0..n {
        storm
            .send(&acct_request(i, &format!("storm-{i}"), 1, 1_700_000_000, 0))
            .await;
    }
    wait_counter(&r, "storm", &["requests"], u64::from(n)).await;
    let c = counters(&r, "storm").await;
    let share = c["dropped"]["nas_share"].as_u64().unwrap();
    // Its share (2) queued plus the one in the writer's hands, or just its share.
    assert!((37..=38).contains(&share), "{c}");
    assert_eq!(c["dropped"]["overload"], 0, "{c}");
    // The quiet NAS's records still find places (without the share, the storm's 8 would
    // fill the queue and these would be dropped as overload).
    let quiet_requests: Vec<Vec<u8>> = (0..2u8)
        .map(|i| acct_request(i, &format!("quiet-{i}"), 1, 1_700_000_100, 0))
        .collect();
    for req in &quiet_requests {
        quiet.send(req).await;
    }
    wait_counter(&r, "quiet", &["requests"], 2).await;
    let q = counters(&r, "quiet").await;
    assert_eq!(
        (
            q["dropped"]["overload"].as_u64(),
            q["dropped"]["nas_share"].as_u64()
        ),
        (Some(0), Some(0)),
        "{q}"
    );
    sqlx::query("ROLLBACK").execute(&mut lock).await.unwrap();
    lock.close().await.unwrap();
    for _ in 0..2 {
        let raw = quiet
            .recv(Duration::from_secs(20))
            .await
            .expect("no answer");
        let req = &quiet_requests[usize::from(raw[1])];
        assert_eq!(
            verify_response(&raw, &authenticator(req), SECRET, false)
                .unwrap()
                .code,
            Code::AccountingResponse
        );
    }
    let stored = export(&r);
    let of = |nas: &str| stored.iter().filter(|l| l["nas"] == nas).count();
    assert_eq!(of("quiet"), 2);
    assert_eq!(of("storm") as u64, u64::from(n) - share);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_accounting_on_off_and_refused_classes_are_audited() {
    let audit_dir = tempfile::tempdir().unwrap();
    let audit_file = audit_dir.path().join("acct-audit.jsonl");
    let path = audit_file.clone();
    let (r, acct) = start(move |c| {
        c.audit = portcullis_server::audit::AuditConfig {
            destination: portcullis_server::audit::Destination::File {
                path,
                max_bytes: 1 << 20,
                keep: 1,
            },
            per_source_limit: 1000,
            interval: Duration::from_secs(60),
        };
    })
    .await;
    let nas = Nas::bind("127.0.0.1:0", acct).await;
    // A Start (not audited by default), an Accounting-On and its retransmission with a
    // new identifier (stored once: audited once), an Accounting-Off.
    let t = 1_700_000_000;
    for (id, status, delay) in [(1u8, 1u32, 0u32), (2, 7, 0), (3, 7, 2), (4, 8, 0)] {
        let req = acct_request(id, "audit-1", status, t, delay);
        nas.send(&req).await;
        let raw = nas.recv(Duration::from_secs(20)).await.expect("no answer");
        verify_response(&raw, &authenticator(&req), SECRET, false).unwrap();
    }
    // Five forged requests (another secret): one refused class, one event.
    for id in 10..15u8 {
        let attrs: Vec<(u8, &[u8])> = vec![(attr::ACCT_STATUS_TYPE, &[0, 0, 0, 1])];
        let forged = encode_accounting_request(id, &attrs, b"not the secret", false).unwrap();
        nas.send(&forged).await;
    }
    wait_counter(&r, "lab", &["dropped", "bad_authenticator"], 5).await;
    r.s.server.shutdown().await.unwrap();

    let text = std::fs::read_to_string(&audit_file).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["protocol"] == "radius_accounting")
        .collect();
    let reasons: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["outcome"].as_str().unwrap(),
                e["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("accepted", "accounting_on"),
            ("accepted", "accounting_off"),
            ("dropped", "bad_authenticator"),
        ],
        "{text}"
    );
    assert!(events.iter().all(|e| e["client_id"] == "lab"), "{text}");
}

/// The machinery of the demo's "Accounting storm beside logins" section: PAP logins and
/// an accounting storm, two lab runs with their own drivers started together against one
/// server. Checked against the server itself, not the lab's report: the store holds at
/// least as many records as the lab saw acknowledged (every record it sends is distinct),
/// they were received while the logins ran, and the server counted at least the accepts
/// the lab saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_demo_storm_beside_logins_stores_every_acknowledged_record() {
    use portcullis_demo::acct_storm::{self, LOGIN_USERS};
    use portcullis_store::AccountingStore;

    let _heavy = crate::server_support::exclusive();
    let (r, acct) = start(|_| {}).await;
    r.put_lab_users(LOGIN_USERS).await;
    let (duration, timeout) = (Duration::from_secs(2), Duration::from_secs(5));
    let logins = acct_storm::logins(
        "logins",
        &format!("radius://{}", r.addr),
        SECRET,
        duration,
        timeout,
    )
    .unwrap();
    let storm = acct_storm::accounting(
        "storm",
        &format!("radius://{acct}"),
        SECRET,
        duration,
        timeout,
        Some(400.0),
    )
    .unwrap();
    let both = acct_storm::beside(&logins, &storm, "test").await.unwrap();

    let acks = acct_storm::acknowledged(&both.storm);
    let accepts = acct_storm::acknowledged(&both.logins);
    assert!(acks > 0 && accepts > 0, "acks {acks}, accepts {accepts}");
    let rows =
        r.s.data
            .store()
            .acct_records_since(0, u32::MAX)
            .await
            .unwrap();
    assert!(
        rows.len() as u64 >= acks,
        "{acks} records acknowledged, {} stored",
        rows.len()
    );
    let server_accepts = r.counters("lab").await["accepts"].as_u64().unwrap();
    assert!(server_accepts >= accepts, "{server_accepts} < {accepts}");
    // The storm's records arrived while the logins ran (unix seconds, so one either side),
    // or as a retransmission of a record sent then: the storm's NASes retransmit after 1 s,
    // twice, and a record the door dropped at arrival (`late`: it could not be committed
    // within max_queue_age_ms) is stored when a copy finds room, up to 2 s later.
    let rep = &both.logins.repeats[0];
    let (from, to) = (
        rep.started_unix - 1,
        rep.started_unix + rep.duration_s.ceil() as i64 + 1 + 2,
    );
    let during = rows
        .iter()
        .filter(|x| (from..=to).contains(&x.received_at))
        .count();
    assert_eq!(
        during,
        rows.len(),
        "records outside the login run [{from}, {to}]"
    );
}

/// Nice value of each of this process's threads whose name starts with `prefix` (Linux
/// truncates names to 15 bytes).
fn thread_nices(prefix: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue; // the thread ended meanwhile
        };
        let (open, close) = (stat.find('(').unwrap(), stat.rfind(')').unwrap());
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        // After the name: state, ppid, ... utime (12th), ..., priority (16th), nice (17th).
        let nice = stat[close + 2..].split(' ').nth(16).unwrap();
        out.push(nice.parse().unwrap());
    }
    out
}

/// An accounting storm must take only the CPU that logins leave: the door's receive
/// thread, its writer and the writer's own SQLite connection (whose worker thread SQLite
/// spawns at connect) run at `[accounting]`'s priority, while the hash pool and the
/// authentication door keep the process's priority. An unusual nice value (13) tells this
/// server's threads from those of the other tests in this process (the default is
/// SCHED_IDLE, which `priority.rs`' own test checks on a thread and the thread it starts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_accounting_threads_run_below_authentications_priority() {
    let (r, acct) = start(|c| c.accounting.priority = ThreadPriority::Nice(13)).await;
    let nas = Nas::bind("127.0.0.9:0", acct).await;
    let req = acct_request(7, "prio-1", 1, 1_700_000_000, 0);
    nas.send(&req).await;
    let reply = nas.recv(Duration::from_secs(20)).await.expect("an answer");
    let reply = verify_response(&reply, &authenticator(&req), SECRET, false).unwrap();
    assert_eq!(reply.code, Code::AccountingResponse);
    assert!(thread_nices("acct writer").contains(&13), "the writer");
    assert!(
        thread_nices("RADIUS accounti").contains(&13),
        "the receive thread"
    );
    assert!(
        thread_nices("sqlx-sqlite-wor").contains(&13),
        "the writer's SQLite connection (its statements and commits)"
    );
    for auth in ["RADIUS receive", "portcullis-hash"] {
        let nices = thread_nices(auth);
        assert!(!nices.is_empty(), "{auth}: no such thread");
        assert!(!nices.contains(&13), "{auth} runs at accounting's priority");
    }
    drop(r);
}
