//! Users whose passwords live in an external directory (issue 40), against a fake
//! [`RemoteSource`] that counts what reaches it: budgets before any check, a hanging
//! directory holds only its own users, "unavailable" is not charged, "unknown" is a
//! rejection.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use parking_lot::Mutex;

use super::{Harness, config, phc};
use crate::remote::{RemoteAnswer, RemoteRoute, RemoteSource, RemoteVerdict};
use crate::{Clock, GcraLimit, ManualClock, Outcome, PrincipalKind};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// "secret" is the password of every user; `nobody@..` does not exist.
    Answer,
    Hang,
    Down,
}

/// Directories `a` and `b`: users `name@a`, `name@b`.
struct Fake {
    behaviour: [Mutex<Behaviour>; 2],
    checks: [AtomicUsize; 2],
    /// A bind of an existing user takes this long on the test's clock (a search that
    /// finds nothing takes no time).
    bind_time: Duration,
    clock: ManualClock,
    /// The credential cache's maximum age, when on.
    cache: Mutex<Option<Duration>>,
    /// The admission key of every check, in order.
    sources: Mutex<Vec<String>>,
}

impl Fake {
    fn new(clock: ManualClock) -> Arc<Fake> {
        Arc::new(Fake {
            behaviour: [Mutex::new(Behaviour::Answer), Mutex::new(Behaviour::Answer)],
            checks: [AtomicUsize::new(0), AtomicUsize::new(0)],
            bind_time: Duration::from_millis(200),
            clock,
            cache: Mutex::new(None),
            sources: Mutex::new(Vec::new()),
        })
    }
}

impl RemoteSource for Fake {
    fn route(&self, user: &str) -> Option<RemoteRoute> {
        let index = match user.rsplit_once('@')?.1 {
            "a" => 0,
            "b" => 1,
            _ => return None,
        };
        Some(RemoteRoute {
            index,
            directory: Arc::from(if index == 0 { "a" } else { "b" }),
            failure_limit: GcraLimit::new(3, Duration::from_secs(3600)),
            cache_max_age: *self.cache.lock(),
        })
    }

    fn check<'a>(
        &'a self,
        route: &'a RemoteRoute,
        source: &'a str,
        user: &'a str,
        password: &'a [u8],
    ) -> BoxFuture<'a, RemoteAnswer> {
        async move {
            self.checks[route.index].fetch_add(1, Ordering::SeqCst);
            self.sources.lock().push(source.to_owned());
            let behaviour = *self.behaviour[route.index].lock();
            let verdict = match behaviour {
                Behaviour::Hang => futures::future::pending().await,
                Behaviour::Down => RemoteVerdict::Unavailable("down"),
                Behaviour::Answer if user.starts_with("nobody@") => RemoteVerdict::Unknown,
                Behaviour::Answer => {
                    self.clock.advance(self.bind_time);
                    if password == b"secret" {
                        RemoteVerdict::Accepted
                    } else {
                        RemoteVerdict::Rejected
                    }
                }
            };
            RemoteAnswer {
                verdict,
                server: None,
            }
        }
        .boxed()
    }
}

fn harness() -> (Harness, Arc<Fake>) {
    let mut config = config();
    // The core's own rule against a distributed guess would cut the principal's budget
    // to 3 after 3 origins; widened, so that only the directory's budget holds below.
    config.throttle.distributed_origins = 100;
    let h = Harness::new(config);
    let fake = Fake::new(h.clock.clone());
    h.v.set_remote_source(Arc::clone(&fake) as _);
    (h, fake)
}

