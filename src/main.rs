//! `portcullis`: the thin binary over the library crates. Each subcommand lives in its own
//! module under `cli/`, which parses its arguments and calls into a library crate.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod cli;

/// mimalloc instead of glibc's malloc: an 802.1X round trip allocates and frees dozens of
/// short-lived buffers (a rustls connection per login, EAP fragments, RADIUS attributes),
/// and glibc's malloc (with its chunk consolidation) was about a sixth of the server's CPU
/// per resumed login in a profile (`perf record` on `scripts/eap-bench`, issue 25). Argon2
/// arenas do not go through it (`portcullis_hash` maps them itself).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Manage groups of users in the embedded store.
    #[command(subcommand)]
    Group(cli::group::GroupCommand),
    /// Manage RADIUS clients (NAS) in the embedded store.
    #[command(subcommand)]
    Nas(cli::nas::NasCommand),
    /// Make the store hold the clients, users, groups and NAS a TOML file declares (prints
    /// the plan first; --dry-run changes nothing, --prune removes what it does not declare).
    Apply(cli::apply::ApplyArgs),
    /// Dynamic client registration (RFC 7591): initial access tokens.
    #[command(subcommand)]
    Registration(cli::registration::RegistrationCommand),
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
    /// Check a configuration on the machine that will run it: file permissions, store and
    /// Redis, certificates, clock, issuer, listen addresses, hash kernels. Exit 1 on what
    /// would break production (each problem names its fix), 0 on a good setup.
    Doctor(cli::serve::ServeArgs),
    /// Ask a running server's /readyz over its configured HTTP listener (exit 0 ready, 1
    /// not): a container HEALTHCHECK without curl.
    Healthcheck(cli::healthcheck::HealthcheckArgs),
    /// Generate man pages or shell completions (packaging).
    #[command(subcommand, hide = true)]
    Generate(cli::generate::GenerateCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Hash(c) => cli::hash::run(c),
        Command::Serve(a) => cli::serve::run(a),
        Command::Client(c) => cli::client::run(c),
        Command::User(c) => cli::user::run(c),
        Command::Group(c) => cli::group::run(c),
        Command::Nas(c) => cli::nas::run(c),
        Command::Apply(a) => cli::apply::run(a),
        Command::Registration(c) => cli::registration::run(c),
        Command::Acct(c) => cli::acct::run(c),
        Command::Config(c) => cli::config::run(c),
        Command::Tls(c) => cli::tls::run(c),
        Command::Lab(c) => cli::lab::run(c),
        Command::Demo(a) => cli::demo::run(a),
        Command::Doctor(a) => cli::doctor::run(a),
        Command::Healthcheck(a) => cli::healthcheck::run(a),
        Command::Generate(c) => cli::generate::run(c, Cli::command()),
    }
}
