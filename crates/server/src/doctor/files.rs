//! Files the server keeps or reads: the data directory (mode, owner), the secrets file
//! (the same load `serve` does, which refuses group/other access), the SQLite database
//! and the TLS private keys. `serve` refuses a group/world-writable data directory and
//! a group/other-accessible secrets file, so those are failures here too.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use portcullis_store::datadir::{DB_FILE, SECRETS_FILE};

use super::{Finding, Level};
use crate::config::{Config, StoreBackend};

pub(super) fn check(config: &Config, out: &mut Vec<Finding>) {
    let me = nix::unistd::geteuid().as_raw();
    let sqlite = config.store == StoreBackend::Sqlite;
    data_dir(&config.data_dir, sqlite, me, out);
    let secrets = match &config.store {
        StoreBackend::Sqlite => config.data_dir.join(SECRETS_FILE),
        StoreBackend::Postgres { secrets_file, .. } => secrets_file.clone(),
    };
    secrets_file(&secrets, sqlite, me, out);
    if sqlite {
        // `serve` refuses a database file others can access.
        private_file("database", &config.data_dir.join(DB_FILE), true, me, out);
    }
    // A key group-readable by e.g. Debian's ssl-cert group is a common, deliberate setup.
    if let Some(tls) = &config.tls {
        private_file("tls key", &tls.key, false, me, out);
    }
    if let Some(eap) = &config.radius.eap {
        private_file("radius.eap key", &eap.key, false, me, out);
    }
    if let Some(r) = &config.radius.radsec {
        private_file("radius.radsec key", &r.key, false, me, out);
    }
}

/// The owner check: a file owned by someone else is readable by this process only
/// through group or other bits, which the checks refuse; root reads anything, so when
/// root runs the doctor the owner is only reported.
fn owner_problem(path: &Path, owner: u32, me: u32) -> Option<Finding> {
    if owner == me {
        return None;
    }
    let who = format!("owned by uid {owner}, not by this user (uid {me})");
    Some(if me == 0 {
        Finding::new(
            Level::Note,
            "owner",
            format!(
                "{} is {who}: run the doctor as the service user (e.g. runuser -u portcullis -- portcullis doctor ...) to check as it",
                path.display()
            ),
        )
    } else {
        Finding::new(
            Level::Fail,
            "owner",
            format!(
                "{} is {who}; fix: chown {me} {} (or run as its owner)",
                path.display(),
                path.display()
            ),
        )
    })
}

fn data_dir(dir: &Path, sqlite: bool, me: u32, out: &mut Vec<Finding>) {
    const S: &str = "data directory";
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if sqlite {
                out.push(Finding::new(
                    Level::Note,
                    S,
                    format!(
                        "{} does not exist yet; the first start creates it (mode 0700)",
                        dir.display()
                    ),
                ));
            }
            return;
        }
        Err(e) => {
            out.push(Finding::new(
                Level::Fail,
                S,
                format!(
                    "{}: {e}; fix: make it readable by the service user",
                    dir.display()
                ),
            ));
            return;
        }
    };
    if !meta.is_dir() {
        out.push(Finding::new(
            Level::Fail,
            S,
            format!(
                "{} is not a directory; fix: set store.data_dir to a directory",
                dir.display()
            ),
        ));
        return;
    }
    let mode = meta.permissions().mode() & 0o777;
    let fix = format!("fix: chmod 700 {}", dir.display());
    if mode & 0o022 != 0 {
        // `serve` refuses it (crates/store datadir::ensure_dir).
        out.push(Finding::new(
            Level::Fail,
            S,
            format!(
                "{} is writable by group or others (mode {mode:03o}); {fix}",
                dir.display()
            ),
        ));
    } else if mode & 0o077 != 0 {
        out.push(Finding::new(
            Level::Warn,
            S,
            format!(
                "{} is readable by group or others (mode {mode:03o}); {fix}",
                dir.display()
            ),
        ));
    } else {
        out.push(Finding::new(
            Level::Ok,
            S,
            format!("{} (mode {mode:03o})", dir.display()),
        ));
    }
    out.extend(owner_problem(dir, meta.uid(), me));
}

fn secrets_file(path: &Path, sqlite: bool, me: u32, out: &mut Vec<Finding>) {
    const S: &str = "secrets file";
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let text = if sqlite {
                format!(
                    "{} does not exist yet; the first start creates it (mode 0600)",
                    path.display()
                )
            } else {
                format!(
                    "{} does not exist yet; the first start creates it: copy that one file to every instance",
                    path.display()
                )
            };
            out.push(Finding::new(Level::Note, S, text));
            return;
        }
        Err(e) => {
            out.push(Finding::new(
                Level::Fail,
                S,
                format!(
                    "{}: {e}; fix: make it readable by the service user",
                    path.display()
                ),
            ));
            return;
        }
        Ok(meta) => {
            if let Some(f) = owner_problem(path, meta.uid(), me) {
                out.push(f);
            }
        }
    }
    // The load `serve` does: refuses group/other access (naming `chmod 600`) and a
    // malformed file.
    match portcullis_store::Secrets::load(path) {
        Ok(_) => out.push(Finding::new(
            Level::Ok,
            S,
            format!("{} (mode 600, readable)", path.display()),
        )),
        Err(e) => {
            let text = e.to_string();
            let text = if text.contains("chmod") {
                text.replacen("; run: ", "; fix: ", 1)
            } else {
                format!("{text}; fix: restore the file from your backup of it")
            };
            out.push(Finding::new(Level::Fail, S, text));
        }
    }
}

/// A file that must be private to the service user (mode 0600; unless `strict`, a group
/// bit is only a warning). A missing database is fine (created at first start); a
/// missing key is reported by the TLS check.
fn private_file(subject: &'static str, path: &Path, strict: bool, me: u32, out: &mut Vec<Finding>) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        let level = if strict || mode & 0o007 != 0 {
            Level::Fail
        } else {
            Level::Warn
        };
        out.push(Finding::new(
            level,
            subject,
            format!(
                "{} is accessible by group or others (mode {mode:03o}); fix: chmod 600 {}",
                path.display(),
                path.display()
            ),
        ));
    } else {
        out.push(Finding::new(
            Level::Ok,
            subject,
            format!("{} (mode {mode:03o})", path.display()),
        ));
    }
    // A key may be readable through its group (owner root); if this process cannot read
    // it, the certificate check says so.
    if strict {
        out.extend(owner_problem(path, meta.uid(), me));
    }
}
