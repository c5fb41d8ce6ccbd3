//! What the accounting door's receive paths and its writer share: the bounded queue
//! between them, its admission, the duplicate cache, the counters and the drop audit.
//!
//! Admission (issue 41 item 8) is by time as well as by length: a record gets a place
//! only if the writer is expected to commit it within [`ADMIT_SHARE`] of `[accounting]
//! max_queue_age_ms` after it arrived ([`super::pace`]); otherwise it is dropped at once,
//! unanswered (`late`), which costs the door a lock and a counter, where a queue bounded
//! by length alone let a storm fill it with records that could only be answered after
//! their NAS had retransmitted them or given up. The rest of the cap is the margin the
//! writer keeps for a commit that runs longer than predicted.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use portcullis_core::audit::AuditSink;
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

use super::audit::DropAudit;
use super::config::AcctConfig;
use super::pace::Pace;
use super::stats::{AcctDrop, AcctNasStats, AcctStats};
use super::{Pending, Reply};
use crate::dedup::DuplicateCache;

/// The share of `max_queue_age` a record may be expected to wait when it is admitted;
/// the rest is the margin for a commit that runs longer than predicted.
pub const ADMIT_SHARE: f64 = 0.8;

/// The state both ends of the queue use.
pub struct Shared {
    /// `[accounting]`, validated.
    pub(super) config: AcctConfig,
    /// Counters per NAS and status type.
    pub(super) stats: Arc<AcctStats>,
    /// Requests queued or answered, keyed by source, identifier and authenticator.
    pub(super) dedup: Mutex<DuplicateCache>,
    /// The writer's pace and the records admitted to its queue.
    pub(super) pace: Pace,
    /// When each refused class of each NAS was last audited.
    drop_audit: DropAudit,
    /// The server's audit sink (set by the assembly before any door starts).
    audit: Option<Arc<dyn AuditSink>>,
    /// The bounded queue to the writer; `try_send` only, never awaited.
    queue: mpsc::Sender<Pending>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The shared state and the queue's receiving end (the writer's).
    pub fn new(
        config: AcctConfig,
        stats: Arc<AcctStats>,
        dedup: DuplicateCache,
        audit: Option<Arc<dyn AuditSink>>,
    ) -> (Shared, mpsc::Receiver<Pending>) {
        let (queue, rx) = mpsc::channel(config.queue);
        let shared = Shared {
            config,
            stats,
            dedup: Mutex::new(dedup),
            pace: Pace::default(),
            drop_audit: DropAudit::default(),
            audit,
            queue,
        };
        (shared, rx)
    }

    /// The audit sink, if the server has one.
    pub(super) fn audit_sink(&self) -> Option<&dyn AuditSink> {
        self.audit.as_deref()
    }

    /// Count a request of `nas` from `source` dropped unanswered, and audit its class
    /// (at most once per [`super::audit::DROP_WINDOW`] per NAS and reason).
    pub(super) fn dropped(&self, stats: &AcctNasStats, nas: &str, source: IpAddr, why: AcctDrop) {
        stats.dropped(why);
        self.drop_audit.dropped(self.audit_sink(), nas, source, why);
    }

    /// Hand a checked new record (already in the duplicate cache as in progress) to the
    /// writer, at `now`; or drop it unanswered (its NAS over its share, the writer too far
    /// behind to answer it in time, the queue full), forgotten by the duplicate cache so
    /// that its retransmission is tried afresh.
    pub(super) fn enqueue(&self, pending: Pending, nas: &str, now: Instant, tracker: &TaskTracker) {
        let config = &self.config;
        let stats = Arc::clone(&pending.reply.stats);
        if !stats.enter_queue(config.queue_per_nas) {
            return self.refuse(pending.reply, nas, AcctDrop::NasShare, tracker);
        }
        let waited = now.saturating_duration_since(pending.reply.arrived);
        let left = config
            .max_queue_age
            .mul_f64(ADMIT_SHARE)
            .saturating_sub(waited);
        if !self.pace.admit(now, left, config.max_batch) {
            stats.leave_queue();
            return self.refuse(pending.reply, nas, AcctDrop::Late, tracker);
        }
        if let Err(full) = self.queue.try_send(pending) {
            self.pace.leave(1);
            stats.leave_queue();
            self.refuse(full.into_inner().reply, nas, AcctDrop::Overload, tracker);
        }
    }

    /// Drop `reply`'s request unanswered for `why`: forgotten by the duplicate cache (its
    /// next copy is new work), counted, and for RADIUS/1.1 answered "cannot now" (RFC 9765
    /// §6.1; never an Accounting-Response, the record is not durable).
    pub(super) fn refuse(&self, reply: Reply, nas: &str, why: AcctDrop, tracker: &TaskTracker) {
        self.dedup.lock().forget(&reply.key);
        self.dropped(&reply.stats, nas, reply.peer.ip(), why);
        if let Some(answer) = reply.unable {
            reply.path.send_later(answer, tracker);
        }
    }
}
