//! Helpers for the tests that run the real `portcullis` binary as separate processes (CLI
//! commands and `portcullis serve`): the audit, crash and reload tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_portcullis");

/// Run a CLI command on the data directory `data`, feeding `stdin`; `on_spawn` gets its
/// pid (so a test can kill it mid-write). Its trimmed stdout if it exited 0.
pub fn try_cli(data: &Path, args: &[&str], stdin: &str, on_spawn: &dyn Fn(u32)) -> Option<String> {
    let mut child = Command::new(BIN)
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    on_spawn(child.id());
    // A killed child may not read its input: a broken pipe is its failure, not ours.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// [`try_cli`] that must succeed.
pub fn cli(data: &Path, args: &[&str], stdin: &str) -> String {
    try_cli(data, args, stdin, &|_| {}).unwrap_or_else(|| panic!("portcullis {args:?} failed"))
}

/// A running `portcullis serve` and everything it logged so far.
pub struct Serve {
    /// The process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its stderr, line by line (drained by a thread, so it never blocks on a full pipe).
    pub log: Arc<Mutex<Vec<String>>>,
}

/// Start `portcullis serve --config CONFIG --data-dir DATA` on an ephemeral port and wait
/// (bounded) until it listens. Fails the test if it exits or logs an error first.
pub fn serve(config: &Path, data: &Path) -> Serve {
    let mut child = Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let log = Arc::clone(&log);
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("ERROR") {
                    let _ = tx.send(Err(line.clone()));
                } else if let Some(Ok(addr)) = line
                    .split("listening on ")
                    .nth(1)
                    .and_then(|rest| rest.split(';').next())
                    .map(str::parse::<SocketAddr>)
                {
                    // The HTTP listener's line (RADIUS lines name "udp ADDR" instead).
                    let _ = tx.send(Ok(addr));
                }
                log.lock().unwrap().push(line);
            }
        });
    }
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(addr)) => Serve { child, addr, log },
        Ok(Err(line)) => panic!("serve logged an error while starting: {line}"),
        Err(_) => panic!("serve did not start: {:?}", child.try_wait()),
    }
}

/// One POST with HTTP Basic client credentials on its own connection: (status, head,
/// body), or `None` if the server is gone.
pub fn post(
    addr: SocketAddr,
    path: &str,
    basic: (&str, &str),
    body: &str,
) -> Option<(u16, String, String)> {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", basic.0, basic.1));
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Basic {auth}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let status = raw.get(9..12)?.parse().ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    Some((status, head.to_owned(), body.to_owned()))
}

/// The address a spawned `portcullis serve` (stderr piped) logs as "listening on ADDR",
/// waited for (bounded); its stderr is drained afterwards so it never blocks.
pub fn listening_addr(child: &mut Child) -> SocketAddr {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let _ = tx.send(rest.split(';').next().unwrap().parse::<SocketAddr>());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("serve did not start")
        .unwrap()
}

/// Where `srv` opened its admin listener (`[admin] listen` on port 0), from its log.
pub fn admin_addr(srv: &Serve) -> SocketAddr {
    srv.log
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| {
            l.split("admin API on ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .expect("serve logs the admin listener's address")
}
