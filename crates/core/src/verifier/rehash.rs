//! Rehash-on-login: after a success with an outdated hash, the policy hash is computed
//! on the pool's background queue and compare-and-set into the store, after the answer
//! has been returned. Also the other hash of the policy that answers no attempt: the
//! calibration a server runs as it starts ([`Verifier::calibrate`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use portcullis_hash::{Cost, Credential};

use tokio::sync::oneshot;
use zeroize::Zeroizing;

use super::{Inner, Verifier};
use crate::attempt::PrincipalKind;
use crate::metrics;

impl Verifier {
    /// Compute the policy hash on the pool's background queue, then compare-and-set it
    /// into the store. Runs after the answer has been returned.
    pub(super) fn spawn_rehash(
        &self,
        kind: PrincipalKind,
        principal: &str,
        old: &str,
        secret: Zeroizing<Vec<u8>>,
    ) {
        let i = &*self.inner;
        let key = (kind, principal.to_owned(), old.to_owned());
        if !i.rehashing.lock().insert(key.clone()) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            i.rehashing.lock().remove(&key);
            return;
        };
        let (tx, rx) = oneshot::channel();
        let policy = i.policy.clone();
        let queued = i.pool.submit_background(Box::new(move || {
            let _ = tx.send(policy.hash(&secret).ok());
        }));
        if !queued {
            metrics::rehash("dropped");
            i.rehashing.lock().remove(&key);
            return;
        }
        let inner = Arc::clone(&self.inner);
        let write = RehashWrite::start(&self.inner);
        rt.spawn(async move {
            let _write = write;
            let (kind, principal, old) = &key;
            let result = match rx.await {
                Ok(Some(new)) => match inner.source.replace_hash(*kind, principal, old, &new).await
                {
                    Ok(true) => {
                        inner.counts.rehashed.fetch_add(1, Ordering::Relaxed);
                        "replaced"
                    }
                    Ok(false) => "lost_race",
                    Err(_) => "error",
                },
                _ => "error",
            };
            metrics::rehash(result);
            inner.rehashing.lock().remove(&key);
        });
    }
}

impl Verifier {
    /// Hash `secret` under the policy on the pool's background queue (never on the
    /// runtime: invariant 1), for a password set by an operator (issue 27's admin API).
    /// `None` when the queue is full, the pool is shutting down or hashing failed.
    pub async fn hash_with_policy(&self, secret: Zeroizing<Vec<u8>>) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        let policy = self.inner.policy.clone();
        let queued = self.inner.pool.submit_background(Box::new(move || {
            let _ = tx.send(policy.hash(&secret).ok());
        }));
        if !queued {
            return None;
        }
        rx.await.ok().flatten()
    }
}

impl Verifier {
    /// Time one hash of the configured policy (on a blocking thread, not the pool: it
    /// answers no one and counts as no verification) and give the pool that figure while
    /// it has measured nothing. Until the first real hash, admission, CoDel and the delay
    /// of an unknown principal's answer work from `initial_hash_estimate_ms`, a guess for
    /// PBKDF2-SHA256 x600,000: the first unknown principal tried after a start was
    /// answered after it (250 ms by default) where a real rejection took one hash. A
    /// server calls this once as it starts; `None` if the policy is cheap or the hash
    /// failed.
    pub async fn calibrate(&self) -> Option<Duration> {
        let policy = self.inner.policy.clone();
        let clock = Arc::clone(&self.inner.clock);
        let (took, stored) = tokio::task::spawn_blocking(move || {
            let mut secret = Zeroizing::new([0u8; 16]);
            portcullis_hash::os_random(&mut secret[..]).ok()?;
            let start = clock.now();
            let stored = policy.hash(&secret[..]).ok()?;
            Some((clock.now().saturating_duration_since(start), stored))
        })
        .await
        .ok()??;
        let Cost::Work(cost) = Credential::parse(&stored).ok()?.cost() else {
            return None;
        };
        self.inner.pool.seed_hash_time(took, cost);
        Some(took)
    }
}

/// A rehash store write in progress, counted for [`Verifier::drain`]. A guard, so the
/// count also drops if the write's task is cancelled or panics.
struct RehashWrite(Arc<Inner>);

impl RehashWrite {
    fn start(inner: &Arc<Inner>) -> Self {
        inner.rehash_writes.fetch_add(1, Ordering::SeqCst);
        RehashWrite(Arc::clone(inner))
    }
}

impl Drop for RehashWrite {
    fn drop(&mut self) {
        if self.0.rehash_writes.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.rehash_done.notify_waiters();
        }
    }
}
