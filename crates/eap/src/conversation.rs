//! The server side of one EAP conversation (RFC 3748 §4, RFC 5216, RFC 5281, RFC 9190,
//! RFC 9427): EAP-Identity, the method proposal and Nak, then EAP-TLS or EAP-TTLS with
//! rustls driven sans-I/O, ending in Success (with keys) or Failure.
//!
//! The machine never blocks and never looks anything up: where the server must decide
//! (check an inner PAP password, authorise a client certificate, recall who proved
//! themselves in a resumed TTLS session) it returns [`Step::Verify`] and waits for
//! [`Conversation::resolve`]. The caller owns state storage, timers and limits; each call
//! here is bounded by the [`Settings`] (message size, fragments, round trips).
//!
//! Resumption is bound to the method: rustls does not check that a resumed session did
//! the client authentication the resuming configuration asks for, so each method needs
//! its own ticket keys and session cache (the server's job), and on TLS 1.3 the
//! resumption data rustls carries in every ticket starts with the method type and is
//! checked here as well.
//!
//! A resumed TTLS session skips phase 2 (RFC 5281 §10.1), so the caller must know who
//! proved themselves in the session it resumes: the session's *binding*. On TLS 1.3 the
//! binding is a random value carried in the tickets ([`Start::binding`]); TLS 1.2 gives
//! no access to ticket data, so there it is a digest of the session's master secret,
//! which a resumed TLS 1.2 session shares with its first one ([`SessionDigest`]).

use std::io::Write;
use std::sync::Arc;

use rustls::HandshakeKind;
use rustls::pki_types::CertificateDer;
use zeroize::Zeroizing;

use crate::EapError;
use crate::fragment::{Fragmenter, Reassembler, TlsData, flags};
use crate::keys::{self, Keys};
use crate::packet::{self, Code, Packet, method};
use crate::reason::MAX_IDENTITY;
pub use crate::reason::Reason;
use crate::tunnel::{Phase, TlsMethod, inner_pap};

/// The settings every conversation of a server shares.
#[derive(Debug, Clone)]
pub struct Settings {
    /// rustls configuration for EAP-TLS (client certificate required); `None`: EAP-TLS is
    /// not offered.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// rustls configuration for EAP-TTLS (no client certificate); `None`: not offered.
    pub ttls: Option<Arc<rustls::ServerConfig>>,
    /// Most TLS octets per EAP packet sent (before Framed-MTU lowers it).
    pub fragment_size: usize,
    /// Largest TLS message accepted from a peer (reassembled).
    pub max_message: usize,
    /// Most fragments of one message from a peer.
    pub max_fragments: u32,
    /// Most round trips in one conversation.
    pub max_rounds: u32,
}

/// Per-conversation inputs of [`Conversation::start`].
#[derive(Debug, Clone)]
pub struct Start<'a> {
    /// Methods this NAS/user may use, in the order the server proposes them.
    pub methods: &'a [u8],
    /// Framed-MTU of the request, if the NAS sent one.
    pub framed_mtu: Option<usize>,
    /// A random value carried in this session's tickets: a resumed TTLS session presents
    /// it, and the caller maps it to the identity proven in the first session.
    pub binding: [u8; 16],
}

/// What the caller must decide before the conversation can go on.
#[derive(Debug)]
pub enum Pending {
    /// TTLS inner PAP: check this password.
    Password {
        /// The inner User-Name.
        user: String,
        /// The inner User-Password, trailing NULs removed.
        password: Zeroizing<Vec<u8>>,
    },
    /// EAP-TLS: the handshake verified the chain against the client CAs (on a full
    /// handshake); authorise its identity.
    Certificate {
        /// The peer's chain, leaf first (carried in the ticket when resumed).
        chain: Vec<CertificateDer<'static>>,
        /// Whether the session was resumed (the chain was checked when it was issued).
        resumed: bool,
    },
    /// TTLS resumed: who proved themselves in the session with this binding?
    Resumption {
        /// The binding of the first session ([`Start::binding`]).
        binding: [u8; 16],
    },
}

/// The caller's answer to a [`Pending`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go on; `identity` is who authenticated (inner user, certificate identity).
    Allow {
        /// For the audit event and the Access-Accept's User-Name.
        identity: String,
    },
    /// End with Failure, for this reason (audit label).
    Deny(&'static str),
}

