//! `portcullis`: the thin binary over the library crates. Each subcommand lives in its own
//! module under `cli/`, which parses its arguments and calls into a library crate.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Authentication server whose credential checks stay fast under load and attack,
/// and the load lab that proves it.
#[derive(Debug, Parser)]
#[command(name = "portcullis", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create, verify, benchmark and calibrate password hashes.
    #[command(subcommand)]
    Hash(cli::hash::HashCommand),
    /// Run the OAuth 2.0 token server.
    Serve(cli::serve::ServeArgs),
    /// Manage OAuth clients in the embedded store.
    #[command(subcommand)]
    Client(cli::client::ClientCommand),
    /// Manage users in the embedded store.
    #[command(subcommand)]
    User(cli::user::UserCommand),
    /// Manage RADIUS clients (NAS) in the embedded store.
    #[command(subcommand)]
    Nas(cli::nas::NasCommand),
    /// Read RADIUS accounting: sessions online or at a time, record export.
    #[command(subcommand)]
    Acct(cli::acct::AcctCommand),
    /// Configuration helpers.
    #[command(subcommand)]
    Config(cli::config::ConfigCommand),
    /// TLS helpers: check a certificate and key before deploying them.
    #[command(subcommand)]
    Tls(cli::tls::TlsCommand),
    /// Run load-test scenarios against a token endpoint.
    #[command(subcommand)]
    Lab(cli::lab::LabCommand),
    /// Run Portcullis and a naive baseline side by side under the built-in scenarios.
    Demo(cli::demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Hash(c) => cli::hash::run(c),
        Command::Serve(a) => cli::serve::run(a),
        Command::Client(c) => cli::client::run(c),
        Command::User(c) => cli::user::run(c),
        Command::Nas(c) => cli::nas::run(c),
        Command::Acct(c) => cli::acct::run(c),
        Command::Config(c) => cli::config::run(c),
        Command::Tls(c) => cli::tls::run(c),
        Command::Lab(c) => cli::lab::run(c),
        Command::Demo(a) => cli::demo::run(a),
    }
}
