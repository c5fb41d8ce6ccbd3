//! The LDAP driver's pieces against independent references: responses hand-encoded in BER
//! from RFC 4511's ASN.1 (not by the codec under test), RFC 4514's DN escaping examples,
//! and a scripted in-test server for what a real server rarely does (garbage, a Notice of
//! Disconnection, closing mid-login). The real-server tests are in `tests/ldap_slapd.rs`.

use std::time::Duration;

use bytes::BytesMut;
use ldap3_proto::proto::LdapOp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::scenario::{LdapSpec, UserBind};

/// `LDAPMessage { messageID id, protocolOp [APPLICATION app] LDAPResult { code, "", "" } }`
/// (RFC 4511 §4.1.1, §4.1.9), written out by hand.
fn result_msg(id: u8, app: u8, code: u8) -> Vec<u8> {
    vec![
        0x30, 0x0c, 0x02, 0x01, id, app, 0x07, 0x0a, 0x01, code, 0x04, 0x00, 0x04, 0x00,
    ]
}

/// BindResponse (RFC 4511 §4.2.2: `[APPLICATION 1]`).
fn bind_response(id: u8, code: u8) -> Vec<u8> {
    result_msg(id, 0x61, code)
}

/// SearchResultEntry for `dn` with no attributes (`[APPLICATION 4]`), then
/// SearchResultDone (`[APPLICATION 5]`) with `code`.
fn entry_then_done(id: u8, dn: &str, code: u8) -> Vec<u8> {
    let dn = dn.as_bytes();
    let op_len = 2 + dn.len() + 2;
    let mut v = vec![
        0x30,
        (3 + 2 + op_len) as u8,
        0x02,
        0x01,
        id,
        0x64,
        op_len as u8,
    ];
    v.extend([0x04, dn.len() as u8]);
    v.extend(dn);
    v.extend([0x30, 0x00]);
    v.extend(result_msg(id, 0x65, code));
    v
}

/// RFC 4511 §4.4.1: an unsolicited ExtendedResponse, message id 0, named
/// 1.3.6.1.4.1.1466.20036, with `code`.
fn notice_of_disconnection(code: u8) -> Vec<u8> {
    let oid = b"1.3.6.1.4.1.1466.20036";
    let op_len = 3 + 2 + 2 + 2 + oid.len();
    let mut v = vec![
        0x30,
        (3 + 2 + op_len) as u8,
        0x02,
        0x01,
        0x00,
        0x78,
        op_len as u8,
    ];
    v.extend([
        0x0a,
        0x01,
        code,
        0x04,
        0x00,
        0x04,
        0x00,
        0x8a,
        oid.len() as u8,
    ]);
    v.extend(oid);
    v
}

#[test]
fn a_hand_encoded_bind_response_decodes_with_its_code() {
    for code in [0u8, 49, 53] {
        let mut buf = BytesMut::from(&bind_response(7, code)[..]);
        let msg = wire::decode(&mut buf).unwrap().unwrap();
        assert_eq!(msg.msgid, 7);
        let LdapOp::BindResponse(r) = msg.op else {
            panic!("not a BindResponse: {:?}", msg.op)
        };
        assert_eq!(wire::code(&r.res), u16::from(code));
        assert!(buf.is_empty(), "the message is consumed");
    }
}