/// A finished, successful conversation.
#[derive(Debug)]
pub struct Accepted {
    /// EAP-Success to send.
    pub eap: Vec<u8>,
    /// MSK/EMSK/Session-Id.
    pub keys: Keys,
    /// EAP-TLS or EAP-TTLS.
    pub method: u8,
    /// Negotiated TLS 1.3.
    pub tls13: bool,
    /// Abbreviated handshake.
    pub resumed: bool,
    /// Who authenticated (from the caller's decision).
    pub identity: String,
    /// TTLS: the binding the caller should remember for `identity`.
    pub binding: Option<[u8; 16]>,
}

/// What to do with one step's result.
#[derive(Debug)]
pub enum Step {
    /// Send this EAP-Request in an Access-Challenge.
    Challenge(Vec<u8>),
    /// Decide, then call [`Conversation::resolve`].
    Verify(Pending),
    /// Send EAP-Success in an Access-Accept with the keys.
    Accept(Box<Accepted>),
    /// Send this EAP-Failure in an Access-Reject.
    Reject {
        /// EAP-Failure.
        eap: Vec<u8>,
        /// Why.
        reason: Reason,
    },
    /// Drop the message silently (RFC 3748 §4.1: a Response whose identifier does not
    /// match); the conversation is unchanged.
    Discard(&'static str),
}

enum State {
    /// Sent EAP-Request/Identity.
    Identity,
    /// Sent the Start of `proposed`; the peer answers with it or a Nak.
    Proposed { proposed: u8 },
    /// Inside the TLS method.
    Tls(Box<TlsMethod>),
    /// Ended.
    Done,
}

/// One EAP conversation.
pub struct Conversation {
    state: State,
    /// The identifier of the last Request sent (a Response must carry it).
    id: u8,
    rounds: u32,
    outer_identity: String,
    /// Methods this conversation may use.
    methods: Vec<u8>,
    fragment_size: usize,
    binding: [u8; 16],
    identity: Option<String>,
    /// The method the peer accepted (kept after the conversation ends, for audit).
    method: Option<u8>,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("id", &self.id)
            .field("rounds", &self.rounds)
            .field("outer_identity", &self.outer_identity)
            .finish_non_exhaustive()
    }
}

/// Octets of EAP, EAP-TLS and EAPOL overhead under Framed-MTU: EAP header and type (5),
/// flags and length (5), EAPOL header (4).
const MTU_OVERHEAD: usize = 14;

impl Conversation {
    /// Begin a conversation with the first EAP-Message of an Access-Request (empty: an
    /// EAP-Start). Returns the conversation to keep, if it goes on, and the step.
    pub fn start(
        settings: &Settings,
        eap: &[u8],
        start: &Start<'_>,
    ) -> (Option<Conversation>, Step) {
        let methods: Vec<u8> = start
            .methods
            .iter()
            .copied()
            .filter(|m| match *m {
                method::TLS => settings.tls.is_some(),
                method::TTLS => settings.ttls.is_some(),
                _ => false,
            })
            .collect();
        let fragment_size = match start.framed_mtu {
            Some(mtu) => settings
                .fragment_size
                .min(mtu.saturating_sub(MTU_OVERHEAD))
                .max(64),
            None => settings.fragment_size,
        };
        let mut c = Conversation {
            state: State::Identity,
            id: 0,
            rounds: 0,
            outer_identity: String::new(),
            methods,
            fragment_size,
            binding: start.binding,
            identity: None,
            method: None,
        };
        if eap.is_empty() {
            c.id = start.binding[0];
            let req = packet::encode(Code::Request, c.id, method::IDENTITY, &[]);
            return match req {
                Ok(r) => (Some(c), Step::Challenge(r)),
                Err(e) => (None, c.fail(Reason::Protocol(e.to_string()))),
            };
        }
        let p = match Packet::parse(eap) {
            Ok(p) => p,
            Err(e) => return (None, Step::Discard(e.label())),
        };
        c.id = p.identifier;
        if p.code != Code::Response || p.method != Some(method::IDENTITY) {
            // A method message with no conversation: expired, or from another server.
            let step = c.fail(Reason::Protocol("no conversation for this message".into()));
            return (None, step);
        }
        c.outer_identity = String::from_utf8_lossy(p.data)
            .chars()
            .take(MAX_IDENTITY)
            .collect();
        let step = c.propose();
        let keep = matches!(step, Step::Challenge(_));
        (keep.then_some(c), step)
    }

