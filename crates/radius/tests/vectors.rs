//! Known answers from outside our code: the RFC 2865 §7.1 exchange (bytes printed in the
//! RFC) and packets with Message-Authenticator made by Python's hashlib/hmac
//! (`tests/vectors/make_vectors.py`, output in `tests/vectors/ma.txt`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use portcullis_radius::{
    Code, MessageAuthenticator, Packet, ResponseError, attr, check_request_message_authenticator,
    encode_request, encode_response, hide_user_password, unhide_user_password, verify_response,
};

const SECRET: &[u8] = b"xyzzy5461";

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// RFC 2865 §7.1: Access-Request from NAS 192.168.1.16, user nemo, password arctangent.
const RFC_REQUEST: &str = "01 00 00 38 0f 40 3f 94 73 97 80 57 bd 83 d5 cb
    98 f4 22 7a 01 06 6e 65 6d 6f 02 12 0d be 70 8d 93 d4 13 ce 31 96 e4 3f
    78 2a 0a ee 04 06 c0 a8 01 10 05 06 00 00 00 03";
/// RFC 2865 §7.1: the server's Access-Accept (no Message-Authenticator: 2000-era).
const RFC_ACCEPT: &str = "02 00 00 26 86 fe 22 0e 76 24 ba 2a 10 05 f6 bf
    9b 55 e0 b2 06 06 00 00 00 01 0f 06 00 00 00 00 0e 06 c0 a8 01 03";

fn vector(name: &str) -> Vec<u8> {
    let text = include_str!("vectors/ma.txt");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap();
    hex(line)
}

#[test]
fn rfc2865_request_parses_and_its_password_unhides() {
    let raw = hex(RFC_REQUEST);
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(p.code, Code::AccessRequest);
    assert_eq!(p.identifier, 0);
    assert_eq!(p.attr(attr::USER_NAME), Some(&b"nemo"[..]));
    assert_eq!(p.attr(attr::NAS_IP_ADDRESS), Some(&[192, 168, 1, 16][..]));
    let hidden = p.attr(attr::USER_PASSWORD).unwrap();
    let pw = unhide_user_password(hidden, SECRET, &p.authenticator).unwrap();
    assert_eq!(&pw[..], b"arctangent");
    assert_eq!(
        hide_user_password(b"arctangent", SECRET, &p.authenticator).unwrap(),
        hidden,
        "our hiding gives the RFC's bytes"
    );
    assert_eq!(
        check_request_message_authenticator(&p, SECRET),
        MessageAuthenticator::Absent
    );
}

#[test]
fn rfc2865_accept_verifies_against_its_request_only() {
    let req = hex(RFC_REQUEST);
    let req = Packet::parse(&req).unwrap();
    let raw = hex(RFC_ACCEPT);
    let reply = verify_response(&raw, &req.authenticator, SECRET, false).unwrap();
    assert_eq!(reply.code, Code::AccessAccept);
    assert_eq!(
        verify_response(&raw, &req.authenticator, SECRET, true).unwrap_err(),
        ResponseError::MissingMessageAuthenticator
    );
    assert_eq!(
        verify_response(&raw, &req.authenticator, b"wrong secret", false).unwrap_err(),
        ResponseError::BadResponseAuthenticator
    );
    let mut other = req.authenticator;
    other[0] ^= 1;
    assert_eq!(
        verify_response(&raw, &other, SECRET, false).unwrap_err(),
        ResponseError::BadResponseAuthenticator,
        "a reply to another request does not verify"
    );
}

#[test]
fn request_with_message_authenticator_matches_python_byte_for_byte() {
    let reference = vector("request");
    let p = Packet::parse(&reference).unwrap();
    assert_eq!(
        check_request_message_authenticator(&p, SECRET),
        MessageAuthenticator::Valid
    );
    assert_eq!(
        check_request_message_authenticator(&p, b"xyzzy5462"),
        MessageAuthenticator::Invalid
    );
    let hidden = hide_user_password(b"arctangent", SECRET, &p.authenticator).unwrap();
    let ours = encode_request(
        Code::AccessRequest,
        0,
        p.authenticator,
        &[
            (attr::USER_NAME, b"nemo"),
            (attr::USER_PASSWORD, &hidden),
            (attr::NAS_IP_ADDRESS, &[192, 168, 1, 16]),
            (attr::NAS_PORT, &[0, 0, 0, 3]),
        ],
        SECRET,
    )
    .unwrap();
    assert_eq!(ours, reference);
}

#[test]
fn reply_matches_python_byte_for_byte_and_verifies() {
    let request = vector("request");
    let request = Packet::parse(&request).unwrap();
    let reference = vector("accept");
    let ours = encode_response(
        Code::AccessAccept,
        &request,
        &[(attr::SERVICE_TYPE, &[0, 0, 0, 1])],
        SECRET,
    )
    .unwrap();
    assert_eq!(ours, reference);
    let reply = verify_response(&reference, &request.authenticator, SECRET, true).unwrap();
    assert_eq!(
        reply.attributes().next().unwrap().0,
        attr::MESSAGE_AUTHENTICATOR
    );

    // Tampering with one octet after the Response Authenticator was made is caught.
    let mut bent = reference.clone();
    let last = bent.len() - 1;
    bent[last] ^= 1;
    assert!(verify_response(&bent, &request.authenticator, SECRET, true).is_err());
}

#[test]
fn status_server_message_authenticator_matches_python() {
    let reference = vector("status");
    let p = Packet::parse(&reference).unwrap();
    assert_eq!(p.code, Code::StatusServer);
    assert_eq!(
        check_request_message_authenticator(&p, SECRET),
        MessageAuthenticator::Valid
    );
    assert_eq!(
        encode_request(Code::StatusServer, 218, p.authenticator, &[], SECRET).unwrap(),
        reference
    );
}
