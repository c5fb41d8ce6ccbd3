//! The accounting writer: the one task that makes records durable and only then lets
//! their Accounting-Responses go.
//!
//! Group commit: it waits for one record, takes whatever else is queued (up to
//! `max_batch`, and no more than its oldest record can wait: below), writes them all in
//! one transaction and waits for its commit (SQLite: WAL with `synchronous = FULL`, so the
//! commit is fsynced; PostgreSQL: the commit). Only after that are the batch's replies
//! marked in the duplicate cache and sent. While one commit waits on the disk, the next
//! batch gathers in the queue, so under load thousands of records share one fsync and a
//! lone record still goes at once (no timer).
//!
//! Time (issue 41 item 8): every record must be answered within `[accounting]
//! max_queue_age_ms` of its arrival. The writer times each commit ([`super::pace`]) and
//! ends a batch where the predicted commit would end after its oldest record's deadline
//! (the next record opens the next batch); a record that could not be committed in time
//! even alone is dropped unanswered and unwritten (`stale`). A commit that overran
//! anyway is answered all the same and counted (`late_answers`): the record is durable
//! and a NAS still retransmitting it takes the answer.
//!
//! It runs on a thread of its own with a runtime of its own, below authentication's CPU
//! priority (`radius/priority.rs`), over a store connection of its own opened from that thread
//! ([`Store::dedicated`](portcullis_store::Store::dedicated)): the statements, the
//! commits and the sends of an accounting storm then cost no runtime worker's time and
//! take only the CPU that logins leave.
//!
//! A failed transaction acknowledges nothing: its records are forgotten by the duplicate
//! cache and counted as `store_error`; the NASes retransmit them. A stale record's NAS
//! may have reused the Identifier meanwhile (issue 41 item 2), and the copy it
//! retransmits is stored once by the store's duplicate rule.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use portcullis_store::{AccountingStore, AcctRecord};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::queue::Shared;
use super::stats::{AcctDrop, COMMIT_SECONDS, COMMITS, LATE_ANSWERS, QUEUED};
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
            crate::priority::lower_this_thread(
                door.shared.config.priority,
                "the accounting writer",
            );
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
                run(Arc::clone(&door.shared), store, rx, stop, sends.clone()).await;
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

/// The clock the writer and the admission read: tokio's, which is the system's monotonic
/// clock except in tests that pause it.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Run until `stop`; then commit and answer what is still queued, and return.
pub(super) async fn run(
    shared: Arc<Shared>,
    store: Arc<dyn AccountingStore>,
    mut rx: mpsc::Receiver<Pending>,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    let mut batch = Batch::default();
    // A record taken out that did not fit the last batch: it opens the next one.
    let mut carry: Option<Pending> = None;
    loop {
        let first = match carry.take() {
            Some(p) => p,
            None => {
                let p = tokio::select! {
                    p = rx.recv() => p,
                    () = stop.cancelled() => {
                        rx.close();
                        None
                    }
                };
                let Some(p) = p.or_else(|| rx.try_recv().ok()) else {
                    return;
                };
                out_of_queue(&shared, &p);
                p
            }
        };
        let now = now();
        let mut next = Some(first);
        while let Some(p) = next.take() {
            let idle = rx.is_empty();
            if !batch.take(&shared, p, now, idle, &mut carry, &tracker) {
                break;
            }
            if batch.len() < shared.config.max_batch {
                next = rx.try_recv().ok().inspect(|p| out_of_queue(&shared, p));
            }
        }
        if batch.len() == 0 {
            continue;
        }
        let left = rx.len() as u64;
        shared.stats.queued.store(left, Ordering::Relaxed);
        metrics::gauge!(QUEUED).set(left as f64);
        commit(&shared, store.as_ref(), &mut batch, &tracker).await;
    }
}

/// `p` was taken out of the queue: the NAS's share and the admission count only what
/// waits in it.
fn out_of_queue(shared: &Shared, p: &Pending) {
    p.reply.stats.leave_queue();
    shared.pace.leave(1);
}