#[test]
fn a_truncated_message_waits_for_more_and_two_messages_come_out_one_by_one() {
    let whole = bind_response(1, 0);
    for cut in 0..whole.len() {
        let mut buf = BytesMut::from(&whole[..cut]);
        assert!(wire::decode(&mut buf).unwrap().is_none(), "cut at {cut}");
    }
    let mut two = bind_response(1, 49);
    two.extend(bind_response(2, 0));
    let mut buf = BytesMut::from(&two[..]);
    assert_eq!(wire::decode(&mut buf).unwrap().unwrap().msgid, 1);
    assert_eq!(wire::decode(&mut buf).unwrap().unwrap().msgid, 2);
    assert!(wire::decode(&mut buf).unwrap().is_none());
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    // A complete BER element that is no LDAPMessage: an OCTET STRING "abc".
    let mut buf = BytesMut::from(&[0x04, 0x03, b'a', b'b', b'c'][..]);
    assert!(wire::decode(&mut buf).is_err());
    // A SEQUENCE whose operation is an unknown application tag [APPLICATION 30].
    let mut buf = BytesMut::from(&result_msg(1, 0x7e, 0)[..]);
    assert!(wire::decode(&mut buf).is_err());
    // A result code outside RFC 4511's list.
    let mut buf = BytesMut::from(&bind_response(1, 0x7f)[..]);
    assert!(wire::decode(&mut buf).is_err());
    // Deeper than the limit: 40 nested SEQUENCEs (short lengths throughout).
    let mut deep = vec![0x30u8, 0x00];
    for _ in 1..40 {
        deep = [vec![0x30, deep.len() as u8], deep].concat();
    }
    let mut buf = BytesMut::from(&deep[..]);
    assert!(wire::decode(&mut buf).is_err());
}

#[test]
fn a_huge_announced_length_is_refused_once_the_buffer_passes_the_limit() {
    // A SEQUENCE announcing 2^31 octets: the decoder waits while the buffer is small, and
    // refuses it (rather than growing without bound) once more than the limit has come.
    let mut head = vec![0x30, 0x84, 0x80, 0x00, 0x00, 0x00];
    let mut buf = BytesMut::from(&head[..]);
    assert!(wire::decode(&mut buf).unwrap().is_none());
    head.resize(2 * wire::MAX_MESSAGE + 16, 0);
    let mut buf = BytesMut::from(&head[..]);
    assert!(matches!(
        wire::decode(&mut buf),
        Err(WireError::Malformed(_))
    ));
}

