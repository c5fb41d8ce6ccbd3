//! EAP inside RADIUS (RFC 3579 §3.1): an EAP packet travels as one or more EAP-Message
//! attributes of at most 253 octets each, concatenated in order.

use crate::EapError;

/// Largest value of one RADIUS attribute.
pub const ATTRIBUTE_VALUE: usize = 253;

/// Concatenate the EAP-Message attribute values of one RADIUS packet (in order), refusing
/// more than `max` octets. An empty result is "EAP-Start" (RFC 3579 §2.1).
pub fn join<'a>(
    parts: impl IntoIterator<Item = &'a [u8]>,
    max: usize,
) -> Result<Vec<u8>, EapError> {
    let mut out = Vec::new();
    for part in parts {
        if out.len() + part.len() > max {
            return Err(EapError::TooLong(out.len() + part.len()));
        }
        out.extend_from_slice(part);
    }
    Ok(out)
}

/// The EAP-Message attribute values that carry `eap`, in order.
pub fn split(eap: &[u8]) -> impl Iterator<Item = &[u8]> {
    eap.chunks(ATTRIBUTE_VALUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_join_round_trip_at_attribute_boundaries() {
        for len in [0usize, 1, 252, 253, 254, 506, 507, 1400] {
            let eap: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let parts: Vec<&[u8]> = split(&eap).collect();
            assert!(
                parts
                    .iter()
                    .all(|p| p.len() <= ATTRIBUTE_VALUE && !p.is_empty())
            );
            assert_eq!(parts.len(), len.div_ceil(ATTRIBUTE_VALUE));
            assert_eq!(join(parts, 4096).unwrap(), eap);
        }
        assert!(join([&[0u8; 200][..], &[0u8; 200][..]], 300).is_err());
    }
}
