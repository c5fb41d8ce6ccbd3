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
