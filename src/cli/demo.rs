//! `portcullis demo`: start the naive baseline and Portcullis in-process on loopback with
//! temporary data, run the built-in scenarios against both, and write one report comparing
//! them side by side.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use portcullis_lab::demo::{self, BaselineServer, DemoOptions, DemoServer};

/// Arguments of `portcullis demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Output directory (default ./lab-out/demo-<UTC time>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Short version: fewer, shorter scenarios (under 90 s in all on 2 cores).
    #[arg(long)]
    pub quick: bool,
    /// No live progress line.
    #[arg(long)]
    pub quiet: bool,
}

/// Run `portcullis demo`.
pub fn run(args: DemoArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return super::fail(format_args!("cannot start the async runtime: {e}")),
    };
    let baseline = BaselineServer { workers: 16 };
    let portcullis = portcullis_demo::PortcullisServer::default();
    let servers: Vec<&dyn DemoServer> = vec![&baseline, &portcullis];
    let opts = DemoOptions {
        quick: args.quick,
        progress: !args.quiet,
        verify_target: Duration::from_millis(4),
    };
    eprintln!(
        "portcullis demo: {} scenarios against the naive baseline and Portcullis...",
        if args.quick { "quick" } else { "full" }
    );
    let report = match rt.block_on(demo::run(&servers, &opts)) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    let out = args.out.unwrap_or_else(|| super::lab::default_out("demo"));
    let path = match report.write(&out) {
        Ok(p) => p,
        Err(e) => return super::fail(e),
    };
    for n in &report.notes {
        println!("{n}");
    }
    println!("report: {}", path.display());
    // The demo's job is to show both; the baseline failing its thresholds is the point.
    ExitCode::SUCCESS
}

/// Portcullis as a demo server: the real token server, started in-process on a loopback
/// port with a temporary data directory and the demo's clients.
mod portcullis_demo {
    use portcullis_lab::LabError;
    use portcullis_lab::demo::{BoxFuture, DemoServer, Setup, Started};

    #[derive(Debug, Default)]
    pub struct PortcullisServer;

    impl DemoServer for PortcullisServer {
        fn label(&self) -> String {
            "portcullis".into()
        }

        fn about(&self) -> String {
            "portcullis: async front end, dedicated hash pool, admission control, reject delays as timers".into()
        }

        fn start(&self, _setup: Setup) -> BoxFuture<Result<Started, LabError>> {
            Box::pin(async {
                Err(LabError::Target(
                    "the Portcullis server's in-process start API is not available yet".into(),
                ))
            })
        }
    }
}
