//! EAP-TLS / EAP-TTLS framing of TLS data (RFC 5216 §3.1, RFC 5281 §9.2): a flags octet
//! (L: length included, M: more fragments, S: start; TTLS keeps its version in the low
//! three bits), an optional four-octet total length, then a slice of the TLS record
//! stream. A TLS flight larger than one EAP packet is cut into fragments, each
//! acknowledged by an empty message from the other side.
//!
//! Both directions are bounded: [`Reassembler`] refuses a message longer than its limit
//! or than its own declared length, and more fragments than the limit allows, so a
//! hostile peer cannot make the server hold more than one bounded message per
//! conversation.

use crate::EapError;

/// Flag bits of the first data octet.
pub mod flags {
    /// Length included: a four-octet total length follows the flags.
    pub const LENGTH: u8 = 0x80;
    /// More fragments follow.
    pub const MORE: u8 = 0x40;
    /// Start (server's first message of the method).
    pub const START: u8 = 0x20;
    /// TTLS version bits (RFC 5281 §9.1); reserved (zero) in EAP-TLS.
    pub const VERSION: u8 = 0x07;
}

/// One EAP-TLS/TTLS message's data, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsData<'a> {
    /// The flags octet.
    pub flags: u8,
    /// The total length, when the L bit is set.
    pub total: Option<u32>,
    /// This fragment's TLS bytes.
    pub data: &'a [u8],
}

impl<'a> TlsData<'a> {
    /// Parse the type-data of an EAP-TLS/TTLS packet.
    pub fn parse(method_data: &'a [u8]) -> Result<TlsData<'a>, EapError> {
        let (&flags, rest) = method_data.split_first().ok_or(EapError::Truncated)?;
        if flags & flags::LENGTH == 0 {
            return Ok(TlsData {
                flags,
                total: None,
                data: rest,
            });
        }
        if rest.len() < 4 {
            return Err(EapError::Truncated);
        }
        let total = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        Ok(TlsData {
            flags,
            total: Some(total),
            data: &rest[4..],
        })
    }

    /// An acknowledgement: no TLS bytes and neither L nor M.
    pub fn is_ack(&self) -> bool {
        self.data.is_empty() && self.flags & (flags::LENGTH | flags::MORE) == 0
    }
}

/// Collects the fragments of one TLS message from the peer.
#[derive(Debug)]
pub struct Reassembler {
    /// Bytes received so far.
    buf: Vec<u8>,
    /// The total the first fragment declared (L bit), if any.
    expected: Option<usize>,
    /// Fragments received for the message in progress.
    fragments: u32,
    /// Refuse messages longer than this (a certificate chain fits in 64 KiB).
    max_len: usize,
    /// Refuse more fragments than this per message (a peer dribbling one octet at a time
    /// would otherwise hold the conversation for thousands of round trips).
    max_fragments: u32,
}

impl Reassembler {
    /// A reassembler bounded by `max_len` octets and `max_fragments` fragments.
    pub fn new(max_len: usize, max_fragments: u32) -> Reassembler {
        Reassembler {
            buf: Vec::new(),
            expected: None,
            fragments: 0,
            max_len,
            max_fragments,
        }
    }

    /// Whether a message is partly received.
    pub fn in_progress(&self) -> bool {
        self.fragments > 0
    }

    /// The octets of the message in progress received so far.
    pub fn received(&self) -> &[u8] {
        if self.in_progress() { &self.buf } else { &[] }
    }

    /// Add a fragment. `Ok(None)`: more are expected (acknowledge it); `Ok(Some(msg))`:
    /// the message is complete. Errors leave the reassembler empty.
    pub fn push(&mut self, d: &TlsData<'_>) -> Result<Option<Vec<u8>>, EapError> {
        let r = self.push_inner(d);
        if !matches!(r, Ok(None)) {
            self.fragments = 0;
            self.expected = None;
        }
        r
    }

    fn push_inner(&mut self, d: &TlsData<'_>) -> Result<Option<Vec<u8>>, EapError> {
        if let Some(total) = d.total {
            let total = usize::try_from(total).unwrap_or(usize::MAX);
            if total > self.max_len {
                return Err(EapError::TooLong(total));
            }
            match self.expected {
                None if self.fragments == 0 => self.expected = Some(total),
                // Some peers repeat L on every fragment: it must not change.
                Some(e) if e == total => {}
                _ => return Err(EapError::FragmentLength),
            }
        }
        self.fragments += 1;
        if self.fragments > self.max_fragments {
            return Err(EapError::TooManyFragments);
        }
        if self.fragments == 1 {
            self.buf = Vec::with_capacity(self.expected.unwrap_or(d.data.len()));
        }
        let limit = self.expected.unwrap_or(self.max_len);
        if self.buf.len() + d.data.len() > limit {
            return Err(EapError::FragmentLength);
        }
        if d.flags & flags::MORE != 0 && d.data.is_empty() {
            // A fragment must make progress.
            return Err(EapError::FragmentLength);
        }
        self.buf.extend_from_slice(d.data);
        if d.flags & flags::MORE != 0 {
            return Ok(None);
        }
        if let Some(e) = self.expected
            && e != self.buf.len()
        {
            return Err(EapError::FragmentLength);
        }
        Ok(Some(std::mem::take(&mut self.buf)))
    }
}

/// Cuts one outgoing TLS message into fragments of at most `size` TLS octets.
#[derive(Debug)]
pub struct Fragmenter {
    /// The whole message.
    data: Vec<u8>,
    /// How much has been sent.
    sent: usize,
    /// TLS octets per fragment.
    size: usize,
}

impl Fragmenter {
    /// A fragmenter for `data`, `size` TLS octets per fragment (at least 1).
    pub fn new(data: Vec<u8>, size: usize) -> Fragmenter {
        Fragmenter {
            data,
            sent: 0,
            size: size.max(1),
        }
    }

