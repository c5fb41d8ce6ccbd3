//! The one set of identity-store SQL (issue 13): every statement of the [`Store`] trait and
//! of the core's [`CredentialSource`], written once and expanded for each backend's pool
//! by [`identity_store!`], as [`crate::nas`] does for the NAS table. The text is portable:
//! `$N` parameters (sqlx binds `$N` to the Nth argument on SQLite too), `CAST(... AS
//! BIGINT)` rather than `::`, `CASE` rather than `GREATEST`/`max`, `ON CONFLICT` upserts.
//! The conformance suite runs against both expansions.
//!
//! [`Store`]: crate::store::Store
//! [`CredentialSource`]: portcullis_core::CredentialSource

/// `impl Store`, the hash compare-and-set and `impl CredentialSource` for `$store` (a
/// struct with a `pool` field of its backend's pool type); `$nas` names the backend's
/// module in [`crate::nas`] and [`crate::accounting`]; `{ ... }` holds backend-only `Store` methods (PostgreSQL's
/// change feed).
macro_rules! identity_store {
    ($store:ty, $nas:ident, { $($extra:tt)* }) => {
        #[async_trait]
        impl Store for $store {
                $($extra)*


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
                    "INSERT INTO clients ({CLIENT_COLUMNS}) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                ))
                .bind(&client.id)
                .bind(client.auth.method())
                .bind(client.secret_hashes.first())
                .bind(client.secret_hashes.get(1))
                .bind(client.auth.key())
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
                    "UPDATE clients SET secret_hash = $2, previous_secret_hash = $3 \
                     WHERE id = $1 AND auth_method = 'client_secret'",
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
                     WHERE id = $1 AND auth_method = 'client_secret'",
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

            async fn set_client_auth(&self, id: &str, auth: &ClientAuth) -> Result<(), StoreError> {
                let key = auth.key().ok_or_else(|| {
                    StoreError::invalid("a secret client's secret is changed by rotation, not here")
                })?;
                let probe = ClientRecord {
                    id: id.to_owned(),
                    auth: auth.clone(),
                    secret_hashes: Vec::new(),
                    grants: vec![Grant::ClientCredentials],
                    scopes: Vec::new(),
                    token_lifetime: crate::record::DEFAULT_TOKEN_LIFETIME,
                    created_at: 0,
                };
                probe.validate()?;
                let done = sqlx::query(
                    "UPDATE clients SET auth_key = $3 WHERE id = $1 AND auth_method = $2",
                )
                .bind(id)
                .bind(auth.method())
                .bind(key)
                .execute(&self.pool)
                .await
                .map_err(backend)?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound(format!(
                        "{} with auth method {}",
                        client_label(id),
                        auth.method()
                    )));
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
                let exists: Option<(i64,)> = sqlx::query_as("SELECT CAST(1 AS BIGINT) FROM clients WHERE id = $1")
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

            async fn insert_first_signing_key(
                &self,
                key: &SigningKeyRecord,
                now: i64,
                rotation: i64,
                max_lifetime: i64,
            ) -> Result<bool, StoreError> {
                key.validate()?;
                let mut tx = self.pool.begin().await.map_err(backend)?;
                // The check and the insert must not interleave with another instance's:
                // PostgreSQL takes a transaction-scoped advisory lock; SQLite serialises
                // writers, and its one statement reads under the write lock.
                <$store>::serialize_key_creation(&mut tx).await?;
                let done = sqlx::query(&format!(
                    "INSERT INTO signing_keys ({KEY_COLUMNS}) \
                     SELECT $1, $2, $3, $4, $5, $6, $7 WHERE NOT EXISTS (\
                     SELECT 1 FROM signing_keys WHERE alg = 'EdDSA' AND retired_at IS NULL \
                     AND created_at <= $8 AND $8 < created_at + $9 AND $8 + $10 < not_after)"
                ))
                .bind(&key.kid)
                .bind(&key.alg)
                .bind(&key.public_key)
                .bind(&key.private_key_sealed)
                .bind(key.created_at)
                .bind(key.not_after)
                .bind(key.retired_at)
                .bind(now)
                .bind(rotation)
                .bind(max_lifetime)
                .execute(&mut *tx)
                .await
                .map_err(|e| insert_error(e, || format!("signing key {:?}", key.kid)))?;
                tx.commit().await.map_err(backend)?;
                Ok(done.rows_affected() > 0)
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
                     ON CONFLICT (jti) DO UPDATE SET expires_at = CASE WHEN EXCLUDED.expires_at > revoked_tokens.expires_at THEN EXCLUDED.expires_at ELSE revoked_tokens.expires_at END",
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
                    sqlx::query_as("SELECT CAST(1 AS BIGINT) FROM revoked_tokens WHERE jti = $1")
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
                crate::nas::$nas::put(&self.pool, nas).await
            }

            async fn get_nas(&self, name: &str) -> Result<Option<NasRecord>, StoreError> {
                crate::nas::$nas::get(&self.pool, name).await
            }

            async fn list_nas(&self) -> Result<Vec<NasRecord>, StoreError> {
                crate::nas::$nas::list(&self.pool).await
            }

            async fn remove_nas(&self, name: &str) -> Result<bool, StoreError> {
                crate::nas::$nas::remove(&self.pool, name).await
            }

            async fn set_nas_secret(&self, name: &str, secret_sealed: &[u8]) -> Result<(), StoreError> {
                crate::nas::$nas::set_secret(&self.pool, name, secret_sealed).await
            }

            async fn set_nas_require_message_authenticator(
                &self,
                name: &str,
                require: bool,
            ) -> Result<(), StoreError> {
                crate::nas::$nas::set_require_message_authenticator(&self.pool, name, require).await
            }

            async fn set_nas_certificate(
                &self,
                name: &str,
                certificate: Option<&crate::nas::NasCertificate>,
            ) -> Result<(), StoreError> {
                crate::nas::$nas::set_certificate(&self.pool, name, certificate).await
            }

            async fn append_accounting(
                &self,
                records: &[crate::accounting::AcctRecord],
            ) -> Result<Vec<bool>, StoreError> {
                crate::accounting::$nas::append(&self.pool, records).await
            }

            async fn dedicated(&self) -> Result<std::sync::Arc<dyn Store>, StoreError> {
                let options = (*self.pool.connect_options()).clone();
                // One connection, opened by `connect_with` here (so by the calling
                // thread), never closed for idling or age: a replacement after an error
                // is opened by whoever acquires next, which is only the caller.
                let pool = sqlx::pool::PoolOptions::new()
                    .max_connections(1)
                    .min_connections(0)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .connect_with(options)
                    .await
                    .map_err(backend)?;
                Ok(std::sync::Arc::new(Self { pool }))
            }

            async fn acct_sessions(
                &self,
                query: &crate::accounting::SessionQuery,
            ) -> Result<Vec<crate::accounting::AcctSession>, StoreError> {
                crate::accounting::$nas::sessions(&self.pool, query).await
            }

            async fn acct_records_since(
                &self,
                since: i64,
                limit: u32,
            ) -> Result<Vec<crate::accounting::AcctRecord>, StoreError> {
                crate::accounting::$nas::records_since(&self.pool, since, limit).await
            }

            async fn prune_accounting(&self, before: i64) -> Result<u64, StoreError> {
                crate::accounting::$nas::prune(&self.pool, before).await
            }

            async fn acct_sessions_online(&self) -> Result<u64, StoreError> {
                crate::accounting::$nas::online(&self.pool).await
            }

            async fn put_initial_access_token(
                &self,
                token: &crate::registration::InitialAccessToken,
            ) -> Result<(), StoreError> {
                crate::registration::$nas::put_token(&self.pool, token).await
            }

            async fn get_initial_access_token(
                &self,
                id: &str,
            ) -> Result<Option<crate::registration::InitialAccessToken>, StoreError> {
                crate::registration::$nas::get_token(&self.pool, id).await
            }

            async fn list_initial_access_tokens(
                &self,
            ) -> Result<Vec<crate::registration::InitialAccessToken>, StoreError> {
                crate::registration::$nas::list_tokens(&self.pool).await
            }

            async fn remove_initial_access_token(&self, id: &str) -> Result<bool, StoreError> {
                crate::registration::$nas::remove_token(&self.pool, id).await
            }

            async fn register_client(
                &self,
                client: &ClientRecord,
                reg: &crate::registration::ClientRegistration,
                now: i64,
            ) -> Result<(), StoreError> {
                crate::registration::$nas::register(&self.pool, client, reg, now).await
            }

            async fn get_client_registration(
                &self,
                client_id: &str,
            ) -> Result<Option<crate::registration::ClientRegistration>, StoreError> {
                crate::registration::$nas::get_registration(&self.pool, client_id).await
            }

            async fn update_registered_client(
                &self,
                client: &ClientRecord,
                metadata: &str,
                rotation: &crate::registration::TokenRotation<'_>,
                now: i64,
            ) -> Result<(), StoreError> {
                crate::registration::$nas::update_registered(&self.pool, client, metadata, rotation, now).await
            }

            async fn rotate_registration_token(
                &self,
                client_id: &str,
                rotation: &crate::registration::TokenRotation<'_>,
            ) -> Result<bool, StoreError> {
                crate::registration::$nas::rotate_token(&self.pool, client_id, rotation).await
            }

            async fn client_versioned(
                &self,
                id: &str,
            ) -> Result<Option<crate::versioned::Versioned<ClientRecord>>, StoreError> {
                crate::versioned::$nas::client(&self.pool, id).await
            }

            async fn clients_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<crate::versioned::Versioned<ClientRecord>>, StoreError> {
                crate::versioned::$nas::clients_after(&self.pool, after, limit).await
            }

            async fn replace_client(&self, client: &ClientRecord, version: i64) -> Result<i64, StoreError> {
                crate::versioned::$nas::replace_client(&self.pool, client, version).await
            }

            async fn user_versioned(
                &self,
                username: &str,
            ) -> Result<Option<crate::versioned::Versioned<UserRecord>>, StoreError> {
                crate::versioned::$nas::user(&self.pool, username).await
            }

            async fn users_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<crate::versioned::Versioned<UserRecord>>, StoreError> {
                crate::versioned::$nas::users_after(&self.pool, after, limit).await
            }

            async fn replace_user(&self, user: &UserRecord, version: i64) -> Result<i64, StoreError> {
                crate::versioned::$nas::replace_user(&self.pool, user, version).await
            }

            async fn nas_versioned(
                &self,
                name: &str,
            ) -> Result<Option<crate::versioned::Versioned<NasRecord>>, StoreError> {
                crate::versioned::$nas::nas(&self.pool, name).await
            }

            async fn nas_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<crate::versioned::Versioned<NasRecord>>, StoreError> {
                crate::versioned::$nas::nas_after(&self.pool, after, limit).await
            }

            async fn replace_nas(&self, nas: &NasRecord, version: i64) -> Result<i64, StoreError> {
                crate::versioned::$nas::replace_nas(&self.pool, nas, version).await
            }

            async fn remove_versioned(
                &self,
                resource: crate::versioned::Resource,
                key: &str,
                version: i64,
            ) -> Result<(), StoreError> {
                crate::versioned::$nas::remove_versioned(&self.pool, resource, key, version).await
            }

            async fn revocations_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<(String, i64)>, StoreError> {
                crate::versioned::$nas::revocations_after(&self.pool, after, limit).await
            }

            async fn claim_idempotency_key(
                &self,
                record: &crate::versioned::IdempotencyRecord,
            ) -> Result<Option<crate::versioned::IdempotencyRecord>, StoreError> {
                crate::versioned::$nas::claim_idempotency_key(&self.pool, record).await
            }

            async fn complete_idempotency_key(
                &self,
                principal: &str,
                key: &str,
                response_sealed: &[u8],
            ) -> Result<(), StoreError> {
                crate::versioned::$nas::complete_idempotency_key(&self.pool, principal, key, response_sealed).await
            }

            async fn release_idempotency_key(&self, principal: &str, key: &str) -> Result<(), StoreError> {
                crate::versioned::$nas::release_idempotency_key(&self.pool, principal, key).await
            }

            async fn purge_idempotency_keys(&self, before: i64) -> Result<u64, StoreError> {
                crate::versioned::$nas::purge_idempotency_keys(&self.pool, before).await
            }

            fn as_credential_source(self: Arc<Self>) -> Arc<dyn CredentialSource> {
                self
            }
        }

        impl $store {
            async fn stored_credentials(
                &self,
                kind: PrincipalKind,
                principal: &str,
            ) -> Result<Option<StoredCredentials>, StoreError> {
                match kind {
                    PrincipalKind::Client => {
                        // A client without a secret has no hash: to the secret path it is
                        // unknown (answered like one, at no hash cost).
                        let row: Option<(Option<String>, Option<String>)> = sqlx::query_as(
                            "SELECT secret_hash, previous_secret_hash FROM clients WHERE id = $1",
                        )
                        .bind(principal)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(backend)?;
                        Ok(row.map(|(current, previous)| StoredCredentials {
                            hashes: current.into_iter().chain(previous).collect(),
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

        impl CredentialSource for $store {
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
    };
}

pub(crate) use identity_store;
