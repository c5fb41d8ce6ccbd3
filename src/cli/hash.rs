//! `portcullis hash ...` (not yet built: see the open issues).

use std::process::ExitCode;

/// `portcullis hash` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum HashCommand {}

/// Run a `hash` subcommand.
pub fn run(cmd: HashCommand) -> ExitCode {
    match cmd {}
}
