//! [`SqliteStore`]: the embedded backend. SQLite through sqlx with WAL (readers never
//! block the writer), foreign keys on, a busy timeout so concurrent writers (the server
//! and a CLI command) wait instead of failing, and the schema migrations compiled into the
//! binary (`migrations/sqlite/*.sql`).
//!
//! Queries are plain `sqlx::query` with binds (no compile-time checked macros, which would
//! need a database at build time), the one copy in `queries.rs` shared with PostgreSQL.
//! Every write validates its record first.

use std::path::Path;
use std::time::Duration;

use futures::future::BoxFuture;
use portcullis_core::{CredentialSource, PrincipalKind, SourceError, StoredCredentials};
use sqlx::SqlitePool;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

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

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// How long a statement waits for another connection's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Pool size: WAL lets readers run in parallel with the one writer; credential look-ups
/// are reads, so a handful of connections covers a 2-8 core server.
const MAX_CONNECTIONS: u32 = 8;

/// The SQLite identity store. Cheap to share (`Arc`); the pool inside is thread-safe.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Connection pool over one database file.
    pool: SqlitePool,
}

impl SqliteStore {
    /// Nothing to take: SQLite runs one writer at a time, and the single `INSERT ...
    /// SELECT ... WHERE NOT EXISTS` of
    /// [`insert_first_signing_key`](crate::store::SigningKeyStore::insert_first_signing_key)
    /// is the transaction's first statement, so it takes the write lock before it reads.
    async fn serialize_key_creation(
        _tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    /// Open (creating if missing) the database file at `path` and bring its schema up to
    /// date. Prefer [`DataDir::open`](crate::DataDir::open), which also sets file modes.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a commit is on disk before we answer. Writes are rare (admin commands,
            // revocations, rehash upgrades) and a revocation or a just-printed secret must
            // not be rolled back by a power cut, which NORMAL allows in WAL mode.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        // Switching a brand-new file to WAL needs an exclusive lock, and SQLite answers
        // "database is locked" at once (no busy wait) when two processes (or two opens)
        // create it together: the loser tries again shortly, a bounded number of times.
        let mut attempt = 0u32;
        let pool = loop {
            match SqlitePoolOptions::new()
                .max_connections(MAX_CONNECTIONS)
                .connect_with(options.clone())
                .await
            {
                Ok(p) => break p,
                Err(e) if attempt < 40 && is_locked(&e) => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                Err(e) => {
                    return Err(StoreError::Backend(format!(
                        "opening {}: {e}",
                        path.display()
                    )));
                }
            }
        };
        // Two processes opening a fresh database at once both try to apply each
        // migration; SQLite serialises them and the loser fails on "table exists".
        // Running again finds that one applied (and may lose the next race): at most once
        // per migration, plus one.
        let mut tries = MIGRATOR.iter().count() + 1;
        loop {
            match MIGRATOR.run(&pool).await {
                Ok(()) => break,
                Err(_) if tries > 1 => tries -= 1,
                Err(e) => {
                    return Err(StoreError::Backend(format!(
                        "migrating {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        Ok(SqliteStore { pool })
    }

    /// Close every connection (checkpoints the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// SQLITE_BUSY / SQLITE_LOCKED (and their extended codes) from the database.
fn is_locked(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => d
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6)),
        _ => false,
    }
}

crate::queries::identity_store!(SqliteStore, sqlite, {});
crate::delegated::delegated_capabilities!(SqliteStore, sqlite);
