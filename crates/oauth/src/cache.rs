//! A small read-through cache of client records and users' stored credentials with a
//! short TTL.
//!
//! A token request reads its client twice: the core asks for the secret hashes (through
//! [`CredentialSource`]) and the front end then needs the client's grants and scopes. With
//! SQLite behind sqlx each read is a channel hop to the database thread and back, which
//! dominated the cost of a peppered (microsecond) verification, so both reads are served
//! from one cached record. The TTL (config `store.client_cache_ttl_ms`, default 1 s)
//! bounds how long a rotated secret or removed client keeps working in this process.
//!
//! When an entry expires, one request refreshes it from the store while concurrent
//! requests keep using the expiring record (for at most one more TTL): without that, every
//! request arriving during the database read would miss too, and a busy client would be
//! charged by the core for many simultaneous attempts at once.
//!
//! With a shared PostgreSQL store, [`ClientCache::follow_changes`] also drops a record as
//! soon as another instance changes it (LISTEN/NOTIFY), so the TTL only matters while
//! that feed is down.
//!
//! With `[store] read_url`, misses read the replica when it cannot be behind a change the
//! feed announced ([`crate::replica`]).
//!
//! Users' stored credentials are cached the same way (same TTL, same feed), so that with
//! several instances no attempt costs a database round trip; a rehash-on-login through
//! this process drops the entry it replaced. Only existing principals are cached (an
//! attacker probing random names cannot fill it) and each map is bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use parking_lot::RwLock;
use portcullis_core::{CredentialSource, PrincipalKind, SourceError, StoredCredentials};
use portcullis_store::{ClientRecord, Store, StoreError};

use crate::replica::ReadRouting;

/// Most cached clients; beyond it expired entries are evicted and, if still full, new
/// records are simply not cached.
const MAX_ENTRIES: usize = 10_000;

/// A read replica: as a store (clients), as a credential source (users), and when it
/// may be read.
type Replica = (Arc<dyn Store>, Arc<dyn CredentialSource>, ReadRouting);

/// Client records by id, each with the instant it was read.
pub struct ClientCache {
    /// Where records come from (the primary: writes and the change feed).
    store: Arc<dyn Store>,
    /// The store as the core sees it, for users (never cached).
    users: Arc<dyn CredentialSource>,
    /// A replica for lookups on a miss (`[store] read_url`), and when it may be used.
    replica: Option<Replica>,
    /// Time-to-live of an entry; zero disables caching.
    ttl: Duration,
    /// Cached records.
    entries: RwLock<HashMap<String, Entry>>,
    /// Cached users' credentials, with the instant each was read.
    user_entries: RwLock<HashMap<String, (Instant, StoredCredentials)>>,
}

