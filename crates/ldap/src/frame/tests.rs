//! Framing: hand-assembled BER (X.690 encodings written out byte by byte, not produced by our
//! encoder) for each limit and each error's action.

use super::*;
use ldap3_proto::proto::LdapOp;

fn limits() -> Limits {
    Limits {
        max_message_bytes: 1024,
        max_depth: 8,
        max_elements: 64,
    }
}

/// `30 LL 02 01 <id> <op...>`: an LDAPMessage around `op`.
fn message(msgid: u8, op: &[u8]) -> Vec<u8> {
    let mut content = vec![0x02, 0x01, msgid];
    content.extend_from_slice(op);
    let mut out = vec![0x30, content.len() as u8];
    out.extend(content);
    out
}

/// A SearchRequest (base "", scope base) around an encoded filter.
fn search(filter: &[u8]) -> Vec<u8> {
    let mut body = vec![
        0x04, 0x00, 0x0a, 0x01, 0x00, 0x0a, 0x01, 0x00, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x01,
        0x01, 0x00,
    ];
    body.extend_from_slice(filter);
    body.extend_from_slice(&[0x30, 0x00]);
    let mut op = vec![0x63, body.len() as u8];
    op.extend(body);
    op
}

/// `depth` nested NOTs around `(cn=*)`: a filter of that depth.
fn nested_not(depth: usize) -> Vec<u8> {
    let mut filter = vec![0x87, 0x02, b'c', b'n'];
    for _ in 1..depth {
        let mut outer = vec![0xa2, filter.len() as u8];
        outer.extend(filter);
        filter = outer;
    }
    filter
}

const ANONYMOUS_BIND: &[u8] = &[0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00];

#[test]
fn a_whole_message_decodes_and_a_prefix_waits() {
    let bytes = message(1, ANONYMOUS_BIND);
    for cut in 0..bytes.len() {
        assert_eq!(
            decode_request(&bytes[..cut], &limits()).ok(),
            Some(Frame::Incomplete),
            "cut {cut}"
        );
    }
    let mut two = bytes.clone();
    two.extend(message(2, &[0x42, 0x00]));
    let Ok(Frame::Message {
        message: msg,
        consumed,
    }) = decode_request(&two, &limits())
    else {
        panic!()
    };
    assert_eq!((msg.msgid, consumed), (1, bytes.len()));
}

#[test]
fn an_oversized_length_is_refused_before_its_bytes_arrive() {
    // 30 84 7f ff ff ff: a 2 GiB message announced in six bytes.
    let err = decode_request(&[0x30, 0x84, 0x7f, 0xff, 0xff, 0xff], &limits());
    assert!(
        matches!(
            err,
            Err(FrameError::TooLarge {
                declared: 0x8000_0005,
                max: 1024
            })
        ),
        "{err:?}"
    );
    let err = decode_request(&[0x30, 0x82, 0x04, 0x00], &limits());
    assert!(
        matches!(err, Err(FrameError::TooLarge { .. })),
        "1028 bytes in all: {err:?}"
    );
    assert_eq!(
        decode_request(&[0x30, 0x82, 0x03, 0xfc], &limits()).ok(),
        Some(Frame::Incomplete)
    );
}

#[test]
fn indefinite_and_long_lengths_are_refused() {
    let err = decode_request(&[0x30, 0x80, 0x02, 0x01, 0x01], &limits());
    assert!(
        matches!(err, Err(FrameError::IndefiniteLength { offset: 1 })),
        "{err:?}"
    );
    let err = decode_request(&[0x30, 0x85, 0, 0, 0, 0, 5], &limits());
    assert!(
        matches!(err, Err(FrameError::LengthTooLong { octets: 5, .. })),
        "{err:?}"
    );
    // Inside the message: a bind whose name has an indefinite length.
    let bytes = message(1, &[0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x80, 0x80, 0x00]);
    assert!(matches!(
        decode_request(&bytes, &limits()),
        Err(FrameError::IndefiniteLength { .. })
    ));
    // A long-form length of 4 octets is fine (non-minimal lengths are BER).
    let mut long = vec![0x30, 0x84, 0, 0, 0, 5];
    long.extend([0x02, 0x01, 0x01, 0x42, 0x00]);
    assert!(matches!(
        decode_request(&long, &limits()),
        Ok(Frame::Message { consumed: 11, .. })
    ));
}

#[test]
fn elements_overrunning_their_parent_and_bad_tags_are_refused() {
    // The bind's version claims 6 bytes where the bind has 5 left.
    let bytes = message(1, &[0x60, 0x07, 0x02, 0x06, 0x03, 0x04, 0x00, 0x80, 0x00]);
    assert!(matches!(
        decode_request(&bytes, &limits()),
        Err(FrameError::Overrun { .. })
    ));
    assert!(matches!(
        decode_request(&[0x31, 0x00], &limits()),
        Err(FrameError::NotASequence { tag: 0x31 })
    ));
    let bytes = message(1, &[0x7f, 0x01, 0x00]);
    assert!(matches!(
        decode_request(&bytes, &limits()),
        Err(FrameError::HighTagNumber { .. })
    ));
}

