//! Failure budgets, trust, and unknown principals, on a frozen clock.

use std::time::Duration;

use super::*;
use crate::config::LimitConfig;
use crate::{Outcome, UnknownDelay};

fn limits(c: &mut VerifierConfig) {
    // (principal, prefix): 3 per 30 s; prefix: 10 per 10 s; principal: 5 per 50 s.
    c.throttle.principal_prefix = LimitConfig {
        burst: 3,
        period_secs: 30,
    };
    c.throttle.prefix = LimitConfig {
        burst: 10,
        period_secs: 10,
    };
    c.throttle.principal = LimitConfig {
        burst: 5,
        period_secs: 50,
    };
    c.unknown_delay = UnknownDelay::None;
}

fn harness() -> Harness {
    let mut c = config();
    limits(&mut c);
    let h = Harness::new(c);
    h.source
        .add(PrincipalKind::User, "alice", vec![phc("right", 1000)]);
    h
}

fn is_throttled(o: Outcome) -> bool {
    matches!(o, Outcome::Throttled { .. })
}

#[tokio::test]
async fn issue_4_principal_prefix_budget_throttles_before_hashing() {
    let h = harness();
    for _ in 0..3 {
        assert_eq!(
            h.v.verify(h.attempt("alice", "wrong", "10.0.0.1")).await,
            Outcome::Rejected
        );
    }
    assert_eq!(h.v.snapshot().hashes_computed, 3);
    // Budget spent: even the right password is throttled, and nothing is hashed.
    for secret in ["wrong", "right"] {
        match h.v.verify(h.attempt("alice", secret, "10.0.0.77")).await {
            Outcome::Throttled { retry_after } => {
                // One failure is forgiven every 10 s; jitter stretches by up to 50%.
                assert!(
                    retry_after >= Duration::from_secs(10)
                        && retry_after <= Duration::from_secs(15),
                    "{retry_after:?}"
                );
            }
            o => panic!("expected throttled, got {o:?}"),
        }
    }
    assert_eq!(h.v.snapshot().hashes_computed, 3);
    assert_eq!(h.v.snapshot().throttled, 2);
    // Another network is not affected by this budget.
    assert_eq!(
        h.v.verify(h.attempt("alice", "right", "10.0.1.1")).await,
        Outcome::Accepted {
            needs_rehash: false
        }
    );
    // One interval later one more failure is allowed from the first network, then no more.
    h.clock.advance(Duration::from_secs(10));
    assert_eq!(
        h.v.verify(h.attempt("alice", "wrong", "10.0.0.1")).await,
        Outcome::Rejected
    );
    assert!(is_throttled(
        h.v.verify(h.attempt("alice", "wrong", "10.0.0.1")).await
    ));
}

#[tokio::test]
async fn issue_4_prefix_budget_stops_spraying_across_principals() {
    let h = harness();
    for i in 0..10 {
        let o =
            h.v.verify(h.attempt(&format!("user{i}"), "pw", &format!("10.0.0.{i}")))
                .await;
        assert_eq!(o, Outcome::Rejected, "attempt {i}");
    }
    // The /24 has used its 10 failures: a new principal from a new address in it is
    // throttled; a neighbouring /24 is not.
    assert!(is_throttled(
        h.v.verify(h.attempt("user99", "pw", "10.0.0.200")).await
    ));
    assert_eq!(
        h.v.verify(h.attempt("user99", "pw", "10.0.1.1")).await,
        Outcome::Rejected
    );
    // IPv6: the whole /64 is one budget.
    for i in 0..10 {
        h.v.verify(h.attempt(&format!("v6user{i}"), "pw", &format!("2001:db8::{i:x}")))
            .await;
    }
    assert!(is_throttled(
        h.v.verify(h.attempt("other", "pw", "2001:db8::ffff:1"))
            .await
    ));
    assert_eq!(
        h.v.verify(h.attempt("other", "pw", "2001:db8:0:1::1"))
            .await,
        Outcome::Rejected
    );
    // Unknown principals: no hash was computed for any of this.
    assert_eq!(h.v.snapshot().hashes_computed, 0);
}

