//! The accounting writer: the one task that makes records durable and only then lets
//! their Accounting-Responses go.
//!
//! Group commit: it waits for one record, takes whatever else is queued (up to
//! `max_batch`), writes them all in one transaction and waits for its commit (SQLite:
//! WAL with `synchronous = FULL`, so the commit is fsynced; PostgreSQL: the commit). Only
//! after that are the batch's replies marked in the duplicate cache and sent. While one
//! commit waits on the disk, the next batch gathers in the queue, so under load thousands
//! of records share one fsync and a lone record still goes at once (no timer).
//!
//! It runs on a thread of its own with a runtime of its own, below authentication's CPU
//! priority (`radius/priority.rs`), over a store connection of its own opened from that thread
//! ([`Store::dedicated`](portcullis_store::Store::dedicated)): the statements, the
//! commits and the sends of an accounting storm then cost no runtime worker's time and
//! take only the CPU that logins leave.
//!
//! A failed transaction acknowledges nothing: its records are forgotten by the duplicate
//! cache and counted as `store_error`; the NASes retransmit them. A record that waited
//! in the queue longer than `[accounting] max_queue_age_ms` is neither written nor
//! answered (`stale`, issue 41): its NAS may have reused the Identifier meanwhile, and the
//! copy it retransmits is stored once by the store's duplicate rule.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use portcullis_store::{AccountingStore, AcctRecord};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::stats::{AcctDrop, COMMIT_SECONDS, COMMITS, QUEUED};
use super::{AcctDoor, Pending, Reply};

/// The running writer: [`Writer::finished`] waits until it has committed and answered
/// what was queued when `stop` came.
#[derive(Debug)]
pub struct Writer {
    /// Closed (dropped) by the writer thread as it ends.
    done: oneshot::Receiver<()>,
}

impl Writer {
    /// Wait for the writer thread to end (after `stop`).
    pub async fn finished(self) {
        let _ = self.done.await;
    }
}

/// Start the writer thread: lower its priority, open its store connection and begin
/// taking from `rx`. Returns once the connection is open, or the reason it is not (the
/// server does not start without a writer: accounting would be acknowledged by nobody).
pub async fn start(
    door: Arc<AcctDoor>,
    rx: mpsc::Receiver<Pending>,
    stop: CancellationToken,
) -> Result<Writer, portcullis_door::DoorError> {
    let (ready_tx, ready) = oneshot::channel::<Result<(), String>>();
    let (done_tx, done) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("acct writer".into())
        .spawn(move || {
            crate::priority::lower_this_thread(door.config.nice, "the accounting writer");
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("its runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                // Opened here, after the priority was lowered: the connection's worker
                // thread is spawned by this thread and inherits its nice value.
                let store = match door.ctx.accounting.dedicated().await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("its store connection: {e}")));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let sends = TaskTracker::new();
                run(door, store, rx, stop, sends.clone()).await;
                sends.close();
                sends.wait().await;
            });
            drop(done_tx);
        })?;
    match ready.await {
        Ok(Ok(())) => Ok(Writer { done }),
        Ok(Err(why)) => Err(portcullis_door::DoorError::Config(format!(
            "the accounting writer could not start: {why}"
        ))),
        Err(_) => Err(portcullis_door::DoorError::Config(
            "the accounting writer could not start".into(),
        )),
    }
}

