//! The dynamic-registration part of the backend conformance suite (issue 27): initial
//! access tokens, registrations that consume them (never beyond their uses, even
//! concurrently), RFC 7592 updates and removal with the client. Each check takes
//! `&dyn RegistrationStore`, or a store that is also a [`ClientStore`]; each uses its own
//! names, so it runs on a store that is not empty.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures::future::join_all;

use crate::error::StoreError;
use crate::record::{ClientAuth, ClientRecord, Grant};
use crate::registration::{ClientRegistration, InitialAccessToken, TokenRotation, hash_token};
use crate::store::{ClientStore, RegistrationStore, Store};

/// A token `id` allowing `max_uses` registrations until `expires_at`.
pub fn test_token(id: &str, max_uses: u32, expires_at: i64) -> InitialAccessToken {
    InitialAccessToken {
        id: id.to_owned(),
        secret_hash: hash_token(&format!("{id}/secret")),
        description: format!("for {id}"),
        created_at: 1_700_000_000,
        expires_at,
        max_uses,
        uses: 0,
        scopes: vec!["read".into(), "write:all".into()],
        grants: vec![Grant::ClientCredentials],
        auth_methods: vec!["client_secret_basic".into(), "private_key_jwt".into()],
    }
}

/// A secret client (its own builder: this module is below `conformance`, which runs it).
fn test_client(id: &str) -> ClientRecord {
    let key = portcullis_hash::PepperKey::new("reg-conformance", [9u8; 32]).unwrap();
    ClientRecord {
        id: id.to_owned(),
        auth: ClientAuth::Secret,
        secret_hashes: vec![portcullis_hash::pepper::PepperedHmac::create(
            &key,
            id.as_bytes(),
        )],
        grants: vec![Grant::ClientCredentials, Grant::Password],
        scopes: vec!["read".into(), "write:all".into()],
        token_lifetime: 900,
        created_at: 1_700_000_000,
    }
}

