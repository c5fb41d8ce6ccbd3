//! The RADIUS driver: PAP Access-Requests (RFC 2865) over UDP, as a NAS sends them, to any
//! RADIUS server (Portcullis, FreeRADIUS, the naive baseline).
//!
//! Like a NAS it retransmits the same datagram (same identifier and Request
//! Authenticator) after `retransmit` without a reply, `retries` times, and the attempt's
//! latency runs from its intended send time to the verified reply, so a server that makes
//! clients retransmit pays for it in the figures. Every reply is checked: it must come
//! from the target's address, carry the request's identifier, and verify against *this*
//! request's authenticator (Response Authenticator, and Message-Authenticator unless
//! turned off). A reply that verifies against none of the requests this socket sent is
//! report 003's bug (one client's answer delivered to another): a wrong response that
//! fails the run. A late reply to one of this socket's earlier requests (its last 1,024) is
//! ignored.
//!
//! With `radsec` in the scenario's `[driver]` the same requests go over RadSec (RADIUS
//! over TLS, RFC 6614) instead: each lab client holds one TLS connection (from its own
//! source address, with the scenario's NAS certificate), sends one request at a time and
//! reads the answer off the stream; there is no retransmission over TCP, so an attempt
//! times out after `retransmit_ms` × (`retries` + 1), and a connection that failed or
//! timed out is replaced at the next attempt.
//!
//! With `radius_1_1` as well, the connection offers only ALPN "radius/1.1" (a server that
//! does not select it is a connection error) and every packet is RADIUS/1.1 (RFC 9765):
//! a 32-bit Token counting up from a random start instead of identifier and
//! authenticators, User-Password in the clear inside TLS, no Message-Authenticator; a
//! reply must carry its request's Token and keep the RFC's sender rules (reserved octets
//! zero, no Message-Authenticator), else it is a wrong response.
//!
//! Each lab client has its own Calling-Station-Id (a locally administered MAC address), so
//! a server that keys fairness on the station sees distinct stations, and binds the
//! client's own loopback source address, so it sees distinct sources too. The addresses
//! are numbered from 1 within a run, in a block the run's seed picks (seed 1, the default:
//! 02-00-00-00-00-01 on), so runs with different seeds are different devices to a server
//! that remembers stations (a throttled guessing station, say) between runs.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};

use portcullis_radius::{
    Code, EncodeError, Packet, attr, encode_request, hide_user_password, v11, verify_response,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, UdpSocket};

use crate::LabError;
use crate::driver::{AttemptResult, Driver, Identity};
use crate::outcome::Outcome;
use crate::scenario::RadiusSpec;

/// How many of a socket's earlier requests a late reply may belong to: four turns of the
/// identifier. A server that commits accounting records late answers them late (its
/// `max_queue_age_ms` bounds what it starts, not a commit that overran), and a lab client
/// sending tens of records a second on one socket has moved on by hundreds of requests
/// by then; with the last 8 remembered, such an answer (it verifies against this socket's
/// own earlier request, so a NAS discards it) was counted as report 003's bug and failed
/// the demo's accounting storm.
const REMEMBERED: usize = 1024;

/// Sends Access-Requests to one RADIUS server.
#[derive(Debug)]
pub struct RadiusDriver {
    /// The server's address.
    pub target: SocketAddr,
    /// Secret, retransmission policy, NAS-Identifier.
    pub spec: RadiusSpec,
    /// Numbers the clients' stations.
    stations: AtomicU64,
    /// RadSec: the client TLS (`None`: UDP, or RadSec settings that no longer load, in
    /// which case every attempt is a connection error).
    radsec: Option<crate::tls::Tls>,
}

impl RadiusDriver {
    /// A driver for `target`.
    pub fn new(target: SocketAddr, spec: RadiusSpec) -> RadiusDriver {
        let radsec = spec.radsec.as_ref().and_then(|raw| {
            let host = target.ip().to_string();
            crate::tls::TlsSpec::from_raw(raw, &host, &|p: &str| std::path::PathBuf::from(p))
                .map(|t| {
                    let mut tls = t.for_eap(true);
                    if spec.radius_1_1 {
                        std::sync::Arc::make_mut(&mut tls.config).alpn_protocols =
                            vec![v11::ALPN_RADIUS_1_1.to_vec()];
                    }
                    tls
                })
                .ok()
        });
        RadiusDriver {
            target,
            spec,
            stations: AtomicU64::new(1),
            radsec,
        }
    }
}

