//! Fuzz the LDAP framing and message decoder (issue 39) as the LDAP door and the LDAP
//! clients use it: an untrusted stream cut into LDAPMessages under small limits, each
//! decoded by ldap3_proto after the pre-scan. Any panic is a bug; so is a frame longer than
//! the limit, a consumed count past the buffer, an error whose action would skip bytes
//! that are not there, or a decoded message whose ID or operation does not survive encoding
//! and decoding, or whose encoding changes when it is decoded and encoded again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_ldap::frame::{Action, Frame, Limits, decode_request, decode_response};
use portcullis_ldap::proto::control::LdapControl;
use portcullis_ldap::proto::proto::{LdapBindCred, LdapBindRequest, LdapOp};
use portcullis_ldap::response;

const LIMITS: Limits = Limits {
    max_message_bytes: 4096,
    max_depth: 16,
    max_elements: 256,
};
const UNBOUNDED: Limits = Limits {
    max_message_bytes: usize::MAX,
    max_depth: 64,
    max_elements: usize::MAX,
};

fn used_control(control: &LdapControl) -> bool {
    matches!(
        control,
        LdapControl::SimplePagedResults { .. }
            | LdapControl::ManageDsaIT { .. }
            | LdapControl::Unknown { .. }
    )
}

fn run(stream: &[u8], requests: bool) {
    let mut rest = stream;
    // At most as many messages as the stream has pairs of bytes (the smallest is 2).
    for _ in 0..=stream.len() / 2 {
        let decoded = if requests {
            decode_request(rest, &LIMITS)
        } else {
            decode_response(rest, &LIMITS)
        };
        match decoded {
            Ok(Frame::Incomplete) => return,
            Ok(Frame::Message { message, consumed }) => {
                assert!(consumed <= rest.len() && consumed <= LIMITS.max_message_bytes);
                // A bind with an authentication choice ldap3_proto does not know decodes as
                // `Unsupported` (the server answers authMethodNotSupported); it has no encoding.
                if let LdapOp::BindRequest(LdapBindRequest {
                    cred: LdapBindCred::Unsupported,
                    ..
                }) = &message.op
                {
                    rest = &rest[consumed..];
                    continue;
                }
                // The round trip is taken without the controls Portcullis does not use:
                // ldap3_proto reads INTEGERs unsigned and cut to 32 bits and ldap3_lber writes
                // negative ones wrongly, so Active Directory's flag controls need not survive,
                // and its server-side sort result does not always decode after encoding.
                let mut message = message;
                message.ctrl.retain(used_control);
                let encoded = response::encode(message.clone());
                let again = if requests {
                    decode_request(&encoded, &UNBOUNDED)
                } else {
                    decode_response(&encoded, &UNBOUNDED)
                };
                let Ok(Frame::Message { message: again, .. }) = again else {
                    panic!("{message:?} re-encoded does not decode: {again:?}");
                };
                // What a server serves, the ID and the operation, survives the round trip,
                // and the encoding is stable (ldap3_proto reads some empty fields back as
                // absent: equal bytes, not always equal values).
                assert_eq!((again.msgid, &again.op), (message.msgid, &message.op));
                assert_eq!(
                    response::encode(again),
                    encoded,
                    "re-encoding changed the bytes"
                );
                rest = &rest[consumed..];
            }
            Err(error) => {
                let _ = error.server_reply().map(response::encode);
                match error.action() {
                    Action::Respond { consumed, .. } | Action::Discard { consumed } => {
                        assert!(consumed <= rest.len());
                        rest = &rest[consumed..];
                    }
                    Action::Disconnect(_) | Action::Close => return,
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    run(data, true);
    run(data, false);
});
