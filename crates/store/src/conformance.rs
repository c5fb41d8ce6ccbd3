//! The backend conformance suite: async checks every backend must pass, on SQLite and
//! PostgreSQL (`tests.rs`; other crates with feature `conformance`). This module holds the
//! client and user checks; [`run_all`] runs them and the other capabilities' suites
//! (`keys_`, `nas_`, `acct_`, `reg_conformance`; `versioned_conformance` runs beside it).
//!
//! Each check takes the narrowest capability it tests: `&dyn ClientStore`, or, when it
//! needs two (a trait object names one trait), a generic `&S` over both, which a
//! `&dyn Store` and a concrete backend satisfy alike. Each check uses its own principal
//! names, so checks may run against one store in any order; none assumes the store starts
//! empty. Call [`run_all`] or the checks one by one.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures::future::join_all;
use portcullis_core::{CredentialSource, PrincipalKind};
use portcullis_hash::pepper::PepperedHmac;
use portcullis_hash::{PepperKey, Policy, Prf};

use crate::error::StoreError;
use crate::record::{ClientAuth, ClientRecord, Grant, UserRecord};
use crate::store::{ClientStore, Store, UserStore};

/// A distinct, valid stored hash for `label` (cheap: peppered HMAC under a test key).
pub fn test_hash(label: &str) -> String {
    let key = PepperKey::new("conformance", [7u8; 32]).unwrap();
    PepperedHmac::create(&key, label.as_bytes())
}

/// A valid PBKDF2 PHC hash (low cost: only the format matters here).
pub fn test_pbkdf2_hash(secret: &str) -> String {
    Policy::Pbkdf2 {
        prf: Prf::Sha256,
        iterations: 1_000,
    }
    .hash(secret.as_bytes())
    .unwrap()
}

/// A client with one secret, both grants and two scopes.
pub fn test_client(id: &str) -> ClientRecord {
    ClientRecord {
        id: id.to_owned(),
        auth: crate::record::ClientAuth::Secret,
        secret_hashes: vec![test_hash(&format!("{id}/s1"))],
        grants: vec![Grant::ClientCredentials, Grant::Password],
        scopes: vec!["read".into(), "write:all".into()],
        token_lifetime: 900,
        created_at: 1_700_000_000,
    }
}

/// An enabled user without directory attributes.
pub fn test_user(name: &str) -> UserRecord {
    UserRecord::new(name, test_hash(&format!("{name}/pw")), 1_700_000_100).unwrap()
}

/// Run every check of every capability but the versioned ones, on a whole store.
pub async fn run_all(store: &dyn Store) {
    store.ping().await.unwrap();
    clients_round_trip(store).await;
    client_validation(store).await;
    client_rotation(store).await;
    client_settings_update(store).await;
    issue_14_clients_without_secrets(store).await;
    concurrent_rotations_shift_atomically(store).await;
    client_credential_view_and_cas(store).await;
    cas_race_exactly_one_wins(store).await;
    cas_race_on_both_client_slots(store).await;
    users_round_trip(store).await;
    users_bulk_insert(store).await;
    user_credential_view_and_cas(store).await;
    crate::keys_conformance::signing_keys(store).await;
    crate::keys_conformance::first_signing_key_race(store).await;
    crate::keys_conformance::revocations(store).await;
    crate::nas_conformance::nas_records(store).await;
    crate::acct_conformance::run_all(store).await;
    crate::reg_conformance::run_all(store).await;
}

