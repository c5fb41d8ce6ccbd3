//! Token signing keys: created on first start, persisted through the [`SigningKeyStore`] with the
//! private half sealed under the data directory's master key, rotated on a period, and
//! published in the JWKS until every token they signed has expired.
//!
//! Lifecycle of a key (times in Unix seconds):
//! - `created_at = c` is the second it starts signing; it signs until `c + rotation`;
//! - its successor is inserted [`lead`] seconds before `c + rotation`, with
//!   `created_at = c + rotation`, and published (JWKS) from then on: instances sharing
//!   the store re-read the keys every maintenance interval (and on a JWKS request or an
//!   unknown `kid`, at most once a second), so every instance publishes a key before any
//!   instance signs with it (issue 13);
//! - `not_after = c + rotation + max_lifetime + SKEW`: no token it signed lives past it, so
//!   it is published (JWKS, introspection) until then and removed after;
//! - once its successor signs, it is retired in the store (`retired_at`).
//!
//! The decoded keys live in an immutable [`KeySet`] behind a lock that is only written on
//! rotation; issuing a token clones one `Arc`.

use std::sync::Arc;
use std::time::Duration;

pub use portcullis_door::unix_now;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::VerifyingKey;
use parking_lot::RwLock;
use portcullis_store::{MasterKey, SigningKeyRecord, SigningKeyStore, StoreError};
use thiserror::Error;
use zeroize::Zeroizing;

use crate::jwt::{KeyPair, KeySet, PublicKey};

/// Clock skew allowance added to key retention.
const SKEW: i64 = 300;

/// Key management failed.
#[derive(Debug, Error)]
pub enum KeyError {
    /// The store failed.
    #[error("signing keys: {0}")]
    Store(#[from] StoreError),
    /// A stored key cannot be used (wrong master key, corrupt row).
    #[error("signing key {kid}: {reason}")]
    Corrupt {
        /// Which key.
        kid: String,
        /// What is wrong.
        reason: String,
    },
    /// The OS random generator failed.
    #[error("signing keys: {0}")]
    Random(String),
}

/// Owns the key set and its rotation.
pub struct KeyManager {
    /// Where keys are persisted.
    store: Arc<dyn SigningKeyStore>,
    /// Seals private halves at rest.
    master: MasterKey,
    /// How long a key signs new tokens.
    rotation: i64,
    /// Longest token lifetime, for retention.
    max_lifetime: i64,
    /// The keys in force.
    current: RwLock<Arc<KeySet>>,
    /// Unix second of the last [`KeyManager::refresh`] (at most one per second).
    refreshed: std::sync::atomic::AtomicI64,
}

impl std::fmt::Debug for KeyManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyManager")
            .field("rotation", &self.rotation)
            .field("current", &self.current.read().current.kid())
            .finish_non_exhaustive()
    }
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 4)
}

impl KeyManager {
    /// Load the stored keys, creating or rotating the signing key if needed.
    pub async fn load(
        store: Arc<dyn SigningKeyStore>,
        master: MasterKey,
        rotation: Duration,
        max_lifetime: Duration,
        now: i64,
    ) -> Result<KeyManager, KeyError> {
        let rotation = secs(rotation);
        let max_lifetime = secs(max_lifetime);
        let set = build(&*store, &master, rotation, max_lifetime, now).await?;
        Ok(KeyManager {
            store,
            master,
            rotation,
            max_lifetime,
            current: RwLock::new(Arc::new(set)),
            refreshed: std::sync::atomic::AtomicI64::new(now),
        })
    }

    /// The keys in force.
    pub fn keys(&self) -> Arc<KeySet> {
        Arc::clone(&self.current.read())
    }

    /// Rotate if the current key is due at `now` (called periodically); also drops keys
    /// whose tokens have all expired. Returns whether the key set changed.
    pub async fn maintain(&self, now: i64) -> Result<bool, KeyError> {
        let set = build(
            &*self.store,
            &self.master,
            self.rotation,
            self.max_lifetime,
            now,
        )
        .await?;
        let changed = {
            let cur = self.current.read();
            cur.current.kid() != set.current.kid() || cur.published != set.published
        };
        if changed {
            tracing::info!(kid = set.current.kid(), "signing key set changed");
            *self.current.write() = Arc::new(set);
        }
        Ok(changed)
    }

