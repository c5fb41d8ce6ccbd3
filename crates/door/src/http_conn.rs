//! One HTTP/1.1 connection served by an axum router: the request extensions a handler
//! reads ([`Peer`], the TLS client's certificates), the header read timeout and size
//! limit, and graceful shutdown (finish the request in flight, then close). The HTTP and
//! admin doors accept their own connections and hand each one here.

use std::net::SocketAddr;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::tls::peer::ClientCerts;

/// The remote address of the connection a request came on (set by the accept loop).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// The id of one HTTP request: in the audit event of every attempt it made and in the
/// `X-Request-Id` response header, so a client's report can be matched with the log. Set
/// by a door's router middleware, read by its endpoints.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// How long a client may take to send its headers, and how large they may be.
#[derive(Debug, Clone, Copy)]
pub struct HeaderLimits {
    /// Time allowed for the request head (and the TLS handshake before it).
    pub timeout: Duration,
    /// Largest request head, in bytes.
    pub max_bytes: usize,
}

/// Serve one connection until the client closes it or `stop` is cancelled (then the
/// request in flight finishes and the connection closes).
pub async fn serve_connection<S>(
    io: S,
    (peer, certs): (SocketAddr, Option<ClientCerts>),
    router: axum::Router,
    limits: HeaderLimits,
    stop: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(Peer(peer));
        if let Some(c) = &certs {
            req.extensions_mut().insert(c.clone());
        }
        router.clone().oneshot(req.map(axum::body::Body::new))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.timeout)
        .max_buf_size(limits.max_bytes)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, "connection ended with error: {e}");
    }
}

/// The certificates a TLS client presented, as the request extension handlers read.
pub fn client_certs(conn: &rustls::ServerConnection) -> Option<ClientCerts> {
    conn.peer_certificates()
        .filter(|c| !c.is_empty())
        .map(|c| ClientCerts(std::sync::Arc::new(c.to_vec())))
}
