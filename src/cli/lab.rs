//! `portcullis lab ...` (not yet built: see the open issues).

use std::process::ExitCode;

/// `portcullis lab` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum LabCommand {}

/// Run a `lab` subcommand.
pub fn run(cmd: LabCommand) -> ExitCode {
    match cmd {}
}
