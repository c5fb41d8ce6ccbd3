//! One RadSec connection: the TLS handshake under its deadline, the NAS its certificate
//! names, then a reader and a writer.
//!
//! The reader takes an in-flight permit *before* reading each packet, so a connection
//! never has more than `max_in_flight` requests being answered, and a NAS that sends
//! faster than it is answered is pushed back by TCP instead of queued in memory. It reads
//! at most the rest of the current packet at a time (`Deframer::want`), so its buffer
//! holds one packet. Each request's permit travels with its answer into the writer's
//! queue and is released when the writer takes the answer into its bounded output; a NAS
//! that stops reading its answers therefore stops its own reader, and the write deadline
//! closes it (`writer`: every buffer between the door and the NAS is bounded, the
//! kernel's send buffer included, so the writer waits soon and its deadline decides).
//! The same deadline is also the socket's `TCP_USER_TIMEOUT`, for answers a NAS that
//! vanished leaves unacknowledged after they were all handed to the kernel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use portcullis_radius::{Deframer, MAX_PACKET};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use portcullis_radius::v11::ALPN_RADIUS_1_1;

use super::config::Radius11;
use super::writer;
use super::{CLOSED, CONNECTIONS, RadsecDoor};
use crate::nas::{Nas, NasTable};
use crate::reply::{ReplyPath, StreamReply};
use portcullis_door::tls::pin::LeafNames;

/// Why a connection was refused after TCP accept, with its counter label (the limits
/// refused before TLS are counted in the accept loop).
pub(super) const REFUSALS: [(&str, &str); 8] = [
    ("accepted", "the NAS was recognised"),
    ("limit", "radius.radsec.max_connections reached"),
    (
        "per_source",
        "radius.radsec.max_connections_per_source reached",
    ),
    ("handshake_timeout", "the TLS handshake took too long"),
    (
        "handshake_failed",
        "the TLS handshake failed (no certificate, another CA, revoked)",
    ),
    ("unknown_certificate", "the certificate names no NAS"),
    ("source_mismatch", "the NAS connected from outside its CIDR"),
    (
        "no_common_version",
        "no RADIUS version both sides allow (radius.radsec.radius_1_1, RFC 9765)",
    ),
];

