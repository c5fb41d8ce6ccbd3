//! Why a conversation ended in Failure, and the identity bound both the machine and its
//! tunnel apply: below both, so they import it one way.

/// Why a conversation ended in Failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The peer wants only methods needing an NT hash (PEAP, EAP-MSCHAPv2).
    NtHashMethod,
    /// No method both sides accept.
    NoCommonMethod,
    /// A malformed or out-of-place message.
    Protocol(String),
    /// The TLS handshake failed.
    Tls(String),
    /// More round trips than allowed.
    TooManyRounds,
    /// Inner method other than PAP (inner EAP, CHAP, MS-CHAP).
    InnerMethod(&'static str),
    /// The caller's decision.
    Denied(&'static str),
}

impl Reason {
    /// A short label for metrics and audit events.
    pub fn label(&self) -> &'static str {
        match self {
            Reason::NtHashMethod => "nt_hash_method",
            Reason::NoCommonMethod => "no_common_method",
            Reason::Protocol(_) => "protocol",
            Reason::Tls(_) => "tls_handshake",
            Reason::TooManyRounds => "too_many_rounds",
            Reason::InnerMethod(_) => "inner_method",
            Reason::Denied(r) => r,
        }
    }
}

/// Longest identity kept (characters).
pub(crate) const MAX_IDENTITY: usize = 253;
