//! The RADIUS accounting driver (issue 28): Accounting-Requests (RFC 2866) over UDP, as
//! a NAS sends them, to any accounting server (Portcullis's accounting door, FreeRADIUS).
//!
//! Each lab client is one user's device: its attempts walk its sessions through Start,
//! Interim-Update and Stop in turn (session ids `<station>-<n>`, Event-Timestamp the
//! send time, counters growing), so a run of N attempts stores N distinct records.
//! Retransmission and reply checks are the PAP driver's ([`RadiusDriver::round_trip`]):
//! the same datagram after `retransmit_ms`, the reply must verify against this request's
//! authenticator (Accounting-Responses carry no Message-Authenticator, so it is not
//! required). An attempt succeeds on a verified Accounting-Response, which a server that
//! acknowledges only durable records sends after its commit: the lab's rate and latency
//! are then the rate and latency of durable, acknowledged records.
//!
//! With `accounting_on` every attempt is instead an Accounting-On (RFC 2866 status 7: the
//! NAS restarted, close all its sessions) from the client's own address, with its own
//! NAS-Identifier (`<nas_identifier>-<station>`) and Event-Timestamp: the storm of a
//! controller reboot, when every access point says so at once and retransmits until
//! answered.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use portcullis_radius::{Code, Packet, attr, encode_accounting_request};

use crate::LabError;
use crate::driver::{AttemptResult, Driver, Identity};
use crate::outcome::Outcome;
use crate::radius::{RadiusDriver, RadiusSession, Trip, nas_ip};
use crate::scenario::RadiusSpec;

/// Sends Accounting-Requests to one server.
#[derive(Debug)]
pub struct AcctDriver {
    /// The PAP driver's sockets, retransmission and reply checks.
    inner: RadiusDriver,
}

impl AcctDriver {
    /// A driver for `target` (`spec.require_message_authenticator` is ignored: replies
    /// to accounting carry none).
    pub fn new(target: SocketAddr, mut spec: RadiusSpec) -> AcctDriver {
        spec.require_message_authenticator = false;
        AcctDriver {
            inner: RadiusDriver::new(target, spec),
        }
    }
}

/// One simulated device.
#[derive(Debug)]
pub struct AcctClient {
    /// Its own loopback source (a distinct NAS address per client when given).
    source: Option<std::net::IpAddr>,
    /// User-Name.
    user: Vec<u8>,
    /// Calling-Station-Id, also the prefix of its session ids.
    station: Vec<u8>,
    /// NAS-IP-Address.
    nas_ip: Option<[u8; 4]>,
    /// Attempts so far: session `n / 3`, status `n % 3` (Start, Interim, Stop).
    attempts: AtomicU64,
}

fn unix_now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
        .unwrap_or(0)
}

impl Driver for AcctDriver {
    type Client = AcctClient;
    type Session = RadiusSession;

    fn client(&self, who: &Identity) -> Result<AcctClient, LabError> {
        if who.id.is_empty() || who.id.len() > 253 {
            return Err(LabError::Scenario(format!(
                "RADIUS User-Name must be 1-253 octets: {:?}",
                who.id
            )));
        }
        Ok(AcctClient {
            source: who.source,
            user: who.id.as_bytes().to_vec(),
            station: self.inner.next_station(),
            nas_ip: nas_ip(who.source),
            attempts: AtomicU64::new(0),
        })
    }

    fn session(&self) -> RadiusSession {
        Driver::session(&self.inner)
    }

    fn keep_after_timeout(&self, session: &mut RadiusSession) -> bool {
        session.keep_after_timeout()
    }

    async fn attempt<'a>(
        &'a self,
        client: &'a AcctClient,
        session: &'a mut RadiusSession,
    ) -> AttemptResult {
        let (outcome, misdelivered, retransmits) = self.exchange(client, session).await;
        AttemptResult {
            misdelivered,
            retransmits,
            ..AttemptResult::of(outcome)
        }
    }
}