#[test]
fn dn_values_are_escaped_as_rfc_4514_shows() {
    // RFC 4514 §4: `CN=Sue\, Grabbit and Runn`, and the characters §2.4 lists.
    assert_eq!(
        escape_dn_value("Sue, Grabbit and Runn"),
        r"Sue\, Grabbit and Runn"
    );
    assert_eq!(escape_dn_value("a+b=c"), r"a\+b=c");
    assert_eq!(escape_dn_value("#lead"), r"\#lead");
    assert_eq!(escape_dn_value(" both "), r"\ both\ ");
    assert_eq!(escape_dn_value(r#"q"<>;\"#), r#"q\"\<\>\;\\"#);
    assert_eq!(escape_dn_value("user1"), "user1");
}

#[test]
fn a_user_name_fills_the_filter_as_a_value_and_cannot_change_its_structure() {
    let f = parse_filter("(&(objectClass=inetOrgPerson)(uid={user}))").unwrap();
    let hostile = "x)(uid=*";
    assert_eq!(
        fill_filter(&f, hostile, ""),
        LdapFilter::And(vec![
            LdapFilter::Equality("objectClass".into(), "inetOrgPerson".into()),
            LdapFilter::Equality("uid".into(), hostile.into()),
        ])
    );
    let g = parse_filter("(|(member={dn})(memberUid={user}))").unwrap();
    assert_eq!(
        fill_filter(&g, "u1", "uid=u1,dc=x"),
        LdapFilter::Or(vec![
            LdapFilter::Equality("member".into(), "uid=u1,dc=x".into()),
            LdapFilter::Equality("memberUid".into(), "u1".into()),
        ])
    );
    assert!(parse_filter("(uid={user}").is_err());
}

// ---------------------------------------------------------------------------------------
// A scripted server.
// ---------------------------------------------------------------------------------------

/// Read one request: (message id, protocolOp tag). Ids and lengths the driver sends here
/// are small, so the short and one- or two-octet long forms are enough.
async fn read_request(s: &mut tokio::net::TcpStream) -> Option<(u8, u8)> {
    let mut h = [0u8; 2];
    s.read_exact(&mut h).await.ok()?;
    let len = match h[1] {
        n if n < 0x80 => usize::from(n),
        0x81 => usize::from(s.read_u8().await.ok()?),
        0x82 => usize::from(s.read_u16().await.ok()?),
        _ => return None,
    };
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    Some((*body.get(2)?, *body.get(3)?))
}

/// A server answering each request with `answer(message id, op tag)` (empty: close).
async fn scripted(answer: fn(u8, u8) -> Vec<u8>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                while let Some((id, op)) = read_request(&mut s).await {
                    let out = answer(id, op);
                    if out.is_empty() || s.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn spec(read_entry: bool) -> LdapSpec {
    LdapSpec {
        ldaps: false,
        starttls: false,
        base_dn: "dc=example,dc=org".into(),
        bind: UserBind::Dn("uid={user},ou=people,dc=example,dc=org".into()),
        read_entry,
        attributes: vec!["cn".into()],
        group_filter: None,
    }
}

fn who(user: &str, password: &str) -> Identity {
    Identity {
        id: user.into(),
        secret: password.into(),
        source: None,
        connection: ConnectionMode::KeepAlive,
        tls: None,
        eap: None,
        auth: None,
    }
}

async fn one(answer: fn(u8, u8) -> Vec<u8>, read_entry: bool) -> AttemptResult {
    let addr = scripted(answer).await;
    let d = LdapDriver::new(addr, spec(read_entry)).unwrap();
    let c = d.client(&who("user1", "password1")).unwrap();
    let mut s = d.session();
    tokio::time::timeout(Duration::from_secs(10), d.attempt(&c, &mut s))
        .await
        .unwrap()
}

const BIND: u8 = 0x60;
const SEARCH: u8 = 0x63;

#[tokio::test]
async fn a_bind_then_the_entry_read_is_a_success() {
    let r = one(
        |id, op| match op {
            BIND => bind_response(id, 0),
            SEARCH => entry_then_done(id, "uid=user1,ou=people,dc=example,dc=org", 0),
            _ => Vec::new(),
        },
        true,
    )
    .await;
    assert_eq!(r.outcome, Outcome::Success);
    let l = r.ldap.unwrap();
    assert_eq!((l.bind, l.search), (Some(0), Some(0)));
}

#[tokio::test]
async fn invalid_credentials_is_an_auth_failure_with_code_49() {
    let r = one(|id, _| bind_response(id, 49), true).await;
    assert_eq!(r.outcome, Outcome::AuthFailure);
    assert_eq!(r.ldap.unwrap().bind, Some(49));
}

#[tokio::test]
async fn busy_sheds_and_unwilling_throttles() {
    let r = one(|id, _| bind_response(id, 51), false).await;
    assert_eq!(r.outcome, Outcome::Shed);
    let r = one(|id, _| bind_response(id, 53), false).await;
    assert_eq!(r.outcome, Outcome::Throttled);
}

#[tokio::test]
async fn a_notice_of_disconnection_ends_the_login_with_its_code() {
    let r = one(|_, _| notice_of_disconnection(52), false).await;
    assert_eq!(r.outcome, Outcome::Shed);
    let r = one(|_, _| notice_of_disconnection(2), false).await;
    assert_eq!(r.outcome, Outcome::ConnectionError);
}

#[tokio::test]
async fn garbage_another_message_id_or_a_close_never_panic() {
    let r = one(|_, _| vec![0x04, 0x03, b'a', b'b', b'c'], false).await;
    assert_eq!(r.outcome, Outcome::WrongResponse);
    let r = one(|id, _| bind_response(id.wrapping_add(5), 0), false).await;
    assert_eq!(r.outcome, Outcome::WrongResponse);
    // A search answered with a BindResponse.
    let r = one(
        |id, op| match op {
            BIND => bind_response(id, 0),
            _ => bind_response(id, 0),
        },
        true,
    )
    .await;
    assert_eq!(r.outcome, Outcome::WrongResponse);
    let r = one(|_, _| Vec::new(), false).await;
    assert_eq!(r.outcome, Outcome::ConnectionError);
}

#[tokio::test]
async fn a_kept_connection_serves_the_next_login() {
    let addr = scripted(|id, op| match op {
        BIND => bind_response(id, 0),
        _ => Vec::new(),
    })
    .await;
    let d = LdapDriver::new(addr, spec(false)).unwrap();
    let c = d.client(&who("user1", "password1")).unwrap();
    let mut s = d.session();
    let first = d.attempt(&c, &mut s).await;
    let second = d.attempt(&c, &mut s).await;
    assert_eq!(
        (first.outcome, second.outcome),
        (Outcome::Success, Outcome::Success)
    );
    assert!(
        first.conn.is_some(),
        "the first login opened the connection"
    );
    assert!(second.conn.is_none(), "the second reused it");
}

#[test]
fn an_empty_password_is_refused_before_the_run() {
    let d = LdapDriver::new("127.0.0.1:389".parse().unwrap(), spec(false)).unwrap();
    assert!(d.client(&who("user1", "")).is_err());
}

#[test]
fn a_right_password_refused_after_it_worked_is_a_lockout_of_that_user() {
    use stats::{LdapAttempt, LdapStats};
    let bind = |code| LdapAttempt {
        bind: Some(code),
        bind_time: Duration::from_millis(2),
        ..LdapAttempt::default()
    };
    // Clients 0 and 2 are both user1 (a shared principal); client 1 is user2, never
    // accepted; client 3 is user3, fine throughout.
    let names = ["user1", "user2", "user1", "user3"]
        .map(String::from)
        .to_vec();
    let s = LdapStats::with_names(names);
    s.record(0, &bind(0), true);
    s.record(2, &bind(49), true);
    s.record(1, &bind(49), true);
    s.record(3, &bind(0), true);
    s.record(3, &bind(0), true);
    let l = s.summary(Duration::from_secs(2)).unwrap();
    assert_eq!(l.locked_out, ["user1"]);
    assert_eq!(l.never_accepted, ["user2"]);
    assert_eq!(l.right_password_refused, 2);
    assert_eq!(l.binds, 5);
    assert_eq!(l.bind_codes.get(&0), Some(&3));
    assert_eq!(l.bind_codes.get(&49), Some(&2));
    assert!((l.binds_per_s - 2.5).abs() < 1e-9);
    assert!((l.accepted_per_s - 1.5).abs() < 1e-9);
    // Guessers' refusals are no lockout: they never had the right password.
    let g = LdapStats::with_names(vec!["user1".into()]);
    g.record(0, &bind(0), false);
    g.record(0, &bind(49), false);
    let l = g.summary(Duration::from_secs(1)).unwrap();
    assert!(l.locked_out.is_empty() && l.never_accepted.is_empty());
}

#[tokio::test]
async fn each_station_connects_from_its_own_source_address() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, peer)) = l.accept().await {
            let _ = tx.send(peer.ip());
            tokio::spawn(async move {
                while let Some((id, _)) = read_request(&mut s).await {
                    if s.write_all(&bind_response(id, 49)).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let d = LdapDriver::new(addr, spec(false)).unwrap();
    for source in ["127.0.0.2", "127.0.0.3"] {
        let mut w = who("user1", "guess");
        w.source = Some(source.parse().unwrap());
        let c = d.client(&w).unwrap();
        let r = d.attempt(&c, &mut d.session()).await;
        assert_eq!(r.outcome, Outcome::AuthFailure);
        assert_eq!(rx.recv().await.unwrap().to_string(), source);
    }
}
