//! Errors of the verification core. Only construction can fail: once running, every
//! problem (store down, pool saturated) becomes an [`crate::Outcome`], never an error.

use thiserror::Error;

/// Why a [`crate::Verifier`] could not be built.
#[derive(Debug, Error)]
pub enum CoreError {
    /// A configuration value is out of range or malformed.
    #[error("invalid verifier configuration: {field}: {reason}")]
    Config {
        /// The offending field, as named in the TOML file.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The operating system refused to start a hash pool or timer thread.
    #[error("could not start a verifier thread: {0}")]
    Spawn(#[source] std::io::Error),
}

impl CoreError {
    pub(crate) fn config(field: &'static str, reason: impl Into<String>) -> Self {
        CoreError::Config {
            field,
            reason: reason.into(),
        }
    }
}
