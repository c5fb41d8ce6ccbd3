//! Issue 40: users whose passwords live in an existing directory (a real slapd started by
//! the test), checked through the core by every door that takes passwords.
// Test code: a failed step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use portcullis_radius::Code;

use crate::radius_support::{Nas, start_radius};
use crate::upstream_support::{Slapd, with_directory};

/// One PAP exchange: the reply's code, or `None` when the server stayed silent for `wait`.
async fn pap(nas: &Nas, id: u8, user: &str, password: &str, station: &str) -> Option<Code> {
    pap_within(nas, id, user, password, station, Duration::from_secs(20)).await
}

async fn pap_within(
    nas: &Nas,
    id: u8,
    user: &str,
    password: &str,
    station: &str,
    wait: Duration,
) -> Option<Code> {
    let req = Nas::access_request(id, u64::from(id) << 8, user, password, station, &[]);
    nas.send(&req.bytes).await;
    let raw = nas.recv(wait).await?;
    Some(crate::radius_support::verify_reply(&raw, &req))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pap_checks_directory_users_in_dn_template_mode_over_starttls() {
    let slapd = Slapd::start(&[]);
    let url = slapd.get("ldap_url").to_owned();
    let dir = slapd.dn_template(&[&url]);
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        with_directory(c, &dir);
    })
    .await;
    r.s.add_user("alice", "alice-local-pw").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    assert_eq!(
        pap(&nas, 1, "user1", "password1", "st-1").await,
        Some(Code::AccessAccept)
    );
    assert_eq!(
        pap(&nas, 2, "user2", "wrong", "st-2").await,
        Some(Code::AccessReject)
    );
    assert_eq!(
        pap(&nas, 3, "nobody", "password1", "st-3").await,
        Some(Code::AccessReject)
    );
    // A local user is checked locally, never sent to the directory.
    assert_eq!(
        pap(&nas, 4, "alice", "alice-local-pw", "st-4").await,
        Some(Code::AccessAccept)
    );
    let status = r.s.get("/status.json").await.json();
    let corp = &status["directories"][0];
    assert_eq!(corp["name"], "corp");
    assert_eq!(corp["servers"][0]["answered"], 3, "{corp}");
    let ready = r.s.get("/readyz").await;
    assert_eq!(ready.status, 200);
    assert!(
        String::from_utf8_lossy(&ready.body).contains("directory corp: up"),
        "{:?}",
        String::from_utf8_lossy(&ready.body)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_then_a_stopped_directory_refuses_fast_and_local_users_go_on() {
    let first = Slapd::start(&[]);
    let second = Slapd::start(&[]);
    let urls = [
        first.get("ldap_url").to_owned(),
        second.get("ldap_url").to_owned(),
    ];
    // Both instances hold the same users and passwords, as replicas would; each has its
    // own throwaway CA, so the directory trusts both.
    let cas = tempfile::NamedTempFile::new().unwrap();
    let both = [first.get("ca_file"), second.get("ca_file")]
        .map(|f| std::fs::read_to_string(f).unwrap())
        .concat();
    std::fs::write(cas.path(), both).unwrap();
    let mut dir = first
        .dn_template(&[&urls[0], &urls[1]])
        .replace(first.get("ca_file"), cas.path().to_str().unwrap());
    dir.push_str("[directory.timeouts]\ncheck_ms = 3000\nconnect_ms = 1000\n");
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        with_directory(c, &dir);
    })
    .await;
    r.s.add_user("alice", "alice-local-pw").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    assert_eq!(
        pap(&nas, 1, "user1", "password1", "st-1").await,
        Some(Code::AccessAccept)
    );
    first.stop();
    assert_eq!(
        pap(&nas, 2, "user1", "password1", "st-1").await,
        Some(Code::AccessAccept),
        "the second server answers when the first is stopped"
    );
    second.stop();
    // Every server down: silence (the NAS fails over), counted apart, within the
    // configured check time (3 s) and well before the NAS's own patience.
    let started = Instant::now();
    let req = Nas::access_request(3, 3 << 8, "user1", "password1", "st-1", &[]);
    nas.send(&req.bytes).await;
    loop {
        let status = r.s.get("/status.json").await.json();
        let dropped = &status["radius"]["nas"]["lab"]["dropped"]["directory_unavailable"];
        if dropped == 1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "no refusal within the configured timeout: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        nas.nothing_queued(),
        "an unavailable directory is answered by silence"
    );
    // The local user does not wait on the directory.
    assert_eq!(
        pap(&nas, 4, "alice", "alice-local-pw", "st-4").await,
        Some(Code::AccessAccept)
    );
    // The password grant answers 503 for the directory's user.
    let client =
        r.s.add_client("app", &[portcullis_store::Grant::Password], &[])
            .await;
    let started = Instant::now();
    let a =
        r.s.post(
            "/oauth2/token",
            Some(("app", &client)),
            &crate::server_support::form(&[
                ("grant_type", "password"),
                ("username", "user1"),
                ("password", "password1"),
            ]),
        )
        .await;
    assert_eq!(a.status, 503, "{}", a.error());
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "within check_ms"
    );
}
