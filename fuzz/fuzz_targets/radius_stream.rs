//! Fuzz the RadSec framing (issue 28) as the RadSec door uses it: an untrusted TLS stream
//! cut into packets by their Length field, delivered in reads of any size, each packet
//! then parsed. Any panic is a bug; so is a cut that depends on how the octets arrived,
//! a packet outside 20..=4096 octets, or a buffer that holds more than one packet plus
//! one read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_radius::{Deframer, MAX_PACKET, Packet};

fn cut(stream: &[u8], chunk: usize) -> (Vec<Vec<u8>>, bool) {
    let mut d = Deframer::new();
    let mut out = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let n = chunk.min(rest.len()).min(d.want());
        d.push(&rest[..n]);
        rest = &rest[n..];
        assert!(d.pending() <= MAX_PACKET, "buffer grew past one packet");
        loop {
            match d.next_packet() {
                Ok(Some(p)) => {
                    assert!((20..=MAX_PACKET).contains(&p.len()));
                    let _ = Packet::parse(&p);
                    out.push(p);
                }
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, stream)) = data.split_first() else {
        return;
    };
    let whole = cut(stream, usize::MAX);
    let pieces = cut(stream, usize::from(first).max(1));
    assert_eq!(whole, pieces, "the cut depends on the read sizes");
    let taken: usize = whole.0.iter().map(Vec::len).sum();
    assert_eq!(&stream[..taken], whole.0.concat().as_slice());
});
