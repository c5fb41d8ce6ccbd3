use std::future::Future;
use std::pin::Pin;

use futures::FutureExt;

use super::*;

fn limits(
    max: usize,
    per_source: usize,
    queued: usize,
    queued_per_source: usize,
) -> AdmissionConfig {
    AdmissionConfig {
        max_in_flight: max,
        max_in_flight_per_source: per_source,
        max_queued: queued,
        max_queued_per_source: queued_per_source,
    }
}

type Acquire<'a> = Pin<Box<dyn Future<Output = Result<Permit, Overloaded>> + Send + 'a>>;

fn now(a: &Arc<Admission>, source: &str) -> Result<Permit, Overloaded> {
    a.acquire(source).now_or_never().expect("answered at once")
}

fn queued<'a>(a: &'a Arc<Admission>, source: &'a str) -> Acquire<'a> {
    let mut f: Acquire<'a> = Box::pin(a.acquire(source));
    assert!((&mut f).now_or_never().is_none(), "{source} should wait");
    f
}

#[test]
fn one_source_cannot_take_every_slot() {
    let a = Admission::new(limits(4, 2, 16, 8));
    let _a1 = now(&a, "A").unwrap();
    let _a2 = now(&a, "A").unwrap();
    // A's further checks wait although two slots are free...
    let _a3 = queued(&a, "A");
    let _a4 = queued(&a, "A");
    // ... and those slots go to other sources at once.
    let _b1 = now(&a, "B").unwrap();
    let _c1 = now(&a, "C").unwrap();
    assert_eq!(
        a.status(),
        AdmissionStatus {
            in_flight: 4,
            queued: 2,
            sources: 3,
            overloaded: 0
        }
    );
}

#[test]
fn freed_slots_go_to_the_waiting_sources_in_turn() {
    let a = Admission::new(limits(1, 1, 16, 8));
    let held = now(&a, "A").unwrap();
    let mut a2 = queued(&a, "A");
    let mut a3 = queued(&a, "A");
    let mut b1 = queued(&a, "B");
    let mut c1 = queued(&a, "C");
    drop(held);
    let p = (&mut a2).now_or_never().expect("a2 admitted").unwrap();
    assert!((&mut a3).now_or_never().is_none());
    drop(p);
    // B and C, who waited behind A's queue, come before A's next check.
    let p = (&mut b1).now_or_never().expect("b1 admitted").unwrap();
    assert!((&mut a3).now_or_never().is_none());
    drop(p);
    let p = (&mut c1).now_or_never().expect("c1 admitted").unwrap();
    assert!((&mut a3).now_or_never().is_none());
    drop(p);
    let p = (&mut a3).now_or_never().expect("a3 admitted").unwrap();
    drop(p);
    assert_eq!(a.status().in_flight, 0);
    assert_eq!(a.status().sources, 0);
}

#[test]
fn full_queues_answer_at_once() {
    let a = Admission::new(limits(1, 1, 3, 2));
    let _held = now(&a, "A").unwrap();
    let _q1 = queued(&a, "A");
    let _q2 = queued(&a, "A");
    // A's own queue is full; B still has room in the overall queue.
    assert_eq!(now(&a, "A").unwrap_err(), Overloaded);
    let _q3 = queued(&a, "B");
    // The overall queue is full.
    assert_eq!(now(&a, "C").unwrap_err(), Overloaded);
    assert_eq!(a.status().overloaded, 2);
}

#[test]
fn a_waiter_that_gives_up_leaves_no_trace() {
    let a = Admission::new(limits(1, 1, 4, 4));
    let held = now(&a, "A").unwrap();
    let gone = queued(&a, "B");
    let mut c = queued(&a, "C");
    drop(gone);
    assert_eq!(a.status().queued, 1);
    drop(held);
    // The slot goes to C, not to the check that left.
    let p = (&mut c).now_or_never().expect("c admitted").unwrap();
    drop(p);
    assert_eq!(
        a.status(),
        AdmissionStatus {
            in_flight: 0,
            queued: 0,
            sources: 0,
            overloaded: 0
        }
    );
}
