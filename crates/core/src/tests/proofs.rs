//! Proofs the front end checks itself (issue 14: `private_key_jwt`, TLS client
//! certificates): throttled before the check runs, charged like wrong secrets when they
//! fail, never on the hash pool.

use std::sync::atomic::AtomicUsize;

use super::*;
use crate::config::LimitConfig;
use crate::{Outcome, ProofCheck, UnknownDelay};

fn harness() -> Harness {
    let mut c = config();
    c.throttle.principal_prefix = LimitConfig {
        burst: 3,
        period_secs: 30,
    };
    c.throttle.principal = LimitConfig {
        burst: 5,
        period_secs: 50,
    };
    c.unknown_delay = UnknownDelay::None;
    Harness::new(c)
}

fn proof(h: &Harness, ip: &str) -> Attempt {
    let mut a = h.attempt_kind(PrincipalKind::Client, "signer", "", ip);
    a.protocol = Protocol::OAuthClientAssertion;
    a
}

async fn check(h: &Harness, ip: &str, verdict: ProofCheck, runs: &AtomicUsize) -> Outcome {
    h.v.verify_proof(proof(h, ip), async {
        runs.fetch_add(1, Ordering::Relaxed);
        verdict
    })
    .await
}

#[tokio::test]
async fn issue_14_bad_proofs_are_charged_then_throttled_before_the_check_runs() {
    let h = harness();
    let runs = AtomicUsize::new(0);
    for _ in 0..3 {
        let o = check(&h, "10.0.0.1", ProofCheck::Invalid("bad_signature"), &runs).await;
        assert_eq!(o, Outcome::Rejected);
    }
    assert_eq!(runs.load(Ordering::Relaxed), 3);
    // The (principal, origin) budget is spent: even a good proof is refused unchecked.
    let o = check(&h, "10.0.0.1", ProofCheck::Valid, &runs).await;
    assert!(matches!(o, Outcome::Throttled { .. }), "{o:?}");
    assert_eq!(
        runs.load(Ordering::Relaxed),
        3,
        "a throttled proof must not be checked"
    );
    // Another origin still gets in, and nothing ever reached the hash pool.
    let o = check(&h, "10.9.0.1", ProofCheck::Valid, &runs).await;
    assert_eq!(
        o,
        Outcome::Accepted {
            needs_rehash: false
        }
    );
    let s = h.v.snapshot();
    assert_eq!(
        (s.hashes_computed, s.queued, s.cheap_verifications),
        (0, 0, 0)
    );
    assert_eq!(h.source.lookups.load(Ordering::Relaxed), 0);
    assert_eq!((s.accepted, s.rejected, s.throttled), (1, 3, 1));
}

#[tokio::test]
async fn issue_14_good_proofs_are_not_charged_and_outages_are_overloaded() {
    let h = harness();
    let runs = AtomicUsize::new(0);
    // Many more good proofs than any burst: successes never use the budgets.
    for _ in 0..20 {
        let o = check(&h, "10.0.0.1", ProofCheck::Valid, &runs).await;
        assert_eq!(
            o,
            Outcome::Accepted {
                needs_rehash: false
            }
        );
    }
    // A store outage during the check is "overloaded" and costs no budget.
    for _ in 0..10 {
        let o = check(
            &h,
            "10.0.0.2",
            ProofCheck::Unavailable("replay_store"),
            &runs,
        )
        .await;
        assert!(matches!(o, Outcome::Overloaded { .. }), "{o:?}");
    }
    let o = check(&h, "10.0.0.2", ProofCheck::Valid, &runs).await;
    assert_eq!(
        o,
        Outcome::Accepted {
            needs_rehash: false
        }
    );
    assert_eq!(runs.load(Ordering::Relaxed), 31);
}
