//! The data directory: everything an embedded Portcullis keeps on disk.
//!
//! ```text
//! <dir>/                 0700
//!   portcullis.db        0600  SQLite (WAL): clients, users, signing keys, revocations
//!   secrets.toml         0600  pepper keys and the master key; NEVER in the database
//! ```
//!
//! The split is the point: generated client secrets are stored as HMAC-SHA256 under a
//! pepper, and signing keys are sealed under the master key, so a copy of the database
//! alone (a backup, a dump, a stolen replica) allows neither offline verification of
//! client secrets nor token forgery. Back the two files up separately.
//!
//! `open` refuses files or a directory that others can write (or, for the secrets file,
//! read), the way ssh refuses a readable private key: silently using them would hide a
//! leak.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use portcullis_hash::{PepperKey, Peppers};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::error::StoreError;
use crate::seal::MasterKey;
use crate::sqlite::SqliteStore;

/// Default data directory (relative to the working directory).
pub const DEFAULT_DATA_DIR: &str = "portcullis-data";
/// Database file name inside the data directory.
pub const DB_FILE: &str = "portcullis.db";
/// Secrets file name inside the data directory.
pub const SECRETS_FILE: &str = "secrets.toml";

const SECRETS_VERSION: u32 = 1;
const SECRETS_HEADER: &str = "\
# Portcullis server secrets: the pepper keys under which generated client secrets are
# hashed, and the master key that seals token signing keys in the database.
# Keep this file mode 0600 and OUT of database backups; losing it invalidates every
# generated client secret and signing key. Managed by portcullis; do not edit by hand.
";

/// An opened data directory: the store plus the secrets kept beside it.
pub struct DataDir {
    /// The directory itself, for messages and for rewriting the secrets file.
    path: PathBuf,
    /// The SQLite store in `portcullis.db`.
    store: Arc<SqliteStore>,
    /// Pepper keys from `secrets.toml`; the current one hashes new generated secrets.
    peppers: Peppers,
    /// Key-encryption key from `secrets.toml` for secrets kept in the database.
    master_key: MasterKey,
    /// Whether this open created the secrets file (first use), so the CLI can say so.
    created: bool,
}

impl std::fmt::Debug for DataDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataDir")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl DataDir {
    /// Open (creating on first use) the data directory at `path`: the directory (0700),
    /// the secrets file (0600, with a first pepper and a master key) and the database
    /// (0600, migrated to the current schema).
    pub async fn open(path: impl AsRef<Path>) -> Result<DataDir, StoreError> {
        let path = path.as_ref().to_path_buf();
        ensure_dir(&path)?;
        let db = path.join(DB_FILE);
        let secrets = path.join(SECRETS_FILE);
        // A database without its secrets file means the file was lost: making a new one
        // would silently invalidate every generated secret and signing key (new pepper,
        // same id). The database is created after the secrets file, so a concurrent
        // first open never trips this.
        let db_has_data = fs::metadata(&db).is_ok_and(|m| m.len() > 0);
        if db_has_data && !secrets.exists() {
            return Err(StoreError::invalid(format!(
                "{} exists but {} is missing: restore the secrets file from its backup \
                 (or move the database away to start afresh)",
                db.display(),
                secrets.display()
            )));
        }
        let (peppers, master_key, created) = load_or_create_secrets(&secrets)?;
        ensure_private_file(&db)?;
        let store = Arc::new(SqliteStore::open(&db).await?);
        Ok(DataDir {
            path,
            store,
            peppers,
            master_key,
            created,
        })
    }

    /// Like [`DataDir::open`], but [`StoreError::NotFound`] if `path` does not exist yet:
    /// for commands that only read or change existing data, so a mistyped path (or the
    /// wrong working directory) is an error instead of a new, empty data directory.
    pub async fn open_existing(path: impl AsRef<Path>) -> Result<DataDir, StoreError> {
        let path = path.as_ref();
        match fs::metadata(path) {
            Ok(_) => Self::open(path).await,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::NotFound(
                format!("data directory {}", path.display()),
            )),
            Err(e) => Err(StoreError::io(format!("reading {}", path.display()), e)),
        }
    }

    /// Whether this open created the data directory's secrets (its first use).
    pub fn created(&self) -> bool {
        self.created
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store (use `as_credential_source` or the `CredentialSource` impl for the core).
    pub fn store(&self) -> Arc<SqliteStore> {
        Arc::clone(&self.store)
    }

    /// The pepper keys, for verifying and creating `$hmac-sha256$` credentials.
    pub fn peppers(&self) -> Peppers {
        self.peppers.clone()
    }

    /// The master key for sealing secrets kept in the database (signing keys).
    pub fn master_key(&self) -> &MasterKey {
        &self.master_key
    }

    /// Add a fresh pepper key and make it current: new generated secrets are hashed under
    /// it; secrets hashed under older peppers stay valid until rotated. Returns the new
    /// key's id. A running server keeps the peppers it loaded until restarted.
    pub fn rotate_pepper(&mut self) -> Result<String, StoreError> {
        let (id, peppers, master) = rotate_pepper_in(&self.path.join(SECRETS_FILE))?;
        self.peppers = peppers;
        self.master_key = master;
        Ok(id)
    }

    /// Close the database cleanly (checkpoints the WAL). Dropping also closes it.
    pub async fn close(self) {
        self.store.close().await;
    }
}

