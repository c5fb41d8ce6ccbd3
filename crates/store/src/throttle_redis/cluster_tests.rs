//! [`RedisThrottleStore`] on a real local Redis Cluster and Sentinel group
//! (`scripts/redis-cluster`, one per test), and its remembered refusals on a Redis of the
//! test's own, whose `INFO commandstats` counts what reaches it (issue 30).
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use portcullis_core::net::{IpPrefix, Origin};
use portcullis_core::{Charge, Decision, GcraLimit, PrincipalKind, ThrottleKey, ThrottleStore};

use super::*;
use crate::redis_target::RedisAuth;
use crate::testing::{OwnCluster, OwnRedis, free_port};

fn store(target: RedisTarget, prefix: &str) -> RedisThrottleStore {
    RedisThrottleStore::new(&RedisThrottleConfig {
        target,
        key_prefix: prefix.into(),
        timeout: Duration::from_millis(300),
        retry: Duration::from_millis(100),
    })
    .unwrap()
}

fn origin(addr: &str) -> Origin {
    Origin::of(IpPrefix::of(addr.parse().unwrap(), 24, 64))
}

/// An attempt's three budgets: (principal, source) `pp` failures, source `src`, principal
/// `user`, each per hour.
fn attempt(principal: &str, addr: &str, pp: u32, src: u32, user: u32) -> Vec<Charge> {
    let kind = PrincipalKind::User;
    let hour = Duration::from_secs(3600);
    vec![
        Charge {
            key: ThrottleKey::PrincipalPrefix {
                kind,
                principal: principal.into(),
                origin: origin(addr),
            },
            limit: GcraLimit::new(pp, hour),
        },
        Charge {
            key: ThrottleKey::Prefix(origin(addr)),
            limit: GcraLimit::new(src, hour),
        },
        Charge {
            key: ThrottleKey::Principal {
                kind,
                principal: principal.into(),
            },
            limit: GcraLimit::new(user, hour),
        },
    ]
}

fn allowed(d: &Decision) -> bool {
    matches!(d, Decision::Allowed { .. })
}

fn count_keys(port: u16) -> i64 {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("DBSIZE").query(&mut c).unwrap()
}

#[tokio::test]
async fn issue_30_cluster_budgets_spread_over_every_primary_and_cross_slot_attempts_compensate() {
    let c = OwnCluster::start(false);
    let (a, b) = (
        store(RedisTarget::Cluster(c.cluster_urls()), "spread"),
        store(
            RedisTarget::Cluster(vec![c.cluster_urls()[4].clone()]),
            "spread",
        ),
    );
    let now = Instant::now();
    // 60 identities, each from its own source: 180 budgets.
    for i in 0..60 {
        let ch = attempt(&format!("user{i}"), &format!("10.{i}.0.1"), 5, 50, 20);
        assert!(allowed(&a.acquire(&ch, now).await.unwrap()));
    }
    let primaries = c.primaries();
    assert_eq!(primaries.len(), 3);
    for p in &primaries {
        let n = count_keys(*p);
        assert!(n >= 20, "primary {p} holds {n} of 180 budget keys");
    }
    // One budget shared by two instances (b knows only one seed, not a primary's).
    let ch = attempt("shared", "192.0.2.1", 3, 50, 20);
    let mut got = Vec::new();
    for i in 0..5 {
        let s = if i % 2 == 0 { &a } else { &b };
        got.push(allowed(&s.acquire(&ch, now).await.unwrap()));
    }
    assert_eq!(got, [true, true, true, false, false]);
    // The refusal of the (principal, source) budget charged nothing elsewhere: the
    // source's and the principal's budgets were given back when their slots allowed.
    let other = attempt("shared", "198.51.100.1", 5, 50, 20);
    match a.peek(&other, now).await.unwrap() {
        // Principal budget of 20: 3 charged; the next makes 4 of 20.
        Decision::Allowed { fills } => assert!((fills[2] - 0.2).abs() < 0.01, "{fills:?}"),
        d => panic!("{d:?}"),
    }
    match a
        .peek(&attempt("x", "192.0.2.1", 5, 50, 20), now)
        .await
        .unwrap()
    {
        // Source budget of 50: 3 charged; the next makes 4 of 50.
        Decision::Allowed { fills } => assert!((fills[1] - 0.08).abs() < 0.01, "{fills:?}"),
        d => panic!("{d:?}"),
    }
}

