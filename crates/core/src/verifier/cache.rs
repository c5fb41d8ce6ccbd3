//! The optional credential cache of directory users (issue 40; SSSD's `cache_credentials`):
//! off unless a directory sets a maximum age.
//!
//! After the directory accepted a password, the password is hashed under the `[policy]`
//! hashing on the pool's background queue (after the answer went back) and kept in memory
//! with the time of that success. The cached hash answers only while the directory is
//! unavailable, and only within the maximum age; the directory rejecting the user, or not
//! knowing it, drops the entry at once. The trade-off, documented in
//! `docs/upstream-ldap.md`: while the directory is down, a password changed or an account
//! disabled there in the last `cache_max_age` is not seen, and the hash sits in this
//! process's memory (never on disk).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use portcullis_hash::{Cost, Credential};
use tokio::sync::oneshot;
use zeroize::Zeroizing;

use super::release::now_answer;
use super::{Admitted, Deferred, Note, Verifier};
use crate::attempt::{Class, Outcome};
use crate::audit::WRONG_SECRET;
use crate::pool::{JobReply, VerifyJob};
use crate::remote::RemoteRoute;

/// Users cached at most (all directories together); past it new entries wait for expired
/// ones to go.
const CAPACITY: usize = 1 << 16;

/// Cached hashes by (directory, user).
#[derive(Default)]
pub(super) struct CredentialCache {
    entries: HashMap<(Arc<str>, String), Entry>,
}

struct Entry {
    hash: String,
    /// When the directory accepted the password this hash was made from.
    accepted_at: Instant,
}

impl CredentialCache {
    fn insert(&mut self, key: (Arc<str>, String), entry: Entry, max_age: Duration) {
        if self.entries.len() >= CAPACITY && !self.entries.contains_key(&key) {
            let now = entry.accepted_at;
            self.entries
                .retain(|_, e| now.saturating_duration_since(e.accepted_at) < max_age);
            if self.entries.len() >= CAPACITY {
                return;
            }
        }
        self.entries.insert(key, entry);
    }

    /// How many users are cached now.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

impl Verifier {
    /// After a directory accepted `secret`: hash it on the background queue and cache it.
    pub(super) fn cache_store(&self, route: &RemoteRoute, user: &str, secret: Zeroizing<Vec<u8>>) {
        let Some(max_age) = route.cache_max_age else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let i = &*self.inner;
        let accepted_at = i.clock.now();
        let (tx, rx) = oneshot::channel();
        let policy = i.policy.clone();
        if !i.pool.submit_background(Box::new(move || {
            let _ = tx.send(policy.hash(&secret).ok());
        })) {
            return;
        }
        let inner = Arc::clone(&self.inner);
        let key = (Arc::clone(&route.directory), user.to_owned());
        rt.spawn(async move {
            if let Ok(Some(hash)) = rx.await {
                let entry = Entry { hash, accepted_at };
                inner.cache.lock().insert(key, entry, max_age);
            }
        });
    }

    /// The directory rejected the user or does not know it: its cached hash goes.
    pub(super) fn cache_forget(&self, route: &RemoteRoute, user: &str) {
        if route.cache_max_age.is_some() {
            let key = (Arc::clone(&route.directory), user.to_owned());
            self.inner.cache.lock().entries.remove(&key);
        }
    }

    /// Users in the credential cache now (status and tests).
    pub fn cached_credentials(&self) -> usize {
        self.inner.cache.lock().len()
    }

    /// The directory is unavailable: answer from a fresh cached hash, verified on the pool
    /// like a local one (the attempt is already charged). `None` when nothing fresh is
    /// cached (or the pool refused the job): the caller answers "unavailable".
    pub(super) async fn cache_answer(
        &self,
        adm: &mut Admitted,
        route: &RemoteRoute,
        secret: Zeroizing<Vec<u8>>,
        note: &mut Note,
    ) -> Option<(Deferred, Class)> {
        let max_age = route.cache_max_age?;
        let i = &*self.inner;
        let now = i.clock.now();
        let hash = {
            let mut cache = i.cache.lock();
            let key = (Arc::clone(&route.directory), adm.principal.clone());
            match cache.entries.get(&key) {
                Some(e) if now.saturating_duration_since(e.accepted_at) < max_age => e.hash.clone(),
                Some(_) => {
                    cache.entries.remove(&key);
                    return None;
                }
                None => return None,
            }
        };
        let cred = Credential::parse(&hash).ok()?;
        let cost = match cred.cost() {
            Cost::Work(w) => w.max(1),
            Cost::Cheap => 1,
        };
        let (tx, rx) = oneshot::channel();
        let job = VerifyJob {
            secret: Arc::new(secret),
            key: cred.batch_key(),
            creds: vec![cred],
            cost,
            enqueued_at: now,
            deadline: adm.deadline,
            reply: tx,
        };
        if i.pool.submit(adm.class, adm.flow, job).is_err() {
            i.pool.count_shed();
            return None;
        }
        match rx.await {
            Ok(JobReply::Done {
                matched: Some(_), ..
            }) => {
                self.succeeded(adm).await;
                note.reason = "cache_accepted";
                let outcome = Outcome::Accepted {
                    needs_rehash: false,
                };
                Some((now_answer(outcome), adm.class))
            }
            Ok(JobReply::Done { matched: None, .. }) => {
                note.reason = WRONG_SECRET;
                Some((self.rejected(adm), adm.class))
            }
            _ => None,
        }
    }
}
