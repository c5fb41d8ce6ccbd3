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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_grant_and_ttls_pap_in_search_mode_over_ldaps() {
    use portcullis_eap::peer::{Credentials, Peer};
    use rustls::pki_types::ServerName;
    use zeroize::Zeroizing;

    use crate::eap_support::{Login, Pki, client_config, login};

    let slapd = Slapd::start(&[]);
    let url = slapd.get("ldaps_url").to_owned();
    assert!(url.starts_with("ldaps://"), "{url}");
    let dir = slapd.search(&[&url]);
    let pki = Pki::new(&[]);
    let eap = pki.eap_config(|_| {});
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", move |c| {
        c.radius.reject_delay = Duration::from_millis(100);
        c.radius.eap = Some(eap);
        with_directory(c, &dir);
    })
    .await;
    // OAuth password grant.
    let client =
        r.s.add_client("app", &[portcullis_store::Grant::Password], &[])
            .await;
    let grant = |user: &str, password: &str| {
        crate::server_support::form(&[
            ("grant_type", "password"),
            ("username", user),
            ("password", password),
        ])
    };
    let ok =
        r.s.post(
            "/oauth2/token",
            Some(("app", &client)),
            &grant("user3", "password3"),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.error());
    let bad =
        r.s.post(
            "/oauth2/token",
            Some(("app", &client)),
            &grant("user3", "password4"),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.error(), "invalid_grant");
    // EAP-TTLS with inner PAP.
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let mut salt = 0;
    for (password, accepted) in [("password5", true), ("password6", false)] {
        let creds = Credentials::TtlsPap {
            user: "user5".into(),
            password: Zeroizing::new(password.as_bytes().to_vec()),
        };
        let mut peer = Peer::new(
            client_config(&pki, None),
            ServerName::try_from("radius.test").unwrap(),
            "anonymous",
            creds,
        );
        let got = login(&nas, &mut peer, "02-00-00-00-00-05", &mut salt).await;
        assert_eq!(
            matches!(got, Login::Accepted { .. }),
            accepted,
            "TTLS/PAP with {password}"
        );
    }
    let status = r.s.get("/status.json").await.json();
    assert_eq!(status["directories"][0]["mode"], "search");
    assert_eq!(
        status["directories"][0]["servers"][0]["answered"], 4,
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_guessing_stations_do_not_lock_the_user_in_slapd() {
    let slapd = Slapd::start(&["--ppolicy", "5"]);
    let url = slapd.get("ldap_url").to_owned();
    let mut dir = slapd.dn_template(&[&url]);
    dir = dir.replace(
        "name = \"corp\"\n",
        "name = \"corp\"\nfailure_budget = 3\nlockout_threshold = 5\n",
    );
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.reject_delay = Duration::from_millis(100);
        with_directory(c, &dir);
    })
    .await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    // The user's own station logs in first: it becomes trusted for user1.
    assert_eq!(
        pap(&nas, 1, "user1", "password1", "home").await,
        Some(Code::AccessAccept)
    );
    // 50 stations, two wrong guesses each, all at once.
    let guesses = 100u16;
    for k in 0..guesses {
        let req = Nas::access_request(
            (k % 200 + 2) as u8,
            u64::from(k) + 1000,
            "user1",
            &format!("guess-{k}"),
            &format!("attacker-{}", k % 50),
            &[],
        );
        nas.send(&req.bytes).await;
    }
    let mut answered = 0;
    while answered < guesses {
        let raw = nas
            .recv(Duration::from_secs(20))
            .await
            .expect("every guess is answered");
        assert_eq!(raw[0], 3, "a guess never logs in (3: Access-Reject)");
        answered += 1;
    }
    assert!(!slapd.locked("user1"), "guesses through us locked the user");
    assert_eq!(
        pap(&nas, 250, "user1", "password1", "home").await,
        Some(Code::AccessAccept),
        "the user's trusted station still logs in"
    );
    let status = r.s.get("/status.json").await.json();
    let binds = status["directories"][0]["servers"][0]["answered"]
        .as_u64()
        .unwrap();
    // Two logins and at most the failure budget of guesses reached the directory.
    assert!(binds <= 5, "{binds} binds reached slapd: {status}");
    assert!(!slapd.locked("user1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_cache_a_cached_user_logs_in_while_the_directory_is_down() {
    let slapd = Slapd::start(&[]);
    let url = slapd.get("ldap_url").to_owned();
    let mut dir = slapd.dn_template(&[&url]);
    dir = dir.replace(
        "name = \"corp\"\n",
        "name = \"corp\"\ncache_max_age_secs = 3600\n",
    );
    dir.push_str("[directory.timeouts]\ncheck_ms = 3000\nconnect_ms = 1000\n");
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.reject_delay = Duration::from_millis(100);
        with_directory(c, &dir);
    })
    .await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    assert_eq!(
        pap(&nas, 1, "user1", "password1", "st-1").await,
        Some(Code::AccessAccept)
    );
    // The hash is made on the pool's background queue after the answer: wait for it.
    let started = Instant::now();
    while r.s.server.parts().verifier.cached_credentials() == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "never cached");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    slapd.stop();
    assert_eq!(
        pap(&nas, 2, "user1", "password1", "st-1").await,
        Some(Code::AccessAccept),
        "the cached user logs in while slapd is down"
    );
    assert_eq!(
        pap(&nas, 3, "user1", "wrong", "st-1").await,
        Some(Code::AccessReject),
        "a wrong password against the cache is refused"
    );
    // A user never cached: unavailable (silence).
    let req = Nas::access_request(4, 4 << 8, "user2", "password2", "st-2", &[]);
    nas.send(&req.bytes).await;
    loop {
        let status = r.s.get("/status.json").await.json();
        if status["radius"]["nas"]["lab"]["dropped"]["directory_unavailable"] == 1 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(nas.nothing_queued());
}
