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
//! See [`verifier`] for the path of one attempt and the design (classes, shuffle
//! sharding, deficit round robin, CoDel, GCRA keys, unknown principals).

pub mod attempt;
pub mod clock;
pub mod config;
pub mod error;
mod metrics;
pub mod net;
mod pool;
mod scheduler;
pub mod source;
mod stats;
pub mod throttle;
pub mod verifier;

pub use attempt::{Attempt, Outcome, PrincipalKind, Protocol};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{
    ClassShares, CodelConfig, LimitConfig, ThrottleConfig, UnknownDelay, VerifierConfig,
};
pub use error::CoreError;
pub use net::IpPrefix;
pub use source::{CredentialSource, SourceError, StoredCredentials};
pub use throttle::{
    Charge, Decision, GcraLimit, MemoryThrottleStore, ThrottleError, ThrottleKey, ThrottleStore,
};
pub use verifier::{Class, Deferred, PoolSnapshot, Verifier};

#[cfg(test)]
mod tests;
