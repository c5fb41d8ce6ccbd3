//! [`GroupStore`]: groups (issue 39, what an LDAP door shows as
//! `cn=GROUP,ou=groups,BASE`): name, optional `gidNumber`, description and members by
//! username, with their version for the admin API (compare-and-set like
//! [`VersionedStore`](crate::store::VersionedStore); removal by version is its
//! `remove_versioned` with [`Resource::Group`](crate::versioned::Resource::Group)).
//!
//! Members are existing users: adding an unknown one is [`StoreError::NotFound`], and
//! removing a user removes its memberships (each a change of its groups' versions). The
//! SQL is [`crate::groups`]'s.

use async_trait::async_trait;

use crate::directory::GroupRecord;
use crate::error::StoreError;
use crate::versioned::Versioned;

/// Groups and their members.
#[async_trait]
pub trait GroupStore: Send + Sync {
    /// The group `name` with its members (sorted).
    async fn get_group(&self, name: &str) -> Result<Option<GroupRecord>, StoreError>;
    /// Insert a new group with its members, in one transaction:
    /// [`StoreError::AlreadyExists`] if the name or the `gidNumber` is taken,
    /// [`StoreError::NotFound`] if a member is not a user (nothing is written).
    async fn put_group(&self, group: &GroupRecord) -> Result<(), StoreError>;
    /// Set a group's `gidNumber` and description; [`StoreError::NotFound`] if no such
    /// group, [`StoreError::AlreadyExists`] if the `gidNumber` is another group's.
    async fn set_group_details(
        &self,
        name: &str,
        gid_number: Option<u32>,
        description: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Remove a group (and its memberships); returns whether it existed.
    async fn remove_group(&self, name: &str) -> Result<bool, StoreError>;
    /// Every group with its members, ordered by name.
    async fn list_groups(&self) -> Result<Vec<GroupRecord>, StoreError>;
    /// Make `username` a member of `group`; `Ok(false)` if it was one already,
    /// [`StoreError::NotFound`] if the group or the user does not exist.
    async fn add_group_member(&self, group: &str, username: &str) -> Result<bool, StoreError>;
    /// End `username`'s membership of `group`; returns whether it was a member.
    async fn remove_group_member(&self, group: &str, username: &str) -> Result<bool, StoreError>;
    /// The members of `group`, sorted; [`StoreError::NotFound`] if no such group.
    async fn group_members(&self, group: &str) -> Result<Vec<String>, StoreError>;
    /// The names of the groups `username` is a member of, sorted (`memberOf`); empty for
    /// an unknown user.
    async fn groups_of_user(&self, username: &str) -> Result<Vec<String>, StoreError>;
    /// The group `name` and its version (a membership change is a change of the group).
    async fn group_versioned(
        &self,
        name: &str,
    ) -> Result<Option<Versioned<GroupRecord>>, StoreError>;
    /// At most `limit` (1-[`MAX_PAGE`](crate::versioned::MAX_PAGE)) groups whose name
    /// sorts after `after`, ordered by name: keyset pagination.
    async fn groups_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<GroupRecord>>, StoreError>;
    /// Replace a group's `gidNumber`, description and members if its version is still
    /// `version`; returns the new version. [`StoreError::Conflict`] if the version moved
    /// on, [`StoreError::NotFound`] if there is no such group or a member is not a user.
    async fn replace_group(&self, group: &GroupRecord, version: i64) -> Result<i64, StoreError>;
}
