//! A directory that answers failed binds late: the back office of background report 000,
//! which held its answer for 5 s after failed attempts, made of a real directory (OpenLDAP
//! slapd) and this relay in front of it (issue 40's lab).
//!
//! The relay is a TCP proxy on a loopback port. It forwards what the client sends as it
//! arrives; what the directory sends back it cuts into whole LDAP messages with the pure
//! codec's framing (`portcullis_ldap::frame`, so a message split over reads, or several in
//! one read, are handled alike) and forwards each in order, except that a BindResponse whose
//! resultCode is not success is held for [`RelayConfig::failed_bind_delay`] first. Each
//! connection has its own task: a held answer delays only the connection it belongs to
//! (which, by RFC 4511 4.2.1, sends nothing else while its bind is outstanding), never
//! another one. Whatever cannot be framed as LDAP (a StartTLS session's TLS records) is
//! passed through unchanged from then on, and counted: the relay is meant for plain LDAP.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use portcullis_ldap::frame::{Frame, Limits, decode_response};
use portcullis_ldap::proto::proto::{LdapOp, LdapResultCode};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// What the relay forwards to and how late failed binds are answered.
#[derive(Debug, Clone, Copy)]
pub struct RelayConfig {
    /// The directory (slapd's `ldap://` address).
    pub upstream: SocketAddr,
    /// How long a failed bind's answer is held (report 000's back office: 5 s).
    pub failed_bind_delay: Duration,
}

/// The relay's counters since it started.
#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    binds_succeeded: AtomicU64,
    binds_failed: AtomicU64,
    held_now: AtomicU64,
    held_max: AtomicU64,
    undecoded: AtomicU64,
}

/// A snapshot of the counters, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RelayCounts {
    /// Client connections accepted.
    pub connections: u64,
    /// Successful BindResponses forwarded at once.
    pub binds_succeeded: u64,
    /// Failed BindResponses held before they were forwarded (or dropped with their
    /// connection).
    pub binds_failed: u64,
    /// Failed BindResponses being held now.
    pub held_now: u64,
    /// Most failed BindResponses held at once: how many of its clients' binds the
    /// directory kept waiting at the worst moment.
    pub held_max: u64,
    /// Connections whose answers stopped being LDAP (passed through unframed from then on).
    pub undecoded: u64,
}

/// A running relay; stopped when dropped or by [`Relay::shutdown`].
pub struct Relay {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stop: watch::Sender<bool>,
}

impl Relay {
    /// Listens on `listen` (port 0: a free one) and relays every connection to
    /// `config.upstream`.
    pub async fn start(listen: SocketAddr, config: RelayConfig) -> std::io::Result<Relay> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(accept_loop(listener, config, counters.clone(), stopped));
        Ok(Relay {
            addr,
            counters,
            stop,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ldap://127.0.0.1:port` of the relay.
    pub fn url(&self) -> String {
        format!("ldap://{}", self.addr)
    }

    /// The counters now.
    pub fn counts(&self) -> RelayCounts {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RelayCounts {
            connections: get(&c.connections),
            binds_succeeded: get(&c.binds_succeeded),
            binds_failed: get(&c.binds_failed),
            held_now: get(&c.held_now),
            held_max: get(&c.held_max),
            undecoded: get(&c.undecoded),
        }
    }

    /// Stops accepting and closes every relayed connection.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Accepts until stopped; the connections' tasks end with it (the set aborts them).
async fn accept_loop(
    listener: TcpListener,
    config: RelayConfig,
    counters: Arc<Counters>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            // Reap finished connections so the set stays as large as what is open.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                counters.connections.fetch_add(1, Ordering::Relaxed);
                connections.spawn(relay_one(client, config, counters.clone()));
            }
        }
    }
}

/// Relays one client connection until either side closes.
async fn relay_one(client: TcpStream, config: RelayConfig, counters: Arc<Counters>) {
    let Ok(server) = TcpStream::connect(config.upstream).await else {
        return; // the client sees its connection closed, as if the directory were down
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, client_write) = client.into_split();
    let (server_read, mut server_write) = server.into_split();
    let upstream = async {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        let _ = server_write.shutdown().await;
    };
    let downstream = downstream(
        server_read,
        client_write,
        config.failed_bind_delay,
        &counters,
    );
    // The client leaving ends the connection, a held answer included: nobody would read it.
    tokio::select! {
        () = upstream => {}
        _ = downstream => {}
    }
}

