//! One client connection to one LDAP server: TCP, TLS (LDAPS or StartTLS), and the few
//! operations a password check needs (simple bind, search, the rootDSE read).
//!
//! This module owns the wire: message ids, matching responses to requests, the per-operation
//! timeouts and what counts as a broken connection. It knows nothing of pools, breakers or
//! what a result code means for the user: the caller decides.

use std::net::IpAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use ldap3_proto::LdapCodec;
use ldap3_proto::proto::{
    LdapBindCred, LdapBindRequest, LdapDerefAliases, LdapExtendedRequest, LdapFilter, LdapMsg,
    LdapOp, LdapResult, LdapResultCode, LdapSearchRequest, LdapSearchScope,
};
use rustls::pki_types::ServerName;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

use crate::config::{Security, ServerUrl};

/// OID of the StartTLS extended operation (RFC 4511 section 4.14.1).
const OID_STARTTLS: &str = "1.3.6.1.4.1.1466.20037";
/// OID of the Notice of Disconnection (RFC 4511 section 4.4.1).
const OID_NOTICE_OF_DISCONNECTION: &str = "1.3.6.1.4.1.1466.20036";
/// Largest response accepted (search entries are asked for with few attributes).
const MAX_RESPONSE: usize = 256 * 1024;

/// Why an operation on a connection failed. All of these are the server's or the network's
/// fault, never the user's.
#[derive(Debug, Error)]
pub enum ConnError {
    /// TCP connect refused, unreachable, …
    #[error("connect: {0}")]
    Connect(std::io::Error),
    /// The TLS handshake failed (certificate not trusted, wrong name, …) or StartTLS was
    /// refused.
    #[error("TLS: {0}")]
    Tls(String),
    /// An operation took longer than its limit.
    #[error("{0} timed out")]
    Timeout(&'static str),
    /// The server closed the connection (or said it would).
    #[error("connection closed by the server")]
    Closed,
    /// Reading or writing failed.
    #[error("I/O: {0}")]
    Io(std::io::Error),
    /// The server sent something that is not the answer expected.
    #[error("protocol: {0}")]
    Protocol(String),
}

impl ConnError {
    /// Whether this looks like a pooled connection the server had already dropped (then a
    /// fresh connection is worth one more try, and the server is not at fault).
    pub fn is_stale(&self) -> bool {
        match self {
            Self::Closed => true,
            Self::Io(e) => matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }
}

/// What a connection runs over: TCP, TLS over TCP, or (fuzzing) an in-memory pipe.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// An LDAP result: the code and the server's diagnostic message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The result code.
    pub code: LdapResultCode,
    /// The diagnostic message (Active Directory puts its sub-code here: `data 52e`).
    pub message: String,
}

impl From<LdapResult> for Reply {
    fn from(r: LdapResult) -> Self {
        Self {
            code: r.code,
            message: r.message,
        }
    }
}

/// An entry's attributes: (type, values).
pub type Attributes = Vec<(String, Vec<Vec<u8>>)>;

/// A finished search: the entries (DN and attributes) and the result.
#[derive(Debug)]
pub struct Found {
    /// Entries, each its DN and its attributes as (type, values).
    pub entries: Vec<(String, Attributes)>,
    /// The SearchResultDone.
    pub reply: Reply,
}

/// One open connection.
pub struct Connection {
    framed: Framed<Box<dyn Io>, LdapCodec>,
    next_id: i32,
}

impl Connection {
    /// Connects, and for TLS servers completes the handshake (StartTLS first where asked),
    /// all within `limit`.
    pub async fn open(
        server: &ServerUrl,
        tls: Option<&tokio_rustls::TlsConnector>,
        limit: Duration,
    ) -> Result<Self, ConnError> {
        tokio::time::timeout(limit, Self::open_inner(server, tls))
            .await
            .map_err(|_| ConnError::Timeout("connect"))?
    }

