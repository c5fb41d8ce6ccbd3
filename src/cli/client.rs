//! `portcullis client ...` (not yet built: see the open issues).

use std::process::ExitCode;

/// `portcullis client` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ClientCommand {}

/// Run a `client` subcommand.
pub fn run(cmd: ClientCommand) -> ExitCode {
    match cmd {}
}
