//! `portcullis config ...` (not yet built: see the open issues).

use std::process::ExitCode;

/// `portcullis config` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {}

/// Run a `config` subcommand.
pub fn run(cmd: ConfigCommand) -> ExitCode {
    match cmd {}
}
