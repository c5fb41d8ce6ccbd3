//! The `[accounting]` section: how the accounting door queues, commits and keeps records.
//! Where it listens is `[radius] accounting_listen` (next to the authentication door's
//! `listen`, same NAS table); without an address nothing here is used.

use std::time::Duration;

use serde::Deserialize;

use portcullis_door::config_error::{ConfigError, invalid};

use crate::priority::ThreadPriority;

/// `[accounting]` as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileAccounting {
    /// Most records waiting for the writer; more are dropped unanswered.
    pub queue: usize,
    /// Most of them from one NAS (unset: a quarter of `queue`).
    pub queue_per_nas: Option<usize>,
    /// Most records in one transaction.
    pub max_batch: usize,
    /// Days a record is kept (0: forever).
    pub keep_days: u64,
    /// How often old records are pruned, in seconds.
    pub prune_interval_secs: u64,
    /// Audit every stored Start, Stop and Interim-Update too.
    pub audit_records: bool,
    /// Run the accounting threads under `SCHED_IDLE` (below every nice value).
    pub idle: bool,
    /// Nice value of the accounting threads when not `idle` (0: authentication's
    /// priority).
    pub nice: i32,
    /// Milliseconds from a record's arrival to its answer: what the writer is not
    /// expected to commit within it is dropped at arrival (`late`) or at the writer
    /// (`stale`), unanswered.
    pub max_queue_age_ms: u64,
}

impl Default for FileAccounting {
    fn default() -> Self {
        FileAccounting {
            queue: 16_384,
            queue_per_nas: None,
            max_batch: 2_048,
            keep_days: 365,
            prune_interval_secs: 3_600,
            audit_records: false,
            idle: true,
            nice: 19,
            max_queue_age_ms: 500,
        }
    }
}

/// The validated `[accounting]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcctConfig {
    /// Bound of the queue in front of the writer: what a storm can make us hold. Full:
    /// requests are dropped unanswered (never acknowledged before they are durable) and
    /// the NAS retransmits.
    pub queue: usize,
    /// One NAS's share of `queue`: beyond it that NAS's new requests are dropped
    /// (`nas_share`), so a storm from one NAS (every AP of a rebooted controller behind one
    /// address) leaves `queue - queue_per_nas` places for everyone else's records.
    pub queue_per_nas: usize,
    /// Records per transaction: bounds one commit's latency under a backlog.
    pub max_batch: usize,
    /// Retention; `None`: keep forever.
    pub keep: Option<Duration>,
    /// Period of the background pruning.
    pub prune_interval: Duration,
    /// Every stored session record is an audit event too (else only Accounting-On/Off and
    /// refused classes are: `acct/audit.rs`).
    pub audit_records: bool,
    /// How the door's threads are scheduled (receive threads, the writer and its store
    /// connection; `priority.rs`), so an accounting storm takes the CPU that
    /// authentication leaves rather than a share of what logins need.
    pub priority: ThreadPriority,
    /// How long a record may wait for its commit, from its arrival to its answer (issue
    /// 41 items 2 and 8). A record the writer is not expected to commit within it is
    /// dropped when it arrives (`late`: the queue is bounded by time, not only by
    /// `queue`), one that could no longer make it when the writer takes it out is dropped
    /// there (`stale`), both unanswered and unwritten; a commit that overran anyway is
    /// answered all the same (counted: `late_answers`). Past it the
    /// NAS has retransmitted, or given up, and may have reused its Identifier for another
    /// request (RFC 5080 §2.2.1: a new Identifier whenever Acct-Delay-Time is updated), so
    /// a late answer is work nobody waits for or could be taken for another's. The copy
    /// the NAS sends meanwhile is stored once ([`portcullis_store::accounting`]).
    pub max_queue_age: Duration,
}

impl Default for AcctConfig {
    fn default() -> Self {
        match AcctConfig::from_file(FileAccounting::default()) {
            Ok(c) => c,
            Err(e) => unreachable!("default [accounting] is invalid: {e}"),
        }
    }
}

impl AcctConfig {
    /// Validate the file layer.
    pub fn from_file(f: FileAccounting) -> Result<AcctConfig, ConfigError> {
        if !(1..=1_000_000).contains(&f.queue) {
            return Err(invalid("accounting.queue must be between 1 and 1000000"));
        }
        let queue_per_nas = f.queue_per_nas.unwrap_or((f.queue / 4).max(1));
        if !(1..=f.queue).contains(&queue_per_nas) {
            return Err(invalid(
                "accounting.queue_per_nas must be between 1 and accounting.queue",
            ));
        }
        if !(1..=65_536).contains(&f.max_batch) {
            return Err(invalid("accounting.max_batch must be between 1 and 65536"));
        }
        if f.keep_days > 36_500 {
            return Err(invalid(
                "accounting.keep_days must be at most 36500 (0 keeps records forever)",
            ));
        }
        if !(1..=86_400).contains(&f.prune_interval_secs) {
            return Err(invalid(
                "accounting.prune_interval_secs must be between 1 and 86400",
            ));
        }
        if !(0..=19).contains(&f.nice) {
            return Err(invalid(
                "accounting.nice must be between 0 (authentication's priority) and 19 (lowest)",
            ));
        }
        // SCHED_IDLE has no nice value: a nice other than the default would be ignored.
        if f.idle && f.nice != 19 {
            return Err(invalid(format!(
                "accounting.nice = {} has no effect while accounting.idle = true (SCHED_IDLE \
                 is below every nice value); set idle = false to run the accounting threads \
                 at nice {}",
                f.nice, f.nice
            )));
        }
        let priority = match (f.idle, f.nice) {
            (true, _) => ThreadPriority::Idle,
            (false, 0) => ThreadPriority::Normal,
            (false, n) => ThreadPriority::Nice(n),
        };
        if !(100..=60_000).contains(&f.max_queue_age_ms) {
            return Err(invalid(
                "accounting.max_queue_age_ms must be between 100 and 60000",
            ));
        }
        Ok(AcctConfig {
            queue: f.queue,
            queue_per_nas,
            max_batch: f.max_batch,
            keep: (f.keep_days > 0).then(|| Duration::from_secs(f.keep_days * 86_400)),
            prune_interval: Duration::from_secs(f.prune_interval_secs),
            audit_records: f.audit_records,
            priority,
            max_queue_age: Duration::from_millis(f.max_queue_age_ms),
        })
    }
}

