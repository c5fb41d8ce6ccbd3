//! `portcullis serve` (not yet built: see the open issues).

use std::process::ExitCode;

/// Arguments of `portcullis serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

/// Run `portcullis serve`.
pub fn run(_args: ServeArgs) -> ExitCode {
    super::fail("'serve' is not built yet")
}