/// Clients that authenticate with a key or a certificate (issue 14): stored and read back
/// with their method and key, no hashes; the secret path sees no hash (so answers them as
/// unknown at no hash cost); secret rotation does not touch them; only their key changes.
pub async fn issue_14_clients_without_secrets<S: ClientStore + CredentialSource + ?Sized>(
    store: &S,
) {
    let jwks = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
    let methods = [
        ClientAuth::PrivateKeyJwt { jwks: jwks.into() },
        ClientAuth::SelfSignedTlsClientAuth {
            certs: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into(),
        },
        ClientAuth::TlsClientAuth {
            subject_dn: "CN=conf-mtls,O=Example".into(),
        },
    ];
    for (i, auth) in methods.iter().enumerate() {
        let mut c = test_client(&format!("conf-keyed-{i}"));
        c.auth = auth.clone();
        c.secret_hashes.clear();
        store.put_client(&c).await.unwrap();
        assert_eq!(store.get_client(&c.id).await.unwrap(), Some(c.clone()));
        let seen = store
            .credentials(PrincipalKind::Client, &c.id)
            .await
            .unwrap()
            .unwrap();
        assert!(seen.hashes.is_empty(), "{auth:?}");
        let r = store.rotate_client_secret(&c.id, &test_hash("new")).await;
        assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
        let r = store
            .update_client_secrets(&c.id, vec![test_hash("new")])
            .await;
        assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
        assert_eq!(store.get_client(&c.id).await.unwrap(), Some(c.clone()));
        // A key-based client with a hash, or without its key, is refused.
        let mut bad = c.clone();
        bad.id = format!("conf-keyed-bad-{i}");
        bad.secret_hashes = vec![test_hash("x")];
        assert!(matches!(
            store.put_client(&bad).await,
            Err(StoreError::Invalid(_))
        ));
    }
    let mut bad = test_client("conf-keyed-empty");
    bad.auth = ClientAuth::PrivateKeyJwt { jwks: " ".into() };
    bad.secret_hashes.clear();
    assert!(matches!(
        store.put_client(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    // Key rotation: same method only; a secret client has no key to set.
    let new = ClientAuth::TlsClientAuth {
        subject_dn: "CN=conf-mtls-2,O=Example".into(),
    };
    store.set_client_auth("conf-keyed-2", &new).await.unwrap();
    assert_eq!(
        store
            .get_client("conf-keyed-2")
            .await
            .unwrap()
            .unwrap()
            .auth,
        new
    );
    let r = store.set_client_auth("conf-keyed-0", &new).await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    let secret = test_client("conf-keyed-secret");
    store.put_client(&secret).await.unwrap();
    let r = store.set_client_auth(&secret.id, &new).await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    assert_eq!(store.get_client(&secret.id).await.unwrap(), Some(secret));
}

/// Insert, read back, list, duplicate, remove.
pub async fn clients_round_trip(store: &dyn ClientStore) {
    let c = test_client("conf-client-a");
    let mut two = test_client("conf-client-b");
    two.secret_hashes.push(test_hash("conf-client-b/s0"));
    two.grants = vec![Grant::ClientCredentials];
    two.scopes.clear();
    store.put_client(&c).await.unwrap();
    store.put_client(&two).await.unwrap();
    assert_eq!(store.get_client(&c.id).await.unwrap(), Some(c.clone()));
    assert_eq!(store.get_client(&two.id).await.unwrap(), Some(two.clone()));
    assert_eq!(store.get_client("conf-client-none").await.unwrap(), None);

    let listed: Vec<_> = store
        .list_clients()
        .await
        .unwrap()
        .into_iter()
        .filter(|x| x.id.starts_with("conf-client-"))
        .collect();
    assert_eq!(listed, vec![c.clone(), two.clone()], "ordered by id");

    let mut dup = test_client("conf-client-a");
    dup.token_lifetime = 120;
    assert!(matches!(
        store.put_client(&dup).await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(store.get_client(&c.id).await.unwrap(), Some(c.clone()));

    assert!(store.remove_client(&c.id).await.unwrap());
    assert!(!store.remove_client(&c.id).await.unwrap());
    assert_eq!(store.get_client(&c.id).await.unwrap(), None);
    assert!(store.remove_client(&two.id).await.unwrap());
}

/// Invalid records are refused with `Invalid` and nothing is written.
pub async fn client_validation(store: &dyn ClientStore) {
    let base = test_client("conf-invalid");
    let mut cases: Vec<ClientRecord> = Vec::new();
    let mut c = base.clone();
    c.id = String::new();
    cases.push(c);
    let mut c = base.clone();
    c.id = "x\ny".into();
    cases.push(c);
    let mut c = base.clone();
    c.id = "x".repeat(256);
    cases.push(c);
    let mut c = base.clone();
    c.secret_hashes.clear();
    cases.push(c);
    let mut c = base.clone();
    c.secret_hashes = vec![test_hash("1"), test_hash("2"), test_hash("3")];
    cases.push(c);
    let mut c = base.clone();
    c.secret_hashes = vec![test_hash("1"), test_hash("1")];
    cases.push(c);
    let mut c = base.clone();
    c.secret_hashes = vec!["plaintext-secret".into()];
    cases.push(c);
    let mut c = base.clone();
    c.grants.clear();
    cases.push(c);
    let mut c = base.clone();
    c.scopes = vec!["has space".into()];
    cases.push(c);
    let mut c = base.clone();
    c.scopes = vec!["a".into(), "a".into()];
    cases.push(c);
    let mut c = base.clone();
    c.token_lifetime = 59;
    cases.push(c);
    let mut c = base.clone();
    c.token_lifetime = 86_401;
    cases.push(c);
    for case in cases {
        let r = store.put_client(&case).await;
        assert!(matches!(r, Err(StoreError::Invalid(_))), "{case:?}: {r:?}");
    }
    assert_eq!(store.get_client(&base.id).await.unwrap(), None);
}

/// Secret rotation through `update_client_secrets`.
pub async fn client_rotation(store: &dyn ClientStore) {
    let c = test_client("conf-rotate");
    store.put_client(&c).await.unwrap();
    let old = c.secret_hashes[0].clone();
    let new = test_hash("conf-rotate/s2");
    store
        .update_client_secrets(&c.id, vec![new.clone(), old.clone()])
        .await
        .unwrap();
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.secret_hashes, vec![new.clone(), old.clone()]);
    assert_eq!(got.scopes, c.scopes, "rotation leaves the rest alone");
    store
        .update_client_secrets(&c.id, vec![new.clone()])
        .await
        .unwrap();
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.secret_hashes, vec![new.clone()]);
    for bad in [
        vec![],
        vec![new.clone(), new.clone()],
        vec![test_hash("a"), test_hash("b"), test_hash("c")],
    ] {
        assert!(matches!(
            store.update_client_secrets(&c.id, bad).await,
            Err(StoreError::Invalid(_))
        ));
    }
    assert!(matches!(
        store
            .update_client_secrets("conf-rotate-none", vec![new.clone()])
            .await,
        Err(StoreError::NotFound(_))
    ));

    // The atomic rotation primitives.
    let third = test_hash("conf-rotate/s3");
    store.rotate_client_secret(&c.id, &third).await.unwrap();
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.secret_hashes, vec![third.clone(), new.clone()]);
    let fourth = test_hash("conf-rotate/s4");
    store.rotate_client_secret(&c.id, &fourth).await.unwrap();
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(
        got.secret_hashes,
        vec![fourth.clone(), third.clone()],
        "the oldest is dropped"
    );
    assert!(matches!(
        store.rotate_client_secret(&c.id, &fourth).await,
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.rotate_client_secret(&c.id, "plaintext").await,
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.rotate_client_secret("conf-rotate-none", &third).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.finish_client_rotation(&c.id).await.unwrap());
    assert!(!store.finish_client_rotation(&c.id).await.unwrap());
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.secret_hashes, vec![fourth]);
    assert!(matches!(
        store.finish_client_rotation("conf-rotate-none").await,
        Err(StoreError::NotFound(_))
    ));
    store.remove_client(&c.id).await.unwrap();
}

/// Concurrent rotations never lose a secret: every new hash is current or previous at
/// some point in a serial order, so the final pair is two of the new hashes, in the order
/// of two consecutive rotations.
pub async fn concurrent_rotations_shift_atomically(store: &dyn ClientStore) {
    let c = test_client("conf-rotate-race");
    store.put_client(&c).await.unwrap();
    let news: Vec<String> = (0..6).map(|i| test_hash(&format!("rr-{i}"))).collect();
    let results = join_all(news.iter().map(|n| store.rotate_client_secret(&c.id, n))).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.secret_hashes.len(), 2);
    assert!(news.contains(&got.secret_hashes[0]));
    assert!(
        news.contains(&got.secret_hashes[1]),
        "a lost update would leave the original secret as previous"
    );
    store.remove_client(&c.id).await.unwrap();
}

/// Changing grants, scopes and lifetime leaves the secrets alone.
pub async fn client_settings_update(store: &dyn ClientStore) {
    let c = test_client("conf-settings");
    store.put_client(&c).await.unwrap();
    store
        .update_client_settings(&c.id, &[Grant::Password], &[], 86_400)
        .await
        .unwrap();
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.grants, vec![Grant::Password]);
    assert!(got.scopes.is_empty());
    assert_eq!(got.token_lifetime, 86_400);
    assert_eq!(got.secret_hashes, c.secret_hashes);
    assert_eq!(got.created_at, c.created_at);
    for (grants, scopes, lifetime) in [
        (vec![], vec![], 600),
        (vec![Grant::Password, Grant::Password], vec![], 600),
        (vec![Grant::Password], vec!["a b".to_owned()], 600),
        (vec![Grant::Password], vec![], 30),
    ] {
        assert!(matches!(
            store
                .update_client_settings(&c.id, &grants, &scopes, lifetime)
                .await,
            Err(StoreError::Invalid(_))
        ));
    }
    assert_eq!(store.get_client(&c.id).await.unwrap().unwrap(), got);
    assert!(matches!(
        store
            .update_client_settings("conf-settings-none", &[Grant::Password], &[], 600)
            .await,
        Err(StoreError::NotFound(_))
    ));
    store.remove_client(&c.id).await.unwrap();
}

