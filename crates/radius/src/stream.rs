//! RADIUS over a byte stream (RFC 6613 §2.1, RFC 6614 §2.1: RADIUS/TCP and RADIUS/TLS):
//! packets follow one another with no framing of their own, so the packet's Length field
//! is the frame length. [`Deframer`] cuts a stream into packets as octets arrive; it is
//! pure (the caller does the reading), so the server's RadSec door, the lab's client and
//! the fuzzer share it.
//!
//! RFC 6613 §2.6.4: a Length below 20 or above the largest packet cannot be resynchronised
//! (there is no delimiter to find the next packet by), so it is an error for the whole
//! stream and the caller closes the connection. The buffer never holds more than one
//! packet plus what one read delivered, so a peer cannot make it grow by sending a large
//! Length and then trickling octets: the Length is judged from the first four octets.

use thiserror::Error;

use crate::packet::{MAX_PACKET, MIN_PACKET};

/// The stream cannot be cut into packets: close the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum StreamError {
    /// A packet header whose Length is outside `MIN_PACKET..=max`.
    #[error("RADIUS stream: packet Length {0} is outside 20..={1}")]
    BadLength(usize, usize),
}

/// Cuts a RADIUS byte stream into packets.
#[derive(Debug, Clone)]
pub struct Deframer {
    /// Octets received and not yet returned as a packet.
    buf: Vec<u8>,
    /// Largest packet accepted (4096, RFC 2865 §3).
    max: usize,
}

impl Default for Deframer {
    fn default() -> Self {
        Deframer::new()
    }
}

impl Deframer {
    /// A deframer for packets of at most [`MAX_PACKET`] octets.
    pub fn new() -> Deframer {
        Deframer {
            buf: Vec::new(),
            max: MAX_PACKET,
        }
    }

    /// Append octets read from the stream.
    pub fn push(&mut self, octets: &[u8]) {
        self.buf.extend_from_slice(octets);
    }

    /// The next whole packet, if one has arrived; `Ok(None)`: read more. After an error
    /// every later call fails the same way (the stream is lost).
    pub fn next_packet(&mut self) -> Result<Option<Vec<u8>>, StreamError> {
        let Some(header) = self.buf.get(..4) else {
            return Ok(None);
        };
        let length = usize::from(u16::from_be_bytes([header[2], header[3]]));
        if !(MIN_PACKET..=self.max).contains(&length) {
            return Err(StreamError::BadLength(length, self.max));
        }
        if self.buf.len() < length {
            return Ok(None);
        }
        let rest = self.buf.split_off(length);
        Ok(Some(std::mem::replace(&mut self.buf, rest)))
    }

    /// Octets held that do not yet make a whole packet (a peer that stops mid-packet
    /// leaves these behind).
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The most octets a caller should read before asking for packets again, so the
    /// buffer stays within one packet plus one read: the rest of the current packet,
    /// or a header's worth when none has started.
    pub fn want(&self) -> usize {
        match self.buf.get(..4) {
            Some(h) => {
                let length = usize::from(u16::from_be_bytes([h[2], h[3]]));
                length
                    .clamp(MIN_PACKET, self.max)
                    .saturating_sub(self.buf.len())
                    .max(1)
            }
            None => 4 - self.buf.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(id: u8, len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 1;
        p[1] = id;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p
    }

    #[test]
    fn issue_28_cuts_packets_however_the_octets_arrive() {
        let stream: Vec<u8> = [packet(1, 20), packet(2, 300), packet(3, 4096)].concat();
        for chunk in [1, 3, 7, 20, 299, 5000] {
            let mut d = Deframer::new();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                d.push(piece);
                while let Some(p) = d.next_packet().unwrap() {
                    got.push(p);
                }
            }
            let ids: Vec<(u8, usize)> = got.iter().map(|p| (p[1], p.len())).collect();
            assert_eq!(ids, vec![(1, 20), (2, 300), (3, 4096)], "chunk {chunk}");
            assert_eq!(d.pending(), 0);
        }
    }

    #[test]
    fn issue_28_a_bad_length_loses_the_stream() {
        for bad in [0usize, 19, 4097, 65535] {
            let mut d = Deframer::new();
            let mut p = packet(9, 20);
            p[2..4].copy_from_slice(&(bad as u16).to_be_bytes());
            d.push(&p);
            assert_eq!(d.next_packet(), Err(StreamError::BadLength(bad, 4096)));
            assert!(d.next_packet().is_err(), "stays failed");
        }
    }

    #[test]
    fn issue_28_want_never_asks_past_the_current_packet() {
        let mut d = Deframer::new();
        assert_eq!(d.want(), 4);
        d.push(&[1, 2]);
        assert_eq!(d.want(), 2);
        d.push(&[0, 100]);
        assert_eq!(d.want(), 96);
        d.push(&[0; 96]);
        assert_eq!(
            d.want(),
            1,
            "a whole packet is waiting: ask for packets first"
        );
        assert_eq!(d.next_packet().unwrap().map(|p| p.len()), Some(100));
        assert_eq!(d.want(), 4);
    }
}
