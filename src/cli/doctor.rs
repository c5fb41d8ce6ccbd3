//! `portcullis doctor [--config FILE]`: the first-run check (crates/server `doctor`) of the
//! configuration `serve` would run with, same flags and environment variables. Prints one
//! line per finding and a summary; exit 0 when nothing would break production, 1 when
//! something would, 2 when the configuration itself is refused.

use std::process::ExitCode;

use super::serve::{ServeArgs, load_config};

/// Run `portcullis doctor`.
pub fn run(args: ServeArgs) -> ExitCode {
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            println!("FAIL  config: {e}");
            return super::fail("the configuration is refused: fix it first");
        }
    };
    super::common::block_on(async move {
        let report = portcullis_server::doctor::run(&config).await;
        for f in &report.findings {
            println!("{f}");
        }
        println!("{}", report.summary());
        Ok(if report.failed() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    })
}