/// A prepared RADIUS client.
#[derive(Debug)]
pub struct RadiusClient {
    source: Option<IpAddr>,
    user: Vec<u8>,
    password: Vec<u8>,
    station: Vec<u8>,
    nas_ip: Option<[u8; 4]>,
}

/// One UDP socket and what it sent recently.
#[derive(Debug)]
pub struct RadiusSession {
    sock: Option<UdpSocket>,
    /// RadSec: this client's TLS connection.
    stream: Option<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>,
    next_id: u8,
    /// RADIUS/1.1: the next request's Token (RFC 9765 §4.2.1: a per-connection counter
    /// from a random start).
    next_token: u32,
    rng: SmallRng,
    /// (identifier, Request Authenticator) of this socket's recent requests.
    recent: VecDeque<(u8, [u8; 16])>,
}

impl RadiusSession {
    /// What [`Driver::keep_after_timeout`] does for every RADIUS driver: the UDP socket and
    /// its recent requests stay (a late answer to the timed-out request reaches the
    /// socket that sent it and is recognised, instead of a new socket that the kernel may
    /// have given the freed port: the demo's accounting storm counted such answers as
    /// misdelivered); a RadSec stream may hold part of an answer, so it goes.
    pub(crate) fn keep_after_timeout(&mut self) -> bool {
        self.stream = None;
        true
    }
}

impl Driver for RadiusDriver {
    type Client = RadiusClient;
    type Session = RadiusSession;

    fn client(&self, who: &Identity) -> Result<RadiusClient, LabError> {
        let password = who.secret.as_bytes().to_vec();
        if password.is_empty() || password.len() > portcullis_radius::MAX_PASSWORD {
            return Err(LabError::Scenario(format!(
                "RADIUS PAP passwords must be 1-128 octets; {:?}'s is {}",
                who.id,
                password.len()
            )));
        }
        if who.id.is_empty() || who.id.len() > 253 {
            return Err(LabError::Scenario(format!(
                "RADIUS User-Name must be 1-253 octets: {:?}",
                who.id
            )));
        }
        Ok(RadiusClient {
            source: who.source,
            user: who.id.as_bytes().to_vec(),
            password,
            station: self.next_station(),
            nas_ip: nas_ip(who.source),
        })
    }

    fn session(&self) -> RadiusSession {
        let mut rng = SmallRng::from_os_rng();
        RadiusSession {
            sock: None,
            stream: None,
            next_id: rng.random(),
            next_token: rng.random(),
            rng,
            recent: VecDeque::new(),
        }
    }

    fn keep_after_timeout(&self, session: &mut RadiusSession) -> bool {
        session.keep_after_timeout()
    }

    async fn attempt<'a>(
        &'a self,
        client: &'a RadiusClient,
        session: &'a mut RadiusSession,
    ) -> AttemptResult {
        let result = self.exchange(client, session).await;
        AttemptResult {
            misdelivered: result.1,
            retransmits: result.2,
            ..AttemptResult::of(result.0)
        }
    }
}

/// The NAS-IP-Address of a client bound to `source` (IPv4 only).
pub(crate) fn nas_ip(source: Option<IpAddr>) -> Option<[u8; 4]> {
    match source {
        Some(IpAddr::V4(a)) => Some(a.octets()),
        _ => None,
    }
}

impl RadiusDriver {
    /// The next client's Calling-Station-Id: a locally administered MAC address.
    /// Number the stations in the block of `seed` (see the module docs).
    pub(crate) fn with_seed(self, seed: u64) -> RadiusDriver {
        self.stations.store(
            1 + (seed.wrapping_sub(1) & 0xFFFF) * (1 << 24),
            Ordering::Relaxed,
        );
        self
    }

    pub(crate) fn next_station(&self) -> Vec<u8> {
        let n = self.stations.fetch_add(1, Ordering::Relaxed).to_be_bytes();
        format!(
            "02-{:02X}-{:02X}-{:02X}-{:02X}-{:02X}",
            n[3], n[4], n[5], n[6], n[7]
        )
        .into_bytes()
    }