/// The credential-source view of clients and compare-and-set on either slot.
pub async fn client_credential_view_and_cas<S: ClientStore + CredentialSource + ?Sized>(store: &S) {
    let mut c = test_client("conf-cas-client");
    let (cur, prev) = (test_hash("cur"), test_hash("prev"));
    c.secret_hashes = vec![cur.clone(), prev.clone()];
    store.put_client(&c).await.unwrap();
    let creds = store
        .credentials(PrincipalKind::Client, &c.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(creds.hashes, vec![cur.clone(), prev.clone()]);
    assert!(!creds.disabled);
    assert_eq!(
        store
            .credentials(PrincipalKind::Client, "conf-cas-none")
            .await
            .unwrap(),
        None
    );
    // A user of the same name is a different namespace.
    assert_eq!(
        store.credentials(PrincipalKind::User, &c.id).await.unwrap(),
        None
    );

    let prev2 = test_pbkdf2_hash("prev");
    assert!(
        store
            .replace_hash(PrincipalKind::Client, &c.id, &prev, &prev2)
            .await
            .unwrap()
    );
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(
        got.secret_hashes,
        vec![cur.clone(), prev2.clone()],
        "only the matching slot changes"
    );
    // `prev` is gone: a second replace of it does nothing.
    assert!(
        !store
            .replace_hash(PrincipalKind::Client, &c.id, &prev, &test_hash("x"))
            .await
            .unwrap()
    );
    let cur2 = test_hash("cur2");
    assert!(
        store
            .replace_hash(PrincipalKind::Client, &c.id, &cur, &cur2)
            .await
            .unwrap()
    );
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.secret_hashes, vec![cur2, prev2]);
    // Unknown principal, and a new value that is not a hash.
    assert!(
        !store
            .replace_hash(
                PrincipalKind::Client,
                "conf-cas-none",
                &cur,
                &test_hash("y")
            )
            .await
            .unwrap()
    );
    assert!(
        store
            .replace_hash(PrincipalKind::Client, &c.id, &got.secret_hashes[0], "plain")
            .await
            .is_err()
    );
    store.remove_client(&c.id).await.unwrap();
}

