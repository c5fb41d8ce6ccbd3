//! `portcullis apply FILE [--dry-run] [--prune]`: make the store hold the clients, users
//! and NAS a TOML file declares (the library is `portcullis_server::apply`). The plan is
//! printed before anything is changed; `--dry-run` stops there. Works on the data
//! directory's SQLite or, with `--config`, on the shared PostgreSQL the configuration
//! names. Secrets come from files or environment variables and are never printed.
//!
//! With `--server URL` the file is resolved here (secrets read from their files or
//! variables) and sent to a running server's admin API (`POST /admin/v1/apply`), which
//! plans and applies it against its own store; the plan printed is the server's.
//!
//! Exit codes: 0 applied (or nothing to do), 2 on any error (nothing changed unless the
//! error names the record where applying stopped).

use std::path::PathBuf;
use std::process::ExitCode;

use portcullis_hash::Policy;
use portcullis_server::apply::declared::Declared;
use portcullis_server::apply::plan::{Context, Plan, render};
use portcullis_server::apply::remote::{self, Credentials, Endpoint};
use portcullis_server::apply::{Desired, EXAMPLE};
use zeroize::Zeroizing;

use super::common::{DataDirArg, block_on, now, open, open_or_create};

/// Arguments of `apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The TOML file declaring clients, users, groups and NAS (`--example` prints one).
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
    remote: RemoteArgs,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Where `--server` applies and how it authenticates.
#[derive(Debug, clap::Args)]
struct RemoteArgs {
    /// Apply through the admin API of the server at this URL (`https://host:port` of
    /// `[admin] listen`) instead of the local store.
    #[arg(long, value_name = "URL", conflicts_with_all = ["data_dir", "config"])]
    server: Option<String>,
    /// A file holding a bearer token with scope portcullis:admin:write (or set
    /// PORTCULLIS_ADMIN_TOKEN).
    #[arg(
        long,
        value_name = "FILE",
        requires = "server",
        conflicts_with = "client_id"
    )]
    token_file: Option<PathBuf>,
    /// Obtain the token as this client (client_credentials at --token-url).
    #[arg(long, value_name = "ID", requires_all = ["server", "client_secret_file", "token_url"])]
    client_id: Option<String>,
    /// A file holding --client-id's secret.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    client_secret_file: Option<PathBuf>,
    /// The token endpoint on the server's OAuth listener (e.g.
    /// `https://host:8443/oauth2/token`; the admin listener has none).
    #[arg(long, value_name = "URL", requires = "client_id")]
    token_url: Option<String>,
    /// PEM CA certificates to trust for https:// URLs.
    #[arg(long, value_name = "FILE", requires = "server")]
    ca: Option<PathBuf>,
    /// A PEM client certificate chain for admin mTLS.
    #[arg(long, value_name = "FILE", requires_all = ["server", "key"])]
    cert: Option<PathBuf>,
    /// The PEM private key of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
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
    if let Some(server) = &args.remote.server {
        return remote(server, file, &args).await;
    }
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
    let done = plan.execute(cx.store.as_ref(), &mut |_| {}).await;
    backend.close().await;
    done.map_err(|e| format!("{e} (steps before it were applied)"))?;
    println!("applied");
    Ok(ExitCode::SUCCESS)
}

/// A secret file's one line (a token or a client secret), never printed.
fn read_one_line(what: &str, path: &std::path::Path) -> Result<Zeroizing<String>, String> {
    let raw = Zeroizing::new(
        std::fs::read_to_string(path).map_err(|e| format!("{what} {}: {e}", path.display()))?,
    );
    let line = raw.trim_end_matches(['\r', '\n']);
    if line.is_empty() || line.contains(['\r', '\n']) {
        return Err(format!(
            "{what} {}: expected one non-empty line",
            path.display()
        ));
    }
    Ok(Zeroizing::new(line.to_owned()))
}

async fn remote(
    server: &str,
    file: &std::path::Path,
    args: &ApplyArgs,
) -> Result<ExitCode, String> {
    let r = &args.remote;
    // Resolved and checked here first: a typo or a missing secret sends nothing.
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let base = file.parent().unwrap_or(std::path::Path::new("."));
    let declared = Declared::read(&text, base).map_err(|e| format!("{}: {e}", file.display()))?;
    let creds = if let Some(id) = &r.client_id {
        let (Some(secret), Some(token_url)) = (&r.client_secret_file, &r.token_url) else {
            return Err("--client-id needs --client-secret-file and --token-url".into());
        };
        Credentials::Client {
            token_url: token_url.clone(),
            id: id.clone(),
            secret: read_one_line("--client-secret-file", secret)?,
        }
    } else if let Some(f) = &r.token_file {
        Credentials::Token(read_one_line("--token-file", f)?)
    } else if let Some(t) = std::env::var_os("PORTCULLIS_ADMIN_TOKEN") {
        let t = Zeroizing::new(
            t.into_string()
                .map_err(|_| "PORTCULLIS_ADMIN_TOKEN is not UTF-8".to_owned())?,
        );
        Credentials::Token(Zeroizing::new(t.trim().to_owned()))
    } else if r.cert.is_some() {
        Credentials::None
    } else {
        return Err(
            "--server needs --token-file, PORTCULLIS_ADMIN_TOKEN, --client-id or --cert".into(),
        );
    };
    let ep = Endpoint {
        server: server.to_owned(),
        ca: r.ca.clone(),
        client_cert: r.cert.clone().zip(r.key.clone()),
    };
    let answer = remote::apply(&ep, &creds, &declared, args.dry_run, args.prune)
        .await
        .map_err(|e| e.to_string())?;
    print!("{}", render(&answer.items));
    if args.dry_run {
        println!("dry run: nothing changed");
    } else if answer.applied {
        println!("applied");
    } else {
        println!("nothing to change");
    }
    Ok(ExitCode::SUCCESS)
}
