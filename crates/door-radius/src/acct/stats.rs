//! The accounting door's counters: per NAS and status type, exported to Prometheus and
//! read by the status page. Label values are bounded: NAS names are the registered ones
//! (sources matching none count under `unknown`), status types the five RFC ones plus
//! `other`, drop reasons the fixed list below.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use metrics::Counter;
use parking_lot::Mutex;
use portcullis_radius::StatusType;

/// Records stored (new) by NAS and status type (counter).
pub const RECORDS: &str = "portcullis_acct_records_total";
/// Accounting-Requests received, by NAS (counter).
pub const REQUESTS: &str = "portcullis_acct_requests_total";
/// Duplicates answered again without being stored twice, by NAS (counter).
pub const DUPLICATES: &str = "portcullis_acct_duplicates_total";
/// Requests dropped unanswered, by NAS and reason (counter).
pub const DROPPED: &str = "portcullis_acct_dropped_total";
/// Records waiting for the writer (gauge).
pub const QUEUED: &str = "portcullis_acct_queue_depth";
/// Transactions committed (counter; records per commit = records / commits).
pub const COMMITS: &str = "portcullis_acct_commits_total";
/// Seconds from a batch's first record's arrival to its commit (histogram).
pub const COMMIT_SECONDS: &str = "portcullis_acct_commit_seconds";
/// Records committed after their `max_queue_age` (answered all the same) (counter).
pub const LATE_ANSWERS: &str = "portcullis_acct_late_answers_total";
/// Sessions open (gauge, refreshed every few seconds).
pub const ONLINE: &str = "portcullis_acct_sessions_online";

/// Status labels in counter order.
const STATUSES: [&str; 6] = [
    "start",
    "stop",
    "interim_update",
    "accounting_on",
    "accounting_off",
    "other",
];

/// Why an Accounting-Request got no answer (a metrics label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AcctDrop {
    /// The source matches no NAS.
    UnknownNas,
    /// Request Authenticator or Message-Authenticator wrong.
    BadAuthenticator,
    /// Not a well-formed Accounting-Request (lengths, missing Acct-Status-Type, ...).
    Malformed,
    /// The writer's queue was full: the NAS retransmits.
    Overload,
    /// A retransmission of a record still waiting for its commit.
    InProgress,
    /// The store failed the batch: nothing of it was acknowledged.
    StoreError,
    /// The NAS already holds its share of the writer's queue (`queue_per_nas`): the
    /// others' records keep their places; this NAS retransmits.
    NasShare,
    /// The writer is too far behind to commit it within `max_queue_age`: dropped on
    /// arrival rather than answered after its NAS has retransmitted or given up.
    Late,
    /// It waited in the queue longer than `max_queue_age`: its NAS may have reused the
    /// Identifier, so it is neither committed nor answered; the NAS's copy is stored once.
    Stale,
}

impl AcctDrop {
    /// Every reason, in counter order.
    pub const ALL: [AcctDrop; 9] = [
        AcctDrop::UnknownNas,
        AcctDrop::BadAuthenticator,
        AcctDrop::Malformed,
        AcctDrop::Overload,
        AcctDrop::InProgress,
        AcctDrop::StoreError,
        AcctDrop::NasShare,
        AcctDrop::Stale,
        AcctDrop::Late,
    ];

    /// Stable label.
    pub const fn label(self) -> &'static str {
        match self {
            AcctDrop::UnknownNas => "unknown_nas",
            AcctDrop::BadAuthenticator => "bad_authenticator",
            AcctDrop::Malformed => "malformed",
            AcctDrop::Overload => "overload",
            AcctDrop::InProgress => "in_progress",
            AcctDrop::StoreError => "store_error",
            AcctDrop::NasShare => "nas_share",
            AcctDrop::Stale => "stale",
            AcctDrop::Late => "late",
        }
    }
}

fn status_index(s: StatusType) -> usize {
    STATUSES.iter().position(|l| *l == s.label()).unwrap_or(5)
}

/// One NAS's accounting counters.
#[derive(Debug)]
pub struct AcctNasStats {
    /// Accounting-Requests received from it.
    pub requests: AtomicU64,
    /// Records stored, by status in `STATUSES` order.
    pub records: [AtomicU64; 6],
    /// Duplicates answered again.
    pub duplicates: AtomicU64,
    /// Dropped, by [`AcctDrop::ALL`] order.
    pub dropped: [AtomicU64; 9],
    /// Its records in the writer's queue now (admission keeps it within
    /// `queue_per_nas`; the writer takes it down as it takes records out).
    queued: AtomicUsize,
    /// The exported twins of the fields above, labelled once here.
    exported: Exported,
}

/// Prometheus handles of one NAS (labels resolved once, not per request).
#[derive(Debug)]
struct Exported {
    /// `portcullis_acct_requests_total{nas}`.
    requests: Counter,
    /// `portcullis_acct_records_total{nas,status}`, in `STATUSES` order.
    records: [Counter; 6],
    /// `portcullis_acct_duplicates_total{nas}`.
    duplicates: Counter,
    /// `portcullis_acct_dropped_total{nas,reason}`, in [`AcctDrop::ALL`] order.
    dropped: [Counter; 9],
}