/// Run until `stop`; then commit and answer what is still queued, and return.
async fn run(
    door: Arc<AcctDoor>,
    store: Arc<dyn AccountingStore>,
    mut rx: mpsc::Receiver<Pending>,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    let max = door.config.max_batch;
    let mut records = Vec::with_capacity(max);
    let mut replies = Vec::with_capacity(max);
    loop {
        let first = tokio::select! {
            p = rx.recv() => p,
            () = stop.cancelled() => {
                rx.close();
                None
            }
        };
        let Some(first) = first.or_else(|| rx.try_recv().ok()) else {
            return;
        };
        let now = Instant::now();
        push(&door, first, now, &mut records, &mut replies, &tracker);
        while records.len() < max {
            match rx.try_recv() {
                Ok(p) => push(&door, p, now, &mut records, &mut replies, &tracker),
                Err(_) => break,
            }
        }
        if records.is_empty() {
            continue;
        }
        let left = rx.len() as u64;
        door.stats.queued.store(left, Ordering::Relaxed);
        metrics::gauge!(QUEUED).set(left as f64);
        commit(&door, store.as_ref(), &mut records, &mut replies, &tracker).await;
    }
}

/// Take `p` into the batch, unless it waited longer than `max_queue_age` (at `now`): then
/// drop it unanswered (`stale`), since its NAS may have reused its Identifier meanwhile.
fn push(
    door: &AcctDoor,
    p: Pending,
    now: Instant,
    records: &mut Vec<AcctRecord>,
    replies: &mut Vec<Reply>,
    tracker: &TaskTracker,
) {
    // Out of the queue: the NAS's share counts only what waits in it.
    p.reply.stats.leave_queue();
    if now.saturating_duration_since(p.reply.arrived) > door.config.max_queue_age {
        let r = p.reply;
        // Its next copy is new work, not "in progress".
        door.dedup.lock().forget(&r.key);
        door.dropped(&r.stats, &p.record.nas, r.peer.ip(), AcctDrop::Stale);
        // RADIUS/1.1 has no Identifier to reuse: it says "cannot now" (RFC 9765 §6.1).
        if let Some(answer) = r.unable {
            r.path.send_later(answer, tracker);
        }
        return;
    }
    records.push(p.record);
    replies.push(p.reply);
}

/// One transaction for `records`; then the replies, or nothing if it failed.
async fn commit(
    door: &AcctDoor,
    store: &dyn AccountingStore,
    records: &mut Vec<AcctRecord>,
    replies: &mut Vec<Reply>,
    tracker: &TaskTracker,
) {
    let oldest = replies.iter().map(|r| r.arrived).min();
    let outcome = store.append_accounting(records).await;
    let batch = std::mem::take(replies);
    let sink = door.ctx.verifier.audit_sink().map(|s| s.as_ref());
    match outcome {
        Ok(fresh) => {
            let sources = batch.iter().map(|r| r.peer.ip());
            super::audit::stored(sink, records, &fresh, sources, door.config.audit_records);
            records.clear();
            door.stats.commits.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(COMMITS).increment(1);
            if let Some(t) = oldest {
                metrics::histogram!(COMMIT_SECONDS).record(Instant::now() - t);
            }
            {
                let mut dedup = door.dedup.lock();
                for (r, new) in batch
                    .iter()
                    .zip(fresh.iter().chain(std::iter::repeat(&false)))
                {
                    if *new {
                        r.stats.stored(r.status);
                    } else {
                        r.stats.duplicate();
                    }
                    dedup.complete(&r.key, Arc::clone(&r.bytes));
                }
            }
            // The sends run beside the next commit: the disk, not the socket, paces us.
            tracker.spawn(async move {
                for r in batch {
                    if let Err(e) = r.path.send(r.bytes).await {
                        tracing::debug!(peer = %r.peer, "sending an Accounting-Response failed: {e}");
                    }
                }
            });
        }
        Err(e) => {
            portcullis_door::metrics::store_failure("committing accounting records", &e);
            {
                let mut dedup = door.dedup.lock();
                for r in &batch {
                    dedup.forget(&r.key);
                }
            }
            for (r, rec) in batch.into_iter().zip(records.iter()) {
                door.dropped(&r.stats, &rec.nas, r.peer.ip(), AcctDrop::StoreError);
                if let Some(answer) = r.unable {
                    r.path.send_later(answer, tracker);
                }
            }
            records.clear();
        }
    }
}
