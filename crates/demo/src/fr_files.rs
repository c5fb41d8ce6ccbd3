//! The error and file helpers both FreeRADIUS set-ups of the demo use (PAP in
//! `freeradius`, EAP in `freeradius_eap`), below both so they import one way.

use std::path::Path;

use portcullis_lab::LabError;

/// A FreeRADIUS set-up or start failure.
pub(super) fn fr_err(msg: impl std::fmt::Display) -> LabError {
    LabError::Target(format!("freeradius: {msg}"))
}

/// Write one configuration file of the temp copy.
pub(super) fn write(path: &Path, text: &str) -> Result<(), LabError> {
    std::fs::write(path, text).map_err(|e| fr_err(format!("{}: {e}", path.display())))
}