#[tokio::test]
async fn directory_users_are_checked_there_and_local_users_here() {
    let (h, fake) = harness();
    h.source
        .add(PrincipalKind::User, "local", vec![phc("local-pw", 1000)]);
    let ok =
        h.v.verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
            .await;
    assert!(matches!(ok.outcome, Outcome::Accepted { .. }));
    let bad =
        h.v.verify_deferred(h.attempt("ann@a", "nope", "10.0.0.1"))
            .await;
    assert_eq!(bad.outcome, Outcome::Rejected);
    let unknown =
        h.v.verify_deferred(h.attempt("nobody@a", "x", "10.0.0.2"))
            .await;
    assert_eq!(unknown.outcome, Outcome::Rejected, "unknown is a rejection");
    let local =
        h.v.verify_deferred(h.attempt("local", "local-pw", "10.0.0.3"))
            .await;
    assert!(matches!(local.outcome, Outcome::Accepted { .. }));
    // A name no directory takes is unknown locally and never sent anywhere.
    let stranger =
        h.v.verify_deferred(h.attempt("zed@c", "secret", "10.0.0.4"))
            .await;
    assert_eq!(stranger.outcome, Outcome::Rejected);
    assert_eq!(fake.checks[0].load(Ordering::SeqCst), 3);
    assert_eq!(fake.checks[1].load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_refused_guess_never_reaches_the_directory() {
    let (h, fake) = harness();
    let mut throttled = 0;
    for k in 0..20 {
        let d =
            h.v.verify_deferred(h.attempt("ann@a", "guess", &format!("10.{k}.0.1")))
                .await;
        match d.outcome {
            Outcome::Rejected => {}
            Outcome::Throttled { .. } => throttled += 1,
            other => panic!("{other:?}"),
        }
    }
    // The directory's failure budget (3), not `throttle.principal` (20), bounds what
    // reaches it from untrusted origins.
    assert_eq!(fake.checks[0].load(Ordering::SeqCst), 3);
    assert_eq!(throttled, 17);
}

#[tokio::test]
async fn unavailable_is_answered_as_such_and_not_charged() {
    let (h, fake) = harness();
    *fake.behaviour[0].lock() = Behaviour::Down;
    for _ in 0..10 {
        let d =
            h.v.verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
                .await;
        assert!(matches!(d.outcome, Outcome::Unavailable { .. }), "{d:?}");
    }
    assert_eq!(fake.checks[0].load(Ordering::SeqCst), 10, "never throttled");
    assert_eq!(h.v.snapshot().unavailable, 10);
}

#[tokio::test]
async fn a_hanging_directory_holds_only_its_own_users() {
    let (h, fake) = harness();
    *fake.behaviour[0].lock() = Behaviour::Hang;
    h.source
        .add(PrincipalKind::User, "local", vec![phc("local-pw", 1000)]);
    let mut stuck = Vec::new();
    for k in 0..50 {
        let v = h.v.clone();
        let a = h.attempt(&format!("u{k}@a"), "secret", &format!("10.1.{k}.1"));
        stuck.push(tokio::spawn(async move { v.verify_deferred(a).await }));
    }
    // Wait until every one of them is inside the directory.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fake.checks[0].load(Ordering::SeqCst) < 50 {
        assert!(std::time::Instant::now() < deadline, "checks never started");
        tokio::task::yield_now().await;
    }
    assert_eq!(
        h.v.snapshot().busy_threads,
        0,
        "no hash thread waits on a directory"
    );
    let local =
        h.v.verify_deferred(h.attempt("local", "local-pw", "10.9.0.1"))
            .await;
    assert!(matches!(local.outcome, Outcome::Accepted { .. }));
    let other =
        h.v.verify_deferred(h.attempt("bob@b", "secret", "10.9.0.2"))
            .await;
    assert!(matches!(other.outcome, Outcome::Accepted { .. }));
    for t in &stuck {
        assert!(!t.is_finished());
    }
    for t in stuck {
        t.abort();
    }
}

#[tokio::test]
async fn an_unknown_name_is_answered_when_a_real_bind_would_have_been() {
    let (h, _fake) = harness();
    // Real checks of this directory take 200 ms (the fake moves the clock).
    for k in 0..5 {
        let ip = format!("10.2.{k}.1");
        let d = h.v.verify_deferred(h.attempt("ann@a", "secret", &ip)).await;
        assert!(matches!(d.outcome, Outcome::Accepted { .. }));
    }
    let t0 = h.clock.now();
    let real =
        h.v.verify_deferred(h.attempt("ann@a", "nope", "10.3.0.1"))
            .await;
    let real_total = h.clock.now().saturating_duration_since(t0) + real.answer_after;
    let t1 = h.clock.now();
    let unknown =
        h.v.verify_deferred(h.attempt("nobody@a", "nope", "10.3.1.1"))
            .await;
    let unknown_total = h.clock.now().saturating_duration_since(t1) + unknown.answer_after;
    assert_eq!(real.outcome, Outcome::Rejected);
    assert_eq!(unknown.outcome, Outcome::Rejected);
    assert_eq!(real_total, Duration::from_millis(200));
    assert_eq!(unknown_total, real_total, "same time as a real bind");
}

/// Waits (bounded) until the cache holds `n` users: hashes are made on the pool's
/// background queue after the answer.
async fn cached(h: &Harness, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while h.v.cached_credentials() != n {
        assert!(std::time::Instant::now() < deadline, "cache never held {n}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn the_cache_answers_only_while_the_directory_is_down_and_only_while_fresh() {
    let (h, fake) = harness();
    *fake.cache.lock() = Some(Duration::from_secs(3600));
    let ok = |d: crate::Deferred| matches!(d.outcome, Outcome::Accepted { .. });
    let down = |d: crate::Deferred| matches!(d.outcome, Outcome::Unavailable { .. });
    assert!(ok(h
        .v
        .verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
        .await));
    cached(&h, 1).await;
    *fake.behaviour[0].lock() = Behaviour::Down;
    assert!(ok(h
        .v
        .verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
        .await));
    let wrong =
        h.v.verify_deferred(h.attempt("ann@a", "nope", "10.0.0.1"))
            .await;
    assert_eq!(wrong.outcome, Outcome::Rejected);
    // Never cached: unavailable.
    assert!(down(
        h.v.verify_deferred(h.attempt("bob@a", "secret", "10.0.0.2"))
            .await
    ));
    // Past its age the entry goes.
    h.clock.advance(Duration::from_secs(3601));
    assert!(down(
        h.v.verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
            .await
    ));
    assert_eq!(h.v.cached_credentials(), 0);
    // Cached again, then the directory rejects the user: the entry goes at once.
    *fake.behaviour[0].lock() = Behaviour::Answer;
    assert!(ok(h
        .v
        .verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
        .await));
    cached(&h, 1).await;
    let refused =
        h.v.verify_deferred(h.attempt("ann@a", "old", "10.0.0.1"))
            .await;
    assert_eq!(refused.outcome, Outcome::Rejected);
    assert_eq!(h.v.cached_credentials(), 0);
    *fake.behaviour[0].lock() = Behaviour::Down;
    assert!(down(
        h.v.verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
            .await
    ));
}

#[tokio::test]
async fn without_the_cache_nothing_is_kept() {
    let (h, fake) = harness();
    assert!(matches!(
        h.v.verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
            .await
            .outcome,
        Outcome::Accepted { .. }
    ));
    *fake.behaviour[0].lock() = Behaviour::Down;
    let d =
        h.v.verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
            .await;
    assert!(matches!(d.outcome, Outcome::Unavailable { .. }));
    assert_eq!(h.v.cached_credentials(), 0);
}

/// Only a trusted origin queues at the directory under a key of its own: first guesses
/// from any number of new stations share one key (and suspect ones another), so a wave
/// of guesses that the directory holds for seconds can take at most two keys' share of
/// its slots, never the trusted stations' (issue 40, report 000).
#[tokio::test]
async fn untrusted_origins_share_one_admission_key_and_trusted_ones_have_their_own() {
    let (h, fake) = harness();
    // ann's own station: trusted after its first success.
    for _ in 0..2 {
        let ok =
            h.v.verify_deferred(h.attempt("ann@a", "secret", "10.0.0.1"))
                .await;
        assert!(matches!(ok.outcome, Outcome::Accepted { .. }));
    }
    // Twenty new stations, one guess each at different users.
    for k in 0..20 {
        let d =
            h.v.verify_deferred(h.attempt(&format!("u{k}@a"), "guess", &format!("10.{k}.9.1")))
                .await;
        assert_eq!(d.outcome, Outcome::Rejected);
    }
    let sources = fake.sources.lock().clone();
    assert_eq!(sources.len(), 22);
    // The first check came from a station not yet trusted; the second from a trusted one.
    assert_eq!(sources[0], "untrusted");
    assert_ne!(sources[1], "untrusted");
    assert_ne!(sources[1], "suspect");
    assert!(
        sources[2..]
            .iter()
            .all(|s| s == "untrusted" || s == "suspect"),
        "{sources:?}"
    );
}