/// Concurrent rehash of the same user hash: exactly one replacement happens and the stored
/// hash is the winner's.
pub async fn cas_race_exactly_one_wins<S: UserStore + CredentialSource + ?Sized>(store: &S) {
    let u = test_user("conf-race-user");
    store.put_user(&u).await.unwrap();
    let news: Vec<String> = (0..8).map(|i| test_hash(&format!("race-{i}"))).collect();
    let results = join_all(
        news.iter()
            .map(|n| store.replace_hash(PrincipalKind::User, &u.username, &u.password_hash, n)),
    )
    .await;
    let wins: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| *r.as_ref().unwrap())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(wins.len(), 1, "exactly one CAS must win: {results:?}");
    let stored = store.get_user(&u.username).await.unwrap().unwrap();
    assert_eq!(stored.password_hash, news[wins[0]]);
    store.remove_user(&u.username).await.unwrap();
}

/// Concurrent upgrades of a client's two different slots both land; racing upgrades of
/// one slot land once.
pub async fn cas_race_on_both_client_slots<S: ClientStore + CredentialSource + ?Sized>(store: &S) {
    let mut c = test_client("conf-race-client");
    let (cur, prev) = (test_hash("rc-cur"), test_hash("rc-prev"));
    c.secret_hashes = vec![cur.clone(), prev.clone()];
    store.put_client(&c).await.unwrap();
    let targets: Vec<(String, String)> = (0..4)
        .flat_map(|i| {
            [
                (cur.clone(), test_hash(&format!("rc-cur-{i}"))),
                (prev.clone(), test_hash(&format!("rc-prev-{i}"))),
            ]
        })
        .collect();
    let results = join_all(
        targets
            .iter()
            .map(|(old, new)| store.replace_hash(PrincipalKind::Client, &c.id, old, new)),
    )
    .await;
    let won: Vec<&(String, String)> = targets
        .iter()
        .zip(&results)
        .filter(|(_, r)| *r.as_ref().unwrap())
        .map(|(t, _)| t)
        .collect();
    assert_eq!(won.len(), 2, "one win per slot: {results:?}");
    let cur_new = &won.iter().find(|(o, _)| *o == cur).unwrap().1;
    let prev_new = &won.iter().find(|(o, _)| *o == prev).unwrap().1;
    let got = store.get_client(&c.id).await.unwrap().unwrap();
    assert_eq!(got.secret_hashes, vec![cur_new.clone(), prev_new.clone()]);
    store.remove_client(&c.id).await.unwrap();
}

