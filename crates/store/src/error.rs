//! The one error type of the store. Messages name the object (a client id, a username, a
//! file) and what went wrong, never a secret or a hash: they reach operators' terminals and
//! server logs.

use thiserror::Error;

/// A store operation failed.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The named object does not exist (e.g. `client "ci"`).
    #[error("{0} not found")]
    NotFound(String),
    /// An object with this key exists already (e.g. `client "ci"`).
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// The object changed since the version the caller named (compare-and-set refused;
    /// issue 27's `If-Match`), e.g. `client "ci"`.
    #[error("{0} was changed since the version given")]
    Conflict(String),
    /// The input is not acceptable (bad id, scope, grant, lifetime, ...).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The database (or its driver) failed.
    #[error("store backend error: {0}")]
    Backend(String),
    /// A file of the data directory could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// Which file and what we were doing with it.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// Shorthand for [`StoreError::Io`].
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        StoreError::Io {
            context: context.into(),
            source,
        }
    }

    /// Shorthand for [`StoreError::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        StoreError::Invalid(msg.into())
    }
}

impl From<StoreError> for portcullis_core::SourceError {
    fn from(e: StoreError) -> Self {
        portcullis_core::SourceError(e.to_string())
    }
}
