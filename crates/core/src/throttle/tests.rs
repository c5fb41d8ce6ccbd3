use super::*;
use crate::net::IpPrefix;

fn v4(s: &str) -> Origin {
    Origin::of(IpPrefix::of(s.parse().unwrap(), 24, 64))
}

fn pp(principal: &str, ip: &str) -> ThrottleKey {
    ThrottleKey::PrincipalPrefix {
        kind: PrincipalKind::User,
        principal: principal.into(),
        origin: v4(ip),
    }
}

#[test]
fn gcra_allows_a_burst_then_one_per_interval() {
    // 4 per 40 s: T = 10 s, tau = 30 s.
    let l = GcraLimit::new(4, Duration::from_secs(40));
    assert_eq!(l.interval, Duration::from_secs(10));
    assert_eq!(l.tolerance, Duration::from_secs(30));
    let t0 = Instant::now();
    let mut tat = None;
    for i in 0..4 {
        if let Some(t) = tat {
            assert_eq!(l.conforms(t, t0), Ok(()), "charge {i}");
        }
        tat = Some(l.charge(tat, t0));
    }
    let tat = tat.unwrap();
    assert_eq!(tat, t0 + Duration::from_secs(40));
    assert_eq!(l.conforms(tat, t0), Err(Duration::from_secs(10)));
    assert_eq!(
        l.conforms(tat, t0 + Duration::from_secs(9)),
        Err(Duration::from_secs(1))
    );
    assert_eq!(l.conforms(tat, t0 + Duration::from_secs(10)), Ok(()));
    assert!((l.fill(tat, t0) - 1.0).abs() < 1e-9);
    assert!((l.fill(tat, t0 + Duration::from_secs(20)) - 0.5).abs() < 1e-9);
    // A refund never moves the TAT into the past.
    assert_eq!(l.refund(tat, t0), t0 + Duration::from_secs(30));
    assert_eq!(
        l.refund(t0, t0 + Duration::from_secs(5)),
        t0 + Duration::from_secs(5)
    );
}

#[test]
fn acquire_is_all_or_nothing_across_keys() {
    let s = MemoryThrottleStore::new(1000);
    let now = Instant::now();
    let tight = GcraLimit::new(1, Duration::from_secs(60));
    let loose = GcraLimit::new(100, Duration::from_secs(60));
    let a = Charge {
        key: pp("alice", "10.0.0.1"),
        limit: tight,
    };
    let b = Charge {
        key: ThrottleKey::Prefix(v4("10.0.0.1")),
        limit: loose,
    };
    let both = [a.clone(), b.clone()];
    assert!(matches!(
        s.acquire_now(&both, now),
        Decision::Allowed { .. }
    ));
    // `a` is exhausted: the pair is denied and `b` is not charged for it.
    for _ in 0..10 {
        assert!(matches!(s.acquire_now(&both, now), Decision::Denied { .. }));
    }
    match s.acquire_now(std::slice::from_ref(&b), now) {
        Decision::Allowed { fills } => {
            // Two charges on a budget of 100 (the first pair, and this one).
            assert!((fills[0] - 0.02).abs() < 1e-9, "{fills:?}");
        }
        d => panic!("{d:?}"),
    }
    // Refunding `a` makes the pair conform again.
    s.refund_now(std::slice::from_ref(&a), now);
    assert!(matches!(
        s.acquire_now(&both, now),
        Decision::Allowed { .. }
    ));
}

#[test]
fn denied_reports_the_longest_wait() {
    let s = MemoryThrottleStore::new(1000);
    let now = Instant::now();
    let c1 = Charge {
        key: pp("a", "10.0.0.1"),
        limit: GcraLimit::new(1, Duration::from_secs(10)),
    };
    let c2 = Charge {
        key: pp("b", "10.0.0.1"),
        limit: GcraLimit::new(1, Duration::from_secs(30)),
    };
    s.acquire_now(std::slice::from_ref(&c1), now);
    s.acquire_now(std::slice::from_ref(&c2), now);
    assert_eq!(
        s.acquire_now(&[c1, c2], now),
        Decision::Denied {
            retry_after: Duration::from_secs(30)
        }
    );
}