/// Users: insert, duplicate, disable, password reset, list, remove.
pub async fn users_round_trip(store: &dyn UserStore) {
    let a = test_user("conf-user-a");
    let mut b = test_user("conf-user-b");
    b.password_hash = test_pbkdf2_hash("pw-b");
    b.disabled = true;
    store.put_user(&a).await.unwrap();
    store.put_user(&b).await.unwrap();
    assert_eq!(store.get_user(&a.username).await.unwrap(), Some(a.clone()));
    assert_eq!(store.get_user(&b.username).await.unwrap(), Some(b.clone()));
    assert_eq!(store.get_user("conf-user-none").await.unwrap(), None);
    assert!(matches!(
        store.put_user(&test_user("conf-user-a")).await,
        Err(StoreError::AlreadyExists(_))
    ));
    let mut bad = test_user("conf-user-bad");
    bad.password_hash = "not a hash".into();
    assert!(matches!(
        store.put_user(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    bad = test_user("");
    assert!(matches!(
        store.put_user(&bad).await,
        Err(StoreError::Invalid(_))
    ));

    store.set_user_disabled(&a.username, true).await.unwrap();
    assert!(store.get_user(&a.username).await.unwrap().unwrap().disabled);
    store.set_user_disabled(&a.username, false).await.unwrap();
    assert!(!store.get_user(&a.username).await.unwrap().unwrap().disabled);
    assert!(matches!(
        store.set_user_disabled("conf-user-none", true).await,
        Err(StoreError::NotFound(_))
    ));

    let reset = test_pbkdf2_hash("new-pw");
    store.set_user_password(&a.username, &reset).await.unwrap();
    assert_eq!(
        store
            .get_user(&a.username)
            .await
            .unwrap()
            .unwrap()
            .password_hash,
        reset
    );
    assert!(matches!(
        store.set_user_password("conf-user-none", &reset).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.set_user_password(&a.username, "plain").await,
        Err(StoreError::Invalid(_))
    ));

    let listed: Vec<String> = store
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .filter(|n| n.starts_with("conf-user-"))
        .collect();
    assert_eq!(listed, vec!["conf-user-a", "conf-user-b"]);
    assert!(store.remove_user(&a.username).await.unwrap());
    assert!(!store.remove_user(&a.username).await.unwrap());
    assert!(store.remove_user(&b.username).await.unwrap());
}

/// Bulk insert: existing names are skipped (and left unchanged), invalid input writes
/// nothing.
pub async fn users_bulk_insert(store: &dyn UserStore) {
    let existing = test_user("conf-bulk-1");
    store.put_user(&existing).await.unwrap();
    let mut replacement = test_user("conf-bulk-1");
    replacement.password_hash = test_hash("other");
    let batch = vec![
        test_user("conf-bulk-0"),
        replacement,
        test_user("conf-bulk-2"),
    ];
    assert_eq!(
        store.put_users(&batch).await.unwrap(),
        vec![true, false, true]
    );
    assert_eq!(
        store.get_user("conf-bulk-1").await.unwrap(),
        Some(existing),
        "existing users are not overwritten"
    );
    assert_eq!(
        store.get_user("conf-bulk-2").await.unwrap(),
        Some(batch[2].clone())
    );
    let mut bad = test_user("conf-bulk-bad");
    bad.password_hash = "x".into();
    let r = store.put_users(&[test_user("conf-bulk-3"), bad]).await;
    assert!(matches!(r, Err(StoreError::Invalid(_))), "{r:?}");
    assert_eq!(store.get_user("conf-bulk-3").await.unwrap(), None);
    for n in ["conf-bulk-0", "conf-bulk-1", "conf-bulk-2"] {
        assert!(store.remove_user(n).await.unwrap());
    }
}

/// The credential-source view of users (disabled flag) and compare-and-set.
pub async fn user_credential_view_and_cas<S: UserStore + CredentialSource + ?Sized>(store: &S) {
    let mut u = test_user("conf-cas-user");
    u.disabled = true;
    store.put_user(&u).await.unwrap();
    let creds = store
        .credentials(PrincipalKind::User, &u.username)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(creds.hashes, vec![u.password_hash.clone()]);
    assert!(creds.disabled);
    assert_eq!(
        store
            .credentials(PrincipalKind::Client, &u.username)
            .await
            .unwrap(),
        None
    );
    let new = test_pbkdf2_hash("pw");
    assert!(
        !store
            .replace_hash(PrincipalKind::User, &u.username, &test_hash("wrong"), &new)
            .await
            .unwrap()
    );
    assert!(
        store
            .replace_hash(PrincipalKind::User, &u.username, &u.password_hash, &new)
            .await
            .unwrap()
    );
    assert!(
        !store
            .replace_hash(PrincipalKind::User, &u.username, &u.password_hash, &new)
            .await
            .unwrap()
    );
    let creds = store
        .credentials(PrincipalKind::User, &u.username)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(creds.hashes, vec![new]);
    store.remove_user(&u.username).await.unwrap();
}
