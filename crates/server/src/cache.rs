//! A small read-through cache of client records with a short TTL.
//!
//! A token request reads its client twice: the core asks for the secret hashes (through
//! [`CredentialSource`]) and the front end then needs the client's grants and scopes. With
//! SQLite behind sqlx each read is a channel hop to the database thread and back, which
//! dominated the cost of a peppered (microsecond) verification, so both reads are served
//! from one cached record. The TTL (config `store.client_cache_ttl_ms`, default 1 s)
//! bounds how long a rotated secret or removed client keeps working in this process.
//!
//! Only existing clients are cached (an attacker probing random ids cannot fill it), the
//! cache is bounded, and users are never cached: their hashes change on rehash-on-login and
//! they are verified on the hash pool anyway, where a database read is noise.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use parking_lot::RwLock;
use portcullis_core::{CredentialSource, PrincipalKind, SourceError, StoredCredentials};
use portcullis_store::{ClientRecord, Store, StoreError};

/// Most cached clients; beyond it expired entries are evicted and, if still full, new
/// records are simply not cached.
const MAX_ENTRIES: usize = 10_000;

/// Client records by id, each with the instant it was read.
pub struct ClientCache {
    /// Where records come from.
    store: Arc<dyn Store>,
    /// The store as the core sees it, for users (never cached).
    users: Arc<dyn CredentialSource>,
    /// Time-to-live of an entry; zero disables caching.
    ttl: Duration,
    /// Cached records.
    entries: RwLock<HashMap<String, (Instant, Arc<ClientRecord>)>>,
}

impl std::fmt::Debug for ClientCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCache")
            .field("ttl", &self.ttl)
            .field("entries", &self.entries.read().len())
            .finish()
    }
}

impl ClientCache {
    /// A cache over `store`.
    pub fn new(store: Arc<dyn Store>, ttl: Duration) -> Self {
        let users = Arc::clone(&store).as_credential_source();
        ClientCache {
            store,
            users,
            ttl,
            entries: RwLock::new(HashMap::new()),
        }
    }

    /// The client `id`, from the cache if fresh, else from the store.
    pub async fn get(&self, id: &str) -> Result<Option<Arc<ClientRecord>>, StoreError> {
        if !self.ttl.is_zero()
            && let Some((at, rec)) = self.entries.read().get(id)
            && at.elapsed() < self.ttl
        {
            return Ok(Some(Arc::clone(rec)));
        }
        let Some(rec) = self.store.get_client(id).await? else {
            self.entries.write().remove(id);
            return Ok(None);
        };
        let rec = Arc::new(rec);
        if !self.ttl.is_zero() {
            let mut entries = self.entries.write();
            if entries.len() >= MAX_ENTRIES {
                let ttl = self.ttl;
                entries.retain(|_, (at, _)| at.elapsed() < ttl);
            }
            if entries.len() < MAX_ENTRIES {
                entries.insert(id.to_owned(), (Instant::now(), Arc::clone(&rec)));
            }
        }
        Ok(Some(rec))
    }

    /// Forget `id` (after a write through this process).
    pub fn invalidate(&self, id: &str) {
        self.entries.write().remove(id);
    }
}

impl CredentialSource for ClientCache {
    fn credentials<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, SourceError>> {
        match kind {
            PrincipalKind::User => self.users.credentials(kind, principal),
            PrincipalKind::Client => Box::pin(async move {
                match self.get(principal).await {
                    Ok(c) => Ok(c.map(|c| StoredCredentials {
                        hashes: c.secret_hashes.clone(),
                        disabled: false,
                    })),
                    Err(e) => {
                        // The core answers "overloaded" (503 + Retry-After); the cause is
                        // only visible here.
                        crate::oauth::store_failed("looking up client credentials", &e);
                        Err(e.into())
                    }
                }
            }),
        }
    }

    fn replace_hash<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
        old: &'a str,
        new: &'a str,
    ) -> BoxFuture<'a, Result<bool, SourceError>> {
        if kind == PrincipalKind::Client {
            self.invalidate(principal);
        }
        self.users.replace_hash(kind, principal, old, new)
    }
}