#[test]
fn trust_marks_expire_and_only_extend() {
    let s = MemoryThrottleStore::new(1000);
    let now = Instant::now();
    let k = pp("alice", "10.0.0.1");
    assert!(!s.is_trusted_now(&k, now));
    s.mark_trusted_now(&k, now + Duration::from_secs(60), now);
    s.mark_trusted_now(&k, now + Duration::from_secs(10), now);
    assert!(s.is_trusted_now(&k, now + Duration::from_secs(59)));
    assert!(!s.is_trusted_now(&k, now + Duration::from_secs(60)));
    assert!(!s.is_trusted_now(&pp("alice", "10.0.1.1"), now));
}

#[test]
fn a_full_store_sweeps_expired_entries_then_evicts_the_least_charged() {
    // 16 shards x 8 entries minimum.
    let s = MemoryThrottleStore::new(16 * 8);
    let now = Instant::now();
    let limit = GcraLimit::new(10, Duration::from_secs(100));
    for i in 0..2000 {
        let c = Charge {
            key: ThrottleKey::Prefix(v4(&format!("10.{}.{}.1", i / 256, i % 256))),
            limit,
        };
        assert!(matches!(s.acquire_now(&[c], now), Decision::Allowed { .. }));
    }
    let total: usize = s.budgets.iter().map(|m| m.lock().len()).sum();
    assert!(total <= 16 * 8, "{total} entries kept");
    assert!(s.evicted() > 0);
    // Expired entries go first: once the budgets have refilled, a new key finds room
    // without evicting anything live.
    let later = now + Duration::from_secs(1000);
    let before = s.evicted();
    let c = Charge {
        key: ThrottleKey::Prefix(v4("11.0.0.1")),
        limit,
    };
    s.acquire_now(&[c], later);
    assert_eq!(s.evicted(), before);
    // A flood of live keys still evicts (the least charged first) rather than grow.
    for i in 0..2000 {
        let c = Charge {
            key: ThrottleKey::Prefix(v4(&format!("12.{}.{}.1", i / 256, i % 256))),
            limit,
        };
        s.acquire_now(&[c], later);
    }
    assert!(s.evicted() > before);
    let total: usize = s.budgets.iter().map(|m| m.lock().len()).sum();
    assert!(total <= 16 * 8, "{total} entries kept");
}

#[test]
fn keys_encode_with_the_principal_last() {
    let k = pp("a:b", "192.0.2.5");
    assert_eq!(k.encode(), "pp:u:192.0.2.0/24:a:b");
    assert_eq!(
        ThrottleKey::Prefix(v4("192.0.2.5")).encode(),
        "p:192.0.2.0/24"
    );
    let k = ThrottleKey::Principal {
        kind: PrincipalKind::Client,
        principal: "svc".into(),
    };
    assert_eq!(k.encode(), "u:c:svc");
}

#[test]
fn a_station_cannot_forge_another_origins_key() {
    // A station naming itself like a prefix-and-principal tail must not collide with a
    // shorter station followed by a principal containing the rest.
    let with = |station: &str, principal: &str| ThrottleKey::PrincipalPrefix {
        kind: PrincipalKind::User,
        principal: principal.into(),
        origin: Origin {
            prefix: v4("192.0.2.5").prefix,
            station: Some(station.into()),
        },
    };
    let a = with("aa:bb", "alice");
    let b = with("aa", "bb:alice");
    assert_ne!(a.encode(), b.encode());
    assert_eq!(a.encode(), "pp:u:192.0.2.0/24#5=aa:bb:alice");
    assert_ne!(
        ThrottleKey::Prefix(v4("192.0.2.5")).encode(),
        with("", "x").encode()
    );
}
