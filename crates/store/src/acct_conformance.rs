//! The accounting part of the backend conformance suite (issue 28): what every backend's
//! [`AccountingStore::append_accounting`] and the session queries must do. Each check takes
//! `&dyn AccountingStore` and uses its own NAS names, so it runs on a store that is not
//! empty.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::accounting::{AcctRecord, SessionQuery, TERMINATE_NAS_REBOOT, status};
use crate::store::AccountingStore;

/// A record of `nas`/`session` with status `st` at `t`.
pub fn record(nas: &str, session: &str, st: i64, t: i64) -> AcctRecord {
    AcctRecord {
        nas: nas.to_owned(),
        session_id: session.to_owned(),
        status: st,
        event_time: t,
        received_at: t,
        delay: 0,
        username: Some(format!("user-{session}")),
        station: Some("02-00-00-00-00-01".into()),
        called_station: None,
        framed_ip: Some(format!("10.0.0.{}", session.len())),
        input_octets: None,
        output_octets: None,
        input_packets: None,
        output_packets: None,
        session_time: None,
        terminate_cause: None,
        attributes: vec![40, 6, 0, 0, 0, st as u8],
    }
}

fn query(nas: &str) -> SessionQuery {
    SessionQuery {
        nas: Some(nas.to_owned()),
        limit: 1000,
        ..SessionQuery::default()
    }
}

/// Run every accounting check.
pub async fn run_all(store: &dyn AccountingStore) {
    duplicates_are_stored_once_and_sessions_fold(store).await;
    out_of_order_records_fold_to_the_same_session(store).await;
    accounting_on_closes_only_its_nas_open_sessions(store).await;
    session_queries_filter_and_retention_prunes(store).await;
    concurrent_duplicates_store_exactly_one(store).await;
    a_large_batch_stores_and_folds_as_one_record_at_a_time(store).await;
    a_dedicated_handle_writes_the_same_database(store).await;
    copies_with_a_new_delay_or_a_later_arrival_are_stored_once(store).await;
}

/// Start, its retransmission (same key), Interim, Stop: three records, one closed session
/// with the Stop's counters; the same batch again: nothing new.
pub async fn duplicates_are_stored_once_and_sessions_fold(store: &dyn AccountingStore) {
    let nas = "acct-dup";
    let start = record(nas, "s1", status::START, 1_000);
    let mut retransmit = start.clone();
    retransmit.received_at = 1_003;
    retransmit.delay = 3;
    let mut interim = record(nas, "s1", status::INTERIM_UPDATE, 1_060);
    interim.input_octets = Some(5 << 32);
    interim.session_time = Some(60);
    let mut stop = record(nas, "s1", status::STOP, 1_120);
    stop.input_octets = Some(7 << 32);
    stop.output_octets = Some(9);
    stop.session_time = Some(120);
    stop.terminate_cause = Some(1);
    let batch = [start, retransmit, interim, stop];
    assert_eq!(
        store.append_accounting(&batch).await.unwrap(),
        [true, false, true, true]
    );
    assert_eq!(
        store.append_accounting(&batch).await.unwrap(),
        [false; 4],
        "a later batch's duplicates are not stored again"
    );
    let stored: Vec<AcctRecord> = store
        .acct_records_since(0, 100_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.nas == nas)
        .collect();
    assert_eq!(stored.len(), 3);
    assert_eq!(
        stored[0], batch[0],
        "every field and the raw attributes kept"
    );
    let sessions = store.acct_sessions(&query(nas)).await.unwrap();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert_eq!(
        (s.started_at, s.updated_at, s.stopped_at),
        (1_000, 1_120, Some(1_120))
    );
    assert_eq!((s.input_octets, s.output_octets), (Some(7 << 32), Some(9)));
    assert_eq!((s.session_time, s.terminate_cause), (Some(120), Some(1)));
    assert_eq!(s.username.as_deref(), Some("user-s1"));
}

