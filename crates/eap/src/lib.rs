//! EAP over RADIUS for 802.1X (RFC 3579, RFC 3748): the EAP codec, EAP-TLS/EAP-TTLS
//! framing and fragmentation, TTLS phase-2 AVPs, key derivation, and the server's
//! conversation machine, which drives rustls sans-I/O. Pure: no sockets, no clock, no
//! store; randomness only inside rustls. The RADIUS front door owns timers, limits and
//! lookups; the load lab's EAP driver uses the same codec as a peer.
//!
//! Module map:
//! - [`packet`]: EAP packets (codes, method types, parser, encoders).
//! - [`radius`]: EAP-Message attributes split and joined at 253 octets.
//! - [`fragment`]: L/M/S flags, [`fragment::Reassembler`] and [`fragment::Fragmenter`].
//! - [`avp`]: Diameter AVPs of TTLS phase 2.
//! - [`keys`]: MSK/EMSK/Session-Id from the TLS exporter.
//! - [`hello`]: TLS 1.2 randoms from the hello messages.
//! - [`conversation`]: the server's state machine for one conversation; `tunnel`: the
//!   rustls connection inside it, the TLS 1.2 session digest, inner PAP.
#![forbid(unsafe_code)]

pub mod avp;
pub mod conversation;
pub mod fragment;
pub mod hello;
pub mod keys;
pub mod packet;
pub mod peer;
pub mod radius;
mod reason;
mod tunnel;

pub use conversation::{Accepted, Conversation, Decision, Pending, Reason, Settings, Start, Step};
pub use keys::Keys;
pub use packet::{Code, Packet, method};
pub use tunnel::SessionDigest;

use thiserror::Error;

/// Why EAP input was refused. Messages never include packet bytes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EapError {
    /// Shorter than its header or declared fields.
    #[error("EAP message truncated")]
    Truncated,
    /// A code other than Request, Response, Success, Failure.
    #[error("unknown EAP code {0}")]
    UnknownCode(u8),
    /// The Length field disagrees with the octets received.
    #[error("EAP length {declared} but {actual} octets received")]
    LengthMismatch {
        /// Length field.
        declared: usize,
        /// Octets present.
        actual: usize,
    },
    /// Over a size limit.
    #[error("EAP message too long ({0} octets)")]
    TooLong(usize),
    /// Fragments disagree with the declared total length, or a fragment is empty.
    #[error("EAP-TLS fragments do not add up to the declared length")]
    FragmentLength,
    /// More fragments than allowed for one message.
    #[error("too many EAP-TLS fragments for one message")]
    TooManyFragments,
    /// A malformed TTLS AVP.
    #[error("TTLS AVP: {0}")]
    Avp(&'static str),
    /// The TLS layer refused.
    #[error("TLS: {0}")]
    Tls(String),
}
