//! The PROXY protocol version 2 header (HAProxy's `send-proxy-v2`, AWS NLB, and others):
//! a load balancer that forwards TCP rather than HTTP names the client's address in a
//! binary header before the connection's first byte of TLS or HTTP (issue 13).
//!
//! Read only on listeners with `server.proxy_protocol = true` and only from peers in
//! `server.trusted_proxies`; from them the header is mandatory (a connection without a
//! valid one is closed: its bytes could not be told apart from a forged header), while
//! other peers are served as if the option were off, so nobody else can pick a source.
//! `LOCAL` headers (the balancer's own health checks) and address families other than
//! TCP over IPv4/IPv6 keep the peer's address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::io::{AsyncRead, AsyncReadExt};

/// The 12-byte signature every v2 header starts with.
const SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// Longest address block accepted (TLVs included); HAProxy's own limit is far below.
const MAX_LEN: usize = 1024;

/// Why a header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyHeaderError {
    /// The first 12 bytes are not the v2 signature.
    #[error("no PROXY protocol v2 signature")]
    Signature,
    /// Version other than 2, or a command other than LOCAL/PROXY.
    #[error("unsupported PROXY protocol version or command {0:#04x}")]
    Command(u8),
    /// The address block is longer than we accept or shorter than its family needs.
    #[error("PROXY protocol address block of {0} bytes is invalid")]
    Length(usize),
    /// The connection ended or failed inside the header.
    #[error("reading the PROXY protocol header: {0}")]
    Io(String),
}

/// What the first 16 bytes announce: the command byte, the family byte and how many
/// address bytes follow.
pub fn parse_prefix(head: &[u8; 16]) -> Result<(u8, u8, usize), ProxyHeaderError> {
    if head[..12] != SIGNATURE {
        return Err(ProxyHeaderError::Signature);
    }
    let ver_cmd = head[12];
    if ver_cmd >> 4 != 2 || (ver_cmd & 0x0f) > 1 {
        return Err(ProxyHeaderError::Command(ver_cmd));
    }
    let len = usize::from(u16::from_be_bytes([head[14], head[15]]));
    if len > MAX_LEN {
        return Err(ProxyHeaderError::Length(len));
    }
    Ok((ver_cmd & 0x0f, head[13], len))
}

/// The client's address from a header's command, family and address block; `None` to
/// keep the peer's (LOCAL, or a family that names no TCP client).
pub fn source(
    command: u8,
    family: u8,
    block: &[u8],
) -> Result<Option<SocketAddr>, ProxyHeaderError> {
    if command == 0 {
        return Ok(None);
    }
    match family {
        // TCP over IPv4: src addr, dst addr, src port, dst port.
        0x11 => {
            let b = block
                .get(..12)
                .ok_or(ProxyHeaderError::Length(block.len()))?;
            let ip = Ipv4Addr::new(b[0], b[1], b[2], b[3]);
            let port = u16::from_be_bytes([b[8], b[9]]);
            Ok(Some(SocketAddr::new(IpAddr::V4(ip), port)))
        }
        // TCP over IPv6.
        0x21 => {
            let b = block
                .get(..36)
                .ok_or(ProxyHeaderError::Length(block.len()))?;
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[..16]);
            let port = u16::from_be_bytes([b[32], b[33]]);
            Ok(Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), port)))
        }
        _ => Ok(None),
    }
}