#[tokio::test]
async fn issue_4_strangers_cannot_lock_out_the_real_user() {
    let h = harness();
    assert_eq!(
        h.v.verify(h.attempt("alice", "right", "192.0.2.10")).await,
        Outcome::Accepted {
            needs_rehash: false
        }
    );
    // A distributed guess: one wrong password from each of three networks reveals the
    // wave, which cuts the per-principal budget for untrusted sources to those three
    // (issue 16; without detection it would take the whole burst of five).
    for i in 0..3 {
        let o =
            h.v.verify(h.attempt("alice", "guess", &format!("203.0.{i}.1")))
                .await;
        assert_eq!(o, Outcome::Rejected);
    }
    let before = h.v.snapshot().hashes_computed;
    assert!(is_throttled(
        h.v.verify(h.attempt("alice", "guess", "203.0.99.1")).await
    ));
    assert_eq!(
        h.v.snapshot().hashes_computed,
        before,
        "throttled = no hash"
    );
    // The real user, from where she logged in before, is not locked out.
    for _ in 0..3 {
        assert_eq!(
            h.v.verify(h.attempt("alice", "right", "192.0.2.10")).await,
            Outcome::Accepted {
                needs_rehash: false
            }
        );
    }
    // From a new device she is subject to the account's budget like anyone new.
    assert!(is_throttled(
        h.v.verify(h.attempt("alice", "right", "198.51.100.1"))
            .await
    ));
}

#[tokio::test]
async fn issue_4_trust_expires_after_its_ttl() {
    let mut c = config();
    limits(&mut c);
    c.trusted_ttl_secs = 60;
    c.throttle.principal = LimitConfig {
        burst: 2,
        period_secs: 7200,
    };
    let h = Harness::new(c);
    h.source
        .add(PrincipalKind::User, "alice", vec![phc("right", 1000)]);
    assert!(matches!(
        h.v.verify(h.attempt("alice", "right", "192.0.2.10")).await,
        Outcome::Accepted { .. }
    ));
    for i in 0..2 {
        h.v.verify(h.attempt("alice", "x", &format!("203.0.{i}.1")))
            .await;
    }
    h.clock.advance(Duration::from_secs(59));
    assert!(matches!(
        h.v.verify(h.attempt("alice", "right", "192.0.2.10")).await,
        Outcome::Accepted { .. }
    ));
    // That success renewed the mark for another 60 s from now.
    h.clock.advance(Duration::from_secs(59));
    assert!(matches!(
        h.v.verify(h.attempt("alice", "right", "192.0.2.10")).await,
        Outcome::Accepted { .. }
    ));
    h.clock.advance(Duration::from_secs(61));
    assert!(is_throttled(
        h.v.verify(h.attempt("alice", "right", "192.0.2.10")).await
    ));
}

#[tokio::test]
async fn issue_4_allow_listed_sources_skip_prefix_and_principal_budgets() {
    let mut c = config();
    limits(&mut c);
    c.trusted_cidrs = vec!["10.9.0.0/16".parse().unwrap()];
    let h = Harness::new(c);
    h.source
        .add(PrincipalKind::User, "alice", vec![phc("right", 1000)]);
    // A RADIUS NAS relaying many users' typos is not a spraying attacker.
    for i in 0..30 {
        let o =
            h.v.verify(h.attempt(&format!("u{i}"), "pw", "10.9.1.1"))
                .await;
        assert_eq!(o, Outcome::Rejected, "attempt {i}");
    }
    // But guessing one account through it still hits the (principal, prefix) budget.
    for _ in 0..3 {
        h.v.verify(h.attempt("alice", "wrong", "10.9.1.1")).await;
    }
    assert!(is_throttled(
        h.v.verify(h.attempt("alice", "wrong", "10.9.1.1")).await
    ));
}

#[tokio::test]
async fn issue_4_a_success_gives_its_charge_back() {
    let h = harness();
    let ip = "10.0.0.1";
    assert_eq!(
        h.v.verify(h.attempt("alice", "typo", ip)).await,
        Outcome::Rejected
    );
    assert_eq!(
        h.v.verify(h.attempt("alice", "typo", ip)).await,
        Outcome::Rejected
    );
    assert!(matches!(
        h.v.verify(h.attempt("alice", "right", ip)).await,
        Outcome::Accepted { .. }
    ));
    // Three attempts charged, the success refunded: one failure of budget left.
    assert_eq!(
        h.v.verify(h.attempt("alice", "typo", ip)).await,
        Outcome::Rejected
    );
    assert!(is_throttled(
        h.v.verify(h.attempt("alice", "typo", ip)).await
    ));
}

