//! One RadSec connection's writer: the answers to its NAS, with bounded output and one
//! write deadline (issue 41).
//!
//! What a connection may hold for a NAS that does not read is bounded at every layer: the
//! reader's queue of answers (`max_in_flight`, each holding its request's permit), this
//! writer's output (at most [`OUTPUT_BOUND`] octets), rustls' buffer of records not yet
//! written ([`TLS_BUFFER`]) and the kernel's send buffer (`SO_SNDBUF`, [`send_buffer`]:
//! sized from `max_in_flight` instead of Linux's autotuning, which lets a connection
//! hold megabytes). So a NAS that sends more than it reads makes this writer wait, and
//! from the first write that had to wait the deadline runs: unless every octet queued
//! has reached the kernel within `write_timeout` (the writer caught up), the connection
//! is closed. Progress that does not catch up (a NAS reading a trickle, which also keeps
//! the kernel's `TCP_USER_TIMEOUT` from firing) does not reset it.

use std::future::Future;
use std::time::Duration;

use portcullis_radius::MAX_PACKET;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{self, error::TryRecvError};
use tokio::time::Instant;

use crate::reply::StreamReply;

/// Octets of answers the writer takes from its queue before the ones taken were written:
/// one largest packet, so an answer leaves the queue (and gives its permit back) as soon
/// as there is room for it.
pub(super) const OUTPUT_BOUND: usize = MAX_PACKET;

/// rustls' bound on TLS records not yet written to the socket (its default is 64 KiB).
pub(super) const TLS_BUFFER: usize = 2 * MAX_PACKET;

/// The kernel send buffer of a connection allowed `max_in_flight` requests: room for as
/// many largest answers, between 64 KiB and 1 MiB (Linux doubles it for its bookkeeping).
pub(super) fn send_buffer(max_in_flight: usize) -> usize {
    max_in_flight
        .saturating_mul(MAX_PACKET)
        .clamp(64 * 1024, 1024 * 1024)
}

/// Write the answers of `rx` to `wr` until every sender is gone (then shut down the TLS
/// session and return `""`) or the write deadline passes or a write fails (return the
/// reason, a `portcullis_radsec_closed_total` label). `answered` runs for each answer
/// taken (the connection is not idle).
pub(super) async fn run<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<StreamReply>,
    write_timeout: Duration,
    answered: impl Fn(),
) -> &'static str {
    let mut out: Vec<u8> = Vec::with_capacity(OUTPUT_BOUND + MAX_PACKET);
    // When a write first had to wait since the writer last caught up.
    let mut blocked_since: Option<Instant> = None;
    let mut open = true;
    loop {
        // Take answers while there is room; their permits go back, so the reader reads on.
        while open && out.len() < OUTPUT_BOUND {
            match rx.try_recv() {
                Ok((bytes, permit)) => {
                    out.extend_from_slice(&bytes);
                    drop(permit);
                    answered();
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => open = false,
            }
        }
        if !out.is_empty() {
            match within(&mut blocked_since, write_timeout, wr.write(&out)).await {
                Ok(0) => return "write_failed",
                Ok(n) => drop(out.drain(..n.min(out.len()))),
                Err(why) => return why,
            }
            continue;
        }
        // Everything is with rustls: push it to the kernel; then the writer caught up.
        if let Err(why) = within(&mut blocked_since, write_timeout, wr.flush()).await {
            return why;
        }
        blocked_since = None;
        if !open {
            // Every sender is gone: the reader stopped and every request was answered.
            let _ = tokio::time::timeout(write_timeout, wr.shutdown()).await;
            return "";
        }
        match rx.recv().await {
            Some((bytes, permit)) => {
                out.extend_from_slice(&bytes);
                drop(permit);
                answered();
            }
            None => open = false,
        }
    }
}

/// Run one write or flush; if it has to wait, only until `within` after the first wait
/// since the writer last caught up (`blocked_since`, set here).
async fn within<T>(
    blocked_since: &mut Option<Instant>,
    within: Duration,
    io: impl Future<Output = std::io::Result<T>>,
) -> Result<T, &'static str> {
    let mut io = std::pin::pin!(io);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(io.as_mut().poll(cx))).await;
    let result = match first {
        std::task::Poll::Ready(r) => r,
        std::task::Poll::Pending => {
            let since = *blocked_since.get_or_insert_with(Instant::now);
            match tokio::time::timeout_at(since + within, io).await {
                Ok(r) => r,
                Err(_) => return Err("write_timeout"),
            }
        }
    };
    result.map_err(|e| {
        if e.kind() == std::io::ErrorKind::TimedOut {
            // The kernel's deadline (TCP_USER_TIMEOUT) ended it.
            "write_timeout"
        } else {
            "write_failed"
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;
    use tokio::io::AsyncReadExt;
    use tokio::sync::Semaphore;

    /// A queue of `n` answers of `len` octets each, with their permits.
    async fn answers(n: usize, len: usize) -> (mpsc::Receiver<StreamReply>, Arc<Semaphore>) {
        let permits = Arc::new(Semaphore::new(n));
        let (tx, rx) = mpsc::channel(n.max(1));
        for i in 0..n {
            let p = Arc::clone(&permits).acquire_owned().await.unwrap();
            let bytes: Arc<[u8]> = vec![u8::try_from(i % 251).unwrap(); len].into();
            tx.send((bytes, p)).await.unwrap();
        }
        (rx, permits)
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_never_reads_is_cut_at_the_deadline_from_the_first_wait() {
        // A pipe of 1 KiB nobody reads: the writer must wait once it holds 1 KiB.
        let (wr, _peer) = tokio::io::duplex(1024);
        let (rx, _permits) = answers(16, 1000).await;
        let start = Instant::now();
        let why = run(wr, rx, Duration::from_millis(300), || {}).await;
        assert_eq!(why, "write_timeout");
        assert_eq!(start.elapsed(), Duration::from_millis(300));
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickle_that_never_lets_the_writer_catch_up_does_not_reset_the_deadline() {
        let (wr, mut peer) = tokio::io::duplex(1024);
        let (rx, _permits) = answers(64, 1000).await;
        let reader = tokio::spawn(async move {
            let mut chunk = [0u8; 100];
            let mut got = 0usize;
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                match peer.read(&mut chunk).await {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => got += n,
                }
            }
        });
        let start = Instant::now();
        let why = run(wr, rx, Duration::from_millis(300), || {}).await;
        assert_eq!(why, "write_timeout");
        assert_eq!(start.elapsed(), Duration::from_millis(300));
        assert!(reader.await.unwrap() > 0, "the trickle made progress");
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_reads_gets_every_answer_and_the_session_is_shut_down() {
        let (wr, mut peer) = tokio::io::duplex(1024);
        let (rx, permits) = answers(64, 1000).await;
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            peer.read_to_end(&mut all).await.map(|_| all.len())
        });
        let why = run(wr, rx, Duration::from_millis(300), || {}).await;
        assert_eq!(why, "");
        assert_eq!(reader.await.unwrap().unwrap(), 64 * 1000);
        assert_eq!(permits.available_permits(), 64);
    }

    #[test]
    fn the_kernel_buffer_follows_max_in_flight_within_bounds() {
        assert_eq!(send_buffer(1), 64 * 1024);
        assert_eq!(send_buffer(64), 64 * MAX_PACKET);
        assert_eq!(send_buffer(4096), 1024 * 1024);
    }
}
