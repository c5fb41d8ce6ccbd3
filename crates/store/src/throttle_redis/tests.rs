//! [`RedisThrottleStore`] against a real Redis: the machine's (127.0.0.1:6379, started by
//! scripts/services; `PORTCULLIS_TEST_REDIS` overrides) under a fresh key prefix per test,
//! and for the outage test a throwaway `redis-server` of its own on a free port.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use portcullis_core::net::{IpPrefix, Origin};
use portcullis_core::{Charge, Decision, GcraLimit, PrincipalKind, ThrottleKey, ThrottleStore};

use super::*;
use crate::redis_target::tag_of;
use crate::testing::{OwnRedis, free_port, shared_redis_url};

fn unique_prefix(test: &str) -> String {
    use std::hash::BuildHasher;
    // RandomState is seeded at random: a fresh namespace per test and run.
    let r = std::collections::hash_map::RandomState::new().hash_one(test);
    format!("test-{test}-{}-{r:x}", std::process::id())
}

fn store(url: &str, prefix: &str) -> RedisThrottleStore {
    RedisThrottleStore::new(&RedisThrottleConfig {
        target: RedisTarget::Node(url.into()),
        key_prefix: prefix.into(),
        timeout: Duration::from_millis(500),
        retry: Duration::from_millis(50),
    })
    .unwrap()
}

fn origin(addr: &str) -> Origin {
    Origin::of(IpPrefix::of(addr.parse().unwrap(), 24, 64))
}

/// The three budgets of one attempt on `principal` from `addr`, 5 failures per hour each.
fn charges(principal: &str, addr: &str) -> Vec<Charge> {
    let limit = GcraLimit::new(5, Duration::from_secs(3600));
    let kind = PrincipalKind::Client;
    vec![
        Charge {
            key: ThrottleKey::PrincipalPrefix {
                kind,
                principal: principal.into(),
                origin: origin(addr),
            },
            limit,
        },
        Charge {
            key: ThrottleKey::Prefix(origin(addr)),
            limit: GcraLimit::new(50, Duration::from_secs(3600)),
        },
        Charge {
            key: ThrottleKey::Principal {
                kind,
                principal: principal.into(),
            },
            limit: GcraLimit::new(20, Duration::from_secs(3600)),
        },
    ]
}

fn allowed(d: &Decision) -> bool {
    matches!(d, Decision::Allowed { .. })
}