/// Serve one accepted TCP connection until it ends.
pub(super) async fn serve(
    door: &Arc<RadsecDoor>,
    tcp: TcpStream,
    peer: SocketAddr,
    stop: CancellationToken,
    tracker: &TaskTracker,
) {
    let c = &door.config;
    bound_unacknowledged(&tcp, c.write_timeout, peer);
    bound_send_buffer(&tcp, writer::send_buffer(c.max_in_flight), peer);
    let mut tls = match tokio::time::timeout(c.handshake_timeout, door.acceptor().accept(tcp)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let alpn = e
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .is_some_and(|r| *r == rustls::Error::NoApplicationProtocol);
            if alpn {
                // RFC 9765 §3.3: worth an operator's attention (a NAS that will never
                // connect until one side's configuration changes).
                metrics::counter!(CONNECTIONS, "outcome" => "no_common_version").increment(1);
                return door.log_refused(
                    peer,
                    "it offered no RADIUS version by ALPN that radius.radsec.radius_1_1 allows \
                     (TLS alert no_application_protocol sent)",
                );
            }
            metrics::counter!(CONNECTIONS, "outcome" => "handshake_failed").increment(1);
            return tracing::debug!(%peer, "RadSec handshake failed: {e}");
        }
        Err(_) => {
            metrics::counter!(CONNECTIONS, "outcome" => "handshake_timeout").increment(1);
            return tracing::debug!(%peer, "RadSec handshake timed out");
        }
    };
    // The verifier required a certificate chained to client_ca; which NAS it names is
    // the NAS table's answer.
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| LeafNames::of(leaf.as_ref()));
    let Some(leaf) = leaf else {
        metrics::counter!(CONNECTIONS, "outcome" => "handshake_failed").increment(1);
        return;
    };
    let session = tls.get_ref().1;
    let radius_1_1 = session.alpn_protocol() == Some(ALPN_RADIUS_1_1);
    let version_refused = if radius_1_1 {
        // RFC 9765 §3.4: RADIUS/1.1 only over TLS 1.3 (a client offering it over 1.2
        // breaks the RFC; versions without 1.3 are refused in the configuration).
        (session.protocol_version() != Some(rustls::ProtocolVersion::TLSv1_3))
            .then_some("it negotiated RADIUS/1.1 over TLS 1.2 (RFC 9765 needs TLS 1.3)")
    } else {
        (c.radius_1_1 == Radius11::Require).then_some(
            "it did not negotiate RADIUS/1.1 by ALPN and radius.radsec.radius_1_1 = \"require\"",
        )
    };
    let mut table = Arc::clone(&door.radius.nas.read());
    let nas = match recognise(&table, &leaf, peer, radius_1_1) {
        Ok(n) => n,
        Err(outcome) => {
            metrics::counter!(CONNECTIONS, "outcome" => outcome).increment(1);
            let what = match outcome {
                "source_mismatch" => format!(
                    "its certificate {} names a NAS registered for other addresses",
                    leaf.describe()
                ),
                _ => format!("its certificate {} names no NAS", leaf.describe()),
            };
            return door.log_refused(peer, &what);
        }
    };
    if let Some(why) = version_refused {
        metrics::counter!(CONNECTIONS, "outcome" => "no_common_version").increment(1);
        door.log_refused(peer, &format!("NAS {:?}: {why}", nas.name));
        return refuse_version(tls, c.write_timeout).await;
    }
    metrics::counter!(CONNECTIONS, "outcome" => "accepted").increment(1);
    tracing::debug!(%peer, nas = %nas.name, radius_1_1, "RadSec connection");

    // rustls holds at most this much of what the NAS has not taken (see `writer`).
    tls.get_mut().1.set_buffer_limit(Some(writer::TLS_BUFFER));
    let (mut rd, wr) = tokio::io::split(tls);
    let in_flight = Arc::new(Semaphore::new(c.max_in_flight));
    let (tx, rx) = mpsc::channel::<StreamReply>(c.max_in_flight);
    let closed = CancellationToken::new();
    let started = Instant::now();
    // Milliseconds since `started` of the last whole request or answer taken.
    let active = Arc::new(AtomicU64::new(0));
    let writer = {
        let closed = closed.clone();
        let active = Arc::clone(&active);
        let write_timeout = c.write_timeout;
        tokio::spawn(async move {
            let why = writer::run(wr, rx, write_timeout, || {
                active.store(millis(started), Ordering::Relaxed);
            })
            .await;
            if !why.is_empty() {
                closed.cancel();
            }
            why
        })
    };

    let mut nas = nas;
    let mut deframer = Deframer::new();
    let mut buf = vec![0u8; MAX_PACKET];
    let idle = c.idle_timeout;
    let reason: &'static str = 'conn: loop {
        let deadline = || {
            let last = started + std::time::Duration::from_millis(active.load(Ordering::Relaxed));
            tokio::time::Instant::from_std(last + idle)
        };
        // Room for one more request first (pushes back on the NAS when it is full).
        let permit = loop {
            tokio::select! {
                p = Arc::clone(&in_flight).acquire_owned() => match p {
                    Ok(p) => break p,
                    Err(_) => break 'conn "closed",
                },
                () = tokio::time::sleep_until(deadline()) => {
                    // Requests in flight: not idle, whatever the clock says.
                    active.store(millis(started), Ordering::Relaxed);
                }
                () = closed.cancelled() => break 'conn "write",
                () = stop.cancelled() => break 'conn "shutdown",
            }
        };
        let packet = loop {
            match deframer.next_packet() {
                Ok(Some(p)) => break p,
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(%peer, nas = %nas.name, "closing RadSec connection: {e}");
                    break 'conn "framing";
                }
            }
            let want = deframer.want().min(buf.len());
            let Some(room) = buf.get_mut(..want) else {
                break 'conn "framing";
            };
            let n = tokio::select! {
                r = rd.read(room) => match r {
                    Ok(0) => break 'conn "eof",
                    Ok(n) => n,
                    // The kernel's write deadline (TCP_USER_TIMEOUT) ended it.
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        break 'conn "write_timeout"
                    }
                    Err(_) => break 'conn "read_error",
                },
                () = tokio::time::sleep_until(deadline()) => {
                    if in_flight.available_permits() + 1 < c.max_in_flight {
                        active.store(millis(started), Ordering::Relaxed);
                        continue;
                    }
                    break 'conn "idle";
                }
                () = closed.cancelled() => break 'conn "write",
                () = stop.cancelled() => break 'conn "shutdown",
            };
            deframer.push(&room[..n]);
        };
        active.store(millis(started), Ordering::Relaxed);
        // The NAS table changed since the last request: the NAS must still be there and
        // still be named by this certificate.
        let current = Arc::clone(&door.radius.nas.read());
        if !Arc::ptr_eq(&current, &table) {
            match recognise(&current, &leaf, peer, radius_1_1) {
                Ok(n) if n.name == nas.name => nas = n,
                _ => break 'conn "nas_removed",
            }
            table = current;
        }
        let path = ReplyPath::Stream {
            tx: tx.clone(),
            permit,
        };
        super::dispatch(door, &nas, &packet, peer, path, tracker);
    };
    // Stop reading; the writer drains what the requests in flight still answer.
    drop(tx);
    drop(rd);
    let why = match writer.await {
        Ok(w) if !w.is_empty() => w,
        _ => reason,
    };
    metrics::counter!(CLOSED, "reason" => why).increment(1);
    tracing::debug!(%peer, nas = %nas.name, "RadSec connection closed: {why}");
}

