//! Accounting codec tests: authenticators both ways (our encoder against an independent
//! MD5 of RFC 2866 §3's formula, tampering, wrong secret, Message-Authenticator present
//! and wrong), the response as a client checks it, and the typed record's strictness.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use md5::{Digest, Md5};

use super::*;
use crate::auth::verify_response;

const SECRET: &[u8] = b"accounting secret";

fn start_attrs() -> Vec<(u8, Vec<u8>)> {
    vec![
        (attr::ACCT_STATUS_TYPE, 1u32.to_be_bytes().to_vec()),
        (attr::ACCT_SESSION_ID, b"sess-1".to_vec()),
        (attr::USER_NAME, b"fred".to_vec()),
        (attr::CALLING_STATION_ID, b"02-00-00-00-00-01".to_vec()),
        (attr::FRAMED_IP_ADDRESS, vec![10, 1, 2, 3]),
        (attr::ACCT_INPUT_OCTETS, 5u32.to_be_bytes().to_vec()),
        (attr::ACCT_INPUT_GIGAWORDS, 2u32.to_be_bytes().to_vec()),
        (attr::ACCT_DELAY_TIME, 4u32.to_be_bytes().to_vec()),
        (attr::PROXY_STATE, b"ps-a".to_vec()),
        (attr::PROXY_STATE, b"ps-b".to_vec()),
    ]
}

fn encode(attrs: &[(u8, Vec<u8>)], ma: bool) -> Vec<u8> {
    let refs: Vec<(u8, &[u8])> = attrs.iter().map(|(t, v)| (*t, v.as_slice())).collect();
    encode_accounting_request(9, &refs, SECRET, ma).unwrap()
}

#[test]
fn issue_28_request_authenticator_is_rfc_2866_md5_and_checked() {
    let raw = encode(&start_attrs(), false);
    // RFC 2866 §3, computed here independently of the encoder.
    let mut zeroed = raw.clone();
    zeroed[4..20].fill(0);
    let expected: [u8; 16] = Md5::new()
        .chain_update(&zeroed)
        .chain_update(SECRET)
        .finalize()
        .into();
    assert_eq!(raw[4..20], expected);
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(
        check_accounting_request(&p, SECRET),
        Ok(MessageAuthenticator::Absent)
    );
    assert_eq!(
        check_accounting_request(&p, b"another secret"),
        Err(AcctError::BadRequestAuthenticator)
    );
    // One flipped octet of an attribute (the framed address) is detected.
    let mut tampered = raw.clone();
    let at = tampered
        .windows(4)
        .position(|w| w == [10, 1, 2, 3])
        .unwrap();
    tampered[at] = 11;
    let p = Packet::parse(&tampered).unwrap();
    assert_eq!(
        check_accounting_request(&p, SECRET),
        Err(AcctError::BadRequestAuthenticator)
    );
}

#[test]
fn issue_28_message_authenticator_is_honoured_when_present() {
    let raw = encode(&start_attrs(), true);
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(
        check_accounting_request(&p, SECRET),
        Ok(MessageAuthenticator::Valid)
    );
    // A wrong HMAC under a correct Request Authenticator (as an attacker who knows the
    // MD5 construction but alters the HMAC would produce): refused.
    let mut bad = raw.clone();
    bad[22] ^= 1;
    let mut zeroed = bad.clone();
    zeroed[4..20].fill(0);
    let auth: [u8; 16] = Md5::new()
        .chain_update(&zeroed)
        .chain_update(SECRET)
        .finalize()
        .into();
    bad[4..20].copy_from_slice(&auth);
    let p = Packet::parse(&bad).unwrap();
    assert_eq!(
        check_accounting_request(&p, SECRET),
        Err(AcctError::BadMessageAuthenticator)
    );
}