#[tokio::test]
async fn two_instances_share_one_budget() {
    let prefix = unique_prefix("share");
    let (a, b) = (
        store(&shared_redis_url(), &prefix),
        store(&shared_redis_url(), &prefix),
    );
    let c = charges("svc", "198.51.100.7");
    let now = Instant::now();
    // Round-robin over the two "instances": the 5-failure budget is spent once in all.
    let mut results = Vec::new();
    for i in 0..8 {
        let s = if i % 2 == 0 { &a } else { &b };
        results.push(allowed(&s.acquire(&c, now).await.unwrap()));
    }
    assert_eq!(results, [true, true, true, true, true, false, false, false]);
    match b.acquire(&c, now).await.unwrap() {
        Decision::Denied { retry_after } => {
            // One failure is forgiven every 720 s.
            assert!(retry_after > Duration::from_secs(700), "{retry_after:?}");
            assert!(retry_after <= Duration::from_secs(720), "{retry_after:?}");
        }
        d => panic!("{d:?}"),
    }
    // A refund through one instance gives room on the other, once the refund's
    // invalidation reaches the refusal `b` remembers (pub/sub, asynchronous: a loaded
    // machine delays it, so wait for it, bounded; peek charges nothing).
    a.refund(&c, now).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !allowed(&b.peek(&c, now).await.unwrap()) {
        assert!(
            Instant::now() < deadline,
            "the refund's invalidation never reached b"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(allowed(&b.acquire(&c, now).await.unwrap()));
    assert!(!allowed(&a.acquire(&c, now).await.unwrap()));
    // Another source for the same principal has its own (principal, source) budget.
    assert!(allowed(
        &a.acquire(&charges("svc", "203.0.113.7"), now)
            .await
            .unwrap()
    ));
}

#[tokio::test]
async fn peek_charges_nothing_and_denial_charges_nothing() {
    let s = store(&shared_redis_url(), &unique_prefix("peek"));
    let c = charges("alice", "192.0.2.1");
    let now = Instant::now();
    for _ in 0..10 {
        assert!(allowed(&s.peek(&c, now).await.unwrap()));
    }
    match s.acquire(&c, now).await.unwrap() {
        Decision::Allowed { fills } => {
            assert_eq!(fills.len(), 3);
            assert!((fills[0] - 0.2).abs() < 0.01, "{fills:?}");
            assert!((fills[1] - 0.02).abs() < 0.01, "{fills:?}");
        }
        d => panic!("{d:?}"),
    }
    for _ in 0..4 {
        assert!(allowed(&s.acquire(&c, now).await.unwrap()));
    }
    // The (principal, source) budget is spent: a denied acquire must not charge the
    // other two, so another source's attempt on the same principal sees 5 of 20 used.
    assert!(!allowed(&s.acquire(&c, now).await.unwrap()));
    assert!(!allowed(&s.peek(&c, now).await.unwrap()));
    match s.peek(&charges("alice", "192.0.3.1"), now).await.unwrap() {
        Decision::Allowed { fills } => assert!((fills[2] - 0.3).abs() < 0.01, "{fills:?}"),
        d => panic!("{d:?}"),
    }
}

#[tokio::test]
async fn trust_marks_are_shared_and_only_extended() {
    let prefix = unique_prefix("trust");
    let (a, b) = (
        store(&shared_redis_url(), &prefix),
        store(&shared_redis_url(), &prefix),
    );
    let key = charges("bob", "192.0.2.9").remove(0).key;
    let now = Instant::now();
    assert!(!b.is_trusted(&key, now).await.unwrap());
    a.mark_trusted(&key, now, Duration::from_secs(3600))
        .await
        .unwrap();
    assert!(b.is_trusted(&key, now).await.unwrap());
    // A shorter mark does not shorten it.
    b.mark_trusted(&key, now, Duration::from_millis(1))
        .await
        .unwrap();
    let mut conn = redis::Client::open(shared_redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!(
            "{prefix}:t:{{{}}}:{}",
            tag_of(&key.encode()),
            key.encode()
        ))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(ttl > 3_000_000, "{ttl}");
    // A budget key is not a trust mark.
    assert!(
        !a.is_trusted(&charges("bob", "192.0.2.9")[2].key, now)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn an_outage_fails_fast_and_service_comes_back_by_itself() {
    let port = free_port();
    let redis = OwnRedis::start(port);
    let s = store(&redis.url(), "outage");
    let c = charges("carol", "192.0.2.50");
    let now = Instant::now();
    assert!(allowed(&s.acquire(&c, now).await.unwrap()));
    redis.kill();
    // Down: an error (the core then uses its own budgets), counted.
    assert!(s.acquire(&c, now).await.is_err());
    let failures = s.failures();
    assert!(failures >= 1);
    // While marked down, calls fail without trying Redis (no failure is added).
    let e = s.peek(&c, now).await.unwrap_err();
    assert!(e.0.contains("per-instance"), "{e}");
    assert_eq!(s.failures(), failures);
    // Redis back (empty: it keeps nothing): the store reconnects once `retry` passed.
    let redis = OwnRedis::start(port);
    let mut back = false;
    for _ in 0..200 {
        if s.acquire(&c, now).await.is_ok() {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(back, "the store did not come back after Redis restarted");
    assert!(s.ping().await.is_ok());
    drop(redis);
}

#[test]
fn the_url_and_prefix_are_validated() {
    let cfg = |url: &str, prefix: &str| RedisThrottleConfig {
        target: RedisTarget::Node(url.into()),
        key_prefix: prefix.into(),
        timeout: Duration::from_millis(100),
        retry: Duration::from_secs(1),
    };
    assert!(RedisThrottleStore::new(&cfg("http://x", "p")).is_err());
    assert!(RedisThrottleStore::new(&cfg("redis://127.0.0.1", "a{b")).is_err());
    assert!(RedisThrottleStore::new(&cfg("redis://127.0.0.1", "")).is_err());
    assert!(RedisThrottleStore::new(&cfg("redis://127.0.0.1", "a b")).is_err());
    let s = RedisThrottleStore::new(&cfg("redis://:hunter2@127.0.0.1", "p")).unwrap();
    assert!(!format!("{s:?}").contains("hunter2"));
}

#[tokio::test]
async fn issue_25_redis_session_store_conforms_and_is_shared_by_instances() {
    use crate::sessions::SessionStore;
    let prefix = unique_prefix("sessions");
    let url = shared_redis_url();
    let (a, b) = (store(&url, &prefix), store(&url, &prefix));
    let now = 1_900_000_000_000i64;
    crate::sessions::conformance(&a, now).await;
    a.remember(&[9; 16], "roamer", now + 60_000, now)
        .await
        .unwrap();
    assert_eq!(
        b.recall(&[9; 16], now).await.unwrap(),
        Some(("roamer".to_owned(), now + 60_000)),
        "another instance recalls the session"
    );
}

#[tokio::test]
async fn issue_14_redis_nonce_store_conforms_and_is_shared_by_instances() {
    use crate::nonce::NonceStore;
    let prefix = unique_prefix("nonce");
    let url = shared_redis_url();
    let a = store(&url, &prefix);
    let b = store(&url, &prefix);
    let now = 1_700_000_000;
    crate::nonce::conformance(&a, "conf", now).await;
    // A value used at one instance is a replay at the other.
    assert!(a.first_use("jti-1", now + 60, now).await.unwrap());
    assert!(!b.first_use("jti-1", now + 60, now).await.unwrap());
    // Redis expires the key with the value's lifetime (90 s here).
    assert!(b.first_use("ttl", now + 90, now).await.unwrap());
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let pttl: i64 = redis::cmd("PTTL")
        .arg(format!("{prefix}:n:{{{}}}:ttl", tag_of("ttl")))
        .query_async(&mut c)
        .await
        .unwrap();
    assert!((85_000..=90_000).contains(&pttl), "{pttl}");
}
