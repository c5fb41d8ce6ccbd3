//! Test support shared by this crate's tests and other crates' (feature `conformance`):
//! a private schema in the test PostgreSQL, the shared test Redis, and throwaway
//! `redis-server` processes for tests that stop or restart Redis (never the machine's
//! shared one, which other tests use concurrently).
// Test support: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sqlx::Connection;

/// The machine's Redis (scripts/services starts it; `PORTCULLIS_TEST_REDIS` overrides).
pub fn shared_redis_url() -> String {
    std::env::var("PORTCULLIS_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A private schema in the test PostgreSQL (`scripts/services` starts it; override with
/// `PORTCULLIS_TEST_POSTGRES`), dropped by [`PgSchema::drop_now`].
pub struct PgSchema {
    url: String,
    name: String,
}

impl PgSchema {
    /// Create a fresh schema.
    pub async fn new() -> PgSchema {
        let url = std::env::var("PORTCULLIS_TEST_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let mut tag = [0u8; 8];
        portcullis_hash::os_random(&mut tag).unwrap();
        let name = format!(
            "portcullis_store_{}",
            tag.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        let mut admin = sqlx::PgConnection::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("test PostgreSQL at {url} (run scripts/services): {e}"));
        sqlx::query(&format!("CREATE SCHEMA {name}"))
            .execute(&mut admin)
            .await
            .unwrap();
        PgSchema { url, name }
    }

    /// Connect options whose `search_path` is the schema.
    pub fn options(&self) -> sqlx::postgres::PgConnectOptions {
        self.url
            .parse::<sqlx::postgres::PgConnectOptions>()
            .unwrap()
            .options([("search_path", self.name.as_str())])
    }

    /// A `postgres://` URL whose connections use the schema (`options=-csearch_path=`),
    /// for code that takes a URL (the server's `[store] url`).
    pub fn url(&self) -> String {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}options=-csearch_path%3D{}", self.url, self.name)
    }

    /// Drop the schema and everything in it.
    pub async fn drop_now(self) {
        let mut admin = sqlx::PgConnection::connect(&self.url).await.unwrap();
        sqlx::query(&format!("DROP SCHEMA {} CASCADE", self.name))
            .execute(&mut admin)
            .await
            .unwrap();
    }
}

/// A `redis-server` of the test's own on a free port, nothing kept on disk.
pub struct OwnRedis {
    child: Child,
    port: u16,
}

impl OwnRedis {
    /// Start one on `port` and wait until it answers.
    pub fn start(port: u16) -> OwnRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/services installs it)");
        let r = OwnRedis { child, port };
        r.wait_ready();
        r
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Poll until it answers PING (an external process: there is nothing to wait on).
    fn wait_ready(&self) {
        let client = redis::Client::open(self.url()).unwrap();
        for _ in 0..200 {
            if let Ok(mut c) = client.get_connection()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server on port {} did not come up", self.port);
    }

    /// Stop it now (SIGKILL), as a crash would.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A PostgreSQL cluster of the test's own (initdb in a temp dir, pg_ctl on a free port),
/// for tests that stop and restart the database. Runs as the `postgres` user when the
/// test runs as root (PostgreSQL refuses root).
pub struct OwnPostgres {
    dir: tempfile::TempDir,
    port: u16,
}

impl OwnPostgres {
    /// initdb and start it; waits until it accepts connections (`pg_ctl -w`).
    pub fn start() -> OwnPostgres {
        let dir = tempfile::Builder::new()
            .prefix("portcullis-pg-")
            .tempdir()
            .unwrap();
        let me = OwnPostgres {
            dir,
            port: free_port(),
        };
        if is_root() {
            let ok = Command::new("chown")
                .arg("-R")
                .arg("postgres:postgres")
                .arg(me.dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown of the test cluster's directory");
        }
        let data = me.data();
        me.run(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        me.start_again();
        me
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let tool = pg_tool(tool);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&tool);
            c
        } else {
            Command::new(&tool)
        };
        let out = cmd.args(args).stdin(Stdio::null()).output().unwrap();
        assert!(
            out.status.success(),
            "{} {args:?}: {}{}",
            tool.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Start (again) on the same port; returns when it accepts connections.
    pub fn start_again(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-o", &opts, "-l", &log, "-w", "start"],
        );
    }

    /// Stop it the way a crash would (`-m immediate`: no shutdown checkpoint; restart
    /// recovers from the WAL).
    pub fn crash(&self) {
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }

    /// Its URL (database `postgres`).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let tool = pg_tool("pg_ctl");
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&tool);
            c
        } else {
            Command::new(&tool)
        };
        let _ = cmd
            .args(["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A PostgreSQL server tool: from PATH, else from Debian's versioned directory
/// (`/usr/lib/postgresql/<version>/bin`, where the `postgresql` package puts it).
fn pg_tool(name: &str) -> std::path::PathBuf {
    let on_path = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if let Some(p) = on_path {
        return p;
    }
    let mut versions: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin").join(name))
        .filter(|p| p.is_file())
        .collect();
    versions.sort();
    versions
        .pop()
        .unwrap_or_else(|| panic!("{name} not found (scripts/services installs PostgreSQL)"))
}

fn is_root() -> bool {
    // The effective uid, as the kernel reports it for this process.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