#[tokio::test]
async fn issue_30_concurrent_cross_slot_attempts_never_exceed_a_budget_nor_leak_charges() {
    let c = OwnCluster::start(false);
    // A generous time bound: under a loaded machine a timed-out call would fall back to
    // this instance's own budgets, which is the outage path, not the race under test.
    let s = Arc::new(
        RedisThrottleStore::new(&RedisThrottleConfig {
            target: RedisTarget::Cluster(c.cluster_urls()),
            key_prefix: "race".into(),
            timeout: Duration::from_secs(10),
            retry: Duration::from_millis(100),
        })
        .unwrap(),
    );
    let now = Instant::now();
    // One source (budget 20) guessing 10 principals (budget 3 each, pairs 100): many
    // attempts are refused by a principal's slot after the source's slot charged them.
    let mut tasks = Vec::new();
    for i in 0..200 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            let ch = attempt(&format!("p{}", i % 10), "203.0.113.9", 100, 20, 3);
            (i % 10, allowed(&s.acquire(&ch, now).await.unwrap()))
        }));
    }
    let mut per_principal: HashMap<usize, u32> = HashMap::new();
    let mut total = 0;
    for t in tasks {
        let (p, ok) = t.await.unwrap();
        if ok {
            *per_principal.entry(p).or_default() += 1;
            total += 1;
        }
    }
    // No budget exceeded: each principal at most 3, the source at most 20.
    assert_eq!(s.failures(), 0, "no call may fail here");
    assert!(per_principal.values().all(|n| *n <= 3), "{per_principal:?}");
    assert!(total <= 20, "{total}");
    // Compensation left nothing charged that was not allowed: the source has exactly
    // 20 - total failures left, spent now by fresh principals one at a time.
    let mut more = 0;
    for i in 0..40 {
        let ch = attempt(&format!("fresh{i}"), "203.0.113.9", 100, 20, 3);
        if allowed(&s.acquire(&ch, now).await.unwrap()) {
            more += 1;
        }
    }
    assert_eq!(total + more, 20, "storm {total}, then {more}");
}

