//! The 802.1X driver: whole EAP logins (EAP-TLS, EAP-TTLS/PAP) inside RADIUS
//! (RFC 3579), as an access point sends them for its stations, to any RADIUS server
//! (Portcullis, FreeRADIUS).
//!
//! This module owns the login loop; the pieces come from elsewhere: the station's side of
//! EAP is `portcullis_eap::peer::Peer` (rustls driven sans-I/O), the RADIUS round trip
//! with NAS-like retransmissions and reply verification is the PAP driver's
//! ([`crate::radius::RadiusDriver`]), and [`stats`] records what a login came to.
//!
//! One login is one attempt: Access-Request with the station's EAP-Response/Identity,
//! then, for each Access-Challenge, the peer's next EAP-Response with the challenge's
//! State echoed, until Access-Accept or Access-Reject. EAP-Message attributes are split
//! at 253 octets; every request carries Message-Authenticator; every reply must come from
//! the target, carry the request's identifier and verify against *its* Request
//! Authenticator (a reply for another request is a misdelivery that fails the run). An
//! Access-Accept must carry EAP-Success and MS-MPPE-Recv/Send-Key that decrypt to exactly
//! the keys the station derived (recv = MSK[..32], send = MSK[32..]); anything else is a
//! wrong response, and a key mismatch also fails the run. An Access-Reject is an
//! authentication failure.
//!
//! Each virtual client is a station: its own Calling-Station-Id and source address (like
//! the PAP driver's clients) and its own rustls configuration. With `resume` the
//! configuration, and so its session cache, lives as long as the station, so its logins
//! after the first resume; without, resumption is off and every login is a full
//! handshake. Groups without `eap` in the same scenario send PAP requests as before.

pub(crate) mod station;
pub(crate) mod stats;

pub use station::{EapLogin, Station};
pub use stats::{EapStats, EapSummary};

use std::net::{IpAddr, SocketAddr};

use portcullis_eap::peer::{Credentials, Peer, PeerStep};
use portcullis_radius::mppe::{MS_MPPE_RECV_KEY, MS_MPPE_SEND_KEY, decode_key_attribute};
use portcullis_radius::{Code, Packet, attr, v11};
use zeroize::Zeroizing;

use crate::LabError;
use crate::driver::{AttemptResult, Driver, Identity};
use crate::outcome::Outcome;
use crate::radius::{RadiusClient, RadiusDriver, RadiusSession, Trip, nas_ip};
use crate::scenario::{EapMethod, RadiusSpec};

/// A login that has not ended after this many round trips is a wrong response (a full
/// EAP-TLS login takes 6 to 10).
const MAX_ROUND_TRIPS: u32 = 64;
/// Largest EAP packet accepted from the server.
const MAX_EAP: usize = 1 << 16;
/// Framed-MTU announced to the server (a common access point's).
const FRAMED_MTU: u32 = 1400;
/// Service-Type Framed (RFC 2865 §5.6).
const SERVICE_FRAMED: u32 = 2;
/// NAS-Port-Type Wireless - IEEE 802.11 (RFC 2865 §5.41).
const PORT_WIRELESS: u32 = 19;

/// Sends 802.1X logins (and PAP requests for groups without `eap`) to one RADIUS server.
#[derive(Debug)]
pub struct EapDriver {
    pap: RadiusDriver,
}

impl EapDriver {
    /// A driver for `target`.
    pub fn new(target: SocketAddr, spec: RadiusSpec) -> EapDriver {
        EapDriver {
            pap: RadiusDriver::new(target, spec),
        }
    }

    /// Stations numbered in the block of the run's `seed` (`radius` module docs).
    pub fn with_seed(self, seed: u64) -> EapDriver {
        EapDriver {
            pap: self.pap.with_seed(seed),
        }
    }
}

/// A prepared client: a PAP user or a station.
#[derive(Debug)]
pub enum EapClient {
    /// A group without `eap`.
    Pap(RadiusClient),
    /// An 802.1X station.
    Station(Box<StationClient>),
}

/// A prepared station.
pub struct StationClient {
    source: Option<IpAddr>,
    nas_ip: Option<[u8; 4]>,
    station: Vec<u8>,
    outer: String,
    user: String,
    password: Zeroizing<Vec<u8>>,
    method: EapMethod,
    tls: crate::tls::Tls,
}