fn registration(client: &str, token: Option<&str>) -> ClientRegistration {
    ClientRegistration {
        client_id: client.to_owned(),
        access_token_hash: hash_token(&format!("{client}/rat")),
        metadata: format!(r#"{{"client_name":"{client}"}}"#),
        initial_token: token.map(str::to_owned),
        created_at: 1_700_000_500,
        updated_at: 1_700_000_500,
    }
}

/// Run every check.
pub async fn run_all(store: &dyn Store) {
    tokens_round_trip(store).await;
    registration_consumes_uses(store).await;
    concurrent_registrations_never_exceed_uses(store).await;
    registered_client_update_and_removal(store).await;
}

/// Tokens are stored and read back whole, validated, listed and removed.
pub async fn tokens_round_trip(store: &dyn RegistrationStore) {
    let t = test_token("reg-t1", 3, 1_800_000_000);
    store.put_initial_access_token(&t).await.unwrap();
    assert_eq!(
        store.get_initial_access_token("reg-t1").await.unwrap(),
        Some(t.clone())
    );
    assert!(matches!(
        store.put_initial_access_token(&t).await,
        Err(StoreError::AlreadyExists(_))
    ));
    let mut bad = test_token("reg-bad", 1, 1_800_000_000);
    bad.secret_hash = "plaintext".into();
    assert!(matches!(
        store.put_initial_access_token(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    let mut bad = test_token("reg-bad", 1, 1_800_000_000);
    bad.auth_methods = vec!["client_secret_jwt".into()];
    assert!(matches!(
        store.put_initial_access_token(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    let mut bad = test_token("reg-bad", 0, 1_800_000_000);
    bad.max_uses = 0;
    assert!(store.put_initial_access_token(&bad).await.is_err());
    assert!(
        store
            .get_initial_access_token("reg-bad")
            .await
            .unwrap()
            .is_none()
    );
    let listed = store.list_initial_access_tokens().await.unwrap();
    assert!(listed.iter().any(|x| x.id == "reg-t1"));
    assert!(store.remove_initial_access_token("reg-t1").await.unwrap());
    assert!(!store.remove_initial_access_token("reg-t1").await.unwrap());
}

/// Each registration consumes one use, in the transaction that inserts the client; a
/// used-up or expired token registers nothing.
pub async fn registration_consumes_uses<S: ClientStore + RegistrationStore + ?Sized>(store: &S) {
    store
        .put_initial_access_token(&test_token("reg-t2", 1, 1_700_001_000))
        .await
        .unwrap();
    let c = test_client("reg-c1");
    store
        .register_client(&c, &registration("reg-c1", Some("reg-t2")), 1_700_000_900)
        .await
        .unwrap();
    assert_eq!(
        store
            .get_initial_access_token("reg-t2")
            .await
            .unwrap()
            .unwrap()
            .uses,
        1
    );
    assert_eq!(store.get_client("reg-c1").await.unwrap(), Some(c));
    let r = store.get_client_registration("reg-c1").await.unwrap();
    assert_eq!(r, Some(registration("reg-c1", Some("reg-t2"))));
    // Used up: nothing is written.
    let err = store
        .register_client(
            &test_client("reg-c2"),
            &registration("reg-c2", Some("reg-t2")),
            1_700_000_900,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    assert!(store.get_client("reg-c2").await.unwrap().is_none());
    // Expired (at exactly expires_at too).
    store
        .put_initial_access_token(&test_token("reg-t3", 5, 1_700_001_000))
        .await
        .unwrap();
    let err = store
        .register_client(
            &test_client("reg-c3"),
            &registration("reg-c3", Some("reg-t3")),
            1_700_001_000,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    assert!(store.get_client("reg-c3").await.unwrap().is_none());
    // A taken client id rolls back the consumed use.
    let err = store
        .register_client(
            &test_client("reg-c1"),
            &registration("reg-c1", Some("reg-t3")),
            1_700_000_900,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists(_)), "{err}");
    assert_eq!(
        store
            .get_initial_access_token("reg-t3")
            .await
            .unwrap()
            .unwrap()
            .uses,
        0
    );
}

/// Ten registrations race on a token allowing three: exactly three clients exist.
pub async fn concurrent_registrations_never_exceed_uses<
    S: ClientStore + RegistrationStore + ?Sized,
>(
    store: &S,
) {
    store
        .put_initial_access_token(&test_token("reg-race", 3, 1_800_000_000))
        .await
        .unwrap();
    let ids: Vec<String> = (0..10).map(|i| format!("reg-race-{i}")).collect();
    let results = join_all(ids.iter().map(|id| async move {
        let mut tries = 0;
        loop {
            // SQLite answers a writer that lost the lock race with a busy error after its
            // timeout; only "token spent" and success are outcomes here.
            match store
                .register_client(
                    &test_client(id),
                    &registration(id, Some("reg-race")),
                    1_700_000_900,
                )
                .await
            {
                Err(StoreError::Backend(_)) if tries < 5 => tries += 1,
                other => return other,
            }
        }
    }))
    .await;
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 3, "{results:?}");
    let mut present = 0;
    for id in &ids {
        present += usize::from(store.get_client(id).await.unwrap().is_some());
    }
    assert_eq!(present, 3);
}

/// RFC 7592 update changes settings, key and metadata together and keeps the method;
/// removing the client removes its registration.
pub async fn registered_client_update_and_removal<S: ClientStore + RegistrationStore + ?Sized>(
    store: &S,
) {
    let jwks = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
    let mut c = test_client("reg-u1");
    c.auth = ClientAuth::PrivateKeyJwt { jwks: jwks.into() };
    c.secret_hashes.clear();
    store
        .register_client(&c, &registration("reg-u1", None), 1_700_000_900)
        .await
        .unwrap();
    let mut changed = c.clone();
    changed.scopes = vec!["read".into()];
    changed.grants = vec![Grant::ClientCredentials];
    changed.auth = ClientAuth::PrivateKeyJwt {
        jwks: jwks.replace("11qY", "22qY"),
    };
    let (first, second, third) = (
        hash_token("reg-u1/rat"),
        hash_token("reg-u1/rat2"),
        hash_token("reg-u1/rat3"),
    );
    let swap = |old_hash, new_hash| TokenRotation { old_hash, new_hash };
    // An update presenting a token that is no longer current changes nothing.
    assert!(matches!(
        store
            .update_registered_client(&changed, "{}", &swap(&second, &third), 1)
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.get_client("reg-u1").await.unwrap(), Some(c.clone()));
    store
        .update_registered_client(
            &changed,
            r#"{"client_name":"new"}"#,
            &swap(&first, &second),
            1_700_001_234,
        )
        .await
        .unwrap();
    assert_eq!(store.get_client("reg-u1").await.unwrap(), Some(changed));
    let r = store
        .get_client_registration("reg-u1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.metadata, r#"{"client_name":"new"}"#);
    assert_eq!(r.access_token_hash, second);
    assert_eq!((r.created_at, r.updated_at), (1_700_000_500, 1_700_001_234));
    // A read's rotation: only from the current hash, exactly once.
    assert!(
        !store
            .rotate_registration_token("reg-u1", &swap(&first, &third))
            .await
            .unwrap()
    );
    assert!(
        store
            .rotate_registration_token("reg-u1", &swap(&second, &third))
            .await
            .unwrap()
    );
    assert!(
        !store
            .rotate_registration_token("reg-u1", &swap(&second, &third))
            .await
            .unwrap()
    );
    let r = store.get_client_registration("reg-u1").await.unwrap();
    assert_eq!(r.unwrap().access_token_hash, third);
    // The method cannot change through an update.
    let mut secret = test_client("reg-u1");
    secret.scopes.clear();
    assert!(matches!(
        store
            .update_registered_client(&secret, "{}", &swap(&third, &first), 1)
            .await,
        Err(StoreError::Invalid(_))
    ));
    // A client added by the operator is not a registered one.
    store.put_client(&test_client("reg-plain")).await.unwrap();
    assert!(matches!(
        store
            .update_registered_client(&test_client("reg-plain"), "{}", &swap(&third, &first), 1)
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.remove_client("reg-u1").await.unwrap());
    assert!(
        store
            .get_client_registration("reg-u1")
            .await
            .unwrap()
            .is_none()
    );
}
