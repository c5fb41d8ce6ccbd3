//! Issue 15: crash consistency. `portcullis serve` and the CLI are killed with SIGKILL in
//! the middle of writes, again and again, and restarted: every write that was
//! acknowledged (CLI exit 0, HTTP 200) must be there afterwards, the database must pass
//! SQLite's integrity check, the secrets file and the signing keys must stay readable, and
//! the server must start cleanly every time.
//!
//! Writes raced against the kill: `client add`, `client rotate-secret` and `client
//! rotate-pepper` (CLI; the last rewrites the secrets file), `user import` of hashes below
//! the policy (CLI), token revocation (HTTP) and rehash-on-login
//! (a password grant for an imported user: its hash is upgraded after the answer), and
//! RADIUS accounting records (issue 28, `crash_acct.rs`: a storm whose acknowledged
//! records must all be there, each once). Kill points: `PORTCULLIS_KILL_POINTS` (default
//! 12; `scripts/crash` runs 120).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portcullis_hash::Policy;
use portcullis_hash::pbkdf2::Prf;

use crate::process_support::{serve, try_cli};

/// What was acknowledged, so must survive.
#[derive(Default)]
struct Ledger {
    /// Client id and its latest acknowledged secret.
    clients: Vec<(String, String)>,
    /// Users and passwords (imported with hashes below the policy).
    users: Vec<(String, String)>,
    /// Tokens whose revocation was answered 200.
    revoked: Vec<String>,
    /// Users whose login (and so possibly their rehash) was answered 200.
    logged_in: Vec<String>,
}

/// CLI processes running now, so the killer can kill them mid-write too.
type Running = Arc<Mutex<Vec<u32>>>;

fn cli(running: &Running, data: &Path, args: &[&str], stdin: &str) -> Option<String> {
    let spawned = std::cell::Cell::new(0);
    let out = try_cli(data, args, stdin, &|pid| {
        spawned.set(pid);
        running.lock().unwrap().push(pid);
    });
    // Finished (or killed): no longer to be killed.
    let pid = spawned.get();
    running.lock().unwrap().retain(|p| *p != pid);
    out
}

/// Start the server (it must start cleanly, every time): the process, its HTTP address
/// and its accounting address.
fn start(data: &Path, config: &Path) -> (Child, SocketAddr, SocketAddr) {
    let srv = serve(config, data);
    let acct = crate::crash_acct::acct_addr(&srv);
    (srv.child, srv.addr, acct)
}

/// One request on its own connection; `None` if the server is gone.
fn http(addr: SocketAddr, path: &str, basic: (&str, &str), body: &str) -> Option<(u16, String)> {
    crate::process_support::post(addr, path, basic, body).map(|(st, _, b)| (st, b))
}

fn token_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v["access_token"].as_str().unwrap().to_owned()
}

fn kill(pid: u32) {
    // Quietly: the process may have finished on its own meanwhile.
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// SQLite's own check of the database file, with no server or CLI running.
fn integrity_ok(db: &Path) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use sqlx::Connection;
        let url = format!("sqlite://{}?mode=ro", db.display());
        let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let (r,): (String,) = sqlx::query_as("PRAGMA integrity_check")
            .fetch_one(&mut c)
            .await
            .unwrap();
        r
    })
}

