//! Issue 41 item 8: the accounting door under a storm twice as fast as its store, end to
//! end through the door's own queue, admission and writer, over a store whose commits
//! take a fixed time per commit and per record on tokio's paused clock: the virtual time
//! moves only when every task waits, so the writer's timings, the arrivals and the
//! answers are the same on every run and every machine (no sleep synchronises anything,
//! no wall-clock figure is asserted).
//!
//! What a good accounting server does there: it acknowledges about as many records per
//! second as the store commits, every one within `max_queue_age` of its arrival, writes
//! almost nothing it then cannot answer, and drops the excess at arrival. A queue bounded
//! only by its length (main before this) filled with records it answered seconds late.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use portcullis_radius::StatusType;
use portcullis_store::accounting::{AcctSession, SessionQuery};
use portcullis_store::{AccountingStore, AcctRecord, StoreError};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::AcctConfig;
use super::queue::Shared;
use super::stats::AcctStats;
use super::{Pending, Reply};
use crate::dedup::{DuplicateCache, RequestKey, Seen};
use crate::reply::{ReplyPath, StreamReply};

/// A commit's fixed cost (its transaction and fsync).
const PER_COMMIT: Duration = Duration::from_millis(5);
/// Each record's.
const PER_RECORD: Duration = Duration::from_millis(1);

/// A store that takes `PER_COMMIT + n * PER_RECORD` of (virtual) time per commit and
/// remembers what it committed.
#[derive(Default)]
struct SlowStore {
    committed: Mutex<Vec<String>>,
}

