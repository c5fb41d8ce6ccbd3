//! Rehash-on-login: after a success with an outdated hash, the policy hash is computed
//! on the pool's background queue and compare-and-set into the store, after the answer
//! has been returned.

use std::sync::Arc;
use std::sync::atomic::Ordering;

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