#[test]
fn deep_nesting_is_refused_by_the_prescan_and_answered() {
    // LDAPMessage (1) > SearchRequest (2) > filter NOTs from depth 3: six of them reach 8.
    let ok = message(5, &search(&nested_not(7)));
    assert!(matches!(
        decode_request(&ok, &limits()),
        Ok(Frame::Message { .. })
    ));
    let deep = message(5, &search(&nested_not(8)));
    let err = decode_request(&deep, &limits()).err();
    let Some(err @ FrameError::TooDeep { max: 8, .. }) = err else {
        panic!("{err:?}")
    };
    let envelope = Envelope {
        msgid: 5,
        kind: OpKind::Search,
    };
    assert_eq!(
        err.action(),
        Action::Respond {
            envelope,
            consumed: deep.len()
        }
    );
    let reply = err.server_reply().map(|m| m.op);
    let Some(LdapOp::SearchResultDone(result)) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(result.code, ResultCode::ProtocolError.into());
}

/// A filter far deeper than any stack allows is refused without recursion, and the search
/// it came in is answered.
#[test]
fn a_million_nested_filters_do_not_overflow_the_stack() {
    let n: u32 = 1_000_000;
    let mut bytes = vec![0x30, 0x84];
    bytes.extend((3 + 6 + n * 6).to_be_bytes());
    bytes.extend([0x02, 0x01, 0x01, 0x63, 0x84]);
    bytes.extend((n * 6).to_be_bytes());
    for k in 1..=n {
        bytes.extend([0xa2, 0x84]);
        bytes.extend(((n - k) * 6).to_be_bytes());
    }
    let big = Limits {
        max_message_bytes: usize::MAX,
        max_depth: 64,
        max_elements: usize::MAX,
    };
    let err = decode_request(&bytes, &big).err();
    let envelope = Some(Envelope {
        msgid: 1,
        kind: OpKind::Search,
    });
    assert!(
        matches!(err, Some(FrameError::TooDeep { max: 64, envelope: e, .. }) if e == envelope),
        "{err:?}"
    );
}

/// An OR of n presence items: 1 + n elements of filter in a search of 11 + n in all.
fn or_of(n: usize) -> Vec<u8> {
    let items: Vec<u8> = (0..n).flat_map(|_| [0x87, 0x02, b'c', b'n']).collect();
    let mut filter = vec![0xa1, 0x81, items.len() as u8];
    filter.extend(items);
    let mut op = search(&[]);
    // search() wrote a short length; rebuild with the filter inside and a long one.
    let body_start = 2;
    let mut body = op.split_off(body_start);
    let attrs = body.split_off(body.len() - 2);
    body.extend(filter);
    body.extend(attrs);
    let mut op = vec![0x63, 0x81, body.len() as u8];
    op.extend(body);
    let mut content = vec![0x02, 0x01, 0x09];
    content.extend(op);
    let mut out = vec![0x30, 0x81, content.len() as u8];
    out.extend(content);
    out
}

#[test]
fn element_count_is_bounded_and_the_search_answered() {
    assert!(matches!(
        decode_request(&or_of(53), &limits()),
        Ok(Frame::Message { .. })
    ));
    let bytes = or_of(54);
    let err = decode_request(&bytes, &limits()).err();
    let Some(err @ FrameError::TooManyElements { max: 64, .. }) = err else {
        panic!("{err:?}")
    };
    let envelope = Envelope {
        msgid: 9,
        kind: OpKind::Search,
    };
    assert_eq!(
        err.action(),
        Action::Respond {
            envelope,
            consumed: bytes.len()
        }
    );
}

#[test]
fn message_ids_follow_rfc4511() {
    // 2^31 - 1 is the largest; 2^31 (five octets) is not; nor 0 in a request, nor negative.
    let max = [0x30, 0x08, 0x02, 0x04, 0x7f, 0xff, 0xff, 0xff, 0x42, 0x00];
    let Ok(Frame::Message { message: msg, .. }) = decode_request(&max, &limits()) else {
        panic!()
    };
    assert_eq!(msg.msgid, i32::MAX);
    let over = [
        0x30, 0x09, 0x02, 0x05, 0x00, 0x80, 0x00, 0x00, 0x00, 0x42, 0x00,
    ];
    assert!(matches!(
        decode_request(&over, &limits()),
        Err(FrameError::BadMessageId)
    ));
    assert!(matches!(
        decode_request(&message(0, &[0x42, 0x00]), &limits()),
        Err(FrameError::BadMessageId)
    ));
    let negative = [0x30, 0x05, 0x02, 0x01, 0xff, 0x42, 0x00];
    assert!(matches!(
        decode_request(&negative, &limits()),
        Err(FrameError::BadMessageId)
    ));
    let padded = [0x30, 0x06, 0x02, 0x02, 0x00, 0x01, 0x42, 0x00];
    assert!(matches!(
        decode_request(&padded, &limits()),
        Err(FrameError::BadMessageId)
    ));
}

