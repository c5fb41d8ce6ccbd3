//! Test support: throwaway slapd instances from scripts/slapd, directory configurations
//! pointing at them, and a relay that holds binds until the test lets them through.
// Test support: a failed set-up step is a test failure, so it panics with the reason.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use portcullis_upstream::{DirectoryConfig, SearchConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};

/// PBKDF2 iterations of the test users: the module's real format, cheap enough for tests.
const ITERATIONS: &str = "2000";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slapd")
}

/// One slapd started by scripts/slapd in a temporary directory; stopped on drop.
pub struct Slapd {
    dir: tempfile::TempDir,
    env: HashMap<String, String>,
}

fn run(args: &[&str]) -> String {
    let out = Command::new(script())
        .args(args)
        .output()
        .expect("run scripts/slapd");
    assert!(
        out.status.success(),
        "scripts/slapd {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Slapd {
    /// A new instance with 10 users (user1..user10, passwords password1..password10).
    pub fn start(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().to_str().expect("utf-8 temp path").to_owned();
        let mut args = vec![
            "start",
            &path,
            "--users",
            "10",
            "--pbkdf2-iterations",
            ITERATIONS,
        ];
        args.extend_from_slice(extra);
        let out = run(&args);
        let env = out
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Self { dir, env }
    }

    /// A value scripts/slapd printed.
    pub fn get(&self, key: &str) -> &str {
        self.env
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no {key} in env"))
    }

    fn path(&self) -> &str {
        self.dir.path().to_str().expect("utf-8 temp path")
    }

    /// Stops slapd (the data stays for `restart`).
    pub fn stop(&self) {
        run(&["stop", self.path()]);
    }

    /// Starts the same instance again (same port, users and CA).
    pub fn restart(&self) {
        run(&["restart", self.path()]);
    }

    /// Runs an ldap-utils command as the administrator over StartTLS with this CA.
    pub fn ldap_tool(&self, tool: &str, args: &[&str], stdin: &str) {
        use std::io::Write;
        let mut child = Command::new(tool)
            .args([
                "-x",
                "-ZZ",
                "-H",
                self.get("ldap_url"),
                "-D",
                self.get("admin_dn"),
                "-w",
            ])
            .arg(self.get("admin_password"))
            .args(args)
            .env("LDAPTLS_CACERT", self.get("ca_file"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run ldap tool");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write ldif");
        let out = child.wait_with_output().expect("ldap tool");
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The people branch.
    pub fn people(&self) -> String {
        format!("ou=people,{}", self.get("base"))
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = Command::new(script()).args(["stop", self.path()]).output();
    }
}

/// A DN-template directory over `urls`, trusting `slapd`'s CA.
pub fn dn_template(slapd: &Slapd, urls: &[String]) -> DirectoryConfig {
    let text = format!(
        r#"
        name = "corp"
        servers = {urls:?}
        ca_file = "{ca}"
        bind_dn_template = "uid={{user}},{people}"
        "#,
        ca = slapd.get("ca_file"),
        people = slapd.people(),
    );
    toml::from_str(&text).expect("config")
}

/// A search-then-bind directory over `urls` with the instance's service account.
pub fn search(slapd: &Slapd, urls: &[String]) -> DirectoryConfig {
    let mut cfg = dn_template(slapd, urls);
    cfg.bind_dn_template = None;
    cfg.search = Some(SearchConfig {
        base: slapd.get("base").to_owned(),
        filter: "(&(objectClass=inetOrgPerson)(uid={user}))".into(),
        service_dn: slapd.get("service_dn").to_owned(),
        service_password: Some(slapd.get("service_password").to_owned()),
        service_password_file: None,
    });
    cfg
}

/// A TCP relay in front of a server that announces each request chunk from a client (the
/// `uid=...` it names) and forwards it only when the test releases one permit.
pub struct Gate {
    /// The relay's address.
    pub url: String,
    /// The `uid=` value of each held request, in arrival order.
    pub arrivals: mpsc::UnboundedReceiver<String>,
    /// One permit forwards one request.
    pub release: Arc<Semaphore>,
}

impl Gate {
    /// A relay to `target` (host:port).
    pub async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let url = format!("ldap://{}", listener.local_addr().expect("addr"));
        let (tx, arrivals) = mpsc::unbounded_channel();
        let release = Arc::new(Semaphore::new(0));
        let gate = Arc::clone(&release);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&target).await else {
                    continue;
                };
                tokio::spawn(relay(client, server, tx.clone(), Arc::clone(&gate)));
            }
        });
        Self {
            url,
            arrivals,
            release,
        }
    }
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    arrivals: mpsc::UnboundedSender<String>,
    gate: Arc<Semaphore>,
) {
    let (mut client_r, mut client_w) = client.into_split();
    let (mut server_r, mut server_w) = server.into_split();
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_r, &mut client_w).await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match client_r.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = buf.get(..n).unwrap_or_default();
        let _ = arrivals.send(uid_in(chunk));
        match gate.acquire().await {
            Ok(permit) => permit.forget(),
            Err(_) => return,
        }
        if server_w.write_all(chunk).await.is_err() {
            return;
        }
    }
}

fn uid_in(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.find("uid=")
        .map(|i| {
            text[i + 4..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect()
        })
        .unwrap_or_default()
}