/// A small deterministic generator (the kill points must not depend on the clock).
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn issue_15_sigkill_mid_write_loses_no_acknowledged_write() {
    let _exclusive = crate::server_support::exclusive();
    let kill_points: usize = std::env::var("PORTCULLIS_KILL_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let dir = tempfile::tempdir().unwrap();
    let data: PathBuf = dir.path().join("data");
    let config = dir.path().join("portcullis.toml");
    // Imported hashes use 1,000 iterations; the policy 2,000: every login rehashes.
    std::fs::write(
        &config,
        // One issuer across restarts (each listens on a new port).
        "[server]\nissuer = \"http://crash.test\"\n[policy]\nalgorithm = \"pbkdf2-sha256\"\n\
         iterations = 2000\n[audit]\ndestination = \"off\"\n\
         [radius]\naccounting_listen = [\"127.0.0.1:0\"]\n",
    )
    .unwrap();
    let running: Running = Arc::default();
    let app = cli(
        &running,
        &data,
        &[
            "client",
            "add",
            "app",
            "--grant",
            "client_credentials",
            "--grant",
            "password",
        ],
        "",
    )
    .unwrap();
    cli(
        &running,
        &data,
        &[
            "nas",
            "add",
            "lab",
            "--address",
            "127.0.0.0/8",
            "--secret-stdin",
        ],
        &format!("{}\n", crate::crash_acct::SECRET),
    )
    .unwrap();
    let acked = crate::crash_acct::Acked::default();
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let weak = Policy::Pbkdf2 {
        prf: Prf::Sha256,
        iterations: 1000,
    };
    // A token issued before any kill: the signing key must survive them all.
    let (mut server, mut addr, mut acct) = start(&data, &config);
    let cc = "grant_type=client_credentials";
    let kept = token_of(&http(addr, "/oauth2/token", ("app", &app), cc).unwrap().1);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..kill_points {
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        // Clients added, and rotated, through the CLI.
        {
            let (stop, ledger, running, data) =
                (stop.clone(), ledger.clone(), running.clone(), data.clone());
            writers.push(std::thread::spawn(move || {
                let mut j = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Now and then a new pepper key: the secrets file is rewritten
                    // (atomically), and the clients added after it are hashed under it.
                    if j % 4 == 3 {
                        let _ = cli(&running, &data, &["client", "rotate-pepper"], "");
                    }
                    let id = format!("c{round}-{j}");
                    if let Some(secret) = cli(&running, &data, &["client", "add", &id], "") {
                        ledger.lock().unwrap().clients.push((id.clone(), secret));
                        if let Some(new) =
                            cli(&running, &data, &["client", "rotate-secret", &id], "")
                        {
                            let mut l = ledger.lock().unwrap();
                            if let Some(c) = l.clients.iter_mut().find(|c| c.0 == id) {
                                c.1 = new;
                            }
                        }
                    }
                    j += 1;
                }
            }));
        }
        // Users imported through the CLI.
        {
            let (stop, ledger, running, data) =
                (stop.clone(), ledger.clone(), running.clone(), data.clone());
            let file = dir.path().join(format!("import-{round}.tsv"));
            let weak = weak.clone();
            writers.push(std::thread::spawn(move || {
                let mut j = 0;
                while !stop.load(Ordering::Relaxed) {
                    let users: Vec<(String, String)> = (0..3)
                        .map(|k| (format!("u{round}-{j}-{k}"), format!("pw-{round}-{j}-{k}")))
                        .collect();
                    let text: String = users
                        .iter()
                        .map(|(u, p)| format!("{u}\t{}\n", weak.hash(p.as_bytes()).unwrap()))
                        .collect();
                    std::fs::write(&file, text).unwrap();
                    let f = file.to_str().unwrap().to_owned();
                    if cli(&running, &data, &["user", "import", &f], "").is_some() {
                        ledger.lock().unwrap().users.extend(users);
                    }
                    j += 1;
                }
            }));
        }
        // Revocations and rehash-on-login over HTTP.
        {
            let (stop, ledger, app) = (stop.clone(), ledger.clone(), app.clone());
            writers.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some((200, body)) = http(addr, "/oauth2/token", ("app", &app), cc) else {
                        break;
                    };
                    let token = token_of(&body);
                    let revoke = format!("token={token}");
                    if let Some((200, _)) = http(addr, "/oauth2/revoke", ("app", &app), &revoke) {
                        ledger.lock().unwrap().revoked.push(token);
                    }
                    let user = ledger.lock().unwrap().users.last().cloned();
                    if let Some((u, p)) = user {
                        let body = format!("grant_type=password&username={u}&password={p}");
                        if let Some((200, _)) = http(addr, "/oauth2/token", ("app", &app), &body) {
                            ledger.lock().unwrap().logged_in.push(u);
                        }
                    }
                }
            }));
        }
        // An accounting storm from a NAS noting what was acknowledged.
        {
            let (stop, acked) = (stop.clone(), acked.clone());
            writers.push(std::thread::spawn(move || {
                crate::crash_acct::storm(acct, round, stop, acked);
            }));
        }
        // The kill point.
        std::thread::sleep(Duration::from_millis(50 + next(&mut seed) % 400));
        kill(server.id());
        for pid in running.lock().unwrap().drain(..) {
            kill(pid);
        }
        stop.store(true, Ordering::Relaxed);
        let _ = server.wait();
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(
            integrity_ok(&data.join("portcullis.db")),
            "ok",
            "round {round}"
        );
        (server, addr, acct) = start(&data, &config);
    }
    kill(server.id());
    let _ = server.wait();

    // Everything acknowledged is there.
    let (acct_acked, acct_lost) = crate::crash_acct::check(&data, &acked);
    let (mut server, addr, _) = start(&data, &config);
    let l = ledger.lock().unwrap();
    let mut lost = acct_lost;
    for (id, secret) in &l.clients {
        if !matches!(
            http(addr, "/oauth2/token", (id, secret), cc),
            Some((200, _))
        ) {
            lost.push(format!("client {id}"));
        }
    }
    for (u, p) in &l.users {
        let body = format!("grant_type=password&username={u}&password={p}");
        if !matches!(
            http(addr, "/oauth2/token", ("app", &app), &body),
            Some((200, _))
        ) {
            lost.push(format!("user {u}"));
        }
    }
    for t in &l.revoked {
        let (st, body) = http(
            addr,
            "/oauth2/introspect",
            ("app", &app),
            &format!("token={t}"),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        if st != 200 || v["active"] != false {
            lost.push(format!("revocation of a token ({st} {body})"));
        }
    }
    let (_, body) = http(
        addr,
        "/oauth2/introspect",
        ("app", &app),
        &format!("token={kept}"),
    )
    .unwrap();
    assert!(
        body.contains("\"active\":true"),
        "the signing key did not survive: {body}"
    );
    kill(server.id());
    let _ = server.wait();
    let acknowledged = l.clients.len() + l.users.len() + l.revoked.len();
    eprintln!(
        "issue 15: {kill_points} kill points, {acknowledged} acknowledged writes ({} clients, {} users, {} revocations; {} logins with rehash; {acct_acked} accounting records), {} lost",
        l.clients.len(),
        l.users.len(),
        l.revoked.len(),
        l.logged_in.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "lost: {lost:?}");
    assert!(l.clients.len() >= kill_points && !l.users.is_empty() && !l.revoked.is_empty());
    assert!(acct_acked > 0, "no accounting record was acknowledged");
}