/// A Stop stored before its Interim and Start: the session ends at the Stop, starts at
/// the earliest known start, and keeps the Stop's (latest) counters.
pub async fn out_of_order_records_fold_to_the_same_session(store: &dyn AccountingStore) {
    let nas = "acct-order";
    let mut stop = record(nas, "s2", status::STOP, 2_100);
    stop.session_time = Some(100);
    stop.input_octets = Some(100);
    let mut interim = record(nas, "s2", status::INTERIM_UPDATE, 2_050);
    interim.session_time = Some(50);
    interim.input_octets = Some(50);
    let start = record(nas, "s2", status::START, 1_999);
    for r in [stop, interim, start] {
        assert_eq!(store.append_accounting(&[r]).await.unwrap(), [true]);
    }
    let s = &store.acct_sessions(&query(nas)).await.unwrap()[0];
    assert_eq!((s.started_at, s.stopped_at), (1_999, Some(2_100)));
    assert_eq!((s.updated_at, s.input_octets), (2_100, Some(100)));
}

/// Accounting-On at T closes the NAS's sessions open before T (cause NAS-Reboot), not
/// another NAS's, not a session that started after T, not one already stopped.
pub async fn accounting_on_closes_only_its_nas_open_sessions(store: &dyn AccountingStore) {
    let (nas, other) = ("acct-on", "acct-on-other");
    let mut stopped = record(nas, "done", status::STOP, 3_010);
    stopped.terminate_cause = Some(1);
    let batch = [
        record(nas, "a", status::START, 3_000),
        record(nas, "b", status::START, 3_001),
        stopped,
        record(nas, "later", status::START, 3_200),
        record(other, "c", status::START, 3_000),
        record(nas, "", status::ACCOUNTING_ON, 3_100),
    ];
    assert_eq!(store.append_accounting(&batch).await.unwrap(), [true; 6]);
    let by_id = |v: &[crate::AcctSession], id: &str| {
        v.iter().find(|s| s.session_id == id).cloned().unwrap()
    };
    let sessions = store.acct_sessions(&query(nas)).await.unwrap();
    assert_eq!(sessions.len(), 4, "Accounting-On is not a session");
    for id in ["a", "b"] {
        let s = by_id(&sessions, id);
        assert_eq!(s.stopped_at, Some(3_100), "{id}");
        assert_eq!(s.terminate_cause, Some(TERMINATE_NAS_REBOOT));
    }
    let done = by_id(&sessions, "done");
    assert_eq!(
        (done.stopped_at, done.terminate_cause),
        (Some(3_010), Some(1))
    );
    assert_eq!(by_id(&sessions, "later").stopped_at, None);
    let others = store.acct_sessions(&query(other)).await.unwrap();
    assert_eq!(
        others[0].stopped_at, None,
        "another NAS's session stays open"
    );
}

/// `--user`, `--active`, `--at`, the address filter, and retention.
pub async fn session_queries_filter_and_retention_prunes(store: &dyn AccountingStore) {
    let nas = "acct-query";
    let mut early = record(nas, "e", status::START, 10_000);
    early.framed_ip = Some("10.1.2.3".into());
    let mut early_stop = record(nas, "e", status::STOP, 10_500);
    early_stop.framed_ip = Some("10.1.2.3".into());
    let mut late = record(nas, "late", status::START, 11_000);
    late.framed_ip = Some("10.1.2.3".into());
    store
        .append_accounting(&[early, early_stop, late])
        .await
        .unwrap();
    let ids = |q: SessionQuery| async move {
        store
            .acct_sessions(&q)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.session_id)
            .collect::<Vec<_>>()
    };
    let base = query(nas);
    assert_eq!(ids(base.clone()).await, ["e", "late"]);
    let active = SessionQuery {
        active: true,
        ..base.clone()
    };
    assert_eq!(ids(active).await, ["late"]);
    let user = SessionQuery {
        username: Some("user-e".into()),
        ..base.clone()
    };
    assert_eq!(ids(user).await, ["e"]);
    // Who had 10.1.2.3 at 10:14, at 10:50 (nobody), at 11:30?
    let at = |t: i64| SessionQuery {
        framed_ip: Some("10.1.2.3".into()),
        at: Some(t),
        ..base.clone()
    };
    assert_eq!(ids(at(10_200)).await, ["e"]);
    assert!(ids(at(10_800)).await.is_empty());
    assert_eq!(ids(at(11_500)).await, ["late"]);
    let limited = SessionQuery {
        limit: 1,
        ..base.clone()
    };
    assert_eq!(ids(limited).await, ["e"]);
    // Retention: everything received before 10_900 goes, records and stale sessions.
    let removed = store.prune_accounting(10_900).await.unwrap();
    assert!(removed >= 2, "{removed}");
    assert_eq!(ids(base).await, ["late"]);
    let left = store.acct_records_since(0, 100_000).await.unwrap();
    assert!(left.iter().all(|r| r.received_at >= 10_900));
    assert!(store.acct_sessions_online().await.unwrap() >= 1);
}

