//! One RADIUS UDP socket: receive a datagram with the local address it was sent to, and
//! send a reply to a given peer *from* a given local address.
//!
//! Report 003's server answered the wrong client because it read the peer from shared
//! state after the fact. Here the peer and the local address come back from the same
//! `recvmsg` call as the bytes (IP_PKTINFO / IPV6_RECVPKTINFO), travel with the request,
//! and are handed to `sendmsg` with the reply; nothing about a request's addressing is
//! stored anywhere another request could overwrite it. On a socket bound to a wildcard
//! address (`0.0.0.0`, `[::]`) on a multi-homed host this is also what makes the reply
//! leave from the address the NAS sent to, which NASes check.
//!
//! Each socket is read by a thread of its own ([`start_receiving`]) blocked in `recvmsg`,
//! not by a task of the async runtime. An 802.1X login is 3 to 10 round trips of little
//! work each, most answered right where they are received, so what a round trip costs
//! is mostly its system calls and wake-ups: through the runtime each one was an
//! `epoll_wait`, the `recvmsg` with the datagram, a second `recvmsg` that said "empty",
//! and the wake-up of a second worker thread (the runtime wakes one to look for work
//! whenever a task is woken), on top of the `sendmsg`. A blocked reader takes the datagram
//! in the one call that waits for it. The thread enters the runtime, so answers that must
//! wait still become tasks there ([`super::inline`]). Replies are sent with
//! `MSG_DONTWAIT`, from whichever thread has them: a UDP send does not wait for the peer,
//! and a full send buffer drops the reply as the network would (the NAS retransmits).
use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::libc;
use nix::sys::socket::{
    ControlMessage, ControlMessageOwned, MsgFlags, Shutdown, SockaddrStorage, recvmsg, sendmsg,
    setsockopt, shutdown, sockopt,
};
use nix::sys::time::TimeVal;

use crate::priority::ThreadPriority;
use tokio_util::sync::CancellationToken;

/// The longest a reader thread sleeps without looking whether it should stop. Stopping
/// wakes it at once (`shutdown(SHUT_RD)`); this only bounds a wake-up that went astray.
const STOP_CHECK: Duration = Duration::from_secs(1);

/// Receive buffer asked of the kernel. Under a burst the kernel queue, not our memory,
/// absorbs the excess, and when it is full the kernel drops datagrams, which the NAS
/// retransmits: the behaviour report 003 relied on. (Linux caps it at `net.core.rmem_max`.)
const RECV_BUFFER: usize = 4 << 20;

/// Datagrams the kernel dropped at a full receive buffer, per door (`door` label: the
/// name given to [`start_receiving`]).
pub const OVERFLOW: &str = "portcullis_radius_socket_overflow_total";

/// Describe the RADIUS doors' metrics to the recorder (the assembly calls it once, after
/// installing the recorder).
pub fn describe_metrics() {
    metrics::describe_counter!(
        OVERFLOW,
        "RADIUS datagrams the kernel dropped at a full socket receive buffer, by door (reported with the next datagram read)"
    );
}

/// What `recv` got: the datagram's length, who sent it, and which of our addresses it was
/// sent to (`None` if the kernel gave no packet info, e.g. on other platforms).
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Octets written to the buffer (a datagram larger than the buffer is cut, and
    /// `truncated` says so).
    pub len: usize,
    /// The datagram was larger than the buffer.
    pub truncated: bool,
    /// Source address and port: where the reply goes.
    pub peer: SocketAddr,
    /// The local address the datagram was sent to: where the reply comes from.
    pub local: Option<IpAddr>,
    /// How many datagrams the kernel has dropped on this socket since it was bound
    /// because its receive buffer was full (`SO_RXQ_OVFL`; absent while none were).
    pub overflowed: Option<u32>,
    /// How long it waited in the socket's receive buffer before this read (the kernel's
    /// arrival stamp, `SO_TIMESTAMPNS`, against the clock now; `None` without a stamp).
    /// A reader that runs below other work's priority falls behind in a storm, and what
    /// it then reads arrived that much earlier than it looks.
    pub buffered: Option<Duration>,
}

/// A bound RADIUS socket.
#[derive(Debug)]
pub struct RadiusSocket {
    /// The socket, blocking for its reader thread (sends ask not to wait).
    io: UdpSocket,
    /// The address it is bound to (port 0 resolved).
    local_addr: SocketAddr,
}

