//! Stations behind a relaying source (issue 12: all users behind one RADIUS NAS share its
//! address, so throttling and trust key on (NAS, station), not on the NAS alone).

use std::time::Duration;

use super::*;
use crate::config::LimitConfig;
use crate::{Outcome, UnknownDelay};

const NAS: &str = "10.9.0.1";

fn harness() -> Harness {
    let mut c = config();
    // (principal, origin): 3 per 30 s; origin: 5 per 50 s; principal: 8 per 80 s.
    c.throttle.principal_prefix = LimitConfig {
        burst: 3,
        period_secs: 30,
    };
    c.throttle.prefix = LimitConfig {
        burst: 5,
        period_secs: 50,
    };
    c.throttle.principal = LimitConfig {
        burst: 8,
        period_secs: 80,
    };
    c.unknown_delay = UnknownDelay::None;
    // These tests are about origin budgets; distributed-attack detection (which the
    // stations' failures on one user would trigger) has its own tests.
    c.throttle.distributed_origins = 0;
    let h = Harness::new(c);
    for user in ["alice", "bob", "carol"] {
        h.source
            .add(PrincipalKind::User, user, vec![phc("right", 1000)]);
    }
    h
}

fn at(h: &Harness, user: &str, secret: &str, station: &str) -> Attempt {
    Attempt {
        station: Some(station.to_owned()),
        ..h.attempt(user, secret, NAS)
    }
}

fn accepted() -> Outcome {
    Outcome::Accepted {
        needs_rehash: false,
    }
}

#[tokio::test]
async fn issue_12_one_guessing_station_does_not_throttle_its_nas() {
    let h = harness();
    // The guessing station spreads over usernames until its own budget is gone.
    for user in ["alice", "bob", "carol", "alice", "bob"] {
        assert_eq!(
            h.v.verify(at(&h, user, "wrong", "02-00-00-00-00-66")).await,
            Outcome::Rejected
        );
    }
    assert!(matches!(
        h.v.verify(at(&h, "carol", "wrong", "02-00-00-00-00-66"))
            .await,
        Outcome::Throttled { .. }
    ));
    // Other stations behind the same NAS address still get their passwords checked.
    assert_eq!(
        h.v.verify(at(&h, "carol", "right", "02-00-00-00-00-01"))
            .await,
        accepted()
    );
    assert_eq!(
        h.v.verify(at(&h, "bob", "wrong", "02-00-00-00-00-02"))
            .await,
        Outcome::Rejected
    );
    // Without a station the NAS address itself is the origin, and its budget is untouched
    // by the stations' failures.
    assert_eq!(h.v.verify(h.attempt("bob", "right", NAS)).await, accepted());
}

#[tokio::test]
async fn issue_12_trust_is_per_station_and_survives_a_flood_from_others() {
    let h = harness();
    assert_eq!(
        h.v.verify(at(&h, "alice", "right", "alice-laptop")).await,
        accepted()
    );
    // Many stations behind the same NAS guess alice's password until her untrusted
    // budget is exhausted.
    let mut throttled = 0;
    for n in 0..20 {
        let o =
            h.v.verify(at(&h, "alice", "wrong", &format!("attacker-{n}")))
                .await;
        throttled += usize::from(matches!(o, Outcome::Throttled { .. }));
    }
    assert!(throttled >= 12, "the principal budget held ({throttled})");
    // Her own station is trusted: not locked out by someone else's failures.
    assert_eq!(
        h.v.verify(at(&h, "alice", "right", "alice-laptop")).await,
        accepted()
    );
    // A new station of hers is not trusted, and her budget is spent.
    assert!(matches!(
        h.v.verify(at(&h, "alice", "right", "alice-phone")).await,
        Outcome::Throttled { .. }
    ));
    h.clock.advance(Duration::from_secs(80));
    assert_eq!(
        h.v.verify(at(&h, "alice", "right", "alice-phone")).await,
        accepted()
    );
}