impl AcctDriver {
    /// (outcome, a reply for another request arrived, retransmissions).
    async fn exchange(
        &self,
        client: &AcctClient,
        session: &mut RadiusSession,
    ) -> (Outcome, bool, u32) {
        let inner = &self.inner;
        if !inner.bind(client.source, session).await {
            return (Outcome::ConnectionError, false, 0);
        }
        let n = client.attempts.fetch_add(1, Ordering::Relaxed);
        if inner.spec.accounting_on {
            return self.accounting_on(client, session).await;
        }
        let (status, elapsed) = match n % 3 {
            0 => (1u32, 0u32),
            1 => (3, 60),
            _ => (2, 120),
        };
        let session_id = format!("{}-{}", String::from_utf8_lossy(&client.station), n / 3);
        let octets = u32::try_from(n % 1_000_000).unwrap_or(0) * 1000;
        let (st, ts, el, oc) = (
            status.to_be_bytes(),
            unix_now().to_be_bytes(),
            elapsed.to_be_bytes(),
            octets.to_be_bytes(),
        );
        let mut attrs: Vec<(u8, &[u8])> = vec![
            (attr::ACCT_STATUS_TYPE, &st),
            (attr::ACCT_SESSION_ID, session_id.as_bytes()),
            (attr::USER_NAME, &client.user),
            (attr::CALLING_STATION_ID, &client.station),
            (attr::NAS_IDENTIFIER, inner.spec.nas_identifier.as_bytes()),
            (attr::EVENT_TIMESTAMP, &ts),
        ];
        if status != 1 {
            attrs.push((attr::ACCT_SESSION_TIME, &el));
            attrs.push((attr::ACCT_INPUT_OCTETS, &oc));
            attrs.push((attr::ACCT_OUTPUT_OCTETS, &oc));
        }
        if let Some(ip) = &client.nas_ip {
            attrs.push((attr::NAS_IP_ADDRESS, ip));
        }
        self.send(session, &attrs).await
    }

    /// One Accounting-On from this client's NAS.
    async fn accounting_on(
        &self,
        client: &AcctClient,
        session: &mut RadiusSession,
    ) -> (Outcome, bool, u32) {
        let nas_id = format!(
            "{}-{}",
            self.inner.spec.nas_identifier,
            String::from_utf8_lossy(&client.station)
        );
        let (st, ts) = (7u32.to_be_bytes(), unix_now().to_be_bytes());
        let mut attrs: Vec<(u8, &[u8])> = vec![
            (attr::ACCT_STATUS_TYPE, &st),
            (attr::NAS_IDENTIFIER, nas_id.as_bytes()),
            (attr::EVENT_TIMESTAMP, &ts),
        ];
        if let Some(ip) = &client.nas_ip {
            attrs.push((attr::NAS_IP_ADDRESS, ip));
        }
        self.send(session, &attrs).await
    }