/// The NAS `leaf` names in `table`, as its RadSec connections see it, if `peer` is in its
/// CIDR; else the refusal's counter label.
fn recognise(
    table: &NasTable,
    leaf: &LeafNames,
    peer: SocketAddr,
    radius_1_1: bool,
) -> Result<Arc<Nas>, &'static str> {
    let mut named = table.by_certificate(leaf).peekable();
    if named.peek().is_none() {
        return Err("unknown_certificate");
    }
    named
        .find(|n| n.cidr.contains(peer.ip()))
        .map(|n| Arc::new(n.over_radsec(radius_1_1)))
        .ok_or("source_mismatch")
}

/// Tell a NAS that did not negotiate RADIUS/1.1 where it is required, in the one way it
/// may read (RFC 9765 §3.3.1: a Protocol-Error with a zero Token, Error-Cause 406 and a
/// Reply-Message), then close.
async fn refuse_version(
    mut tls: tokio_rustls::server::TlsStream<TcpStream>,
    within: std::time::Duration,
) {
    let why = portcullis_radius::v11::encode_protocol_error(
        [0; 4],
        portcullis_radius::v11::UNSUPPORTED_EXTENSION,
        "this server requires RADIUS/1.1 (RFC 9765): offer ALPN \"radius/1.1\" over TLS 1.3",
    );
    let _ = tokio::time::timeout(within, async {
        tls.write_all(&why).await?;
        tls.shutdown().await
    })
    .await;
}

/// Give the kernel the write deadline: data unacknowledged for `within` aborts the
/// connection (Linux's `TCP_USER_TIMEOUT`, which since 5.10 also bounds a zero window).
/// Elsewhere the writer's own deadline is the only one.
fn bound_unacknowledged(tcp: &TcpStream, within: std::time::Duration, peer: SocketAddr) {
    #[cfg(target_os = "linux")]
    {
        let ms = u32::try_from(within.as_millis()).unwrap_or(u32::MAX);
        if let Err(e) =
            nix::sys::socket::setsockopt(tcp, nix::sys::socket::sockopt::TcpUserTimeout, &ms)
        {
            tracing::warn!(%peer, "RadSec: TCP_USER_TIMEOUT not set ({e}); only the writer's deadline holds");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (tcp, within, peer);
}

/// Fix the kernel's send buffer at `bytes` (no autotuning to megabytes), so what a NAS
/// that does not read can make the connection hold is bounded and the writer's deadline
/// starts once that much waits.
fn bound_send_buffer(tcp: &TcpStream, bytes: usize, peer: SocketAddr) {
    if let Err(e) = nix::sys::socket::setsockopt(tcp, nix::sys::socket::sockopt::SndBuf, &bytes) {
        tracing::warn!(%peer, "RadSec: SO_SNDBUF not set ({e}); the kernel may buffer more");
    }
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
