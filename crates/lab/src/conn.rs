//! Client connections: a TCP socket bound to the client's own source address (so the
//! server sees distinct sources; Linux routes all of 127.0.0.0/8 to `lo`), TLS over it for
//! `https://` targets, then a hyper 1 HTTP/1.1 client connection. One connection per
//! client for keep-alive; no pool layer in between, so the generator's own overhead stays
//! small. Opening a connection reports how long its TCP connect and TLS handshake took and
//! whether the handshake resumed a session ([`Phases`]).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};

use crate::LabError;
use crate::tls::Tls;

/// The request body type every driver uses.
pub type Body = Full<Bytes>;

/// How opening one connection went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Phases {
    /// TCP connect.
    pub connect: Duration,
    /// TLS handshake (zero for plain HTTP).
    pub handshake: Duration,
    /// A TLS handshake took place.
    pub tls: bool,
    /// It resumed an earlier session.
    pub resumed: bool,
}

/// Open a TCP connection to `addr`, from `source` when given.
pub async fn connect(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<TcpStream> {
    let sock = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(ip) = source {
        sock.set_reuseaddr(true)?;
        sock.bind(SocketAddr::new(ip, 0))?;
    }
    let stream = sock.connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// A plain or TLS stream.
#[derive(Debug)]
pub enum Stream {
    /// `http://`
    Plain(TcpStream),
    /// `https://`
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// Connect, then (with `tls`) handshake, timing both.
pub async fn establish(
    addr: SocketAddr,
    source: Option<IpAddr>,
    tls: Option<&Tls>,
) -> io::Result<(Stream, Phases)> {
    let t0 = Instant::now();
    let tcp = connect(addr, source).await?;
    let t1 = Instant::now();
    let Some(tls) = tls else {
        return Ok((
            Stream::Plain(tcp),
            Phases {
                connect: t1 - t0,
                ..Phases::default()
            },
        ));
    };
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::clone(&tls.config));
    let s = connector.connect(tls.name.clone(), tcp).await?;
    let t2 = Instant::now();
    let resumed = s.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    Ok((
        Stream::Tls(Box::new(s)),
        Phases {
            connect: t1 - t0,
            handshake: t2 - t1,
            tls: true,
            resumed,
        },
    ))
}

/// The I/O half of a client connection. The attempt that uses the connection polls it in
/// its own task (no separate connection task, so no cross-task wake-ups per request).
pub type ClientConn = Pin<Box<Connection<TokioIo<Stream>, Body>>>;

/// Open an HTTP/1.1 client connection.
pub async fn open(
    addr: SocketAddr,
    source: Option<IpAddr>,
    tls: Option<&Tls>,
) -> Result<(SendRequest<Body>, ClientConn, Phases), io::Error> {
    let (stream, phases) = establish(addr, source, tls).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io::Error::other)?;
    Ok((sender, Box::pin(conn), phases))
}

/// One-off `GET path` (JWKS, discovery, metrics): status and body, within `timeout`.
pub async fn get(
    addr: SocketAddr,
    host: &str,
    path: &str,
    timeout: Duration,
    tls: Option<&Tls>,
) -> Result<(u16, Bytes), LabError> {
    let fut = async {
        let (stream, _) = establish(addr, None, tls)
            .await
            .map_err(|e| LabError::Target(format!("connect {addr}: {e}")))?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
                .await
                .map_err(|e| LabError::Target(format!("handshake {addr}: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let req = hyper::Request::get(path)
            .header(hyper::header::HOST, host)
            .header(hyper::header::CONNECTION, "close")
            .body(Empty::new())
            .map_err(|e| LabError::Target(format!("bad request path {path:?}: {e}")))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| LabError::Target(format!("GET {path}: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| LabError::Target(format!("GET {path}: reading body: {e}")))?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| LabError::Target(format!("GET {path}: no answer within {timeout:?}")))?
}
