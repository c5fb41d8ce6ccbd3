//! The capabilities whose SQL lives in its concern's module ([`crate::nas`],
//! [`crate::accounting`], [`crate::registration`], [`crate::versioned`], each expanding it
//! per pool type): their impls for a backend are one-line delegations to that module's
//! functions, written once here for both backends by [`delegated_capabilities!`].

/// `impl` [`NasStore`], [`AccountingStore`], [`RegistrationStore`], [`VersionedStore`],
/// [`GroupStore`] and [`IdempotencyStore`] for `$store` (a struct with a `pool` field of its backend's pool
/// type), delegating to the `$module` (`sqlite` or `postgres`) expansion of each concern's
/// statements.
///
/// [`NasStore`]: crate::store::NasStore
/// [`AccountingStore`]: crate::store::AccountingStore
/// [`RegistrationStore`]: crate::store::RegistrationStore
/// [`VersionedStore`]: crate::store::VersionedStore
/// [`GroupStore`]: crate::store::GroupStore
/// [`IdempotencyStore`]: crate::store::IdempotencyStore
macro_rules! delegated_capabilities {
    ($store:ty, $module:ident) => {
        #[async_trait::async_trait]
        impl crate::store::NasStore for $store {
            async fn put_nas(&self, nas: &NasRecord) -> Result<(), StoreError> {
                crate::nas::$module::put(&self.pool, nas).await
            }

            async fn get_nas(&self, name: &str) -> Result<Option<NasRecord>, StoreError> {
                crate::nas::$module::get(&self.pool, name).await
            }

            async fn list_nas(&self) -> Result<Vec<NasRecord>, StoreError> {
                crate::nas::$module::list(&self.pool).await
            }

            async fn remove_nas(&self, name: &str) -> Result<bool, StoreError> {
                crate::nas::$module::remove(&self.pool, name).await
            }

            async fn set_nas_secret(
                &self,
                name: &str,
                secret_sealed: &[u8],
            ) -> Result<(), StoreError> {
                crate::nas::$module::set_secret(&self.pool, name, secret_sealed).await
            }

            async fn set_nas_require_message_authenticator(
                &self,
                name: &str,
                require: bool,
            ) -> Result<(), StoreError> {
                crate::nas::$module::set_require_message_authenticator(&self.pool, name, require)
                    .await
            }

            async fn set_nas_certificate(
                &self,
                name: &str,
                certificate: Option<&crate::nas::NasCertificate>,
            ) -> Result<(), StoreError> {
                crate::nas::$module::set_certificate(&self.pool, name, certificate).await
            }
        }

        #[async_trait::async_trait]
        impl crate::store::AccountingStore for $store {
            async fn append_accounting(
                &self,
                records: &[crate::accounting::AcctRecord],
            ) -> Result<Vec<bool>, StoreError> {
                crate::accounting::$module::append(&self.pool, records).await
            }

            async fn dedicated(
                &self,
            ) -> Result<std::sync::Arc<dyn crate::store::AccountingStore>, StoreError> {
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
                crate::accounting::$module::sessions(&self.pool, query).await
            }

            async fn acct_records_since(
                &self,
                since: i64,
                limit: u32,
            ) -> Result<Vec<crate::accounting::AcctRecord>, StoreError> {
                crate::accounting::$module::records_since(&self.pool, since, limit).await
            }

            async fn prune_accounting(&self, before: i64) -> Result<u64, StoreError> {
                crate::accounting::$module::prune(&self.pool, before).await
            }

            async fn acct_sessions_online(&self) -> Result<u64, StoreError> {
                crate::accounting::$module::online(&self.pool).await
            }
        }

        #[async_trait::async_trait]
        impl crate::store::RegistrationStore for $store {
            async fn put_initial_access_token(
                &self,
                token: &crate::registration::InitialAccessToken,
            ) -> Result<(), StoreError> {
                crate::registration::$module::put_token(&self.pool, token).await
            }

            async fn get_initial_access_token(
                &self,
                id: &str,
            ) -> Result<Option<crate::registration::InitialAccessToken>, StoreError> {
                crate::registration::$module::get_token(&self.pool, id).await
            }

            async fn list_initial_access_tokens(
                &self,
            ) -> Result<Vec<crate::registration::InitialAccessToken>, StoreError> {
                crate::registration::$module::list_tokens(&self.pool).await
            }

            async fn remove_initial_access_token(&self, id: &str) -> Result<bool, StoreError> {
                crate::registration::$module::remove_token(&self.pool, id).await
            }

            async fn register_client(
                &self,
                client: &ClientRecord,
                reg: &crate::registration::ClientRegistration,
                now: i64,
            ) -> Result<(), StoreError> {
                crate::registration::$module::register(&self.pool, client, reg, now).await
            }

            async fn get_client_registration(
                &self,
                client_id: &str,
            ) -> Result<Option<crate::registration::ClientRegistration>, StoreError> {
                crate::registration::$module::get_registration(&self.pool, client_id).await
            }

            async fn update_registered_client(
                &self,
                client: &ClientRecord,
                metadata: &str,
                rotation: &crate::registration::TokenRotation<'_>,
                now: i64,
            ) -> Result<(), StoreError> {
                crate::registration::$module::update_registered(
                    &self.pool, client, metadata, rotation, now,
                )
                .await
            }

            async fn rotate_registration_token(
                &self,
                client_id: &str,
                rotation: &crate::registration::TokenRotation<'_>,
            ) -> Result<bool, StoreError> {
                crate::registration::$module::rotate_token(&self.pool, client_id, rotation).await
            }
        }

        #[async_trait::async_trait]
        impl crate::store::VersionedStore for $store {
            async fn client_versioned(
                &self,
                id: &str,
            ) -> Result<Option<crate::versioned::Versioned<ClientRecord>>, StoreError> {
                crate::versioned::$module::client(&self.pool, id).await
            }

            async fn clients_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<crate::versioned::Versioned<ClientRecord>>, StoreError> {
                crate::versioned::$module::clients_after(&self.pool, after, limit).await
            }

            async fn replace_client(
                &self,
                client: &ClientRecord,
                version: i64,
            ) -> Result<i64, StoreError> {
                crate::versioned::$module::replace_client(&self.pool, client, version).await
            }

            async fn user_versioned(
                &self,
                username: &str,
            ) -> Result<Option<crate::versioned::Versioned<UserRecord>>, StoreError> {
                crate::versioned::$module::user(&self.pool, username).await
            }

            async fn users_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<crate::versioned::Versioned<UserRecord>>, StoreError> {
                crate::versioned::$module::users_after(&self.pool, after, limit).await
            }

            async fn replace_user(
                &self,
                user: &UserRecord,
                version: i64,
            ) -> Result<i64, StoreError> {
                crate::versioned::$module::replace_user(&self.pool, user, version).await
            }

            async fn nas_versioned(
                &self,
                name: &str,
            ) -> Result<Option<crate::versioned::Versioned<NasRecord>>, StoreError> {
                crate::versioned::$module::nas(&self.pool, name).await
            }

            async fn nas_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<crate::versioned::Versioned<NasRecord>>, StoreError> {
                crate::versioned::$module::nas_after(&self.pool, after, limit).await
            }

            async fn replace_nas(&self, nas: &NasRecord, version: i64) -> Result<i64, StoreError> {
                crate::versioned::$module::replace_nas(&self.pool, nas, version).await
            }

            async fn remove_versioned(
                &self,
                resource: crate::versioned::Resource,
                key: &str,
                version: i64,
            ) -> Result<(), StoreError> {
                crate::versioned::$module::remove_versioned(&self.pool, resource, key, version)
                    .await
            }
        }

        #[async_trait::async_trait]
        impl crate::store::GroupStore for $store {
            async fn get_group(
                &self,
                name: &str,
            ) -> Result<Option<crate::directory::GroupRecord>, StoreError> {
                Ok(crate::groups::$module::get(&self.pool, name)
                    .await?
                    .map(|v| v.record))
            }

            async fn put_group(
                &self,
                group: &crate::directory::GroupRecord,
            ) -> Result<(), StoreError> {
                crate::groups::$module::put(&self.pool, group).await
            }

            async fn set_group_details(
                &self,
                name: &str,
                gid_number: Option<u32>,
                description: Option<&str>,
            ) -> Result<(), StoreError> {
                crate::groups::$module::set_details(&self.pool, name, gid_number, description).await
            }

            async fn remove_group(&self, name: &str) -> Result<bool, StoreError> {
                crate::groups::$module::remove(&self.pool, name).await
            }

            async fn list_groups(&self) -> Result<Vec<crate::directory::GroupRecord>, StoreError> {
                let all = crate::groups::$module::after(&self.pool, None, None).await?;
                Ok(all.into_iter().map(|v| v.record).collect())
            }

            async fn add_group_member(
                &self,
                group: &str,
                username: &str,
            ) -> Result<bool, StoreError> {
                crate::groups::$module::add_member(&self.pool, group, username).await
            }

            async fn remove_group_member(
                &self,
                group: &str,
                username: &str,
            ) -> Result<bool, StoreError> {
                crate::groups::$module::remove_member(&self.pool, group, username).await
            }

            async fn group_members(&self, group: &str) -> Result<Vec<String>, StoreError> {
                match crate::groups::$module::get(&self.pool, group).await? {
                    Some(v) => Ok(v.record.members),
                    None => Err(StoreError::NotFound(crate::rows::group_label(group))),
                }
            }

            async fn groups_of_user(&self, username: &str) -> Result<Vec<String>, StoreError> {
                crate::groups::$module::of_user(&self.pool, username).await
            }

            async fn group_versioned(
                &self,
                name: &str,
            ) -> Result<
                Option<crate::versioned::Versioned<crate::directory::GroupRecord>>,
                StoreError,
            > {
                crate::groups::$module::get(&self.pool, name).await
            }

            async fn groups_after(
                &self,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<crate::versioned::Versioned<crate::directory::GroupRecord>>, StoreError>
            {
                crate::groups::$module::after(&self.pool, after, Some(limit)).await
            }

            async fn replace_group(
                &self,
                group: &crate::directory::GroupRecord,
                version: i64,
            ) -> Result<i64, StoreError> {
                crate::groups::$module::replace(&self.pool, group, version).await
            }
        }

        #[async_trait::async_trait]
        impl crate::store::IdempotencyStore for $store {
            async fn claim_idempotency_key(
                &self,
                record: &crate::versioned::IdempotencyRecord,
            ) -> Result<Option<crate::versioned::IdempotencyRecord>, StoreError> {
                crate::versioned::$module::claim_idempotency_key(&self.pool, record).await
            }

            async fn complete_idempotency_key(
                &self,
                principal: &str,
                key: &str,
                response_sealed: &[u8],
            ) -> Result<(), StoreError> {
                crate::versioned::$module::complete_idempotency_key(
                    &self.pool,
                    principal,
                    key,
                    response_sealed,
                )
                .await
            }

            async fn release_idempotency_key(
                &self,
                principal: &str,
                key: &str,
            ) -> Result<(), StoreError> {
                crate::versioned::$module::release_idempotency_key(&self.pool, principal, key).await
            }

            async fn purge_idempotency_keys(&self, before: i64) -> Result<u64, StoreError> {
                crate::versioned::$module::purge_idempotency_keys(&self.pool, before).await
            }
        }
    };
}

pub(crate) use delegated_capabilities;
