//! What the store-editing subcommands (`client`, `user`, `nas`, and `config`, `doctor`,
//! `healthcheck` for `block_on`) share: where the store is (`--data-dir` or a `serve`
//! configuration), opening it, a one-thread runtime whose error is one line and exit code
//! 2, reading a secret from stdin, and printing tables. A leaf below those modules, so
//! `client` and `client_keys` import it rather than each other.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use portcullis_server::config::StoreBackend;
use portcullis_store::{Backend, ClientRecord, DEFAULT_DATA_DIR};
use zeroize::Zeroizing;

use super::fail;

/// Longest secret or password accepted on stdin, in bytes.
const MAX_STDIN_SECRET: usize = 4096;

/// Where the store lives: a data directory, or what a `serve` configuration file names
/// (its `[store]`: the data directory, or a shared PostgreSQL with its secrets file).
#[derive(Debug, Clone, clap::Args)]
pub struct DataDirArg {
    /// Data directory (database and secrets file; created 0700 if missing).
    #[arg(long, env = "PORTCULLIS_DATA_DIR", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// The configuration file `portcullis serve` uses: work on the store it names
    /// (`[store] url` for PostgreSQL) instead of --data-dir.
    #[arg(long, value_name = "FILE", conflicts_with = "data_dir")]
    pub config: Option<PathBuf>,
}

/// Run `f` on a single-threaded runtime; `Err` is printed on one line with exit code 2.
pub(crate) fn block_on(f: impl std::future::Future<Output = Result<ExitCode, String>>) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("starting the async runtime: {e}")),
    };
    match rt.block_on(f) {
        Ok(code) => code,
        Err(msg) => fail(msg),
    }
}

/// Open the store of an existing data directory (or the configured PostgreSQL), with the
/// error as a one-line message.
pub(crate) async fn open(arg: &DataDirArg) -> Result<Backend, String> {
    open_store(arg, false).await
}

/// Open the store, creating the data directory on first use (commands that add data).
pub(crate) async fn open_or_create(arg: &DataDirArg) -> Result<Backend, String> {
    open_store(arg, true).await
}

async fn open_store(arg: &DataDirArg, create: bool) -> Result<Backend, String> {
    let (data_dir, store) = match &arg.config {
        None => (arg.data_dir.clone(), StoreBackend::Sqlite),
        Some(file) => {
            let c = portcullis_server::Config::load(file)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            (c.data_dir, c.store)
        }
    };
    let opened = match &store {
        StoreBackend::Sqlite if create => Backend::sqlite(&data_dir).await,
        StoreBackend::Sqlite => Backend::sqlite_existing(&data_dir).await,
        // A command needs one or two connections, not the server's pool.
        StoreBackend::Postgres {
            url,
            secrets_file,
            max_connections,
        } => Backend::postgres(url, secrets_file, (*max_connections).min(2)).await,
    };
    opened.map_err(|e| e.to_string())
}

/// What to tell the operator when a command created the store's secrets: a wrong
/// working directory or path would otherwise go unnoticed, and the file must be backed up.
/// Validate and insert a new client, close the store, and say if the data directory was
/// created just now.
pub(crate) async fn put_new_client(dir: Backend, client: &ClientRecord) -> Result<(), String> {
    client.validate().map_err(|e| e.to_string())?;
    let stored = dir.store().put_client(client).await;
    let created = dir.created().then(|| created_note(&dir));
    dir.close().await;
    stored.map_err(|e| e.to_string())?;
    if let Some(note) = created {
        eprintln!("{note}");
    }
    Ok(())
}

pub(crate) fn created_note(b: &Backend) -> String {
    match b.data_dir() {
        Some(dir) => format!(
            "portcullis: created data directory {} (back up {} separately from the database)",
            dir.display(),
            portcullis_store::datadir::SECRETS_FILE
        ),
        None => format!(
            "portcullis: created secrets file {} (pepper and master key: back it up \
             separately from the database and give the same file to every instance)",
            b.secrets_file().display()
        ),
    }
}

/// Read one line from stdin as a secret (`what` names it in errors): trailing newline
/// removed, non-empty, at most 4096 bytes, no further lines.
pub(crate) fn read_stdin_secret(what: &str) -> Result<Zeroizing<Vec<u8>>, String> {
    let mut buf = Zeroizing::new(Vec::new());
    std::io::stdin()
        .lock()
        .take(MAX_STDIN_SECRET as u64 + 3)
        .read_to_end(&mut buf)
        .map_err(|e| format!("reading the {what} from stdin: {e}"))?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    if buf.is_empty() {
        return Err(format!("empty {what} on stdin"));
    }
    if buf.len() > MAX_STDIN_SECRET {
        return Err(format!(
            "{what} on stdin is longer than {MAX_STDIN_SECRET} bytes"
        ));
    }
    if buf.contains(&b'\n') {
        return Err(format!("expected the {what} as one line on stdin"));
    }
    Ok(buf)
}

/// Unix seconds now (the CLI is the edge where the clock is read).
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Print left-aligned columns separated by two spaces.
pub(crate) fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
