//! `portcullis demo` (not yet built: see the open issues).

use std::process::ExitCode;

/// Arguments of `portcullis demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {}

/// Run `portcullis demo`.
pub fn run(_args: DemoArgs) -> ExitCode {
    super::fail("'demo' is not built yet")
}
