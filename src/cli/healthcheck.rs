//! `portcullis healthcheck`: `GET /readyz` on the HTTP listener of the configuration
//! `serve` runs with (same flags and environment variables), so a container
//! `HEALTHCHECK` needs no curl. Exit 0 when ready, 1 when not (the reason on stderr),
//! 2 when the configuration is refused.

use std::process::ExitCode;
use std::time::Duration;

use super::serve::{ServeArgs, load_config};

/// Arguments of `portcullis healthcheck`.
#[derive(Debug, clap::Args)]
pub struct HealthcheckArgs {
    #[command(flatten)]
    serve: ServeArgs,
    /// Give up after this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    timeout_ms: u64,
}

/// Run `portcullis healthcheck`.
pub fn run(args: HealthcheckArgs) -> ExitCode {
    let config = match load_config(&args.serve) {
        Ok(c) => c,
        Err(e) => return super::fail(e),
    };
    let (at, proxied) = portcullis_server::health::probe_for(&config, config.http);
    let timeout = Duration::from_millis(args.timeout_ms);
    super::common::block_on(async move {
        match portcullis_server::health::readyz(at, proxied, config.tls.as_ref(), timeout).await {
            Ok(body) => {
                println!("{at}: {body}");
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("portcullis: not ready: {at}: {e}");
                Ok(ExitCode::from(1))
            }
        }
    })
}
