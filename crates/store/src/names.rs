//! The rule every name in the store follows (client ids, usernames, key and token ids,
//! NAS and group names), below every record that has one.

use crate::error::StoreError;

/// Longest client id, username, key id or token id we accept (in characters).
pub const MAX_NAME_CHARS: usize = 255;

/// Check a client id, username, key id or token id: 1-255 characters, no control
/// characters, no surrounding whitespace (which would make look-alike principals).
pub fn validate_name(what: &str, name: &str) -> Result<(), StoreError> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(StoreError::invalid(format!(
            "{what} must be 1-{MAX_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(StoreError::invalid(format!(
            "{what} must not contain control characters"
        )));
    }
    if name.trim() != name {
        return Err(StoreError::invalid(format!(
            "{what} must not start or end with whitespace"
        )));
    }
    Ok(())
}
