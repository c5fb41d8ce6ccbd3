//! The 802.1X driver's checks: the MS-MPPE key comparison of an Access-Accept (the one
//! that flags a server answering with wrong keys), and the login loop against small
//! in-test RADIUS servers (reject, challenge without State, misdelivered reply). Whole
//! logins against Portcullis are in the root integration tests (`lab_eap`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use portcullis_radius::mppe::encode_key_attribute;
use portcullis_radius::{Code, Packet, attr, encode_request, encode_response};
use tokio::net::UdpSocket;

use super::*;
use crate::scenario::ConnectionMode;

const SECRET: &[u8] = b"eap driver test secret";
const AUTH: [u8; 16] = [9; 16];

/// An Access-Accept to a request with [`AUTH`], carrying these MPPE attributes.
fn accept_with(keys: &[(u8, &[u8], &[u8])]) -> Vec<u8> {
    let req = encode_request(Code::AccessRequest, 7, AUTH, &[], SECRET).unwrap();
    let req = Packet::parse(&req).unwrap();
    let values: Vec<Vec<u8>> = keys
        .iter()
        .enumerate()
        .map(|(i, (t, k, secret))| encode_key_attribute(*t, k, secret, &AUTH, [i as u8, 1]))
        .collect();
    let attrs: Vec<(u8, &[u8])> = values
        .iter()
        .map(|v| (attr::VENDOR_SPECIFIC, v.as_slice()))
        .collect();
    encode_response(Code::AccessAccept, &req, &attrs, SECRET).unwrap()
}

#[test]
fn keys_must_decrypt_to_exactly_the_stations_own() {
    let (recv, send) = ([1u8; 32], [2u8; 32]);
    let check = |raw: &[u8]| keys_match(&Packet::parse(raw).unwrap(), SECRET, &AUTH, &recv, &send);
    let right = accept_with(&[
        (MS_MPPE_RECV_KEY, &recv, SECRET),
        (MS_MPPE_SEND_KEY, &send, SECRET),
    ]);
    assert!(check(&right));
    // Halves swapped (a server that mixes up Recv and Send).
    let swapped = accept_with(&[
        (MS_MPPE_RECV_KEY, &send, SECRET),
        (MS_MPPE_SEND_KEY, &recv, SECRET),
    ]);
    assert!(!check(&swapped));
    // Another station's keys.
    let other = accept_with(&[
        (MS_MPPE_RECV_KEY, &[3u8; 32], SECRET),
        (MS_MPPE_SEND_KEY, &send, SECRET),
    ]);
    assert!(!check(&other));
    // Hidden with another secret.
    let hidden_wrong = accept_with(&[
        (MS_MPPE_RECV_KEY, &recv, b"other secret"),
        (MS_MPPE_SEND_KEY, &send, b"other secret"),
    ]);
    assert!(!check(&hidden_wrong));
    // Missing one, or none.
    assert!(!check(&accept_with(&[(MS_MPPE_RECV_KEY, &recv, SECRET)])));
    assert!(!check(&accept_with(&[])));
    // The same key twice is not "once each".
    let twice = accept_with(&[
        (MS_MPPE_RECV_KEY, &recv, SECRET),
        (MS_MPPE_RECV_KEY, &recv, SECRET),
        (MS_MPPE_SEND_KEY, &send, SECRET),
    ]);
    assert!(!check(&twice));
    // Against another request's authenticator the right keys do not decrypt.
    let p = Packet::parse(&right).unwrap();
    assert!(!keys_match(&p, SECRET, &[8; 16], &recv, &send));
}

/// What the in-test server answers to every request.
#[derive(Clone, Copy)]
enum Answer {
    Reject,
    ChallengeWithoutState,
    /// A reply verified against another authenticator (someone else's).
    Misdelivered,
}