    /// Feed the EAP-Message of the next Access-Request of this conversation.
    pub fn step(&mut self, settings: &Settings, eap: &[u8]) -> Step {
        if matches!(self.state, State::Done) {
            // Anything after the end, malformed or not, is dropped: a finished
            // conversation never sends a second Failure, nor a Failure after a Success.
            return Step::Discard("conversation_over");
        }
        let p = match Packet::parse(eap) {
            Ok(p) => p,
            Err(e) => return self.fail(Reason::Protocol(e.to_string())),
        };
        if p.code != Code::Response {
            return self.fail(Reason::Protocol("not an EAP-Response".into()));
        }
        if p.identifier != self.id {
            return Step::Discard("identifier_mismatch");
        }
        self.rounds += 1;
        if self.rounds > settings.max_rounds {
            return self.fail(Reason::TooManyRounds);
        }
        let Some(m) = p.method else {
            return self.fail(Reason::Protocol("EAP-Response without a type".into()));
        };
        match std::mem::replace(&mut self.state, State::Done) {
            State::Identity if m == method::IDENTITY => {
                self.outer_identity = String::from_utf8_lossy(p.data)
                    .chars()
                    .take(MAX_IDENTITY)
                    .collect();
                self.propose()
            }
            State::Proposed { proposed } if m == method::NAK => self.nak(proposed, p.data),
            State::Proposed { proposed } if m == proposed => {
                let config = match proposed {
                    method::TLS => settings.tls.clone(),
                    _ => settings.ttls.clone(),
                };
                let Some(config) = config else {
                    return self.fail(Reason::NoCommonMethod);
                };
                let mut conn = match rustls::ServerConnection::new(config) {
                    Ok(c) => c,
                    Err(e) => return self.fail(Reason::Tls(e.to_string())),
                };
                let mut tag = [0u8; 17];
                tag[0] = proposed;
                tag[1..].copy_from_slice(&self.binding);
                conn.set_resumption_data(&tag);
                self.method = Some(proposed);
                let t = TlsMethod {
                    conn,
                    method: proposed,
                    reasm: Reassembler::new(settings.max_message, settings.max_fragments),
                    out: None,
                    final_flight: Vec::new(),
                    client_random: None,
                    server_random: None,
                    master_digest: None,
                    phase: Phase::Handshake,
                    resumed: false,
                    tls13: false,
                };
                self.state = State::Tls(Box::new(t));
                self.tls_step(p.data)
            }
            State::Tls(t) if m == t.method => {
                self.state = State::Tls(t);
                self.tls_step(p.data)
            }
            _ => self.fail(Reason::Protocol(format!(
                "unexpected EAP-Response of type {}",
                method::name(m)
            ))),
        }
    }

    /// Give the answer to the last [`Step::Verify`].
    pub fn resolve(&mut self, d: Decision) -> Step {
        let State::Tls(t) = &mut self.state else {
            return self.fail(Reason::Protocol("no decision pending".into()));
        };
        if t.phase != Phase::Deciding {
            return self.fail(Reason::Protocol("no decision pending".into()));
        }
        match d {
            Decision::Deny(why) => self.fail(Reason::Denied(why)),
            Decision::Allow { identity } => {
                self.identity = Some(identity);
                let flight = std::mem::take(&mut t.final_flight);
                t.phase = Phase::Final;
                if flight.is_empty() {
                    self.accept()
                } else {
                    self.send_flight(flight)
                }
            }
        }
    }

    /// Round trips so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// The EAP-Response/Identity (outer identity).
    pub fn outer_identity(&self) -> &str {
        &self.outer_identity
    }

    /// The method in use, once the peer accepted one (also after the end).
    pub fn method(&self) -> Option<u8> {
        self.method
    }

    /// Whether the TLS handshake has been completed (a conversation past it is the
    /// expensive one to lose under overload).
    pub fn past_handshake(&self) -> bool {
        matches!(&self.state, State::Tls(t) if t.phase != Phase::Handshake)
    }

    /// Whether [`Conversation::step`] with `eap` may create or verify a signature: a full
    /// handshake's ClientHello (the server signs its key share) or the client's flight
    /// (chain and CertificateVerify checked), tens to hundreds of microseconds. Everything
    /// else a conversation does is cheap: the Identity and method proposal, fragment
    /// acknowledgements, a resumption (a ClientHello offering a ticket or PSK, then the
    /// client's Finished: symmetric work, plus one key agreement on TLS 1.3), the TTLS
    /// phase-2 AVPs, the keys. The caller uses this to keep the costly steps off a
    /// thread that must stay responsive; it never changes what the step does. Asking costs
    /// a parse of the EAP and EAP-TLS headers, no TLS work.
    pub fn may_be_costly(&self, eap: &[u8]) -> bool {
        self.costly(eap, false)
    }

    /// Whether [`Conversation::step`] with `eap` completes a ClientHello that offers no
    /// ticket or PSK: the step that starts a full handshake (the server's key share and
    /// signature). The door counts these, so what a login or a refusal cost in
    /// handshakes is visible. Same cost as [`Conversation::may_be_costly`].
    pub fn opens_full_handshake(&self, eap: &[u8]) -> bool {
        self.costly(eap, true)
    }

