//! Shared helpers of the server tests: an in-process server on 127.0.0.1:0 over a temp
//! data directory, provisioning of clients and users through the store, and a minimal
//! HTTP/1.1 client over raw TCP (so tests can also send bytes no HTTP library would).
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use portcullis_hash::Policy;
use portcullis_hash::pbkdf2::Prf;
use portcullis_hash::pepper::PepperedHmac;
use portcullis_server::{Assembly, Config, Server};
use portcullis_store::{ClientRecord, DataDir, Grant, Store, UserRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Cheap user hashes so tests stay fast; the policy equals it, so no rehash kicks in.
pub fn test_policy() -> Policy {
    Policy::Pbkdf2 {
        prf: Prf::Sha256,
        iterations: 10_000,
    }
}

/// A running server and what is needed to provision it.
pub struct TestServer {
    /// The server.
    pub server: Server,
    /// Its data directory (kept open for provisioning; removed on drop).
    pub data: DataDir,
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
}

/// The default test configuration over `dir`.
pub fn test_config(dir: &std::path::Path) -> Config {
    Config {
        data_dir: dir.to_path_buf(),
        policy: test_policy(),
        ..Config::default()
    }
}

/// Start a server with the default test configuration.
pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

/// Start a server, letting the test adjust the configuration first.
pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    start_in(dir, tweak).await
}

/// Start a server over an existing directory.
pub async fn start_in(dir: tempfile::TempDir, tweak: impl FnOnce(&mut Config)) -> TestServer {
    let mut config = test_config(dir.path());
    tweak(&mut config);
    let data = DataDir::open(dir.path()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let radius = portcullis_server::radius::bind(&config.radius).unwrap();
    let accounting = portcullis_server::radius::acct::bind(&config.radius).unwrap();
    let radsec = portcullis_server::radius::radsec::bind(&config.radius).unwrap();
    let admin = portcullis_server::admin::bind(&config.admin).await.unwrap();
    let ldap = portcullis_server::ldap::bind(&config.ldap).await.unwrap();
    let app = Assembly::from_data_dir(config, &data, listener.local_addr().unwrap())
        .await
        .unwrap();
    let server = Server::launch(
        portcullis_server::Listeners {
            http: listener,
            radius,
            accounting,
            radsec,
            admin,
            ldap,
        },
        app,
    )
    .await
    .unwrap();
    TestServer { server, data, dir }
}

impl TestServer {
    /// The issuer / base URL.
    pub fn base(&self) -> String {
        self.server.issuer().to_owned()
    }

    /// The store.
    pub fn store(&self) -> Arc<dyn Store> {
        self.data.store()
    }

    /// Create a client with a server-generated (peppered) secret; returns the secret.
    pub async fn add_client(&self, id: &str, grants: &[Grant], scopes: &[&str]) -> String {
        let secret = portcullis_store::generate_client_secret().unwrap();
        let peppers = self.data.peppers();
        let hash = PepperedHmac::create(peppers.current().unwrap(), secret.as_bytes());
        self.store()
            .put_client(&ClientRecord {
                id: id.into(),
                auth: portcullis_store::ClientAuth::Secret,
                secret_hashes: vec![hash],
                grants: grants.to_vec(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
                token_lifetime: 3600,
                created_at: 0,
            })
            .await
            .unwrap();
        secret.to_string()
    }

    /// Create a user with a PBKDF2 password hash.
    pub async fn add_user(&self, username: &str, password: &str) {
        self.store()
            .put_user(
                &UserRecord::new(
                    username,
                    test_policy().hash(password.as_bytes()).unwrap(),
                    0,
                )
                .unwrap(),
            )
            .await
            .unwrap();
    }

    /// Send raw bytes on a fresh connection, read the answer to EOF.
    pub async fn raw(&self, request: &[u8]) -> Answer {
        raw(self.server.local_addr(), request).await
    }

    /// POST a form body, optionally with HTTP Basic client credentials (urlencoded per
    /// RFC 6749 2.3.1).
    pub async fn post(&self, path: &str, basic: Option<(&str, &str)>, body: &str) -> Answer {
        self.raw(&post_bytes(path, basic, body)).await
    }

    /// GET a path.
    pub async fn get(&self, path: &str) -> Answer {
        let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        self.raw(req.as_bytes()).await
    }
}

/// The bytes of a form POST with `Connection: close`.
pub fn post_bytes(path: &str, basic: Option<(&str, &str)>, body: &str) -> Vec<u8> {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some((id, secret)) = basic {
        req.push_str(&format!("Authorization: {}\r\n", basic_header(id, secret)));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req.into_bytes()
}

/// `Basic base64(urlencode(id):urlencode(secret))`.
pub fn basic_header(id: &str, secret: &str) -> String {
    use base64::Engine;
    let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", enc(id), enc(secret)))
    )
}

/// Form-encode pairs (independent encoder: the `form_urlencoded` crate).
pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// A parsed HTTP answer.
#[derive(Debug)]
pub struct Answer {
    /// Status code (0 if the server closed without answering).
    pub status: u16,
    /// Header lines, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Answer {
    /// First header value named `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// The OAuth `error` code of the body.
    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or("").to_owned()
    }
}

/// Send `request` to `addr` and read until the server closes.
pub async fn raw(addr: std::net::SocketAddr, request: &[u8]) -> Answer {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // The server may answer and close before reading everything (e.g. a huge body).
    let _ = s.write_all(request).await;
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    parse_answer(&buf)
}

/// Parse one HTTP/1.1 response (Content-Length or read-to-EOF framing).
pub fn parse_answer(buf: &[u8]) -> Answer {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Answer {
            status: 0,
            headers: Vec::new(),
            body: buf.to_vec(),
        };
    };
    let head = String::from_utf8_lossy(&buf[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = buf[end + 4..].to_vec();
    if let Some(len) = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        body.truncate(len);
    }
    Answer {
        status,
        headers,
        body,
    }
}

/// Decode the JSON of a JWT segment (base64url without padding).
pub fn jwt_part(token: &str, i: usize) -> serde_json::Value {
    use base64::Engine;
    let seg = token.split('.').nth(i).unwrap();
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(seg)
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

/// Held by the timing-sensitive tests (issue 16's latency distributions) and by the tests
/// that load the machine hardest (crash, hostile connections, a browser), so that these
/// never run at the same time: a statistical timing test next to a process-spawning
/// flood measures the flood. (A flag and a condition variable rather than a mutex guard,
/// so async tests may hold it across their awaits.)
pub struct Exclusive(());

static BUSY: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
static FREE: std::sync::Condvar = std::sync::Condvar::new();

/// Wait until no other exclusive test runs, then hold the machine until dropped.
pub fn exclusive() -> Exclusive {
    let mut busy = BUSY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    while *busy {
        busy = FREE
            .wait(busy)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    *busy = true;
    Exclusive(())
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        *BUSY
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = false;
        FREE.notify_one();
    }
}
