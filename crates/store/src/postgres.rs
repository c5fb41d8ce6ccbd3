//! [`PgStore`]: the shared backend, for several Portcullis nodes over one PostgreSQL
//! database. Same schema and rules as [`SqliteStore`](crate::SqliteStore) (migrations in
//! `migrations/postgres`, embedded in the binary and applied under PostgreSQL's advisory
//! lock, so nodes starting together migrate once), and the same conformance suite.
//!
//! Compare-and-set and rotation are single `UPDATE` statements: under READ COMMITTED a
//! concurrent update of the same row waits and re-checks its `WHERE` against the new row,
//! so exactly one rehash wins and rotations never lose a secret.
//!
//! Pepper keys and the master key are not in the database here either: nodes get them
//! from their own secrets file.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use portcullis_core::{CredentialSource, PrincipalKind, SourceError, StoredCredentials};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::StoreError;
use crate::nas::NasRecord;
use crate::record::{
    ClientRecord, Grant, SigningKeyRecord, UserRecord, validate_hash, validate_name,
    validate_secret_hashes, validate_settings,
};
use crate::rows::{
    CLIENT_COLUMNS, ClientRow, KEY_COLUMNS, KeyRow, USER_COLUMNS, UserRow, backend,
    client_from_row, client_label, insert_error, join, key_from_row, user_from_row, user_label,
};
use crate::store::Store;

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

impl PgStore {
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

    /// Whether `url` reaches a PostgreSQL that answers, without changing anything (no
    /// pool, no migrations): for `portcullis config check`.
    pub async fn probe(url: &str) -> Result<(), StoreError> {
        use sqlx::Connection;
        let options: PgConnectOptions = url
            .parse()
            .map_err(|_| StoreError::invalid("PostgreSQL URL is not valid"))?;
        let mut conn = sqlx::PgConnection::connect_with(&options)
            .await
            .map_err(|e| StoreError::Backend(format!("connecting to PostgreSQL: {e}")))?;
        sqlx::query("SELECT 1")
            .execute(&mut conn)
            .await
            .map_err(backend)?;
        let _ = conn.close().await;
        Ok(())
    }

    /// Close every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The channel the `0003_notify` triggers announce changes on.
const CHANGES_CHANNEL: &str = "portcullis_changes";

#[async_trait]
impl Store for PgStore {
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

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(backend)
    }

    async fn get_client(&self, id: &str) -> Result<Option<ClientRecord>, StoreError> {
        let row: Option<ClientRow> = sqlx::query_as(&format!(
            "SELECT {CLIENT_COLUMNS} FROM clients WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        row.map(client_from_row).transpose()
    }

    async fn put_client(&self, client: &ClientRecord) -> Result<(), StoreError> {
        client.validate()?;
        sqlx::query(&format!(
            "INSERT INTO clients ({CLIENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
        ))
        .bind(&client.id)
        .bind(&client.secret_hashes[0])
        .bind(client.secret_hashes.get(1))
        .bind(join(client.grants.iter().map(|g| g.as_str())))
        .bind(join(&client.scopes))
        .bind(i64::from(client.token_lifetime))
        .bind(client.created_at)
        .execute(&self.pool)
        .await
        .map_err(|e| insert_error(e, || client_label(&client.id)))?;
        Ok(())
    }

    async fn update_client_secrets(&self, id: &str, hashes: Vec<String>) -> Result<(), StoreError> {
        validate_secret_hashes(&hashes)?;
        let done = sqlx::query(
            "UPDATE clients SET secret_hash = $2, previous_secret_hash = $3 WHERE id = $1",
        )
        .bind(id)
        .bind(&hashes[0])
        .bind(hashes.get(1))
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(client_label(id)));
        }
        Ok(())
    }

