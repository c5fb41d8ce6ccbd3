//! What the RADIUS door's request tasks hand around, shared by the PAP path (`handle`)
//! and the 802.1X door (`eap`): the request that passed the receive loop's checks, the
//! verdict, and the reject with its delay.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use portcullis_radius::Code;
use rand::Rng;

use super::Radius;
use super::dedup::RequestKey;
use super::nas::{DropReason, Nas};
use super::reply::ReplyPath;

/// A request that passed the receive loop's checks.
pub(crate) struct Request {
    /// The packet (at most 4096 octets).
    pub data: Vec<u8>,
    /// Where it came from (the NAS's address: the core's source, the audit's client).
    pub peer: SocketAddr,
    /// Where the reply goes (the UDP socket and addresses, or the RadSec connection).
    pub path: ReplyPath,
    /// Its duplicate-detection key.
    pub key: RequestKey,
    /// When it was received (the reject delay and the core's deadline count from here).
    pub arrived: Instant,
    /// The NAS it came from.
    pub nas: Arc<Nas>,
    /// Its id in the audit events.
    pub request_id: String,
}

/// What to do with a request.
pub(crate) enum Verdict {
    /// Reply with `code` and `attrs`, no earlier than `not_before`.
    Reply {
        code: Code,
        not_before: Instant,
        attrs: Vec<(u8, Vec<u8>)>,
    },
    /// Send nothing (the NAS retransmits or fails over).
    Drop(DropReason),
}

/// An Access-Reject, sent no earlier than the reject delay plus jitter after arrival, nor
/// before the core's own `answer_after` (the unknown-user mimic delay) from now.
pub(crate) fn reject(radius: &Radius, arrived: Instant, answer_after: Duration) -> Verdict {
    let c = &radius.config;
    let jitter_ms = u64::try_from(c.reject_jitter.as_millis()).unwrap_or(u64::MAX);
    let jitter = if jitter_ms == 0 {
        Duration::ZERO
    } else {
        Duration::from_millis(radius.rng.lock().random_range(0..=jitter_ms))
    };
    let not_before = (arrived + c.reject_delay + jitter).max(Instant::now() + answer_after);
    Verdict::Reply {
        code: Code::AccessReject,
        not_before,
        attrs: Vec::new(),
    }
}
