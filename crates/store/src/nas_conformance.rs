//! Conformance checks for the NAS table (RADIUS clients and their RadSec certificates),
//! part of the backend suite ([`crate::conformance::run_all`] runs them), over `&dyn NasStore`.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::error::StoreError;
use crate::nas::NasRecord;
use crate::seal::MasterKey;
use crate::store::NasStore;

/// RADIUS clients: insert, read back, list, name and CIDR uniqueness, validation, secret
/// rotation, the Message-Authenticator flag, removal; sealed secrets open only for their
/// own NAS.
pub async fn nas_records(store: &dyn NasStore) {
    let master = MasterKey::new([3u8; 32]);
    let nas = |name: &str, cidr: &str, secret: &[u8]| NasRecord {
        name: name.to_owned(),
        cidr: crate::nas::parse_nas_cidr(cidr).unwrap(),
        secret_sealed: NasRecord::seal_secret(&master, name, secret).unwrap(),
        require_message_authenticator: true,
        created_at: 1_700_000_200,
        certificate: None,
    };
    let wifi = nas("conf-nas-wifi", "192.0.2.0/24", b"wifi shared secret");
    let vpn = nas("conf-nas-vpn", "2001:db8:5::7", b"vpn shared secret");
    store.put_nas(&wifi).await.unwrap();
    store.put_nas(&vpn).await.unwrap();
    let got = store.get_nas("conf-nas-wifi").await.unwrap().unwrap();
    assert_eq!(got, wifi);
    assert_eq!(
        &got.open_secret(&master).unwrap()[..],
        b"wifi shared secret"
    );
    assert!(store.get_nas("conf-nas-none").await.unwrap().is_none());
    let mine: Vec<NasRecord> = store
        .list_nas()
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.name.starts_with("conf-nas-"))
        .collect();
    assert_eq!(mine, vec![vpn.clone(), wifi.clone()], "ordered by name");

    assert!(matches!(
        store
            .put_nas(&nas("conf-nas-wifi", "198.51.100.0/24", b"x"))
            .await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(matches!(
        store
            .put_nas(&nas("conf-nas-other", "192.0.2.0/24", b"x"))
            .await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(matches!(
        store
            .put_nas(&nas("bad name!", "198.51.100.0/24", b"x"))
            .await,
        Err(StoreError::Invalid(_))
    ));
    let mut unsealed = nas("conf-nas-empty", "198.51.100.0/24", b"x");
    unsealed.secret_sealed.clear();
    assert!(matches!(
        store.put_nas(&unsealed).await,
        Err(StoreError::Invalid(_))
    ));

    // A sealed secret is bound to its NAS: moved onto another row it does not open.
    let mut moved = store.get_nas("conf-nas-vpn").await.unwrap().unwrap();
    moved.secret_sealed = wifi.secret_sealed.clone();
    assert!(moved.open_secret(&master).is_err());

    let rotated = NasRecord::seal_secret(&master, "conf-nas-vpn", b"the new one").unwrap();
    store
        .set_nas_secret("conf-nas-vpn", &rotated)
        .await
        .unwrap();
    let got = store.get_nas("conf-nas-vpn").await.unwrap().unwrap();
    assert_eq!(&got.open_secret(&master).unwrap()[..], b"the new one");
    assert!(matches!(
        store.set_nas_secret("conf-nas-none", &rotated).await,
        Err(StoreError::NotFound(_))
    ));
    store
        .set_nas_require_message_authenticator("conf-nas-vpn", false)
        .await
        .unwrap();
    let got = store.get_nas("conf-nas-vpn").await.unwrap().unwrap();
    assert!(!got.require_message_authenticator);
    assert_eq!(got.cidr, vpn.cidr, "other fields untouched");
    assert!(matches!(
        store
            .set_nas_require_message_authenticator("conf-nas-none", true)
            .await,
        Err(StoreError::NotFound(_))
    ));

    nas_certificates(store, &nas).await;

    assert!(store.remove_nas("conf-nas-wifi").await.unwrap());
    assert!(!store.remove_nas("conf-nas-wifi").await.unwrap());
    assert!(store.remove_nas("conf-nas-vpn").await.unwrap());
}

/// RadSec NAS certificates (issue 28): stored with the NAS, set and cleared, and one
/// certificate names at most one NAS.
async fn nas_certificates(store: &dyn NasStore, nas: &dyn Fn(&str, &str, &[u8]) -> NasRecord) {
    use crate::nas::NasCertificate;
    let pin = NasCertificate::pin(b"a DER certificate");
    let mut ap = nas("conf-nas-radsec", "203.0.113.9", b"s");
    ap.certificate = Some(pin.clone());
    store.put_nas(&ap).await.unwrap();
    assert_eq!(store.get_nas("conf-nas-radsec").await.unwrap().unwrap(), ap);
    let mut twin = nas("conf-nas-twin", "203.0.113.10", b"s");
    twin.certificate = Some(pin.clone());
    assert!(
        matches!(
            store.put_nas(&twin).await,
            Err(StoreError::AlreadyExists(_))
        ),
        "a certificate names one NAS"
    );
    assert!(matches!(
        store.set_nas_certificate("conf-nas-wifi", Some(&pin)).await,
        Err(StoreError::AlreadyExists(_))
    ));
    let named = NasCertificate::name("AP-17.Example.NET").unwrap();
    store
        .set_nas_certificate("conf-nas-wifi", Some(&named))
        .await
        .unwrap();
    let got = store.get_nas("conf-nas-wifi").await.unwrap().unwrap();
    assert_eq!(
        got.certificate,
        Some(NasCertificate::Name("ap-17.example.net".into()))
    );
    store
        .set_nas_certificate("conf-nas-wifi", None)
        .await
        .unwrap();
    assert_eq!(
        store
            .get_nas("conf-nas-wifi")
            .await
            .unwrap()
            .unwrap()
            .certificate,
        None
    );
    assert!(matches!(
        store.set_nas_certificate("conf-nas-none", None).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.remove_nas("conf-nas-radsec").await.unwrap());
}