/// One cached record.
struct Entry {
    /// When it was read from the store.
    at: Instant,
    /// The record.
    record: Arc<ClientRecord>,
    /// A request is re-reading it; others may keep using this one meanwhile.
    refreshing: Arc<AtomicBool>,
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
        Self::with_replica(store, None, ttl)
    }

    /// A cache over `store` whose misses read `replica` when it cannot be behind a known
    /// change ([`crate::replica`]).
    pub fn with_replica(
        store: Arc<dyn Store>,
        replica: Option<Arc<dyn Store>>,
        ttl: Duration,
    ) -> Self {
        let users = Arc::clone(&store).as_credential_source();
        let replica = replica.map(|r| {
            let users = Arc::clone(&r).as_credential_source();
            (r, users, ReadRouting::new(ttl))
        });
        ClientCache {
            store,
            users,
            replica,
            ttl,
            entries: RwLock::new(HashMap::new()),
            user_entries: RwLock::new(HashMap::new()),
        }
    }

    /// The client `id`, from the cache if fresh, else from the store.
    pub async fn get(&self, id: &str) -> Result<Option<Arc<ClientRecord>>, StoreError> {
        if self.ttl.is_zero() {
            return Ok(self.store.get_client(id).await?.map(Arc::new));
        }
        let mut refresh_flag = None;
        if let Some(e) = self.entries.read().get(id) {
            let age = e.at.elapsed();
            if age < self.ttl {
                return Ok(Some(Arc::clone(&e.record)));
            }
            // Expired: the first caller refreshes; the others keep the old record for up
            // to one more TTL rather than piling onto the store.
            if e.refreshing.swap(true, Ordering::AcqRel) {
                if age < self.ttl * 2 {
                    return Ok(Some(Arc::clone(&e.record)));
                }
            } else {
                refresh_flag = Some(Arc::clone(&e.refreshing));
            }
        }
        let read = match &self.replica {
            Some((r, _, routing)) if routing.replica_ok(&format!("c:{id}")) => {
                r.get_client(id).await
            }
            _ => self.store.get_client(id).await,
        };
        if let Some(flag) = refresh_flag {
            // On failure the next caller tries again.
            flag.store(false, Ordering::Release);
        }
        let Some(rec) = read? else {
            self.entries.write().remove(id);
            return Ok(None);
        };
        let rec = Arc::new(rec);
        let mut entries = self.entries.write();
        if entries.len() >= MAX_ENTRIES {
            let ttl = self.ttl;
            entries.retain(|_, e| e.at.elapsed() < ttl);
        }
        if entries.len() < MAX_ENTRIES || entries.contains_key(id) {
            entries.insert(
                id.to_owned(),
                Entry {
                    at: Instant::now(),
                    record: Arc::clone(&rec),
                    refreshing: Arc::new(AtomicBool::new(false)),
                },
            );
        }
        Ok(Some(rec))
    }

    /// The change feed named `key`: a replica may not have it yet.
    fn changed(&self, key: String) {
        if let Some((_, _, routing)) = &self.replica {
            routing.changed(key);
        }
    }

    /// Forget `id` (after a write through this process or another).
    pub fn invalidate(&self, id: &str) {
        self.entries.write().remove(id);
    }

    /// Forget everything (changes may have been missed).
    pub fn clear(&self) {
        self.entries.write().clear();
        self.user_entries.write().clear();
    }

    /// Forget user `name`.
    pub fn invalidate_user(&self, name: &str) {
        self.user_entries.write().remove(name);
    }

    /// User `name`'s stored credentials, from the cache if fresh, else from the store.
    async fn user(&self, name: &str) -> Result<Option<StoredCredentials>, SourceError> {
        if self.ttl.is_zero() {
            return self.users.credentials(PrincipalKind::User, name).await;
        }
        if let Some((at, c)) = self.user_entries.read().get(name)
            && at.elapsed() < self.ttl
        {
            return Ok(Some(c.clone()));
        }
        let read = match &self.replica {
            Some((_, users, routing)) if routing.replica_ok(&format!("u:{name}")) => {
                users.credentials(PrincipalKind::User, name).await?
            }
            _ => self.users.credentials(PrincipalKind::User, name).await?,
        };
        let mut map = self.user_entries.write();
        match &read {
            None => {
                map.remove(name);
            }
            Some(c) => {
                if map.len() >= MAX_ENTRIES {
                    let ttl = self.ttl;
                    map.retain(|_, (at, _)| at.elapsed() < ttl);
                }
                if map.len() < MAX_ENTRIES || map.contains_key(name) {
                    map.insert(name.to_owned(), (Instant::now(), c.clone()));
                }
            }
        }
        Ok(read)
    }

    /// Drop records other instances change, as the store announces them (PostgreSQL
    /// LISTEN/NOTIFY), until `stop`: a removed client or a rotated secret stops working
    /// on every instance at once, not after the TTL. Returns at once for a store without
    /// a feed. While the feed is down nothing is known, so the cache is emptied on every
    /// (re)subscription and the TTL alone bounds staleness until it is back.
    pub async fn follow_changes(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        use futures::StreamExt;
        use portcullis_store::Change;
        let mut logged_down = false;
        loop {
            match self.store.changes().await {
                Ok(None) => return,
                Ok(Some(mut feed)) => {
                    if logged_down {
                        tracing::info!("store change feed is back");
                        logged_down = false;
                    }
                    self.clear();
                    if let Some((_, _, routing)) = &self.replica {
                        routing.feed_up();
                    }
                    loop {
                        let next = tokio::select! {
                            n = feed.next() => n,
                            () = stop.cancelled() => return,
                        };
                        match next {
                            Some(Ok(Change::Client(id))) => {
                                self.changed(format!("c:{id}"));
                                self.invalidate(&id);
                            }
                            Some(Ok(Change::User(name))) => {
                                self.changed(format!("u:{name}"));
                                self.invalidate_user(&name);
                            }
                            Some(Ok(Change::Resync)) => {
                                if let Some((_, _, routing)) = &self.replica {
                                    routing.feed_up();
                                }
                                self.clear();
                            }
                            // The NAS table reloads on its own period.
                            Some(Ok(Change::Nas(_))) => {}
                            Some(Err(e)) => {
                                tracing::warn!("store change feed failed: {e}");
                                logged_down = true;
                                break;
                            }
                            None => break,
                        }
                    }
                }
                Err(e) => {
                    if !logged_down {
                        tracing::warn!(
                            "store change feed unavailable ({e}); cached records expire by TTL"
                        );
                        logged_down = true;
                    }
                }
            }
            if let Some((_, _, routing)) = &self.replica {
                routing.feed_down();
            }
            self.clear();
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                () = stop.cancelled() => return,
            }
        }
    }
}

