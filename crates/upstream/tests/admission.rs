//! The bounded, fair admission in front of a real slapd: binds are held by a relay until
//! the test lets them through, so what is in flight and what waits is known exactly.

// The helpers below fail the test with the reason when a bounded wait runs out.
#![allow(clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Gate, Slapd, dn_template};
use portcullis_upstream::{Directory, DirectoryStatus, Outcome, UnavailableKind};
use tokio::task::JoinSet;

/// Bounds every wait of these tests; a failure, not a synchronisation.
const BOUND: Duration = Duration::from_secs(20);

async fn until(dir: &Directory, what: &str, done: impl Fn(&DirectoryStatus) -> bool) {
    let wait = async {
        while !done(&dir.status()) {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(BOUND, wait)
        .await
        .unwrap_or_else(|_| panic!("{what}: {:?}", dir.status()));
}

async fn arrival(gate: &mut Gate) -> String {
    tokio::time::timeout(BOUND, gate.arrivals.recv())
        .await
        .expect("a bind reached the relay")
        .expect("relay running")
}

fn launch(set: &mut JoinSet<Outcome>, dir: &Arc<Directory>, source: &'static str, n: u32) {
    let dir = Arc::clone(dir);
    set.spawn(async move {
        let password = format!("password{n}");
        dir.check(source, &format!("user{n}"), password.as_bytes())
            .await
            .outcome
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_is_bounded_per_directory_and_per_source_and_overflow_is_refused_at_once() {
    let slapd = Slapd::start(&[]);
    let target = format!("127.0.0.1:{}", slapd.get("port"));
    let mut gate = Gate::start(target).await;
    let mut cfg = dn_template(&slapd, &[gate.url.clone()]);
    cfg.starttls = false; // the relay reads the DN in each bind
    cfg.allow_plaintext = true;
    cfg.admission.max_in_flight = 3;
    cfg.admission.max_in_flight_per_source = 2;
    cfg.admission.max_queued = 8;
    cfg.admission.max_queued_per_source = 4;
    cfg.timeouts.bind_ms = 60_000;
    cfg.timeouts.check_ms = 60_000;
    let dir = Arc::new(Directory::new(&cfg).unwrap());
    let mut checks = JoinSet::new();

    // Source A: six checks; two are let in (its share), four wait.
    for n in 1..=6 {
        launch(&mut checks, &dir, "A", n);
    }
    until(&dir, "A holds 2, 4 wait", |s| {
        s.admission.in_flight == 2 && s.admission.queued == 4
    })
    .await;
    let mut first = vec![arrival(&mut gate).await, arrival(&mut gate).await];
    // A's queue is full: its next check is refused at once, while every slot is held.
    let refused = tokio::time::timeout(BOUND, dir.check("A", "user7", b"password7"))
        .await
        .expect("answered without a slot");
    assert!(
        matches!(&refused.outcome, Outcome::Unavailable(u) if u.kind == UnavailableKind::Overloaded),
        "{refused:?}"
    );

    // Source B arrives after A's queue: it gets the free slot at once, ahead of A's waiters.
    launch(&mut checks, &dir, "B", 8);
    launch(&mut checks, &dir, "B", 9);
    until(&dir, "B holds 1, 5 wait", |s| {
        s.admission.in_flight == 3 && s.admission.queued == 5
    })
    .await;
    first.push(arrival(&mut gate).await);
    first.sort();
    let from_b = first
        .iter()
        .filter(|u| *u == "user8" || *u == "user9")
        .count();
    assert_eq!(from_b, 1, "{first:?}");
    assert!(
        gate.arrivals.try_recv().is_err(),
        "only 3 binds may be in flight"
    );
    assert_eq!(dir.status().servers[0].in_flight, 3);

    // Let binds through one at a time. Each answer frees a slot, which goes to a waiter at
    // once (the permit is dropped before the check returns), so after each answer the relay
    // holds exactly the admitted checks' binds: never more than 3.
    let mut held = first.len();
    for _ in 0..8 {
        gate.release.add_permits(1);
        held -= 1;
        let outcome = tokio::time::timeout(BOUND, checks.join_next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(outcome.unwrap(), Outcome::Accepted);
        let admitted = dir.status().admission.in_flight;
        while held < admitted {
            let _ = arrival(&mut gate).await;
            held += 1;
        }
        assert!(held <= 3 && gate.arrivals.try_recv().is_err(), "{held}");
    }
    assert!(checks.is_empty());
    let status = dir.status();
    assert_eq!(
        (
            status.admission.in_flight,
            status.admission.queued,
            status.admission.overloaded
        ),
        (0, 0, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_that_does_not_answer_is_refused_within_the_bind_timeout() {
    let slapd = Slapd::start(&[]);
    // The relay never lets a bind through: the server accepts but never answers.
    let mut gate = Gate::start(format!("127.0.0.1:{}", slapd.get("port"))).await;
    let mut cfg = dn_template(&slapd, &[gate.url.clone()]);
    cfg.starttls = false;
    cfg.allow_plaintext = true;
    cfg.timeouts.bind_ms = 200;
    let dir = Directory::new(&cfg).unwrap();
    let answer = tokio::time::timeout(BOUND, dir.check("s", "user1", b"password1"))
        .await
        .unwrap();
    assert!(
        matches!(&answer.outcome, Outcome::Unavailable(u) if u.kind == UnavailableKind::Timeout),
        "{answer:?}"
    );
    assert_eq!(arrival(&mut gate).await, "user1");
    let server = &dir.status().servers[0];
    assert_eq!(
        (server.errors, server.in_flight, server.idle_connections),
        (1, 0, 0)
    );

    // The whole check is bounded too, whatever the steps' limits.
    let mut cfg = cfg.clone();
    cfg.timeouts.bind_ms = 60_000;
    cfg.timeouts.check_ms = 200;
    let dir = Directory::new(&cfg).unwrap();
    let answer = tokio::time::timeout(BOUND, dir.check("s", "user2", b"password2"))
        .await
        .unwrap();
    assert!(
        matches!(&answer.outcome, Outcome::Unavailable(u) if u.kind == UnavailableKind::Timeout),
        "{answer:?}"
    );
    // The abandoned attempt left nothing in flight.
    let status = dir.status();
    assert_eq!(
        (status.admission.in_flight, status.servers[0].in_flight),
        (0, 0)
    );
}
