//! `portcullis user ...` (not yet built: see the open issues).

use std::process::ExitCode;

/// `portcullis user` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum UserCommand {}

/// Run a `user` subcommand.
pub fn run(cmd: UserCommand) -> ExitCode {
    match cmd {}
}