impl RadiusSocket {
    /// Bind `addr` and ask for packet info on every datagram.
    pub fn bind(addr: SocketAddr) -> io::Result<RadiusSocket> {
        let io = UdpSocket::bind(addr)?;
        match addr {
            SocketAddr::V4(_) => setsockopt(&io, sockopt::Ipv4PacketInfo, &true)?,
            SocketAddr::V6(_) => setsockopt(&io, sockopt::Ipv6RecvPacketInfo, &true)?,
        }
        // Best effort: a smaller kernel limit still works, just buffers less.
        let _ = setsockopt(&io, sockopt::RcvBuf, &RECV_BUFFER);
        // The kernel's count of datagrams dropped at a full buffer, on each datagram
        // (counted as `portcullis_radius_socket_overflow_total`): the drops a slow or
        // deprioritised reader causes are not seen by anything else in the process.
        let _ = setsockopt(&io, sockopt::RxqOvfl, &1);
        // The kernel's arrival time of each datagram (`Received::buffered`).
        let _ = setsockopt(&io, sockopt::ReceiveTimestampns, &true);
        let stop_check = TimeVal::new(STOP_CHECK.as_secs() as _, 0);
        setsockopt(&io, sockopt::ReceiveTimeout, &stop_check)?;
        let local_addr = io.local_addr()?;
        Ok(RadiusSocket { io, local_addr })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Send `data` to `peer` from `local` (the address its request arrived on; `None`:
    /// let the kernel choose, as for a socket bound to one address). Never waits: a send
    /// buffer with no room is an error, and the reply is lost as on the network.
    pub async fn send(
        &self,
        data: &[u8],
        peer: SocketAddr,
        local: Option<IpAddr>,
    ) -> io::Result<()> {
        send_from(self.io.as_raw_fd(), data, peer, local)
    }
}

/// Start receiving datagrams on `sock`, handing each to `each` with its addressing: the
/// receive loop of both RADIUS doors (authentication and accounting). `each` runs on the
/// socket's reader thread (named after `door`), inside the runtime this is called from,
/// so what it spawns or times runs there. `door` also names the debug log of
/// per-datagram errors (an ICMP error queued on the socket, say), which must not stop the
/// loop: nothing after the start is fatal. A thread that cannot be started is an error
/// for the caller to fail start-up with (a door that would never answer must not look
/// served). The thread runs until [`Receiving::until`] returns or the value is dropped,
/// at `priority` (the accounting door's is below the process's own, `priority.rs`).
pub fn start_receiving(
    sock: Arc<RadiusSocket>,
    door: &'static str,
    priority: ThreadPriority,
    mut each: impl FnMut(&[u8], Received) + Send + 'static,
) -> io::Result<Receiving> {
    let runtime = tokio::runtime::Handle::current();
    let (done_tx, done) = tokio::sync::oneshot::channel::<()>();
    let reader = Reader {
        sock: Arc::clone(&sock),
        stopping: Arc::new(AtomicBool::new(false)),
    };
    let stopping = Arc::clone(&reader.stopping);
    let thread_sock = Arc::clone(&sock);
    std::thread::Builder::new()
        .name(format!("{door} receive"))
        .spawn(move || {
            let _runtime = runtime.enter();
            super::priority::lower_this_thread(priority, door);
            let probe_fd = thread_sock.io.as_raw_fd();
            super::inline::probe_queue_on_this_thread(move || nothing_queued(probe_fd));
            // One octet more than the largest legal packet, so an oversized datagram is
            // seen as truncated rather than mistaken for a legal one.
            let mut buf = vec![0u8; portcullis_radius::MAX_PACKET + 1];
            let fd = thread_sock.io.as_raw_fd();
            let overflow = metrics::counter!(OVERFLOW, "door" => door);
            let mut overflowed = 0u32;
            while !stopping.load(Ordering::Acquire) {
                match recv_with_info(fd, &mut buf) {
                    // Woken to stop: whatever came back is not a datagram to answer.
                    _ if stopping.load(Ordering::Acquire) => break,
                    Ok(got) => {
                        if let Some(n) = got.overflowed {
                            // A running total that wraps: count what it grew by.
                            overflow.increment(u64::from(n.wrapping_sub(overflowed)));
                            overflowed = n;
                        }
                        each(&buf[..got.len], got)
                    }
                    // The periodic look at `stopping`, or a signal.
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) => {}
                    Err(e) => tracing::debug!("{door} receive on {}: {e}", thread_sock.local_addr),
                }
            }
            // What `each` holds is released before the caller hears the thread is done.
            drop(each);
            drop(done_tx);
        })
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "{door}: cannot start the receive thread of {}: {e}",
                    sock.local_addr
                ),
            )
        })?;
    Ok(Receiving { reader, done })
}

