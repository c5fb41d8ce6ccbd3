//! Audit events: one structured record per authentication outcome, for operators to ship
//! to a SIEM or to fail2ban (issue 18).
//!
//! The core produces an [`AuditEvent`] for every attempt that went through
//! [`crate::Verifier`] (accepted, rejected, unknown principal, throttled, overloaded) and
//! hands it to the [`AuditSink`] the server installed; front ends report what never
//! reaches the core (a RADIUS datagram dropped at the door, a retransmission answered from
//! the duplicate cache) through the same sink. Where events go, and how many per source
//! are written under a flood, is the sink's business (the server's `audit` module): the
//! core only guarantees one event per attempt and that no event carries a secret. An
//! event holds the principal *as given* (it may be garbage an attacker typed), never the
//! presented secret, a token or a stored hash: [`AuditEvent`] has no field that could.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

pub use crate::attempt::AuditContext;
use crate::attempt::{Class, PrincipalKind, Protocol};

/// What happened to one attempt (or one datagram).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditOutcome {
    /// The secret matched.
    Accepted,
    /// The principal exists and the secret did not match.
    Rejected,
    /// No such principal (or disabled): answered like a rejection, recorded apart.
    UnknownPrincipal,
    /// A failure budget was exhausted; no hash was spent.
    Throttled,
    /// Answered "busy" (shed, queue full, store unavailable, shutting down).
    Overloaded,
    /// RADIUS: a datagram dropped unanswered (unknown NAS, malformed, bad authenticator).
    Dropped,
    /// RADIUS: a retransmission answered from the duplicate cache, not verified again.
    Duplicate,
}

impl AuditOutcome {
    /// Every outcome, for metrics and summaries.
    pub const ALL: [AuditOutcome; 7] = [
        AuditOutcome::Accepted,
        AuditOutcome::Rejected,
        AuditOutcome::UnknownPrincipal,
        AuditOutcome::Throttled,
        AuditOutcome::Overloaded,
        AuditOutcome::Dropped,
        AuditOutcome::Duplicate,
    ];

    /// Stable label (JSON field value, metric label).
    pub const fn label(self) -> &'static str {
        match self {
            AuditOutcome::Accepted => "accepted",
            AuditOutcome::Rejected => "rejected",
            AuditOutcome::UnknownPrincipal => "unknown_principal",
            AuditOutcome::Throttled => "throttled",
            AuditOutcome::Overloaded => "overloaded",
            AuditOutcome::Dropped => "dropped",
            AuditOutcome::Duplicate => "duplicate",
        }
    }

    /// Index into [`AuditOutcome::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// One audit record. Deliberately without any field for a secret, token or hash.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    /// When the outcome was decided.
    pub time: SystemTime,
    /// Front end and mechanism.
    pub protocol: Protocol,
    /// Client or user.
    pub kind: PrincipalKind,
    /// The principal as presented (client id or user name; not trusted, not validated).
    pub principal: String,
    /// The request's context from the front end.
    pub context: AuditContext,
    /// The source address the core throttled on: the real client, after trusted proxies.
    pub source: IpAddr,
    /// RADIUS: the station behind the NAS (Calling-Station-Id, else User-Name).
    pub station: Option<String>,
    /// The outcome.
    pub outcome: AuditOutcome,
    /// Why, in a word (`wrong_secret`, `budget_exhausted`, `queue_full`, ...).
    pub reason: &'static str,
    /// Time from the attempt's arrival at the core to its verdict (before any answer
    /// delay).
    pub latency: Duration,
    /// The priority class the core gave the attempt (none for events from the door).
    pub class: Option<Class>,
    /// The external directory whose answer decided the attempt (issue 40): `None` for
    /// principals of the local store and for events from the door.
    pub directory: Option<Arc<str>>,
}

/// Audit reasons the verifier sets that [`verdict_event`] looks at.
pub(crate) const UNKNOWN_PRINCIPAL: &str = "unknown_principal";
pub(crate) const WRONG_SECRET: &str = "wrong_secret";
pub(crate) const BUDGET_EXHAUSTED: &str = "budget_exhausted";
/// An untrusted origin answered "overloaded" again before the wait its last shed answer
/// gave it was over (`verifier/hold.rs`).
pub(crate) const SHED_HOLD: &str = "shed_hold";

/// What the verifier keeps of an attempt for its event: kind, principal, source, station,
/// context.
pub(crate) type Who = (PrincipalKind, String, IpAddr, Option<String>, AuditContext);

/// The event of one verdict: the outcome as the operator needs it (an unknown principal,
/// answered like a rejection, is recorded as what it was) with the verifier's `reason`.
pub(crate) fn verdict_event(
    who: Who,
    protocol: Protocol,
    outcome: &crate::attempt::Outcome,
    reason: &'static str,
    latency: Duration,
    class: Class,
    directory: Option<Arc<str>>,
) -> AuditEvent {
    use crate::attempt::Outcome;
    let (kind, principal, source, station, context) = who;
    let outcome = match outcome {
        Outcome::Accepted { .. } => AuditOutcome::Accepted,
        Outcome::Rejected if reason == UNKNOWN_PRINCIPAL => AuditOutcome::UnknownPrincipal,
        Outcome::Rejected => AuditOutcome::Rejected,
        Outcome::Throttled { .. } => AuditOutcome::Throttled,
        // A directory that could not answer is the service's fault, not the user's.
        Outcome::Overloaded { .. } | Outcome::Unavailable { .. } => AuditOutcome::Overloaded,
    };
    let reason = match (outcome, reason) {
        // The unknown principal's admission check refused it like a real job.
        (AuditOutcome::Overloaded, UNKNOWN_PRINCIPAL) => "overloaded",
        (_, "") => outcome.label(),
        (_, r) => r,
    };
    AuditEvent {
        time: SystemTime::now(),
        protocol,
        kind,
        principal,
        context,
        source,
        station,
        outcome,
        reason,
        latency,
        class: Some(class),
        directory,
    }
}

/// Where audit events go. Called on the runtime for every attempt: an implementation
/// must not block (hand the event to a writer thread, or drop and count it).
pub trait AuditSink: Send + Sync + 'static {
    /// Record one event.
    fn record(&self, event: AuditEvent);
}

/// A process-unique request id: 16 hex digits of a random per-process prefix and a
/// counter, so ids from several instances behind one balancer do not collide either.
pub fn request_id() -> String {
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| {
        use rand::TryRngCore;
        // Without OS randomness ids are still unique within the process.
        rand::rngs::OsRng.try_next_u32().unwrap_or(0)
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix:08x}{:08x}", n & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_unique_and_fixed_width() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| request_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(
            ids.iter()
                .all(|i| i.len() == 16 && i.bytes().all(|b| b.is_ascii_hexdigit()))
        );
    }

    #[test]
    fn outcome_index_matches_all() {
        for (i, o) in AuditOutcome::ALL.iter().enumerate() {
            assert_eq!(o.index(), i);
        }
    }
}
