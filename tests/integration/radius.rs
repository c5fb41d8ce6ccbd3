//! Issue #12: the RADIUS front door from outside, over real UDP sockets on loopback:
//! retransmissions, malformed floods, replies bound to their own request, unknown NASes,
//! BlastRADIUS, CHAP, the reject delay as a timer, IPv6, and NAS table refresh.
//! (Third-party clients, radclient and pyrad, are in `radius_interop.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use portcullis_radius::{Code, attr};

use crate::radius_support::{Nas, SECRET, barrier, start_radius, verify_reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_retransmit_is_hashed_once_and_answered_identically() {
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |_| {}).await;
    r.s.add_user("ret", "right password").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let hashes_before = r.hashes().await;

    // A wrong password: the reply waits out the reject delay, so a copy sent right away
    // arrives while the original is in progress and must be dropped, not hashed.
    let req = Nas::access_request(7, 1, "ret", "wrong password", "st-1", &[]);
    nas.send(&req.bytes).await;
    nas.send(&req.bytes).await;
    let first = nas.recv(Duration::from_secs(20)).await.expect("no reply");
    assert_eq!(verify_reply(&first, &req), Code::AccessReject);
    // The retransmission after the answer gets the very same bytes.
    nas.send(&req.bytes).await;
    let again = nas
        .recv(Duration::from_secs(20))
        .await
        .expect("no cached reply");
    assert_eq!(
        again, first,
        "a retransmission gets the cached reply byte for byte"
    );
    barrier(&nas, 1).await;
    assert!(nas.nothing_queued(), "exactly one reply per answered copy");

    assert_eq!(
        r.hashes().await - hashes_before,
        1,
        "hashed once for three copies"
    );
    let c = r.counters("lab").await;
    assert_eq!(c["duplicates"], 1);
    assert_eq!(c["dropped"]["in_progress"], 1);
    assert_eq!(c["rejects"], 1);

    // The same for an accept (answered at once, no delay).
    let ok = Nas::access_request(8, 2, "ret", "right password", "st-1", &[]);
    let (code, raw) = nas.exchange(&ok).await;
    assert_eq!(code, Code::AccessAccept);
    nas.send(&ok.bytes).await;
    assert_eq!(nas.recv(Duration::from_secs(20)).await.unwrap(), raw);
    assert_eq!(r.hashes().await - hashes_before, 2);
    r.s.server.shutdown().await.unwrap();
}

/// A thousand malformed datagrams of every kind, then a valid request is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_malformed_flood_is_dropped_and_counted_and_service_continues() {
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |_| {}).await;
    r.s.add_user("mal", "pw").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let good = Nas::access_request(1, 9, "mal", "pw", "st", &[]).bytes;
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..1000u32 {
        let mut b = good.clone();
        match i % 8 {
            // truncated below the header
            0 => b.truncate((next() % 20) as usize),
            // Length field beyond the datagram
            1 => {
                let field = b.len() as u16 + 1 + (next() % 100) as u16;
                b[2..4].copy_from_slice(&field.to_be_bytes())
            }
            // Length field below 20
            2 => b[2..4].copy_from_slice(&((next() % 20) as u16).to_be_bytes()),
            // attribute overflow: an attribute length running past the end
            3 => b[21] = 200,
            // an attribute length of 0 or 1
            4 => b[39] = (next() % 2) as u8,
            // oversize datagram
            5 => b = vec![1u8; 4097 + (next() % 3000) as usize],
            // a code we do not serve (Accounting-Request, Access-Accept, Other)
            6 => b[0] = [4u8, 2, 3, 11, 40, 255][(next() % 6) as usize],
            // random bytes
            _ => b = (0..(next() % 200) as usize).map(|_| next() as u8).collect(),
        }
        nas.send(&b).await;
    }
    barrier(&nas, 2).await;
    let (code, _) = nas
        .exchange(&Nas::access_request(2, 10, "mal", "pw", "st", &[]))
        .await;
    assert_eq!(code, Code::AccessAccept, "still serving after the flood");
    let c = r.counters("lab").await;
    let dropped: u64 = c["dropped"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        dropped, 1000,
        "every malformed datagram dropped and counted: {c}"
    );
    assert!(c["dropped"]["malformed"].as_u64().unwrap() >= 870, "{c}");
    assert_eq!(c["accepts"], 1);
    assert!(nas.nothing_queued(), "no answer to any malformed datagram");
    r.s.server.shutdown().await.unwrap();
}

