//! `portcullis config ...`: print the documented example configuration, check a file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use portcullis_server::Config;
use portcullis_server::config::StoreBackend;
use portcullis_store::backend::without_credentials;

/// `portcullis config` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print a fully commented configuration with every key at its default.
    Example,
    /// Parse and validate a configuration file, then check that the PostgreSQL store
    /// and the Redis throttle it names answer; exit 0 if it is usable.
    Check {
        /// The TOML file.
        file: PathBuf,
        /// Only parse and validate; do not contact PostgreSQL or Redis.
        #[arg(long)]
        offline: bool,
    },
}

/// How long `config check` waits for each service.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Run a `config` subcommand.
pub fn run(cmd: ConfigCommand) -> ExitCode {
    match cmd {
        ConfigCommand::Example => {
            print!("{}", portcullis_server::config::example());
            ExitCode::SUCCESS
        }
        ConfigCommand::Check { file, offline } => {
            let config = match Config::load(&file) {
                Ok(c) => c,
                Err(e) => return super::fail(format_args!("{}: {e}", file.display())),
            };
            println!("{}: valid", file.display());
            if offline {
                return ExitCode::SUCCESS;
            }
            super::common::block_on(async move {
                probe(&config).await?;
                Ok(ExitCode::SUCCESS)
            })
        }
    }
}

/// Contact each backend the configuration names; one line per backend.
async fn probe(config: &Config) -> Result<(), String> {
    match &config.store {
        StoreBackend::Sqlite => {
            println!("store: SQLite in {} (embedded)", config.data_dir.display())
        }
        StoreBackend::Postgres {
            url, secrets_file, ..
        } => {
            let shown = without_credentials(url);
            tokio::time::timeout(PROBE_TIMEOUT, portcullis_store::PgStore::probe(url))
                .await
                .map_err(|_| format!("store: PostgreSQL at {shown}: no answer within 5 s"))?
                .map_err(|e| format!("store: PostgreSQL at {shown}: {e}"))?;
            println!("store: PostgreSQL at {shown}: answers");
            if secrets_file.exists() {
                portcullis_store::Secrets::load(secrets_file)
                    .map_err(|e| format!("store.secrets_file: {e}"))?;
                println!("secrets: {} (readable)", secrets_file.display());
            } else {
                println!(
                    "secrets: {} does not exist yet; the first start creates it (give the same file to every instance)",
                    secrets_file.display()
                );
            }
        }
    }
    match &config.throttle_redis {
        None => println!("throttle: failure budgets in this process"),
        Some(r) => {
            let shown = r.target.shown();
            let store = portcullis_store::RedisThrottleStore::new(r)
                .map_err(|e| format!("throttle.redis: {e}"))?;
            store
                .ping()
                .await
                .map_err(|e| format!("throttle: Redis at {shown}: {e}"))?;
            println!("throttle: Redis at {shown}: answers");
        }
    }
    Ok(())
}
