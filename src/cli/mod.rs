//! One module per subcommand. Each exposes its clap argument type and a `run` function
//! returning the process exit code; errors are printed on one line to stderr.

pub mod acct;
pub mod apply;
pub mod client;
pub mod client_keys;
pub mod common;
pub mod config;
pub mod demo;
mod demo_ldap;
pub mod doctor;
pub mod generate;
pub mod group;
pub mod hash;
pub mod hash_argon2;
pub mod hash_pool;
pub mod healthcheck;
pub mod lab;
pub mod nas;
pub mod registration;
pub mod reload;
pub mod serve;
pub mod tls;
pub mod user;
pub mod user_attrs;

/// Print a one-line error to stderr and return exit code 2 (usage or input error).
pub fn fail(msg: impl std::fmt::Display) -> std::process::ExitCode {
    eprintln!("portcullis: error: {msg}");
    std::process::ExitCode::from(2)
}

/// The CPU's model name (`/proc/cpuinfo`), for benchmark reports: a figure means little
/// without the CPU that gave it.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}
