//! [`PgStore`]: the shared backend, for several Portcullis nodes over one PostgreSQL
//! database. Same schema and rules as [`SqliteStore`](crate::SqliteStore) (migrations in
//! `migrations/postgres`, embedded in the binary and applied under PostgreSQL's advisory
//! lock, so nodes starting together migrate once), the same statements (the one copy in
//! `queries.rs`, expanded here for `PgPool`), and the same conformance suite. Its own
//! parts: the connection pool, the change feed (LISTEN on the `0003_notify` triggers).
//!
//! Compare-and-set and rotation are single `UPDATE` statements: under READ COMMITTED a
//! concurrent update of the same row waits and re-checks its `WHERE` against the new row,
//! so exactly one rehash wins and rotations never lose a secret.
//!
//! Pepper keys and the master key are not in the database here either: nodes get them
//! from their own secrets file.

use std::time::Duration;

use futures::future::BoxFuture;
use portcullis_core::{CredentialSource, PrincipalKind, SourceError, StoredCredentials};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::StoreError;
use crate::nas::NasRecord;
use crate::record::{
    ClientAuth, ClientRecord, Grant, SigningKeyRecord, UserRecord, validate_hash, validate_name,
    validate_secret_hashes, validate_settings,
};
use crate::rows::{
    CLIENT_COLUMNS, ClientRow, KEY_COLUMNS, KeyRow, USER_COLUMNS, UserRow, backend,
    client_from_row, client_label, insert_error, join, key_from_row, user_from_row, user_label,
};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// How long to wait for a pooled connection before answering with an error. While the
/// database is down sqlx keeps retrying the connect until then, so this is how long a
/// request waits before its 503: short, so clients are told to retry instead of hanging.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// The PostgreSQL identity store. Cheap to share (`Arc`); the pool inside is thread-safe.
#[derive(Debug, Clone)]
pub struct PgStore {
    /// Connection pool to the database.
    pool: PgPool,
}

/// The advisory lock key that serialises first-signing-key creation (the bytes of
/// "pcsignkey"; any constant no other user of the database takes).
const SIGNING_KEY_LOCK: i64 = 0x7063_7369_676e_6b65;

impl PgStore {
    /// Hold, until `tx` ends, the lock under which instances create the first signing key
    /// ([`insert_first_signing_key`](crate::store::SigningKeyStore::insert_first_signing_key)):
    /// under READ COMMITTED two `INSERT ... WHERE NOT EXISTS` would both see no key.
    async fn serialize_key_creation(
        tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    ) -> Result<(), StoreError> {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SIGNING_KEY_LOCK)
            .execute(&mut **tx)
            .await
            .map_err(backend)?;
        Ok(())
    }

    /// Connect to `url` (`postgres://user@host:port/db?...`) with a pool of at most
    /// `max_connections`, and bring the schema up to date.
    pub async fn connect(url: &str, max_connections: u32) -> Result<PgStore, StoreError> {
        let options: PgConnectOptions = url
            .parse()
            .map_err(|_| StoreError::invalid("PostgreSQL URL is not valid"))?;
        Self::connect_with(options, max_connections).await
    }

    /// Like [`PgStore::connect`], from parsed options (e.g. with a `search_path`).
    pub async fn connect_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<PgStore, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Backend(format!("connecting to PostgreSQL: {e}")))?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| StoreError::Backend(format!("migrating PostgreSQL: {e}")))?;
        Ok(PgStore { pool })
    }

    /// A read replica at `url` for lookups (issue 30): no migrations (a replica is read
    /// only and follows the primary's schema); writes through it fail.
    pub async fn connect_replica(url: &str, max_connections: u32) -> Result<PgStore, StoreError> {
        let options: PgConnectOptions = url
            .parse()
            .map_err(|_| StoreError::invalid("PostgreSQL replica URL is not valid"))?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| {
                StoreError::Backend(format!("connecting to the PostgreSQL replica: {e}"))
            })?;
        Ok(PgStore { pool })
    }

    /// Whether `url` reaches a PostgreSQL that answers, without changing anything (no
    /// pool, no migrations): for `portcullis config check` and `doctor`. Returns the
    /// server's clock, so `doctor` can compare it with this machine's (instances whose
    /// clocks disagree disagree on token expiry).
    pub async fn probe(url: &str) -> Result<std::time::SystemTime, StoreError> {
        use sqlx::Connection;
        let options: PgConnectOptions = url
            .parse()
            .map_err(|_| StoreError::invalid("PostgreSQL URL is not valid"))?;
        let mut conn = sqlx::PgConnection::connect_with(&options)
            .await
            .map_err(|e| StoreError::Backend(format!("connecting to PostgreSQL: {e}")))?;
        let micros: i64 =
            sqlx::query_scalar("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint")
                .fetch_one(&mut conn)
                .await
                .map_err(backend)?;
        let _ = conn.close().await;
        let since_epoch = std::time::Duration::from_micros(u64::try_from(micros).unwrap_or(0));
        Ok(std::time::UNIX_EPOCH + since_epoch)
    }

    /// Close every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The channel the `0003_notify` triggers announce changes on.
const CHANGES_CHANNEL: &str = "portcullis_changes";

crate::queries::identity_store!(PgStore, postgres, {
    async fn changes(&self) -> Result<Option<crate::store::ChangeFeed>, StoreError> {
        use crate::store::Change;
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool)
            .await
            .map_err(backend)?;
        listener.listen(CHANGES_CHANNEL).await.map_err(backend)?;
        // `try_recv` (not `recv`) so that a lost connection is reported: notifications
        // sent while it was down are gone, and the reader must treat everything as stale.
        let feed = futures::stream::unfold(listener, |mut l| async move {
            loop {
                let item = match l.try_recv().await {
                    Ok(Some(n)) => match Change::parse(n.payload()) {
                        Some(c) => Ok(c),
                        None => continue,
                    },
                    Ok(None) => Ok(Change::Resync),
                    Err(e) => Err(backend(e)),
                };
                return Some((item, l));
            }
        });
        Ok(Some(Box::pin(feed)))
    }
});

crate::delegated::delegated_capabilities!(PgStore, postgres);