#[tokio::test]
async fn issue_4_unknown_principal_is_indistinguishable_and_spends_no_hash() {
    let h = harness();
    let mut real = Vec::new();
    let mut ghost = Vec::new();
    for _ in 0..4 {
        real.push(h.v.verify(h.attempt("alice", "wrong", "10.0.0.1")).await);
        ghost.push(h.v.verify(h.attempt("ghost", "wrong", "10.0.1.1")).await);
    }
    let shape = |v: &[Outcome]| -> Vec<&'static str> {
        v.iter().map(crate::metrics::outcome_label).collect()
    };
    assert_eq!(
        shape(&real),
        ["rejected", "rejected", "rejected", "throttled"]
    );
    assert_eq!(shape(&ghost), shape(&real));
    // Only alice's three verifications were hashed.
    assert_eq!(h.v.snapshot().hashes_computed, 3);

    // Disabled principals behave like unknown ones.
    h.source.creds.lock().insert(
        (PrincipalKind::User, "bob".into()),
        StoredCredentials {
            hashes: vec![phc("right", 1000)],
            disabled: true,
        },
    );
    assert_eq!(
        h.v.verify(h.attempt("bob", "right", "10.0.2.1")).await,
        Outcome::Rejected
    );
    assert_eq!(h.v.snapshot().hashes_computed, 3);
}

#[tokio::test]
async fn issue_4_retry_after_values_carry_jitter() {
    let h = harness();
    for _ in 0..3 {
        h.v.verify(h.attempt("alice", "wrong", "10.0.0.1")).await;
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..50 {
        match h.v.verify(h.attempt("alice", "wrong", "10.0.0.1")).await {
            Outcome::Throttled { retry_after } => {
                assert!(retry_after >= Duration::from_secs(10));
                assert!(retry_after <= Duration::from_secs(15));
                seen.insert(retry_after);
            }
            o => panic!("{o:?}"),
        }
    }
    assert!(seen.len() > 10, "retry-after values barely vary: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_4_attempts_are_classed_trusted_unknown_or_suspect() {
    // The single pool thread stops on a gate the test holds, so the class each later
    // attempt is queued in can be read from the snapshot.
    let mut c = config();
    limits(&mut c);
    c.pool_threads = 1;
    // A tokio mutex: the test holds it across awaits, the pool thread (no runtime there)
    // takes it with `blocking_lock`.
    let gate = Arc::new(tokio::sync::Mutex::new(()));
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let started_tx = Mutex::new(started_tx);
    let g2 = gate.clone();
    let hook: JobHook = Arc::new(move || {
        let _ = started_tx.lock().send(());
        drop(g2.blocking_lock());
    });
    let h = Harness::with(c, policy(1000), Some(hook));
    h.source
        .add(PrincipalKind::User, "alice", vec![phc("right", 1000)]);
    let spawn = |secret: &'static str, ip: &'static str| {
        let v = h.v.clone();
        let a = h.attempt("alice", secret, ip);
        tokio::spawn(async move { v.verify(a).await })
    };
    let queued = |n: usize| {
        let v = h.v.clone();
        async move {
            while v.snapshot().queued < n {
                tokio::task::yield_now().await;
            }
            v.snapshot().queued_by_class
        }
    };

    let held = gate.lock().await;
    // alice logs in from 192.0.2.1: the held job.
    let first = spawn("right", "192.0.2.1");
    started_rx.recv().unwrap();
    // 10.0.0.0/24 spends 5 of its 10 failures on unknown principals (no hash).
    for i in 0..5 {
        h.v.verify(h.attempt(&format!("nobody{i}"), "x", "10.0.0.1"))
            .await;
    }
    // Its next attempt takes it past half its budget: suspect.
    let suspect = spawn("wrong", "10.0.0.2");
    assert_eq!(queued(1).await, [0, 0, 1]);
    // A network with no history: unknown.
    let unknown = spawn("wrong", "198.51.100.1");
    assert_eq!(queued(2).await, [0, 1, 1]);
    drop(held);
    assert!(matches!(first.await.unwrap(), Outcome::Accepted { .. }));
    assert_eq!(suspect.await.unwrap(), Outcome::Rejected);
    assert_eq!(unknown.await.unwrap(), Outcome::Rejected);
    while started_rx.try_recv().is_ok() {}

    // After that success, 192.0.2.0/24 is trusted for alice.
    let held = gate.lock().await;
    let blocker = spawn("wrong", "203.0.113.1");
    started_rx.recv().unwrap();
    let trusted = spawn("right", "192.0.2.77");
    assert_eq!(queued(1).await, [1, 0, 0]);
    drop(held);
    assert_eq!(blocker.await.unwrap(), Outcome::Rejected);
    assert!(matches!(trusted.await.unwrap(), Outcome::Accepted { .. }));
}

/// Runs `n` attempts for client `svc` from one source, all in flight together: every
/// lookup waits at a barrier until all `n` have passed the throttle check.
async fn concurrent_client_attempts(h: &Harness, n: usize, secret: &str) -> Vec<Outcome> {
    *h.source.gate.lock() = Some(Arc::new(tokio::sync::Barrier::new(n)));
    let runs = (0..n).map(|_| {
        h.v.verify_deferred(h.attempt_kind(PrincipalKind::Client, "svc", secret, "10.0.0.9"))
    });
    let outcomes = futures::future::join_all(runs)
        .await
        .into_iter()
        .map(|d| d.outcome)
        .collect();
    *h.source.gate.lock() = None;
    outcomes
}

#[tokio::test]
async fn issue_5_concurrent_correct_cheap_attempts_are_never_throttled() {
    let h = harness();
    h.source
        .add(PrincipalKind::Client, "svc", vec![peppered("s3cret")]);
    // 50 correct attempts at once against a (principal, prefix) burst of 3: reserving a
    // failure for each up front would throttle all but 3 of them.
    let outcomes = concurrent_client_attempts(&h, 50, "s3cret").await;
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Outcome::Accepted { .. })),
        "{outcomes:?}"
    );
    let s = h.v.snapshot();
    assert_eq!((s.accepted, s.throttled, s.hashes_computed), (50, 0, 0));
    // Nothing was left charged: the full burst of failures is still available.
    for _ in 0..3 {
        let d =
            h.v.verify_deferred(h.attempt_kind(PrincipalKind::Client, "svc", "typo", "10.0.0.9"))
                .await;
        assert_eq!(d.outcome, Outcome::Rejected);
    }
}