    async fn open_inner(
        server: &ServerUrl,
        tls: Option<&tokio_rustls::TlsConnector>,
    ) -> Result<Self, ConnError> {
        let tcp = TcpStream::connect((server.host.as_str(), server.port))
            .await
            .map_err(ConnError::Connect)?;
        // Binds are small request/response pairs: send each at once.
        let _ = tcp.set_nodelay(true);
        let tls_for = |tls: Option<&tokio_rustls::TlsConnector>| {
            tls.cloned()
                .ok_or_else(|| ConnError::Tls("no CA configured for a TLS server".into()))
        };
        match server.security {
            Security::Plain => Ok(Self::over(Box::new(tcp))),
            Security::Ldaps => {
                let stream = handshake(&tls_for(tls)?, &server.host, Box::new(tcp)).await?;
                Ok(Self::over(stream))
            }
            Security::StartTls => {
                let mut plain = Self::over(Box::new(tcp));
                let reply = plain
                    .extended(OID_STARTTLS)
                    .await
                    .map_err(|e| ConnError::Tls(format!("StartTLS: {e}")))?;
                if reply.code != LdapResultCode::Success {
                    return Err(ConnError::Tls(format!(
                        "StartTLS refused: {:?} {}",
                        reply.code, reply.message
                    )));
                }
                let parts = plain.framed.into_parts();
                if !parts.read_buf.is_empty() {
                    return Err(ConnError::Protocol(
                        "data after the StartTLS response".into(),
                    ));
                }
                let stream = handshake(&tls_for(tls)?, &server.host, parts.io).await?;
                Ok(Self {
                    framed: Framed::new(stream, codec()),
                    next_id: plain.next_id,
                })
            }
        }
    }

    /// A connection over an already open stream (the fuzz targets' in-memory server).
    pub(crate) fn over_stream(io: Box<dyn Io>) -> Self {
        Self::over(io)
    }

    fn over(io: Box<dyn Io>) -> Self {
        Self {
            framed: Framed::new(io, codec()),
            next_id: 1,
        }
    }

    /// A simple bind (RFC 4511 section 4.2). The caller never sends an empty password: that
    /// would be an unauthenticated bind.
    pub async fn bind(
        &mut self,
        dn: &str,
        password: &str,
        limit: Duration,
    ) -> Result<Reply, ConnError> {
        let op = LdapOp::BindRequest(LdapBindRequest {
            version: 3,
            dn: dn.to_owned(),
            cred: LdapBindCred::Simple(password.to_owned()),
        });
        tokio::time::timeout(limit, async {
            let id = self.send(op).await?;
            match self.receive(id).await?.op {
                LdapOp::BindResponse(r) => Ok(r.res.into()),
                other => Err(unexpected("BindResponse", &other)),
            }
        })
        .await
        .map_err(|_| ConnError::Timeout("bind"))?
    }

    /// A search that returns at most `size_limit` entries with the attributes `attrs`
    /// (`["1.1"]` for none).
    pub async fn search(
        &mut self,
        base: &str,
        scope: LdapSearchScope,
        filter: LdapFilter,
        attrs: &[&str],
        size_limit: i32,
        limit: Duration,
    ) -> Result<Found, ConnError> {
        let op = LdapOp::SearchRequest(LdapSearchRequest {
            base: base.to_owned(),
            scope,
            aliases: LdapDerefAliases::Never,
            sizelimit: size_limit,
            timelimit: i32::try_from(limit.as_secs().max(1)).unwrap_or(i32::MAX),
            typesonly: false,
            filter,
            attrs: attrs.iter().map(|a| (*a).to_owned()).collect(),
        });
        tokio::time::timeout(limit, async {
            let id = self.send(op).await?;
            let mut entries = Vec::new();
            loop {
                match self.receive(id).await?.op {
                    LdapOp::SearchResultEntry(e) => {
                        let attrs = e
                            .attributes
                            .into_iter()
                            .map(|a| (a.atype, a.vals))
                            .collect();
                        entries.push((e.dn, attrs));
                    }
                    // Referrals (Active Directory's DomainDnsZones, …) are not followed.
                    LdapOp::SearchResultReference(_) => {}
                    LdapOp::SearchResultDone(r) => {
                        return Ok(Found {
                            entries,
                            reply: r.into(),
                        });
                    }
                    other => return Err(unexpected("a search response", &other)),
                }
            }
        })
        .await
        .map_err(|_| ConnError::Timeout("search"))?
    }

