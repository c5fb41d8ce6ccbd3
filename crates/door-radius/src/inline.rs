//! Answering a request on the loop that received it. Most round trips of the RADIUS door
//! need no wait and little work (Status-Server, an EAP Identity, a fragment
//! acknowledgement, every step of a resumed login); handing each to a task of its own cost
//! a cross-thread wake-up and a context switch per round trip, about as much CPU as the
//! work itself. So [`answer_here_or_spawn`] polls a request's future once, right where it
//! was received: one that finishes has been answered; one that must wait (the core's hash
//! pool, a store, a reject delay) is spawned as a task and goes on there. The receive loop
//! still never waits on a verdict.
//!
//! What may take long without waiting (public-key cryptography of a full TLS handshake,
//! a few hundred microseconds) must not hold up datagrams queued behind it. Such a step
//! first awaits [`off_loop`], which ends the inline poll (the future is then spawned) and
//! costs nothing when the future already runs as a task. A receive thread may register
//! a probe ([`probe_queue_on_this_thread`]) that says whether anything is queued on its
//! socket: when nothing is, no one waits behind the step, and it runs right there. A
//! task of its own would cost a wake-up of an idle worker and its parking again (two
//! context switches, measured as much as 40 µs of a full login's CPU on a quiet door);
//! under load the queue is not empty and the step goes to the workers, where both cores
//! share the handshakes.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio_util::task::TaskTracker;

thread_local! {
    /// Set while [`answer_here_or_spawn`] polls a future on this thread.
    static INLINE: Cell<bool> = const { Cell::new(false) };
    /// This thread's "nothing is queued behind the request" probe, if it has one.
    static QUEUE_EMPTY: RefCell<Option<Box<dyn Fn() -> bool>>> = const { RefCell::new(None) };
}

/// Let [`off_loop`] ask `empty` whether anything waits behind the request being answered
/// on this thread (a receive thread's socket queue); without a probe, a costly step always
/// leaves the loop.
pub(crate) fn probe_queue_on_this_thread(empty: impl Fn() -> bool + 'static) {
    QUEUE_EMPTY.set(Some(Box::new(empty)));
}

/// Poll `fut` once here; spawn it on `tracker` if it is not done. A panic inside is
/// contained (logged, the request dropped) as it would be in a task of its own: the
/// receive loop goes on.
pub(crate) fn answer_here_or_spawn<F>(tracker: &TaskTracker, fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut fut = Box::pin(fut);
    // The noop waker is never the one that matters: a future that is not done is spawned
    // and polled again by its task at once, and a future registers the waker of its
    // latest poll.
    let mut cx = Context::from_waker(Waker::noop());
    INLINE.set(true);
    let polled = std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx)));
    INLINE.set(false);
    match polled {
        Ok(Poll::Ready(())) => {}
        Ok(Poll::Pending) => {
            tracker.spawn(fut);
        }
        Err(_) => tracing::error!("a RADIUS request panicked; it was dropped"),
    }
}

/// Go on in a task of its own if polled inline by [`answer_here_or_spawn`] with something
/// queued behind (or no probe to say); at once otherwise.
pub(crate) fn off_loop() -> OffLoop {
    OffLoop { yielded: false }
}

/// The future of [`off_loop`].
pub(crate) struct OffLoop {
    /// Already pending once: the next poll is the task's.
    yielded: bool,
}

impl Future for OffLoop {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded || !INLINE.get() {
            return Poll::Ready(());
        }
        let nobody_waits = QUEUE_EMPTY.with_borrow(|probe| probe.as_ref().is_some_and(|f| f()));
        if nobody_waits {
            return Poll::Ready(());
        }
        self.yielded = true;
        Poll::Pending
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn issue_25_a_ready_answer_runs_inline_and_a_waiting_one_in_a_task() {
        let tracker = TaskTracker::new();
        let here = std::thread::current().id();
        let done = Arc::new(AtomicUsize::new(0));
        let d = Arc::clone(&done);
        answer_here_or_spawn(&tracker, async move {
            assert_eq!(std::thread::current().id(), here);
            d.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(done.load(Ordering::SeqCst), 1, "finished before returning");
        // Off the loop: not finished inline, finished by its task.
        let d = Arc::clone(&done);
        answer_here_or_spawn(&tracker, async move {
            off_loop().await;
            d.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(done.load(Ordering::SeqCst), 1, "handed to a task");
        // Waiting on something: spawned, and woken by it in its task.
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let d = Arc::clone(&done);
        answer_here_or_spawn(&tracker, async move {
            let _ = rx.await;
            d.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(done.load(Ordering::SeqCst), 1);
        let _ = tx.send(());
        tracker.close();
        tracker.wait().await;
        assert_eq!(done.load(Ordering::SeqCst), 3);
        // A task polling off_loop goes straight through.
        tokio::spawn(async { off_loop().await }).await.unwrap();
    }

    #[tokio::test]
    async fn issue_25_a_costly_step_stays_inline_only_while_nothing_is_queued() {
        let tracker = TaskTracker::new();
        let queue_empty = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let probe = Arc::clone(&queue_empty);
        // A thread of its own, as a receive thread: the probe is per thread.
        let handle = tokio::runtime::Handle::current();
        let t = tracker.clone();
        let (inline_done, spawned_done) = std::thread::spawn(move || {
            let _rt = handle.enter();
            probe_queue_on_this_thread(move || probe.load(Ordering::SeqCst));
            let run = |queue_empty_now: bool| {
                queue_empty.store(queue_empty_now, Ordering::SeqCst);
                let done = Arc::new(AtomicUsize::new(0));
                let d = Arc::clone(&done);
                answer_here_or_spawn(&t, async move {
                    off_loop().await;
                    d.fetch_add(1, Ordering::SeqCst);
                });
                (done.load(Ordering::SeqCst), done)
            };
            let (inline_done, _) = run(true);
            let (spawned_now, spawned) = run(false);
            assert_eq!(spawned_now, 0, "something queued: handed to a task");
            (inline_done, spawned)
        })
        .join()
        .unwrap();
        assert_eq!(inline_done, 1, "nothing queued: ran where it was received");
        tracker.close();
        tracker.wait().await;
        assert_eq!(
            spawned_done.load(Ordering::SeqCst),
            1,
            "finished by its task"
        );
        // A thread without a probe (a runtime worker, a RadSec reader) always hands off.
        let done = Arc::new(AtomicUsize::new(0));
        let d = Arc::clone(&done);
        let tracker = TaskTracker::new();
        answer_here_or_spawn(&tracker, async move {
            off_loop().await;
            d.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(done.load(Ordering::SeqCst), 0);
        tracker.close();
        tracker.wait().await;
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn issue_25_a_panicking_answer_does_not_stop_the_caller() {
        let tracker = TaskTracker::new();
        answer_here_or_spawn(&tracker, async { panic!("boom") });
        tracker.close();
        tracker.wait().await;
    }
}
