//! Issues 28 and 41: a RadSec NAS that does not read its answers is cut by the write
//! deadline, whatever the kernel's buffers and timers do.
//!
//! The NAS here is a raw rustls client over a blocking socket with a small receive
//! buffer. What it sends makes the server's output outgrow every buffer between them (the
//! connection's bounded output, rustls', the kernel's send buffer the door sizes, the
//! NAS's receive buffer), so the server's writes must wait; from then on only the write
//! deadline (`write_timeout_ms`, 300 ms here) decides. The NAS watches from outside: its
//! own writes or reads fail (reset or end of stream) when the server cuts it. Nothing
//! waits a fixed time: each wait is for a condition, with a deadline (30 s) that only a
//! broken door reaches. Then the same address is served again (one connection per
//! source: the cut connection's slot was given back).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use portcullis_radius::{Code, encode_request};

use crate::radsec_support::{RADSEC, RadsecServer, client_config, connect, login, start_radsec};

/// The wait that only a door that never cuts reaches.
const CUT_WITHIN: Duration = Duration::from_secs(30);

/// Requests the NAS sends before it goes quiet (slow reader): their answers (about 60
/// octets each with TLS) are about 600 KB, far more than the door buffers for a
/// connection of `max_in_flight = 4` (its kernel send buffer is sized from it) and less
/// than what Linux's autotuned send buffer would hold without that bound.
const BURST: u32 = 10_000;

async fn server() -> RadsecServer {
    let r = start_radsec(
        |f| {
            f.write_timeout_ms = 300;
            f.max_in_flight = 4;
            f.max_connections_per_source = 1;
            // Not what ends these connections.
            f.idle_timeout_secs = 3600;
        },
        |_| {},
    )
    .await;
    r.s.add_user("fred", "fr3d's password").await;
    r
}

/// A NAS connection with a 4 KB receive buffer, handshake done, never read by rustls.
async fn nas(r: &RadsecServer) -> (rustls::ClientConnection, TcpStream) {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let mut tcp = sock.connect(r.addr).await.unwrap().into_std().unwrap();
    tcp.set_nonblocking(false).unwrap();
    // A single read or write blocked this long means nobody cut anything.
    tcp.set_write_timeout(Some(CUT_WITHIN)).unwrap();
    tcp.set_read_timeout(Some(CUT_WITHIN)).unwrap();
    let config = client_config(&r.certs.ca, Some(&r.certs.ap1), &[]);
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(config, name).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).unwrap();
    }
    (conn, tcp)
}

/// Whether an I/O outcome is the server's cut (reset, broken pipe, end of stream) rather
/// than our own time bound.
fn is_cut(e: &std::io::Error) -> bool {
    !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Send Status-Server number `n`; `Err` when the socket refuses it.
fn send(conn: &mut rustls::ClientConnection, tcp: &mut TcpStream, n: u32) -> std::io::Result<()> {
    let mut auth = [0x5au8; 16];
    auth[..4].copy_from_slice(&n.to_be_bytes());
    let req = encode_request(Code::StatusServer, n as u8, auth, &[], RADSEC).unwrap();
    conn.writer().write_all(&req)?;
    while conn.wants_write() {
        conn.write_tls(tcp)?;
    }
    Ok(())
}

/// After the cut: the same address (one connection per source) is served again. The
/// server gives the slot back just after it closes the socket, so a refused attempt is
/// retried until a deadline.
async fn served_again(r: &RadsecServer) {
    let (ca, ap1, addr) = (r.certs.ca.clone(), r.certs.ap1.clone(), r.addr);
    let code = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + CUT_WITHIN;
        loop {
            let attempt = connect(addr, client_config(&ca, Some(&ap1), &[]))
                .and_then(|mut c| login(&mut c, 3, "fred", "fr3d's password"));
            match attempt {
                Ok(code) => return code,
                Err(e) => assert!(Instant::now() < deadline, "not served again: {e}"),
            }
            std::thread::yield_now();
        }
    })
    .await
    .unwrap();
    assert_eq!(code, Code::AccessAccept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_radsec_peer_that_never_reads_is_cut_by_the_write_deadline() {
    let r = server().await;
    let (mut conn, mut tcp) = nas(&r).await;
    // Send until the server cuts: once its output outgrows the buffers it stops reading,
    // so this NAS's writes block until the cut fails them. The number of requests that
    // takes depends on the buffers; that it ends does not.
    let (sent, outcome) = tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        let mut sent = 0u32;
        loop {
            if let Err(e) = send(&mut conn, &mut tcp, sent) {
                return (sent, e);
            }
            sent += 1;
            assert!(
                start.elapsed() < CUT_WITHIN,
                "not cut after {sent} requests"
            );
        }
    })
    .await
    .unwrap();
    assert!(is_cut(&outcome), "not cut after {sent} requests: {outcome}");
    assert!(sent > 4, "{sent}");
    served_again(&r).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_radsec_peer_that_reads_slower_than_it_asks_is_cut_by_the_write_deadline() {
    let r = server().await;
    let (mut conn, mut tcp) = nas(&r).await;
    // A burst, then quiet, reading its answers 512 octets at a time: the acknowledged
    // trickle keeps the kernel's TCP_USER_TIMEOUT from firing, so the write deadline,
    // counted from the first write that had to wait, must be what cuts it.
    let outcome = tokio::task::spawn_blocking(move || {
        for n in 0..BURST {
            if let Err(e) = send(&mut conn, &mut tcp, n) {
                return e;
            }
        }
        let start = Instant::now();
        let mut chunk = [0u8; 512];
        loop {
            match tcp.read(&mut chunk) {
                Ok(0) => return ErrorKind::UnexpectedEof.into(),
                Ok(_) => {}
                Err(e) => return e,
            }
            assert!(start.elapsed() < CUT_WITHIN, "a slow reader is never cut");
            // The trickle's pace (the NAS's behaviour under test, not a synchronisation).
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    assert!(is_cut(&outcome), "not cut: {outcome}");
    served_again(&r).await;
}
