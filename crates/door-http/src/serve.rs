//! The HTTP door's accept loop: at most `max_connections` connections (more wait in the
//! kernel's backlog instead of exhausting memory or file descriptors), at most
//! `max_connections_per_source` from one host that is not a trusted proxy, the PROXY
//! protocol header from trusted balancers, TLS when `[tls]` is configured; each
//! connection is then served by [`portcullis_door::http_conn::serve_connection`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use portcullis_door::conn_limit::PerSource;
use portcullis_door::http_conn::{HeaderLimits, client_certs, serve_connection};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::HttpContext;

/// Accept connections on `listener` until `stop` is cancelled; each connection runs on
/// `tracker` and finishes its request in flight once `stop` is cancelled.
pub async fn run(
    ctx: Arc<HttpContext>,
    listener: TcpListener,
    tracker: TaskTracker,
    stop: CancellationToken,
) {
    let router = crate::routes::router(Arc::clone(&ctx));
    let tls = ctx
        .tls
        .as_ref()
        .map(|t| TlsAcceptor::from(Arc::clone(&t.config)));
    let limit = Arc::new(Semaphore::new(ctx.config.max_connections));
    let per_source = Arc::new(PerSource::new(ctx.config.max_connections_per_source));
    let mut backoff = Duration::from_millis(5);
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&limit).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = stop.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning, keep serving.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        backoff = Duration::from_millis(5);
        // One host may hold only so many connections (a balancer may hold more).
        let held = if ctx.config.trusted_proxies.trusts(peer.ip()) {
            None
        } else {
            match PerSource::enter(&per_source, peer.ip()) {
                Some(h) => Some(h),
                None => {
                    portcullis_door::metrics::connection_refused("per_source");
                    drop(stream);
                    continue;
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let conn = Connection {
            ctx: Arc::clone(&ctx),
            router: router.clone(),
            tls: tls.clone(),
            stop: stop.clone(),
        };
        tracker.spawn(async move {
            let _permit = permit;
            let _held = held;
            conn.serve(stream, peer).await;
        });
    }
}

/// What one accepted connection needs.
struct Connection {
    ctx: Arc<HttpContext>,
    router: axum::Router,
    tls: Option<TlsAcceptor>,
    stop: CancellationToken,
}

impl Connection {
    async fn serve(self, mut stream: TcpStream, peer: std::net::SocketAddr) {
        let limits = HeaderLimits {
            timeout: self.ctx.config.header_timeout,
            max_bytes: self.ctx.config.max_header_bytes,
        };
        // PROXY protocol: only a trusted balancer's connections carry (and must carry)
        // the header naming the client.
        let proxied =
            self.ctx.config.proxy_protocol && self.ctx.config.trusted_proxies.trusts(peer.ip());
        let peer = if proxied {
            let read = portcullis_door::proxy_protocol::read(&mut stream, peer);
            match tokio::time::timeout(limits.timeout, read).await {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => return tracing::debug!(%peer, "closing: {e}"),
                Err(_) => return tracing::debug!(%peer, "PROXY protocol header timed out"),
            }
        } else {
            peer
        };
        let Some(acceptor) = self.tls else {
            return serve_connection(stream, (peer, None), self.router, limits, self.stop).await;
        };
        match tokio::time::timeout(limits.timeout, acceptor.accept(stream)).await {
            Ok(Ok(s)) => {
                let conn = s.get_ref().1;
                let resumed = portcullis_door::metrics::tls_handshake(conn);
                self.ctx.stats.tls_handshakes[usize::from(resumed)].fetch_add(1, Ordering::Relaxed);
                let certs = client_certs(conn);
                serve_connection(s, (peer, certs), self.router, limits, self.stop).await
            }
            Ok(Err(e)) => {
                metrics::counter!(portcullis_door::metrics::TLS_HANDSHAKE_FAILURES).increment(1);
                tracing::debug!(%peer, "TLS handshake failed: {e}")
            }
            Err(_) => {
                metrics::counter!(portcullis_door::metrics::TLS_HANDSHAKE_FAILURES).increment(1);
                tracing::debug!(%peer, "TLS handshake timed out")
            }
        }
    }
}