/// [`start_receiving`] on every socket of a door, each reader stopped by `stop` under
/// `tracker` (which the door closes and waits for when it stops). `dispatch` makes each
/// socket's callback from the socket it replies on. The first thread that cannot start
/// fails the whole door (the readers already started stop when `stop` fires or the
/// tracker's runtime ends).
pub fn start_all<F>(
    sockets: Vec<RadiusSocket>,
    door: &'static str,
    priority: ThreadPriority,
    tracker: &tokio_util::task::TaskTracker,
    stop: &CancellationToken,
    mut dispatch: impl FnMut(Arc<RadiusSocket>) -> F,
) -> io::Result<()>
where
    F: FnMut(&[u8], Received) + Send + 'static,
{
    let mut receivers = Vec::with_capacity(sockets.len());
    for sock in sockets {
        let addr = sock.local_addr();
        let sock = Arc::new(sock);
        let each = dispatch(Arc::clone(&sock));
        receivers.push(start_receiving(sock, door, priority, each)?);
        tracing::info!("{door} listening on udp {addr}");
    }
    for r in receivers {
        let stop = stop.clone();
        tracker.spawn(async move { r.until(&stop).await });
    }
    Ok(())
}

/// A socket's running reader thread (from [`start_receiving`]).
pub struct Receiving {
    /// Stops the thread when dropped.
    reader: Reader,
    /// Closed when the thread has stopped.
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Receiving {
    /// Receive until `stop`; returns once the thread has stopped: after this, the
    /// callback is not called again. Dropping the future stops the thread too.
    pub async fn until(self, stop: &CancellationToken) {
        stop.cancelled().await;
        drop(self.reader);
        let _ = self.done.await;
    }
}

/// Stops a socket's reader thread when dropped: by a stop, or with the future that owns
/// it (a runtime shutting down drops its tasks).
struct Reader {
    /// The socket the thread reads.
    sock: Arc<RadiusSocket>,
    /// Set before the thread is woken.
    stopping: Arc<AtomicBool>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // Wakes a reader blocked in recvmsg at once (it returns 0 octets); Linux says
        // ENOTCONN for an unconnected UDP socket but wakes it all the same. Sending is
        // unaffected, so replies still in progress go out.
        let _ = shutdown(self.sock.io.as_raw_fd(), Shutdown::Read);
    }
}

/// Whether no datagram waits on `fd` now (a peek that takes nothing and does not wait).
/// On an error other than "would wait", says no: the caller then takes the cautious path.
fn nothing_queued(fd: i32) -> bool {
    let mut iov = [IoSliceMut::new(&mut [])];
    let peeked = recvmsg::<SockaddrStorage>(
        fd,
        &mut iov,
        None,
        MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_TRUNC,
    );
    matches!(peeked, Err(nix::errno::Errno::EAGAIN))
}

fn recv_with_info(fd: i32, buf: &mut [u8]) -> io::Result<Received> {
    let mut cmsg = nix::cmsg_space!(libc::in_pktinfo, libc::in6_pktinfo, u32, libc::timespec);
    let iov_len = buf.len();
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<SockaddrStorage>(fd, &mut iov, Some(&mut cmsg), MsgFlags::MSG_TRUNC)
        .map_err(io::Error::from)?;
    let peer = msg
        .address
        .as_ref()
        .and_then(to_socket_addr)
        .ok_or_else(|| io::Error::other("datagram without an IP source address"))?;
    let mut local = None;
    let mut overflowed = None;
    let mut buffered = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            match c {
                ControlMessageOwned::Ipv4PacketInfo(info) => {
                    local = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        info.ipi_addr.s_addr,
                    ))));
                }
                ControlMessageOwned::Ipv6PacketInfo(info) => {
                    local = Some(IpAddr::V6(Ipv6Addr::from(info.ipi6_addr.s6_addr)));
                }
                ControlMessageOwned::RxqOvfl(n) => overflowed = Some(n),
                ControlMessageOwned::ScmTimestampns(t) => {
                    // A clock stepped back since reads as no wait.
                    buffered = std::time::UNIX_EPOCH
                        .checked_add(Duration::from(t))
                        .map(|at| at.elapsed().unwrap_or(Duration::ZERO));
                }
                _ => {}
            }
        }
    }
    Ok(Received {
        len: msg.bytes.min(iov_len),
        truncated: msg.bytes > iov_len || msg.flags.contains(MsgFlags::MSG_TRUNC),
        peer,
        local,
        overflowed,
        buffered,
    })
}

