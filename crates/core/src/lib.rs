//! Verification core: every credential check of every front end passes through here.
//!
//! It owns the decision of *whether* and *when* a secret is hashed: throttling before any
//! hash is spent, admission control (shed early with a fast "overloaded"), fair queuing
//! across sources, and the dedicated pool of OS threads that does the hashing so the async
//! runtime never runs a KDF. It has no network code: front ends build an [`Attempt`] and
//! map the [`Outcome`] to their protocol.
//!
//! Time is a parameter ([`Clock`]) and storage sits behind traits ([`CredentialSource`]),
//! so every rule is testable deterministically.

pub mod attempt;
pub mod clock;
pub mod source;

pub use attempt::{Attempt, Outcome, PrincipalKind, Protocol};
pub use clock::{Clock, ManualClock, SystemClock};
pub use source::{CredentialSource, SourceError, StoredCredentials};