#[tokio::test]
async fn issue_5_wrong_cheap_attempts_are_charged_and_throttled() {
    let h = harness();
    h.source
        .add(PrincipalKind::Client, "svc", vec![peppered("s3cret")]);
    let attempt = |secret| h.attempt_kind(PrincipalKind::Client, "svc", secret, "10.0.0.9");
    for _ in 0..3 {
        assert_eq!(
            h.v.verify_deferred(attempt("wrong")).await.outcome,
            Outcome::Rejected
        );
    }
    // The burst of 3 failures is spent: even the right secret is throttled, unverified.
    let lookups = h.source.lookups.load(Ordering::SeqCst);
    for secret in ["wrong", "s3cret"] {
        assert!(is_throttled(
            h.v.verify_deferred(attempt(secret)).await.outcome
        ));
    }
    assert_eq!(h.source.lookups.load(Ordering::SeqCst), lookups);
    assert_eq!(h.v.snapshot().hashes_computed, 0);
}

#[tokio::test]
async fn issue_5_a_concurrent_wave_of_wrong_cheap_attempts_exhausts_the_budget() {
    let h = harness();
    h.source
        .add(PrincipalKind::Client, "svc", vec![peppered("s3cret")]);
    // All pass the check before any has failed (no hash is at stake, so that is fine);
    // their failures are then charged and the next attempt is throttled.
    let outcomes = concurrent_client_attempts(&h, 20, "wrong").await;
    assert!(
        outcomes.iter().all(|o| *o == Outcome::Rejected),
        "{outcomes:?}"
    );
    let d =
        h.v.verify_deferred(h.attempt_kind(PrincipalKind::Client, "svc", "s3cret", "10.0.0.9"))
            .await;
    assert!(is_throttled(d.outcome));
}

#[tokio::test]
async fn issue_4_loopback_attackers_do_not_throttle_a_loopback_user() {
    let h = harness();
    // The real user succeeds from 127.0.0.1; strangers on other loopback addresses then
    // exhaust their own (principal, address) budgets for the same principal.
    assert!(matches!(
        h.v.verify(h.attempt("alice", "right", "127.0.0.1")).await,
        Outcome::Accepted { .. }
    ));
    let mut throttled = 0;
    for i in 2..40 {
        let src = format!("127.0.0.{i}");
        for _ in 0..4 {
            if is_throttled(h.v.verify(h.attempt("alice", "wrong", &src)).await) {
                throttled += 1;
            }
        }
    }
    assert!(throttled > 0, "strangers were never throttled");
    // With /24 grouping these failures would have spent 127.0.0.0/24's budgets.
    assert!(matches!(
        h.v.verify(h.attempt("alice", "right", "127.0.0.1")).await,
        Outcome::Accepted { .. }
    ));
}