/// The documented `[accounting]` section of `portcullis config example`.
pub const EXAMPLE: &str = r#"
# RADIUS accounting (RFC 2866), served on [radius] accounting_listen. Every
# Accounting-Request is acknowledged only after its record is committed to the store
# (SQLite: WAL, fsync per commit; PostgreSQL: commit); records arriving together share
# one transaction. `portcullis acct sessions` and `portcullis acct export` read them.
[accounting]
# Most records waiting for the writer. When full, new requests are dropped unanswered
# and counted (portcullis_acct_dropped_total{reason="overload"}); the NAS retransmits.
queue = 16384
# Most of those waiting records from one NAS (default: a quarter of queue). Beyond it that
# NAS's new requests are dropped unanswered (reason="nas_share"): one NAS's storm cannot
# take the places of every other NAS's records.
# queue_per_nas = 4096
# Milliseconds from a record's arrival to its answer. The door times its commits: a
# record it does not expect to commit within this is dropped when it arrives
# (portcullis_acct_dropped_total{reason="late"}; the queue is bounded by time, not only by
# its length), one that can no longer make it when the writer takes it out is dropped
# there (reason="stale"), both unanswered and unwritten, so under a storm the door answers
# what it can commit in time and sheds the rest at once. A commit that overran anyway is
# answered all the same (counted: portcullis_acct_late_answers_total). Keep it below the NASes'
# retransmission timeout (commonly 1 to 5 s): past it the NAS has sent the record again or
# given up, and may have reused its Identifier.
max_queue_age_ms = 500
# Most records committed in one transaction.
max_batch = 2048
# Records received more than this many days ago are deleted in the background, with
# sessions not heard of for as long; 0 keeps everything.
keep_days = 365
# How often that pruning runs, in seconds.
prune_interval_secs = 3600
# The audit stream (protocol "radius_accounting") always gets every stored Accounting-On
# and Accounting-Off (a NAS restarted or went down: its sessions were closed) and, for each
# NAS and refusal reason (unknown_nas, bad_authenticator, malformed, overload, nas_share, late,
# stale, store_error), the first refused request in every 10 seconds (the counters have the
# totals). true: every stored Start, Stop and Interim-Update too (user and station).
audit_records = false
# CPU priority of the accounting door's threads (receive, writer, its store connection).
# true: Linux's SCHED_IDLE policy, below every nice value, so an accounting storm uses
# only the CPU that authentication leaves and logins keep their rate beside it; records
# the door cannot take meanwhile wait in the queue, then are dropped unanswered (the NAS
# retransmits). Beside logins that saturate the hash pool the door's threads took half
# the CPU they took at nice 19 (docs/accounting-radsec.md). false: they run at `nice`.
# PostgreSQL does the commits' work in its own processes, which neither reaches.
idle = true
# With idle = false, the threads' Linux nice value: 19 is the lowest, 0 runs accounting
# at authentication's priority. With idle = true only 19 (the default) is accepted.
nice = 19
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AcctConfig, String> {
        let f: FileAccounting = toml::from_str(text).map_err(|e| e.to_string())?;
        AcctConfig::from_file(f).map_err(|e| e.to_string())
    }

    #[test]
    fn issue_28_example_section_is_the_defaults_and_is_validated() {
        let text = EXAMPLE.replace("[accounting]\n", "");
        assert_eq!(parse(&text).unwrap(), AcctConfig::default());
        assert_eq!(parse("keep_days = 0").unwrap().keep, None);
        assert_eq!(AcctConfig::default().queue_per_nas, 4096, "a quarter");
        assert_eq!(parse("queue = 2").unwrap().queue_per_nas, 1);
        assert_eq!(AcctConfig::default().priority, ThreadPriority::Idle);
        let nice = |text| parse(text).unwrap().priority;
        assert_eq!(nice("idle = false"), ThreadPriority::Nice(19));
        assert_eq!(nice("idle = false\nnice = 0"), ThreadPriority::Normal);
        assert_eq!(nice("idle = false\nnice = 13"), ThreadPriority::Nice(13));
        assert_eq!(
            AcctConfig::default().max_queue_age,
            Duration::from_millis(500),
            "below a NAS's first retransmission timeout"
        );
        for (text, needle) in [
            ("queue = 0", "accounting.queue"),
            ("queue = 8\nqueue_per_nas = 9", "accounting.queue_per_nas"),
            ("queue_per_nas = 0", "accounting.queue_per_nas"),
            ("max_batch = 0", "accounting.max_batch"),
            ("keep_days = 100000", "accounting.keep_days"),
            ("prune_interval_secs = 0", "prune_interval_secs"),
            ("nice = 20", "accounting.nice"),
            ("nice = -1", "accounting.nice"),
            ("nice = 13", "idle = false"),
            ("idle = 1", "idle"),
            ("max_queue_age_ms = 99", "accounting.max_queue_age_ms"),
            ("max_queue_age_ms = 60001", "accounting.max_queue_age_ms"),
            ("bogus = 1", "bogus"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