/// The contents of a secrets file on their own, for deployments whose store is not the
/// data directory's SQLite file (PostgreSQL shared by several nodes: every node needs the
/// same peppers and master key, so the file is distributed to each, never put in the DB).
#[derive(Debug, Clone)]
pub struct Secrets {
    /// Pepper keys; the current one hashes new generated secrets.
    pub peppers: Peppers,
    /// Key-encryption key for secrets kept in the database.
    pub master_key: MasterKey,
}

impl Secrets {
    /// Read an existing secrets file (refused if group/other can access it).
    pub fn load(file: impl AsRef<Path>) -> Result<Secrets, StoreError> {
        let (peppers, master_key) = load_secrets(file.as_ref())?;
        Ok(Secrets {
            peppers,
            master_key,
        })
    }

    /// Read the secrets file, creating it (0600, fresh pepper and master key) if missing.
    pub fn load_or_create(file: impl AsRef<Path>) -> Result<Secrets, StoreError> {
        let (peppers, master_key, _) = load_or_create_secrets(file.as_ref())?;
        Ok(Secrets {
            peppers,
            master_key,
        })
    }
}

/// Add a fresh pepper key to the secrets file `file` and make it current (written
/// atomically: temp file, fsync, rename, fsync of the directory). Starts from the file as
/// it is now, so keys another process added meanwhile are kept. Returns the new key's id
/// and the file's new contents.
pub fn rotate_pepper_in(file: &Path) -> Result<(String, Peppers, MasterKey), StoreError> {
    let (mut peppers, master) = load_secrets(file)?;
    let next = peppers
        .keys()
        .filter_map(|k| k.id().strip_prefix('p')?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    let id = format!("p{next}");
    let key = PepperKey::generate(&id).map_err(|e| StoreError::Backend(e.to_string()))?;
    peppers.insert(key, true);
    let text = render_secrets(&peppers, &master)?;
    let tmp = write_temp(file, &text)?;
    fs::rename(&tmp, file)
        .map_err(|e| StoreError::io(format!("replacing {}", file.display()), e))?;
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        sync_dir(dir)?;
    }
    Ok((id, peppers, master))
}

/// A new 256-bit client secret from the OS CSPRNG, base64url without padding (43
/// characters). Shown once to the operator; only its peppered HMAC is stored.
pub fn generate_client_secret() -> Result<Zeroizing<String>, StoreError> {
    let mut raw = Zeroizing::new([0u8; 32]);
    portcullis_hash::os_random(&mut raw[..]).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(Zeroizing::new(URL_SAFE_NO_PAD.encode(&raw[..])))
}

