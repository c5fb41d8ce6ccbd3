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

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;

use nix::libc;
use nix::sys::socket::{
    ControlMessage, ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, sendmsg, setsockopt,
    sockopt,
};
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;

/// Receive buffer asked of the kernel. Under a burst the kernel queue, not our memory,
/// absorbs the excess, and when it is full the kernel drops datagrams, which the NAS
/// retransmits: the behaviour report 003 relied on. (Linux caps it at `net.core.rmem_max`.)
const RECV_BUFFER: usize = 4 << 20;

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
}

/// A bound RADIUS socket.
#[derive(Debug)]
pub struct RadiusSocket {
    /// The non-blocking socket, registered with the runtime.
    io: UdpSocket,
    /// The address it is bound to (port 0 resolved).
    local_addr: SocketAddr,
}

impl RadiusSocket {
    /// Bind `addr` and ask for packet info on every datagram.
    pub fn bind(addr: SocketAddr) -> io::Result<RadiusSocket> {
        let std = std::net::UdpSocket::bind(addr)?;
        std.set_nonblocking(true)?;
        match addr {
            SocketAddr::V4(_) => setsockopt(&std, sockopt::Ipv4PacketInfo, &true)?,
            SocketAddr::V6(_) => setsockopt(&std, sockopt::Ipv6RecvPacketInfo, &true)?,
        }
        // Best effort: a smaller kernel limit still works, just buffers less.
        let _ = setsockopt(&std, sockopt::RcvBuf, &RECV_BUFFER);
        let local_addr = std.local_addr()?;
        Ok(RadiusSocket {
            io: UdpSocket::from_std(std)?,
            local_addr,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Wait for the next datagram.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<Received> {
        let fd = self.io.as_raw_fd();
        self.io
            .async_io(Interest::READABLE, || recv_with_info(fd, buf))
            .await
    }

    /// Send `data` to `peer` from `local` (the address its request arrived on; `None`:
    /// let the kernel choose, as for a socket bound to one address).
    pub async fn send(
        &self,
        data: &[u8],
        peer: SocketAddr,
        local: Option<IpAddr>,
    ) -> io::Result<()> {
        let fd = self.io.as_raw_fd();
        self.io
            .async_io(Interest::WRITABLE, || send_from(fd, data, peer, local))
            .await
    }
}

/// Receive datagrams on `sock` until `stop`, handing each to `each` with its addressing:
/// the receive loop of both RADIUS doors (authentication and accounting). `door` names it
/// in the debug log of per-datagram errors (an ICMP error queued on the socket, say), which
/// must not stop the loop: nothing here is fatal.
pub async fn receive_until(
    sock: &RadiusSocket,
    stop: &CancellationToken,
    door: &str,
    mut each: impl FnMut(&[u8], Received),
) {
    // One octet more than the largest legal packet, so an oversized datagram is seen as
    // truncated rather than mistaken for a legal one.
    let mut buf = vec![0u8; portcullis_radius::MAX_PACKET + 1];
    loop {
        let got = tokio::select! {
            r = sock.recv(&mut buf) => r,
            () = stop.cancelled() => return,
        };
        match got {
            Ok(got) => each(&buf[..got.len], got),
            Err(e) => tracing::debug!("{door} receive on {}: {e}", sock.local_addr()),
        }
    }
}

fn recv_with_info(fd: i32, buf: &mut [u8]) -> io::Result<Received> {
    let mut cmsg = nix::cmsg_space!(libc::in_pktinfo, libc::in6_pktinfo);
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
                _ => {}
            }
        }
    }
    Ok(Received {
        len: msg.bytes.min(iov_len),
        truncated: msg.bytes > iov_len || msg.flags.contains(MsgFlags::MSG_TRUNC),
        peer,
        local,
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
    let sent = sendmsg(fd, &iov, cmsgs, MsgFlags::empty(), Some(&dest)).map_err(io::Error::from)?;
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
