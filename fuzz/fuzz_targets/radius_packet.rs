//! Fuzz the RADIUS packet codec (issue 12) with what a server's receive path does to an
//! untrusted datagram: parse, walk the attributes, check the Message-Authenticator,
//! unhide a User-Password, answer, and read the answer back as a client would. Any
//! panic is a bug; so is an answer our own client-side check refuses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_radius::{
    Code, MessageAuthenticator, Packet, attr, check_request_message_authenticator,
    encode_response, unhide_user_password, verify_response,
};

const SECRET: &[u8] = b"fuzzing-shared-secret";

fuzz_target!(|data: &[u8]| {
    // Also a client's view: any datagram as a reply to some request.
    let _ = verify_response(data, &[7; 16], SECRET, true);
    let Ok(packet) = Packet::parse(data) else {
        return;
    };
    assert!(packet.raw().len() <= data.len());
    let mut total = 20usize;
    for (t, v) in packet.attributes() {
        total += 2 + v.len();
        let _ = packet.count(t);
    }
    assert_eq!(total, packet.raw().len(), "attributes must tile the packet");
    let _ = packet.has_vendor(311);
    let ma = check_request_message_authenticator(&packet, SECRET);
    if let Some(hidden) = packet.attr(attr::USER_PASSWORD) {
        let _ = unhide_user_password(hidden, SECRET, &packet.authenticator);
    }
    if matches!(ma, MessageAuthenticator::Valid) || packet.code == Code::AccessRequest {
        for code in [Code::AccessAccept, Code::AccessReject] {
            if let Ok(reply) = encode_response(code, &packet, &[], SECRET) {
                let back = verify_response(&reply, &packet.authenticator, SECRET, true);
                assert!(back.is_ok(), "our own reply fails our own check: {back:?}");
            }
        }
    }
});