fn ensure_dir(path: &Path) -> Result<(), StoreError> {
    match fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Parents missing: create them too (also 0700: they are ours alone).
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(|e| StoreError::io(format!("creating {}", path.display()), e))?;
            return Ok(());
        }
        Err(e) => return Err(StoreError::io(format!("creating {}", path.display()), e)),
    }
    let meta =
        fs::metadata(path).map_err(|e| StoreError::io(format!("reading {}", path.display()), e))?;
    if !meta.is_dir() {
        return Err(StoreError::invalid(format!(
            "{} exists and is not a directory",
            path.display()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(StoreError::invalid(format!(
            "data directory {} is writable by group or others (mode {mode:03o}); run: chmod 700 {}",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

/// Create `path` empty with mode 0600 if missing (so SQLite, which keeps an existing
/// file's mode and gives its -wal/-shm files the same, never creates it world-readable);
/// refuse it if it exists with group/other permissions.
fn ensure_private_file(path: &Path) -> Result<(), StoreError> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => check_private(path),
        Err(e) => Err(StoreError::io(format!("creating {}", path.display()), e)),
    }
}

fn check_private(path: &Path) -> Result<(), StoreError> {
    let meta =
        fs::metadata(path).map_err(|e| StoreError::io(format!("reading {}", path.display()), e))?;
    if !meta.is_file() {
        return Err(StoreError::invalid(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(StoreError::invalid(format!(
            "{} is accessible by group or others (mode {mode:03o}); run: chmod 600 {}",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

/// On-disk form of `secrets.toml`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretsFile {
    /// Format version (1).
    version: u32,
    /// Standard base64 of the 32-byte master key.
    master_key: String,
    /// Id of the pepper used for new generated secrets.
    current_pepper: String,
    /// Every pepper still needed to verify stored secrets.
    #[serde(rename = "pepper")]
    peppers: Vec<PepperEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PepperEntry {
    /// Key id, as stored in `$hmac-sha256$k=<id>$...`.
    id: String,
    /// Standard base64 of the 32-byte key.
    key: String,
}

pub(crate) fn load_or_create_secrets(
    file: &Path,
) -> Result<(Peppers, MasterKey, bool), StoreError> {
    let existing = |file| load_secrets(file).map(|(p, m)| (p, m, false));
    match fs::symlink_metadata(file) {
        Ok(_) => existing(file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut peppers = Peppers::new();
            let key = PepperKey::generate("p1").map_err(|e| StoreError::Backend(e.to_string()))?;
            peppers.insert(key, true);
            let master = MasterKey::generate()?;
            let tmp = write_temp(file, &render_secrets(&peppers, &master)?)?;
            // A hard link publishes the complete file atomically and fails if another
            // process created one first; then theirs wins and we read it.
            let linked = fs::hard_link(&tmp, file);
            let _ = fs::remove_file(&tmp);
            match linked {
                Ok(()) => {
                    if let Some(dir) = file.parent() {
                        sync_dir(dir)?;
                    }
                    Ok((peppers, master, true))
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => existing(file),
                Err(e) => Err(StoreError::io(format!("creating {}", file.display()), e)),
            }
        }
        Err(e) => Err(StoreError::io(format!("reading {}", file.display()), e)),
    }
}

fn load_secrets(file: &Path) -> Result<(Peppers, MasterKey), StoreError> {
    check_private(file)?;
    let text = Zeroizing::new(
        fs::read_to_string(file)
            .map_err(|e| StoreError::io(format!("reading {}", file.display()), e))?,
    );
    parse_secrets(&text).map_err(|msg| StoreError::invalid(format!("{}: {msg}", file.display())))
}

fn parse_secrets(text: &str) -> Result<(Peppers, MasterKey), String> {
    // toml's errors quote the offending line, which may hold key material: keep only
    // the position-free summary.
    let parsed: SecretsFile = toml::from_str(text).map_err(|e| {
        format!(
            "not a valid secrets file ({})",
            e.message().lines().next().unwrap_or("parse error")
        )
    })?;
    if parsed.version != SECRETS_VERSION {
        return Err(format!(
            "unsupported secrets file version {} (expected {SECRETS_VERSION})",
            parsed.version
        ));
    }
    let master = MasterKey::new(
        *decode_key(&parsed.master_key).ok_or("master_key is not 32 bytes of base64")?,
    );
    let mut peppers = Peppers::new();
    for entry in &parsed.peppers {
        if peppers.get(&entry.id).is_some() {
            return Err(format!("pepper id {:?} appears twice", entry.id));
        }
        let key = decode_key(&entry.key)
            .ok_or_else(|| format!("pepper {:?}: key is not 32 bytes of base64", entry.id))?;
        let key = PepperKey::new(&entry.id, *key).map_err(|e| e.to_string())?;
        peppers.insert(key, false);
    }
    if peppers.get(&parsed.current_pepper).is_none() {
        return Err(format!(
            "current_pepper {:?} is not one of the [[pepper]] entries",
            parsed.current_pepper
        ));
    }
    // Re-insert the current key so it is marked current.
    if let Some(cur) = peppers.get(&parsed.current_pepper).cloned() {
        peppers.insert(cur, true);
    }
    Ok((peppers, master))
}

fn decode_key(b64: &str) -> Option<Zeroizing<[u8; 32]>> {
    let raw = Zeroizing::new(STANDARD.decode(b64.trim()).ok()?);
    let mut key = Zeroizing::new([0u8; 32]);
    if raw.len() != 32 {
        return None;
    }
    key.copy_from_slice(&raw);
    Some(key)
}

fn render_secrets(peppers: &Peppers, master: &MasterKey) -> Result<Zeroizing<String>, StoreError> {
    let current = peppers
        .current()
        .ok_or_else(|| StoreError::invalid("no current pepper"))?
        .id()
        .to_owned();
    let file = SecretsFile {
        version: SECRETS_VERSION,
        master_key: STANDARD.encode(master.bytes()),
        current_pepper: current,
        peppers: peppers
            .keys()
            .map(|k| PepperEntry {
                id: k.id().to_owned(),
                key: STANDARD.encode(k.key_bytes()),
            })
            .collect(),
    };
    let body = Zeroizing::new(
        toml::to_string(&file)
            .map_err(|e| StoreError::Backend(format!("encoding secrets: {e}")))?,
    );
    // The serialised struct holds key material too; wipe our copies.
    let SecretsFile {
        master_key,
        peppers: entries,
        ..
    } = file;
    drop(Zeroizing::new(master_key));
    for e in entries {
        drop(Zeroizing::new(e.key));
    }
    Ok(Zeroizing::new(format!("{SECRETS_HEADER}{}", body.as_str())))
}

/// Write `text` to a fresh 0600 temporary file beside `target`, synced to disk.
fn write_temp(target: &Path, text: &str) -> Result<PathBuf, StoreError> {
    // Unique per call, not just per process: two threads of one process creating the
    // same file at once must not share (and delete) each other's temporary file.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".tmp-{}-{n}", std::process::id()));
    let tmp = PathBuf::from(name);
    let _ = fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| StoreError::io(format!("creating {}", tmp.display()), e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| StoreError::io(format!("writing {}", tmp.display()), e))?;
    Ok(tmp)
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(format!("syncing {}", dir.display()), e))
}
