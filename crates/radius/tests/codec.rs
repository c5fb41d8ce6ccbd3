//! Properties of the codec on generated input: round trips, every malformed shape, and the
//! rules of RFC 2865/3579 that a fixed vector does not exercise.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use portcullis_radius::{
    Code, EncodeError, MessageAuthenticator, Packet, PacketError, PasswordError, attr,
    check_request_message_authenticator, encode_request, encode_response, hide_user_password,
    unhide_user_password, verify_response,
};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn password_round_trips_for_every_length() {
    let mut rng = Rng(0x5eed);
    for len in 1..=128 {
        let mut pw = rng.bytes(len);
        // A password ending in NUL cannot survive RFC 2865 padding; real ones never do.
        if pw[len - 1] == 0 {
            pw[len - 1] = 1;
        }
        let n = 1 + rng.below(64);
        let secret = rng.bytes(n);
        let ra: [u8; 16] = rng.bytes(16).try_into().unwrap();
        let hidden = hide_user_password(&pw, &secret, &ra).unwrap();
        assert_eq!(hidden.len(), len.div_ceil(16) * 16);
        assert_ne!(&hidden[..len], &pw[..], "hiding changed nothing");
        assert_eq!(
            &unhide_user_password(&hidden, &secret, &ra).unwrap()[..],
            &pw[..]
        );
        let mut other = ra;
        other[15] ^= 0x80;
        assert_ne!(
            &unhide_user_password(&hidden, &secret, &other).unwrap()[..],
            &pw[..]
        );
    }
    assert_eq!(
        hide_user_password(b"", b"s", &[0; 16]),
        Err(PasswordError::BadPlaintextLength(0))
    );
    assert_eq!(
        hide_user_password(&[1; 129], b"s", &[0; 16]),
        Err(PasswordError::BadPlaintextLength(129))
    );
    for bad in [0usize, 15, 17, 144] {
        assert_eq!(
            unhide_user_password(&vec![1; bad], b"s", &[0; 16]),
            Err(PasswordError::BadHiddenLength(bad))
        );
    }
}

fn request(secret: &[u8], extra: &[(u8, &[u8])]) -> Vec<u8> {
    let ra = [7u8; 16];
    let hidden = hide_user_password(b"pw", secret, &ra).unwrap();
    let mut attrs: Vec<(u8, &[u8])> =
        vec![(attr::USER_NAME, b"alice"), (attr::USER_PASSWORD, &hidden)];
    attrs.extend_from_slice(extra);
    encode_request(Code::AccessRequest, 42, ra, &attrs, secret).unwrap()
}

#[test]
fn malformed_packets_are_each_reported() {
    let good = request(b"s3cret", &[]);
    assert!(Packet::parse(&good).is_ok());
    assert_eq!(
        Packet::parse(&good[..19]).unwrap_err(),
        PacketError::TooShort(19)
    );
    assert_eq!(
        Packet::parse(&vec![0; 4097]).unwrap_err(),
        PacketError::TooLong(4097)
    );
    let mut long_field = good.clone();
    long_field[2..4].copy_from_slice(&((good.len() + 1) as u16).to_be_bytes());
    assert!(matches!(
        Packet::parse(&long_field),
        Err(PacketError::BadLength { .. })
    ));
    let mut short_field = good.clone();
    short_field[2..4].copy_from_slice(&19u16.to_be_bytes());
    assert!(matches!(
        Packet::parse(&short_field),
        Err(PacketError::BadLength { .. })
    ));
    // An attribute length of 1, of 0, and one running past Length.
    for bad_len in [0u8, 1, 255] {
        let mut b = good.clone();
        b[21] = bad_len;
        assert_eq!(
            Packet::parse(&b).unwrap_err(),
            PacketError::BadAttribute { offset: 20 }
        );
    }
    // One stray octet after the last attribute, inside Length.
    let mut stray = good.clone();
    stray.push(1);
    let n = stray.len() as u16;
    stray[2..4].copy_from_slice(&n.to_be_bytes());
    assert!(matches!(
        Packet::parse(&stray),
        Err(PacketError::BadAttribute { .. })
    ));
    // Octets past Length are padding (RFC 2865 §3) and ignored.
    let mut padded = good.clone();
    padded.extend_from_slice(&[0xee; 10]);
    let p = Packet::parse(&padded).unwrap();
    assert_eq!(p.raw(), &good[..]);
    assert_eq!(
        check_request_message_authenticator(&p, b"s3cret"),
        MessageAuthenticator::Valid
    );
}

