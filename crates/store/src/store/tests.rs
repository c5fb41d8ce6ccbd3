//! Trait upcasting from the umbrella [`Store`] to each capability: what a door is handed
//! is the same store, seen through the one trait it names.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use portcullis_core::{CredentialSource, PrincipalKind};

use super::*;
use crate::conformance::{test_client, test_user};
use crate::nas::NasRecord;
use crate::versioned::Resource;

/// A NAS that validates (the secret is not opened here).
fn nas(name: &str, cidr: &str) -> NasRecord {
    NasRecord {
        name: name.into(),
        cidr: cidr.parse().unwrap(),
        secret_sealed: vec![7; 40],
        require_message_authenticator: true,
        created_at: 1_700_000_000,
        certificate: None,
    }
}

#[tokio::test]
async fn issue_38_capabilities_are_upcasts_of_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        crate::SqliteStore::open(&dir.path().join("db"))
            .await
            .unwrap(),
    );

    // Each door's view: an upcast of the same Arc, no copy, no wrapper.
    let health: Arc<dyn Health> = store.clone();
    let clients: Arc<dyn ClientStore> = store.clone();
    let users: Arc<dyn UserStore> = store.clone();
    let nas_table: Arc<dyn NasStore> = store.clone();
    let versioned: Arc<dyn VersionedStore> = store.clone();
    let revocations: Arc<dyn RevocationStore> = store.clone();
    let credentials: Arc<dyn CredentialSource> = store.clone();
    let _keys: Arc<dyn SigningKeyStore> = store.clone();
    let _acct: Arc<dyn AccountingStore> = store.clone();
    let _reg: Arc<dyn RegistrationStore> = store.clone();
    let _idem: Arc<dyn IdempotencyStore> = store.clone();
    assert_eq!(Arc::strong_count(&store), 12);

    health.ping().await.unwrap();
    // Written through one capability, seen through another and through the umbrella.
    clients.put_client(&test_client("up")).await.unwrap();
    let seen = versioned.client_versioned("up").await.unwrap().unwrap();
    assert_eq!(seen.record.id, "up");
    assert!(store.get_client("up").await.unwrap().is_some());

    users.put_user(&test_user("alice")).await.unwrap();
    let stored = credentials
        .credentials(PrincipalKind::User, "alice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.hashes, vec![test_user("alice").password_hash]);

    nas_table
        .put_nas(&nas("ap1", "192.0.2.0/24"))
        .await
        .unwrap();
    let v = versioned
        .nas_versioned("ap1")
        .await
        .unwrap()
        .unwrap()
        .version;
    versioned
        .remove_versioned(Resource::Nas, "ap1", v)
        .await
        .unwrap();
    assert!(nas_table.get_nas("ap1").await.unwrap().is_none());

    revocations.revoke_token("jti-1", i64::MAX).await.unwrap();
    assert!(store.is_revoked("jti-1").await.unwrap());
}

#[tokio::test]
async fn issue_38_a_dedicated_handle_upcasts_to_accounting() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        crate::SqliteStore::open(&dir.path().join("db"))
            .await
            .unwrap(),
    );
    let own: Arc<dyn AccountingStore> = store.dedicated().await.unwrap();
    let record = crate::acct_conformance::record("nas-up", "s-up", 1, 1_700_000_000);
    assert_eq!(own.append_accounting(&[record]).await.unwrap(), vec![true]);
    // The umbrella's pool sees what the dedicated connection committed.
    assert_eq!(store.acct_records_since(0, 10).await.unwrap().len(), 1);
}