    /// Re-read the keys now if the last refresh was over a second ago: a JWKS request,
    /// or a token naming a key this instance does not know, may follow a rotation by
    /// another instance sharing the store.
    pub async fn refresh(&self, now: i64) -> Result<bool, KeyError> {
        let last = self.refreshed.load(std::sync::atomic::Ordering::Relaxed);
        if now <= last
            || self
                .refreshed
                .compare_exchange(
                    last,
                    now,
                    std::sync::atomic::Ordering::Relaxed,
                    std::sync::atomic::Ordering::Relaxed,
                )
                .is_err()
        {
            return Ok(false);
        }
        self.maintain(now).await
    }

    /// Rotate now (an operator's request, issue 27): a new key signs from `now`, the one
    /// that signed is retired (still published until its tokens expire). Returns the new
    /// key id. Other instances sharing the store pick it up at their next refresh.
    pub async fn rotate_now(&self, now: i64) -> Result<String, KeyError> {
        let old = self.keys().current.kid().to_owned();
        let rec = generate(&self.master, now, self.rotation, self.max_lifetime)?;
        let kid = rec.kid.clone();
        self.store.insert_signing_key(&rec).await?;
        self.store.retire_signing_key(&old, now).await?;
        self.maintain(now).await?;
        Ok(kid)
    }

    /// How often [`KeyManager::maintain`] should run.
    pub fn maintenance_interval(&self) -> Duration {
        let r = u64::try_from(self.rotation / 10).unwrap_or(60);
        Duration::from_secs(r.clamp(1, 60))
    }
}

/// How far ahead of its first signature a successor key is created and published: two
/// maintenance intervals, so every instance sharing the store has re-read the keys (and
/// put the successor in its JWKS) before any instance signs with it.
fn lead(rotation: i64) -> i64 {
    2 * (rotation / 10).clamp(1, 60)
}

/// Read the keys; make sure one signs now and, within [`lead`] of its end, that its
/// successor exists (created now, `created_at` = the moment it starts signing); retire
/// keys older than the signer, delete what is due, and decode the result.
///
/// A key signs from `created_at` for `rotation`. Instances sharing a store converge on
/// the same signer: the newest key whose period has begun (ties by kid).
async fn build(
    store: &dyn SigningKeyStore,
    master: &MasterKey,
    rotation: i64,
    max_lifetime: i64,
    now: i64,
) -> Result<KeySet, KeyError> {
    let records = store.list_signing_keys().await?;
    build_from(store, records, master, rotation, max_lifetime, now).await
}

/// [`build`] from `records` as listed a moment ago: by the time it acts, another instance
/// may have changed the store (the tests stand in for that race with a stale listing).
async fn build_from(
    store: &dyn SigningKeyStore,
    mut records: Vec<SigningKeyRecord>,
    master: &MasterKey,
    rotation: i64,
    max_lifetime: i64,
    now: i64,
) -> Result<KeySet, KeyError> {
    records.sort_by(|a, b| (a.created_at, &a.kid).cmp(&(b.created_at, &b.kid)));
    let signs_now = |r: &SigningKeyRecord| {
        r.alg == "EdDSA"
            && r.retired_at.is_none()
            && r.created_at <= now
            && now < r.created_at + rotation
            // A token signed now must expire before the key stops being published
            // (guards against a rotation period raised after the key was made).
            && now + max_lifetime < r.not_after
    };
    let active = records
        .iter()
        .rev()
        .find(|r| signs_now(r))
        .map(|r| (r.kid.clone(), r.created_at));
    let (active_kid, active_from) = match active {
        Some(a) => a,
        None => {
            // First start, or every instance was down past the end of the period: sign
            // at once. Instances starting together race here; the store lets one key in,
            // and the losers sign with the winner's, so every JWKS has the signer.
            let rec = generate(master, now, rotation, max_lifetime)?;
            if store
                .insert_first_signing_key(&rec, now, rotation, max_lifetime)
                .await?
            {
                let a = (rec.kid.clone(), rec.created_at);
                records.push(rec);
                a
            } else {
                records = store.list_signing_keys().await?;
                records.sort_by(|a, b| (a.created_at, &a.kid).cmp(&(b.created_at, &b.kid)));
                records
                    .iter()
                    .rev()
                    .find(|r| signs_now(r))
                    .map(|r| (r.kid.clone(), r.created_at))
                    .ok_or_else(|| corrupt("-", "another instance's first key is not readable"))?
            }
        }
    };
    let handover = active_from + rotation;
    let has_successor = records
        .iter()
        .any(|r| r.alg == "EdDSA" && r.retired_at.is_none() && r.created_at > active_from);
    if now >= handover - lead(rotation) && !has_successor {
        let rec = generate(master, handover, rotation, max_lifetime)?;
        store.insert_signing_key(&rec).await?;
        records.push(rec);
    }
    for r in &mut records {
        if r.kid != active_kid && r.retired_at.is_none() && r.created_at <= active_from {
            store.retire_signing_key(&r.kid, now).await?;
            r.retired_at = Some(now);
        }
    }
    let mut published = Vec::new();
    let mut current = None;
    for r in &records {
        if r.not_after <= now && r.kid != active_kid {
            store.remove_signing_key(&r.kid).await?;
            continue;
        }
        let public = decode_public(r)?;
        if r.kid == active_kid {
            let sealed = master
                .open(&r.private_key_sealed, r.kid.as_bytes())
                .map_err(|e| corrupt(&r.kid, format!("cannot unseal private key: {e}")))?;
            let seed: [u8; 32] = sealed
                .as_slice()
                .try_into()
                .map_err(|_| corrupt(&r.kid, "private key is not 32 bytes"))?;
            let pair = KeyPair::from_seed(&r.kid, &Zeroizing::new(seed))
                .map_err(|e| corrupt(&r.kid, e.to_string()))?;
            if pair.public() != public {
                return Err(corrupt(&r.kid, "private key does not match public key"));
            }
            current = Some(Arc::new(pair));
        }
        published.push(public);
    }
    let current = current.ok_or_else(|| corrupt(&active_kid, "active key disappeared"))?;
    Ok(KeySet { current, published })
}