#[test]
fn unknown_operations_disconnect_with_protocol_error() {
    // [APPLICATION 30]: no such operation.
    let err = decode_request(&message(3, &[0x7e, 0x00]), &limits()).err();
    let Some(
        err @ FrameError::UnknownOperation {
            msgid: 3,
            tag: 0x7e,
        },
    ) = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(err.action(), Action::Disconnect(ResultCode::ProtocolError));
    let reply = err.server_reply();
    let Some(LdapMsg {
        msgid: 0,
        op: LdapOp::ExtendedResponse(notice),
        ..
    }) = reply
    else {
        panic!("{reply:?}")
    };
    assert_eq!(
        notice.name.as_deref(),
        Some(crate::response::OID_NOTICE_OF_DISCONNECTION)
    );
    assert_eq!(notice.res.code, ResultCode::ProtocolError.into());
    // A response sent to a server is not a request.
    let bind_response = [0x61, 0x07, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00];
    let err = decode_request(&message(3, &bind_response), &limits()).err();
    assert!(
        matches!(err, Some(FrameError::UnexpectedOperation { .. })),
        "{err:?}"
    );
}

#[test]
fn a_malformed_request_is_answered_in_its_own_response_type() {
    // A search whose scope is 9: well-formed BER, not a SearchRequest.
    let mut op = search(&[0x87, 0x02, b'c', b'n']);
    op[6] = 9;
    let bytes = message(4, &op);
    let err = decode_request(&bytes, &limits()).err();
    let Some(err @ FrameError::Malformed { .. }) = err else {
        panic!("{err:?}")
    };
    let envelope = Envelope {
        msgid: 4,
        kind: OpKind::Search,
    };
    assert_eq!(
        err.action(),
        Action::Respond {
            envelope,
            consumed: bytes.len()
        }
    );
    // A bind whose version is an OCTET STRING: answered with a BindResponse.
    let bind = [0x60, 0x07, 0x04, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00];
    let err = decode_request(&message(6, &bind), &limits()).err();
    let reply = err.and_then(|e| e.server_reply());
    assert!(
        matches!(
            reply,
            Some(LdapMsg {
                msgid: 6,
                op: LdapOp::BindResponse(_),
                ..
            })
        ),
        "{reply:?}"
    );
    // A malformed Abandon (a nine-octet ID) is dropped; it has no response. So is one whose
    // ID is out of MessageID's range (found by the fuzzer: ldap3_proto truncates it).
    for id in [
        &[1, 2, 3, 4, 5, 6, 7, 8, 9][..],
        &[0x0a, 0xff, 0xfc, 0xff, 0x06, 0x04, 0x00],
        &[0xff],
    ] {
        let mut op = vec![0x50, id.len() as u8];
        op.extend(id);
        let bytes = message(7, &op);
        let err = decode_request(&bytes, &limits()).err();
        let consumed = bytes.len();
        assert_eq!(
            err.map(|e| e.action()),
            Some(Action::Discard { consumed }),
            "{id:?}"
        );
    }
    // A search whose sizeLimit (00 ff ff ff ff) ldap3_proto reads as -1 after truncating it
    // to 32 bits: answered with protocolError.
    let mut op = search(&[0x87, 0x02, b'c', b'n']);
    op.splice(11..13, [0x05, 0x00, 0xff, 0xff, 0xff, 0xff]);
    op[1] += 4;
    let bytes = message(8, &op);
    let err = decode_request(&bytes, &limits()).err();
    assert!(
        matches!(
            err,
            Some(FrameError::OutOfRange {
                field: "sizeLimit",
                ..
            })
        ),
        "{err:?}"
    );
}

#[test]
fn controls_are_the_only_thing_after_the_operation() {
    let mut with_controls = message(1, &[0x42, 0x00]);
    with_controls.extend([0xa0, 0x00]);
    with_controls[1] += 2;
    assert!(matches!(
        decode_request(&with_controls, &limits()),
        Ok(Frame::Message { .. })
    ));
    let mut extra = message(1, &[0x42, 0x00]);
    extra.extend([0x04, 0x00]);
    extra[1] += 2;
    assert!(matches!(
        decode_request(&extra, &limits()),
        Err(FrameError::BadEnvelope)
    ));
}
