//! Conformance checks of the versioned statements (issue 27): versions move with every
//! change whoever makes it, compare-and-set writes and removals refuse stale versions
//! (and exactly one of two racing writers wins), keyset pages cover a table once, and
//! Idempotency-Keys are claimed once. Run beside [`crate::conformance::run_all`] on both
//! backends (`tests.rs`). Each check takes the capabilities it tests ([`VersionedStore`] with
//! the one that creates the record; revocation pages [`RevocationStore`], Idempotency-Keys
//! [`IdempotencyStore`]) and uses its own names.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures::future::join_all;
use portcullis_core::{CredentialSource, PrincipalKind};

use crate::conformance::{test_client, test_hash, test_user};
use crate::error::StoreError;
use crate::nas::NasRecord;
use crate::record::{ClientAuth, Grant};
use crate::seal::MasterKey;
use crate::store::{
    ClientStore, IdempotencyStore, NasStore, RevocationStore, Store, UserStore, VersionedStore,
};
use crate::versioned::{IdempotencyRecord, Resource};

/// Run every check.
pub async fn run_all(store: &dyn Store) {
    client_versions_follow_every_write(store).await;
    client_compare_and_set(store).await;
    racing_writers_one_wins(store).await;
    client_pages_cover_each_once(store).await;
    user_versions_and_removal(store).await;
    nas_versions_and_cidr_conflicts(store).await;
    revocation_pages(store).await;
    idempotency_keys_are_claimed_once(store).await;
}

async fn version<S: VersionedStore + ?Sized>(store: &S, id: &str) -> i64 {
    store.client_versioned(id).await.unwrap().unwrap().version
}

/// A new record is version 1, and every statement that changes it (the CLI's, rotation,
/// rehash-on-login) moves the version on, so an ETag taken before it no longer matches.
pub async fn client_versions_follow_every_write<
    S: ClientStore + VersionedStore + CredentialSource + ?Sized,
>(
    store: &S,
) {
    let c = test_client("vc-writes");
    store.put_client(&c).await.unwrap();
    let got = store.client_versioned("vc-writes").await.unwrap().unwrap();
    assert_eq!(got.version, 1);
    assert_eq!(got.record, c);
    assert!(store.client_versioned("vc-none").await.unwrap().is_none());

    store
        .update_client_settings("vc-writes", &[Grant::ClientCredentials], &[], 600)
        .await
        .unwrap();
    assert_eq!(version(store, "vc-writes").await, 2);
    let h2 = test_hash("vc-writes/s2");
    store.rotate_client_secret("vc-writes", &h2).await.unwrap();
    assert_eq!(version(store, "vc-writes").await, 3);
    store.finish_client_rotation("vc-writes").await.unwrap();
    assert_eq!(version(store, "vc-writes").await, 4);
    let h3 = test_hash("vc-writes/s3");
    assert!(
        store
            .replace_hash(PrincipalKind::Client, "vc-writes", &h2, &h3)
            .await
            .unwrap()
    );
    assert_eq!(version(store, "vc-writes").await, 5);
    // A statement that matches no row changes no version.
    assert!(
        !store
            .replace_hash(PrincipalKind::Client, "vc-writes", &h2, &h3)
            .await
            .unwrap()
    );
    assert_eq!(version(store, "vc-writes").await, 5);
}

