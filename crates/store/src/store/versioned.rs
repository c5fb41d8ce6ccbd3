//! [`VersionedStore`]: clients, users and NASes with their version (issue 27, the admin
//! API): reads with the version, keyset pages, compare-and-set replacement and removal,
//! so two administrators' writes never silently overwrite each other.
//!
//! Used by the admin API's resources (`If-Match` / `ETag`) and `apply`'s plan. Creating a
//! record is [`ClientStore::put_client`](crate::store::ClientStore::put_client) and its
//! like; revocation pages are [`RevocationStore`](crate::store::RevocationStore)'s. The
//! SQL is [`crate::versioned`]'s.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::nas::NasRecord;
use crate::record::{ClientRecord, UserRecord};
use crate::versioned::{Resource, Versioned};

/// Versioned reads, pages and compare-and-set writes of clients, users and NASes.
#[async_trait]
pub trait VersionedStore: Send + Sync {
    /// The client `id` and its version.
    async fn client_versioned(
        &self,
        id: &str,
    ) -> Result<Option<Versioned<ClientRecord>>, StoreError>;
    /// At most `limit` (1-[`MAX_PAGE`](crate::versioned::MAX_PAGE)) clients whose id sorts
    /// after `after` (from the start when `None`), ordered by id: keyset pagination.
    async fn clients_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<ClientRecord>>, StoreError>;
    /// Replace everything but the id and creation time of a client whose version is still
    /// `version`; returns the new version. [`StoreError::Conflict`] if the version moved
    /// on, [`StoreError::NotFound`] if there is no such client.
    async fn replace_client(&self, client: &ClientRecord, version: i64) -> Result<i64, StoreError>;
    /// The user `username` and its version.
    async fn user_versioned(
        &self,
        username: &str,
    ) -> Result<Option<Versioned<UserRecord>>, StoreError>;
    /// Keyset page of users ordered by username (see [`VersionedStore::clients_after`]).
    async fn users_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<UserRecord>>, StoreError>;
    /// Replace a user's hash and disabled flag if its version is still `version` (see
    /// [`VersionedStore::replace_client`]).
    async fn replace_user(&self, user: &UserRecord, version: i64) -> Result<i64, StoreError>;
    /// The NAS `name` and its version.
    async fn nas_versioned(&self, name: &str) -> Result<Option<Versioned<NasRecord>>, StoreError>;
    /// Keyset page of NASes ordered by name (see [`VersionedStore::clients_after`]).
    async fn nas_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<NasRecord>>, StoreError>;
    /// Replace a NAS's CIDR, sealed secret and Message-Authenticator rule if its version
    /// is still `version` (see [`VersionedStore::replace_client`]; a CIDR taken by another
    /// NAS is [`StoreError::AlreadyExists`]).
    async fn replace_nas(&self, nas: &NasRecord, version: i64) -> Result<i64, StoreError>;
    /// Remove a client, user or NAS if its version is still `version`
    /// ([`StoreError::Conflict`] / [`StoreError::NotFound`] otherwise).
    async fn remove_versioned(
        &self,
        resource: Resource,
        key: &str,
        version: i64,
    ) -> Result<(), StoreError>;
}
