//! The peer (supplicant) side of EAP-TLS and EAP-TTLS/PAP, driving a rustls client
//! sans-I/O: what the load lab's 802.1X driver runs for each station, and what the
//! conversation tests talk to. It answers Identity, Naks a method it is not configured
//! for, reassembles and fragments like the server, sends the inner PAP AVPs once the
//! tunnel is up (not on a resumed TTLS session, RFC 5281 §10.1), and derives the keys
//! on Success so they can be compared with the MPPE keys the server sent.

use std::io::{Read, Write};
use std::sync::Arc;

use rustls::HandshakeKind;
use rustls::pki_types::ServerName;
use zeroize::Zeroizing;

use crate::fragment::{Fragmenter, Reassembler, TlsData};
use crate::keys::{self, Keys};
use crate::packet::{self, Code, Packet, method};
use crate::{EapError, avp, hello};

/// What a peer authenticates with.
#[derive(Clone)]
pub enum Credentials {
    /// EAP-TLS: the client certificate lives in the rustls client configuration.
    Tls,
    /// EAP-TTLS with inner PAP.
    TtlsPap {
        /// Inner User-Name.
        user: String,
        /// Inner User-Password.
        password: Zeroizing<Vec<u8>>,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Tls => f.write_str("Tls"),
            Credentials::TtlsPap { user, .. } => write!(f, "TtlsPap({user})"),
        }
    }
}

/// A peer's outcome after one step.
#[derive(Debug)]
pub enum PeerStep {
    /// Send this EAP-Response.
    Send(Vec<u8>),
    /// EAP-Success: the keys the peer derived (compare with the MPPE keys).
    Success(Option<Box<Keys>>),
    /// EAP-Failure.
    Failure,
}

/// One peer conversation.
pub struct Peer {
    config: Arc<rustls::ClientConfig>,
    server_name: ServerName<'static>,
    identity: String,
    creds: Credentials,
    method: u8,
    conn: Option<rustls::ClientConnection>,
    reasm: Reassembler,
    out: Option<Fragmenter>,
    fragment_size: usize,
    inner_sent: bool,
    client_random: Option<[u8; 32]>,
    server_random: Option<[u8; 32]>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("identity", &self.identity)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// A peer with outer `identity`, resuming through `config`'s session store.
    pub fn new(
        config: Arc<rustls::ClientConfig>,
        server_name: ServerName<'static>,
        identity: &str,
        creds: Credentials,
    ) -> Peer {
        let method = match creds {
            Credentials::Tls => method::TLS,
            Credentials::TtlsPap { .. } => method::TTLS,
        };
        Peer {
            config,
            server_name,
            identity: identity.to_owned(),
            creds,
            method,
            conn: None,
            reasm: Reassembler::new(1 << 16, 256),
            out: None,
            fragment_size: 1000,
            inner_sent: false,
            client_random: None,
            server_random: None,
        }
    }

    /// The EAP-Response/Identity a NAS sends first (identifier chosen by the NAS).
    pub fn identity_response(&self, identifier: u8) -> Vec<u8> {
        packet::encode(
            Code::Response,
            identifier,
            method::IDENTITY,
            self.identity.as_bytes(),
        )
        .unwrap_or_default()
    }

    /// Whether the last handshake was abbreviated.
    pub fn resumed(&self) -> bool {
        self.conn
            .as_ref()
            .and_then(|c| c.handshake_kind())
            .is_some_and(|k| k == HandshakeKind::Resumed)
    }

    /// The TLS connection (for tests that derive keys independently).
    pub fn connection(&self) -> Option<&rustls::ClientConnection> {
        self.conn.as_ref()
    }

