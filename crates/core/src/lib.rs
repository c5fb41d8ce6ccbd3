//! Verification core: every credential check of every front end passes through here.
//!
//! It owns the decision of *whether* and *when* a secret is hashed: throttling before any
//! hash is spent, admission control (shed early with a fast "overloaded"), fair queuing
//! across sources, and the dedicated pool of OS threads that does the hashing so the async
//! runtime never runs a KDF. It has no network code: front ends build an [`Attempt`] and
//! map the [`Outcome`] to their protocol.
//!
//! Time is a parameter ([`Clock`]) and storage sits behind traits ([`CredentialSource`],
//! [`ThrottleStore`]), so every rule is testable deterministically.
//!
//! # Design
//!
//! The path of one attempt is documented on [`verifier`]; the parts:
//!
//! - **Throttling before hashing** ([`throttle`]): GCRA failure budgets per (principal,
//!   source prefix), per source prefix (IPv4 /24, IPv6 /64 by default) and per principal,
//!   charged atomically *before* hashing and refunded on success, so a concurrent flood
//!   cannot slip hundreds of guesses in before the first failure is recorded. Throttled
//!   answers are immediate, spend no hash and hold no thread. State sits behind
//!   [`ThrottleStore`] (in memory now; the trait maps onto one Redis Lua script per call).
//! - **Why the per-principal budget skips trusted sources.** It exists to stop a
//!   distributed guess at one account (each network under its own budget). Applied to
//!   everyone it becomes Keycloak's lockout: any stranger can lock any user out. A source
//!   that logged in successfully as that principal recently (or an allow-listed CIDR)
//!   keeps working; new devices wait out the budget like everyone else.
//! - **Priority classes**: trusted (recent success for this principal from this prefix,
//!   or allow-listed), unknown, suspect (the prefix, or the (principal, prefix), has used
//!   half its failure budget). Classes share the pool by weight (396/3/1) with virtual-time
//!   scheduling: an idle class lends its share, idleness earns no credit; the trusted
//!   class keeps its share across the short gaps of a closed loop, and a batch holds
//!   jobs of one class only.
//! - **Fair queuing inside a class**: shuffle sharding as in Kubernetes API Priority and
//!   Fairness (each flow, i.e. source prefix, is dealt 4 of 64 queues by a keyed hash and
//!   joins the shortest), served by deficit round robin whose deficits are in expected
//!   hash cost ([`portcullis_hash::Credential::cost`]), so expensive hashes count as such.
//! - **Admission control**: a job is refused at once ("overloaded", jittered retry-after)
//!   when the queue is full or its expected finish (queue ahead of it under DRR and class
//!   weights, measured hash time) is past its deadline. At dequeue, CoDel per queue
//!   (target = median hash time, interval = 10x target, both overridable): once a queue's
//!   wait has stayed above target for an interval, every job that waited longer than the
//!   target is shed. Jobs past their deadline or whose caller left are dropped too.
//! - **The pool**: dedicated OS threads (`portcullis-hash-N`, default one
//!   per core), never the runtime or tokio's blocking pool. PBKDF2 jobs sharing a
//!   [`portcullis_hash::BatchKey`] are gathered into one `batch::derive` call when more are
//!   queued than idle workers could start (up to `batch::preferred_batch`); otherwise
//!   single-stream. Other KDFs run through `Credential::verify` on the pool; cheap
//!   credentials (peppered HMAC) are verified inline. Rehash-on-login runs on a background
//!   queue served only when no verification waits, after the answer went back.
//! - **Unknown principals** are answered "rejected" after a delay drawn from recent real
//!   verification latencies of the same principal kind, returned to the caller as a timer
//!   (`answer_after`); no hash, no pool slot. They face the same admission check and the
//!   same budgets as known principals, so neither timing, throttling nor overload answers
//!   reveal existence.
//! - **Failures of dependencies**: a credential-store error or timeout is "overloaded"
//!   with a retry-after (and refunds the charge); a throttle-store error falls back to a
//!   per-node in-memory store (throttling degrades to per node, never to none).
#![forbid(unsafe_code)]

pub mod attempt;
pub mod audit;
pub mod clock;
pub mod config;
pub mod error;
mod memory;
mod metrics;
pub mod net;
mod pool;
pub mod remote;
mod scheduler;
pub mod source;
mod spread;
mod stats;
pub mod throttle;
mod timer;
pub mod verifier;

pub use attempt::{Attempt, Class, EapDetail, Outcome, PrincipalKind, ProofCheck, Protocol};
pub use audit::{AuditContext, AuditEvent, AuditOutcome, AuditSink};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{
    ClassShares, CodelConfig, LimitConfig, ThrottleConfig, UnknownDelay, VerifierConfig,
};
pub use error::CoreError;
pub use net::{IpPrefix, Origin};
pub use remote::{RemoteAnswer, RemoteRoute, RemoteSource, RemoteVerdict};
pub use source::{CredentialSource, SourceError, StoredCredentials};
pub use throttle::{
    Charge, Decision, GcraLimit, MemoryThrottleStore, ThrottleError, ThrottleKey, ThrottleStore,
};
pub use verifier::{BudgetScope, BudgetState, Deferred, PoolSnapshot, ThrottleReport, Verifier};

#[cfg(test)]
mod tests;
