//! Where stored credentials come from. The `store` crate implements this for SQLite and
//! PostgreSQL; tests implement it in memory.

use futures::future::BoxFuture;
use thiserror::Error;

use crate::attempt::PrincipalKind;

/// A principal's stored credential strings (any format `portcullis_hash::Credential`
/// parses). Clients have two during secret rotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCredentials {
    /// One or two stored hash strings.
    pub hashes: Vec<String>,
    /// A disabled principal is rejected like an unknown one.
    pub disabled: bool,
}

/// The credential store failed (not "not found", which is `Ok(None)`).
#[derive(Debug, Error)]
#[error("credential store error: {0}")]
pub struct SourceError(pub String);

/// Lookup and compare-and-set update of stored credentials.
pub trait CredentialSource: Send + Sync + 'static {
    /// The stored credentials of `principal`, or `None` if it does not exist.
    fn credentials<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, SourceError>>;

    /// Replace the stored hash `old` by `new` only if `old` is still stored (compare and
    /// set); returns whether the replacement happened. Used by rehash-on-login so that
    /// concurrent logins upgrade a legacy hash exactly once.
    fn replace_hash<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
        old: &'a str,
        new: &'a str,
    ) -> BoxFuture<'a, Result<bool, SourceError>>;
}
