//! MS-MPPE-Send-Key and MS-MPPE-Recv-Key (RFC 2548 §2.4.2, §2.4.3): how a RADIUS server
//! hands the keys of an EAP method to the NAS inside Microsoft Vendor-Specific attributes,
//! hidden with the shared secret, the Request Authenticator and a per-attribute salt.
//!
//! P = key length (1 octet) ‖ key ‖ zero padding to a multiple of 16;
//! b(1) = MD5(secret ‖ Request Authenticator ‖ salt), c(1) = p(1) ⊕ b(1);
//! b(i) = MD5(secret ‖ c(i-1)), c(i) = p(i) ⊕ b(i).

use md5::{Digest, Md5};

use crate::packet::attr::VENDOR_MICROSOFT;

/// Vendor type of MS-MPPE-Send-Key.
pub const MS_MPPE_SEND_KEY: u8 = 16;
/// Vendor type of MS-MPPE-Recv-Key.
pub const MS_MPPE_RECV_KEY: u8 = 17;

/// Longest key these attributes carry (the MSK halves are 32 octets).
pub const MAX_KEY: usize = 64;

/// Why a hidden key could not be recovered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MppeError {
    /// Not a Microsoft MPPE key attribute of the expected shape.
    #[error("malformed MS-MPPE key attribute")]
    Malformed,
    /// The salt's high bit is clear (RFC 2548 requires it set).
    #[error("MS-MPPE key salt without its high bit")]
    Salt,
}

fn hide_in_place(
    data: &mut [u8],
    secret: &[u8],
    authenticator: &[u8; 16],
    salt: [u8; 2],
    decrypt: bool,
) {
    let mut prev: Vec<u8> = [authenticator.as_slice(), &salt].concat();
    for block in data.chunks_mut(16) {
        let b = Md5::new()
            .chain_update(secret)
            .chain_update(&prev)
            .finalize();
        let cipher_in: Vec<u8> = block.to_vec();
        for (x, k) in block.iter_mut().zip(b.iter()) {
            *x ^= k;
        }
        prev = if decrypt { cipher_in } else { block.to_vec() };
    }
}

/// The Vendor-Specific value (vendor 311, `vendor_type`, salt, hidden key) for `key`.
/// `salt` must be unique per attribute within a reply; its high bit is set here.
pub fn encode_key_attribute(
    vendor_type: u8,
    key: &[u8],
    secret: &[u8],
    request_authenticator: &[u8; 16],
    salt: [u8; 2],
) -> Vec<u8> {
    let salt = [salt[0] | 0x80, salt[1]];
    let key = &key[..key.len().min(MAX_KEY)];
    let mut p = Vec::with_capacity(1 + key.len() + 16);
    // key.len() <= 64 by the cut above.
    p.push(key.len() as u8);
    p.extend_from_slice(key);
    p.resize(p.len().next_multiple_of(16), 0);
    hide_in_place(&mut p, secret, request_authenticator, salt, false);
    let mut v = Vec::with_capacity(6 + 2 + 2 + p.len());
    v.extend_from_slice(&VENDOR_MICROSOFT.to_be_bytes());
    v.push(vendor_type);
    // 2 + 2 + at most 80 octets.
    v.push((2 + 2 + p.len()) as u8);
    v.extend_from_slice(&salt);
    v.extend_from_slice(&p);
    v
}

/// Recover the key of an MS-MPPE key Vendor-Specific value (a NAS's or a test's side).
/// Returns the vendor type and the key.
pub fn decode_key_attribute(
    value: &[u8],
    secret: &[u8],
    request_authenticator: &[u8; 16],
) -> Result<(u8, Vec<u8>), MppeError> {
    if value.len() < 4 + 2 + 2 + 16 || value[..4] != VENDOR_MICROSOFT.to_be_bytes() {
        return Err(MppeError::Malformed);
    }
    let vendor_type = value[4];
    let vlen = usize::from(value[5]);
    if vlen != value.len() - 4 || (vlen - 4) % 16 != 0 {
        return Err(MppeError::Malformed);
    }
    let salt = [value[6], value[7]];
    if salt[0] & 0x80 == 0 {
        return Err(MppeError::Salt);
    }
    let mut p = value[8..].to_vec();
    hide_in_place(&mut p, secret, request_authenticator, salt, true);
    let n = usize::from(p[0]);
    if n + 1 > p.len() {
        return Err(MppeError::Malformed);
    }
    Ok((vendor_type, p[1..=n].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hides_and_recovers_keys_of_every_length() {
        let auth = [7u8; 16];
        for len in [0usize, 1, 15, 16, 31, 32, 47, 64] {
            let key: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
            let v = encode_key_attribute(MS_MPPE_RECV_KEY, &key, b"s3cret", &auth, [1, 2]);
            assert_eq!(v[6] & 0x80, 0x80, "salt high bit");
            assert_eq!((v.len() - 8) % 16, 0);
            let (t, back) = decode_key_attribute(&v, b"s3cret", &auth).unwrap();
            assert_eq!((t, back), (MS_MPPE_RECV_KEY, key.clone()));
            let other = decode_key_attribute(&v, b"other", &auth);
            assert!(other.map_or(true, |(_, k)| k != key) || key.is_empty());
        }
        assert_eq!(
            decode_key_attribute(&[0; 10], b"s", &auth),
            Err(MppeError::Malformed)
        );
    }

    #[test]
    fn the_first_block_follows_rfc_2548() {
        // b(1) = MD5(secret || RA || salt): the first hidden octet is the length xor b(1)[0].
        let auth = [3u8; 16];
        let v = encode_key_attribute(MS_MPPE_SEND_KEY, &[0u8; 32], b"k", &auth, [0x80, 1]);
        let b1 = Md5::new()
            .chain_update(b"k")
            .chain_update(auth)
            .chain_update([0x80, 1])
            .finalize();
        assert_eq!(v[8], 32 ^ b1[0]);
        assert_eq!(&v[9..24], &b1[1..16], "zero key octets xor b(1)");
    }
}
