//! The one set of identity-store SQL (issue 13): every statement of the capabilities whose
//! tables are the identities' ([`Health`], [`ClientStore`], [`UserStore`],
//! [`SigningKeyStore`], [`RevocationStore`]) and of the core's [`CredentialSource`],
//! written once and expanded for each backend's pool by [`identity_store!`]. The other
//! capabilities keep their SQL in their own module ([`crate::nas`], [`crate::accounting`],
//! [`crate::registration`], [`crate::versioned`]) and are wired up by `crate::delegated`.
//! The text is portable: `$N` parameters (sqlx binds `$N` to the Nth argument on SQLite
//! too), `CAST(... AS BIGINT)` rather than `::`, `CASE` rather than `GREATEST`/`max`,
//! `ON CONFLICT` upserts. The conformance suites run against both expansions.
//!
//! [`Health`]: crate::store::Health
//! [`ClientStore`]: crate::store::ClientStore
//! [`UserStore`]: crate::store::UserStore
//! [`SigningKeyStore`]: crate::store::SigningKeyStore
//! [`RevocationStore`]: crate::store::RevocationStore
//! [`CredentialSource`]: portcullis_core::CredentialSource

/// The identity capabilities, the hash compare-and-set and `impl CredentialSource` for
/// `$store` (a struct with a `pool` field of its backend's pool type); `$module` names the
/// backend's module in [`crate::versioned`] (revocation pages); `{ ... }` holds
/// backend-only [`Health`](crate::store::Health) methods (PostgreSQL's change feed).
macro_rules! identity_store {
    ($store:ty, $module:ident, { $($extra:tt)* }) => {
        #[async_trait::async_trait]
        impl crate::store::Health for $store {
            $($extra)*

            async fn ping(&self) -> Result<(), StoreError> {
                sqlx::query("SELECT 1")
                    .execute(&self.pool)
                    .await
                    .map(|_| ())
                    .map_err(backend)
            }
        }

        #[async_trait::async_trait]
        impl crate::store::ClientStore for $store {
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
        }

        #[async_trait::async_trait]
        impl crate::store::UserStore for $store {
            async fn get_user(&self, username: &str) -> Result<Option<UserRecord>, StoreError> {
                let row: Option<UserRow> = sqlx::query_as(&format!(
                    "SELECT {USER_COLUMNS} FROM users WHERE username = $1"
                ))
                .bind(username)
                .fetch_optional(&self.pool)
                .await
                .map_err(backend)?;
                row.map(user_from_row).transpose()
            }

            async fn put_user(&self, user: &UserRecord) -> Result<(), StoreError> {
                user.validate()?;
                let binds = crate::rows::UserBinds::of(user);
                crate::rows::bind_user_insert!(sqlx::query(crate::rows::USER_INSERT), user, binds)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| {
                        crate::rows::user_write_error(e, &user.username, &user.attributes, Some(user.entry_uuid))
                    })?;
                Ok(())
            }

            async fn put_users(&self, users: &[UserRecord]) -> Result<Vec<bool>, StoreError> {
                for u in users {
                    u.validate()?;
                }
                // One transaction: one fsync for the whole import instead of one per user.
                let mut tx = self.pool.begin().await.map_err(backend)?;
                let mut inserted = Vec::with_capacity(users.len());
                let insert = format!("{} ON CONFLICT (username) DO NOTHING", crate::rows::USER_INSERT);
                for u in users {
                    let binds = crate::rows::UserBinds::of(u);
                    // A uidNumber or entryUUID clash with another user is an error (the
                    // whole import is refused), unlike a taken username.
                    let done = crate::rows::bind_user_insert!(sqlx::query(&insert), u, binds)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| {
                            crate::rows::user_write_error(e, &u.username, &u.attributes, Some(u.entry_uuid))
                        })?;
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
                rows.into_iter().map(user_from_row).collect()
            }

            async fn set_user_attributes(
                &self,
                username: &str,
                attributes: &crate::directory::UserAttributes,
            ) -> Result<(), StoreError> {
                attributes.validate()?;
                let binds = crate::rows::UserBinds {
                    entry_uuid: String::new(),
                    attrs: attributes,
                };
                let done = crate::rows::bind_user_attributes!(
                    sqlx::query(&format!(
                        "UPDATE users SET {} WHERE username = $1",
                        crate::rows::USER_ATTRIBUTES_SET
                    ))
                    .bind(username),
                    binds
                )
                .execute(&self.pool)
                .await
                .map_err(|e| crate::rows::user_write_error(e, username, attributes, None))?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound(user_label(username)));
                }
                Ok(())
            }
        }

        #[async_trait::async_trait]
        impl crate::store::SigningKeyStore for $store {
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
        }

        #[async_trait::async_trait]
        impl crate::store::RevocationStore for $store {
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

            async fn revocations_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<(String, i64)>, StoreError> {
                crate::versioned::$module::revocations_after(&self.pool, after, limit).await
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