#[async_trait]
impl AccountingStore for SlowStore {
    async fn append_accounting(&self, records: &[AcctRecord]) -> Result<Vec<bool>, StoreError> {
        let n = u32::try_from(records.len()).unwrap();
        tokio::time::sleep(PER_COMMIT + PER_RECORD * n).await;
        let mut c = self.committed.lock();
        c.extend(records.iter().map(|r| r.session_id.clone()));
        Ok(vec![true; records.len()])
    }
    async fn dedicated(&self) -> Result<Arc<dyn AccountingStore>, StoreError> {
        Err(StoreError::Invalid("not used".into()))
    }
    async fn acct_sessions(&self, _: &SessionQuery) -> Result<Vec<AcctSession>, StoreError> {
        Ok(Vec::new())
    }
    async fn acct_records_since(&self, _: i64, _: u32) -> Result<Vec<AcctRecord>, StoreError> {
        Ok(Vec::new())
    }
    async fn prune_accounting(&self, _: i64) -> Result<u64, StoreError> {
        Ok(0)
    }
    async fn acct_sessions_online(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
}

/// Record `i` of the storm: its own session, answered with its index.
fn record(i: u32) -> AcctRecord {
    AcctRecord {
        nas: "storm".into(),
        session_id: format!("s-{i}"),
        status: 1,
        event_time: 1_700_000_000,
        received_at: 1_700_000_000,
        delay: 0,
        username: None,
        station: None,
        called_station: None,
        framed_ip: None,
        input_octets: None,
        output_octets: None,
        input_packets: None,
        output_packets: None,
        session_time: None,
        terminate_cause: None,
        attributes: Vec::new(),
    }
}

/// What the door answered: record index and when.
type Answers = Arc<Mutex<HashMap<u32, Instant>>>;

#[tokio::test(start_paused = true)]
async fn issue_41_a_storm_at_twice_the_stores_rate_is_answered_in_time_at_the_stores_rate() {
    let cap = Duration::from_millis(500);
    let config = AcctConfig {
        max_queue_age: cap,
        queue_per_nas: 16_384,
        ..AcctConfig::default()
    };
    assert_eq!(
        config.queue, 16_384,
        "the length bound is far from binding here"
    );
    let stats = Arc::new(AcctStats::default());
    let dedup = DuplicateCache::new(1 << 20, Duration::from_secs(600));
    let (shared, rx) = Shared::new(config, Arc::clone(&stats), dedup, None);
    let shared = Arc::new(shared);
    let store = Arc::new(SlowStore::default());
    let (stop, sends) = (CancellationToken::new(), TaskTracker::new());
    let writer = tokio::spawn(super::writer::run(
        Arc::clone(&shared),
        Arc::clone(&store) as Arc<dyn AccountingStore>,
        rx,
        stop.clone(),
        sends.clone(),
    ));

    // The NAS's side: every answer, stamped when it arrives.
    let (tx, mut answers_rx) = mpsc::channel::<StreamReply>(1 << 20);
    let answers: Answers = Arc::default();
    let collector = {
        let answers = Arc::clone(&answers);
        tokio::spawn(async move {
            while let Some((bytes, _permit)) = answers_rx.recv().await {
                let i = u32::from_be_bytes(bytes[..4].try_into().unwrap());
                answers.lock().insert(i, Instant::now());
            }
        })
    };

    // 10 s of arrivals at 2,000 records/s (20 every 10 ms): the store commits at most
    // 1,000 records/s (fewer with the per-commit cost).
    let permits = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    let nas_stats = stats.nas("storm");
    let tracker = TaskTracker::new();
    let mut arrived = HashMap::new();
    let start = Instant::now();
    let (ticks, per_tick) = (1_000u32, 20u32);
    for tick in 0..ticks {
        for j in 0..per_tick {
            let i = tick * per_tick + j;
            let now = Instant::now();
            arrived.insert(i, now);
            let key = RequestKey {
                peer: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 1813),
                identifier: (i % 256) as u8,
                authenticator: u128::from(i).to_be_bytes(),
            };
            assert_eq!(shared.dedup.lock().check(key, now.into_std()), Seen::New);
            nas_stats.request();
            let pending = Pending {
                record: record(i),
                reply: Reply {
                    bytes: i.to_be_bytes().to_vec().into(),
                    path: ReplyPath::Stream {
                        tx: tx.clone(),
                        permit: Arc::clone(&permits).try_acquire_owned().unwrap(),
                    },
                    peer: key.peer,
                    key,
                    status: StatusType::Start,
                    stats: Arc::clone(&nas_stats),
                    arrived: now.into_std(),
                    unable: None,
                },
            };
            shared.enqueue(pending, "storm", now.into_std(), &tracker);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let storm = start.elapsed();
    stop.cancel();
    writer.await.unwrap();
    sends.close();
    sends.wait().await;
    drop(tx);
    collector.await.unwrap();

    let answers = answers.lock();
    let committed = store.committed.lock();
    let stored: std::collections::HashSet<&str> = committed.iter().map(String::as_str).collect();
    // Nothing acknowledged unstored, nothing acknowledged after the cap.
    for (i, at) in answers.iter() {
        assert!(
            stored.contains(format!("s-{i}").as_str()),
            "{i} answered, not stored"
        );
        let waited = *at - arrived[i];
        assert!(
            waited <= cap,
            "record {i} answered after {waited:?} (cap {cap:?})"
        );
    }
    // The store's rate: one record per PER_RECORD of the storm at most.
    let capacity = storm.as_secs_f64() / PER_RECORD.as_secs_f64();
    let acked = answers.len() as f64;
    assert!(
        acked >= 0.9 * capacity,
        "{acked} answered in {storm:?}: the store could commit {capacity}"
    );
    // Written but unanswered: work wasted.
    let wasted = committed.len() - answers.len();
    assert!(
        wasted as f64 <= 0.01 * acked,
        "{wasted} records stored and never answered ({acked} answered)"
    );
    // The rest was shed: at arrival (late) or by the writer (stale), never queued for
    // seconds.
    let dropped = |label: &str| nas_stats.json()["dropped"][label].as_u64().unwrap();
    let shed = dropped("late") + dropped("stale") + dropped("overload");
    assert_eq!(
        shed + committed.len() as u64,
        u64::from(ticks * per_tick),
        "every record was either committed or dropped unanswered"
    );
}
