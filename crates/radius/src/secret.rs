//! A shared secret with its HMAC-MD5 key schedule done once ([`Secret`]).
//!
//! Every Message-Authenticator (RFC 3579 §3.2) is an HMAC-MD5 keyed with the NAS's
//! secret, and an HMAC starts by hashing one block of key ⊕ ipad and one of key ⊕ opad:
//! two of the four MD5 compressions of a small packet's HMAC, and a round trip has two
//! (the request's check, the reply's). A server checks and signs with the same few
//! secrets all day, so [`Secret`] hashes those two blocks once, when the secret is
//! loaded, and each HMAC starts from copies of the two states (RFC 2104 §4 suggests
//! exactly this).
//!
//! Those two states are as good as the key for forging HMACs, so they are treated like
//! it: never printed, and overwritten (the MD5 initial value) when the [`Secret`] is
//! dropped, as its bytes are wiped.

use md5::Digest;
use md5::digest::core_api::{Block, CoreWrapper, Reset, UpdateCore};
use md5::{Md5, Md5Core};
use zeroize::{Zeroize, Zeroizing};

/// HMAC block size of MD5 (RFC 2104's B).
const BLOCK: usize = 64;

/// A RADIUS shared secret: its bytes (MD5-keyed uses: User-Password hiding, Response and
/// Request Authenticators, MS-MPPE keys) and its HMAC-MD5 key schedule.
#[derive(Clone)]
pub struct Secret {
    /// The secret as configured.
    raw: Zeroizing<Vec<u8>>,
    /// MD5 state after the block key ⊕ ipad.
    inner: Md5Core,
    /// MD5 state after the block key ⊕ opad.
    outer: Md5Core,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl Secret {
    /// Take a secret and do its key schedule.
    pub fn new(raw: &[u8]) -> Secret {
        // RFC 2104 §2: a key longer than the block is hashed first; shorter ones are
        // padded with zeros.
        let mut key = Zeroizing::new([0u8; BLOCK]);
        if raw.len() > BLOCK {
            let mut digest = Md5::digest(raw);
            key[..digest.len()].copy_from_slice(&digest);
            digest.as_mut_slice().zeroize();
        } else {
            key[..raw.len()].copy_from_slice(raw);
        }
        let state_after = |pad: u8| {
            let mut block = Block::<Md5Core>::default();
            for (b, k) in block.iter_mut().zip(key.iter()) {
                *b = k ^ pad;
            }
            let mut core = Md5Core::default();
            core.update_blocks(std::slice::from_ref(&block));
            block.as_mut_slice().zeroize();
            core
        };
        Secret {
            inner: state_after(0x36),
            outer: state_after(0x5c),
            raw: Zeroizing::new(raw.to_vec()),
        }
    }

    /// The secret's bytes.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// A new HMAC-MD5 keyed with this secret.
    pub(crate) fn hmac(&self) -> HmacMd5<'_> {
        HmacMd5 {
            inner: CoreWrapper::from_core(self.inner.clone()),
            outer: &self.outer,
        }
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.inner.reset();
        self.outer.reset();
        // Keep the overwrites: the states are read (as far as the optimiser knows).
        std::hint::black_box(&mut self.inner);
        std::hint::black_box(&mut self.outer);
    }
}

/// One HMAC-MD5 computation, started from a [`Secret`]'s key schedule.
pub(crate) struct HmacMd5<'a> {
    /// The inner hash, already past key ⊕ ipad.
    inner: Md5,
    /// The outer state, copied when the inner hash is done.
    outer: &'a Md5Core,
}

impl HmacMd5<'_> {
    /// Feed message octets.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    /// The MAC: MD5(key ⊕ opad ‖ MD5(key ⊕ ipad ‖ message)).
    pub(crate) fn finalize(self) -> [u8; 16] {
        let inner = self.inner.finalize();
        let mut outer = CoreWrapper::from_core(self.outer.clone());
        outer.update(inner);
        outer.finalize().into()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use hmac::{Hmac, Mac};

    fn reference(key: &[u8], msg: &[u8]) -> [u8; 16] {
        let mut mac = <Hmac<Md5> as Mac>::new_from_slice(key).unwrap();
        mac.update(msg);
        mac.finalize().into_bytes().into()
    }

    fn ours(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
        let secret = Secret::new(key);
        let mut mac = secret.hmac();
        for p in parts {
            mac.update(p);
        }
        mac.finalize()
    }

    #[test]
    fn rfc_2202_vectors() {
        // RFC 2202 §2, test cases 1, 2 and 6 (a key longer than the block).
        assert_eq!(
            ours(&[0x0b; 16], &[b"Hi There"]),
            *b"\x92\x94\x72\x7a\x36\x38\xbb\x1c\x13\xf4\x8e\xf8\x15\x8b\xfc\x9d"
        );
        assert_eq!(
            ours(b"Jefe", &[b"what do ya want ", b"for nothing?"]),
            *b"\x75\x0c\x78\x3e\x6a\xb0\xb5\x03\xea\xa8\x6e\x31\x0a\x5d\xb7\x38"
        );
        assert_eq!(
            ours(
                &[0xaa; 80],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            ),
            *b"\x6b\x1a\xb7\xfe\x4b\xd7\xbf\x8f\x0b\x62\xe6\xce\x61\xb9\xd0\xcd"
        );
    }

    #[test]
    fn matches_the_hmac_crate_for_every_key_and_message_length_around_the_block() {
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for key_len in [0, 1, 6, 16, 55, 63, 64, 65, 128, 200] {
            let key = &bytes[..key_len];
            for msg_len in [0, 1, 20, 55, 56, 63, 64, 65, 119, 120, 128, 299] {
                let msg = &bytes[1..=msg_len];
                let (a, b) = msg.split_at(msg_len / 3);
                assert_eq!(
                    ours(key, &[a, b]),
                    reference(key, msg),
                    "key {key_len}, message {msg_len}"
                );
            }
        }
    }

    #[test]
    fn a_secret_is_reusable_and_never_printed() {
        let s = Secret::new(b"testing123");
        let first = {
            let mut m = s.hmac();
            m.update(b"one");
            m.finalize()
        };
        let copy = s.clone();
        let mut m = copy.hmac();
        m.update(b"one");
        assert_eq!(
            m.finalize(),
            first,
            "a computation leaves the schedule as it was"
        );
        assert_eq!(first, reference(b"testing123", b"one"));
        assert_eq!(s.raw(), b"testing123");
        assert!(!format!("{s:?}").contains("testing"));
    }
}