    /// Answer one EAP packet from the server.
    pub fn step(&mut self, eap: &[u8]) -> Result<PeerStep, EapError> {
        let p = Packet::parse(eap)?;
        match p.code {
            Code::Success => return Ok(PeerStep::Success(self.keys().map(Box::new))),
            Code::Failure => return Ok(PeerStep::Failure),
            Code::Response => return Err(EapError::Tls("a Response from the server".into())),
            Code::Request => {}
        }
        let id = p.identifier;
        match p.method {
            Some(method::IDENTITY) => {
                return Ok(PeerStep::Send(self.identity_response(id)));
            }
            Some(m) if m == self.method => {}
            _ => {
                return Ok(PeerStep::Send(packet::encode(
                    Code::Response,
                    id,
                    method::NAK,
                    &[self.method],
                )?));
            }
        }
        let d = TlsData::parse(p.data)?;
        if d.flags & crate::fragment::flags::START != 0 {
            let conn =
                rustls::ClientConnection::new(Arc::clone(&self.config), self.server_name.clone())
                    .map_err(|e| EapError::Tls(e.to_string()))?;
            self.conn = Some(conn);
            self.inner_sent = false;
            self.client_random = None;
            self.server_random = None;
            let hello = self.drain()?;
            return self.send_flight(id, hello);
        }
        if let Some(f) = &mut self.out {
            if !d.is_ack() {
                return Err(EapError::Tls("expected an acknowledgement".into()));
            }
            let next = f.next_fragment(0).unwrap_or_else(|| vec![0]);
            if !f.pending() {
                self.out = None;
            }
            return self.respond(id, &next);
        }
        let Some(msg) = self.reasm.push(&d)? else {
            return self.respond(id, &[0]);
        };
        let conn = self
            .conn
            .as_mut()
            .ok_or(EapError::Tls("no TLS session".into()))?;
        if self.server_random.is_none() {
            self.server_random = hello::random(&msg, hello::SERVER_HELLO);
        }
        let mut rd = &msg[..];
        while !rd.is_empty() {
            match conn.read_tls(&mut rd) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(EapError::Tls(e.to_string())),
            }
            conn.process_new_packets()
                .map_err(|e| EapError::Tls(e.to_string()))?;
        }
        // Application data from the server (the TLS 1.3 commitment octet) is read and
        // dropped.
        let mut sink = [0u8; 256];
        while let Ok(n) = conn.reader().read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        let resumed = conn.handshake_kind() == Some(HandshakeKind::Resumed);
        if !conn.is_handshaking()
            && !self.inner_sent
            && !resumed
            && let Credentials::TtlsPap { user, password } = &self.creds
        {
            {
                let mut avps = Vec::new();
                avp::encode(&mut avps, avp::code::USER_NAME, None, true, user.as_bytes());
                let mut padded = Zeroizing::new(password.to_vec());
                padded.resize(password.len().next_multiple_of(16).max(16), 0);
                avp::encode(&mut avps, avp::code::USER_PASSWORD, None, true, &padded);
                conn.writer()
                    .write_all(&avps)
                    .map_err(|e| EapError::Tls(e.to_string()))?;
                self.inner_sent = true;
            }
        }
        let out = self.drain()?;
        if out.is_empty() {
            self.respond(id, &[0])
        } else {
            self.send_flight(id, out)
        }
    }

    fn drain(&mut self) -> Result<Vec<u8>, EapError> {
        let mut out = Vec::new();
        if let Some(conn) = self.conn.as_mut() {
            while conn.wants_write() {
                conn.write_tls(&mut out)
                    .map_err(|e| EapError::Tls(e.to_string()))?;
            }
        }
        if self.client_random.is_none() {
            self.client_random = hello::random(&out, hello::CLIENT_HELLO);
        }
        Ok(out)
    }

    fn send_flight(&mut self, id: u8, flight: Vec<u8>) -> Result<PeerStep, EapError> {
        let mut f = Fragmenter::new(flight, self.fragment_size);
        let first = f.next_fragment(0).unwrap_or_else(|| vec![0]);
        self.out = f.pending().then_some(f);
        self.respond(id, &first)
    }

    fn respond(&self, id: u8, data: &[u8]) -> Result<PeerStep, EapError> {
        Ok(PeerStep::Send(packet::encode(
            Code::Response,
            id,
            self.method,
            data,
        )?))
    }

    fn keys(&self) -> Option<Keys> {
        let conn = self.conn.as_ref()?;
        let tls13 = conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
        keys::derive(
            &**conn,
            self.method,
            tls13,
            self.client_random.zip(self.server_random),
        )
        .ok()
    }
}
