//! Client connections: a TCP socket bound to the client's own source address (so the
//! server sees distinct sources; Linux routes all of 127.0.0.0/8 to `lo`), then a hyper 1
//! HTTP/1.1 client connection over it. One connection per client for keep-alive; no pool
//! layer in between, so the generator's own overhead stays small.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Bytes;
use std::pin::Pin;

use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpSocket, TcpStream};

use crate::LabError;

/// The request body type every driver uses.
pub type Body = Full<Bytes>;

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

/// The I/O half of a client connection. The attempt that uses the connection polls it in
/// its own task (no separate connection task, so no cross-task wake-ups per request).
pub type ClientConn = Pin<Box<Connection<TokioIo<TcpStream>, Body>>>;

/// Open an HTTP/1.1 client connection.
pub async fn open(
    addr: SocketAddr,
    source: Option<IpAddr>,
) -> Result<(SendRequest<Body>, ClientConn), io::Error> {
    let stream = connect(addr, source).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io::Error::other)?;
    Ok((sender, Box::pin(conn)))
}

/// One-off `GET path` (JWKS, discovery, metrics): status and body, within `timeout`.
pub async fn get(
    addr: SocketAddr,
    host: &str,
    path: &str,
    timeout: Duration,
) -> Result<(u16, Bytes), LabError> {
    let fut = async {
        let stream = connect(addr, None)
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
