//! Issue 18: one audit event per authentication attempt, as JSON lines, from a real
//! `portcullis serve`; the request id in the event is the one in the response; and none of
//! the secrets used appear anywhere in the logs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::process_support::{cli, post, serve};

/// One token request on its own connection: (status, X-Request-Id, body).
fn token(addr: std::net::SocketAddr, id: &str, secret: &str, body: &str) -> (u16, String, String) {
    let (status, head, body) = post(addr, "/oauth2/token", (id, secret), body).unwrap();
    let rid = head
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id: "))
        .unwrap_or_else(|| panic!("no x-request-id in {head}"))
        .to_owned();
    (status, rid, body)
}

#[test]
fn issue_18_one_audit_event_per_attempt_and_no_secret_in_any_log() {
    let _exclusive = crate::server_support::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let svc_secret = "audit-Right-secret-7f3a9c";
    let alice_password = "audit-Alice-password-91be";
    cli(
        &data,
        &["client", "add", "svc", "--secret-stdin"],
        &format!("{svc_secret}\n"),
    );
    let app_secret = cli(&data, &["client", "add", "app", "--grant", "password"], "")
        .trim()
        .to_owned();
    cli(
        &data,
        &["user", "add", "alice", "--password-stdin"],
        &format!("{alice_password}\n"),
    );
    let config = dir.path().join("portcullis.toml");
    std::fs::write(
        &config,
        "[audit]\ndestination = \"file\"\nper_source_limit = 1000\n\n[log]\nformat = \"json\"\n",
    )
    .unwrap();
    let srv = serve(&config, &data);
    let (mut child, addr, log) = (srv.child, srv.addr, srv.log);

    let cc = "grant_type=client_credentials";
    let mut sent: Vec<(String, usize)> = Vec::new(); // (request id, attempts it made)
    let mut tokens = Vec::new();
    let mut wrongs = Vec::new();
    // Right, wrong, unknown.
    let (st, rid, body) = token(addr, "svc", svc_secret, cc);
    assert_eq!(st, 200, "{body}");
    tokens.push(body);
    sent.push((rid, 1));
    let (st, rid, _) = token(addr, "svc", "audit-wrong-0", cc);
    assert_eq!(st, 401);
    wrongs.push("audit-wrong-0".to_owned());
    sent.push((rid, 1));
    let (st, rid, _) = token(addr, "ghost", svc_secret, cc);
    assert_eq!(st, 401);
    sent.push((rid, 1));
    // Password grant: two attempts in one request (the application, then the user).
    let pw = format!("grant_type=password&username=alice&password={alice_password}");
    let (st, rid, body) = token(addr, "app", &app_secret, &pw);
    assert_eq!(st, 200, "{body}");
    tokens.push(body);
    sent.push((rid, 2));
    let (st, rid, _) = token(
        addr,
        "app",
        &app_secret,
        "grant_type=password&username=alice&password=audit-wrong-pw",
    );
    assert_eq!(st, 400);
    wrongs.push("audit-wrong-pw".to_owned());
    sent.push((rid, 2));
    // Guessing until throttled (principal_prefix burst 5, one failure spent above).
    let mut throttled = 0;
    for k in 1..=6 {
        let guess = format!("audit-wrong-{k}");
        let (st, rid, _) = token(addr, "svc", &guess, cc);
        throttled += usize::from(st == 429);
        wrongs.push(guess);
        sent.push((rid, 1));
    }
    assert!(throttled >= 1, "never throttled");

    // SIGTERM: the server drains and flushes the audit file before it exits.
    let pid = child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(child.wait().unwrap().success());

    let audit = std::fs::read_to_string(data.join("audit.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let attempts: usize = sent.iter().map(|(_, n)| n).sum();
    assert_eq!(events.len(), attempts, "one event per attempt: {audit}");
    for (rid, n) in &sent {
        let mine: Vec<_> = events
            .iter()
            .filter(|e| e["request_id"] == rid.as_str())
            .collect();
        assert_eq!(mine.len(), *n, "request {rid}: {mine:#?}");
    }
    let count = |o: &str| events.iter().filter(|e| e["outcome"] == o).count();
    assert_eq!(count("accepted"), 4, "svc, app twice, alice: {audit}");
    assert_eq!(count("unknown_principal"), 1);
    assert_eq!(count("throttled"), throttled);
    assert_eq!(count("rejected"), attempts - 4 - 1 - throttled);
    for e in &events {
        assert_eq!(e["event"], "authentication");
        assert_eq!(e["source"], "127.0.0.1");
        for f in [
            "time",
            "protocol",
            "principal",
            "reason",
            "latency_ms",
            "class",
        ] {
            assert!(!e[f].is_null(), "{f} missing: {e}");
        }
    }
    let ghost = events
        .iter()
        .find(|e| e["outcome"] == "unknown_principal")
        .unwrap();
    assert_eq!(ghost["principal"], "ghost");
    let user = events
        .iter()
        .find(|e| e["principal"] == "alice" && e["outcome"] == "rejected")
        .unwrap();
    assert_eq!(user["client_id"], "app");
    assert_eq!(user["protocol"], "oauth_password");
    assert_eq!(user["reason"], "wrong_secret");

    // No secret, password or token anywhere: not in the audit file, not in the log.
    let log = log.lock().unwrap().join("\n");
    assert!(
        log.contains("portcullis::audit") || log.contains("audit events: file"),
        "{log}"
    );
    let mut secrets: Vec<String> =
        vec![svc_secret.into(), alice_password.into(), app_secret.clone()];
    secrets.extend(wrongs);
    for t in &tokens {
        let v: serde_json::Value = serde_json::from_str(t).unwrap();
        secrets.push(v["access_token"].as_str().unwrap().to_owned());
    }
    for s in &secrets {
        assert!(!audit.contains(s.as_str()), "{s} in the audit file");
        assert!(!log.contains(s.as_str()), "{s} in the log");
    }
    // The log is JSON lines without colour codes.
    for line in log.lines() {
        assert!(!line.contains('\u{1b}'), "ANSI escape in {line}");
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not JSON: {line}"
        );
    }
}