    async fn rotate_client_secret(&self, id: &str, new_hash: &str) -> Result<(), StoreError> {
        validate_hash(new_hash)?;
        // One statement: the right-hand sides see the row as it was, so the shift is
        // atomic even against a concurrent rotation or rehash.
        let done = sqlx::query(
            "UPDATE clients SET previous_secret_hash = secret_hash, secret_hash = $2 \
             WHERE id = $1",
        )
        .bind(id)
        .bind(new_hash)
        .execute(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_check_violation() => {
                StoreError::invalid("the new secret hash equals the current one")
            }
            _ => backend(e),
        })?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(client_label(id)));
        }
        Ok(())
    }

    async fn finish_client_rotation(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        let done = sqlx::query(
            "UPDATE clients SET previous_secret_hash = NULL \
             WHERE id = $1 AND previous_secret_hash IS NOT NULL",
        )
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
        if done.rows_affected() > 0 {
            tx.commit().await.map_err(backend)?;
            return Ok(true);
        }
        let exists: Option<(i64,)> = sqlx::query_as("SELECT 1::int8 FROM clients WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        match exists {
            Some(_) => Ok(false),
            None => Err(StoreError::NotFound(client_label(id))),
        }
    }

    async fn update_client_settings(
        &self,
        id: &str,
        grants: &[Grant],
        scopes: &[String],
        token_lifetime: u32,
    ) -> Result<(), StoreError> {
        validate_settings(grants, scopes, token_lifetime)?;
        let done = sqlx::query(
            "UPDATE clients SET grants = $2, scopes = $3, token_lifetime = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(join(grants.iter().map(|g| g.as_str())))
        .bind(join(scopes))
        .bind(i64::from(token_lifetime))
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(client_label(id)));
        }
        Ok(())
    }

    async fn remove_client(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM clients WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn list_clients(&self) -> Result<Vec<ClientRecord>, StoreError> {
        let rows: Vec<ClientRow> =
            sqlx::query_as(&format!("SELECT {CLIENT_COLUMNS} FROM clients ORDER BY id"))
                .fetch_all(&self.pool)
                .await
                .map_err(backend)?;
        rows.into_iter().map(client_from_row).collect()
    }

    async fn get_user(&self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        let row: Option<UserRow> = sqlx::query_as(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE username = $1"
        ))
        .bind(username)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        Ok(row.map(user_from_row))
    }

    async fn put_user(&self, user: &UserRecord) -> Result<(), StoreError> {
        user.validate()?;
        sqlx::query(&format!(
            "INSERT INTO users ({USER_COLUMNS}) VALUES ($1, $2, $3, $4)"
        ))
        .bind(&user.username)
        .bind(&user.password_hash)
        .bind(user.disabled)
        .bind(user.created_at)
        .execute(&self.pool)
        .await
        .map_err(|e| insert_error(e, || user_label(&user.username)))?;
        Ok(())
    }

    async fn put_users(&self, users: &[UserRecord]) -> Result<Vec<bool>, StoreError> {
        for u in users {
            u.validate()?;
        }
        // One transaction: one fsync for the whole import instead of one per user.
        let mut tx = self.pool.begin().await.map_err(backend)?;
        let mut inserted = Vec::with_capacity(users.len());
        for u in users {
            let done = sqlx::query(&format!(
                "INSERT INTO users ({USER_COLUMNS}) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (username) DO NOTHING"
            ))
            .bind(&u.username)
            .bind(&u.password_hash)
            .bind(u.disabled)
            .bind(u.created_at)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
            inserted.push(done.rows_affected() == 1);
        }
        tx.commit().await.map_err(backend)?;
        Ok(inserted)
    }

    async fn set_user_password(&self, username: &str, hash: &str) -> Result<(), StoreError> {
        validate_hash(hash)?;
        let done = sqlx::query("UPDATE users SET password_hash = $2 WHERE username = $1")
            .bind(username)
            .bind(hash)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(user_label(username)));
        }
        Ok(())
    }

    async fn set_user_disabled(&self, username: &str, disabled: bool) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE users SET disabled = $2 WHERE username = $1")
            .bind(username)
            .bind(disabled)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(user_label(username)));
        }
        Ok(())
    }

    async fn remove_user(&self, username: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM users WHERE username = $1")
            .bind(username)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn list_users(&self) -> Result<Vec<UserRecord>, StoreError> {
        let rows: Vec<UserRow> = sqlx::query_as(&format!(
            "SELECT {USER_COLUMNS} FROM users ORDER BY username"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        Ok(rows.into_iter().map(user_from_row).collect())
    }

    async fn insert_signing_key(&self, key: &SigningKeyRecord) -> Result<(), StoreError> {
        key.validate()?;
        sqlx::query(&format!(
            "INSERT INTO signing_keys ({KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
        ))
        .bind(&key.kid)
        .bind(&key.alg)
        .bind(&key.public_key)
        .bind(&key.private_key_sealed)
        .bind(key.created_at)
        .bind(key.not_after)
        .bind(key.retired_at)
        .execute(&self.pool)
        .await
        .map_err(|e| insert_error(e, || format!("signing key {:?}", key.kid)))?;
        Ok(())
    }

    async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
        let rows: Vec<KeyRow> = sqlx::query_as(&format!(
            "SELECT {KEY_COLUMNS} FROM signing_keys ORDER BY created_at, kid"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        Ok(rows.into_iter().map(key_from_row).collect())
    }

    async fn retire_signing_key(&self, kid: &str, at: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE signing_keys SET retired_at = $2 WHERE kid = $1 AND retired_at IS NULL",
        )
        .bind(kid)
        .bind(at)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn remove_signing_key(&self, kid: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM signing_keys WHERE kid = $1")
            .bind(kid)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn revoke_token(&self, jti: &str, expires_at: i64) -> Result<(), StoreError> {
        validate_name("token id", jti)?;
        sqlx::query(
            "INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, $2) \
             ON CONFLICT (jti) DO UPDATE SET expires_at = GREATEST(revoked_tokens.expires_at, EXCLUDED.expires_at)",
        )
        .bind(jti)
        .bind(expires_at)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError> {
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT 1::int8 FROM revoked_tokens WHERE jti = $1")
                .bind(jti)
                .fetch_optional(&self.pool)
                .await
                .map_err(backend)?;
        Ok(row.is_some())
    }

    async fn purge_revocations(&self, now: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM revoked_tokens WHERE expires_at <= $1")
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(done.rows_affected())
    }

    async fn put_nas(&self, nas: &NasRecord) -> Result<(), StoreError> {
        crate::nas::postgres::put(&self.pool, nas).await
    }

    async fn get_nas(&self, name: &str) -> Result<Option<NasRecord>, StoreError> {
        crate::nas::postgres::get(&self.pool, name).await
    }

    async fn list_nas(&self) -> Result<Vec<NasRecord>, StoreError> {
        crate::nas::postgres::list(&self.pool).await
    }

    async fn remove_nas(&self, name: &str) -> Result<bool, StoreError> {
        crate::nas::postgres::remove(&self.pool, name).await
    }

    async fn set_nas_secret(&self, name: &str, secret_sealed: &[u8]) -> Result<(), StoreError> {
        crate::nas::postgres::set_secret(&self.pool, name, secret_sealed).await
    }

    async fn set_nas_require_message_authenticator(
        &self,
        name: &str,
        require: bool,
    ) -> Result<(), StoreError> {
        crate::nas::postgres::set_require_message_authenticator(&self.pool, name, require).await
    }

    fn as_credential_source(self: Arc<Self>) -> Arc<dyn CredentialSource> {
        self
    }
}

impl PgStore {
    async fn stored_credentials(
        &self,
        kind: PrincipalKind,
        principal: &str,
    ) -> Result<Option<StoredCredentials>, StoreError> {
        match kind {
            PrincipalKind::Client => {
                let row: Option<(String, Option<String>)> = sqlx::query_as(
                    "SELECT secret_hash, previous_secret_hash FROM clients WHERE id = $1",
                )
                .bind(principal)
                .fetch_optional(&self.pool)
                .await
                .map_err(backend)?;
                Ok(row.map(|(current, previous)| StoredCredentials {
                    hashes: std::iter::once(current).chain(previous).collect(),
                    disabled: false,
                }))
            }
            PrincipalKind::User => {
                let row: Option<(String, bool)> =
                    sqlx::query_as("SELECT password_hash, disabled FROM users WHERE username = $1")
                        .bind(principal)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(backend)?;
                Ok(row.map(|(hash, disabled)| StoredCredentials {
                    hashes: vec![hash],
                    disabled,
                }))
            }
        }
    }

    async fn compare_and_replace(
        &self,
        kind: PrincipalKind,
        principal: &str,
        old: &str,
        new: &str,
    ) -> Result<bool, StoreError> {
        validate_hash(new)?;
        let done = match kind {
            // One statement, so the check and both slot updates are atomic; only the slot
            // holding `old` changes, and only if `old` is still stored.
            PrincipalKind::Client => sqlx::query(
                "UPDATE clients SET \
                   secret_hash = CASE WHEN secret_hash = $2 THEN $3 ELSE secret_hash END, \
                   previous_secret_hash = CASE WHEN previous_secret_hash = $2 THEN $3 \
                                          ELSE previous_secret_hash END \
                 WHERE id = $1 AND (secret_hash = $2 OR previous_secret_hash = $2)",
            ),
            PrincipalKind::User => sqlx::query(
                "UPDATE users SET password_hash = $3 WHERE username = $1 AND password_hash = $2",
            ),
        }
        .bind(principal)
        .bind(old)
        .bind(new)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(done.rows_affected() > 0)
    }
}

impl CredentialSource for PgStore {
    fn credentials<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, SourceError>> {
        Box::pin(async move {
            self.stored_credentials(kind, principal)
                .await
                .map_err(SourceError::from)
        })
    }

    fn replace_hash<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
        old: &'a str,
        new: &'a str,
    ) -> BoxFuture<'a, Result<bool, SourceError>> {
        Box::pin(async move {
            self.compare_and_replace(kind, principal, old, new)
                .await
                .map_err(SourceError::from)
        })
    }
}
