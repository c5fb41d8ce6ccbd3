//! Fuzz the EAP codec of issue 25 (crates/eap) with what the RADIUS door does to the
//! EAP-Message attributes of an untrusted Access-Request: join them (any chunking), parse
//! the EAP packet, the EAP-TLS/TTLS framing of its type-data, and the TTLS phase-2 AVPs,
//! and read hello randoms out of TLS bytes. Whatever parses is encoded again and must
//! parse to the same fields; nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_eap::fragment::{TlsData, flags};
use portcullis_eap::packet::{self, Code, HEADER, Packet};
use portcullis_eap::{EapError, avp, hello, method, radius};

/// `data` cut into chunks of 0..=253 octets whose lengths come from the input's own
/// bytes, read from the end (so the seeds stay plain EAP packets).
fn chunks(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < data.len() && i <= 2 * data.len() {
        let n = usize::from(data[data.len() - 1 - i % data.len()]) % (radius::ATTRIBUTE_VALUE + 1);
        let end = (pos + n).min(data.len());
        out.push(&data[pos..end]);
        pos = end;
        i += 1;
    }
    out.extend(data[pos..].chunks(radius::ATTRIBUTE_VALUE));
    out
}

fn check_join(data: &[u8]) {
    let parts = chunks(data);
    assert!(parts.iter().all(|p| p.len() <= radius::ATTRIBUTE_VALUE));
    // A limit below, at and above the input's length.
    let below = data
        .len()
        .saturating_sub(1 + data.first().map_or(0, |b| usize::from(*b)));
    for max in [below, data.len(), data.len() + 253] {
        match radius::join(parts.iter().copied(), max) {
            Ok(joined) => {
                assert!(
                    data.len() <= max,
                    "join let {} octets past {max}",
                    data.len()
                );
                assert_eq!(joined, data, "join changed the octets");
            }
            Err(EapError::TooLong(n)) => {
                assert!(data.len() > max && n > max, "join refused {n} under {max}");
            }
            Err(e) => panic!("join: unexpected error {e:?}"),
        }
    }
    // split: attribute-sized, non-empty, and joins back.
    let split: Vec<&[u8]> = radius::split(data).collect();
    assert!(
        split
            .iter()
            .all(|p| !p.is_empty() && p.len() <= radius::ATTRIBUTE_VALUE)
    );
    assert_eq!(split.len(), data.len().div_ceil(radius::ATTRIBUTE_VALUE));
    assert_eq!(radius::join(split, data.len()).as_deref(), Ok(data));
}

fn check_packet(data: &[u8]) {
    let Ok(p) = Packet::parse(data) else {
        return;
    };
    assert_eq!(
        usize::from(u16::from_be_bytes([data[2], data[3]])),
        data.len()
    );
    match (p.code, p.method) {
        (Code::Request | Code::Response, Some(m)) => {
            assert_eq!(p.data.len() + HEADER + 1, data.len());
            let wire = packet::encode(p.code, p.identifier, m, p.data)
                .unwrap_or_else(|e| panic!("re-encoding a parsed packet: {e}"));
            assert_eq!(wire, data, "encode(parse(x)) != x");
            assert_eq!(Packet::parse(&wire), Ok(p));
            if m == method::TLS || m == method::TTLS {
                check_tls(p.data);
                if let Ok(d) = TlsData::parse(p.data) {
                    check_avps(d.data);
                }
            }
        }
        (Code::Success | Code::Failure, None) => {
            assert_eq!(p.data.len() + HEADER, data.len());
            if p.data.is_empty() {
                let wire = if p.code == Code::Success {
                    packet::success(p.identifier)
                } else {
                    packet::failure(p.identifier)
                };
                assert_eq!(wire, data);
            }
        }
        other => panic!("inconsistent code and type: {other:?}"),
    }
}

fn check_tls(data: &[u8]) {
    let Ok(d) = TlsData::parse(data) else {
        assert!(data.is_empty() || (data[0] & flags::LENGTH != 0 && data.len() < 5));
        return;
    };
    assert_eq!(d.flags, data[0]);
    assert_eq!(d.total.is_some(), d.flags & flags::LENGTH != 0);
    let mut wire = vec![d.flags];
    if let Some(t) = d.total {
        wire.extend_from_slice(&t.to_be_bytes());
    }
    wire.extend_from_slice(d.data);
    assert_eq!(wire, data, "TLS framing does not re-encode to its input");
    assert_eq!(TlsData::parse(&wire), Ok(d));
    if d.is_ack() {
        assert!(d.data.is_empty() && d.total.is_none());
    }
}

fn check_avps(data: &[u8]) {
    let Ok(avps) = avp::parse(data, 32) else {
        return;
    };
    assert!(avps.len() <= 32);
    let mut wire = Vec::new();
    for a in &avps {
        assert_eq!(a.vendor.is_some(), a.flags & avp::flags::VENDOR != 0);
        avp::encode(&mut wire, a.code, a.vendor, a.mandatory(), a.data);
    }
    assert_eq!(wire.len() % 4, 0);
    // Padding is restored, so the encoding is at least as long as what parsed.
    assert!(wire.len() >= data.len() && wire.len() <= data.len() + 3);
    let back = avp::parse(&wire, 32).unwrap_or_else(|e| panic!("re-encoded AVPs: {e}"));
    assert_eq!(back.len(), avps.len());
    for (a, b) in avps.iter().zip(&back) {
        assert_eq!(
            (a.code, a.vendor, a.data, a.mandatory()),
            (b.code, b.vendor, b.data, b.mandatory())
        );
        assert_eq!(b.flags & !(avp::flags::VENDOR | avp::flags::MANDATORY), 0);
    }
}

fuzz_target!(|data: &[u8]| {
    check_join(data);
    check_packet(data);
    check_tls(data);
    check_avps(data);
    for h in [hello::CLIENT_HELLO, hello::SERVER_HELLO] {
        if let Some(r) = hello::random(data, h) {
            assert_eq!(&r[..], &data[11..43]);
        }
    }
});