impl AcctNasStats {
    fn new(nas: &str) -> AcctNasStats {
        let n = nas.to_owned();
        AcctNasStats {
            requests: AtomicU64::new(0),
            records: Default::default(),
            duplicates: AtomicU64::new(0),
            dropped: Default::default(),
            queued: AtomicUsize::new(0),
            exported: Exported {
                requests: metrics::counter!(REQUESTS, "nas" => n.clone()),
                records: STATUSES
                    .map(|s| metrics::counter!(RECORDS, "nas" => n.clone(), "status" => s)),
                duplicates: metrics::counter!(DUPLICATES, "nas" => n.clone()),
                dropped: AcctDrop::ALL
                    .map(|d| metrics::counter!(DROPPED, "nas" => n.clone(), "reason" => d.label())),
            },
        }
    }

    /// A datagram arrived.
    pub fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.exported.requests.increment(1);
    }
    /// A new record of `status` was committed and acknowledged.
    pub fn stored(&self, status: StatusType) {
        let i = status_index(status);
        self.records[i].fetch_add(1, Ordering::Relaxed);
        self.exported.records[i].increment(1);
    }
    /// A duplicate was acknowledged again.
    pub fn duplicate(&self) {
        self.duplicates.fetch_add(1, Ordering::Relaxed);
        self.exported.duplicates.increment(1);
    }
    /// A request was dropped unanswered.
    pub fn dropped(&self, why: AcctDrop) {
        let i = AcctDrop::ALL.iter().position(|d| *d == why).unwrap_or(0);
        self.dropped[i].fetch_add(1, Ordering::Relaxed);
        self.exported.dropped[i].increment(1);
    }

    /// Take a place in the writer's queue if this NAS holds fewer than `share`; `false`:
    /// it is at its share.
    pub fn enter_queue(&self, share: usize) -> bool {
        self.queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < share).then_some(n + 1)
            })
            .is_ok()
    }

    /// Give back a place (the writer took the record out, or it never got in).
    pub fn leave_queue(&self) {
        let _ = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// The counters as the status page shows them.
    pub fn json(&self) -> serde_json::Value {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let records: serde_json::Map<String, serde_json::Value> = STATUSES
            .iter()
            .zip(&self.records)
            .map(|(s, c)| ((*s).to_owned(), get(c).into()))
            .collect();
        let dropped: serde_json::Map<String, serde_json::Value> = AcctDrop::ALL
            .iter()
            .zip(&self.dropped)
            .map(|(d, c)| (d.label().to_owned(), get(c).into()))
            .collect();
        serde_json::json!({
            "requests": get(&self.requests),
            "records": records,
            "duplicates": get(&self.duplicates),
            "dropped": dropped,
        })
    }
}

/// The door's counters: per NAS (created on first use, never reset) and door-wide.
#[derive(Debug, Default)]
pub struct AcctStats {
    /// Per NAS name.
    by_nas: Mutex<BTreeMap<String, Arc<AcctNasStats>>>,
    /// Sessions open, as last counted in the store.
    pub online: AtomicU64,
    /// Records waiting for the writer now.
    pub queued: AtomicU64,
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Records committed after their deadline ([`LATE_ANSWERS`]).
    pub late_answers: AtomicU64,
}

impl AcctStats {
    /// The counters of `nas`, created on first use.
    pub fn nas(&self, nas: &str) -> Arc<AcctNasStats> {
        let mut map = self.by_nas.lock();
        // Looked up per datagram: no allocation unless the NAS is new.
        if let Some(s) = map.get(nas) {
            return Arc::clone(s);
        }
        let s = Arc::new(AcctNasStats::new(nas));
        map.insert(nas.to_owned(), Arc::clone(&s));
        s
    }

    /// The status page's `radius.accounting` object.
    pub fn json(&self) -> serde_json::Value {
        let nas: serde_json::Map<String, serde_json::Value> = self
            .by_nas
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.json()))
            .collect();
        serde_json::json!({
            "sessions_online": self.online.load(Ordering::Relaxed),
            "queued": self.queued.load(Ordering::Relaxed),
            "commits": self.commits.load(Ordering::Relaxed),
            "late_answers": self.late_answers.load(Ordering::Relaxed),
            "nas": nas,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_28_one_nas_holds_at_most_its_share_of_the_queue() {
        let stats = AcctStats::default();
        let (storm, quiet) = (stats.nas("storm"), stats.nas("quiet"));
        let admitted = (0..1000).filter(|_| storm.enter_queue(4)).count();
        assert_eq!(admitted, 4, "the storming NAS stops at its share");
        assert!(quiet.enter_queue(4), "another NAS still gets in");
        storm.leave_queue();
        assert!(storm.enter_queue(4), "a place given back is taken again");
        assert!(!storm.enter_queue(4));
        quiet.leave_queue();
        quiet.leave_queue();
        assert!(quiet.enter_queue(1), "never below zero");
    }
}