impl std::fmt::Debug for StationClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StationClient")
            .field("outer", &self.outer)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl Driver for EapDriver {
    type Client = EapClient;
    type Session = RadiusSession;

    fn client(&self, who: &Identity) -> Result<EapClient, LabError> {
        let Some(st) = &who.eap else {
            return Ok(EapClient::Pap(self.pap.client(who)?));
        };
        if who.id.is_empty() || who.id.len() > 253 {
            return Err(LabError::Scenario(format!(
                "EAP identities must be 1-253 octets: {:?}",
                who.id
            )));
        }
        if st.method == EapMethod::Ttls && (who.secret.is_empty() || who.secret.len() > 253) {
            return Err(LabError::Scenario(format!(
                "TTLS inner PAP passwords must be 1-253 octets; {:?}'s is {}",
                who.id,
                who.secret.len()
            )));
        }
        let outer = match (st.method, &st.anonymous_identity) {
            (EapMethod::Ttls, Some(a)) => a.clone(),
            _ => who.id.clone(),
        };
        Ok(EapClient::Station(Box::new(StationClient {
            source: who.source,
            nas_ip: nas_ip(who.source),
            station: self.pap.next_station(),
            outer,
            user: who.id.clone(),
            password: Zeroizing::new(who.secret.as_bytes().to_vec()),
            method: st.method,
            tls: st.tls.clone(),
        })))
    }

    fn session(&self) -> RadiusSession {
        self.pap.session()
    }

    fn keep_after_timeout(&self, session: &mut RadiusSession) -> bool {
        session.keep_after_timeout()
    }

    async fn attempt<'a>(
        &'a self,
        client: &'a EapClient,
        session: &'a mut RadiusSession,
    ) -> AttemptResult {
        match client {
            EapClient::Pap(c) => self.pap.attempt(c, session).await,
            EapClient::Station(c) => self.login(c, session).await,
        }
    }
}

/// Where a reply leaves the login.
enum Next {
    /// Send this EAP-Response with this State.
    Continue(Vec<u8>, Vec<u8>),
    /// The login ended: its outcome, and whether an accept's keys were wrong.
    Done(Outcome, bool),
}

impl EapDriver {
    /// One whole login of station `c`.
    async fn login(&self, c: &StationClient, session: &mut RadiusSession) -> AttemptResult {
        if !self.pap.bind(c.source, session).await {
            return AttemptResult::of(Outcome::ConnectionError);
        }
        let creds = match c.method {
            EapMethod::Tls => Credentials::Tls,
            EapMethod::Ttls => Credentials::TtlsPap {
                user: c.user.clone(),
                password: c.password.clone(),
            },
        };
        let mut peer = Peer::new(c.tls.config.clone(), c.tls.name.clone(), &c.outer, creds);
        let mut eap = peer.identity_response(self.pap.random_u8(session));
        let mut state: Option<Vec<u8>> = None;
        let mut login = EapLogin::default();
        let mut retransmits = 0u32;
        let mut buf = vec![0u8; 4096];
        let ended = |outcome, login: EapLogin, retransmits| AttemptResult {
            retransmits,
            eap: Some(login),
            ..AttemptResult::of(outcome)
        };
        loop {
            if login.round_trips >= MAX_ROUND_TRIPS {
                return ended(Outcome::WrongResponse, login, retransmits);
            }
            login.round_trips += 1;
            let (id, authenticator) = self.pap.next_request(session);
            let Some(packet) = self.request(c, &eap, state.as_deref(), id, authenticator) else {
                return ended(Outcome::WrongResponse, login, retransmits);
            };
            let n = match self
                .pap
                .round_trip(session, &packet, (id, &authenticator), &mut buf)
                .await
            {
                Trip::Reply(n, r) => {
                    retransmits += r;
                    n
                }
                // No final answer: not a login the server finished.
                Trip::Failed(outcome, misdelivered, r) => {
                    return AttemptResult {
                        misdelivered,
                        retransmits: retransmits + r,
                        ..AttemptResult::of(outcome)
                    };
                }
            };
            match self.answer(&buf[..n], &authenticator, &mut peer) {
                Next::Continue(next, s) => {
                    eap = next;
                    state = Some(s);
                }
                Next::Done(outcome, wrong_keys) => {
                    login.wrong_keys = wrong_keys;
                    login.resumed = outcome == Outcome::Success && peer.resumed();
                    return ended(outcome, login, retransmits);
                }
            }
        }
    }

