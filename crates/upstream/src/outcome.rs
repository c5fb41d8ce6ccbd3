//! What a check answers: the outcome the caller feeds into the same decision as a local hash.

use std::fmt;
use std::sync::Arc;

/// The outcome of one password check against a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The directory accepted the password (the bind succeeded).
    Accepted,
    /// The directory refused the password (invalidCredentials), the account is locked or
    /// disabled there, or the name matched several entries. Counts as a failed guess.
    Rejected,
    /// The directory has no such user. The caller answers it exactly like [`Rejected`]
    /// (and in the same time), so that no one learns which names exist. In DN-template
    /// mode most directories (OpenLDAP, 389-ds) answer an unknown DN with invalidCredentials,
    /// so it is reported as [`Rejected`] there.
    ///
    /// [`Rejected`]: Outcome::Rejected
    Unknown,
    /// No answer could be had: every server down, slow, broken or skipped, or this
    /// directory's queue full. Not the user's fault: the caller refuses fast without
    /// counting a failed guess.
    Unavailable(Unavailable),
}

/// Why a check could not be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// The kind of fault.
    pub kind: UnavailableKind,
    /// What happened (for logs and status; never contains a password).
    pub detail: String,
}

/// The kinds of [`Unavailable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnavailableKind {
    /// Too many checks wait on this directory already (the fair queue is full).
    Overloaded,
    /// Every server's breaker is open: no server was tried.
    AllServersDown,
    /// A connect, TLS handshake, bind or search, or the whole check, took too long.
    Timeout,
    /// The TCP connection could not be made or broke.
    Connect,
    /// TLS failed (certificate not trusted, StartTLS refused, …).
    Tls,
    /// The server sent something that is not valid LDAP or not the expected answer.
    Protocol,
    /// The service account's bind failed (wrong password, locked, …): a configuration fault.
    ServiceAccount,
    /// The server answered with an error result (busy, unavailable, unwillingToPerform,
    /// no such search base, …).
    DirectoryError,
}

impl UnavailableKind {
    /// The label in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Overloaded => "overloaded",
            Self::AllServersDown => "all_servers_down",
            Self::Timeout => "timeout",
            Self::Connect => "connect",
            Self::Tls => "tls",
            Self::Protocol => "protocol",
            Self::ServiceAccount => "service_account",
            Self::DirectoryError => "directory_error",
        }
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.detail)
    }
}

impl Unavailable {
    /// An unavailable outcome.
    pub fn new(kind: UnavailableKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }
}

impl Outcome {
    /// The label in metrics and audit events.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Rejected => "rejected",
            Self::Unknown => "unknown",
            Self::Unavailable(_) => "unavailable",
        }
    }
}

/// A check's outcome and who gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The outcome.
    pub outcome: Outcome,
    /// The directory's name.
    pub directory: Arc<str>,
    /// The URL of the server that answered (none when no server answered, or when the
    /// check was settled without asking one: an empty password, an empty name).
    pub server: Option<Arc<str>>,
}
