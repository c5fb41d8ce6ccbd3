//! Issue 25: a station guessing TTLS passwords stops costing TLS handshakes. The core's
//! throttle refuses its guesses without a hash once its budget for the user from that
//! station is spent; from then on the door answers the station's *new* conversations with
//! EAP-Failure before any TLS (`radius/eap/hold.rs`), while other stations, and the same
//! user from another station, log in as before. Driven by the NAS-side loop of
//! `eap_support` (the crate's peer over UDP), which checks every reply and the keys.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use portcullis_eap::peer::{Credentials, Peer};
use rustls::pki_types::ServerName;
use zeroize::Zeroizing;

use crate::eap_support::{Login, Pki, client_config, eap_counters, login, start_eap};
use crate::radius_support::Nas;

fn ttls_peer(cfg: &Arc<rustls::ClientConfig>, user: &str, password: &str) -> Peer {
    Peer::new(
        Arc::clone(cfg),
        ServerName::try_from("radius.test").unwrap(),
        "anonymous",
        Credentials::TtlsPap {
            user: user.into(),
            password: Zeroizing::new(password.as_bytes().to_vec()),
        },
    )
}

fn counter(c: &serde_json::Value, name: &str) -> u64 {
    c[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name} in {c}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_a_throttled_guessing_station_spends_no_handshake_and_others_still_log_in() {
    let pki = Pki::new(&[]);
    let r = start_eap(&pki, |_| {}).await;
    r.s.add_user("alice", "correct horse battery").await;
    r.s.add_user("bob", "bobs password").await;
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    // A fresh client configuration per login: no session to resume, every login a full
    // handshake unless the door refuses it first.
    let fresh = || client_config(&pki, None);
    let guesser = "02-00-00-00-00-66";
    let mut salt = 0;
    // The budget of one user from one station (the default `principal_prefix`).
    let k = portcullis_core::ThrottleConfig::default()
        .principal_prefix
        .burst;
    for i in 0..k {
        let mut p = ttls_peer(&fresh(), "alice", &format!("guess {i}"));
        assert_eq!(
            login(&nas, &mut p, guesser, &mut salt).await,
            Login::Rejected
        );
    }
    let before = eap_counters(&r).await;
    assert_eq!(
        counter(&before, "full_handshakes"),
        u64::from(k),
        "each wrong guess cost a handshake: {before}"
    );
    // The budget is spent: the station's next conversations are refused before TLS,
    // even with the right password (the core would refuse the attempt without a hash).
    for password in ["guess again", "and again", "correct horse battery"] {
        let mut p = ttls_peer(&fresh(), "alice", password);
        assert_eq!(
            login(&nas, &mut p, guesser, &mut salt).await,
            Login::Rejected
        );
    }
    let held = eap_counters(&r).await;
    assert_eq!(
        counter(&held, "full_handshakes"),
        counter(&before, "full_handshakes"),
        "a held station spends no handshake: {held}"
    );
    assert_eq!(
        counter(&held, "held"),
        counter(&before, "held") + 3,
        "{held}"
    );
    assert_eq!(
        counter(&held, "started"),
        counter(&before, "started"),
        "{held}"
    );
    // The innocent: the same user from another station, and another user.
    let mut p = ttls_peer(&fresh(), "alice", "correct horse battery");
    let got = login(&nas, &mut p, "02-00-00-00-00-0a", &mut salt).await;
    assert!(
        matches!(got, Login::Accepted { resumed: false, .. }),
        "{got:?}"
    );
    let mut p = ttls_peer(&fresh(), "bob", "bobs password");
    let got = login(&nas, &mut p, "02-00-00-00-00-0b", &mut salt).await;
    assert!(
        matches!(got, Login::Accepted { resumed: false, .. }),
        "{got:?}"
    );
    let after = eap_counters(&r).await;
    assert_eq!(
        counter(&after, "full_handshakes"),
        counter(&held, "full_handshakes") + 2,
        "{after}"
    );
    assert_eq!(counter(&after, "ttls_full"), 2, "{after}");
}
