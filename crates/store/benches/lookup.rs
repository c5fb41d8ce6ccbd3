//! Cost of the store on the credential-check path, next to the check itself: one
//! `credentials()` look-up on SQLite (known and unknown principal, 10,000 clients) against
//! one peppered-HMAC verification. Read the ratio, not the absolute numbers (shared,
//! noisy machines): it says whether the store or the hash dominates a cheap check.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use portcullis_core::{CredentialSource, PrincipalKind};
use portcullis_hash::Credential;
use portcullis_hash::pepper::PepperedHmac;
use portcullis_store::{ClientRecord, ClientStore, DataDir, Grant, UserStore};

fn lookup(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = rt.block_on(DataDir::open(tmp.path().join("data"))).unwrap();
    let store = dir.store();
    let peppers = dir.peppers();
    let key = peppers.current().unwrap();
    let users: Vec<_> = (0..10_000)
        .map(|i| {
            portcullis_store::UserRecord::new(
                format!("user-{i:05}"),
                PepperedHmac::create(key, format!("pw-{i}").as_bytes()),
                0,
            )
            .unwrap()
        })
        .collect();
    rt.block_on(store.put_users(&users)).unwrap();
    for i in 0..10_000 {
        let client = ClientRecord {
            id: format!("client-{i:05}"),
            auth: portcullis_store::ClientAuth::Secret,
            secret_hashes: vec![PepperedHmac::create(key, format!("s-{i}").as_bytes())],
            grants: vec![Grant::ClientCredentials],
            scopes: vec!["read".into()],
            token_lifetime: 3600,
            created_at: 0,
        };
        rt.block_on(store.put_client(&client)).unwrap();
    }

    let mut g = c.benchmark_group("store");
    g.bench_function("credentials/known_client", |b| {
        b.iter(|| {
            rt.block_on(store.credentials(PrincipalKind::Client, "client-04321"))
                .unwrap()
                .unwrap()
        })
    });
    g.bench_function("credentials/unknown_client", |b| {
        b.iter(|| {
            rt.block_on(store.credentials(PrincipalKind::Client, "nobody"))
                .unwrap()
        })
    });
    g.bench_function("get_client/known", |b| {
        b.iter(|| {
            rt.block_on(store.get_client("client-04321"))
                .unwrap()
                .unwrap()
        })
    });
    let stored = Credential::parse(&PepperedHmac::create(key, b"s-4321")).unwrap();
    g.bench_function("verify/peppered_hmac", |b| {
        b.iter(|| stored.verify(b"s-4321", &peppers).unwrap())
    });
    g.finish();
}

criterion_group!(benches, lookup);
criterion_main!(benches);
