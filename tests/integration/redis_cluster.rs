//! Issue #30: instances sharing their failure budgets through a real Redis Cluster
//! (3 primaries, 3 replicas) and a Sentinel group, started by `scripts/redis-cluster` from
//! Debian's redis-server: budgets spread over every primary, one budget however the
//! guesses are spread, and a primary killed mid-run fails over with no 5xx.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use portcullis_store::RedisTarget;
use portcullis_store::testing::{OwnCluster, OwnRedis, free_port, redis_commands};

use crate::scale_out::{Cluster, cluster, cluster_with, unique};
use crate::server_support::exclusive;

/// Wrong secrets on fresh principals round-robin over the instances until a guesser gets
/// exactly the shared budget (5 failures, then 429), i.e. every instance reaches the
/// budget's shard again; every answer meanwhile must be 401 or 429.
async fn until_shared(c: &Cluster, tag: &str, deadline: Instant) {
    for round in 0.. {
        let (failures, statuses) = c.spread_attack(&format!("{tag}{round}"), 7).await;
        assert!(
            statuses.iter().all(|s| *s == 401 || *s == 429),
            "{statuses:?}"
        );
        if failures == 5 && statuses[5..] == [429, 429] {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "budgets not shared again: {statuses:?}"
        );
        // An instance retries a node it found down after `retry` (100 ms here).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `n` instances over `target` whose per-source budget does not run out in these tests
/// (every request comes from the loopback): what is counted is the per-principal one.
async fn instances(n: usize, target: RedisTarget, tag: &str) -> Cluster {
    cluster_with(n, Some((target, unique(tag))), |c| {
        c.verifier.throttle.prefix.burst = 100_000;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_30_a_guesser_over_three_instances_on_a_redis_cluster_gets_one_budget_and_keys_land_on_every_primary()
 {
    let rc = OwnCluster::start(false);
    let target = RedisTarget::Cluster(rc.cluster_urls());
    let one = cluster(1, Some((target.clone(), unique("one")))).await;
    one.add_client("svc").await;
    let (alone, statuses) = one.spread_attack("svc", 8).await;
    assert_eq!(alone, 5, "{statuses:?}");
    one.stop().await;

    let three = cluster(3, Some((target, unique("three")))).await;
    let secret = three.add_client("svc").await;
    let (shared, statuses) = three.spread_attack("svc", 9).await;
    assert_eq!(shared, alone, "{statuses:?}");
    assert!(statuses[shared..].iter().all(|s| *s == 429), "{statuses:?}");
    for i in 0..3 {
        assert_eq!(three.token(i, "svc", &secret).await.status, 429);
    }
    // Guesses on 30 principals: their budgets spread over the three primaries.
    for k in 0..30 {
        let s = three
            .token(k % 3, &format!("ghost{k}"), "wrong")
            .await
            .status;
        assert_eq!(s, 401);
    }
    let primaries = rc.primaries();
    assert_eq!(primaries.len(), 3);
    for p in primaries {
        let n = rc.dbsize(p);
        assert!(n >= 8, "primary {p} holds {n} keys of about 70");
    }
    three.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_30_a_cluster_primary_killed_mid_run_fails_over_with_no_5xx_and_budgets_are_shared_again()
 {
    let _x = exclusive();
    let rc = OwnCluster::start(false);
    let c = instances(3, RedisTarget::Cluster(rc.cluster_urls()), "kill").await;
    let secret = c.add_client("svc").await;
    until_shared(&c, "before", Instant::now()).await;
    let victim = rc.primaries()[0];
    rc.kill(victim);
    // Mid-run: legitimate requests succeed and guesses are answered 401/429 on every
    // instance while the cluster fails over (about 2 s with a 1 s node timeout).
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut k = 0;
    while rc.primaries().len() < 3 {
        assert!(Instant::now() < deadline, "no replica took over");
        let i = k % 3;
        assert_eq!(c.token(i, "svc", &secret).await.status, 200);
        let s = c.token(i, &format!("mid{}", k % 10), "wrong").await.status;
        assert!(s == 401 || s == 429, "{s}");
        k += 1;
    }
    until_shared(&c, "after", deadline).await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_30_a_sentinel_failover_with_no_5xx_and_budgets_are_shared_again() {
    let _x = exclusive();
    let rc = OwnCluster::start(true);
    let target = RedisTarget::Sentinel {
        nodes: rc.sentinel_urls(),
        master: rc.sentinel_master.clone(),
        master_auth: None,
    };
    let c = instances(2, target, "sentinel").await;
    let secret = c.add_client("svc").await;
    until_shared(&c, "before", Instant::now()).await;
    rc.kill(rc.sentinel_primary);
    let deadline = Instant::now() + Duration::from_secs(20);
    // Until Sentinel promotes the replica every instance answers on its own budgets:
    // never a 5xx. Then the promoted primary is found and budgets are shared again.
    let mut k = 0;
    while rc.sentinel_primary_now() == Some(rc.sentinel_primary) {
        assert!(Instant::now() < deadline, "Sentinel promoted no replica");
        assert_eq!(c.token(k % 2, "svc", &secret).await.status, 200);
        let s = c
            .token(k % 2, &format!("mid{}", k % 10), "wrong")
            .await
            .status;
        assert!(s == 401 || s == 429, "{s}");
        k += 1;
    }
    until_shared(&c, "after", deadline).await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_30_a_refused_wave_costs_redis_almost_no_command_once_refused() {
    let redis = OwnRedis::start(free_port());
    let c = instances(3, RedisTarget::Node(redis.url()), "wave").await;
    let secret = c.add_client("svc").await;
    // A guesser spends its budget (5 failures over the three instances), then keeps going:
    // the first refusals teach each instance, the rest must not reach Redis.
    let (failures, _) = c.spread_attack("victim", 30).await;
    assert_eq!(failures, 5);
    let before = redis_commands(redis.port());
    let (_, statuses) = c.spread_attack("victim", 300).await;
    let spent = redis_commands(redis.port()) - before;
    assert!(statuses.iter().all(|s| *s == 429), "{statuses:?}");
    assert!(
        (spent as f64) / 300.0 < 0.05,
        "{spent} Redis commands for 300 refused attempts"
    );
    // The legitimate client is unaffected, and its success does cost Redis (not cached).
    for i in 0..3 {
        assert_eq!(c.token(i, "svc", &secret).await.status, 200);
    }
    assert!(redis_commands(redis.port()) > before + spent);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_instances_over_a_sentinel_group_with_acl_users_of_its_own_share_one_budget() {
    let _x = exclusive();
    let rc = OwnCluster::start_sentinel_acl();
    let (user, password) = rc.data_login.clone().unwrap();
    let sentinels: Vec<String> = rc
        .sentinel_urls()
        .iter()
        .map(|u| format!("{u:?}"))
        .collect();
    // As an operator writes it: the Sentinels' user in their URLs, the data nodes' own.
    let config = portcullis_server::Config::parse(&format!(
        "[throttle]\nredis = {{ sentinel = [{}], master = {:?}, master_username = {user:?}, \
         master_password = {password:?} }}\n",
        sentinels.join(", "),
        rc.sentinel_master
    ))
    .unwrap();
    let target = config.throttle_redis.unwrap().target;
    let c = instances(2, target, "acl").await;
    c.add_client("svc").await;
    until_shared(&c, "acl", Instant::now() + Duration::from_secs(20)).await;
    c.stop().await;
}