/// Two writers appending the same record at once: exactly one stores it.
pub async fn concurrent_duplicates_store_exactly_one(store: &dyn AccountingStore) {
    let r = [record("acct-race", "r", status::START, 20_000)];
    let (a, b) = futures::join!(store.append_accounting(&r), store.append_accounting(&r));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        u32::from(a[0]) + u32::from(b[0]),
        1,
        "exactly one of two racing writers stores it: {a:?} {b:?}"
    );
}

/// A batch of 700 records mixing 60 sessions' Starts, Interims out of order and Stops,
/// retransmissions inside the batch and of stored records, and an Accounting-On of the
/// same NAS midway: appended whole under one NAS name and one record at a time under
/// another, every "new" flag and every folded session are the same (a batched writer must
/// not change what a record means).
pub async fn a_large_batch_stores_and_folds_as_one_record_at_a_time(store: &dyn AccountingStore) {
    let batch = |nas: &str| {
        let mut out = Vec::new();
        // Stored before the batch: some of the batch repeats these.
        let before: Vec<_> = (0..10)
            .map(|s| record(nas, &format!("s{s}"), status::START, 30_000 + s))
            .collect();
        for round in 0..10i64 {
            for s in 0..60i64 {
                let st = match round {
                    0 => status::START,
                    9 if s % 3 == 0 => status::STOP,
                    _ => status::INTERIM_UPDATE,
                };
                // Interims arrive out of order: round 5's before round 4's time.
                let t = 30_000 + round * 100 - i64::from(round == 5) * 150 + s;
                let mut r = record(nas, &format!("s{s}"), st, t);
                r.input_octets = Some(round * 1_000 + s);
                r.session_time = Some(round * 100);
                out.push(r.clone());
                if (round + s) % 7 == 0 {
                    r.received_at += 1;
                    r.delay = 1;
                    out.push(r);
                }
            }
            if round == 6 {
                out.push(record(nas, "nas-restart", status::ACCOUNTING_ON, 30_550));
            }
        }
        (before, out)
    };
    let (before_a, whole) = batch("acct-batch-a");
    let (before_b, single) = batch("acct-batch-b");
    assert!(whole.len() > 600, "{}", whole.len());
    store.append_accounting(&before_a).await.unwrap();
    store.append_accounting(&before_b).await.unwrap();
    let fresh_a = store.append_accounting(&whole).await.unwrap();
    let mut fresh_b = Vec::new();
    for r in &single {
        fresh_b.extend(
            store
                .append_accounting(std::slice::from_ref(r))
                .await
                .unwrap(),
        );
    }
    assert_eq!(fresh_a, fresh_b);
    assert!(fresh_a.iter().any(|n| !n) && fresh_a.iter().any(|n| *n));
    let a = store.acct_sessions(&query("acct-batch-a")).await.unwrap();
    let b = store.acct_sessions(&query("acct-batch-b")).await.unwrap();
    assert_eq!(a.len(), 60);
    let strip = |v: Vec<crate::accounting::AcctSession>| {
        let mut v: Vec<_> = v
            .into_iter()
            .map(|mut x| {
                x.nas.clear();
                x
            })
            .collect();
        v.sort_by(|x, y| x.session_id.cmp(&y.session_id));
        v
    };
    assert_eq!(strip(a), strip(b));
}

