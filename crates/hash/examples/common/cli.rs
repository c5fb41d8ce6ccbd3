//! Command-line pieces shared by the benchmark examples.

use portcullis_hash::batch::{self, Backend};
use portcullis_hash::pbkdf2::Prf;

/// The batch backend named by `arg` (none if absent), or the message for a name this CPU
/// does not offer for `prf`.
pub fn backend_arg(prf: Prf, arg: Option<&String>) -> Result<Option<Backend>, String> {
    match arg {
        None => Ok(None),
        Some(name) => batch::backend_named(prf, name)
            .map(Some)
            .ok_or_else(|| format!("backend {name} not available for {}", prf.name())),
    }
}
