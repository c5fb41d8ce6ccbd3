//! `portcullis apply FILE [--dry-run] [--prune]`: make the store hold the clients, users
//! and NAS a TOML file declares (the library is `portcullis_server::apply`). The plan is
//! printed before anything is changed; `--dry-run` stops there. Works on the data
//! directory's SQLite or, with `--config`, on the shared PostgreSQL the configuration
//! names. Secrets come from files or environment variables and are never printed.
//!
//! Exit codes: 0 applied (or nothing to do), 2 on any error (nothing changed unless the
//! error names the record where applying stopped).

use std::path::PathBuf;
use std::process::ExitCode;

use portcullis_hash::Policy;
use portcullis_server::apply::plan::{Context, Plan};
use portcullis_server::apply::{Desired, EXAMPLE};

use super::common::{DataDirArg, block_on, now, open, open_or_create};

/// Arguments of `apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The TOML file declaring clients, users and NAS (`--example` prints one).
    #[arg(required_unless_present = "example")]
    file: Option<PathBuf>,
    /// Print the plan and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Remove clients, users and NAS the file does not declare (dynamically registered
    /// clients are never removed).
    #[arg(long)]
    prune: bool,
    /// Print an example file and exit.
    #[arg(long, conflicts_with_all = ["file", "dry_run", "prune"])]
    example: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Run `apply`.
pub fn run(args: ApplyArgs) -> ExitCode {
    if args.example {
        print!("{EXAMPLE}");
        return ExitCode::SUCCESS;
    }
    block_on(apply(args))
}

async fn apply(args: ApplyArgs) -> Result<ExitCode, String> {
    let Some(file) = &args.file else {
        return Err("give the file to apply".into());
    };
    // The whole file, and every secret it references, is checked before the store is
    // opened: a typo changes nothing.
    let desired = Desired::load(file).map_err(|e| format!("{}: {e}", file.display()))?;
    // Chosen client secrets are hashed under the configured policy (the default policy
    // without --config), as `client add --secret-stdin` does.
    let policy = match &args.dir.config {
        Some(c) => {
            portcullis_server::Config::load(c)
                .map_err(|e| format!("{}: {e}", c.display()))?
                .policy
        }
        None => Policy::default(),
    };
    // A dry run never creates a data directory.
    let backend = if args.dry_run {
        open(&args.dir).await?
    } else {
        open_or_create(&args.dir).await?
    };
    let peppers = backend.peppers();
    let cx = Context {
        store: backend.store(),
        peppers: &peppers,
        master_key: backend.master_key(),
        policy: &policy,
        now: now(),
    };
    let planned = Plan::make(&desired, &cx, args.prune).await;
    let plan = match planned {
        Ok(p) => p,
        Err(e) => {
            backend.close().await;
            return Err(e.to_string());
        }
    };
    print!("{}", plan.render());
    if args.dry_run {
        backend.close().await;
        println!("dry run: nothing changed");
        return Ok(ExitCode::SUCCESS);
    }
    if !plan.changes() {
        backend.close().await;
        println!("nothing to change");
        return Ok(ExitCode::SUCCESS);
    }
    let done = plan.execute(cx.store.as_ref()).await;
    backend.close().await;
    done.map_err(|e| format!("{e} (steps before it were applied)"))?;
    println!("applied");
    Ok(ExitCode::SUCCESS)
}
