//! One LDAP connection: the PROXY header from a trusted proxy, the TLS handshake on LDAPS,
//! then one task that reads requests, polls the ones in progress and writes every answer,
//! so nothing of the connection is shared between tasks.
//!
//! Bounds: a message over `max_message_bytes` or one `portcullis-ldap`'s framing refuses
//! (bad BER, depth, element count, unknown operation) gets the answer RFC 4511 asks
//! (`protocolError` in the request's own response type, or a Notice of Disconnection and
//! the end); at most `max_outstanding` operations are in progress, and the connection is
//! not read further until one is answered (TCP pushes back); a bind abandons the others and
//! stops reading until it is answered (RFC 4511 4.2.1); a connection with nothing in
//! progress and no whole request for `idle_timeout` is closed, and so is one whose answer
//! cannot be written within it. At shutdown each connection gets a Notice of
//! Disconnection (`unavailable`) once its operations in progress are answered.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt;
use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use portcullis_ldap::frame::{Action, Frame, Limits, decode_request};
use portcullis_ldap::proto::LdapMsg;
use portcullis_ldap::{ResultCode, response};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::LdapDoor;
use crate::access::{Identity, Session};
use crate::ops::{self, Done, Step};

/// Longest a TLS handshake may take (capped by `idle_timeout`).
const HANDSHAKE: Duration = Duration::from_secs(30);
/// Bytes read at a time.
const CHUNK: usize = 16 * 1024;

/// The byte stream: plain, or TLS (LDAPS, or after StartTLS); `Closed` only while
/// StartTLS's handshake holds the socket (an end of stream, never read or written).
enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    Closed,
}

fn closed() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::NotConnected)
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Io::Closed => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Io::Closed => Poll::Ready(Err(closed())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Io::Closed => Poll::Ready(Err(closed())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Io::Closed => Poll::Ready(Ok(())),
        }
    }
}

/// Why the loop ended.
enum End {
    /// The peer left, unbound, or the stream failed.
    Gone,
    /// The stream is out of step: send this notice, then close.
    Notice(ResultCode, String),
}

/// Serve one accepted connection until it ends or `stop`.
pub async fn serve(
    door: Arc<LdapDoor>,
    mut stream: TcpStream,
    peer: SocketAddr,
    ldaps: bool,
    stop: CancellationToken,
) {
    let config = &door.ctx.config;
    let handshake = HANDSHAKE.min(config.idle_timeout);
    let source = if config.trusted_proxies.trusts(peer.ip()) {
        let read = portcullis_door::proxy_protocol::read(&mut stream, peer);
        match tokio::time::timeout(handshake, read).await {
            Ok(Ok(addr)) => addr.ip(),
            _ => {
                door.stats.refused("proxy_header");
                return;
            }
        }
    } else {
        peer.ip()
    };
    let io = if ldaps {
        match upgrade(&door, stream, handshake).await {
            Some(tls) => tls,
            None => return,
        }
    } else {
        Io::Plain(stream)
    };
    let session = Session {
        id: door.next_id(),
        source,
        secure: ldaps,
        identity: Identity::Anonymous,
    };
    door.stats.opened();
    Conn {
        door: Arc::clone(&door),
        io,
        session,
        buf: Vec::with_capacity(CHUNK),
        inflight: FuturesUnordered::new(),
        aborts: HashMap::new(),
        exclusive: false,
    }
    .run(stop)
    .await;
    door.stats.closed();
}

/// The TLS handshake on `stream`, within `limit`.
async fn upgrade(door: &LdapDoor, stream: TcpStream, limit: Duration) -> Option<Io> {
    let acceptor = door.acceptor()?;
    match tokio::time::timeout(limit, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(Io::Tls(Box::new(tls))),
        _ => {
            door.stats.refused("tls_handshake");
            None
        }
    }
}

type Running = Abortable<ops::Pending>;

struct Conn {
    door: Arc<LdapDoor>,
    io: Io,
    session: Session,
    /// Bytes read and not yet decoded: at most one message plus one read.
    buf: Vec<u8>,
    inflight: FuturesUnordered<Running>,
    aborts: HashMap<i32, AbortHandle>,
    /// A bind is in progress: nothing more is read until it is answered.
    exclusive: bool,
}