/// Forwards the directory's answers message by message, holding failed binds.
async fn downstream(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    delay: Duration,
    counters: &Counters,
) -> std::io::Result<()> {
    let mut splitter = Splitter::default();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut chunk).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        let was_framing = !splitter.passthrough;
        splitter.push(chunk.get(..n).unwrap_or_default());
        while let Some(piece) = splitter.next_piece() {
            match piece.kind {
                PieceKind::FailedBind => {
                    counters.binds_failed.fetch_add(1, Ordering::Relaxed);
                    let held = Held::new(counters);
                    tokio::time::sleep(delay).await;
                    drop(held);
                }
                PieceKind::SucceededBind => {
                    counters.binds_succeeded.fetch_add(1, Ordering::Relaxed);
                }
                PieceKind::Other | PieceKind::Unframed => {}
            }
            to.write_all(&piece.bytes).await?;
        }
        if was_framing && splitter.passthrough {
            counters.undecoded.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One failed bind held: counted in `held_now` until dropped (also when the connection's
/// task is aborted mid-hold).
struct Held<'a>(&'a Counters);

impl<'a> Held<'a> {
    fn new(counters: &'a Counters) -> Held<'a> {
        let now = counters.held_now.fetch_add(1, Ordering::Relaxed) + 1;
        counters.held_max.fetch_max(now, Ordering::Relaxed);
        Held(counters)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.held_now.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a piece of the directory's stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceKind {
    /// A BindResponse with success (or saslBindInProgress, a step of a SASL bind, not a
    /// failure).
    SucceededBind,
    /// A BindResponse with any other resultCode.
    FailedBind,
    /// Any other whole LDAP message.
    Other,
    /// Bytes after the stream stopped being LDAP, passed through as they came.
    Unframed,
}

/// A piece of the directory's stream, ready to forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Its bytes, exactly as the directory sent them.
    pub bytes: Vec<u8>,
    /// What they are.
    pub kind: PieceKind,
}

/// Cuts the directory's byte stream into whole LDAP messages, whatever the reads' sizes.
#[derive(Debug, Default)]
pub struct Splitter {
    buf: Vec<u8>,
    /// The stream stopped being LDAP: everything is passed through unframed.
    passthrough: bool,
}

/// Search results can be large: the relay frames what the directory sends with wide
/// limits (it forwards the bytes, it does not serve them).
const LIMITS: Limits = Limits {
    max_message_bytes: 16 * 1024 * 1024,
    max_depth: 64,
    max_elements: 1 << 20,
};

impl Splitter {
    /// Appends bytes read from the directory.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole piece, or `None` until more bytes arrive.
    pub fn next_piece(&mut self) -> Option<Piece> {
        if self.buf.is_empty() {
            return None;
        }
        if self.passthrough {
            return Some(Piece {
                bytes: std::mem::take(&mut self.buf),
                kind: PieceKind::Unframed,
            });
        }
        match decode_response(&self.buf, &LIMITS) {
            Ok(Frame::Incomplete) => None,
            Ok(Frame::Message { message, consumed }) => {
                let kind = match &message.op {
                    LdapOp::BindResponse(r) => match r.res.code {
                        LdapResultCode::Success | LdapResultCode::SaslBindInProgress => {
                            PieceKind::SucceededBind
                        }
                        _ => PieceKind::FailedBind,
                    },
                    _ => PieceKind::Other,
                };
                let bytes = self.buf.drain(..consumed).collect();
                Some(Piece { bytes, kind })
            }
            Err(_) => {
                self.passthrough = true;
                self.next_piece()
            }
        }
    }
}

/// One simple bind on a fresh plain connection to `addr`, as `ldapwhoami -x` makes it: the
/// directory's resultCode (0 bound, 49 refused, which is also how OpenLDAP's ppolicy answers
/// a locked account). How the lab asks whether a user can still log in at the directory
/// itself, past every server in front of it.
pub async fn simple_bind(
    addr: SocketAddr,
    dn: &str,
    password: &str,
    timeout: Duration,
) -> Result<i32, String> {
    use portcullis_ldap::proto::LdapMsg;
    use portcullis_ldap::proto::proto::{LdapBindCred, LdapBindRequest};
    let request = LdapMsg::new(
        1,
        LdapOp::BindRequest(LdapBindRequest {
            version: 3,
            dn: dn.to_owned(),
            cred: LdapBindCred::Simple(password.to_owned()),
        }),
    );
    let exchange = async {
        let mut conn = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let bytes = portcullis_ldap::response::encode(request);
        conn.write_all(&bytes).await.map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = conn.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the directory closed the connection".to_owned());
            }
            buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
            match decode_response(&buf, &Limits::default()).map_err(|e| e.to_string())? {
                Frame::Incomplete => continue,
                Frame::Message { message, .. } => match message.op {
                    LdapOp::BindResponse(r) => return Ok(r.res.code as i32),
                    other => return Err(format!("answered a bind with {other:?}")),
                },
            }
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("no answer from {addr} within {timeout:?}"))?
}

#[cfg(test)]
mod tests;