#[test]
fn issue_28_response_verifies_as_a_client_checks_it_and_copies_proxy_state() {
    let raw = encode(&start_attrs(), false);
    let p = Packet::parse(&raw).unwrap();
    let reply = encode_accounting_response(&p, SECRET).unwrap();
    let back = verify_response(&reply, &p.authenticator, SECRET, false).unwrap();
    assert_eq!(back.code, Code::AccountingResponse);
    assert_eq!(back.identifier, 9);
    let ps: Vec<&[u8]> = back
        .attributes()
        .filter(|a| a.0 == attr::PROXY_STATE)
        .map(|a| a.1)
        .collect();
    assert_eq!(ps, [b"ps-a".as_slice(), b"ps-b".as_slice()]);
    assert!(verify_response(&reply, &p.authenticator, b"other", false).is_err());
}

#[test]
fn issue_28_record_fields_with_gigawords_and_delay_corrected_time() {
    let raw = encode(&start_attrs(), false);
    let p = Packet::parse(&raw).unwrap();
    let r = AcctRequest::parse(&p).unwrap();
    assert_eq!(r.status, StatusType::Start);
    assert_eq!(r.session_id, b"sess-1");
    assert_eq!(r.user_name, Some(b"fred".as_slice()));
    assert_eq!(r.framed_ip, Some(Ipv4Addr::new(10, 1, 2, 3)));
    assert_eq!(r.input_octets, Some((2u64 << 32) | 5));
    assert_eq!(r.output_octets, None);
    assert_eq!(r.event_time(1_000), 996, "arrival minus Acct-Delay-Time");
    let mut with_ts = start_attrs();
    with_ts.push((attr::EVENT_TIMESTAMP, 500u32.to_be_bytes().to_vec()));
    let raw = encode(&with_ts, false);
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(
        AcctRequest::parse(&p).unwrap().event_time(1_000),
        500,
        "the NAS's own event time, repeated unchanged by retransmissions"
    );
}

#[test]
fn issue_28_record_parser_refuses_what_it_cannot_read() {
    let without = |typ: u8| -> Vec<(u8, Vec<u8>)> {
        start_attrs().into_iter().filter(|a| a.0 != typ).collect()
    };
    let parse = |attrs: &[(u8, Vec<u8>)]| {
        let raw = encode(attrs, false);
        let p = Packet::parse(&raw).unwrap();
        AcctRequest::parse(&p).map(|r| (r.status, r.session_id.to_vec()))
    };
    assert_eq!(
        parse(&without(attr::ACCT_STATUS_TYPE)),
        Err(AcctError::MissingStatusType)
    );
    assert_eq!(
        parse(&without(attr::ACCT_SESSION_ID)),
        Err(AcctError::MissingSessionId)
    );
    let mut short = without(attr::ACCT_SESSION_TIME);
    short.push((attr::ACCT_SESSION_TIME, vec![1, 2, 3]));
    assert_eq!(
        parse(&short),
        Err(AcctError::BadAttribute(attr::ACCT_SESSION_TIME))
    );
    let mut ip = without(attr::FRAMED_IP_ADDRESS);
    ip.push((attr::FRAMED_IP_ADDRESS, vec![1, 2, 3, 4, 5]));
    assert_eq!(
        parse(&ip),
        Err(AcctError::BadAttribute(attr::FRAMED_IP_ADDRESS))
    );
    // Accounting-On speaks for the NAS: no session id needed.
    let on = vec![(attr::ACCT_STATUS_TYPE, 7u32.to_be_bytes().to_vec())];
    assert_eq!(parse(&on), Ok((StatusType::AccountingOn, Vec::new())));
    // Not an Accounting-Request at all.
    let access = crate::auth::encode_request(Code::AccessRequest, 1, [3; 16], &[], SECRET).unwrap();
    let p = Packet::parse(&access).unwrap();
    assert_eq!(
        AcctRequest::parse(&p).map(|_| ()),
        Err(AcctError::NotAccountingRequest)
    );
    assert_eq!(
        check_accounting_request(&p, SECRET),
        Err(AcctError::NotAccountingRequest)
    );
}