    async fn extended(&mut self, oid: &str) -> Result<Reply, ConnError> {
        let op = LdapOp::ExtendedRequest(LdapExtendedRequest {
            name: oid.to_owned(),
            value: None,
        });
        let id = self.send(op).await?;
        match self.receive(id).await?.op {
            LdapOp::ExtendedResponse(r) => Ok(r.res.into()),
            other => Err(unexpected("ExtendedResponse", &other)),
        }
    }

    async fn send(&mut self, op: LdapOp) -> Result<i32, ConnError> {
        let id = self.next_id;
        // Message ids are 1..=2^31-1 (RFC 4511 4.1.1); a connection never lives that long,
        // but wrapping keeps the id valid if it did.
        self.next_id = if id == i32::MAX { 1 } else { id + 1 };
        self.framed
            .send(LdapMsg::new(id, op))
            .await
            .map_err(ConnError::Io)?;
        Ok(id)
    }

    /// The response to message `id`: the next message on the connection (this client has
    /// one operation outstanding at a time, and a timed-out connection is dropped, so any
    /// other id means a confused server).
    async fn receive(&mut self, id: i32) -> Result<LdapMsg, ConnError> {
        let msg = match self.framed.next().await {
            None => return Err(ConnError::Closed),
            Some(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(ConnError::Closed);
            }
            Some(Err(e)) if e.kind() == std::io::ErrorKind::Other => {
                return Err(ConnError::Protocol(format!("undecodable response: {e}")));
            }
            Some(Err(e)) => return Err(ConnError::Io(e)),
            Some(Ok(msg)) => msg,
        };
        if msg.msgid == id {
            return Ok(msg);
        }
        if msg.msgid == 0 {
            // Unsolicited notification: the Notice of Disconnection or another; either way
            // this connection is done.
            if let LdapOp::ExtendedResponse(r) = &msg.op
                && r.name.as_deref() != Some(OID_NOTICE_OF_DISCONNECTION)
            {
                return Err(ConnError::Protocol(format!(
                    "unsolicited notification {:?}",
                    r.name
                )));
            }
            return Err(ConnError::Closed);
        }
        Err(ConnError::Protocol(format!(
            "response to message {} while waiting for {id}",
            msg.msgid
        )))
    }
}

fn codec() -> LdapCodec {
    LdapCodec::new(Some(MAX_RESPONSE), None)
}

fn unexpected(wanted: &str, got: &LdapOp) -> ConnError {
    let name = match got {
        LdapOp::BindResponse(_) => "BindResponse",
        LdapOp::SearchResultEntry(_) => "SearchResultEntry",
        LdapOp::SearchResultDone(_) => "SearchResultDone",
        LdapOp::ExtendedResponse(_) => "ExtendedResponse",
        _ => "another operation",
    };
    ConnError::Protocol(format!("expected {wanted}, got {name}"))
}

async fn handshake(
    connector: &tokio_rustls::TlsConnector,
    host: &str,
    io: Box<dyn Io>,
) -> Result<Box<dyn Io>, ConnError> {
    let name = match host.parse::<IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(host.to_owned())
            .map_err(|e| ConnError::Tls(format!("server name {host:?}: {e}")))?,
    };
    let stream = connector
        .connect(name, io)
        .await
        .map_err(|e| ConnError::Tls(e.to_string()))?;
    Ok(Box::new(stream))
}