fn corrupt(kid: &str, reason: impl Into<String>) -> KeyError {
    KeyError::Corrupt {
        kid: kid.to_owned(),
        reason: reason.into(),
    }
}

fn decode_public(r: &SigningKeyRecord) -> Result<PublicKey, KeyError> {
    let bytes: [u8; 32] = r
        .public_key
        .as_slice()
        .try_into()
        .map_err(|_| corrupt(&r.kid, "public key is not 32 bytes"))?;
    let key = VerifyingKey::from_bytes(&bytes)
        .map_err(|e| corrupt(&r.kid, format!("invalid Ed25519 public key: {e}")))?;
    Ok(PublicKey::new(&r.kid, key))
}

fn generate(
    master: &MasterKey,
    now: i64,
    rotation: i64,
    max_lifetime: i64,
) -> Result<SigningKeyRecord, KeyError> {
    let mut seed = Zeroizing::new([0u8; 32]);
    portcullis_hash::os_random(&mut seed[..]).map_err(|e| KeyError::Random(e.to_string()))?;
    let mut kid_raw = [0u8; 12];
    portcullis_hash::os_random(&mut kid_raw).map_err(|e| KeyError::Random(e.to_string()))?;
    let kid = URL_SAFE_NO_PAD.encode(kid_raw);
    let pair = KeyPair::from_seed(&kid, &seed).map_err(|e| corrupt(&kid, e.to_string()))?;
    let sealed = master.seal(&seed[..], kid.as_bytes())?;
    Ok(SigningKeyRecord {
        public_key: pair.public().key.as_bytes().to_vec(),
        kid,
        alg: "EdDSA".into(),
        private_key_sealed: sealed,
        created_at: now,
        not_after: now + rotation + max_lifetime + SKEW,
        retired_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_store::SqliteStore;

    const ROT: i64 = 3600;
    const LIFE: i64 = 600;

    async fn manager(dir: &std::path::Path, master: &MasterKey, now: i64) -> KeyManager {
        let store: Arc<dyn SigningKeyStore> =
            Arc::new(SqliteStore::open(&dir.join("db")).await.unwrap());
        KeyManager::load(
            store,
            master.clone(),
            Duration::from_secs(ROT as u64),
            Duration::from_secs(LIFE as u64),
            now,
        )
        .await
        .unwrap()
    }

    fn kids(m: &KeyManager) -> Vec<String> {
        m.keys().published.iter().map(|k| k.kid.clone()).collect()
    }

    #[tokio::test]
    async fn issue_5_rotation_keeps_old_keys_until_their_tokens_expired() {
        let dir = tempfile::tempdir().unwrap();
        let master = MasterKey::generate().unwrap();
        let t0 = 1_700_000_000;
        let m = manager(dir.path(), &master, t0).await;
        let first = m.keys().current.kid().to_owned();
        assert_eq!(kids(&m), vec![first.clone()]);
        // Inside the period, until the successor's lead, nothing changes.
        let lead = lead(ROT);
        assert_eq!(lead, 120);
        assert!(!m.maintain(t0 + ROT - lead - 1).await.unwrap());
        // Then the successor is published while the first key still signs.
        assert!(m.maintain(t0 + ROT - lead).await.unwrap());
        assert_eq!(m.keys().current.kid(), first);
        let published = kids(&m);
        assert_eq!(published.len(), 2, "{published:?}");
        let second = published[1].clone();
        assert_ne!(second, first);
        // At the end of the period the published successor signs; the old key stays.
        assert!(!m.maintain(t0 + ROT - 1).await.unwrap());
        let t1 = t0 + ROT;
        assert!(m.maintain(t1).await.unwrap());
        assert_eq!(m.keys().current.kid(), second);
        assert_eq!(kids(&m), vec![first.clone(), second.clone()]);
        // A token signed by the old key just before rotation stays verifiable until exp.
        // The old key goes once every token it signed has expired (plus skew).
        let old_gone = t0 + ROT + LIFE + SKEW;
        m.maintain(old_gone - 1).await.unwrap();
        assert!(kids(&m).contains(&first));
        m.maintain(old_gone).await.unwrap();
        assert_eq!(kids(&m), vec![second.clone()]);
        // A restart at that time loads the same signing key from the store.
        let again = manager(dir.path(), &master, old_gone).await;
        assert_eq!(again.keys().current.kid(), second);
    }

    /// Two instances over one store: the one that rotates first publishes the successor
    /// ahead; the other, re-reading on its own schedule, publishes it before it signs,
    /// and both sign with the same key after the handover.
    #[tokio::test]
    async fn issue_13_instances_sharing_a_store_publish_a_key_before_it_signs() {
        let dir = tempfile::tempdir().unwrap();
        let master = MasterKey::generate().unwrap();
        let t0 = 1_700_000_000;
        let a = manager(dir.path(), &master, t0).await;
        let b = manager(dir.path(), &master, t0 + 5).await;
        assert_eq!(a.keys().current.kid(), b.keys().current.kid());
        // A reaches the lead first and creates the successor.
        a.maintain(t0 + ROT - lead(ROT)).await.unwrap();
        let next = kids(&a)[1].clone();
        // B re-reads one maintenance interval later: the key is in its JWKS too, though
        // nobody signs with it yet.
        b.maintain(t0 + ROT - lead(ROT) + 60).await.unwrap();
        assert!(kids(&b).contains(&next));
        assert_ne!(b.keys().current.kid(), next);
        // After the handover both sign with it; no second successor was made.
        a.maintain(t0 + ROT).await.unwrap();
        b.maintain(t0 + ROT + 1).await.unwrap();
        assert_eq!(a.keys().current.kid(), next);
        assert_eq!(b.keys().current.kid(), next);
        assert_eq!(kids(&a), kids(&b));
    }

    /// Instances starting together on an empty store (issue 30's note: a lab run of two
    /// instances over one PostgreSQL saw tokens from one rejected by the other's JWKS):
    /// one that read the empty store just before another created the first key signs with
    /// that key instead of adding its own.
    #[tokio::test]
    async fn issue_30_instances_starting_together_agree_on_the_first_key() {
        let dir = tempfile::tempdir().unwrap();
        let master = MasterKey::generate().unwrap();
        let t0 = 1_700_000_000;
        let store: Arc<dyn SigningKeyStore> =
            Arc::new(SqliteStore::open(&dir.path().join("db")).await.unwrap());
        let stale = store.list_signing_keys().await.unwrap();
        assert!(stale.is_empty());
        let a = manager(dir.path(), &master, t0).await;
        let b = build_from(&*store, stale, &master, ROT, LIFE, t0)
            .await
            .unwrap();
        assert_eq!(b.current.kid(), a.keys().current.kid());
        assert_eq!(store.list_signing_keys().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn wrong_master_key_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = 1_700_000_000;
        manager(dir.path(), &MasterKey::generate().unwrap(), t0).await;
        let store: Arc<dyn SigningKeyStore> =
            Arc::new(SqliteStore::open(&dir.path().join("db")).await.unwrap());
        let err = KeyManager::load(
            store,
            MasterKey::generate().unwrap(),
            Duration::from_secs(ROT as u64),
            Duration::from_secs(LIFE as u64),
            t0 + 1,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("unseal"), "{err}");
    }
}
