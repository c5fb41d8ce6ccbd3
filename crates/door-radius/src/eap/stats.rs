//! The 802.1X door's counters: kept apart from the door so the NAS stats registry (and
//! through it the status page) can hold them without depending on the door.

use std::sync::atomic::AtomicU64;

/// Counters of the EAP door (status page, tests; `/metrics` has the same by label).
#[derive(Debug, Default)]
pub struct EapStats {
    /// Conversations in progress (updated as the table changes and every second).
    pub conversations: AtomicU64,
    /// Conversations started.
    pub started: AtomicU64,
    /// EAP-TLS logins with a full handshake.
    pub tls_full: AtomicU64,
    /// EAP-TLS logins resumed.
    pub tls_resumed: AtomicU64,
    /// TTLS logins with a full handshake (inner password checked).
    pub ttls_full: AtomicU64,
    /// TTLS logins resumed (no password asked).
    pub ttls_resumed: AtomicU64,
    /// Logins that ended in EAP-Failure.
    pub failures: AtomicU64,
    /// Round trips of finished logins.
    pub round_trips: AtomicU64,
    /// New conversations refused (table or receive queue near full).
    pub refused_new: AtomicU64,
    /// Requests naming an unknown or expired State.
    pub unknown_state: AtomicU64,
    /// Requests naming another NAS's State.
    pub other_nas: AtomicU64,
    /// Conversations forgotten idle.
    pub expired: AtomicU64,
    /// ClientHellos that started a full TLS handshake (no ticket or PSK offered).
    pub full_handshakes: AtomicU64,
    /// New conversations refused before TLS: their station is one the core's throttle
    /// refuses (`hold`).
    pub held: AtomicU64,
}