    /// Sign `attrs` as an Accounting-Request and make its round trip.
    async fn send(
        &self,
        session: &mut RadiusSession,
        attrs: &[(u8, &[u8])],
    ) -> (Outcome, bool, u32) {
        let inner = &self.inner;
        let (id, authenticator, packet) = if inner.spec.radius_1_1 {
            // RFC 9765: the Token, no Request Authenticator to compute.
            let (id, token) = inner.next_request(session);
            let packet = inner.encode(Code::AccountingRequest, (id, token), attrs);
            (id, token, packet)
        } else {
            let id = inner.next_identifier(session);
            let packet = encode_accounting_request(id, attrs, &inner.spec.secret, false);
            let mut authenticator = [0u8; 16];
            if let Ok(p) = &packet {
                authenticator.copy_from_slice(&p[4..20]);
                inner.note_request(session, id, authenticator);
            }
            (id, authenticator, packet)
        };
        let Ok(packet) = packet else {
            return (Outcome::WrongResponse, false, 0);
        };
        let mut buf = vec![0u8; 4096];
        match inner
            .round_trip(session, &packet, (id, &authenticator), &mut buf)
            .await
        {
            Trip::Reply(len, retransmits) => {
                let outcome = match Packet::parse(&buf[..len]).map(|p| p.code) {
                    Ok(Code::AccountingResponse) => Outcome::Success,
                    _ => Outcome::WrongResponse,
                };
                (outcome, false, retransmits)
            }
            Trip::Failed(outcome, misdelivered, retransmits) => {
                (outcome, misdelivered, retransmits)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::time::Duration;

    use portcullis_radius::{check_accounting_request, encode_accounting_response};
    use tokio::net::UdpSocket;

    use super::*;

    const SECRET: &[u8] = b"lab accounting secret";

    /// A tiny accounting server: checks each request's authenticator, records its
    /// (session, status), answers it.
    async fn server() -> (
        SocketAddr,
        tokio::sync::mpsc::UnboundedReceiver<(String, u32)>,
    ) {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                let (n, from) = sock.recv_from(&mut buf).await.unwrap();
                let p = Packet::parse(&buf[..n]).unwrap();
                check_accounting_request(&p, SECRET).unwrap();
                let r = portcullis_radius::AcctRequest::parse(&p).unwrap();
                let id = String::from_utf8_lossy(r.session_id).into_owned();
                tx.send((id, r.status.as_u32())).unwrap();
                let reply = encode_accounting_response(&p, SECRET).unwrap();
                sock.send_to(&reply, from).await.unwrap();
            }
        });
        (addr, rx)
    }

    /// The lab's accounting driver against `addr`, sending Accounting-On first if asked.
    fn driver(addr: SocketAddr, accounting_on: bool) -> AcctDriver {
        let spec = RadiusSpec {
            secret: SECRET.to_vec(),
            retransmit: Duration::from_millis(500),
            retries: 1,
            require_message_authenticator: true,
            nas_identifier: "lab-nas".into(),
            accounting: true,
            accounting_on,
            radsec: None,
            radius_1_1: false,
        };
        AcctDriver::new(addr, spec)
    }

    /// A scenario identity from loopback; accounting never sends its secret.
    fn identity(id: &str) -> Identity {
        Identity {
            id: id.into(),
            secret: "unused".into(),
            source: Some("127.0.0.1".parse().unwrap()),
            connection: crate::scenario::ConnectionMode::KeepAlive,
            tls: None,
            auth: None,
            eap: None,
        }
    }

    #[tokio::test]
    async fn issue_28_clients_walk_sessions_through_start_interim_stop() {
        let (addr, mut seen) = server().await;
        let d = driver(addr, false);
        let client = d.client(&identity("dev")).unwrap();
        let mut session = d.session();
        for _ in 0..4 {
            let r = d.attempt(&client, &mut session).await;
            assert_eq!(r.outcome, Outcome::Success);
        }
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(seen.recv().await.unwrap());
        }
        let statuses: Vec<u32> = got.iter().map(|g| g.1).collect();
        assert_eq!(statuses, [1, 3, 2, 1]);
        assert_eq!(got[0].0, got[2].0, "one session from Start to Stop");
        assert_ne!(got[0].0, got[3].0, "then a new one");
    }

    #[tokio::test]
    async fn issue_28_accounting_on_storm_sends_accounting_on() {
        let (addr, mut seen) = server().await;
        let d = driver(addr, true);
        let client = d.client(&identity("ap")).unwrap();
        let mut session = d.session();
        for _ in 0..2 {
            let r = d.attempt(&client, &mut session).await;
            assert_eq!(r.outcome, Outcome::Success);
        }
        for _ in 0..2 {
            assert_eq!(seen.recv().await.unwrap(), (String::new(), 7));
        }
    }
}
