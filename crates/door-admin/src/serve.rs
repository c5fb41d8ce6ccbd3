//! The admin door's accept loop (issue 27): its own router, at most
//! `admin.max_connections` connections, the same header timeout and TLS as the HTTP door
//! (with `[tls]`, the admin listener speaks TLS too). No PROXY protocol and no forwarded
//! headers: the admin listener is reached directly.

use std::sync::Arc;
use std::time::Duration;

use portcullis_door::http_conn::{HeaderLimits, client_certs, serve_connection};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::AdminContext;

/// Accept admin connections on `listener` until `stop` is cancelled.
pub async fn run(
    ctx: Arc<AdminContext>,
    listener: TcpListener,
    tracker: TaskTracker,
    stop: CancellationToken,
) {
    let router = crate::router(Arc::clone(&ctx));
    let tls = ctx
        .tls
        .as_ref()
        .map(|t| TlsAcceptor::from(Arc::clone(&t.config)));
    let limit = Arc::new(Semaphore::new(ctx.config.admin.max_connections));
    let limits = HeaderLimits {
        timeout: ctx.config.header_timeout,
        max_bytes: ctx.config.max_header_bytes,
    };
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&limit).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            () = stop.cancelled() => return,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!("admin accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let stop = stop.clone();
        let tls = tls.clone();
        tracker.spawn(async move {
            let _permit = permit;
            let Some(acceptor) = tls else {
                return serve_connection(stream, (peer, None), router, limits, stop).await;
            };
            match tokio::time::timeout(limits.timeout, acceptor.accept(stream)).await {
                Ok(Ok(s)) => {
                    let certs = client_certs(s.get_ref().1);
                    serve_connection(s, (peer, certs), router, limits, stop).await
                }
                Ok(Err(e)) => tracing::debug!(%peer, "admin TLS handshake failed: {e}"),
                Err(_) => tracing::debug!(%peer, "admin TLS handshake timed out"),
            }
        });
    }
}