    /// Whether fragments remain to be sent.
    pub fn pending(&self) -> bool {
        self.sent < self.data.len()
    }

    /// The next fragment's type-data (flags, length when fragmented, bytes), with
    /// `extra_flags` (TTLS version bits) or'ed in; `None` when all is sent.
    pub fn next_fragment(&mut self, extra_flags: u8) -> Option<Vec<u8>> {
        if !self.pending() {
            return None;
        }
        let total = self.data.len();
        let end = (self.sent + self.size).min(total);
        let first = self.sent == 0;
        let more = end < total;
        let mut f = extra_flags;
        if more {
            f |= flags::MORE;
        }
        // RFC 5216 §3.1: L is set on the first fragment of a fragmented message.
        let with_len = first && more;
        if with_len {
            f |= flags::LENGTH;
        }
        let mut out = Vec::with_capacity(1 + 4 + end - self.sent);
        out.push(f);
        if with_len {
            // The message is bounded far below 4 GiB by the RADIUS path.
            out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
        }
        out.extend_from_slice(&self.data[self.sent..end]);
        self.sent = end;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reassemble(frags: &[Vec<u8>]) -> Result<Vec<u8>, EapError> {
        let mut r = Reassembler::new(1 << 16, 64);
        for (i, f) in frags.iter().enumerate() {
            let d = TlsData::parse(f)?;
            match r.push(&d)? {
                Some(m) => {
                    assert_eq!(i, frags.len() - 1, "completed early");
                    return Ok(m);
                }
                None => assert!(r.in_progress()),
            }
        }
        Err(EapError::Truncated)
    }

    #[test]
    fn fragments_reassemble_for_every_size() {
        let msg: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        for size in [1usize, 2, 100, 999, 1000, 2999, 3000, 5000] {
            let mut f = Fragmenter::new(msg.clone(), size);
            let mut frags = Vec::new();
            while let Some(x) = f.next_fragment(0) {
                frags.push(x);
            }
            if size >= 3000 {
                assert_eq!(frags.len(), 1);
                assert_eq!(frags[0][0], 0, "unfragmented: no L, no M");
            } else {
                assert_eq!(frags[0][0] & flags::LENGTH, flags::LENGTH);
                assert!(frags[1..].iter().all(|x| x[0] & flags::LENGTH == 0));
            }
            if size >= 100 {
                assert_eq!(reassemble(&frags).unwrap(), msg, "size {size}");
            }
        }
    }

    #[test]
    fn hostile_fragments_are_refused() {
        let mut r = Reassembler::new(100, 3);
        // Declared length over the limit.
        let big = [flags::LENGTH | flags::MORE, 0, 0, 1, 0, 1];
        assert_eq!(
            r.push(&TlsData::parse(&big).unwrap()),
            Err(EapError::TooLong(256))
        );
        // More bytes than declared.
        let first = [flags::LENGTH | flags::MORE, 0, 0, 0, 1, 1, 2];
        assert_eq!(
            r.push(&TlsData::parse(&first).unwrap()),
            Err(EapError::FragmentLength)
        );
        // Fewer bytes than declared at the last fragment.
        let first = [flags::LENGTH | flags::MORE, 0, 0, 0, 9, 1, 2];
        assert_eq!(r.push(&TlsData::parse(&first).unwrap()), Ok(None));
        assert_eq!(
            r.push(&TlsData::parse(&[0, 3]).unwrap()),
            Err(EapError::FragmentLength)
        );
        // Endless fragments.
        for _ in 0..3 {
            assert_eq!(
                r.push(&TlsData::parse(&[flags::MORE, 1]).unwrap()),
                Ok(None)
            );
        }
        assert_eq!(
            r.push(&TlsData::parse(&[flags::MORE, 1]).unwrap()),
            Err(EapError::TooManyFragments)
        );
        // A changed length on a later fragment.
        assert_eq!(
            r.push(&TlsData::parse(&[0xC0, 0, 0, 0, 4, 1]).unwrap()),
            Ok(None)
        );
        assert_eq!(
            r.push(&TlsData::parse(&[0xC0, 0, 0, 0, 5, 1]).unwrap()),
            Err(EapError::FragmentLength)
        );
        // Empty "more" fragments make no progress.
        assert_eq!(
            r.push(&TlsData::parse(&[flags::MORE]).unwrap()),
            Err(EapError::FragmentLength)
        );
        assert_eq!(
            TlsData::parse(&[flags::LENGTH, 0, 0]),
            Err(EapError::Truncated)
        );
        assert_eq!(TlsData::parse(&[]), Err(EapError::Truncated));
    }
}