fn send_from(fd: i32, data: &[u8], peer: SocketAddr, local: Option<IpAddr>) -> io::Result<()> {
    let dest = SockaddrStorage::from(peer);
    let iov = [IoSlice::new(data)];
    let v4;
    let v6;
    let cmsgs: &[ControlMessage<'_>] = match (peer, local) {
        (SocketAddr::V4(_), Some(IpAddr::V4(from))) => {
            v4 = libc::in_pktinfo {
                ipi_ifindex: 0,
                ipi_spec_dst: libc::in_addr {
                    s_addr: u32::from(from).to_be(),
                },
                ipi_addr: libc::in_addr { s_addr: 0 },
            };
            &[ControlMessage::Ipv4PacketInfo(&v4)]
        }
        (SocketAddr::V6(_), Some(IpAddr::V6(from))) => {
            v6 = libc::in6_pktinfo {
                ipi6_addr: libc::in6_addr {
                    s6_addr: from.octets(),
                },
                ipi6_ifindex: 0,
            };
            &[ControlMessage::Ipv6PacketInfo(&v6)]
        }
        _ => &[],
    };
    let sent =
        sendmsg(fd, &iov, cmsgs, MsgFlags::MSG_DONTWAIT, Some(&dest)).map_err(io::Error::from)?;
    if sent != data.len() {
        return Err(io::Error::other("datagram sent partially"));
    }
    Ok(())
}

