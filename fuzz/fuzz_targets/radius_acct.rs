//! Fuzz the accounting side of the RADIUS codec (issue 28) with what the accounting
//! door does to an untrusted datagram: parse, check the RFC 2866 authenticators, read the
//! typed record, answer, and read the answer back as a NAS would. Any panic is a bug; so
//! is an answer our own client-side check refuses. A second pass re-signs the input's
//! attributes with the secret, so the record parser also sees authenticated packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_radius::{
    AcctRequest, Packet, check_accounting_request, encode_accounting_request,
    encode_accounting_response, verify_response,
};

const SECRET: &[u8] = b"fuzzing-shared-secret";

fn exercise(data: &[u8]) {
    let Ok(packet) = Packet::parse(data) else {
        return;
    };
    let checked = check_accounting_request(&packet, SECRET);
    if let Ok(record) = AcctRequest::parse(&packet) {
        let _ = record.event_time(i64::from(u32::MAX));
        let _ = record.status.label();
    }
    if checked.is_ok() {
        if let Ok(reply) = encode_accounting_response(&packet, SECRET) {
            let back = verify_response(&reply, &packet.authenticator, SECRET, false);
            assert!(back.is_ok(), "our own reply fails our own check: {back:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(data);
    // The same attributes as a correctly signed Accounting-Request.
    if let Ok(packet) = Packet::parse(data) {
        // The input's own Message-Authenticators are not ours to keep: the encoder adds
        // its own (or none), and a stray one would rightly fail the check.
        let attrs: Vec<(u8, &[u8])> = packet
            .attributes()
            .filter(|a| a.0 != portcullis_radius::attr::MESSAGE_AUTHENTICATOR)
            .collect();
        let with_ma = data.first().is_some_and(|b| b & 1 == 1);
        if let Ok(signed) = encode_accounting_request(packet.identifier, &attrs, SECRET, with_ma) {
            let p = Packet::parse(&signed).expect("our own request parses");
            assert!(
                check_accounting_request(&p, SECRET).is_ok(),
                "our own request fails our own check"
            );
            exercise(&signed);
        }
    }
});