/// Report 003's bug: under concurrent load each client must get its own replies, each
/// verifying against its own request. Forty NASes-side sockets on distinct source
/// addresses and ports, with interleaved identifiers and users.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_every_reply_goes_to_its_own_request_source() {
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.reject_delay = Duration::from_millis(50);
    })
    .await;
    // One user per client, four right passwords each at once (the core lets at most
    // `principal_prefix.burst` = 5 concurrent attempts of one user from a never-seen source
    // through, by design); wrong passwords go to a user of their own. This test is about
    // where replies go, not about throttling.
    for u in 0..40 {
        r.s.add_user(&format!("u{u}"), &format!("pw{u}")).await;
    }
    r.s.add_user("mallory", "unguessable").await;
    let mut tasks = Vec::new();
    for client in 0..40u32 {
        let addr = r.addr;
        tasks.push(tokio::spawn(async move {
            let local = format!("127.0.{}.{}:0", 1 + client / 200, 2 + client % 200);
            let nas = Nas::bind(&local, addr).await;
            let mut sent = Vec::new();
            for k in 0..6u32 {
                let u = client;
                // Same identifiers on every client: only the source tells them apart.
                let wrong = k % 3 == 0;
                let (user, pw) = if wrong {
                    ("mallory".to_owned(), "nope".to_owned())
                } else {
                    (format!("u{u}"), format!("pw{u}"))
                };
                let req = Nas::access_request(
                    k as u8,
                    u64::from(client) << 8 | u64::from(k),
                    &user,
                    &pw,
                    &format!("st-{client}"),
                    &[],
                );
                nas.send(&req.bytes).await;
                sent.push((req, wrong));
            }
            // Like a NAS, retransmit what is unanswered after a timeout: a request the
            // core shed under this burst is dropped unanswered by design. A second reply
            // to a retransmitted request must repeat the first byte for byte.
            let mut answers: std::collections::HashMap<u8, Vec<u8>> = Default::default();
            let mut rounds = 0;
            while answers.len() < sent.len() {
                let Some(raw) = nas.recv(Duration::from_secs(2)).await else {
                    rounds += 1;
                    assert!(
                        rounds <= 15,
                        "client {client}: replies missing after retries"
                    );
                    for (req, _) in sent.iter().filter(|(r, _)| !answers.contains_key(&r.id)) {
                        nas.send(&req.bytes).await;
                    }
                    continue;
                };
                let id = raw[1];
                let (req, wrong) = sent.iter().find(|(s, _)| s.id == id).unwrap_or_else(|| {
                    panic!("client {client} got a reply for an id it never used")
                });
                let want = if *wrong {
                    Code::AccessReject
                } else {
                    Code::AccessAccept
                };
                assert_eq!(verify_reply(&raw, req), want, "client {client} id {id}");
                if let Some(first) = answers.get(&id) {
                    assert_eq!(first, &raw, "client {client} id {id}: reply changed");
                }
                answers.insert(id, raw);
            }
            answers.len()
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 240);
    r.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_unknown_nas_and_missing_message_authenticator_get_no_answer() {
    let r = start_radius("127.0.0.1:0", "127.0.0.9/32", |_| {}).await;
    r.s.add_user("who", "pw").await;
    // From an address no NAS covers: dropped, counted under "unknown", no answer.
    let stranger = Nas::bind("127.0.0.10:0", r.addr).await;
    stranger
        .send(&Nas::access_request(1, 1, "who", "pw", "st", &[]).bytes)
        .await;
    let nas = Nas::bind("127.0.0.9:0", r.addr).await;
    // Without Message-Authenticator (BlastRADIUS): dropped by default.
    let mut no_ma = Vec::from(&Nas::access_request(2, 2, "who", "pw", "st", &[]).bytes[..20]);
    let authenticator: [u8; 16] = no_ma[4..20].try_into().unwrap();
    let hidden = portcullis_radius::hide_user_password(b"pw", SECRET, &authenticator).unwrap();
    for (t, v) in [
        (attr::USER_NAME, &b"who"[..]),
        (attr::USER_PASSWORD, &hidden[..]),
    ] {
        no_ma.push(t);
        no_ma.push(v.len() as u8 + 2);
        no_ma.extend_from_slice(v);
    }
    let len = no_ma.len() as u16;
    no_ma[2..4].copy_from_slice(&len.to_be_bytes());
    nas.send(&no_ma).await;
    // A wrong Message-Authenticator: dropped.
    let mut bad_ma = Nas::access_request(3, 3, "who", "pw", "st", &[]).bytes;
    bad_ma[25] ^= 0xff;
    nas.send(&bad_ma).await;
    // A Status-Server without Message-Authenticator: dropped (RFC 5997 requires one).
    let mut status_no_ma = Nas::status_server(4, 4).bytes[..20].to_vec();
    status_no_ma[2..4].copy_from_slice(&20u16.to_be_bytes());
    nas.send(&status_no_ma).await;
    barrier(&nas, 5).await;
    assert!(
        nas.nothing_queued(),
        "no answer without a valid Message-Authenticator"
    );
    let c = r.counters("lab").await;
    assert_eq!(c["dropped"]["bad_authenticator"], 3, "{c}");
    let unknown = r.counters("unknown").await;
    assert_eq!(unknown["dropped"]["unknown_nas"], 1, "{unknown}");
    assert!(stranger.nothing_queued());
    r.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_chap_eap_and_mschap_are_rejected_not_pretended() {
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.reject_delay = Duration::from_millis(10);
    })
    .await;
    r.s.add_user("chap", "pw").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let hashes = r.hashes().await;
    let ms_vsa = [
        0u8, 0, 1, 55, 11, 18, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    ];
    for (i, extra) in [
        (attr::CHAP_PASSWORD, &[1u8; 17][..]),
        (attr::EAP_MESSAGE, &[2u8, 0, 0, 5, 1][..]),
        (attr::VENDOR_SPECIFIC, &ms_vsa[..]),
    ]
    .into_iter()
    .enumerate()
    {
        // Even with the right password alongside, the other method is refused.
        let req = Nas::access_request(i as u8, 20 + i as u64, "chap", "pw", "st", &[extra]);
        assert_eq!(nas.exchange(&req).await.0, Code::AccessReject);
    }
    assert_eq!(
        r.hashes().await,
        hashes,
        "nothing hashed for refused methods"
    );
    r.s.server.shutdown().await.unwrap();
}

/// The reject delay is a timer: fifty concurrent wrong passwords from distinct stations
/// are all answered about one delay after they were sent, not one delay after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_reject_delay_is_a_timer_not_a_thread() {
    let delay = Duration::from_millis(1500);
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.reject_delay = delay;
    })
    .await;
    r.s.add_user("slow", "pw").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let mut sent = Vec::new();
    let start = Instant::now();
    for i in 0..50u8 {
        let req = Nas::access_request(
            i,
            100 + u64::from(i),
            "slow",
            "bad",
            &format!("st-{i}"),
            &[],
        );
        nas.send(&req.bytes).await;
        sent.push(req);
    }
    for _ in 0..50 {
        let raw = nas
            .recv(Duration::from_secs(30))
            .await
            .expect("missing reject");
        let req = sent.iter().find(|s| s.id == raw[1]).unwrap();
        assert_eq!(verify_reply(&raw, req), Code::AccessReject);
        assert!(start.elapsed() >= delay, "a reject came before the delay");
    }
    // Serialised, fifty delays would take 75 s.
    assert!(
        start.elapsed() < delay * 8,
        "rejects were delayed one after another: {:?}",
        start.elapsed()
    );
    r.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_ipv6_listener_and_nas() {
    let r = start_radius("[::1]:0", "::1", |c| {
        c.radius.reject_delay = Duration::from_millis(10);
    })
    .await;
    r.s.add_user("six", "pw6").await;
    let nas = Nas::bind("[::1]:0", r.addr).await;
    assert_eq!(
        nas.exchange(&Nas::access_request(1, 1, "six", "pw6", "st", &[]))
            .await
            .0,
        Code::AccessAccept
    );
    assert_eq!(
        nas.exchange(&Nas::access_request(2, 2, "six", "nope", "st", &[]))
            .await
            .0,
        Code::AccessReject
    );
    r.s.server.shutdown().await.unwrap();
}

