//! Issue 6: the load lab. A tiny scenario against the naive baseline in-process on port 0,
//! a stalled server (SIGSTOP) showing up in the open-loop p99, and the CLI's safety rails.

// Test helpers outside #[test] functions: a panic is the right failure here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use portcullis_demo::baseline::{Baseline, BaselineConfig};
use portcullis_lab::record::Outcome;
use portcullis_lab::{RunOptions, Scenario};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_portcullis"))
}

#[test]
fn issue_6_tiny_scenario_against_the_in_process_baseline() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let m = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = Baseline::start(
        l,
        m,
        BaselineConfig {
            workers: 4,
            reject_delay: Duration::from_millis(100),
            iterations: 1000,
            clients: (0..4).map(|i| (format!("c{i}"), format!("s{i}"))).collect(),
            ..BaselineConfig::default()
        },
    )
    .unwrap();
    let text = format!(
        r#"
name = "tiny"
[target]
url = "http://{addr}"
metrics = "http://{maddr}/metrics"
[driver]
kind = "oauth2"
client_auth = "client_secret_post"
[principals]
prefix = "c"
secret_prefix = "s"
count = 4
[run]
duration = "1500ms"
timeout = "2s"
[[group]]
name = "legit"
size = 2
think = "20ms"
sources = "127.0.0.20-127.0.0.21"
[[group]]
name = "bad"
credentials = "wrong_secret"
size = 1
model = "open"
rate = 10.0
connection = "per-request"
[[group]]
name = "strangers"
credentials = "unknown_principal"
size = 1
model = "open"
rate = 5.0
[[threshold]]
metric = "success_rate"
min = 1.0
"#,
        addr = b.addr(),
        maddr = b.metrics_addr()
    );
    let scn = Scenario::parse(&text, None).unwrap();
    let res = rt()
        .block_on(portcullis_lab::run_scenario(&scn, &RunOptions::default()))
        .unwrap();
    let rep = &res.repeats[0];
    let legit = &rep.groups[0];
    assert!(legit.outcomes[&Outcome::Success] >= 5, "{legit:?}");
    assert_eq!(
        legit.success_rate, 1.0,
        "every valid client got a verified token: {legit:?}"
    );
    let bad = &rep.groups[1];
    assert_eq!(bad.outcomes[&Outcome::Success], 0);
    assert!(bad.outcomes[&Outcome::AuthFailure] >= 10, "{bad:?}");
    assert!(rep.groups[2].outcomes[&Outcome::AuthFailure] >= 5);
    assert_eq!(rep.misdelivered, 0);
    assert_eq!(rep.breaches, 0);
    assert!(res.passed, "{:?}", res.failures);
    // The baseline's /metrics was scraped every second and counted the same attempts.
    assert!(
        rep.server.iter().filter(|s| s.scraped).count() >= 1,
        "{:?}",
        rep.server
    );
    b.shutdown();
}

/// Start `portcullis lab healthz` and return the child and its URL.
fn healthz_child() -> (std::process::Child, String) {
    let mut child = bin()
        .args(["lab", "healthz", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_string())
}

#[test]
fn issue_6_sigstop_stall_shows_in_open_loop_p99() {
    let (mut child, url) = healthz_child();
    let pid = child.id().to_string();
    let text = format!(
        r#"
name = "stall"
[target]
url = "{url}"
metrics = "off"
[driver]
kind = "http-get"
[run]
duration = "3s"
timeout = "10s"
[[group]]
name = "get"
size = 4
model = "open"
rate = 200.0
"#
    );
    let scn = Scenario::parse(&text, None).unwrap();
    let rt = rt();
    let run =
        rt.spawn(async move { portcullis_lab::run_scenario(&scn, &RunOptions::default()).await });
    // The fault itself: pause the server process for one second in the middle of the run.
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let paused = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let stall = paused.elapsed();
    let res = rt.block_on(run).unwrap().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let g = &res.repeats[0].groups[0];
    assert_eq!(g.success_rate, 1.0, "{g:?}");
    // About a third of the arrivals were intended during the stall and waited for it:
    // measured from their intended send times, the p99 is close to the whole stall.
    let stall_ms = stall.as_secs_f64() * 1000.0;
    assert!(
        g.p99_ms >= 0.8 * stall_ms,
        "p99 {} ms vs stall {stall_ms} ms",
        g.p99_ms
    );
    assert!(g.max_ms >= 0.9 * stall_ms, "max {} ms", g.max_ms);
    // Arrivals kept their schedule: roughly rate x duration were sent, not fewer.
    assert!(g.completed >= 550, "{}", g.completed);
    eprintln!(
        "stall {stall_ms:.0} ms -> open-loop p50 {:.2} ms, p99 {:.1} ms, max {:.1} ms",
        g.p50_ms, g.p99_ms, g.max_ms
    );
}

#[test]
fn issue_6_cli_lists_builtins_and_refuses_remote_targets() {
    let out = bin().args(["lab", "scenarios"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "brute-force-3x1s",
        "brute-force-2x5s",
        "connect-per-request",
        "overload-2x",
        "healthz-peak",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing from:\n{text}"
        );
    }
    let out = bin()
        .args([
            "lab",
            "run",
            "healthz-peak",
            "--target",
            "http://192.0.2.1:80",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--allow-target 192.0.2.1"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\ntarget = {}\ndriver = { kind = \"http-get\" }\nspeed = 3\n[[group]]\nname = \"g\"\nsize = 1\n").unwrap();
    let out = bin()
        .args(["lab", "run", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("speed"));
}

#[test]
fn issue_18_lab_run_reports_one_plain_line_per_run_when_not_a_terminal() {
    let (mut child, url) = healthz_child();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("peek.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"peek\"\n[target]\nurl = \"{url}\"\nmetrics = \"off\"\n[driver]\nkind = \"http-get\"\n\
             [run]\nduration = \"1s\"\ntimeout = \"5s\"\n[[group]]\nname = \"get\"\nsize = 1\nmodel = \"open\"\nrate = 20.0\n"
        ),
    )
    .unwrap();
    let out = bin()
        .args(["lab", "run"])
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !err.contains('\r'),
        "a live progress line went to a pipe: {err:?}"
    );
    let line = err
        .lines()
        .find(|l| l.contains("finished after"))
        .unwrap_or_else(|| panic!("no per-run line in {err:?}"));
    assert!(line.starts_with(&format!("peek on {url}")), "{line}");
    let ok: u64 = line
        .split("get: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"));
    assert!(ok >= 10, "{line}");
    assert!(line.contains(", 0 not"), "{line}");
}
