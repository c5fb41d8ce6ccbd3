//! Session resumption keys (issue 14). A client that reconnects for every call (report
//! 001's one-shot clients) pays a full handshake each time unless it can resume: with TLS
//! 1.3 tickets (RFC 8446 4.6.1) and TLS 1.2 tickets (RFC 5077) the server keeps no state
//! per session; it seals the session under a ticket key and opens it when the ticket
//! comes back.
//!
//! Ticket keys are random AES-256-GCM keys that never leave the process. rustls's
//! [`TicketRotator`] makes a new one every `ticket_key_rotation_secs` and keeps the
//! previous one for one more period, so a ticket resumes for up to twice that long and a
//! stolen key exposes at most two periods of sessions. Several instances do not share
//! keys: a client that lands on another instance makes a full handshake there.

use std::sync::Arc;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rustls::server::ProducesTickets;
use rustls::ticketer::TicketRotator;

/// Bytes naming the key a ticket was sealed under (so a rotated-out key fails fast).
const KEY_NAME_LEN: usize = 16;

/// One ticket key: seals and opens tickets.
struct TicketKey {
    name: [u8; KEY_NAME_LEN],
    key: LessSafeKey,
    rng: SystemRandom,
}

impl std::fmt::Debug for TicketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketKey").finish_non_exhaustive()
    }
}

impl TicketKey {
    fn generate() -> Result<Box<dyn ProducesTickets>, rustls::crypto::GetRandomFailed> {
        let rng = SystemRandom::new();
        let mut name = [0u8; KEY_NAME_LEN];
        let mut secret = zeroize::Zeroizing::new([0u8; 32]);
        rng.fill(&mut name)
            .and_then(|()| rng.fill(secret.as_mut()))
            .map_err(|_| rustls::crypto::GetRandomFailed)?;
        let key = UnboundKey::new(&AES_256_GCM, secret.as_ref())
            .map_err(|_| rustls::crypto::GetRandomFailed)?;
        Ok(Box::new(TicketKey {
            name,
            key: LessSafeKey::new(key),
            rng,
        }))
    }
}

impl ProducesTickets for TicketKey {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        // The rotator answers with its own lifetime; this is never asked.
        0
    }

    /// `name || nonce || AES-256-GCM(session, aad = name)`.
    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(KEY_NAME_LEN + NONCE_LEN + plain.len() + 16);
        out.extend_from_slice(&self.name);
        out.extend_from_slice(&nonce);
        let mut sealed = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&self.name),
                &mut sealed,
            )
            .ok()?;
        out.extend_from_slice(&sealed);
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let (name, rest) = cipher.split_at_checked(KEY_NAME_LEN)?;
        if name != self.name {
            return None;
        }
        let (nonce, sealed) = rest.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(name), &mut buf)
            .ok()?;
        Some(plain.to_vec())
    }
}

/// A rotating ticketer: a new key every `rotation_secs`, the previous one still opening
/// tickets for one more period (tickets are advertised for `2 * rotation_secs`).
pub fn ticketer(rotation_secs: u32) -> Result<Arc<dyn ProducesTickets>, rustls::Error> {
    Ok(Arc::new(TicketRotator::new(
        rotation_secs,
        TicketKey::generate,
    )?))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tickets_open_under_their_key_only_and_tampering_fails() {
        let a = TicketKey::generate().unwrap();
        let b = TicketKey::generate().unwrap();
        let t = a.encrypt(b"session state").unwrap();
        assert_eq!(a.decrypt(&t).unwrap(), b"session state");
        assert!(b.decrypt(&t).is_none(), "another key opened it");
        let mut bad = t.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(a.decrypt(&bad).is_none(), "a tampered ticket opened");
        assert!(a.decrypt(&t[..20]).is_none());
        // Fresh nonce per ticket: sealing twice differs.
        assert_ne!(a.encrypt(b"x").unwrap(), a.encrypt(b"x").unwrap());
    }

    #[test]
    fn the_rotator_advertises_two_periods() {
        let t = ticketer(3600).unwrap();
        assert!(t.enabled());
        assert_eq!(t.lifetime(), 7200);
        let sealed = t.encrypt(b"s").unwrap();
        assert_eq!(t.decrypt(&sealed).unwrap(), b"s");
    }
}