/// `replace_client` writes only over the version it names, and returns the next one.
pub async fn client_compare_and_set<S: ClientStore + VersionedStore + CredentialSource + ?Sized>(
    store: &S,
) {
    let c = test_client("vc-cas");
    store.put_client(&c).await.unwrap();
    let mut next = c.clone();
    next.scopes = vec!["only".into()];
    next.token_lifetime = 120;
    next.secret_hashes = vec![test_hash("vc-cas/new"), c.secret_hashes[0].clone()];
    // Neither the id nor the creation time moves.
    next.created_at = 1;
    assert_eq!(store.replace_client(&next, 1).await.unwrap(), 2);
    let got = store.client_versioned("vc-cas").await.unwrap().unwrap();
    assert_eq!(got.version, 2);
    assert_eq!(got.record.scopes, vec!["only".to_owned()]);
    assert_eq!(got.record.token_lifetime, 120);
    assert_eq!(got.record.secret_hashes, next.secret_hashes);
    assert_eq!(got.record.created_at, c.created_at);

    // Stale: refused, nothing written.
    let mut stale = c.clone();
    stale.scopes = vec!["stale".into()];
    assert!(matches!(
        store.replace_client(&stale, 1).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        store.client_versioned("vc-cas").await.unwrap().unwrap(),
        got
    );
    // Missing: not found, not a conflict.
    let mut ghost = c.clone();
    ghost.id = "vc-cas-ghost".into();
    assert!(matches!(
        store.replace_client(&ghost, 1).await,
        Err(StoreError::NotFound(_))
    ));
    // Invalid: refused before anything is written.
    let mut bad = got.record.clone();
    bad.grants.clear();
    assert!(matches!(
        store.replace_client(&bad, 2).await,
        Err(StoreError::Invalid(_))
    ));
    // The auth method may change, and the secret columns follow it.
    let mut jwt = got.record.clone();
    jwt.auth = ClientAuth::TlsClientAuth {
        subject_dn: "CN=vc-cas".into(),
    };
    jwt.secret_hashes.clear();
    assert_eq!(store.replace_client(&jwt, 2).await.unwrap(), 3);
    let got = store.client_versioned("vc-cas").await.unwrap().unwrap();
    assert_eq!(got.record, {
        let mut j = jwt.clone();
        j.created_at = c.created_at;
        j
    });
    // No hash is left for the secret path.
    assert!(
        store
            .credentials(PrincipalKind::Client, "vc-cas")
            .await
            .unwrap()
            .unwrap()
            .hashes
            .is_empty()
    );

    // Removal too: stale refused, current accepted, then gone.
    assert!(matches!(
        store.remove_versioned(Resource::Client, "vc-cas", 2).await,
        Err(StoreError::Conflict(_))
    ));
    store
        .remove_versioned(Resource::Client, "vc-cas", 3)
        .await
        .unwrap();
    assert!(store.get_client("vc-cas").await.unwrap().is_none());
    assert!(matches!(
        store.remove_versioned(Resource::Client, "vc-cas", 3).await,
        Err(StoreError::NotFound(_))
    ));
}

/// Eight writers holding the same version: exactly one succeeds, the others are told
/// of the conflict, and the stored record is the winner's.
pub async fn racing_writers_one_wins<S: ClientStore + VersionedStore + ?Sized>(store: &S) {
    let c = test_client("vc-race");
    store.put_client(&c).await.unwrap();
    let attempts: Vec<_> = (0..8u32)
        .map(|i| {
            let mut next = c.clone();
            next.token_lifetime = 100 + i;
            next
        })
        .collect();
    let results = join_all(attempts.iter().map(|n| store.replace_client(n, 1))).await;
    let winners: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_ok())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for r in &results {
        assert!(matches!(r, Ok(2) | Err(StoreError::Conflict(_))), "{r:?}");
    }
    let got = store.client_versioned("vc-race").await.unwrap().unwrap();
    assert_eq!(got.record.token_lifetime, 100 + winners[0] as u32);
    assert_eq!(got.version, 2);
}

/// Pages of any size, each starting after the last key of the previous one, cover the
/// table once in key order, and a change between pages does not repeat or skip keys.
pub async fn client_pages_cover_each_once<S: ClientStore + VersionedStore + ?Sized>(store: &S) {
    let ids: Vec<String> = (0..7).map(|i| format!("vc-page-{i:02}")).collect();
    for id in &ids {
        store.put_client(&test_client(id)).await.unwrap();
    }
    for size in [1u32, 2, 3, 7, 1000] {
        let mut seen = Vec::new();
        let mut after = Some("vc-page-".to_owned());
        loop {
            let page = store.clients_after(after.as_deref(), size).await.unwrap();
            assert!(page.len() <= size as usize);
            let mine: Vec<String> = page
                .iter()
                .map(|v| v.record.id.clone())
                .take_while(|id| id.starts_with("vc-page-"))
                .collect();
            let done = mine.len() < page.len() || page.len() < size as usize;
            seen.extend(mine);
            if done {
                break;
            }
            after = page.last().map(|v| v.record.id.clone());
            if size == 2 && seen.len() == 2 {
                // A record changed between two pages keeps its place.
                store
                    .update_client_settings("vc-page-00", &[Grant::Password], &[], 60)
                    .await
                    .unwrap();
            }
        }
        assert_eq!(seen, ids, "page size {size}");
    }
    // Pages carry versions: the record changed between pages is at version 2.
    let first = store.clients_after(Some("vc-page-"), 2).await.unwrap();
    assert_eq!((first[0].version, first[1].version), (2, 1));
    for bad in [0, crate::versioned::MAX_PAGE + 1] {
        assert!(matches!(
            store.clients_after(None, bad).await,
            Err(StoreError::Invalid(_))
        ));
    }
}