#[tokio::test]
async fn issue_30_a_dead_primary_costs_only_its_slots_and_budgets_are_shared_after_failover() {
    let c = OwnCluster::start(false);
    let urls = c.cluster_urls();
    let (a, b) = (
        store(RedisTarget::Cluster(urls.clone()), "failover"),
        store(RedisTarget::Cluster(urls), "failover"),
    );
    let now = Instant::now();
    // Single-budget attempts, so each lives in exactly one slot.
    let one = |i: usize| {
        vec![Charge {
            key: ThrottleKey::Prefix(origin(&format!("10.9.{i}.1"))),
            limit: GcraLimit::new(2, Duration::from_secs(3600)),
        }]
    };
    for i in 0..30 {
        assert!(allowed(&a.acquire(&one(i), now).await.unwrap()));
    }
    let victim = c.primaries()[0];
    c.kill(victim);
    // Every call still answers (no error reaches the core), and budgets on the live
    // primaries stay shared: b sees a's charge and refuses the third failure there.
    let mut shared = 0;
    let mut local = 0;
    for i in 0..30 {
        assert!(allowed(&b.acquire(&one(i), now).await.unwrap()));
        match b.acquire(&one(i), now).await.unwrap() {
            Decision::Denied { .. } => shared += 1,
            Decision::Allowed { .. } => local += 1,
        }
    }
    assert!(shared >= 10, "shared {shared}, local {local}");
    assert!(local >= 3, "the dead primary's slots fall back: {local}");
    // After the failover (a replica promoted) every budget is shared again: fresh
    // budgets charged twice through a are refused through b, whatever their slot.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut round = 0;
    loop {
        round += 1;
        let fresh = |i: usize| {
            vec![Charge {
                key: ThrottleKey::Prefix(origin(&format!("10.{}.{i}.1", 100 + round))),
                limit: GcraLimit::new(2, Duration::from_secs(3600)),
            }]
        };
        let mut refused = 0;
        for i in 0..30 {
            a.acquire(&fresh(i), now).await.unwrap();
            a.acquire(&fresh(i), now).await.unwrap();
            if !allowed(&b.acquire(&fresh(i), now).await.unwrap()) {
                refused += 1;
            }
        }
        if refused == 30 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "budgets not shared after failover ({refused} of 30)"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(c.primaries().len(), 3, "a replica took over");
}

#[tokio::test]
async fn issue_30_sentinel_failover_is_followed() {
    let c = OwnCluster::start(true);
    let target = RedisTarget::Sentinel {
        nodes: c.sentinel_urls(),
        master: c.sentinel_master.clone(),
        master_auth: None,
    };
    let (a, b) = (store(target.clone(), "sentinel"), store(target, "sentinel"));
    let now = Instant::now();
    let ch = attempt("s", "192.0.2.77", 4, 50, 20);
    for _ in 0..2 {
        assert!(allowed(&a.acquire(&ch, now).await.unwrap()));
    }
    c.kill(c.sentinel_primary);
    // Down: errors (the core uses its own budgets) until Sentinel promotes the replica;
    // then the state the replica kept is shared again: 2 more, then refused.
    let deadline = Instant::now() + Duration::from_secs(20);
    while b.peek(&ch, now).await.is_err() || a.peek(&ch, now).await.is_err() {
        assert!(Instant::now() < deadline, "no failover");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(allowed(&b.acquire(&ch, now).await.unwrap()));
    assert!(allowed(&a.acquire(&ch, now).await.unwrap()));
    assert!(!allowed(&b.acquire(&ch, now).await.unwrap()));
}

#[tokio::test]
async fn issue_41_sentinel_with_acl_users_of_their_own_for_the_sentinels_and_the_data_nodes() {
    let c = OwnCluster::start_sentinel_acl();
    let sentinel = c.sentinel_login.clone().unwrap();
    let data = c.data_login.clone().unwrap();
    let target = |sentinels: Option<&(String, String)>, nodes: Option<&(String, String)>| {
        RedisTarget::Sentinel {
            nodes: c.sentinel_urls_as(sentinels),
            master: c.sentinel_master.clone(),
            master_auth: nodes.map(|(u, p)| RedisAuth {
                username: Some(u.clone()),
                password: p.clone(),
            }),
        }
    };
    let now = Instant::now();
    let ch = attempt("acl", "192.0.2.41", 2, 50, 20);
    // Each side as its own user: one budget shared by two instances through the primary.
    let own = || store(target(Some(&sentinel), Some(&data)), "acl");
    let (a, b) = (own(), own());
    assert!(allowed(&a.acquire(&ch, now).await.unwrap()));
    assert!(allowed(&b.acquire(&ch, now).await.unwrap()));
    assert!(!allowed(&a.acquire(&ch, now).await.unwrap()));
    // Every other pairing is refused: no user where one is needed, or one side's user
    // on the other side.
    for (s, n) in [
        (Some(&sentinel), None),
        (None, Some(&data)),
        (Some(&data), Some(&data)),
        (Some(&sentinel), Some(&sentinel)),
    ] {
        let wrong = store(target(s, n), "acl");
        assert!(
            wrong.peek(&ch, now).await.is_err(),
            "sentinels as {:?}, data nodes as {:?}",
            s.map(|x| &x.0),
            n.map(|x| &x.0)
        );
    }
}

#[tokio::test]
async fn issue_30_refusals_are_answered_locally_until_a_refund_or_unblock_reopens_them() {
    let port = free_port();
    let redis = OwnRedis::start(port);
    let (a, b) = (
        store(RedisTarget::Node(redis.url()), "local"),
        store(RedisTarget::Node(redis.url()), "local"),
    );
    let now = Instant::now();
    let ch = attempt("victim", "192.0.2.200", 2, 50, 20);
    assert!(allowed(&a.acquire(&ch, now).await.unwrap()));
    assert!(allowed(&b.acquire(&ch, now).await.unwrap()));
    // Wait for a's subscription (a background task), then learn the refusal once.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !a.remembers_refusals() {
        assert!(Instant::now() < deadline, "no subscription");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let first = match a.peek(&ch, now).await.unwrap() {
        Decision::Denied { retry_after } => retry_after,
        d => panic!("{d:?}"),
    };
    let before = crate::testing::redis_commands(port);
    for _ in 0..1000 {
        match a.peek(&ch, now).await.unwrap() {
            // The same answer: the refusal ends at the same instant.
            Decision::Denied { retry_after } => {
                assert!(retry_after <= first && retry_after + Duration::from_secs(5) > first)
            }
            d => panic!("{d:?}"),
        }
        assert!(!allowed(&a.acquire(&ch, now).await.unwrap()));
    }
    assert_eq!(
        crate::testing::redis_commands(port),
        before,
        "2000 refusals cost no command"
    );
    assert_eq!(a.local_refusals(), 2000);
    let pp = &ch[0].key;
    assert!(a.known_refusal(&[pp], Instant::now()).is_some());
    // A refund through the other instance reopens the budget: a forgets its refusal.
    b.refund(&ch, now).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.known_refusal(&[pp], Instant::now()).is_some() {
        assert!(
            Instant::now() < deadline,
            "refusal not invalidated by the refund"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(allowed(&a.acquire(&ch, now).await.unwrap()));
    assert!(!allowed(&a.acquire(&ch, now).await.unwrap()));
    assert!(a.known_refusal(&[pp], Instant::now()).is_some());
    // An operator's unblock through b clears it everywhere too.
    assert_eq!(b.unblock_keys(std::slice::from_ref(pp)).await.unwrap(), 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.known_refusal(&[pp], Instant::now()).is_some() {
        assert!(
            Instant::now() < deadline,
            "refusal not invalidated by the unblock"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(allowed(&a.acquire(&ch, now).await.unwrap()));
    // Redis gone: nothing is answered from memory any more (the subscription is down,
    // an invalidation could be missed), every call is an error for the core's fallback.
    redis.kill();
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.remembers_refusals() {
        assert!(
            Instant::now() < deadline,
            "subscription still considered up"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(a.acquire(&ch, now).await.is_err());
}
