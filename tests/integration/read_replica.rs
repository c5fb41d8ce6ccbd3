//! Issue #30: `[store] read_url`. Lookups on a cache miss read the replica, except for a
//! record the change feed named within the cache TTL, which is read from the primary. The
//! "replica" here is a second schema that the test keeps behind on purpose, so what each
//! lookup read is visible in its answer.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use portcullis_hash::pepper::PepperedHmac;
use portcullis_store::testing::PgSchema;
use portcullis_store::{ClientAuth, ClientRecord, ClientStore, Grant, PgStore};

use crate::scale_out::{Cluster, cluster_with};

fn record(c: &Cluster, id: &str, secret: &str) -> ClientRecord {
    let hash = PepperedHmac::create(c.secrets.peppers.current().unwrap(), secret.as_bytes());
    ClientRecord {
        id: id.into(),
        auth: ClientAuth::Secret,
        secret_hashes: vec![hash],
        grants: vec![Grant::ClientCredentials],
        scopes: Vec::new(),
        token_lifetime: 3600,
        created_at: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_30_lookups_read_the_replica_except_records_changed_within_the_cache_ttl() {
    let replica_schema = PgSchema::new().await;
    // Migrated like the primary (a real replica follows the primary's schema).
    let replica = PgStore::connect_with(replica_schema.options(), 2)
        .await
        .unwrap();
    let read_url = replica_schema.url();
    let c = cluster_with(1, None, move |cfg| {
        cfg.store_read_url = Some(read_url.clone());
        cfg.client_cache_ttl = Duration::from_millis(300);
        // The polls below fail until the replica is read: a client retrying that fast
        // would be throttled (right, but not what this test is about). The answers used
        // to come 250 ms apart only because the pool's first estimate was a guess until
        // a server timed its policy at start (Verifier::calibrate).
        let t = &mut cfg.verifier.throttle;
        for limit in [&mut t.principal_prefix, &mut t.prefix, &mut t.principal] {
            limit.burst = 100_000;
        }
    })
    .await;
    let primary = c.servers[0].parts().store.clone();
    // A client only the replica knows: once the start-up window (one TTL on the primary,
    // changes may have been missed before the feed was up) has passed, it authenticates,
    // so lookups do read the replica.
    replica
        .put_client(&record(&c, "r", "replica-secret"))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.token(0, "r", "replica-secret").await.status != 200 {
        assert!(Instant::now() < deadline, "the replica is never read");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A change on the primary the replica has not applied (it lags): the feed names the
    // client, so for one TTL it is read from the primary: the new secret works at once,
    // the replica's old one does not.
    primary.put_client(&record(&c, "svc", "new")).await.unwrap();
    replica.put_client(&record(&c, "svc", "old")).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.token(0, "svc", "new").await.status != 200 {
        // (The notification travels asynchronously: bounded wait for it.)
        assert!(Instant::now() < deadline, "the primary's change never seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(c.token(0, "svc", "old").await.status, 401);
    c.stop().await;
    replica_schema.drop_now().await;
}