    /// The Access-Request carrying `eap` (Message-Authenticator first, then the NAS's
    /// attributes, the EAP-Message parts in order, the State to echo).
    fn request(
        &self,
        c: &StationClient,
        eap: &[u8],
        state: Option<&[u8]>,
        id: u8,
        authenticator: [u8; 16],
    ) -> Option<Vec<u8>> {
        let spec = &self.pap.spec;
        let (service, port, mtu) = (
            SERVICE_FRAMED.to_be_bytes(),
            PORT_WIRELESS.to_be_bytes(),
            FRAMED_MTU.to_be_bytes(),
        );
        let mut attrs: Vec<(u8, &[u8])> = vec![
            (attr::USER_NAME, c.outer.as_bytes()),
            (attr::NAS_IDENTIFIER, spec.nas_identifier.as_bytes()),
            (attr::CALLING_STATION_ID, &c.station),
            (attr::SERVICE_TYPE, &service),
            (attr::NAS_PORT_TYPE, &port),
            (attr::FRAMED_MTU, &mtu),
        ];
        if let Some(ip) = &c.nas_ip {
            attrs.push((attr::NAS_IP_ADDRESS, ip));
        }
        attrs.extend(portcullis_eap::radius::split(eap).map(|p| (attr::EAP_MESSAGE, p)));
        if let Some(s) = state {
            attrs.push((attr::STATE, s));
        }
        self.pap
            .encode(Code::AccessRequest, (id, authenticator), &attrs)
            .ok()
    }

    /// What a verified reply means for the login.
    fn answer(&self, raw: &[u8], authenticator: &[u8; 16], peer: &mut Peer) -> Next {
        let wrong = Next::Done(Outcome::WrongResponse, false);
        let Ok(p) = Packet::parse(raw) else {
            return wrong;
        };
        let parts = p
            .attributes()
            .filter(|(t, _)| *t == attr::EAP_MESSAGE)
            .map(|(_, v)| v);
        let Ok(eap) = portcullis_eap::radius::join(parts, MAX_EAP) else {
            return wrong;
        };
        match p.code {
            Code::AccessChallenge => {
                let Some(state) = p.attr(attr::STATE) else {
                    return wrong;
                };
                match peer.step(&eap) {
                    Ok(PeerStep::Send(next)) => Next::Continue(next, state.to_vec()),
                    _ => wrong,
                }
            }
            Code::AccessAccept => match peer.step(&eap) {
                Ok(PeerStep::Success(Some(keys))) => {
                    let (recv, send) = (keys.recv_key(), keys.send_key());
                    let matched = if self.pap.spec.radius_1_1 {
                        keys_match_by(&p, v11::decode_mppe_key_attribute, recv, send)
                    } else {
                        let secret = &self.pap.spec.secret;
                        keys_match(&p, secret, authenticator, recv, send)
                    };
                    if matched {
                        Next::Done(Outcome::Success, false)
                    } else {
                        Next::Done(Outcome::WrongResponse, true)
                    }
                }
                // An accept without EAP-Success, or before the station has keys.
                _ => wrong,
            },
            Code::AccessReject => Next::Done(Outcome::AuthFailure, false),
            _ => wrong,
        }
    }
}

/// Whether `reply` carries MS-MPPE-Recv-Key `recv` and MS-MPPE-Send-Key `send`, hidden
/// with `secret` and the Request Authenticator of the request it answers (RFC 2548),
/// once each. Other Vendor-Specific attributes are ignored.
pub fn keys_match(
    reply: &Packet<'_>,
    secret: &[u8],
    request_authenticator: &[u8; 16],
    recv: &[u8],
    send: &[u8],
) -> bool {
    let decode = |v: &[u8]| decode_key_attribute(v, secret, request_authenticator).ok();
    keys_match_by(reply, decode, recv, send)
}

/// [`keys_match`] with the keys read by `decode` (RADIUS/1.1 sends them in the clear).
fn keys_match_by<'a, K: AsRef<[u8]>>(
    reply: &Packet<'a>,
    decode: impl Fn(&'a [u8]) -> Option<(u8, K)>,
    recv: &[u8],
    send: &[u8],
) -> bool {
    let (mut got_recv, mut got_send) = (Vec::new(), Vec::new());
    for (t, v) in reply.attributes() {
        if t != attr::VENDOR_SPECIFIC {
            continue;
        }
        match decode(v) {
            Some((MS_MPPE_RECV_KEY, k)) => got_recv.push(k),
            Some((MS_MPPE_SEND_KEY, k)) => got_send.push(k),
            _ => {}
        }
    }
    matches!(&got_recv[..], [k] if k.as_ref() == recv)
        && matches!(&got_send[..], [k] if k.as_ref() == send)
}

#[cfg(test)]
mod tests;
