//! Fuzz EAP-TLS/TTLS fragment reassembly (issue 25, crates/eap/src/fragment.rs): a
//! sequence of fragments, cut from the input, is fed to one `Reassembler` with small
//! limits, as a hostile peer would send them one round trip at a time. It must never hold
//! more than its `max_len`, never return a message longer than its own limit or the
//! length the first fragment declared, and must return exactly the octets it was given.
//! Then a `Fragmenter`'s output for a message and fragment size from the input must
//! reassemble to that message, in a fresh reassembler and in the used one.
//!
//! Input: `max_len/4`, `max_fragments`, fragment size, TTLS version bits, then fragments
//! as a length octet followed by that many octets of EAP-TLS type-data (flags, optional
//! four-octet length, TLS bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_eap::fragment::{Fragmenter, Reassembler, TlsData, flags};

/// Octets the reassembler holds, read from its `Debug` form (`buf: [..]`): the type keeps
/// its buffer private, and this target must not need an accessor in the crate.
fn held(r: &Reassembler) -> usize {
    let s = format!("{r:?}");
    let start = s
        .find("buf: [")
        .unwrap_or_else(|| panic!("Reassembler's Debug has no `buf: [`; update this target: {s}"))
        + "buf: [".len();
    let end = start
        + s[start..]
            .find(']')
            .unwrap_or_else(|| panic!("unterminated buf in {s}"));
    let inner = &s[start..end];
    if inner.is_empty() {
        0
    } else {
        inner.split(", ").count()
    }
}

/// The fragments of `msg` at `size` octets each, as a sender would produce them.
fn fragments(msg: &[u8], size: usize, version: u8) -> Vec<Vec<u8>> {
    let mut f = Fragmenter::new(msg.to_vec(), size);
    let mut out = Vec::new();
    while let Some(x) = f.next_fragment(version) {
        out.push(x);
        assert!(
            out.len() <= msg.len(),
            "a fragmenter that makes no progress"
        );
    }
    assert!(!f.pending());
    out
}

/// Feed a Fragmenter's output; it must complete exactly at the last fragment.
fn reassemble(r: &mut Reassembler, frags: &[Vec<u8>], msg: &[u8], size: usize) {
    for (i, f) in frags.iter().enumerate() {
        let d = TlsData::parse(f).unwrap_or_else(|e| panic!("our own fragment: {e}"));
        let last = i + 1 == frags.len();
        assert!(d.data.len() <= size.max(1), "fragment over its size");
        assert_eq!(d.flags & flags::MORE == 0, last, "M flag on fragment {i}");
        assert_eq!(
            d.total.is_some(),
            i == 0 && frags.len() > 1,
            "L on the first fragment of a fragmented message only"
        );
        match r.push(&d) {
            Ok(Some(m)) => {
                assert!(last, "completed at fragment {i} of {}", frags.len());
                assert_eq!(m, msg, "reassembled a different message");
            }
            Ok(None) => assert!(!last, "the last fragment did not complete"),
            Err(e) => panic!("a valid fragment sequence refused at {i}: {e}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let max_len = usize::from(data[0]) * 4;
    let max_fragments = u32::from(data[1] % 16) + 1;
    let size = usize::from(data[2]);
    let version = data[3] & flags::VERSION;
    let mut rest = &data[4..];

    let mut r = Reassembler::new(max_len, max_fragments);
    // What this message's accepted fragments carried, and the length its first declared.
    let mut model: Vec<u8> = Vec::new();
    let mut declared: Option<u32> = None;
    let mut pushed = 0u32;
    while let Some((&n, tail)) = rest.split_first() {
        let n = usize::from(n).min(tail.len());
        let (frag, tail) = tail.split_at(n);
        rest = tail;
        let Ok(d) = TlsData::parse(frag) else {
            continue;
        };
        if !r.in_progress() {
            model.clear();
            declared = None;
            pushed = 0;
        }
        if declared.is_none() && pushed == 0 {
            declared = d.total;
        }
        pushed += 1;
        match r.push(&d) {
            Ok(None) => {
                model.extend_from_slice(d.data);
                assert!(r.in_progress());
                assert!(
                    pushed <= max_fragments,
                    "{pushed} fragments over {max_fragments}"
                );
                assert!(
                    model.len() <= max_len,
                    "holds {} over {max_len}",
                    model.len()
                );
                if let Some(t) = declared {
                    assert!(model.len() as u64 <= u64::from(t));
                }
            }
            Ok(Some(m)) => {
                model.extend_from_slice(d.data);
                assert!(!r.in_progress());
                assert_eq!(m, model, "returned octets other than those received");
                assert!(m.len() <= max_len, "returned {} over {max_len}", m.len());
                if let Some(t) = declared {
                    assert_eq!(m.len() as u64, u64::from(t), "not the declared length");
                }
                assert!(pushed <= max_fragments);
            }
            Err(_) => assert!(!r.in_progress(), "an error left a message in progress"),
        }
        assert!(held(&r) <= max_len, "holds {} over {max_len}", held(&r));
    }

    // A Fragmenter's output reassembles, for a message and size from the input.
    let msg = &data[4..];
    let frags = fragments(msg, size, version);
    assert_eq!(frags.len(), msg.len().div_ceil(size.max(1)));
    let mut fresh = Reassembler::new(msg.len(), u32::try_from(frags.len()).unwrap_or(u32::MAX));
    reassemble(&mut fresh, &frags, msg, size);
    // The hostile sequence must not spoil the reassembler for the next valid message.
    if !r.in_progress() && msg.len() <= max_len && frags.len() <= max_fragments as usize {
        reassemble(&mut r, &frags, msg, size);
    }
});
