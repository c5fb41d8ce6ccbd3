//! The accounting door's audit events, in the same stream as every credential check
//! (protocol `radius_accounting`, the NAS as the event's client). Chosen for the
//! questions an operator asks of an audit trail, not for volume:
//!
//! - **Every stored Accounting-On and Accounting-Off** (outcome `accepted`, reason
//!   `accounting_on` / `accounting_off`): a NAS restarted or went down and every session it
//!   had open was closed — "why did all of building B drop at 14:02?". A retransmission
//!   stored once is audited once.
//! - **Refused requests, one event per class**: the first request of each (NAS, reason)
//!   in every [`DROP_WINDOW`] (outcome `dropped`, reason the drop label: `unknown_nas`,
//!   `bad_authenticator` — a wrong secret or forged packets, `malformed`, `overload` — the
//!   writer's queue was full, `nas_share` — that NAS used its share of it, `store_error`).
//!   A storm drops thousands a second; the audit trail says *that* it happened, to whom
//!   and since when, and `portcullis_acct_dropped_total{nas,reason}` says how many.
//!   `in_progress` (a retransmission of a record waiting for its commit) is the NAS
//!   doing its job, not a refusal, and is not audited.
//! - **Session records** (Start, Stop, Interim-Update, with user and station) only with
//!   `[accounting] audit_records = true`: the accounting store already keeps each one
//!   (`portcullis acct export`), and an Interim-Update per session every few minutes would
//!   bury the events above.
//!
//! Nothing here can grow with traffic: the rate limiter is keyed by registered NAS names
//! (sources of no NAS share one key) and the fixed drop reasons.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use portcullis_core::{AuditContext, AuditEvent, AuditOutcome, AuditSink, PrincipalKind, Protocol};
use portcullis_radius::StatusType;
use portcullis_store::AcctRecord;

use super::stats::AcctDrop;

/// A refused class of one NAS is audited at most once per this long.
pub const DROP_WINDOW: Duration = Duration::from_secs(10);

/// When each (NAS, reason) was last audited.
#[derive(Debug, Default)]
pub struct DropAudit {
    last: Mutex<HashMap<(String, AcctDrop), Instant>>,
}

impl DropAudit {
    /// Audit a dropped request of `nas` from `source` if its class was not audited within
    /// [`DROP_WINDOW`].
    pub fn dropped(&self, sink: Option<&dyn AuditSink>, nas: &str, source: IpAddr, why: AcctDrop) {
        let Some(sink) = sink else { return };
        if why == AcctDrop::InProgress {
            return;
        }
        let now = Instant::now();
        {
            let mut last = self.last.lock();
            match last.get_mut(&(nas.to_owned(), why)) {
                Some(t) if now.duration_since(*t) < DROP_WINDOW => return,
                Some(t) => *t = now,
                None => {
                    last.insert((nas.to_owned(), why), now);
                }
            }
        }
        sink.record(event(
            nas,
            source,
            String::new(),
            None,
            AuditOutcome::Dropped,
            why.label(),
        ));
    }
}

/// Audit what a committed batch stored: `fresh[i]` says whether `records[i]` was new.
/// Accounting-On/Off always; other records when `all_records`.
pub fn stored(
    sink: Option<&dyn AuditSink>,
    records: &[AcctRecord],
    fresh: &[bool],
    sources: impl Iterator<Item = IpAddr>,
    all_records: bool,
) {
    let Some(sink) = sink else { return };
    for ((r, new), source) in records.iter().zip(fresh).zip(sources) {
        if !*new {
            continue;
        }
        let status = StatusType::from_u32(u32::try_from(r.status).unwrap_or(0));
        if !status.is_nas_wide() && !all_records {
            continue;
        }
        sink.record(event(
            &r.nas,
            source,
            r.username.clone().unwrap_or_default(),
            r.station.clone(),
            AuditOutcome::Accepted,
            status.label(),
        ));
    }
}

fn event(
    nas: &str,
    source: IpAddr,
    principal: String,
    station: Option<String>,
    outcome: AuditOutcome,
    reason: &'static str,
) -> AuditEvent {
    AuditEvent {
        time: SystemTime::now(),
        protocol: Protocol::RadiusAccounting,
        kind: PrincipalKind::User,
        principal,
        context: AuditContext {
            request_id: portcullis_core::audit::request_id(),
            client_id: Some(nas.to_owned()),
            eap: None,
        },
        source,
        station,
        outcome,
        reason,
        latency: Duration::ZERO,
        class: None,
        directory: None,
    }
}