/// The records of one commit and how to answer them.
#[derive(Default)]
struct Batch {
    records: Vec<AcctRecord>,
    replies: Vec<Reply>,
    /// Its oldest record's deadline (arrival + `max_queue_age`).
    deadline: Option<Instant>,
}

impl Batch {
    fn len(&self) -> usize {
        self.records.len()
    }

    /// Take `p`, just taken out of the queue at `now`, into the batch; drop it (`stale`)
    /// if its deadline passed, or if it cannot be committed by it even alone and others
    /// wait behind it (`idle`: none do, and then it is committed: a lone record costs no
    /// other its place, and its commit measures the writer's pace anew); or put it in
    /// `carry` and return `false` if it would make the batch end after its oldest
    /// record's deadline.
    fn take(
        &mut self,
        shared: &Shared,
        p: Pending,
        now: Instant,
        idle: bool,
        carry: &mut Option<Pending>,
        tracker: &TaskTracker,
    ) -> bool {
        let cap = shared.config.max_queue_age;
        let deadline = p.reply.arrived + cap;
        let end = now + shared.pace.predict(self.len() + 1);
        match self.deadline {
            None if now > deadline || (end > deadline && !idle) => {
                // Its NAS may have reused the Identifier: its next copy is new work.
                shared.refuse(p.reply, &p.record.nas, AcctDrop::Stale, tracker);
                true
            }
            Some(oldest) if end > oldest => {
                *carry = Some(p);
                false
            }
            _ => {
                self.deadline.get_or_insert(deadline);
                self.records.push(p.record);
                self.replies.push(p.reply);
                true
            }
        }
    }
}

/// One transaction for the batch; then the replies, or nothing if it failed.
async fn commit(
    shared: &Shared,
    store: &dyn AccountingStore,
    b: &mut Batch,
    tracker: &TaskTracker,
) {
    let oldest = b.replies.iter().map(|r| r.arrived).min();
    shared.pace.begin(b.len(), now());
    let outcome = store.append_accounting(&b.records).await;
    let done = now();
    shared.pace.end(done);
    let replies = std::mem::take(&mut b.replies);
    b.deadline = None;
    match outcome {
        Ok(fresh) => {
            let sources = replies.iter().map(|r| r.peer.ip());
            let audit_records = shared.config.audit_records;
            super::audit::stored(
                shared.audit_sink(),
                &b.records,
                &fresh,
                sources,
                audit_records,
            );
            b.records.clear();
            shared.stats.commits.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(COMMITS).increment(1);
            if let Some(t) = oldest {
                metrics::histogram!(COMMIT_SECONDS).record(done - t);
            }
            {
                let mut dedup = shared.dedup.lock();
                for (r, new) in replies
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
            // An answer past the cap is still sent (counted): the record is durable, and a
            // NAS still retransmitting it takes the answer (its Response Authenticator
            // covers the request's, so a NAS that moved on discards it); withheld, it
            // would be work wasted.
            let cap = shared.config.max_queue_age;
            let late = replies
                .iter()
                .filter(|r| done.saturating_duration_since(r.arrived) > cap)
                .count() as u64;
            if late > 0 {
                shared.stats.late_answers.fetch_add(late, Ordering::Relaxed);
                metrics::counter!(LATE_ANSWERS).increment(late);
            }
            // The sends run beside the next commit: the disk, not the socket, paces us.
            tracker.spawn(async move {
                for r in replies {
                    if let Err(e) = r.path.send(r.bytes).await {
                        tracing::debug!(peer = %r.peer, "sending an Accounting-Response failed: {e}");
                    }
                }
            });
        }
        Err(e) => {
            portcullis_door::metrics::store_failure("committing accounting records", &e);
            for (r, rec) in replies.into_iter().zip(b.records.iter()) {
                shared.refuse(r, &rec.nas, AcctDrop::StoreError, tracker);
            }
            b.records.clear();
        }
    }
}
