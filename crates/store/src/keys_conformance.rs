//! Conformance checks for token signing keys and revocations, part of the backend suite
//! ([`crate::conformance::run_all`] runs them). Like every check there, they use their own
//! names and times, so they pass on a shared store that other checks also use. They take
//! `&dyn SigningKeyStore` or `&dyn RevocationStore`.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures::future::join_all;

use crate::error::StoreError;
use crate::record::SigningKeyRecord;
use crate::store::{RevocationStore, SigningKeyStore};

/// Signing keys: insert, order, duplicate, retire once, remove.
pub async fn signing_keys(store: &dyn SigningKeyStore) {
    let key = |kid: &str, created_at: i64| SigningKeyRecord {
        kid: kid.to_owned(),
        alg: "EdDSA".into(),
        public_key: vec![1, 2, 3, 0, 255],
        private_key_sealed: vec![9; 72],
        created_at,
        not_after: created_at + 7_200,
        retired_at: None,
    };
    let newer = key("conf-kid-b", 2_000);
    let older = key("conf-kid-a", 1_000);
    store.insert_signing_key(&newer).await.unwrap();
    store.insert_signing_key(&older).await.unwrap();
    assert!(matches!(
        store.insert_signing_key(&key("conf-kid-a", 5)).await,
        Err(StoreError::AlreadyExists(_))
    ));
    let mut bad = key("conf-kid-bad", 10);
    bad.not_after = 10;
    assert!(matches!(
        store.insert_signing_key(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    let mine = |all: Vec<SigningKeyRecord>| -> Vec<SigningKeyRecord> {
        all.into_iter()
            .filter(|k| k.kid.starts_with("conf-kid-"))
            .collect()
    };
    assert_eq!(
        mine(store.list_signing_keys().await.unwrap()),
        vec![older.clone(), newer.clone()],
        "oldest first"
    );
    assert!(store.retire_signing_key("conf-kid-a", 1_500).await.unwrap());
    assert!(!store.retire_signing_key("conf-kid-a", 1_600).await.unwrap());
    assert!(
        !store
            .retire_signing_key("conf-kid-none", 1_600)
            .await
            .unwrap()
    );
    let listed = mine(store.list_signing_keys().await.unwrap());
    assert_eq!(listed[0].retired_at, Some(1_500), "first retirement kept");
    assert_eq!(listed[1].retired_at, None);
    assert!(store.remove_signing_key("conf-kid-a").await.unwrap());
    assert!(!store.remove_signing_key("conf-kid-a").await.unwrap());
    assert!(store.remove_signing_key("conf-kid-b").await.unwrap());
}

/// Revocations: idempotent, purge by expiry keeps the later expiry.
pub async fn revocations(store: &dyn RevocationStore) {
    store.revoke_token("conf-jti-1", 100).await.unwrap();
    store.revoke_token("conf-jti-2", 200).await.unwrap();
    store.revoke_token("conf-jti-2", 150).await.unwrap();
    store.revoke_token("conf-jti-3", 300).await.unwrap();
    store.revoke_token("conf-jti-3", 400).await.unwrap();
    assert!(store.is_revoked("conf-jti-1").await.unwrap());
    assert!(!store.is_revoked("conf-jti-none").await.unwrap());
    assert!(matches!(
        store.revoke_token("", 1).await,
        Err(StoreError::Invalid(_))
    ));
    // Other data in a shared store may purge too, so count only what we can: at least
    // our two.
    assert!(store.purge_revocations(200).await.unwrap() >= 2);
    assert!(!store.is_revoked("conf-jti-1").await.unwrap());
    assert!(
        !store.is_revoked("conf-jti-2").await.unwrap(),
        "re-revoking with an earlier expiry must not extend it past the later one"
    );
    store.purge_revocations(399).await.unwrap();
    assert!(
        store.is_revoked("conf-jti-3").await.unwrap(),
        "re-revoking with a later expiry extends it"
    );
    assert!(store.purge_revocations(400).await.unwrap() >= 1);
    assert!(!store.is_revoked("conf-jti-3").await.unwrap());
}

/// The first signing key (issue 30's note: instances starting together on one store):
/// exactly one of several concurrent `insert_first_signing_key` calls inserts, and a key
/// that cannot sign at `now` (retired, outside its period, or expiring too soon for a new
/// token) does not stop a new one. Runs at a time far from every other check's keys, so a
/// shared store's other keys are never "active" here.
pub async fn first_signing_key_race(store: &dyn SigningKeyStore) {
    const NOW: i64 = 9_000_000_000;
    const ROTATION: i64 = 3_600;
    const LIFETIME: i64 = 600;
    let key = |kid: String, created_at: i64, not_after: i64| SigningKeyRecord {
        kid,
        alg: "EdDSA".into(),
        public_key: vec![7; 32],
        private_key_sealed: vec![8; 72],
        created_at,
        not_after,
        retired_at: None,
    };
    let first = |k: SigningKeyRecord| async move {
        store
            .insert_first_signing_key(&k, NOW, ROTATION, LIFETIME)
            .await
            .unwrap()
    };
    // Keys that cannot sign at NOW: ended period, too close to not_after, retired.
    let ended = key(
        "conf-first-ended".into(),
        NOW - ROTATION,
        NOW + 10 * ROTATION,
    );
    let short = key("conf-first-short".into(), NOW - 1, NOW + LIFETIME);
    let mut retired = key("conf-first-retired".into(), NOW - 1, NOW + 10 * ROTATION);
    retired.retired_at = Some(NOW - 1);
    for k in [&ended, &short, &retired] {
        store.insert_signing_key(k).await.unwrap();
    }
    // Eight instances at once, each with its own key.
    let racers = (0..8).map(|i| key(format!("conf-first-{i}"), NOW, NOW + 10 * ROTATION));
    let won: Vec<bool> = join_all(racers.map(first)).await;
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "exactly one first key: {won:?}"
    );
    // Once one signs, a later instance does not add another.
    assert!(!first(key("conf-first-late".into(), NOW + 5, NOW + 10 * ROTATION)).await);
    let mine: Vec<String> = store
        .list_signing_keys()
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.kid)
        .filter(|k| k.starts_with("conf-first-"))
        .collect();
    assert_eq!(mine.len(), 4, "{mine:?}");
    for kid in mine {
        store.remove_signing_key(&kid).await.unwrap();
    }
    // An invalid key is refused as by insert_signing_key.
    let bad = key("conf-first-bad".into(), NOW, NOW);
    assert!(matches!(
        store
            .insert_first_signing_key(&bad, NOW, ROTATION, LIFETIME)
            .await,
        Err(StoreError::Invalid(_))
    ));
}