impl Conn {
    async fn run(mut self, stop: CancellationToken) {
        let end = self.serve(&stop).await;
        match end {
            End::Notice(code, text) => {
                self.door.stats.malformed();
                let _ = self
                    .write(vec![response::notice_of_disconnection(code, &text)])
                    .await;
            }
            End::Gone => {}
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.io.shutdown()).await;
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_bytes: self.door.ctx.config.max_message_bytes,
            ..Limits::default()
        }
    }

    fn may_read(&self) -> bool {
        !self.exclusive && self.inflight.len() < self.door.ctx.config.max_outstanding
    }

    async fn serve(&mut self, stop: &CancellationToken) -> End {
        let idle = self.door.ctx.config.idle_timeout;
        let mut deadline = Instant::now() + idle;
        let mut chunk = vec![0u8; CHUNK];
        loop {
            match self.decode_all().await {
                Ok(true) => deadline = Instant::now() + idle,
                Ok(false) => {}
                Err(end) => return end,
            }
            let reading = self.may_read();
            let waiting = !self.inflight.is_empty();
            tokio::select! {
                biased;
                Some(done) = self.inflight.next(), if waiting => {
                    if let Ok(done) = done
                        && let Err(end) = self.finish(done).await
                    {
                        return end;
                    }
                    deadline = Instant::now() + idle;
                }
                () = stop.cancelled(), if !waiting => {
                    let text = "the server is shutting down";
                    return End::Notice(ResultCode::Unavailable, text.into());
                }
                read = self.io.read(&mut chunk), if reading => match read {
                    Ok(0) | Err(_) => return End::Gone,
                    Ok(n) => self.buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
                },
                () = tokio::time::sleep_until(deadline), if !waiting => return End::Gone,
            }
        }
    }

    /// Decode and start every whole request in the buffer while more may be started;
    /// `Ok(true)` when at least one was.
    async fn decode_all(&mut self) -> Result<bool, End> {
        let limits = self.limits();
        let mut any = false;
        while self.may_read() {
            match decode_request(&self.buf, &limits) {
                Ok(Frame::Incomplete) => break,
                Ok(Frame::Message { message, consumed }) => {
                    self.buf.drain(..consumed);
                    any = true;
                    self.start(message).await?;
                }
                Err(error) => {
                    let reply = error.server_reply();
                    match error.action() {
                        Action::Respond { consumed, .. } | Action::Discard { consumed } => {
                            self.door.stats.malformed();
                            self.buf.drain(..consumed);
                            any = true;
                            self.write(reply.into_iter().collect()).await?;
                        }
                        Action::Disconnect(code) => {
                            return Err(End::Notice(code, error.to_string()));
                        }
                        Action::Close => return Err(End::Gone),
                    }
                }
            }
        }
        Ok(any)
    }

    async fn start(&mut self, message: LdapMsg) -> Result<(), End> {
        let msgid = message.msgid;
        match ops::dispatch(&self.door, &self.session, message) {
            Step::Reply(replies) => self.write(replies).await,
            Step::Later { pending, exclusive } => {
                if exclusive {
                    // RFC 4511 4.2.1: a bind abandons the operations in progress.
                    for (_, handle) in self.aborts.drain() {
                        handle.abort();
                    }
                    self.exclusive = true;
                }
                let (handle, registration) = AbortHandle::new_pair();
                self.aborts.insert(msgid, handle);
                self.inflight.push(Abortable::new(pending, registration));
                Ok(())
            }
            Step::StartTls(msgid) => self.start_tls(msgid).await,
            Step::Abandon(id) => {
                if let Some(handle) = self.aborts.remove(&id) {
                    handle.abort();
                }
                Ok(())
            }
            Step::Close => Err(End::Gone),
        }
    }

    async fn finish(&mut self, done: Done) -> Result<(), End> {
        self.aborts.remove(&done.msgid);
        if let Some(identity) = done.identity {
            self.session.identity = identity;
            self.exclusive = false;
        }
        self.write(done.replies).await
    }

    /// StartTLS (RFC 4511 4.14): refused while other operations are in progress or on a
    /// connection already under TLS; otherwise `success`, then the handshake.
    async fn start_tls(&mut self, msgid: i32) -> Result<(), End> {
        let refuse = if self.session.secure {
            Some("TLS is already on")
        } else if !self.inflight.is_empty() || !self.buf.is_empty() {
            Some("operations are in progress")
        } else {
            None
        };
        if let Some(text) = refuse {
            self.door
                .stats
                .operation("start_tls", ResultCode::OperationsError);
            let reply = response::start_tls_response(msgid, ResultCode::OperationsError, text);
            return self.write(vec![reply]).await;
        }
        let reply = response::start_tls_response(msgid, ResultCode::Success, "");
        self.write(vec![reply]).await?;
        self.door.stats.operation("start_tls", ResultCode::Success);
        let Io::Plain(tcp) = std::mem::replace(&mut self.io, Io::Closed) else {
            return Err(End::Gone);
        };
        let limit = HANDSHAKE.min(self.door.ctx.config.idle_timeout);
        match upgrade(&self.door, tcp, limit).await {
            Some(tls) => {
                self.io = tls;
                self.session.secure = true;
                Ok(())
            }
            None => Err(End::Gone),
        }
    }

    /// Encode and write `replies`, within the idle timeout.
    async fn write(&mut self, replies: Vec<LdapMsg>) -> Result<(), End> {
        if replies.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for reply in replies {
            bytes.extend(response::encode(reply));
        }
        let idle = self.door.ctx.config.idle_timeout;
        match tokio::time::timeout(idle, async {
            self.io.write_all(&bytes).await?;
            self.io.flush().await
        })
        .await
        {
            Ok(Ok(())) => Ok(()),
            _ => Err(End::Gone),
        }
    }
}
