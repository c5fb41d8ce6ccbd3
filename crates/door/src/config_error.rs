//! The error of a configuration that cannot be used, in a leaf module: `config.rs`
//! assembles every section's configuration, and each section (`tls/config.rs`,
//! `radius/config.rs`, ...) validates its own values into this error, so the error must
//! live below both to keep the imports one-way.

use std::path::PathBuf;

use thiserror::Error;

/// A configuration that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not valid TOML or an unknown/mistyped key (toml's message names key and line).
    #[error("{0}")]
    Parse(#[from] toml::de::Error),
    /// A value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// A [`ConfigError::Invalid`] with this message.
pub fn invalid(msg: impl Into<String>) -> ConfigError {
    ConfigError::Invalid(msg.into())
}
