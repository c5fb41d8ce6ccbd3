//! Passwords that live in another system (issue 40): the capability the core is given to
//! ask an existing directory, like [`crate::CredentialSource`] for the local store.
//!
//! The core owns *when* a directory is asked: only for a user the local store does not
//! hold, only after throttling, the attack-window rules and the per-user failure budget of
//! that directory admitted the attempt (so a refused guess never reaches the directory),
//! and never on a hash thread (the check is awaited on the caller's task). How a directory
//! is asked (binds, failover, breakers, its own bounded in-flight count) is the
//! implementation's business: `portcullis-upstream` behind the server's adapter.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::throttle::GcraLimit;

/// Which directory checks a user, and the budget its users are held to.
#[derive(Debug, Clone)]
pub struct RemoteRoute {
    /// The directory's index in the source's own list (what [`RemoteSource::check`] is
    /// told).
    pub index: usize,
    /// The directory's name (audit events, metrics).
    pub directory: Arc<str>,
    /// The per-user failure budget for this directory's users, charged by every untrusted
    /// origin instead of the core's `throttle.principal` budget: it must stay below the
    /// directory's own lockout threshold, so that guesses let through can never lock the
    /// user out of the directory.
    pub failure_limit: GcraLimit,
    /// How long a cached credential of this directory's users may be used while the
    /// directory is unreachable; `None`: no cache (the default).
    pub cache_max_age: Option<Duration>,
}

/// What a directory answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteVerdict {
    /// The directory accepted the password.
    Accepted,
    /// The directory refused it (wrong password, locked or disabled there).
    Rejected,
    /// The directory has no such user: answered like a wrong password, in the time of a
    /// real check.
    Unknown,
    /// No answer could be had (down, slow, overloaded): not the user's fault, nothing is
    /// charged, the door answers "unavailable".
    Unavailable(&'static str),
}

/// One check's verdict and who gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteAnswer {
    /// The verdict.
    pub verdict: RemoteVerdict,
    /// The server that answered, when one did (for the audit event).
    pub server: Option<Arc<str>>,
}

/// An existing directory (or several) holding users' passwords.
pub trait RemoteSource: Send + Sync + 'static {
    /// The directory that checks `user` when the local store does not hold it; `None`
    /// when no directory takes this name (the user is then unknown).
    fn route(&self, user: &str) -> Option<RemoteRoute>;

    /// Checks `password` for `user` at the directory `route` named, queued fairly under
    /// `source` (the origin's key) behind that directory's own bound on checks in flight.
    /// Must not block a thread; bounded by the directory's own timeouts (the core also
    /// bounds it by the attempt's deadline).
    fn check<'a>(
        &'a self,
        route: &'a RemoteRoute,
        source: &'a str,
        user: &'a str,
        password: &'a [u8],
    ) -> BoxFuture<'a, RemoteAnswer>;
}