    /// Bind the session's socket (the client's own source address) if not yet bound.
    pub(crate) async fn bind(&self, source: Option<IpAddr>, session: &mut RadiusSession) -> bool {
        if self.spec.radsec.is_some() {
            return self.connect(source, session).await;
        }
        if session.sock.is_some() {
            return true;
        }
        let local = match (source, self.target) {
            (Some(ip), _) => SocketAddr::new(ip, 0),
            (None, SocketAddr::V4(_)) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
            (None, SocketAddr::V6(_)) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
        };
        match UdpSocket::bind(local).await {
            Ok(s) => {
                session.sock = Some(s);
                true
            }
            Err(_) => false,
        }
    }

    /// RadSec: open the session's TLS connection from `source` if it has none.
    async fn connect(&self, source: Option<IpAddr>, session: &mut RadiusSession) -> bool {
        if session.stream.is_some() {
            return true;
        }
        let Some(tls) = &self.radsec else {
            return false;
        };
        let sock = match self.target {
            SocketAddr::V4(_) => TcpSocket::new_v4(),
            SocketAddr::V6(_) => TcpSocket::new_v6(),
        };
        let Ok(sock) = sock else { return false };
        if let Some(ip) = source
            && sock.bind(SocketAddr::new(ip, 0)).is_err()
        {
            return false;
        }
        let wait = self.spec.retransmit * (self.spec.retries + 1);
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::clone(&tls.config));
        let setup = async {
            let tcp = sock.connect(self.target).await.ok()?;
            let _ = tcp.set_nodelay(true);
            connector.connect(tls.name.clone(), tcp).await.ok()
        };
        match tokio::time::timeout(wait, setup).await {
            // RFC 9765 §3.3: a client that sent "radius/1.1" and got no answer closes.
            Ok(Some(s))
                if self.spec.radius_1_1
                    && s.get_ref().1.alpn_protocol() != Some(v11::ALPN_RADIUS_1_1) =>
            {
                false
            }
            Ok(Some(s)) => {
                session.stream = Some(s);
                true
            }
            _ => false,
        }
    }

    /// A fresh (identifier, Request Authenticator) for the session's next request, noted
    /// among its recent ones so a late reply to it is recognised.
    /// RADIUS/1.1: identifier 0 and the Token in the authenticator's first four octets
    /// (the rest zero), as the packet carries them.
    pub(crate) fn next_request(&self, session: &mut RadiusSession) -> (u8, [u8; 16]) {
        let (id, authenticator) = if self.spec.radius_1_1 {
            let token = session.next_token;
            session.next_token = token.wrapping_add(1);
            let mut a = [0u8; 16];
            a[..4].copy_from_slice(&token.to_be_bytes());
            (0, a)
        } else {
            let id = session.next_id;
            session.next_id = id.wrapping_add(1);
            (id, session.rng.random())
        };
        if session.recent.len() == REMEMBERED {
            session.recent.pop_front();
        }
        session.recent.push_back((id, authenticator));
        (id, authenticator)
    }

    /// A fresh identifier for a request whose authenticator is computed from its
    /// contents (Accounting-Request, RFC 2866 §3); [`RadiusDriver::note_request`] records
    /// the pair once the packet is built.
    pub(crate) fn next_identifier(&self, session: &mut RadiusSession) -> u8 {
        let id = session.next_id;
        session.next_id = id.wrapping_add(1);
        id
    }

    /// Remember a sent (identifier, authenticator) so a late reply to it is recognised.
    pub(crate) fn note_request(
        &self,
        session: &mut RadiusSession,
        id: u8,
        authenticator: [u8; 16],
    ) {
        if session.recent.len() == REMEMBERED {
            session.recent.pop_front();
        }
        session.recent.push_back((id, authenticator));
    }

    /// A request as this driver's transport writes it: RFC 2865 (Message-Authenticator
    /// first, keyed by the shared secret; a User-Password in `attrs` already hidden), or
    /// RADIUS/1.1 with the Token [`RadiusDriver::next_request`] put in `authenticator`.
    pub(crate) fn encode(
        &self,
        code: Code,
        (id, authenticator): (u8, [u8; 16]),
        attrs: &[(u8, &[u8])],
    ) -> Result<Vec<u8>, EncodeError> {
        if self.spec.radius_1_1 {
            v11::encode_request(code, token_of(&authenticator), attrs)
        } else {
            encode_request(code, id, authenticator, attrs, &self.spec.secret)
        }
    }

    /// A random octet from the session's generator (EAP identifiers).
    pub(crate) fn random_u8(&self, session: &mut RadiusSession) -> u8 {
        session.rng.random()
    }

    /// Send `packet` (made with `id` and `authenticator`) like a NAS, retransmitting the
    /// same datagram after `retransmit`, and wait for the reply that verifies against it.
    /// On [`Trip::Reply`] the reply is the first `len` octets of `buf`.
    pub(crate) async fn round_trip(
        &self,
        session: &mut RadiusSession,
        packet: &[u8],
        (id, authenticator): (u8, &[u8; 16]),
        buf: &mut [u8],
    ) -> Trip {
        if self.spec.radsec.is_some() {
            return self
                .stream_trip(session, packet, (id, authenticator), buf)
                .await;
        }
        let Some(sock) = session.sock.as_ref() else {
            return Trip::Failed(Outcome::ConnectionError, false, 0);
        };
        for attempt in 0..=self.spec.retries {
            if sock.send_to(packet, self.target).await.is_err() {
                return Trip::Failed(Outcome::ConnectionError, false, attempt);
            }
            let deadline = tokio::time::Instant::now() + self.spec.retransmit;
            loop {
                let got = tokio::time::timeout_at(deadline, sock.recv_from(buf)).await;
                let Ok(got) = got else { break };
                let Ok((n, from)) = got else {
                    // e.g. ICMP port unreachable reported on the socket
                    return Trip::Failed(Outcome::ConnectionError, false, attempt);
                };
                match self.judge(&buf[..n], from, id, authenticator, &session.recent) {
                    Judged::Answer => return Trip::Reply(n, attempt),
                    Judged::Stale => continue,
                    Judged::Misdelivered => {
                        return Trip::Failed(Outcome::WrongResponse, true, attempt);
                    }
                    Judged::Wrong => return Trip::Failed(Outcome::WrongResponse, false, attempt),
                }
            }
        }
        Trip::Failed(Outcome::Timeout, false, self.spec.retries)
    }

    /// RadSec's round trip: write the packet, read packets off the stream until the one
    /// that answers it (a late answer to an earlier request is skipped). The connection is
    /// kept only after a good answer.
    async fn stream_trip(
        &self,
        session: &mut RadiusSession,
        packet: &[u8],
        (id, authenticator): (u8, &[u8; 16]),
        buf: &mut [u8],
    ) -> Trip {
        let Some(mut s) = session.stream.take() else {
            return Trip::Failed(Outcome::ConnectionError, false, 0);
        };
        let deadline = tokio::time::Instant::now() + self.spec.retransmit * (self.spec.retries + 1);
        let sent = tokio::time::timeout_at(deadline, s.write_all(packet)).await;
        if !matches!(sent, Ok(Ok(()))) {
            return Trip::Failed(Outcome::ConnectionError, false, 0);
        }
        loop {
            let read = async {
                s.read_exact(&mut buf[..4]).await?;
                let len = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
                if !(portcullis_radius::MIN_PACKET..=buf.len()).contains(&len) {
                    return Err(std::io::Error::other("bad Length"));
                }
                s.read_exact(&mut buf[4..len]).await?;
                Ok(len)
            };
            let n = match tokio::time::timeout_at(deadline, read).await {
                Ok(Ok(n)) => n,
                Ok(Err(_)) => return Trip::Failed(Outcome::ConnectionError, false, 0),
                Err(_) => return Trip::Failed(Outcome::Timeout, false, 0),
            };
            match self.judge(&buf[..n], self.target, id, authenticator, &session.recent) {
                Judged::Answer => {
                    session.stream = Some(s);
                    return Trip::Reply(n, 0);
                }
                Judged::Stale => {}
                Judged::Misdelivered => return Trip::Failed(Outcome::WrongResponse, true, 0),
                Judged::Wrong => return Trip::Failed(Outcome::WrongResponse, false, 0),
            }
        }
    }

    /// (outcome, a reply for another request arrived, retransmissions).
    async fn exchange(
        &self,
        client: &RadiusClient,
        session: &mut RadiusSession,
    ) -> (Outcome, bool, u32) {
        if !self.bind(client.source, session).await {
            return (Outcome::ConnectionError, false, 0);
        }
        let (id, authenticator) = self.next_request(session);
        let hidden = if self.spec.radius_1_1 {
            // RFC 9765 §5.1.1: the password itself; TLS hides it.
            Ok(client.password.clone())
        } else {
            hide_user_password(&client.password, &self.spec.secret, &authenticator)
        };
        let Ok(hidden) = hidden else {
            return (Outcome::WrongResponse, false, 0);
        };
        let mut attrs: Vec<(u8, &[u8])> = vec![
            (attr::USER_NAME, &client.user),
            (attr::USER_PASSWORD, &hidden),
            (attr::NAS_IDENTIFIER, self.spec.nas_identifier.as_bytes()),
            (attr::CALLING_STATION_ID, &client.station),
        ];
        if let Some(ip) = &client.nas_ip {
            attrs.push((attr::NAS_IP_ADDRESS, ip));
        }
        let Ok(packet) = self.encode(Code::AccessRequest, (id, authenticator), &attrs) else {
            return (Outcome::WrongResponse, false, 0);
        };
        let mut buf = vec![0u8; 4096];
        match self
            .round_trip(session, &packet, (id, &authenticator), &mut buf)
            .await
        {
            Trip::Reply(n, retransmits) => {
                let code = Packet::parse(&buf[..n]).map(|p| p.code);
                let outcome = match code {
                    Ok(Code::AccessAccept) => Outcome::Success,
                    Ok(Code::AccessReject) => Outcome::AuthFailure,
                    // A challenge to a PAP request, or anything else: not a PAP answer.
                    _ => Outcome::WrongResponse,
                };
                (outcome, false, retransmits)
            }
            Trip::Failed(outcome, misdelivered, retransmits) => {
                (outcome, misdelivered, retransmits)
            }
        }
    }

    fn judge(
        &self,
        raw: &[u8],
        from: SocketAddr,
        id: u8,
        authenticator: &[u8; 16],
        recent: &VecDeque<(u8, [u8; 16])>,
    ) -> Judged {
        let secret = &self.spec.secret;
        let require = self.spec.require_message_authenticator;
        if from != self.target {
            return Judged::Wrong;
        }
        if self.spec.radius_1_1 {
            let token = token_of(authenticator);
            return match v11::verify_response(raw, token) {
                Ok(_) => Judged::Answer,
                Err(v11::ReplyError::OtherToken) => {
                    let theirs = Packet::parse(raw).map(|p| v11::token(&p));
                    if recent.iter().any(|(_, a)| Ok(token_of(a)) == theirs) {
                        Judged::Stale
                    } else {
                        Judged::Misdelivered
                    }
                }
                Err(_) => Judged::Wrong,
            };
        }
        let Ok(p) = Packet::parse(raw) else {
            return Judged::Wrong;
        };
        if p.identifier == id && verify_response(raw, authenticator, secret, require).is_ok() {
            return Judged::Answer;
        }
        // A late answer to one of this socket's earlier requests (we retransmitted or gave
        // up on it) is harmless: keep waiting for ours.
        let earlier = recent
            .iter()
            .filter(|(i, a)| *i == p.identifier && a != authenticator)
            .any(|(_, a)| verify_response(raw, a, secret, require).is_ok());
        if earlier {
            Judged::Stale
        } else {
            // Ours by identifier but not by authenticator, or nobody's we know: an answer
            // meant for another request (report 003), or made with another secret.
            Judged::Misdelivered
        }
    }
}

/// The RADIUS/1.1 Token [`RadiusDriver::next_request`] keeps in an authenticator.
pub(crate) fn token_of(authenticator: &[u8; 16]) -> [u8; 4] {
    [
        authenticator[0],
        authenticator[1],
        authenticator[2],
        authenticator[3],
    ]
}

/// What one request's round trip came to.
#[derive(Debug)]
pub(crate) enum Trip {
    /// A reply that verifies against the request: its length in the buffer, and the
    /// retransmissions it took.
    Reply(usize, u32),
    /// No usable reply: the outcome, whether a reply for another request arrived, and the
    /// retransmissions.
    Failed(Outcome, bool, u32),
}

enum Judged {
    Answer,
    Stale,
    Misdelivered,
    Wrong,
}

#[cfg(test)]
mod tests;