#[test]
fn message_authenticator_rules() {
    let secret = b"s3cret";
    let good = request(secret, &[]);
    let p = Packet::parse(&good).unwrap();
    assert_eq!(
        p.attributes().next().unwrap().0,
        attr::MESSAGE_AUTHENTICATOR,
        "first"
    );
    assert_eq!(
        check_request_message_authenticator(&p, secret),
        MessageAuthenticator::Valid
    );
    // Any change to the covered octets breaks it: code, identifier, authenticator, attrs.
    for at in [0usize, 1, 4, 19, good.len() - 1] {
        let mut b = good.clone();
        b[at] ^= 0x40;
        if let Ok(p) = Packet::parse(&b) {
            assert_eq!(
                check_request_message_authenticator(&p, secret),
                MessageAuthenticator::Invalid,
                "flip at {at}"
            );
        }
    }
    // Two Message-Authenticators: invalid even if the first is right.
    let twice = request(secret, &[(attr::MESSAGE_AUTHENTICATOR, &[0; 16])]);
    let p = Packet::parse(&twice).unwrap();
    assert_eq!(
        check_request_message_authenticator(&p, secret),
        MessageAuthenticator::Invalid
    );
    // Wrong length.
    let mut short = Vec::from(&good[..20]);
    short.extend_from_slice(&[attr::MESSAGE_AUTHENTICATOR, 10, 0, 0, 0, 0, 0, 0, 0, 0]);
    let n = short.len() as u16;
    short[2..4].copy_from_slice(&n.to_be_bytes());
    let p = Packet::parse(&short).unwrap();
    assert_eq!(
        check_request_message_authenticator(&p, secret),
        MessageAuthenticator::Invalid
    );
}

#[test]
fn replies_copy_proxy_state_and_verify_only_for_their_request() {
    let secret = b"s3cret";
    let req = request(
        secret,
        &[(attr::PROXY_STATE, b"one"), (attr::PROXY_STATE, b"two")],
    );
    let req = Packet::parse(&req).unwrap();
    let reply = encode_response(
        Code::AccessReject,
        &req,
        &[(attr::REPLY_MESSAGE, b"no")],
        secret,
    )
    .unwrap();
    let p = verify_response(&reply, &req.authenticator, secret, true).unwrap();
    assert_eq!(p.code, Code::AccessReject);
    assert_eq!(p.identifier, 42);
    let types: Vec<u8> = p.attributes().map(|a| a.0).collect();
    assert_eq!(
        types,
        [
            attr::MESSAGE_AUTHENTICATOR,
            attr::REPLY_MESSAGE,
            attr::PROXY_STATE,
            attr::PROXY_STATE
        ]
    );
    let states: Vec<&[u8]> = p
        .attributes()
        .filter(|a| a.0 == attr::PROXY_STATE)
        .map(|a| a.1)
        .collect();
    assert_eq!(states, [&b"one"[..], &b"two"[..]], "in order");
    assert!(verify_response(&reply, &[8; 16], secret, true).is_err());
    assert!(verify_response(&reply, &req.authenticator, b"other", true).is_err());
}

#[test]
fn encoder_limits() {
    assert_eq!(
        encode_request(Code::AccessRequest, 0, [0; 16], &[(1, &[0; 254])], b"s"),
        Err(EncodeError::AttributeTooLong { typ: 1, len: 254 })
    );
    let big = [0u8; 253];
    let many: Vec<(u8, &[u8])> = (0..16).map(|_| (attr::CLASS, &big[..])).collect();
    assert!(matches!(
        encode_request(Code::AccessRequest, 0, [0; 16], &many, b"s"),
        Err(EncodeError::TooLong(_))
    ));
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(99);
    let good = request(b"k", &[(attr::CALLING_STATION_ID, b"00-11-22-33-44-55")]);
    for i in 0..20_000 {
        let buf = if i % 2 == 0 {
            let n = rng.below(300);
            rng.bytes(n)
        } else {
            let mut b = good.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(b.len());
                b[at] = rng.next() as u8;
            }
            b.truncate(rng.below(b.len() + 1).max(b.len() / 2));
            b
        };
        if let Ok(p) = Packet::parse(&buf) {
            let _ = check_request_message_authenticator(&p, b"k");
            if let Some(h) = p.attr(attr::USER_PASSWORD) {
                let _ = unhide_user_password(h, b"k", &p.authenticator);
            }
            let _ = encode_response(Code::AccessAccept, &p, &[], b"k");
            let _ = p.has_vendor(attr::VENDOR_MICROSOFT);
        }
        let _ = verify_response(&buf, &[0; 16], b"k", true);
    }
}
