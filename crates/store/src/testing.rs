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
    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

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

/// Commands a Redis has executed since start, from `INFO commandstats` (the `INFO` calls
/// that read it excluded), to count what a workload costs it.
pub fn redis_commands(port: u16) -> u64 {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut c)
        .unwrap();
    // cmdstat_evalsha:calls=12,usec=...
    info.lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
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

/// A throwaway Redis Cluster (3 primaries, 3 replicas) and Sentinel group of the test's
/// own, started by `scripts/redis-cluster` in a temporary directory and killed on drop.
pub struct OwnCluster {
    dir: tempfile::TempDir,
    /// The cluster's nodes (the first three started as primaries).
    pub cluster: Vec<u16>,
    /// The Sentinels (empty when started without).
    pub sentinels: Vec<u16>,
    /// The name the Sentinels monitor.
    pub sentinel_master: String,
    /// The Sentinel group's first primary.
    pub sentinel_primary: u16,
    /// With ACL users (`start_sentinel_acl`): the Sentinels' user and password.
    pub sentinel_login: Option<(String, String)>,
    /// With ACL users: the data nodes' user and password.
    pub data_login: Option<(String, String)>,
}

impl OwnCluster {
    fn script() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/redis-cluster")
    }

    /// Start a cluster, and a Sentinel group when `sentinel`; returns once both are ready.
    pub fn start(sentinel: bool) -> OwnCluster {
        Self::start_with(if sentinel { &[] } else { &["--no-sentinel"] })
    }

    /// Only a Sentinel group whose Sentinels and data nodes each know only an ACL user of
    /// their own (`scripts/redis-cluster --acl`; issue 41).
    pub fn start_sentinel_acl() -> OwnCluster {
        Self::start_with(&["--no-cluster", "--acl"])
    }

    fn start_with(flags: &[&str]) -> OwnCluster {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("python3");
        cmd.arg(Self::script())
            .args(["start", "--dir"])
            .arg(dir.path())
            .args(flags);
        let out = cmd
            .stderr(Stdio::inherit())
            .output()
            .expect("python3 scripts/redis-cluster");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "scripts/redis-cluster start: {text}");
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or("")
                .to_owned()
        };
        let ports = |name: &str| -> Vec<u16> {
            field(name)
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect()
        };
        let login = |user: &str, password: &str| {
            Some((field(user), field(password))).filter(|(u, _)| !u.is_empty())
        };
        OwnCluster {
            sentinel_login: login("sentinel_user", "sentinel_password"),
            data_login: login("data_user", "data_password"),
            cluster: ports("cluster"),
            sentinels: ports("sentinels"),
            sentinel_master: field("sentinel_master"),
            sentinel_primary: field("sentinel_primary").parse().unwrap_or(0),
            dir,
        }
    }

    /// `redis://127.0.0.1:PORT` of each cluster node.
    pub fn cluster_urls(&self) -> Vec<String> {
        self.cluster
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    /// `redis://127.0.0.1:PORT` of each Sentinel (with ACL users: logged in as `login`).
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.sentinel_urls_as(self.sentinel_login.as_ref())
    }

    /// `redis://[user:password@]127.0.0.1:PORT` of each Sentinel.
    pub fn sentinel_urls_as(&self, login: Option<&(String, String)>) -> Vec<String> {
        let who = login.map_or_else(String::new, |(u, p)| format!("{u}:{p}@"));
        self.sentinels
            .iter()
            .map(|p| format!("redis://{who}127.0.0.1:{p}"))
            .collect()
    }

    /// The cluster's current primaries (`ROLE` of each live node).
    pub fn primaries(&self) -> Vec<u16> {
        self.cluster
            .iter()
            .copied()
            .filter(|p| {
                redis::Client::open(format!("redis://127.0.0.1:{p}"))
                    .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(300)))
                    .and_then(|mut c| redis::cmd("ROLE").query::<redis::Value>(&mut c))
                    .is_ok_and(|v| match v {
                        redis::Value::Array(a) => {
                            matches!(a.first(), Some(redis::Value::BulkString(r)) if r == b"master")
                        }
                        _ => false,
                    })
            })
            .collect()
    }

    /// `DBSIZE` of the node on `port`.
    pub fn dbsize(&self, port: u16) -> i64 {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}"))
            .unwrap()
            .get_connection()
            .unwrap();
        redis::cmd("DBSIZE").query(&mut c).unwrap()
    }

    /// The port of the primary the Sentinels currently name, if they answer.
    pub fn sentinel_primary_now(&self) -> Option<u16> {
        let url = format!("redis://127.0.0.1:{}", self.sentinels.first()?);
        let mut c = redis::Client::open(url).ok()?.get_connection().ok()?;
        let (_, port): (String, u16) = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(&self.sentinel_master)
            .query(&mut c)
            .ok()?;
        Some(port)
    }

    /// Kill the server on `port` (SIGKILL through `redis-cli DEBUG SEGFAULT` would log a
    /// crash report; SHUTDOWN NOSAVE is a clean, immediate stop).
    pub fn kill(&self, port: u16) {
        let _ = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "SHUTDOWN", "NOSAVE"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = Command::new("python3")
            .arg(Self::script())
            .args(["stop", "--dir"])
            .arg(self.dir.path())
            .status();
    }
}
