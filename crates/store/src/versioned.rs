//! What the admin API (issue 27) needs beyond the CLI's statements: records with their
//! version, keyset pages, writes that happen only if the version is still the one the
//! caller saw (compare-and-set, so a stale write is refused and never lost), the
//! revocation list by page, and the Idempotency-Key table. The SQL is written once and
//! expanded per backend by `versioned_queries!`, as [`crate::nas`] does.
//!
//! Versions start at 1 and grow by one with every change of the row, whoever makes it:
//! the statements here bump it themselves in the same `UPDATE` that checks it, and a
//! trigger (`0006_admin` / `0007_admin` migrations) bumps it for every other statement
//! (the CLI, rotation, rehash-on-login). A version therefore names one state of a row,
//! for as long as the row exists.

use crate::error::StoreError;
use crate::record::validate_name;

/// A record and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned<T> {
    /// The record.
    pub record: T,
    /// Its version: 1 when created, one more after every change.
    pub version: i64,
}

/// Which versioned table a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// A client, by id.
    Client,
    /// A user, by username.
    User,
    /// A NAS, by name.
    Nas,
    /// A group, by name (issue 39).
    Group,
}

impl Resource {
    pub(crate) const fn table(self) -> (&'static str, &'static str) {
        match self {
            Resource::Client => ("clients", "id"),
            Resource::User => ("users", "username"),
            Resource::Nas => ("nas", "name"),
            Resource::Group => ("groups", "name"),
        }
    }

    pub(crate) fn label(self, key: &str) -> String {
        match self {
            Resource::Client => crate::rows::client_label(key),
            Resource::User => crate::rows::user_label(key),
            Resource::Nas => crate::nas::nas_label(key),
            Resource::Group => crate::rows::group_label(key),
        }
    }
}

/// Most records one page may hold.
pub const MAX_PAGE: u32 = 1_000;
/// Longest Idempotency-Key accepted, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 255;
/// Longest digest of a request kept with its key, in bytes.
pub const MAX_REQUEST_DIGEST_LEN: usize = 64;

/// One claimed Idempotency-Key: who used it, the digest of the request it came with (a
/// different request under the same key is refused), and once the request finished its
/// answer, sealed by the caller (it may carry a secret shown once).
#[derive(Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The caller that used the key (keys are per caller).
    pub principal: String,
    /// The key as sent.
    pub key: String,
    /// Digest of the request (method, path, body).
    pub request_digest: Vec<u8>,
    /// The sealed answer; `None` while the first request is still running.
    pub response_sealed: Option<Vec<u8>>,
    /// When it was claimed (unix seconds).
    pub created_at: i64,
}

impl std::fmt::Debug for IdempotencyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyRecord")
            .field("principal", &self.principal)
            .field("key", &self.key)
            .field("answered", &self.response_sealed.is_some())
            .field("created_at", &self.created_at)
            .finish()
    }
}

impl IdempotencyRecord {
    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_name("idempotency principal", &self.principal)?;
        validate_idempotency_key(&self.key)?;
        if self.request_digest.is_empty() || self.request_digest.len() > MAX_REQUEST_DIGEST_LEN {
            return Err(StoreError::invalid(format!(
                "request digest must be 1-{MAX_REQUEST_DIGEST_LEN} bytes"
            )));
        }
        Ok(())
    }
}

/// An Idempotency-Key: 1-255 printable ASCII characters (it travels in a header).
pub fn validate_idempotency_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty()
        || key.len() > MAX_IDEMPOTENCY_KEY_CHARS
        || !key.bytes().all(|b| (0x20..0x7f).contains(&b))
    {
        return Err(StoreError::invalid(format!(
            "Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters"
        )));
    }
    Ok(())
}

pub(crate) fn check_page(limit: u32) -> Result<i64, StoreError> {
    if limit == 0 || limit > MAX_PAGE {
        return Err(StoreError::invalid(format!(
            "page size must be 1-{MAX_PAGE}"
        )));
    }
    Ok(i64::from(limit))
}

/// After a compare-and-set touched no row: the row is gone, or its version moved on.
pub(crate) fn missed(resource: Resource, key: &str, exists: bool) -> StoreError {
    if exists {
        StoreError::Conflict(resource.label(key))
    } else {
        StoreError::NotFound(resource.label(key))
    }
}

