//! One LDAP client connection: TCP from the client's own source address, TLS from the
//! first octet (LDAPS) or after StartTLS (RFC 4511 §4.14), requests encoded and responses
//! decoded by ldap3_proto's codec, one operation at a time.
//!
//! Everything read from the server is untrusted: a message is at most [`MAX_MESSAGE`]
//! octets and [`MAX_DEPTH`] BER levels deep (the codec refuses more, so a server announcing
//! a huge length cannot make the lab buffer it), and anything that does not decode, answers
//! another message, or is not the response the operation expects is a [`WireError`], never
//! a panic. A Notice of Disconnection (RFC 4511 §4.4.1) ends the connection with its code.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use bytes::BytesMut;
use ldap3_proto::LdapCodec;
use ldap3_proto::proto::{
    LdapBindCred, LdapBindRequest, LdapExtendedRequest, LdapMsg, LdapOp, LdapResult,
    LdapSearchRequest,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder};

use crate::conn::{self, Phases, Stream};
use crate::tls::Tls;

/// Largest response message accepted (a search entry with many attributes fits).
pub const MAX_MESSAGE: usize = 1 << 20;
/// Deepest BER nesting accepted (responses are a few levels deep).
pub const MAX_DEPTH: usize = 32;
/// RFC 4511 §4.14.1: the StartTLS extended operation.
pub const OID_STARTTLS: &str = "1.3.6.1.4.1.1466.20037";

/// What went wrong on the wire.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// Connect, read or write failed.
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    /// The server closed the connection before answering.
    #[error("the server closed the connection")]
    Closed,
    /// The bytes are not an LDAP message within the limits.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// A response to another message.
    #[error("response to message {got}, expected {want}")]
    OtherMessage {
        /// Its message id.
        got: i32,
        /// Ours.
        want: i32,
    },
    /// A well-formed message that does not answer the operation.
    #[error("a {got} in answer to a {to}")]
    Unexpected {
        /// What came.
        got: &'static str,
        /// What was asked.
        to: &'static str,
    },
    /// The server sent a Notice of Disconnection with this result code.
    #[error("notice of disconnection (result code {0})")]
    Disconnected(u16),
}

/// A result code as a number (RFC 4511 Appendix A).
pub fn code(r: &LdapResult) -> u16 {
    r.code.clone() as i64 as u16
}

/// Decode the first message of `buf`, removing it; `Ok(None)`: more octets are needed.
pub fn decode(buf: &mut BytesMut) -> Result<Option<LdapMsg>, WireError> {
    LdapCodec::new(Some(MAX_MESSAGE), Some(MAX_DEPTH))
        .decode(buf)
        .map_err(|e| WireError::Malformed(e.to_string()))
}

/// Decode every message in `data` (the fuzz target's entry): how many came out whole
/// before the end or the first error.
pub fn decode_all(data: &[u8]) -> Result<usize, WireError> {
    let mut buf = BytesMut::from(data);
    let mut n = 0;
    while decode(&mut buf)?.is_some() {
        n += 1;
    }
    Ok(n)
}

fn op_name(op: &LdapOp) -> &'static str {
    match op {
        LdapOp::BindResponse(_) => "BindResponse",
        LdapOp::SearchResultEntry(_) => "SearchResultEntry",
        LdapOp::SearchResultDone(_) => "SearchResultDone",
        LdapOp::SearchResultReference(_) => "SearchResultReference",
        LdapOp::ExtendedResponse(_) => "ExtendedResponse",
        LdapOp::IntermediateResponse(_) => "IntermediateResponse",
        _ => "request or other response",
    }
}

/// What a search came to: its result code, the entries returned and the first one's DN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Searched {
    /// SearchResultDone's code.
    pub code: u16,
    /// Entries returned.
    pub entries: u32,
    /// The first entry's DN.
    pub first_dn: Option<String>,
}

/// An open LDAP connection.
#[derive(Debug)]
pub struct Conn {
    io: Stream,
    buf: BytesMut,
    next_id: i32,
}

impl Conn {
    /// Connect from `source`, with TLS from the start when `ldaps` is given.
    pub async fn open(
        addr: SocketAddr,
        source: Option<IpAddr>,
        ldaps: Option<&Tls>,
    ) -> Result<(Conn, Phases), WireError> {
        let (io, phases) = conn::establish(addr, source, ldaps).await?;
        Ok((
            Conn {
                io,
                buf: BytesMut::with_capacity(4096),
                next_id: 1,
            },
            phases,
        ))
    }

