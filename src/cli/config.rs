//! `portcullis config ...`: print the documented example configuration, check a file.

use std::path::PathBuf;
use std::process::ExitCode;

/// `portcullis config` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print a fully commented configuration with every key at its default.
    Example,
    /// Parse and validate a configuration file; exit 0 if it is usable.
    Check {
        /// The TOML file.
        file: PathBuf,
    },
}

/// Run a `config` subcommand.
pub fn run(cmd: ConfigCommand) -> ExitCode {
    match cmd {
        ConfigCommand::Example => {
            print!("{}", portcullis_server::config::example());
            ExitCode::SUCCESS
        }
        ConfigCommand::Check { file } => match portcullis_server::Config::load(&file) {
            Ok(_) => {
                println!("{}: ok", file.display());
                ExitCode::SUCCESS
            }
            Err(e) => super::fail(format_args!("{}: {e}", file.display())),
        },
    }
}