/// The versioned statements for one backend's pool type, as free functions that the
/// backend's `Store` impl delegates to.
macro_rules! versioned_queries {
    ($pool:ty) => {
        use $crate::error::StoreError;
        use $crate::nas::{NAS_COLUMNS, NasRecord, NasRow, nas_from_row, nas_insert_error};
        use $crate::record::{ClientRecord, UserRecord};
        use $crate::rows::{
            CLIENT_COLUMNS, ClientRow, USER_COLUMNS, VersionedUserRow, backend, client_from_row, join,
            user_from_row,
        };
        use $crate::versioned::{
            IdempotencyRecord, Resource, Versioned, check_page, missed,
        };

        async fn exists(pool: &$pool, resource: Resource, key: &str) -> Result<bool, StoreError> {
            let (table, column) = resource.table();
            let row: Option<(i64,)> = sqlx::query_as(&format!(
                "SELECT CAST(1 AS BIGINT) FROM {table} WHERE {column} = $1"
            ))
            .bind(key)
            .fetch_optional(pool)
            .await
            .map_err(backend)?;
            Ok(row.is_some())
        }

        pub(crate) async fn client(
            pool: &$pool,
            id: &str,
        ) -> Result<Option<Versioned<ClientRecord>>, StoreError> {
            let row: Option<(String, String, Option<String>, Option<String>, Option<String>, String, String, i64, i64, i64)> =
                sqlx::query_as(&format!(
                    "SELECT {CLIENT_COLUMNS}, version FROM clients WHERE id = $1"
                ))
                .bind(id)
                .fetch_optional(pool)
                .await
                .map_err(backend)?;
            row.map(client_versioned).transpose()
        }

        fn client_versioned(
            r: (String, String, Option<String>, Option<String>, Option<String>, String, String, i64, i64, i64),
        ) -> Result<Versioned<ClientRecord>, StoreError> {
            let row: ClientRow = (r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8);
            Ok(Versioned {
                record: client_from_row(row)?,
                version: r.9,
            })
        }

        pub(crate) async fn clients_after(
            pool: &$pool,
            after: Option<&str>,
            limit: u32,
        ) -> Result<Vec<Versioned<ClientRecord>>, StoreError> {
            let limit = check_page(limit)?;
            let rows: Vec<(String, String, Option<String>, Option<String>, Option<String>, String, String, i64, i64, i64)> =
                sqlx::query_as(&format!(
                    "SELECT {CLIENT_COLUMNS}, version FROM clients \
                     WHERE id > $1 ORDER BY id LIMIT $2"
                ))
                .bind(after.unwrap_or(""))
                .bind(limit)
                .fetch_all(pool)
                .await
                .map_err(backend)?;
            rows.into_iter().map(client_versioned).collect()
        }

        pub(crate) async fn replace_client(
            pool: &$pool,
            c: &ClientRecord,
            version: i64,
        ) -> Result<i64, StoreError> {
            c.validate()?;
            let row: Option<(i64,)> = sqlx::query_as(
                "UPDATE clients SET auth_method = $2, secret_hash = $3, \
                 previous_secret_hash = $4, auth_key = $5, grants = $6, scopes = $7, \
                 token_lifetime = $8, version = version + 1 \
                 WHERE id = $1 AND version = $9 RETURNING version",
            )
            .bind(&c.id)
            .bind(c.auth.method())
            .bind(c.secret_hashes.first())
            .bind(c.secret_hashes.get(1))
            .bind(c.auth.key())
            .bind(join(c.grants.iter().map(|g| g.as_str())))
            .bind(join(&c.scopes))
            .bind(i64::from(c.token_lifetime))
            .bind(version)
            .fetch_optional(pool)
            .await
            .map_err(backend)?;
            match row {
                Some((v,)) => Ok(v),
                None => Err(missed(Resource::Client, &c.id, exists(pool, Resource::Client, &c.id).await?)),
            }
        }

        pub(crate) async fn user(
            pool: &$pool,
            username: &str,
        ) -> Result<Option<Versioned<UserRecord>>, StoreError> {
            let row: Option<VersionedUserRow> = sqlx::query_as(&format!(
                "SELECT {USER_COLUMNS}, version FROM users WHERE username = $1"
            ))
            .bind(username)
            .fetch_optional(pool)
            .await
            .map_err(backend)?;
            row.map(user_versioned).transpose()
        }

        fn user_versioned(r: VersionedUserRow) -> Result<Versioned<UserRecord>, StoreError> {
            Ok(Versioned {
                record: user_from_row(r.user)?,
                version: r.version,
            })
        }

        pub(crate) async fn users_after(
            pool: &$pool,
            after: Option<&str>,
            limit: u32,
        ) -> Result<Vec<Versioned<UserRecord>>, StoreError> {
            let limit = check_page(limit)?;
            let rows: Vec<VersionedUserRow> = sqlx::query_as(&format!(
                "SELECT {USER_COLUMNS}, version FROM users \
                 WHERE username > $1 ORDER BY username LIMIT $2"
            ))
            .bind(after.unwrap_or(""))
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(backend)?;
            rows.into_iter().map(user_versioned).collect()
        }

        /// Everything but the username, creation time and entryUUID (stable) is replaced.
        pub(crate) async fn replace_user(
            pool: &$pool,
            u: &UserRecord,
            version: i64,
        ) -> Result<i64, StoreError> {
            u.validate()?;
            let binds = $crate::rows::UserBinds::of(u);
            let row: Option<(i64,)> = $crate::rows::bind_user_attributes!(
                sqlx::query_as(&format!(
                    "UPDATE users SET {}, password_hash = $11, disabled = $12, \
                     version = version + 1 WHERE username = $1 AND version = $13 RETURNING version",
                    $crate::rows::USER_ATTRIBUTES_SET
                ))
                .bind(&u.username),
                binds
            )
            .bind(&u.password_hash)
            .bind(u.disabled)
            .bind(version)
            .fetch_optional(pool)
            .await
            .map_err(|e| $crate::rows::user_write_error(e, &u.username, &u.attributes, None))?;
            match row {
                Some((v,)) => Ok(v),
                None => Err(missed(Resource::User, &u.username, exists(pool, Resource::User, &u.username).await?)),
            }
        }

        pub(crate) async fn nas(
            pool: &$pool,
            name: &str,
        ) -> Result<Option<Versioned<NasRecord>>, StoreError> {
            nas_plain(pool, Some(name), None, 1).await.map(|mut v| v.pop())
        }

        async fn nas_plain(
            pool: &$pool,
            exact: Option<&str>,
            after: Option<&str>,
            limit: i64,
        ) -> Result<Vec<Versioned<NasRecord>>, StoreError> {
            #[allow(clippy::type_complexity)]
            let rows: Vec<(String, String, Vec<u8>, bool, i64, Option<String>, i64)> = match exact {
                Some(name) => sqlx::query_as(&format!(
                    "SELECT {NAS_COLUMNS}, version FROM nas WHERE name = $1"
                ))
                .bind(name)
                .fetch_all(pool)
                .await,
                None => sqlx::query_as(&format!(
                    "SELECT {NAS_COLUMNS}, version FROM nas WHERE name > $1 ORDER BY name LIMIT $2"
                ))
                .bind(after.unwrap_or(""))
                .bind(limit)
                .fetch_all(pool)
                .await,
            }
            .map_err(backend)?;
            rows.into_iter()
                .map(|r| {
                    let version = r.6;
                    let row: NasRow = (r.0, r.1, r.2, r.3, r.4, r.5);
                    nas_from_row(row).map(|record| Versioned { record, version })
                })
                .collect()
        }

        pub(crate) async fn nas_after(
            pool: &$pool,
            after: Option<&str>,
            limit: u32,
        ) -> Result<Vec<Versioned<NasRecord>>, StoreError> {
            let limit = check_page(limit)?;
            nas_plain(pool, None, after, limit).await
        }

        pub(crate) async fn replace_nas(
            pool: &$pool,
            n: &NasRecord,
            version: i64,
        ) -> Result<i64, StoreError> {
            n.validate()?;
            let row: Option<(i64,)> = sqlx::query_as(
                "UPDATE nas SET cidr = $2, secret_sealed = $3, \
                 require_message_authenticator = $4, certificate = $6, version = version + 1 \
                 WHERE name = $1 AND version = $5 RETURNING version",
            )
            .bind(&n.name)
            .bind(n.cidr.to_string())
            .bind(&n.secret_sealed)
            .bind(n.require_message_authenticator)
            .bind(version)
            .bind(n.certificate.as_ref().map(ToString::to_string))
            .fetch_optional(pool)
            .await
            .map_err(|e| nas_insert_error(e, n))?;
            match row {
                Some((v,)) => Ok(v),
                None => Err(missed(Resource::Nas, &n.name, exists(pool, Resource::Nas, &n.name).await?)),
            }
        }

        pub(crate) async fn remove_versioned(
            pool: &$pool,
            resource: Resource,
            key: &str,
            version: i64,
        ) -> Result<(), StoreError> {
            let (table, column) = resource.table();
            let done = sqlx::query(&format!(
                "DELETE FROM {table} WHERE {column} = $1 AND version = $2"
            ))
            .bind(key)
            .bind(version)
            .execute(pool)
            .await
            .map_err(backend)?;
            if done.rows_affected() == 0 {
                return Err(missed(resource, key, exists(pool, resource, key).await?));
            }
            Ok(())
        }

        pub(crate) async fn revocations_after(
            pool: &$pool,
            after: Option<&str>,
            limit: u32,
        ) -> Result<Vec<(String, i64)>, StoreError> {
            let limit = check_page(limit)?;
            sqlx::query_as(
                "SELECT jti, expires_at FROM revoked_tokens WHERE jti > $1 ORDER BY jti LIMIT $2",
            )
            .bind(after.unwrap_or(""))
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(backend)
        }

        pub(crate) async fn claim_idempotency_key(
            pool: &$pool,
            rec: &IdempotencyRecord,
        ) -> Result<Option<IdempotencyRecord>, StoreError> {
            rec.validate()?;
            let done = sqlx::query(
                "INSERT INTO idempotency_keys \
                 (principal, idem_key, request_digest, response_sealed, created_at) \
                 VALUES ($1, $2, $3, NULL, $4) ON CONFLICT (principal, idem_key) DO NOTHING",
            )
            .bind(&rec.principal)
            .bind(&rec.key)
            .bind(&rec.request_digest)
            .bind(rec.created_at)
            .execute(pool)
            .await
            .map_err(backend)?;
            if done.rows_affected() == 1 {
                return Ok(None);
            }
            let row: Option<(Vec<u8>, Option<Vec<u8>>, i64)> = sqlx::query_as(
                "SELECT request_digest, response_sealed, created_at FROM idempotency_keys \
                 WHERE principal = $1 AND idem_key = $2",
            )
            .bind(&rec.principal)
            .bind(&rec.key)
            .fetch_optional(pool)
            .await
            .map_err(backend)?;
            match row {
                Some((request_digest, response_sealed, created_at)) => Ok(Some(IdempotencyRecord {
                    principal: rec.principal.clone(),
                    key: rec.key.clone(),
                    request_digest,
                    response_sealed,
                    created_at,
                })),
                // Released between the two statements: the caller may try again.
                None => Err(StoreError::Conflict(format!("Idempotency-Key {:?}", rec.key))),
            }
        }

        pub(crate) async fn complete_idempotency_key(
            pool: &$pool,
            principal: &str,
            key: &str,
            response_sealed: &[u8],
        ) -> Result<(), StoreError> {
            let done = sqlx::query(
                "UPDATE idempotency_keys SET response_sealed = $3 \
                 WHERE principal = $1 AND idem_key = $2 AND response_sealed IS NULL",
            )
            .bind(principal)
            .bind(key)
            .bind(response_sealed)
            .execute(pool)
            .await
            .map_err(backend)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(format!("pending Idempotency-Key {key:?}")));
            }
            Ok(())
        }

        pub(crate) async fn release_idempotency_key(
            pool: &$pool,
            principal: &str,
            key: &str,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "DELETE FROM idempotency_keys \
                 WHERE principal = $1 AND idem_key = $2 AND response_sealed IS NULL",
            )
            .bind(principal)
            .bind(key)
            .execute(pool)
            .await
            .map_err(backend)?;
            Ok(())
        }

        pub(crate) async fn purge_idempotency_keys(
            pool: &$pool,
            before: i64,
        ) -> Result<u64, StoreError> {
            let done = sqlx::query("DELETE FROM idempotency_keys WHERE created_at < $1")
                .bind(before)
                .execute(pool)
                .await
                .map_err(backend)?;
            Ok(done.rows_affected())
        }
    };
}

/// The statements on SQLite.
pub(crate) mod sqlite {
    versioned_queries!(sqlx::SqlitePool);
}

/// The statements on PostgreSQL.
pub(crate) mod postgres {
    versioned_queries!(sqlx::PgPool);
}
