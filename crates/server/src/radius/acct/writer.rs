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
//! A failed transaction acknowledges nothing: its records are forgotten by the duplicate
//! cache and counted as `store_error`; the NASes retransmit them.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use portcullis_store::AcctRecord;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::stats::{AcctDrop, COMMIT_SECONDS, COMMITS, QUEUED};
use super::{AcctDoor, Pending, Reply};

/// Run until `stop`; then commit and answer what is still queued, and return.
pub(super) async fn run(
    door: Arc<AcctDoor>,
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
        push(first, &mut records, &mut replies);
        while records.len() < max {
            match rx.try_recv() {
                Ok(p) => push(p, &mut records, &mut replies),
                Err(_) => break,
            }
        }
        let left = rx.len() as u64;
        door.stats.queued.store(left, Ordering::Relaxed);
        metrics::gauge!(QUEUED).set(left as f64);
        commit(&door, &mut records, &mut replies, &tracker).await;
    }
}

fn push(p: Pending, records: &mut Vec<AcctRecord>, replies: &mut Vec<Reply>) {
    // Out of the queue: the NAS's share counts only what waits in it.
    p.reply.stats.leave_queue();
    records.push(p.record);
    replies.push(p.reply);
}

/// One transaction for `records`; then the replies, or nothing if it failed.
async fn commit(
    door: &AcctDoor,
    records: &mut Vec<AcctRecord>,
    replies: &mut Vec<Reply>,
    tracker: &TaskTracker,
) {
    let oldest = replies.iter().map(|r| r.arrived).min();
    let outcome = door.app.store.append_accounting(records).await;
    let batch = std::mem::take(replies);
    let sink = door.app.verifier.audit_sink().map(|s| s.as_ref());
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
            crate::metrics::store_failure("committing accounting records", &e);
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
