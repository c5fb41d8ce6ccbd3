//! Where a request's answer goes: back out of the UDP socket it came in on (to its own
//! source, from the local address it was sent to), or into the RadSec connection it was
//! read from. The authentication and accounting paths (`handle`, `acct`) decide an
//! answer the same way whatever the transport and hand it to its [`ReplyPath`].
//!
//! A stream reply carries the connection's in-flight permit into the connection's writer
//! queue, which releases it only once the octets are written: a peer that stops reading
//! its answers stops its own reader (no permit, no next request) instead of making the
//! queue grow. The queue's capacity is the permit count, so a send never finds it full.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::socket::RadiusSocket;

/// One answer for a RadSec connection's writer, with the in-flight permit it releases.
pub(crate) type StreamReply = (Arc<[u8]>, OwnedSemaphorePermit);

/// How to answer one request.
pub(crate) enum ReplyPath {
    /// UDP: to `peer` from `local` on `sock`.
    Udp {
        /// The socket the request arrived on.
        sock: Arc<RadiusSocket>,
        /// Where it came from.
        peer: SocketAddr,
        /// The local address it was sent to.
        local: Option<IpAddr>,
    },
    /// A RadSec connection: into its writer queue.
    Stream {
        /// The connection's writer queue.
        tx: mpsc::Sender<StreamReply>,
        /// The connection's in-flight permit this request holds.
        permit: OwnedSemaphorePermit,
    },
}

impl ReplyPath {
    /// Send `bytes` (a UDP send, or a hand-off to the connection's writer, which ends
    /// this request's hold on the connection).
    pub(crate) async fn send(self, bytes: Arc<[u8]>) -> io::Result<()> {
        match self {
            ReplyPath::Udp { sock, peer, local } => sock.send(&bytes, peer, local).await,
            ReplyPath::Stream { tx, permit } => tx
                .try_send((bytes, permit))
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "RadSec connection closed")),
        }
    }

    /// [`ReplyPath::send`] from a task of `tracker` (a receive path never waits on a
    /// send); a failure only means the peer is gone.
    pub(crate) fn send_later(self, bytes: Arc<[u8]>, tracker: &tokio_util::task::TaskTracker) {
        tracker.spawn(async move {
            let _ = self.send(bytes).await;
        });
    }
}