fn to_socket_addr(a: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(SocketAddr::V4((*v4).into()));
    }
    if let Some(v6) = a.as_sockaddr_in6() {
        return Some(SocketAddr::V6((*v6).into()));
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// What the reader handed over: the bytes, their addressing, the thread's name, and
    /// whether it could reach the runtime.
    type Seen = (Vec<u8>, Received, String, bool);

    fn start(
        stop: &CancellationToken,
    ) -> (
        Arc<RadiusSocket>,
        mpsc::Receiver<Seen>,
        tokio::task::JoinHandle<()>,
    ) {
        let sock = Arc::new(RadiusSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap());
        let (tx, rx) = mpsc::channel::<Seen>();
        let (reader_sock, stop) = (Arc::clone(&sock), stop.clone());
        let receiving = start_receiving(
            reader_sock,
            "test",
            ThreadPriority::Normal,
            move |data, got| {
                let name = std::thread::current().name().unwrap_or("").to_owned();
                let runtime = tokio::runtime::Handle::try_current().is_ok();
                let _ = tx.send((data.to_vec(), got, name, runtime));
            },
        )
        .unwrap();
        let task = tokio::spawn(async move { receiving.until(&stop).await });
        (sock, rx, task)
    }

    /// Issue 41 item 8: each datagram comes with how long it waited in the kernel's
    /// buffer, which the accounting door counts toward a record's time.
    #[test]
    fn issue_41_a_datagram_says_how_long_it_was_buffered() {
        let sock = RadiusSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Loopback delivers into the buffer within `send_to`: it is there when read.
        client.send_to(b"request", sock.local_addr()).unwrap();
        let mut buf = [0u8; 64];
        let got = recv_with_info(sock.io.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..got.len], b"request");
        let waited = got.buffered.expect("no kernel arrival stamp");
        assert!(waited < Duration::from_secs(60), "{waited:?}");
    }

    // Multi-threaded: the test blocks on its channel while the receive loop's task runs.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn issue_25_a_socket_is_read_on_its_own_thread_inside_the_runtime_until_stopped() {
        let stop = CancellationToken::new();
        let (sock, rx, task) = start(&stop);
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        client.send_to(b"request", sock.local_addr()).unwrap();
        let (data, got, thread, runtime) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(data, b"request");
        assert_eq!(got.peer, client.local_addr().unwrap());
        assert_eq!(got.local, Some(IpAddr::from([127, 0, 0, 1])));
        assert!(!got.truncated);
        assert_eq!(thread, "test receive", "not a runtime worker");
        assert!(runtime, "what it spawns or times goes to the runtime");
        sock.send(b"reply", got.peer, got.local).await.unwrap();
        let mut buf = [0u8; 16];
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"reply");

        stop.cancel();
        task.await.unwrap();
        // Returned only once the thread was gone: `each` (and its sender) are dropped.
        assert!(matches!(
            rx.try_recv(),
            Err(mpsc::TryRecvError::Disconnected)
        ));
        // Replies still in progress can go out after the reader stopped.
        sock.send(b"late", got.peer, got.local).await.unwrap();
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"late");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn issue_25_dropping_the_receive_loop_stops_its_thread() {
        let stop = CancellationToken::new();
        let (sock, rx, task) = start(&stop);
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client.send_to(b"one", sock.local_addr()).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap().0, b"one");
        // A runtime shutting down drops its tasks without cancelling `stop`.
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        assert!(
            matches!(
                rx.recv_timeout(Duration::from_secs(10)),
                Err(mpsc::RecvTimeoutError::Disconnected)
            ),
            "the thread ended and dropped `each`"
        );
        assert!(!stop.is_cancelled());
    }

    #[test]
    fn issue_25_the_queue_probe_sees_a_waiting_datagram_and_takes_nothing() {
        let sock = RadiusSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let fd = sock.io.as_raw_fd();
        assert!(nothing_queued(fd));
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client.send_to(b"waiting", sock.local_addr()).unwrap();
        // Wait (blocking, bounded by the socket's receive timeout) until it is there.
        let mut first = [0u8; 1];
        let mut iov = [IoSliceMut::new(&mut first)];
        let peeked = recvmsg::<SockaddrStorage>(fd, &mut iov, None, MsgFlags::MSG_PEEK);
        assert!(peeked.is_ok());
        assert!(!nothing_queued(fd));
        assert!(!nothing_queued(fd), "the probe took nothing");
        let mut buf = vec![0u8; portcullis_radius::MAX_PACKET + 1];
        let got = recv_with_info(fd, &mut buf).unwrap();
        assert_eq!(&buf[..got.len], b"waiting");
        assert!(nothing_queued(fd));
    }

    #[test]
    fn an_oversized_datagram_is_seen_as_truncated() {
        let sock = RadiusSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .send_to(
                &[7u8; portcullis_radius::MAX_PACKET + 100],
                sock.local_addr(),
            )
            .unwrap();
        let mut buf = vec![0u8; portcullis_radius::MAX_PACKET + 1];
        let got = recv_with_info(sock.io.as_raw_fd(), &mut buf).unwrap();
        assert!(got.truncated);
        assert_eq!(got.len, portcullis_radius::MAX_PACKET + 1);
    }

    #[test]
    fn issue_28_datagrams_dropped_at_a_full_buffer_are_reported_with_the_next() {
        let sock = RadiusSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Far more than any receive buffer holds (nobody reads meanwhile); loopback does
        // not block the sender, it drops at the receiver's buffer.
        let sent = 20_000u32;
        for _ in 0..sent {
            client.send_to(&[1u8; 1000], sock.local_addr()).unwrap();
        }
        let mut buf = vec![0u8; portcullis_radius::MAX_PACKET + 1];
        let fd = sock.io.as_raw_fd();
        // The kernel stamps each datagram with the count as it was when the datagram was
        // queued: those that fitted came before any drop.
        let mut queued = 0u32;
        while !nothing_queued(fd) {
            let got = recv_with_info(fd, &mut buf).unwrap();
            assert_eq!(got.overflowed, None, "queued before the first drop");
            queued += 1;
        }
        assert!(queued > 0 && queued < sent, "queued {queued}");
        // The next one carries the total: every datagram sent was queued or counted.
        client.send_to(b"after", sock.local_addr()).unwrap();
        let got = recv_with_info(fd, &mut buf).unwrap();
        assert_eq!(&buf[..got.len], b"after");
        assert_eq!(got.overflowed, Some(sent - queued));
    }
}