impl CredentialSource for ClientCache {
    fn credentials<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, SourceError>> {
        match kind {
            PrincipalKind::User => Box::pin(self.user(principal)),
            PrincipalKind::Client => Box::pin(async move {
                match self.get(principal).await {
                    Ok(c) => Ok(c.map(|c| StoredCredentials {
                        hashes: c.secret_hashes.clone(),
                        disabled: false,
                    })),
                    Err(e) => {
                        // The core answers "overloaded" (503 + Retry-After); the cause is
                        // only visible here.
                        portcullis_door::metrics::store_failure(
                            "looking up client credentials",
                            &e,
                        );
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
        Box::pin(async move {
            let done = self.users.replace_hash(kind, principal, old, new).await;
            // After the write, so no concurrent read caches the old hash again.
            match kind {
                PrincipalKind::Client => self.invalidate(principal),
                PrincipalKind::User => self.invalidate_user(principal),
            }
            done
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_store::{ClientStore, Grant, SqliteStore, UserStore};

    async fn store_with_client(dir: &std::path::Path) -> Arc<SqliteStore> {
        let store = Arc::new(SqliteStore::open(&dir.join("db")).await.unwrap());
        store
            .put_client(&ClientRecord {
                id: "c".into(),
                auth: portcullis_store::ClientAuth::Secret,
                secret_hashes: vec![
                    "$hmac-sha256$k=p1$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
                ],
                grants: vec![Grant::ClientCredentials],
                scopes: vec!["read".into()],
                token_lifetime: 3600,
                created_at: 0,
            })
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn users_are_cached_and_a_local_rehash_drops_the_old_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_client(dir.path()).await;
        let old = "$hmac-sha256$k=p1$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let new = "$hmac-sha256$k=p1$BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA";
        store
            .put_user(&portcullis_store::UserRecord::new("u", old, 0).unwrap())
            .await
            .unwrap();
        let cache = ClientCache::new(store.clone(), Duration::from_secs(3600));
        fn user(c: &ClientCache) -> BoxFuture<'_, Result<Option<StoredCredentials>, SourceError>> {
            c.credentials(PrincipalKind::User, "u")
        }
        assert_eq!(user(&cache).await.unwrap().unwrap().hashes, [old]);
        // Changed behind the cache's back (another process): the cached copy answers.
        store.set_user_disabled("u", true).await.unwrap();
        assert!(!user(&cache).await.unwrap().unwrap().disabled);
        // A rehash through the cache drops the entry: the next read sees the store.
        assert!(
            cache
                .replace_hash(PrincipalKind::User, "u", old, new)
                .await
                .unwrap()
        );
        let now = user(&cache).await.unwrap().unwrap();
        assert_eq!(
            (now.hashes.as_slice(), now.disabled),
            ([new.to_owned()].as_slice(), true)
        );
        // Unknown users are not cached: a later insert is seen at once.
        assert!(
            cache
                .credentials(PrincipalKind::User, "v")
                .await
                .unwrap()
                .is_none()
        );
        cache.invalidate_user("u");
        store.close().await;
        assert!(user(&cache).await.is_err());
    }

    #[tokio::test]
    async fn fresh_entries_are_served_without_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_client(dir.path()).await;
        let cache = ClientCache::new(store.clone(), Duration::from_secs(3600));
        let first = cache.get("c").await.unwrap().unwrap();
        assert_eq!(first.scopes, vec!["read".to_owned()]);
        store.close().await;
        // Store gone: the cached record still answers, via both paths.
        assert_eq!(cache.get("c").await.unwrap().unwrap().id, "c");
        let creds = cache
            .credentials(PrincipalKind::Client, "c")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(creds.hashes, first.secret_hashes);
        // Unknown ids are never cached, so they reach the (failed) store.
        assert!(cache.get("other").await.is_err());
        // After invalidation the store is asked again.
        cache.invalidate("c");
        assert!(cache.get("c").await.is_err());
    }

    #[tokio::test]
    async fn zero_ttl_disables_caching() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_client(dir.path()).await;
        let cache = ClientCache::new(store.clone(), Duration::ZERO);
        assert!(cache.get("c").await.unwrap().is_some());
        store.close().await;
        assert!(cache.get("c").await.is_err());
    }
}
