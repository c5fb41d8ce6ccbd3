//! [`Backend`]: an opened identity store of either kind with the secrets that go with it,
//! so `portcullis serve` and the CLI's `client`/`user`/`nas` commands work the same over
//! the embedded SQLite data directory and over a PostgreSQL database shared by several
//! instances.
//!
//! The pepper keys and the master key never enter either database. With SQLite they are
//! the data directory's `secrets.toml`; with PostgreSQL every instance is given the same
//! secrets file (its path is configured), as an operator distributes a Kubernetes secret.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use portcullis_hash::Peppers;

use crate::datadir::{DataDir, Secrets};
use crate::error::StoreError;
use crate::postgres::PgStore;
use crate::seal::MasterKey;
use crate::store::Store;

/// An opened store and its secrets.
pub struct Backend {
    /// The store every command and the server use.
    store: Arc<dyn Store>,
    /// Pepper keys (generated client secrets are HMACs under the current one).
    peppers: Peppers,
    /// Seals signing keys and NAS secrets kept in the database.
    master_key: MasterKey,
    /// What to close and how to name it.
    kind: Kind,
    /// Whether this open created the secrets (first use), so the CLI can say so.
    created: bool,
}

enum Kind {
    Sqlite(DataDir),
    Postgres {
        store: Arc<PgStore>,
        /// `postgres://host/db` without credentials, for messages.
        shown: String,
        secrets_file: PathBuf,
    },
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Backend {
    /// The embedded store in `dir` (created on first use, as [`DataDir::open`]).
    pub async fn sqlite(dir: &Path) -> Result<Backend, StoreError> {
        Self::from_data_dir(DataDir::open(dir).await?)
    }

    /// The embedded store in an existing `dir` ([`DataDir::open_existing`]).
    pub async fn sqlite_existing(dir: &Path) -> Result<Backend, StoreError> {
        Self::from_data_dir(DataDir::open_existing(dir).await?)
    }

    fn from_data_dir(data: DataDir) -> Result<Backend, StoreError> {
        Ok(Backend {
            store: data.store(),
            peppers: data.peppers(),
            master_key: data.master_key().clone(),
            created: data.created(),
            kind: Kind::Sqlite(data),
        })
    }

    /// PostgreSQL at `url` (schema migrated under an advisory lock, so instances starting
    /// together migrate once), with the secrets in `secrets_file` (created 0600 with a
    /// fresh pepper and master key if missing, its directory 0700 if missing).
    pub async fn postgres(
        url: &str,
        secrets_file: &Path,
        max_connections: u32,
    ) -> Result<Backend, StoreError> {
        if let Some(dir) = secrets_file.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| StoreError::io(format!("creating {}", dir.display()), e))?;
        }
        let existed = secrets_file.exists();
        let secrets = Secrets::load_or_create(secrets_file)?;
        let store = Arc::new(PgStore::connect(url, max_connections).await?);
        Ok(Backend {
            store: store.clone(),
            peppers: secrets.peppers,
            master_key: secrets.master_key,
            created: !existed,
            kind: Kind::Postgres {
                store,
                shown: without_credentials(url),
                secrets_file: secrets_file.to_path_buf(),
            },
        })
    }

    /// The store.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.store)
    }

    /// The pepper keys.
    pub fn peppers(&self) -> Peppers {
        self.peppers.clone()
    }

    /// The master key.
    pub fn master_key(&self) -> &MasterKey {
        &self.master_key
    }

    /// Whether this open created the secrets file.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The data directory when the store is the embedded SQLite one.
    pub fn data_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Sqlite(d) => Some(d.path()),
            Kind::Postgres { .. } => None,
        }
    }

    /// The secrets file.
    pub fn secrets_file(&self) -> PathBuf {
        match &self.kind {
            Kind::Sqlite(d) => d.path().join(crate::datadir::SECRETS_FILE),
            Kind::Postgres { secrets_file, .. } => secrets_file.clone(),
        }
    }

    /// Add a fresh pepper to the secrets file and make it current; returns its id.
    /// Running servers keep the peppers they loaded until restarted (with PostgreSQL,
    /// after the new file has been given to every instance).
    pub fn rotate_pepper(&mut self) -> Result<String, StoreError> {
        let id = match &mut self.kind {
            Kind::Sqlite(d) => d.rotate_pepper()?,
            Kind::Postgres { secrets_file, .. } => {
                let (id, peppers, master) = crate::datadir::rotate_pepper_in(secrets_file)?;
                self.peppers = peppers;
                self.master_key = master;
                id
            }
        };
        if let Kind::Sqlite(d) = &self.kind {
            self.peppers = d.peppers();
        }
        Ok(id)
    }

    /// One line for logs: which backend, where (never a password).
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Sqlite(d) => format!("SQLite in {}", d.path().display()),
            Kind::Postgres {
                shown,
                secrets_file,
                ..
            } => format!(
                "PostgreSQL at {shown}, secrets from {}",
                secrets_file.display()
            ),
        }
    }

    /// Close the database connections.
    pub async fn close(self) {
        match self.kind {
            Kind::Sqlite(d) => d.close().await,
            Kind::Postgres { store, .. } => store.close().await,
        }
    }
}

/// `scheme://host/db...` with any `user:password@` removed.
pub fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((_, host)) => format!("{scheme}://{host}"),
            None => url.to_string(),
        },
        None => "<unparsable url>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::without_credentials;

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(
            without_credentials("postgres://u:hunter2@db:5432/x?sslmode=require"),
            "postgres://db:5432/x?sslmode=require"
        );
        assert_eq!(without_credentials("postgres://db/x"), "postgres://db/x");
        assert_eq!(without_credentials("nonsense"), "<unparsable url>");
    }
}