    /// StartTLS: `Ok(Ok(conn))` upgraded (the handshake's time and resumption added to
    /// `phases`), `Ok(Err(code))` refused by the server with that result code.
    pub async fn starttls(
        mut self,
        tls: &Tls,
        phases: &mut Phases,
    ) -> Result<Result<Conn, u16>, WireError> {
        let req = LdapExtendedRequest {
            name: OID_STARTTLS.to_owned(),
            value: None,
        };
        let id = self.send(LdapOp::ExtendedRequest(req)).await?;
        let res = match self.recv(id).await? {
            LdapOp::ExtendedResponse(r) => r.res,
            other => return Err(unexpected(&other, "StartTLS request")),
        };
        let c = code(&res);
        if c != 0 {
            return Ok(Err(c));
        }
        if !self.buf.is_empty() {
            // Octets after the response would be read as TLS: RFC 4511 §4.14.2 forbids them.
            return Err(WireError::Malformed(
                "octets after the StartTLS response, before TLS".into(),
            ));
        }
        let Stream::Plain(tcp) = self.io else {
            return Err(WireError::Unexpected {
                got: "TLS connection",
                to: "StartTLS request",
            });
        };
        let t = Instant::now();
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::clone(&tls.config));
        let s = connector.connect(tls.name.clone(), tcp).await?;
        phases.handshake = t.elapsed();
        phases.tls = true;
        phases.resumed = s.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        Ok(Ok(Conn {
            io: Stream::Tls(Box::new(s)),
            buf: self.buf,
            next_id: self.next_id,
        }))
    }

    /// Write one request; returns its message id.
    async fn send(&mut self, op: LdapOp) -> Result<i32, WireError> {
        let id = self.next_id;
        // Message ids are positive (RFC 4511 §4.1.1.1); 0 is for unsolicited notices.
        self.next_id = if id == i32::MAX { 1 } else { id + 1 };
        let mut out = BytesMut::with_capacity(256);
        LdapCodec::default().encode(LdapMsg::new(id, op), &mut out)?;
        self.io.write_all(&out).await?;
        self.io.flush().await?;
        Ok(id)
    }

    /// Read the next response to message `id`.
    async fn recv(&mut self, id: i32) -> Result<LdapOp, WireError> {
        loop {
            if let Some(msg) = decode(&mut self.buf)? {
                return match (msg.msgid, msg.op) {
                    (m, op) if m == id => Ok(op),
                    (0, LdapOp::ExtendedResponse(r)) => Err(WireError::Disconnected(code(&r.res))),
                    (got, _) => Err(WireError::OtherMessage { got, want: id }),
                };
            }
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(16 * 1024);
            }
            if self.io.read_buf(&mut self.buf).await? == 0 {
                return Err(WireError::Closed);
            }
        }
    }

    /// A simple bind (RFC 4511 §4.2); returns the result code.
    pub async fn bind(&mut self, dn: &str, password: &str) -> Result<u16, WireError> {
        let req = LdapBindRequest {
            version: 3,
            dn: dn.to_owned(),
            cred: LdapBindCred::Simple(password.to_owned()),
        };
        let id = self.send(LdapOp::BindRequest(req)).await?;
        match self.recv(id).await? {
            LdapOp::BindResponse(r) => Ok(code(&r.res)),
            other => Err(unexpected(&other, "BindRequest")),
        }
    }

    /// A search (RFC 4511 §4.5): entries are counted, not kept, except the first's DN.
    pub async fn search(&mut self, req: LdapSearchRequest) -> Result<Searched, WireError> {
        let id = self.send(LdapOp::SearchRequest(req)).await?;
        let mut out = Searched {
            code: 0,
            entries: 0,
            first_dn: None,
        };
        loop {
            match self.recv(id).await? {
                LdapOp::SearchResultEntry(e) => {
                    if out.entries == 0 {
                        out.first_dn = Some(e.dn);
                    }
                    out.entries = out.entries.saturating_add(1);
                }
                LdapOp::SearchResultReference(_) | LdapOp::IntermediateResponse(_) => {}
                LdapOp::SearchResultDone(r) => {
                    out.code = code(&r);
                    return Ok(out);
                }
                other => return Err(unexpected(&other, "SearchRequest")),
            }
        }
    }

    /// Unbind (RFC 4511 §4.3) and close, as a client leaving does; errors do not matter
    /// any more.
    pub async fn unbind(mut self) {
        if self.send(LdapOp::UnbindRequest).await.is_ok() {
            let _ = self.io.shutdown().await;
        }
    }
}

fn unexpected(op: &LdapOp, to: &'static str) -> WireError {
    WireError::Unexpected {
        got: op_name(op),
        to,
    }
}
