//! The store by capability: one dyn-compatible async trait per concern, and [`Store`],
//! the umbrella over all of them, independent of the backend. SQLite
//! ([`crate::SqliteStore`]) is the embedded default, PostgreSQL ([`crate::PgStore`]) the
//! shared one; each implements every capability once and passes the same conformance
//! suites (one per capability).
//!
//! | trait | holds | used by |
//! |---|---|---|
//! | [`Health`] | ping, change feed | readiness probes, the client cache |
//! | [`ClientStore`] | OAuth clients | OAuth door, CLI `client`, `apply` |
//! | [`UserStore`] | users | CLI `user`, `apply` (doors read users as a [`CredentialSource`]) |
//! | [`GroupStore`] | groups and memberships, versioned | CLI `group`, `apply`, admin API |
//! | [`SigningKeyStore`] | token signing keys | OAuth door's key manager, admin API |
//! | [`RevocationStore`] | revoked tokens | OAuth door, maintenance, admin API |
//! | [`NasStore`] | RADIUS clients | RADIUS doors, CLI `nas`, `apply`, admin API |
//! | [`AccountingStore`] | accounting records, sessions | accounting door, CLI `acct` |
//! | [`RegistrationStore`] | dynamic client registration | OAuth door, admin API, CLI |
//! | [`VersionedStore`] | versions, pages, compare-and-set | admin API, `apply` |
//! | [`IdempotencyStore`] | `Idempotency-Key` records | admin API |
//!
//! A door names only the capabilities it uses: it keeps an `Arc<dyn NasStore>` (say),
//! which the assembly gets from its `Arc<dyn Store>` by trait upcasting
//! (`let nas: Arc<dyn NasStore> = store.clone();`). The assembly and the CLI hold the
//! whole [`Store`].
//!
//! Rules every backend follows:
//! - Times are unix seconds supplied by the caller; a backend never reads a clock.
//! - Records are validated (`validate()`) before any write; bad input is
//!   [`StoreError::Invalid`] and nothing is written.
//! - "Not there" is `Ok(None)` / `Ok(false)` for reads and removals, and
//!   [`StoreError::NotFound`] for updates of something that
//!   must exist.
//! - Stored hash replacement is compare-and-set (see
//!   [`CredentialSource::replace_hash`]), so rehash-on-login upgrades exactly once.

use std::sync::Arc;

use portcullis_core::CredentialSource;

use crate::error::StoreError;

mod accounting;
mod clients;
mod groups;
mod health;
mod idempotency;
mod nas;
mod registration;
mod revocations;
mod signing_keys;
mod users;
mod versioned;

#[cfg(test)]
mod tests;

pub use accounting::AccountingStore;
pub use clients::ClientStore;
pub use groups::GroupStore;
pub use health::Health;
pub use idempotency::IdempotencyStore;
pub use nas::NasStore;
pub use registration::RegistrationStore;
pub use revocations::RevocationStore;
pub use signing_keys::SigningKeyStore;
pub use users::UserStore;
pub use versioned::VersionedStore;

/// The whole store: every capability, and the verification core's [`CredentialSource`]
/// (clients answer with their one or two secret hashes, never disabled; users with their
/// password hash and disabled flag). Implemented for every type that implements them
/// all; for the assembly, the CLI and tests, while doors name single capabilities.
pub trait Store:
    Health
    + ClientStore
    + UserStore
    + GroupStore
    + SigningKeyStore
    + RevocationStore
    + NasStore
    + AccountingStore
    + RegistrationStore
    + VersionedStore
    + IdempotencyStore
    + CredentialSource
{
    /// This store as the verification core's credential source.
    fn as_credential_source(self: Arc<Self>) -> Arc<dyn CredentialSource>;
}

impl<T> Store for T
where
    T: Health
        + ClientStore
        + UserStore
        + GroupStore
        + SigningKeyStore
        + RevocationStore
        + NasStore
        + AccountingStore
        + RegistrationStore
        + VersionedStore
        + IdempotencyStore
        + CredentialSource,
{
    fn as_credential_source(self: Arc<Self>) -> Arc<dyn CredentialSource> {
        self
    }
}

/// A stream of [`Change`]s; an error means the feed ended and must be opened again.
pub type ChangeFeed = futures::stream::BoxStream<'static, Result<Change, StoreError>>;

/// One change announced by the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The client with this id was added, changed or removed.
    Client(String),
    /// The user with this name was added, changed or removed.
    User(String),
    /// The NAS with this name was added, changed or removed.
    Nas(String),
    /// The feed lost its connection and reconnected: changes may have been missed, so
    /// anything cached may be stale.
    Resync,
}

impl Change {
    /// From a notification payload `<table>:<key>`; `None` for tables nobody caches.
    pub fn parse(payload: &str) -> Option<Change> {
        let (table, key) = payload.split_once(':')?;
        let key = key.to_owned();
        match table {
            "clients" => Some(Change::Client(key)),
            "users" => Some(Change::User(key)),
            "nas" => Some(Change::Nas(key)),
            _ => None,
        }
    }
}