/// [`AccountingStore::dedicated`] (the accounting writer's own connection): what it writes, the
/// store it came from reads, and a record the original stored is a duplicate through it;
/// writing through both at once stores it once.
pub async fn a_dedicated_handle_writes_the_same_database(store: &dyn AccountingStore) {
    let own = store.dedicated().await.unwrap();
    let first = [record("acct-dedicated", "d1", status::START, 30_000)];
    assert_eq!(own.append_accounting(&first).await.unwrap(), vec![true]);
    let open = store.acct_sessions(&query("acct-dedicated")).await.unwrap();
    assert_eq!(
        open.len(),
        1,
        "written through the dedicated handle, read through the pool"
    );
    assert_eq!(store.append_accounting(&first).await.unwrap(), vec![false]);
    let second = [record("acct-dedicated", "d2", status::START, 30_001)];
    let (a, b) = futures::join!(
        own.append_accounting(&second),
        store.append_accounting(&second)
    );
    assert_eq!(u32::from(a.unwrap()[0]) + u32::from(b.unwrap()[0]), 1);
}

/// A record as a NAS sends it: Acct-Status-Type, Acct-Session-Id, Acct-Delay-Time `delay`,
/// Event-Timestamp `stamp` when given, and a Message-Authenticator `mac` (it differs per
/// packet), at event time `t`.
fn sent(session: &str, st: i64, t: i64, delay: u8, stamp: Option<u32>, mac: u8) -> AcctRecord {
    let mut r = record("acct-retx", session, st, t);
    r.delay = i64::from(delay);
    r.received_at = t + r.delay;
    let mut a = vec![40, 6, 0, 0, 0, st as u8, 44, 2 + session.len() as u8];
    a.extend_from_slice(session.as_bytes());
    a.extend_from_slice(&[41, 6, 0, 0, 0, delay]);
    if let Some(s) = stamp {
        a.extend_from_slice(&[55, 6]);
        a.extend_from_slice(&s.to_be_bytes());
    }
    a.extend_from_slice(&[80, 18]);
    a.extend_from_slice(&[mac; 16]);
    r.attributes = a;
    r
}

/// Issue 41 (RFC 2866 §5.2, RFC 5080 §2.2): a copy of a record is stored once whether its
/// Acct-Delay-Time changed (new Message-Authenticator, a Proxy-State added on the way)
/// and its event time rounds a second off, or it repeats the first packet and arrives
/// seconds later without Event-Timestamp; but records that differ in what a copy repeats
/// (counters, Event-Timestamp), or whose times are further apart than
/// [`RETRANSMIT_SLACK_SECS`](crate::accounting::RETRANSMIT_SLACK_SECS), are distinct.
pub async fn copies_with_a_new_delay_or_a_later_arrival_are_stored_once(
    store: &dyn AccountingStore,
) {
    let slack = crate::accounting::RETRANSMIT_SLACK_SECS;
    let first = sent("x", status::START, 40_000, 0, None, 1);
    let mut proxied = sent("x", status::START, 39_999, 3, None, 2);
    proxied
        .attributes
        .extend_from_slice(&[33, 5, b'p', b's', b'1']);
    let late_same_packet = sent("x", status::START, 40_000 + slack, 0, None, 1);
    let beyond = sent("x", status::START, 40_001 + slack, 0, None, 1);
    let mut interim = sent("x", status::INTERIM_UPDATE, 41_000, 0, None, 3);
    interim.input_octets = Some(100);
    let mut next_interim = sent("x", status::INTERIM_UPDATE, 41_001, 0, None, 4);
    next_interim.input_octets = Some(101);
    let stamped = sent("y", status::START, 42_000, 0, Some(42_000), 5);
    let stamped_copy = sent("y", status::START, 42_000, 9, Some(42_000), 6);
    let next_stamp = sent("y", status::START, 42_001, 0, Some(42_001), 7);
    let batch = [
        first,
        proxied,
        late_same_packet,
        beyond,
        interim,
        next_interim,
        stamped,
        stamped_copy,
        next_stamp,
    ];
    let want = [true, false, false, true, true, true, true, false, true];
    assert_eq!(store.append_accounting(&batch).await.unwrap(), want);
    for (r, new) in batch.iter().zip(want) {
        assert_eq!(
            store
                .append_accounting(std::slice::from_ref(r))
                .await
                .unwrap(),
            [false],
            "a copy in a later batch (first time new: {new})"
        );
    }
    let stored = store.acct_records_since(0, 100_000).await.unwrap();
    assert_eq!(stored.iter().filter(|r| r.nas == "acct-retx").count(), 6);
}