/// Read one v2 header from the start of `io` (exactly its bytes, nothing more) and
/// return the client address it names, or `peer` for LOCAL and other families.
pub async fn read<S: AsyncRead + Unpin>(
    io: &mut S,
    peer: SocketAddr,
) -> Result<SocketAddr, ProxyHeaderError> {
    let io_err = |e: std::io::Error| ProxyHeaderError::Io(e.to_string());
    let mut head = [0u8; 16];
    io.read_exact(&mut head).await.map_err(io_err)?;
    let (command, family, len) = parse_prefix(&head)?;
    let mut block = vec![0u8; len];
    io.read_exact(&mut block).await.map_err(io_err)?;
    Ok(source(command, family, &block)?.unwrap_or(peer))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header as HAProxy's `send-proxy-v2` writes it (spec section 2.2 layout).
    fn v4_header(src: [u8; 4], sport: u16) -> Vec<u8> {
        let mut h = SIGNATURE.to_vec();
        h.extend_from_slice(&[0x21, 0x11, 0, 12]);
        h.extend_from_slice(&src);
        h.extend_from_slice(&[127, 0, 0, 1]);
        h.extend_from_slice(&sport.to_be_bytes());
        h.extend_from_slice(&8080u16.to_be_bytes());
        h
    }

    fn peer() -> SocketAddr {
        "127.0.0.1:5000".parse().unwrap()
    }

    #[tokio::test]
    async fn reads_tcp4_and_tcp6_sources_and_leaves_the_rest_unread() {
        let mut bytes = v4_header([198, 51, 100, 7], 40000);
        bytes.extend_from_slice(b"GET / HTTP/1.1\r\n");
        let mut r = &bytes[..];
        let src = read(&mut r, peer()).await.unwrap();
        assert_eq!(src, "198.51.100.7:40000".parse().unwrap());
        assert_eq!(r, b"GET / HTTP/1.1\r\n");

        let mut h = SIGNATURE.to_vec();
        h.extend_from_slice(&[0x21, 0x21, 0, 36]);
        let ip: Ipv6Addr = "2001:db8::9".parse().unwrap();
        h.extend_from_slice(&ip.octets());
        h.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        h.extend_from_slice(&[0x1f, 0x90, 0x00, 0x50]);
        let src = read(&mut &h[..], peer()).await.unwrap();
        assert_eq!(src, SocketAddr::new(IpAddr::V6(ip), 8080));
    }

    #[tokio::test]
    async fn local_and_unix_keep_the_peer_and_tlvs_are_skipped() {
        let mut h = SIGNATURE.to_vec();
        h.extend_from_slice(&[0x20, 0x00, 0, 0]);
        assert_eq!(read(&mut &h[..], peer()).await.unwrap(), peer());
        // TCP4 with a 5-byte TLV after the addresses (length 17).
        let mut h = v4_header([203, 0, 113, 1], 1);
        h[15] = 17;
        h.extend_from_slice(&[0x04, 0, 2, 0xaa, 0xbb]);
        h.extend_from_slice(b"rest");
        let mut r = &h[..];
        assert_eq!(
            read(&mut r, peer()).await.unwrap().ip(),
            IpAddr::from([203, 0, 113, 1])
        );
        assert_eq!(r, b"rest");
        // AF_UNIX (0x31): no TCP client to name.
        let mut h = SIGNATURE.to_vec();
        h.extend_from_slice(&[0x21, 0x31, 0, 216]);
        h.extend(std::iter::repeat_n(0u8, 216));
        assert_eq!(read(&mut &h[..], peer()).await.unwrap(), peer());
    }

    #[tokio::test]
    async fn bad_headers_are_errors_never_panics() {
        // Plain HTTP from a proxy that should have sent a header.
        let http = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(
            read(&mut &http[..], peer()).await.unwrap_err(),
            ProxyHeaderError::Signature
        );
        // Version 1 in the v2 framing, unknown command, oversize and short blocks.
        for (byte12, len, family) in [
            (0x11u8, 12u16, 0x11u8),
            (0x22, 12, 0x11),
            (0x21, 2000, 0x11),
            (0x21, 4, 0x11),
            (0x21, 20, 0x21),
        ] {
            let mut h = SIGNATURE.to_vec();
            h.extend_from_slice(&[byte12, family]);
            h.extend_from_slice(&len.to_be_bytes());
            h.extend(std::iter::repeat_n(0u8, usize::from(len.min(64))));
            assert!(
                read(&mut &h[..], peer()).await.is_err(),
                "{byte12:#x} {len}"
            );
        }
        // Truncated inside the prefix.
        assert!(read(&mut &SIGNATURE[..8], peer()).await.is_err());
    }
}