/// A NAS added while the server runs is served after the next table refresh, without a
/// restart; one removed stops being served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_nas_table_refresh_reaches_a_running_server() {
    let r = start_radius("127.0.0.1:0", "127.0.0.7/32", |c| {
        c.radius.nas_refresh = Duration::from_secs(1);
    })
    .await;
    let late = portcullis_store::NasRecord {
        name: "late".into(),
        cidr: portcullis_store::nas::parse_nas_cidr("127.0.0.8").unwrap(),
        secret_sealed: portcullis_store::NasRecord::seal_secret(
            r.s.data.master_key(),
            "late",
            SECRET,
        )
        .unwrap(),
        require_message_authenticator: true,
        created_at: 0,
        certificate: None,
    };
    r.s.store().put_nas(&late).await.unwrap();
    let nas = Nas::bind("127.0.0.8:0", r.addr).await;
    // Retry like a NAS until the refresh picks it up (bounded).
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut answered = false;
    let mut salt = 0;
    while Instant::now() < deadline && !answered {
        salt += 1;
        let probe = Nas::status_server(1, salt);
        nas.send(&probe.bytes).await;
        if let Some(raw) = nas.recv(Duration::from_millis(500)).await {
            answered = verify_reply(&raw, &probe) == Code::AccessAccept;
        }
    }
    assert!(answered, "the NAS added at run time was never served");
    assert!(r.s.store().remove_nas("late").await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut silent = false;
    while Instant::now() < deadline && !silent {
        salt += 1;
        nas.send(&Nas::status_server(2, salt).bytes).await;
        silent = nas.recv(Duration::from_millis(1500)).await.is_none();
    }
    assert!(silent, "a removed NAS was still served");
    r.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_18_radius_outcomes_drops_and_duplicates_are_audited() {
    let audit_dir = tempfile::tempdir().unwrap();
    let audit_file = audit_dir.path().join("radius-audit.jsonl");
    let path = audit_file.clone();
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", move |c| {
        c.radius.reject_delay = Duration::from_millis(10);
        c.audit = portcullis_server::audit::AuditConfig {
            destination: portcullis_server::audit::Destination::File {
                path,
                max_bytes: 1 << 20,
                keep: 1,
            },
            per_source_limit: 1000,
            interval: Duration::from_secs(60),
        };
    })
    .await;
    r.s.add_user("rad", "radius right pw").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    let ok = Nas::access_request(1, 11, "rad", "radius right pw", "st-ok", &[]);
    assert_eq!(nas.exchange(&ok).await.0, Code::AccessAccept);
    let wrong = Nas::access_request(2, 12, "rad", "radius wrong pw", "st-bad", &[]);
    assert_eq!(nas.exchange(&wrong).await.0, Code::AccessReject);
    // The NAS retransmits after the answer: answered again from the cache.
    assert_eq!(nas.exchange(&wrong).await.0, Code::AccessReject);
    let mut bad_ma = Nas::access_request(3, 13, "rad", "radius right pw", "st", &[]).bytes;
    bad_ma[25] ^= 0xff;
    nas.send(&bad_ma).await;
    barrier(&nas, 14).await;
    r.s.server.shutdown().await.unwrap();

    let text = std::fs::read_to_string(&audit_file).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |o: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["outcome"] == o).collect()
    };
    assert_eq!(events.len(), 4, "{text}");
    let accepted = of("accepted");
    assert_eq!(accepted.len(), 1, "{text}");
    assert_eq!(accepted[0]["principal"], "rad");
    assert_eq!(
        accepted[0]["client_id"], "lab",
        "the NAS is the RADIUS client"
    );
    assert_eq!(accepted[0]["protocol"], "radius_pap");
    assert_eq!(accepted[0]["station"], "st-ok");
    assert_eq!(of("rejected").len(), 1);
    let dup = of("duplicate");
    assert_eq!(dup.len(), 1, "{text}");
    assert_eq!(dup[0]["reason"], "answered_again");
    let dropped = of("dropped");
    assert_eq!(dropped.len(), 1, "{text}");
    assert_eq!(dropped[0]["reason"], "bad_authenticator");
    assert!(!text.contains("radius right pw") && !text.contains("radius wrong pw"));
}
