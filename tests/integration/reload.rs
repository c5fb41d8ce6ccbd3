//! Issue 15: SIGHUP reloads without a restart. A pepper key added with `client
//! rotate-pepper` reaches the running server, so a client whose secret was hashed under it
//! can log in; a broken configuration file is refused with one clear line and the server
//! keeps serving with the configuration it had; a good one is applied.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::process_support::{cli as run_cli, post, serve};

fn cli(data: &std::path::Path, args: &[&str]) -> String {
    run_cli(data, args, "")
}

fn token_status(addr: std::net::SocketAddr, id: &str, secret: &str) -> u16 {
    post(
        addr,
        "/oauth2/token",
        (id, secret),
        "grant_type=client_credentials",
    )
    .unwrap()
    .0
}

/// Wait (bounded) until the server's log has a line containing `needle`.
pub fn wait_for_log(log: &Mutex<Vec<String>>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(l) = log.lock().unwrap().iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no log line with {needle:?}: {:#?}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn hup(pid: u32) {
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn issue_15_sighup_reloads_peppers_and_refuses_a_bad_config() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("portcullis.toml");
    std::fs::write(&config, "[audit]\nper_source_limit = 20\n").unwrap();
    let old_secret = cli(&data, &["client", "add", "before"]);
    let srv = serve(&config, &data);
    let (mut child, addr, log) = (srv.child, srv.addr, srv.log);
    assert_eq!(token_status(addr, "before", &old_secret), 200);

    // A new pepper key, and a client hashed under it: unknown to the running server.
    cli(&data, &["client", "rotate-pepper"]);
    let new_secret = cli(&data, &["client", "add", "after"]);
    assert_eq!(
        token_status(addr, "after", &new_secret),
        401,
        "before SIGHUP"
    );
    hup(child.id());
    wait_for_log(&log, "secrets file reloaded: 2 pepper keys, current p2");
    assert_eq!(
        token_status(addr, "after", &new_secret),
        200,
        "after SIGHUP"
    );
    assert_eq!(
        token_status(addr, "before", &old_secret),
        200,
        "old key kept"
    );

    // A broken file is refused; the server goes on.
    std::fs::write(&config, "[audit]\nper_source_limit = \"many\"\n").unwrap();
    hup(child.id());
    let refused = wait_for_log(&log, "configuration reload refused");
    assert!(refused.contains("per_source_limit"), "{refused}");
    assert_eq!(token_status(addr, "before", &old_secret), 200);

    // A good one is applied, and what needs a restart is named.
    std::fs::write(
        &config,
        "[audit]\nper_source_limit = 5\n[server]\nbody_limit = 8192\n",
    )
    .unwrap();
    hup(child.id());
    let applied = wait_for_log(&log, "configuration reloaded: audit at most 5 failures");
    assert!(applied.contains("per 60s"), "{applied}");
    let restart = wait_for_log(&log, "applied only on restart");
    assert!(restart.contains("server limits"), "{restart}");
    assert_eq!(token_status(addr, "before", &old_secret), 200);

    assert!(
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    assert!(child.wait().unwrap().success());
}