    fn costly(&self, eap: &[u8], hello_only: bool) -> bool {
        let Ok(p) = Packet::parse(eap) else {
            return false;
        };
        let Ok(d) = TlsData::parse(p.data) else {
            return false;
        };
        let completes = d.flags & flags::MORE == 0;
        match &self.state {
            // The first TLS message of the method: the ClientHello, or its first fragment.
            State::Proposed { proposed } if p.method == Some(*proposed) => {
                completes && !crate::hello::offers_resumption(d.data)
            }
            State::Tls(t) if p.method == Some(t.method) => {
                if t.out.is_some() || t.phase != Phase::Handshake || !completes {
                    return false;
                }
                match t.conn.handshake_kind() {
                    Some(HandshakeKind::Resumed) => false,
                    // The client's flight of a full handshake (not a hello).
                    Some(_) => !hello_only,
                    // The last fragment of a ClientHello (one carrying a ticket with a
                    // client chain is often longer than a fragment).
                    None if t.reasm.in_progress() => {
                        let mut hello = t.reasm.received().to_vec();
                        hello.extend_from_slice(d.data);
                        !crate::hello::offers_resumption(&hello)
                    }
                    None => !crate::hello::offers_resumption(d.data),
                }
            }
            _ => false,
        }
    }

    /// Whether the conversation has ended.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn fail(&mut self, reason: Reason) -> Step {
        self.state = State::Done;
        Step::Reject {
            eap: packet::failure(self.id),
            reason,
        }
    }

    fn request(&mut self, m: u8, data: &[u8]) -> Step {
        self.id = self.id.wrapping_add(1);
        match packet::encode(Code::Request, self.id, m, data) {
            Ok(r) => Step::Challenge(r),
            Err(e) => self.fail(Reason::Protocol(e.to_string())),
        }
    }

    /// Propose the first allowed method.
    fn propose(&mut self) -> Step {
        let Some(m) = self.methods.first().copied() else {
            return self.fail(Reason::NoCommonMethod);
        };
        self.state = State::Proposed { proposed: m };
        self.request(m, &[flags::START])
    }

    fn nak(&mut self, proposed: u8, wanted: &[u8]) -> Step {
        let choice = wanted
            .iter()
            .copied()
            .find(|w| *w != proposed && self.methods.contains(w));
        match choice {
            Some(m) => {
                self.state = State::Proposed { proposed: m };
                self.request(m, &[flags::START])
            }
            None if wanted
                .iter()
                .any(|w| matches!(*w, method::PEAP | method::MSCHAPV2)) =>
            {
                self.fail(Reason::NtHashMethod)
            }
            None => self.fail(Reason::NoCommonMethod),
        }
    }

    fn tls_mut(&mut self) -> Option<&mut TlsMethod> {
        match &mut self.state {
            State::Tls(t) => Some(t),
            _ => None,
        }
    }

    fn send_flight(&mut self, flight: Vec<u8>) -> Step {
        let size = self.fragment_size;
        let Some(t) = self.tls_mut() else {
            return self.fail(Reason::Protocol("no TLS session".into()));
        };
        let mut f = Fragmenter::new(flight, size);
        let first = f.next_fragment(0).unwrap_or_else(|| vec![0]);
        t.out = f.pending().then_some(f);
        let m = t.method;
        self.request(m, &first)
    }

    fn accept(&mut self) -> Step {
        let identity = self.identity.clone().unwrap_or_default();
        let State::Tls(t) = std::mem::replace(&mut self.state, State::Done) else {
            return self.fail(Reason::Protocol("no TLS session".into()));
        };
        let randoms = t.client_random.zip(t.server_random);
        let binding = if t.tls13 {
            Some(self.binding)
        } else {
            t.master_digest
        };
        match keys::derive(&*t.conn, t.method, t.tls13, randoms) {
            Ok(keys) => Step::Accept(Box::new(Accepted {
                eap: packet::success(self.id),
                keys,
                method: t.method,
                tls13: t.tls13,
                resumed: t.resumed,
                identity,
                binding: binding.filter(|_| t.method == method::TTLS),
            })),
            Err(e) => self.fail(Reason::Tls(e.to_string())),
        }
    }

    fn tls_step(&mut self, data: &[u8]) -> Step {
        let d = match TlsData::parse(data) {
            Ok(d) => d,
            Err(e) => return self.fail(Reason::Protocol(e.to_string())),
        };
        let Some(t) = self.tls_mut() else {
            return self.fail(Reason::Protocol("no TLS session".into()));
        };
        if let Some(f) = &mut t.out {
            if !d.is_ack() {
                return self.fail(Reason::Protocol("expected an acknowledgement".into()));
            }
            let next = f.next_fragment(0).unwrap_or_else(|| vec![0]);
            if !f.pending() {
                t.out = None;
            }
            let m = t.method;
            return self.request(m, &next);
        }
        match t.phase {
            Phase::Final if d.is_ack() => return self.accept(),
            Phase::Final | Phase::Deciding => {
                return self.fail(Reason::Protocol("expected an acknowledgement".into()));
            }
            Phase::Handshake | Phase::Tunnel => {}
        }
        let msg = match t.reasm.push(&d) {
            Ok(Some(m)) => m,
            Ok(None) => {
                let m = t.method;
                return self.request(m, &[0]);
            }
            Err(e) => return self.fail(Reason::Protocol(e.to_string())),
        };
        if msg.is_empty() {
            if t.phase == Phase::Tunnel {
                // RFC 5281 §7.2: an empty request prompts the peer to start phase 2.
                let m = t.method;
                return self.request(m, &[0]);
            }
            return self.fail(Reason::Protocol(
                "empty message during the handshake".into(),
            ));
        }
        if let Err(r) = t.feed(&msg) {
            return self.fail(r);
        }
        let mut output = match t.drain() {
            Ok(o) => o,
            Err(r) => return self.fail(r),
        };
        if t.conn.is_handshaking() {
            return if output.is_empty() {
                let m = t.method;
                self.request(m, &[0])
            } else {
                self.send_flight(output)
            };
        }
        if t.phase == Phase::Handshake {
            t.phase = Phase::Tunnel;
            t.tls13 = t.conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
            t.resumed = t.conn.handshake_kind() == Some(HandshakeKind::Resumed);
            if t.resumed && t.tls13 {
                let tag = t.conn.received_resumption_data().unwrap_or_default();
                if tag.len() != 17 || tag[0] != t.method {
                    return self.fail(Reason::Protocol(
                        "resumed a session of another method".into(),
                    ));
                }
            }
            if t.method == method::TLS && t.tls13 {
                // RFC 9190 §2.5: one octet of 0x00 application data commits the server
                // to no further handshake messages.
                if t.conn.writer().write_all(&[0]).is_err() {
                    return self.fail(Reason::Tls("cannot write the commitment".into()));
                }
                match t.drain() {
                    Ok(more) => output.extend_from_slice(&more),
                    Err(r) => return self.fail(r),
                }
            }
            if t.method == method::TLS {
                let chain = t
                    .conn
                    .peer_certificates()
                    .map(<[_]>::to_vec)
                    .unwrap_or_default();
                t.final_flight = output;
                t.phase = Phase::Deciding;
                return Step::Verify(Pending::Certificate {
                    chain,
                    resumed: t.resumed,
                });
            }
            if t.resumed {
                let binding = if t.tls13 {
                    let mut b = [0u8; 16];
                    if let Some(tag) = t.conn.received_resumption_data() {
                        b.copy_from_slice(&tag[1..17]);
                    }
                    b
                } else {
                    match t.master_digest {
                        Some(d) => d,
                        None => {
                            return self.fail(Reason::Tls(
                                "no session digest (SessionDigest is not the key log)".into(),
                            ));
                        }
                    }
                };
                t.final_flight = output;
                t.phase = Phase::Deciding;
                return Step::Verify(Pending::Resumption { binding });
            }
        }
        // TTLS, full handshake: the inner AVPs, if they came.
        let plain = match t.plaintext() {
            Ok(p) => p,
            Err(r) => return self.fail(r),
        };
        if plain.is_empty() {
            return if output.is_empty() {
                let m = t.method;
                self.request(m, &[0])
            } else {
                self.send_flight(output)
            };
        }
        match inner_pap(&plain) {
            Ok((user, password)) => {
                t.final_flight = output;
                t.phase = Phase::Deciding;
                Step::Verify(Pending::Password { user, password })
            }
            Err(r) => self.fail(r),
        }
    }
}

impl EapError {
    /// A short label (audit, metrics).
    pub fn label(&self) -> &'static str {
        match self {
            EapError::Truncated => "truncated",
            EapError::UnknownCode(_) => "unknown_code",
            EapError::LengthMismatch { .. } => "length_mismatch",
            EapError::TooLong(_) => "too_long",
            EapError::FragmentLength => "fragment_length",
            EapError::TooManyFragments => "too_many_fragments",
            EapError::Avp(_) => "avp",
            EapError::Tls(_) => "tls",
        }
    }
}
