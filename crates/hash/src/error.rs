//! Error types of the hash crate. Messages are shown to operators (`hash verify` prints
//! them on one line), so they say what is wrong without echoing secret material.

use thiserror::Error;

/// A stored credential string could not be parsed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// No supported format recognised this string.
    #[error("unrecognised hash format{0}")]
    Unrecognised(String),
    /// The string looks like `format` but part of it is wrong.
    #[error("malformed {format} hash: {reason}")]
    Malformed {
        /// Which format the string was taken to be.
        format: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Parameters are outside what we accept (e.g. zero iterations, absurd memory cost).
    #[error("unsupported {format} parameters: {reason}")]
    Unsupported {
        /// Which format the string was taken to be.
        format: &'static str,
        /// Which parameter is out of range.
        reason: String,
    },
}

impl FormatError {
    /// Shorthand for [`FormatError::Malformed`].
    pub fn malformed(format: &'static str, reason: impl Into<String>) -> Self {
        FormatError::Malformed {
            format,
            reason: reason.into(),
        }
    }
    /// Shorthand for [`FormatError::Unsupported`].
    pub fn unsupported(format: &'static str, reason: impl Into<String>) -> Self {
        FormatError::Unsupported {
            format,
            reason: reason.into(),
        }
    }
}

/// Verification could not be carried out (as opposed to a mismatch, which is `Ok(false)`).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// A peppered credential names a pepper key this server does not hold.
    #[error("pepper key {0:?} is not configured on this server")]
    UnknownPepper(String),
    /// The underlying KDF refused its parameters at verification time.
    #[error("hash computation failed: {0}")]
    Kdf(String),
}

/// The OS random number generator failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("operating system RNG failed: {0}")]
pub struct RandomError(pub String);
