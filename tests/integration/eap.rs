//! Issue 25: 802.1X on the RADIUS door, from outside. Unmodified `eapol_test`
//! (wpa_supplicant 2.10's test supplicant, Debian `eapoltest`) logs in with EAP-TLS and
//! EAP-TTLS/PAP over TLS 1.2 and 1.3 and checks the MPPE keys itself ("MPPE keys OK");
//! refusals (wrong password, unknown user, foreign CA, disabled user, PEAP) end in
//! EAP-Failure; reauthentication resumes, seen in the server's counters and with no hash
//! spent. The NAS-side loop of `eap_support` (the crate's peer over UDP) covers what
//! eapol_test cannot drive: disabling a user between two logins, and 1,000 malformed
//! exchanges. A missing eapol_test FAILS these tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use portcullis_eap::peer::{Credentials, Peer};
use portcullis_eap::{Code as EapCode, method, packet};
use rustls::pki_types::ServerName;
use zeroize::Zeroizing;

use crate::eap_support::{
    EapolRun, Login, Pki, client_config, eap_counters, eap_request, eapol_test, login, start_eap,
    tls_network, ttls_network,
};
use crate::radius_support::{Nas, verify_reply};

fn expect_success(run: &EapolRun, what: &str) {
    assert!(
        run.success,
        "{what}: eapol_test failed:\n{}",
        tail(&run.log)
    );
    assert_eq!(
        run.count("MPPE keys OK: 1  mismatch: 0"),
        1,
        "{what}: MPPE keys"
    );
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_eapol_test_tls_and_ttls_over_tls_1_2_and_1_3_with_mppe_keys() {
    // Heavy (eapol_test processes, floods): never beside the timing-sensitive tests.
    let _exclusive = crate::server_support::exclusive();
    let pki = Pki::new(&["alice"]);
    let r = start_eap(&pki, |_| {}).await;
    r.s.add_user("alice", "correct horse battery").await;
    let dir = pki.dir.path();
    let mut want_tls = 0;
    let mut want_ttls = 0;
    for v13 in [false, true] {
        let version = if v13 { "TLSv1.3" } else { "TLSv1.2" };
        let run = eapol_test(
            dir,
            r.addr,
            &tls_network(&pki, "alice", pki.client("alice"), v13),
            0,
        )
        .await;
        expect_success(&run, &format!("EAP-TLS {version}"));
        assert!(
            run.count(&format!("Using TLS version {version}")) > 0,
            "EAP-TLS negotiated {version}"
        );
        want_tls += 1;
        let run = eapol_test(
            dir,
            r.addr,
            &ttls_network(&pki, "alice", "correct horse battery", v13),
            0,
        )
        .await;
        expect_success(&run, &format!("TTLS/PAP {version}"));
        assert!(
            run.count(&format!("Using TLS version {version}")) > 0,
            "TTLS negotiated {version}"
        );
        want_ttls += 1;
    }
    let c = eap_counters(&r).await;
    assert_eq!(c["tls_full"], want_tls, "{c}");
    assert_eq!(c["ttls_full"], want_ttls, "{c}");
    assert_eq!(c["failures"], 0, "{c}");
    assert_eq!(
        c["conversations"], 0,
        "finished conversations leave the table: {c}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_eapol_test_refusals_end_in_eap_failure() {
    // Heavy (eapol_test processes, floods): never beside the timing-sensitive tests.
    let _exclusive = crate::server_support::exclusive();
    let pki = Pki::new(&["alice", "bob", "carol"]);
    let r = start_eap(&pki, |_| {}).await;
    r.s.add_user("alice", "correct horse battery").await;
    r.s.add_user("bob", "bobs password").await;
    r.s.store().set_user_disabled("bob", true).await.unwrap();
    let dir = pki.dir.path();
    let cases = [
        (
            "wrong TTLS password",
            ttls_network(&pki, "alice", "not the password", false),
        ),
        (
            "unknown TTLS user",
            ttls_network(&pki, "nobody", "whatever", false),
        ),
        (
            "disabled TTLS user",
            ttls_network(&pki, "bob", "bobs password", false),
        ),
        (
            "client certificate of another CA",
            tls_network(&pki, "alice", &pki.foreign, false),
        ),
        (
            "EAP-TLS as a disabled user",
            tls_network(&pki, "bob", pki.client("bob"), false),
        ),
    ];
    for (what, network) in &cases {
        let run = eapol_test(dir, r.addr, network, 0).await;
        assert!(!run.success, "{what} must fail");
        assert!(
            run.count("EAP Failure") > 0,
            "{what}: EAP-Failure expected:\n{}",
            tail(&run.log)
        );
    }
    // PEAP-MSCHAPv2: the peer refuses our proposal with a Nak and gets EAP-Failure.
    let peap = format!(
        " eap=PEAP\n identity=\"alice\"\n password=\"correct horse battery\"\n ca_cert=\"{}\"\n phase2=\"auth=MSCHAPV2\"",
        pki.ca.display()
    );
    let run = eapol_test(dir, r.addr, &peap, 0).await;
    assert!(!run.success);
    assert!(
        run.count("refuse proposed method") > 0,
        "the peer Naks:\n{}",
        tail(&run.log)
    );
    assert!(run.count("EAP Failure") > 0);
    let c = eap_counters(&r).await;
    assert_eq!(c["failures"], cases.len() + 1, "{c}");
    assert_eq!(c["tls_full"], 0);
    assert_eq!(c["ttls_full"], 0);
    // Without a user record, EAP-TLS rests on the certificate alone (require_user off).
    let run = eapol_test(
        dir,
        r.addr,
        &tls_network(&pki, "carol", pki.client("carol"), false),
        0,
    )
    .await;
    expect_success(&run, "EAP-TLS without a user record");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_eapol_test_reauthentication_resumes_without_a_hash() {
    // Heavy (eapol_test processes, floods): never beside the timing-sensitive tests.
    let _exclusive = crate::server_support::exclusive();
    let pki = Pki::new(&["alice"]);
    let r = start_eap(&pki, |_| {}).await;
    r.s.add_user("alice", "correct horse battery").await;
    let dir = pki.dir.path();
    for v13 in [false, true] {
        let before = eap_counters(&r).await;
        let hashes = r.hashes().await;
        let run = eapol_test(
            dir,
            r.addr,
            &ttls_network(&pki, "alice", "correct horse battery", v13),
            3,
        )
        .await;
        assert!(run.success, "TTLS -r 3 (1.3: {v13}):\n{}", tail(&run.log));
        assert_eq!(run.count("MPPE keys OK: 4  mismatch: 0"), 1);
        assert_eq!(run.count("Handshake finished - resumed=1"), 3);
        let after = eap_counters(&r).await;
        assert_eq!(
            after["ttls_full"].as_u64().unwrap() - before["ttls_full"].as_u64().unwrap(),
            1
        );
        assert_eq!(
            after["ttls_resumed"].as_u64().unwrap() - before["ttls_resumed"].as_u64().unwrap(),
            3
        );
        assert_eq!(
            r.hashes().await - hashes,
            1,
            "only the first TTLS login hashes the password"
        );

        let hashes = r.hashes().await;
        let run = eapol_test(
            dir,
            r.addr,
            &tls_network(&pki, "alice", pki.client("alice"), v13),
            3,
        )
        .await;
        assert!(
            run.success,
            "EAP-TLS -r 3 (1.3: {v13}):\n{}",
            tail(&run.log)
        );
        assert_eq!(run.count("MPPE keys OK: 4  mismatch: 0"), 1);
        let again = eap_counters(&r).await;
        assert_eq!(
            again["tls_full"].as_u64().unwrap() - after["tls_full"].as_u64().unwrap(),
            1
        );
        assert_eq!(
            again["tls_resumed"].as_u64().unwrap() - after["tls_resumed"].as_u64().unwrap(),
            3
        );
        assert_eq!(r.hashes().await, hashes, "EAP-TLS spends no hash");
    }
}

/// One login of a station (fixed Calling-Station-Id) resuming through `cfg`'s session
/// store.
async fn log_in(
    nas: &Nas,
    cfg: &Arc<rustls::ClientConfig>,
    creds: Credentials,
    salt: &mut u64,
) -> Login {
    login(nas, &mut peer_for(cfg, creds), "02-00-00-00-00-0a", salt).await
}

fn peer_for(cfg: &Arc<rustls::ClientConfig>, creds: Credentials) -> Peer {
    Peer::new(
        Arc::clone(cfg),
        ServerName::try_from("radius.test").unwrap(),
        "anonymous",
        creds,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_disabling_a_user_ends_resumption() {
    let pki = Pki::new(&["dave"]);
    let r = start_eap(&pki, |_| {}).await;
    r.s.add_user("erin", "erins password").await;
    r.s.add_user("dave", "daves password").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let mut salt = 0;
    let ttls = client_config(&pki, None);
    let creds = Credentials::TtlsPap {
        user: "erin".into(),
        password: Zeroizing::new(b"erins password".to_vec()),
    };
    let tls = client_config(&pki, Some(pki.client("dave")));
    for (cfg, creds, user) in [(&ttls, creds, "erin"), (&tls, Credentials::Tls, "dave")] {
        let first = log_in(&nas, cfg, creds.clone(), &mut salt).await;
        assert!(
            matches!(first, Login::Accepted { resumed: false, .. }),
            "{user}: {first:?}"
        );
        let second = log_in(&nas, cfg, creds.clone(), &mut salt).await;
        assert!(
            matches!(second, Login::Accepted { resumed: true, .. }),
            "{user}: {second:?}"
        );
        r.s.store().set_user_disabled(user, true).await.unwrap();
        // What the store's change feed does on PostgreSQL (on SQLite the cached entry
        // expires within `store.client_cache_ttl_ms`): the user check reads the cache.
        r.s.server.parts().oauth.clients.invalidate_user(user);
        let third = log_in(&nas, cfg, creds, &mut salt).await;
        assert_eq!(
            third,
            Login::Rejected,
            "{user}: a disabled user's session does not resume"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_a_thousand_malformed_exchanges_leave_logins_working_and_memory_bounded() {
    // Heavy (eapol_test processes, floods): never beside the timing-sensitive tests.
    let _exclusive = crate::server_support::exclusive();
    let pki = Pki::new(&[]);
    let r = start_eap(&pki, |f| {
        f.max_conversations = 256;
        f.max_conversations_per_nas = 256;
    })
    .await;
    r.s.add_user("alice", "correct horse battery").await;
    // 25 NAS-side sockets at once, 40 malformed exchanges each.
    let mut tasks = Vec::new();
    for t in 0..25u64 {
        let addr = r.addr;
        tasks.push(tokio::spawn(async move {
            let nas = Nas::bind("127.0.0.1:0", addr).await;
            let mut answered = 0;
            for i in 0..40u32 {
                answered += malformed_exchange(&nas, t * 1_000_000 + u64::from(i) * 1000, i).await;
            }
            answered
        }));
    }
    let mut answered = 0;
    for t in tasks {
        answered += t.await.unwrap();
        let c = eap_counters(&r).await;
        assert!(c["conversations"].as_u64().unwrap() <= 256, "bounded: {c}");
    }
    assert!(answered > 0);
    let c = eap_counters(&r).await;
    assert!(c["conversations"].as_u64().unwrap() <= 256, "{c}");
    assert!(
        c["failures"].as_u64().unwrap() >= 800,
        "malformed exchanges end in failure: {c}"
    );
    // A valid login still works.
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let mut salt = 1;
    let cfg = client_config(&pki, None);
    let creds = Credentials::TtlsPap {
        user: "alice".into(),
        password: Zeroizing::new(b"correct horse battery".to_vec()),
    };
    let ok = log_in(&nas, &cfg, creds, &mut salt).await;
    assert!(matches!(ok, Login::Accepted { .. }), "{ok:?}");
}

/// Open a conversation as `mallory`, then send one malformed continuation of it (shape
/// chosen by `i`), following the server's challenges with more garbage until it ends
/// the conversation or drops the request. Returns how many replies came.
async fn malformed_exchange(nas: &Nas, mut salt: u64, i: u32) -> u32 {
    let identity = packet::encode(EapCode::Response, 1, method::IDENTITY, b"mallory").unwrap();
    let station = format!("02-00-00-00-66-{:02x}", i % 200);
    salt += 1;
    let start = eap_request(1, salt, &station, &identity, None);
    nas.send(&start.bytes).await;
    let raw = nas.recv(Duration::from_secs(20)).await.expect("challenge");
    verify_reply(&raw, &start);
    let reply = portcullis_radius::Packet::parse(&raw).unwrap();
    let state = reply.attr(portcullis_radius::attr::STATE).unwrap().to_vec();
    let eap_id = reply
        .attributes()
        .find(|(t, _)| *t == portcullis_radius::attr::EAP_MESSAGE)
        .unwrap()
        .1[1];
    let body: Vec<u8> = match i % 6 {
        // Truncated fragment: L says 1000 octets, 3 arrive, no M.
        0 => vec![0x80, 0, 0, 0x03, 0xe8, 22, 3, 1],
        // Bad EAP length (fixed up below).
        1 => vec![0x00, 22],
        // Out of order: a middle fragment (M, no L) with garbage TLS.
        2 => vec![0x40, 0x17, 0x03, 0x03, 0xff, 0xff],
        // Endless fragments: M set, one octet each, until the server ends it.
        3 => vec![0x40, 22],
        // Wrong method type.
        4 => vec![0xff],
        // Garbage TLS record.
        _ => vec![0x00, 0x63, 3, 3, 0, 1, 0],
    };
    let m = if i % 6 == 4 {
        method::MD5_CHALLENGE
    } else {
        method::TTLS
    };
    let mut eap = packet::encode(EapCode::Response, eap_id, m, &body).unwrap();
    if i % 6 == 1 {
        eap[3] = eap[3].wrapping_add(7);
    }
    let mut answered = 0;
    for _ in 0..200 {
        salt += 1;
        let req = eap_request(2, salt, &station, &eap, Some(&state));
        nas.send(&req.bytes).await;
        let Some(raw) = nas.recv(Duration::from_secs(5)).await else {
            break; // dropped silently: the conversation expires on its own
        };
        let code = verify_reply(&raw, &req);
        answered += 1;
        if code != portcullis_radius::Code::AccessChallenge {
            break;
        }
        // Keep dribbling fragments: the server must end it.
        let reply = portcullis_radius::Packet::parse(&raw).unwrap();
        let next_id = reply
            .attributes()
            .find(|(t, _)| *t == portcullis_radius::attr::EAP_MESSAGE)
            .unwrap()
            .1[1];
        eap = packet::encode(EapCode::Response, next_id, method::TTLS, &[0x40, 22]).unwrap();
    }
    answered
}

/// Two instances on one data directory and secrets file, EAP ticket keys derived from it,
/// the NAS table shared. `redis`: TTLS identities in Redis under a fresh prefix.
async fn two_instances(
    pki: &Pki,
    redis: bool,
    tweak: impl Fn(usize, &mut portcullis_server::radius::eap::config::FileEap),
) -> (tempfile::TempDir, Vec<portcullis_server::Server>) {
    use portcullis_store::{NasRecord, NasStore};
    let dir = tempfile::tempdir().unwrap();
    let data = portcullis_store::DataDir::open(&dir.path().join("data"))
        .await
        .unwrap();
    let nas = NasRecord {
        name: "lab".into(),
        cidr: portcullis_store::nas::parse_nas_cidr("127.0.0.0/8").unwrap(),
        secret_sealed: NasRecord::seal_secret(
            data.master_key(),
            "lab",
            crate::radius_support::SECRET,
        )
        .unwrap(),
        require_message_authenticator: true,
        created_at: 0,
        certificate: None,
    };
    data.store().put_nas(&nas).await.unwrap();
    let prefix = format!("eap-roam-{}-{}", std::process::id(), rand_tag());
    let mut servers = Vec::new();
    for i in 0..2 {
        let mut config = crate::server_support::test_config(&dir.path().join("data"));
        config.radius.listen = vec!["127.0.0.1:0".parse().unwrap()];
        config.radius.reject_delay = Duration::from_millis(100);
        config.radius.eap = Some(pki.eap_config(|f| {
            f.shared_ticket_keys = true;
            tweak(i, f);
        }));
        config.verifier.initial_hash_estimate_ms = 5;
        if redis {
            config.throttle_redis = Some(portcullis_store::RedisThrottleConfig {
                target: portcullis_store::RedisTarget::Node(
                    portcullis_store::testing::shared_redis_url(),
                ),
                key_prefix: prefix.clone(),
                timeout: Duration::from_millis(500),
                retry: Duration::from_millis(100),
            });
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let radius = portcullis_server::radius::bind(&config.radius).unwrap();
        let app = portcullis_server::Assembly::from_data_dir(
            config,
            &data,
            listener.local_addr().unwrap(),
        )
        .await
        .unwrap();
        servers.push(
            portcullis_server::Server::launch(
                portcullis_server::Listeners {
                    http: listener,
                    radius,
                    accounting: Vec::new(),
                    radsec: Vec::new(),
                    admin: None,
                    ldap: Default::default(),
                },
                app,
            )
            .await
            .unwrap(),
        );
    }
    (dir, servers)
}

fn rand_tag() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u8)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_a_device_roaming_to_another_instance_resumes() {
    let pki = Pki::new(&["frank"]);
    for redis in [true, false] {
        let (_dir, servers) = two_instances(&pki, redis, |_, _| {}).await;
        servers[0]
            .parts()
            .store
            .put_user(
                &portcullis_store::UserRecord::new(
                    "grace",
                    crate::server_support::test_policy()
                        .hash(b"graces password")
                        .unwrap(),
                    0,
                )
                .unwrap(),
            )
            .await
            .unwrap();
        let a = Nas::bind("127.0.0.1:0", servers[0].radius_addrs()[0]).await;
        let b = Nas::bind("127.0.0.1:0", servers[1].radius_addrs()[0]).await;
        let mut salt = 0;
        // EAP-TLS resumes on the other instance through the shared ticket keys alone.
        let tls = client_config(&pki, Some(pki.client("frank")));
        let first = log_in(&a, &tls, Credentials::Tls, &mut salt).await;
        assert!(matches!(first, Login::Accepted { resumed: false, .. }));
        let roamed = log_in(&b, &tls, Credentials::Tls, &mut salt).await;
        assert!(
            matches!(roamed, Login::Accepted { resumed: true, .. }),
            "redis {redis}: {roamed:?}"
        );
        // TTLS needs the identity proven at the first instance: shared through Redis.
        let ttls = client_config(&pki, None);
        let creds = Credentials::TtlsPap {
            user: "grace".into(),
            password: Zeroizing::new(b"graces password".to_vec()),
        };
        let first = log_in(&a, &ttls, creds.clone(), &mut salt).await;
        assert!(matches!(first, Login::Accepted { resumed: false, .. }));
        let roamed = log_in(&b, &ttls, creds, &mut salt).await;
        if redis {
            assert!(
                matches!(roamed, Login::Accepted { resumed: true, .. }),
                "{roamed:?}"
            );
        } else {
            // Without the shared store the other instance cannot know who proved
            // themselves: the resumed session is refused rather than trusted.
            assert_eq!(roamed, Login::Rejected);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_a_revoked_certificate_does_not_resume() {
    let pki = Pki::new(&["frank", "mallet"]);
    let crl = pki
        .authority
        .crl("revoked", &[pki.client("mallet")])
        .unwrap();
    // Instance 1 has the CRL that revokes mallet's certificate; instance 0 does not yet
    // (as before a restart with the new CRL).
    let (_dir, servers) = two_instances(&pki, false, |i, f| {
        if i == 1 {
            f.crl = vec![crl.clone()];
        }
    })
    .await;
    let a = Nas::bind("127.0.0.1:0", servers[0].radius_addrs()[0]).await;
    let b = Nas::bind("127.0.0.1:0", servers[1].radius_addrs()[0]).await;
    let mut salt = 0;
    for (cn, revoked) in [("frank", false), ("mallet", true)] {
        let cfg = client_config(&pki, Some(pki.client(cn)));
        let first = log_in(&a, &cfg, Credentials::Tls, &mut salt).await;
        assert!(
            matches!(first, Login::Accepted { resumed: false, .. }),
            "{cn}: {first:?}"
        );
        let resumed = log_in(&b, &cfg, Credentials::Tls, &mut salt).await;
        if revoked {
            assert_eq!(
                resumed,
                Login::Rejected,
                "a revoked certificate's session must not resume"
            );
            let fresh = client_config(&pki, Some(pki.client(cn)));
            let full = log_in(&b, &fresh, Credentials::Tls, &mut salt).await;
            assert_eq!(full, Login::Rejected, "nor log in with a full handshake");
        } else {
            assert!(
                matches!(resumed, Login::Accepted { resumed: true, .. }),
                "{cn}: {resumed:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_a_retransmitted_round_trip_is_answered_again_without_advancing() {
    let pki = Pki::new(&["alice"]);
    let r = start_eap(&pki, |_| {}).await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let cfg = client_config(&pki, Some(pki.client("alice")));
    let mut peer = peer_for(&cfg, Credentials::Tls);
    // Identity, then the first TLS flight, each sent twice as a NAS retransmits.
    let first = eap_request(1, 77, "02-00-00-00-00-12", &peer.identity_response(1), None);
    nas.send(&first.bytes).await;
    let a = nas.recv(Duration::from_secs(20)).await.unwrap();
    nas.send(&first.bytes).await;
    let b = nas.recv(Duration::from_secs(20)).await.unwrap();
    assert_eq!(a, b, "the same reply, byte for byte");
    verify_reply(&a, &first);
    let reply = portcullis_radius::Packet::parse(&a).unwrap();
    let state = reply.attr(portcullis_radius::attr::STATE).unwrap().to_vec();
    let eap: Vec<u8> = reply
        .attributes()
        .filter(|(t, _)| *t == portcullis_radius::attr::EAP_MESSAGE)
        .flat_map(|(_, v)| v.to_vec())
        .collect();
    let portcullis_eap::peer::PeerStep::Send(hello) = peer.step(&eap).unwrap() else {
        panic!("the peer answers the start")
    };
    let second = eap_request(2, 78, "02-00-00-00-00-12", &hello, Some(&state));
    nas.send(&second.bytes).await;
    let c = nas.recv(Duration::from_secs(20)).await.unwrap();
    nas.send(&second.bytes).await;
    let d = nas.recv(Duration::from_secs(20)).await.unwrap();
    assert_eq!(c, d);
    assert_eq!(
        verify_reply(&c, &second),
        portcullis_radius::Code::AccessChallenge
    );
    let counters = r.counters("lab").await;
    assert_eq!(counters["duplicates"], 2, "{counters}");
    // The conversation went on exactly one step per round trip: it still completes.
    let mut salt = 100;
    let ok = log_in(&nas, &cfg, Credentials::Tls, &mut salt).await;
    assert!(matches!(ok, Login::Accepted { .. }));
    let c = eap_counters(&r).await;
    assert_eq!(c["started"], 2, "{c}");
}
