//! [`UserStore`]: users (password hash, disabled flag, directory attributes), without
//! versions.
//!
//! Used by the CLI's `user` commands, `apply`, the demo and test set-up. The doors never
//! read users through it: the credential check reads them through the core's
//! [`CredentialSource`](portcullis_core::CredentialSource) (rehash-on-login is its
//! compare-and-set), and the admin API writes them through
//! [`VersionedStore`](crate::store::VersionedStore) (creation through `put_user`).

use async_trait::async_trait;

use crate::directory::UserAttributes;
use crate::error::StoreError;
use crate::record::UserRecord;

/// Users.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// The user `username`, if it exists.
    async fn get_user(&self, username: &str) -> Result<Option<UserRecord>, StoreError>;
    /// Insert a new user; [`StoreError::AlreadyExists`] if the name is taken.
    async fn put_user(&self, user: &UserRecord) -> Result<(), StoreError>;
    /// Insert many users in one transaction (imports). Users whose name is taken are left
    /// unchanged; the answer says, per input user, whether it was inserted. Any invalid
    /// record fails the whole call before anything is written.
    async fn put_users(&self, users: &[UserRecord]) -> Result<Vec<bool>, StoreError>;
    /// Set a user's password hash (administrative reset, not rehash-on-login: that is
    /// [`CredentialSource::replace_hash`](portcullis_core::CredentialSource::replace_hash));
    /// [`StoreError::NotFound`] if no such user.
    async fn set_user_password(&self, username: &str, hash: &str) -> Result<(), StoreError>;
    /// Enable or disable a user; [`StoreError::NotFound`] if no such user.
    async fn set_user_disabled(&self, username: &str, disabled: bool) -> Result<(), StoreError>;
    /// Replace a user's directory attributes (names, mail, POSIX account; its
    /// `entryUUID` never changes): [`StoreError::NotFound`] if no such user,
    /// [`StoreError::AlreadyExists`] if the `uidNumber` is another user's.
    async fn set_user_attributes(
        &self,
        username: &str,
        attributes: &UserAttributes,
    ) -> Result<(), StoreError>;
    /// Remove a user and its group memberships; returns whether it existed.
    async fn remove_user(&self, username: &str) -> Result<bool, StoreError>;
    /// Every user, ordered by username.
    async fn list_users(&self) -> Result<Vec<UserRecord>, StoreError>;
}