/// Users: versions, compare-and-set of hash and disabled flag, removal, pages.
pub async fn user_versions_and_removal<S: UserStore + VersionedStore + ?Sized>(store: &S) {
    for n in ["vc-user-a", "vc-user-b", "vc-user-c"] {
        store.put_user(&test_user(n)).await.unwrap();
    }
    let a = store.user_versioned("vc-user-a").await.unwrap().unwrap();
    assert_eq!(a.version, 1);
    store.set_user_disabled("vc-user-a", true).await.unwrap();
    let a2 = store.user_versioned("vc-user-a").await.unwrap().unwrap();
    assert_eq!(a2.version, 2);
    assert!(a2.record.disabled);

    let mut next = a2.record.clone();
    next.disabled = false;
    next.password_hash = test_hash("vc-user-a/new");
    assert!(matches!(
        store.replace_user(&next, 1).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(store.replace_user(&next, 2).await.unwrap(), 3);
    let a3 = store.user_versioned("vc-user-a").await.unwrap().unwrap();
    assert!(!a3.record.disabled);
    assert_eq!(a3.record.password_hash, next.password_hash);
    let mut plain = next.clone();
    plain.password_hash = "hunter2".into();
    assert!(matches!(
        store.replace_user(&plain, 3).await,
        Err(StoreError::Invalid(_))
    ));

    let page = store.users_after(Some("vc-user-a"), 10).await.unwrap();
    let names: Vec<&str> = page
        .iter()
        .map(|u| u.record.username.as_str())
        .filter(|n| n.starts_with("vc-user-"))
        .collect();
    assert_eq!(names, ["vc-user-b", "vc-user-c"]);

    assert!(matches!(
        store.remove_versioned(Resource::User, "vc-user-b", 2).await,
        Err(StoreError::Conflict(_))
    ));
    store
        .remove_versioned(Resource::User, "vc-user-b", 1)
        .await
        .unwrap();
    assert!(store.get_user("vc-user-b").await.unwrap().is_none());
    assert!(matches!(
        store.replace_user(&test_user("vc-user-b"), 1).await,
        Err(StoreError::NotFound(_))
    ));
}

/// NAS: versions, compare-and-set of CIDR, secret and Message-Authenticator rule; a
/// CIDR taken by another NAS is refused as such.
pub async fn nas_versions_and_cidr_conflicts<S: NasStore + VersionedStore + ?Sized>(store: &S) {
    let master = MasterKey::new([5u8; 32]);
    let nas = |name: &str, cidr: &str| NasRecord {
        name: name.to_owned(),
        cidr: crate::nas::parse_nas_cidr(cidr).unwrap(),
        secret_sealed: NasRecord::seal_secret(&master, name, b"vc shared secret").unwrap(),
        require_message_authenticator: true,
        created_at: 1_700_000_300,
        certificate: None,
    };
    store
        .put_nas(&nas("vc-nas-a", "198.51.100.0/28"))
        .await
        .unwrap();
    store
        .put_nas(&nas("vc-nas-b", "198.51.100.16/28"))
        .await
        .unwrap();
    let a = store.nas_versioned("vc-nas-a").await.unwrap().unwrap();
    assert_eq!(a.version, 1);
    assert!(store.nas_versioned("vc-nas-none").await.unwrap().is_none());
    store
        .set_nas_require_message_authenticator("vc-nas-a", false)
        .await
        .unwrap();
    assert_eq!(
        store
            .nas_versioned("vc-nas-a")
            .await
            .unwrap()
            .unwrap()
            .version,
        2
    );
    let mut next = nas("vc-nas-a", "198.51.100.32/28");
    next.secret_sealed = NasRecord::seal_secret(&master, "vc-nas-a", b"rotated").unwrap();
    assert!(matches!(
        store.replace_nas(&next, 1).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(store.replace_nas(&next, 2).await.unwrap(), 3);
    let got = store.nas_versioned("vc-nas-a").await.unwrap().unwrap();
    assert_eq!(got.record.cidr, next.cidr);
    assert!(got.record.require_message_authenticator);
    assert_eq!(&got.record.open_secret(&master).unwrap()[..], b"rotated");
    let mut taken = got.record.clone();
    taken.cidr = crate::nas::parse_nas_cidr("198.51.100.16/28").unwrap();
    assert!(matches!(
        store.replace_nas(&taken, 3).await,
        Err(StoreError::AlreadyExists(_))
    ));
    let page = store.nas_after(Some("vc-nas-"), 2).await.unwrap();
    let names: Vec<&str> = page.iter().map(|n| n.record.name.as_str()).collect();
    assert_eq!(names, ["vc-nas-a", "vc-nas-b"]);
    store
        .remove_versioned(Resource::Nas, "vc-nas-a", 3)
        .await
        .unwrap();
    assert!(store.get_nas("vc-nas-a").await.unwrap().is_none());
}

/// Revocations by page, in jti order.
pub async fn revocation_pages(store: &dyn RevocationStore) {
    for (i, jti) in ["vc-jti-c", "vc-jti-a", "vc-jti-b"].iter().enumerate() {
        store
            .revoke_token(jti, 4_000_000_000 + i as i64)
            .await
            .unwrap();
    }
    let p1 = store.revocations_after(Some("vc-jti-"), 2).await.unwrap();
    assert_eq!(
        p1,
        vec![
            ("vc-jti-a".to_owned(), 4_000_000_001),
            ("vc-jti-b".to_owned(), 4_000_000_002)
        ]
    );
    let p2 = store.revocations_after(Some("vc-jti-b"), 2).await.unwrap();
    assert_eq!(p2[0], ("vc-jti-c".to_owned(), 4_000_000_000));
}

/// A key is claimed by one request; a retry sees it running, then its sealed answer; a
/// failed request releases it; keys are per principal; old keys are purged.
pub async fn idempotency_keys_are_claimed_once(store: &dyn IdempotencyStore) {
    let rec = |principal: &str, key: &str, at: i64| IdempotencyRecord {
        principal: principal.to_owned(),
        key: key.to_owned(),
        request_digest: vec![1, 2, 3],
        response_sealed: None,
        created_at: at,
    };
    let first = rec("vc-admin", "vc-key-1", 5_000);
    // Concurrent claims: exactly one gets it.
    let claims = join_all((0..4).map(|_| store.claim_idempotency_key(&first))).await;
    assert_eq!(
        claims.iter().filter(|c| matches!(c, Ok(None))).count(),
        1,
        "{claims:?}"
    );
    let running = store.claim_idempotency_key(&first).await.unwrap().unwrap();
    assert_eq!(running.response_sealed, None);
    assert_eq!(running.request_digest, vec![1, 2, 3]);
    store
        .complete_idempotency_key("vc-admin", "vc-key-1", b"sealed answer")
        .await
        .unwrap();
    // Answered once only.
    assert!(matches!(
        store
            .complete_idempotency_key("vc-admin", "vc-key-1", b"other")
            .await,
        Err(StoreError::NotFound(_))
    ));
    // A release after the answer keeps it.
    store
        .release_idempotency_key("vc-admin", "vc-key-1")
        .await
        .unwrap();
    let done = store.claim_idempotency_key(&first).await.unwrap().unwrap();
    assert_eq!(done.response_sealed.as_deref(), Some(&b"sealed answer"[..]));
    assert_eq!(done.created_at, 5_000);

    // Another principal's key of the same name is its own.
    assert!(
        store
            .claim_idempotency_key(&rec("vc-other", "vc-key-1", 5_000))
            .await
            .unwrap()
            .is_none()
    );
    // A failed request releases its key, which can then be claimed again.
    let failed = rec("vc-admin", "vc-key-2", 6_000);
    assert!(
        store
            .claim_idempotency_key(&failed)
            .await
            .unwrap()
            .is_none()
    );
    store
        .release_idempotency_key("vc-admin", "vc-key-2")
        .await
        .unwrap();
    assert!(
        store
            .claim_idempotency_key(&failed)
            .await
            .unwrap()
            .is_none()
    );

    assert!(matches!(
        store
            .claim_idempotency_key(&rec("vc-admin", "bad\nkey", 1))
            .await,
        Err(StoreError::Invalid(_))
    ));
    let purged = store.purge_idempotency_keys(5_500).await.unwrap();
    assert!(purged >= 2, "{purged}");
    assert!(store.claim_idempotency_key(&first).await.unwrap().is_none());
}
