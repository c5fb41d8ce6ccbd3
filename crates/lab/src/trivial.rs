//! A minimal HTTP/1.1 server answering `GET /healthz` with `200 ok` (everything else 404):
//! the trivial endpoint for comparing the lab's own peak rate with wrk, and a process to
//! pause with SIGSTOP when proving the lab reports stalls (no coordinated omission).

use std::convert::Infallible;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let ok = req.uri().path() == "/healthz";
    let mut resp = Response::new(Full::new(Bytes::from_static(if ok {
        b"ok"
    } else {
        b"not found"
    })));
    if !ok {
        *resp.status_mut() = hyper::StatusCode::NOT_FOUND;
    }
    Ok(resp)
}

/// Serve until `shutdown` resolves.
pub async fn run(listener: TcpListener, shutdown: impl std::future::Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            acc = listener.accept() => {
                let Ok((stream, _)) = acc else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service_fn(answer))
                        .await;
                });
            }
        }
    }
}