async fn server(answer: Answer) -> (SocketAddr, Arc<parking_lot::Mutex<Vec<Vec<u8>>>>) {
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = sock.local_addr().unwrap();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        while let Ok((n, from)) = sock.recv_from(&mut buf).await {
            log.lock().push(buf[..n].to_vec());
            let Ok(req) = Packet::parse(&buf[..n]) else {
                continue;
            };
            let eap_failure = portcullis_eap::packet::failure(1);
            let reply = match answer {
                Answer::Reject => encode_response(
                    Code::AccessReject,
                    &req,
                    &[(attr::EAP_MESSAGE, &eap_failure)],
                    SECRET,
                ),
                Answer::ChallengeWithoutState => {
                    let start = portcullis_eap::packet::encode(
                        portcullis_eap::Code::Request,
                        2,
                        portcullis_eap::method::TTLS,
                        &[0x20],
                    )
                    .unwrap();
                    encode_response(
                        Code::AccessChallenge,
                        &req,
                        &[(attr::EAP_MESSAGE, &start)],
                        SECRET,
                    )
                }
                Answer::Misdelivered => {
                    let mut other = buf[..n].to_vec();
                    other[4..20].copy_from_slice(&[0xee; 16]);
                    let other = Packet::parse(&other).unwrap();
                    encode_response(Code::AccessReject, &other, &[], SECRET)
                }
            };
            let _ = sock.send_to(&reply.unwrap(), from).await;
        }
    });
    (addr, seen)
}

fn driver(addr: SocketAddr) -> EapDriver {
    EapDriver::new(
        addr,
        RadiusSpec {
            secret: SECRET.to_vec(),
            retransmit: Duration::from_millis(500),
            retries: 1,
            require_message_authenticator: true,
            nas_identifier: "lab-ap".into(),
            accounting: false,
            accounting_on: false,
            radsec: None,
            radius_1_1: false,
        },
    )
}

fn station(dir: &std::path::Path) -> Identity {
    let ca = crate::certs::TestCa::new(dir, "ca").unwrap();
    let raw = crate::tls::RawTls {
        ca: Some(ca.cert.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let spec =
        crate::tls::TlsSpec::from_raw(&raw, "127.0.0.1", &|p| std::path::PathBuf::from(p)).unwrap();
    Identity {
        id: "alice".into(),
        secret: "wrong".into(),
        source: Some("127.0.0.1".parse().unwrap()),
        connection: ConnectionMode::KeepAlive,
        tls: None,
        auth: None,
        eap: Some(Station {
            method: EapMethod::Ttls,
            tls: spec.for_eap(false),
            anonymous_identity: Some("anonymous".into()),
        }),
    }
}

#[tokio::test]
async fn a_reject_ends_the_login_as_an_auth_failure_after_one_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, seen) = server(Answer::Reject).await;
    let d = driver(addr);
    let c = d.client(&station(dir.path())).unwrap();
    let mut s = d.session();
    let r = d.attempt(&c, &mut s).await;
    assert_eq!(r.outcome, Outcome::AuthFailure);
    let login = r.eap.unwrap();
    assert_eq!(
        (login.round_trips, login.resumed, login.wrong_keys),
        (1, false, false)
    );
    // The request: the outer identity, an EAP-Response/Identity, a station id.
    let raw = seen.lock()[0].clone();
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(p.attr(attr::USER_NAME), Some(&b"anonymous"[..]));
    let eap = portcullis_eap::Packet::parse(p.attr(attr::EAP_MESSAGE).unwrap()).unwrap();
    assert_eq!(eap.method, Some(portcullis_eap::method::IDENTITY));
    assert!(p.attr(attr::CALLING_STATION_ID).is_some());
    assert_eq!(
        p.attributes().next().map(|a| a.0),
        Some(attr::MESSAGE_AUTHENTICATOR)
    );
}

#[tokio::test]
async fn a_challenge_without_state_is_a_wrong_response() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = server(Answer::ChallengeWithoutState).await;
    let d = driver(addr);
    let c = d.client(&station(dir.path())).unwrap();
    let r = d.attempt(&c, &mut d.session()).await;
    assert_eq!(r.outcome, Outcome::WrongResponse);
    assert!(!r.misdelivered);
}

#[tokio::test]
async fn a_reply_for_another_request_is_a_misdelivery() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = server(Answer::Misdelivered).await;
    let d = driver(addr);
    let c = d.client(&station(dir.path())).unwrap();
    let r = d.attempt(&c, &mut d.session()).await;
    assert_eq!(r.outcome, Outcome::WrongResponse);
    assert!(r.misdelivered);
}
