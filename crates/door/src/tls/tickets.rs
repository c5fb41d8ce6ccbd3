//! Session resumption keys (issue 14). A client that reconnects for every call (report
//! 001's one-shot clients) pays a full handshake each time unless it can resume: with TLS
//! 1.3 tickets (RFC 8446 4.6.1) and TLS 1.2 tickets (RFC 5077) the server keeps no state
//! per session; it seals the session under a ticket key and opens it when the ticket
//! comes back.
//!
//! Ticket keys are random AES-256-GCM keys that never leave the process. rustls's
//! [`TicketRotator`] makes a new one every `ticket_key_rotation_secs` and keeps the
//! previous one for one more period, so a ticket resumes for up to twice that long and a
//! stolen key exposes at most two periods of sessions. These keys are the instance's own: a
//! client that lands on another instance makes a full handshake there.
//!
//! With `[tls] shared_ticket_keys`, [`SharedTickets`] derives each period's key from the
//! secrets file's master key instead, so every instance behind one balancer opens every
//! other's tickets (one-call clients resume wherever they land). The price, stated in the
//! configuration's documentation: whoever holds the secrets file can derive the ticket keys
//! of any period, past ones included, where random keys are gone once rotated out.

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

/// Ticket keys derived per period from a secret every instance shares: key `n` is
/// HMAC-SHA256(secret, n) for period `n = unix time / period`; tickets name their period and
/// open during it and the next one.
pub struct SharedTickets {
    secret: zeroize::Zeroizing<[u8; 32]>,
    period: u64,
    rng: SystemRandom,
}

impl std::fmt::Debug for SharedTickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTickets")
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

impl SharedTickets {
    /// Tickets under keys derived from `secret`, a new one every `period_secs`.
    pub fn new(secret: zeroize::Zeroizing<[u8; 32]>, period_secs: u32) -> SharedTickets {
        SharedTickets {
            secret,
            period: u64::from(period_secs.max(1)),
            rng: SystemRandom::new(),
        }
    }

    fn epoch(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            / self.period
    }

    fn key(&self, epoch: u64) -> Option<LessSafeKey> {
        let k = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &self.secret[..]);
        let tag = aws_lc_rs::hmac::sign(&k, &epoch.to_be_bytes());
        UnboundKey::new(&AES_256_GCM, tag.as_ref())
            .ok()
            .map(LessSafeKey::new)
    }
}

impl ProducesTickets for SharedTickets {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        u32::try_from(self.period * 2).unwrap_or(u32::MAX)
    }

    /// `period (8 bytes, big-endian) || nonce || AES-256-GCM(session, aad = period)`.
    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let epoch = self.epoch();
        let key = self.key(epoch)?;
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let name = epoch.to_be_bytes();
        let mut sealed = plain.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&name),
            &mut sealed,
        )
        .ok()?;
        let mut out = Vec::with_capacity(8 + NONCE_LEN + sealed.len());
        out.extend_from_slice(&name);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let (name, rest) = cipher.split_at_checked(8)?;
        let epoch = u64::from_be_bytes(name.try_into().ok()?);
        let now = self.epoch();
        if epoch != now && epoch.checked_add(1) != Some(now) {
            return None;
        }
        let (nonce, sealed) = rest.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = sealed.to_vec();
        let plain = self
            .key(epoch)?
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
    fn shared_tickets_open_on_every_instance_with_the_secret_only() {
        let secret = || zeroize::Zeroizing::new([9u8; 32]);
        let (a, b) = (
            SharedTickets::new(secret(), 3600),
            SharedTickets::new(secret(), 3600),
        );
        let other = SharedTickets::new(zeroize::Zeroizing::new([8u8; 32]), 3600);
        let t = a.encrypt(b"session").unwrap();
        assert_eq!(
            b.decrypt(&t).unwrap(),
            b"session",
            "another instance opens it"
        );
        assert!(other.decrypt(&t).is_none(), "another secret does not");
        // A ticket naming a period two periods back (or ahead) is refused unopened.
        let mut old = t.clone();
        old[..8].copy_from_slice(&(a.epoch() - 2).to_be_bytes());
        assert!(b.decrypt(&old).is_none());
        let mut bad = t.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(b.decrypt(&bad).is_none());
        assert_eq!(a.lifetime(), 7200);
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
