//! Issue 25: the load lab's 802.1X driver against an in-process Portcullis with
//! `[radius.eap]` (the throwaway PKI of `portcullis_lab::certs`): EAP-TLS and EAP-TTLS/PAP
//! stations with and without resumption and a TTLS guessing station. Every login the lab
//! counts (accepted full, accepted resumed, refused) must be one the server counted in
//! `/status.json`'s `radius.eap`, every accept's MS-MPPE keys matched the stations' own
//! (the run passes), and the stations that keep their sessions resumed.

// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use portcullis_lab::certs::TestCa;
use portcullis_lab::record::Outcome;
use portcullis_lab::scenario::EapMethod;
use portcullis_lab::{RunOptions, Scenario};
use portcullis_server::radius::eap::config::{EapConfig, FileEap};

use crate::radius_support::{SECRET, start_radius};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_lab_eap_logins_match_the_servers_counters() {
    // Heavy (hundreds of TLS handshakes): never beside the timing-sensitive tests.
    let _exclusive = crate::server_support::exclusive();
    let pki = tempfile::tempdir().unwrap();
    let ca = TestCa::new(pki.path(), "ca").unwrap();
    let server_pair = ca.server("server", &["127.0.0.1"]).unwrap();
    let station = ca.client("station", "lab-client-0").unwrap();
    let eap = EapConfig::from_file(FileEap {
        cert: Some(server_pair.cert.clone()),
        key: Some(server_pair.key.clone()),
        client_ca: Some(ca.cert.clone()),
        methods: vec!["tls".into(), "ttls".into()],
        ..FileEap::default()
    })
    .unwrap()
    .unwrap();
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", move |c| {
        c.radius.reject_delay = Duration::from_millis(200);
        c.radius.eap = Some(eap);
    })
    .await;
    r.put_lab_users(4).await;

    let secret = std::str::from_utf8(SECRET).unwrap();
    let (ca_path, cert, key) = (
        ca.cert.display().to_string(),
        station.cert.display().to_string(),
        station.key.display().to_string(),
    );
    let text = format!(
        r#"
name = "lab-eap"
[target]
url = "radius://{addr}"
[driver]
kind = "radius"
secret = "{secret}"
retransmit_ms = 1000
retries = 2
eap = {{ ca = "{ca_path}" }}
[principals]
count = 4
[run]
duration = "2s"
timeout = "8s"
[[group]]
name = "tls-resumed"
size = 2
principal_offset = 0
think = "50ms"
sources = "127.0.0.30-127.0.0.31"
eap = {{ method = "tls", resume = true, cert = "{cert}", key = "{key}", versions = ["1.3"] }}
[[group]]
name = "tls-full"
size = 1
principal_offset = 0
think = "50ms"
sources = "127.0.0.32"
eap = {{ method = "tls", cert = "{cert}", key = "{key}", versions = ["1.2"] }}
[[group]]
name = "ttls-resumed"
size = 2
principal_offset = 0
think = "50ms"
sources = "127.0.0.33-127.0.0.34"
eap = {{ method = "ttls", resume = true, versions = ["1.2"] }}
[[group]]
name = "ttls-full"
size = 1
principal_offset = 1
think = "50ms"
sources = "127.0.0.35"
eap = {{ method = "ttls", anonymous_identity = "anonymous", versions = ["1.3"] }}
[[group]]
name = "guesser"
credentials = "wrong_secret"
size = 1
principal_offset = 2
model = "open"
rate = 3.0
sources = "127.0.0.36"
honour_retry_after = false
eap = {{ method = "ttls" }}
"#,
        addr = r.addr
    );
    let scn = Scenario::parse(&text, None).unwrap();
    assert_eq!(scn.groups[1].eap.as_ref().unwrap().method, EapMethod::Tls);
    let res = portcullis_lab::run_scenario(&scn, &RunOptions::default())
        .await
        .unwrap();
    assert!(res.passed, "{:?}", res.failures);
    assert!(res.driver.contains("eap-tls"), "{}", res.driver);
    let rep = &res.repeats[0];
    assert_eq!((rep.misdelivered, rep.breaches), (0, 0));
    let group = |name: &str| rep.groups.iter().find(|g| g.name == name).unwrap();
    let eap = |name: &str| group(name).eap.clone().unwrap();
    for g in ["tls-resumed", "tls-full", "ttls-resumed", "ttls-full"] {
        let gr = group(g);
        assert_eq!(gr.success_rate, 1.0, "{g}: {gr:?}");
        assert_eq!(gr.outcomes[&Outcome::Timeout], 0, "{g}");
        assert!(eap(g).round_trips_mean >= 2.0, "{g}: {:?}", eap(g));
    }
    // Stations that keep their sessions resume after their first login; the others never.
    for g in ["tls-resumed", "ttls-resumed"] {
        let e = eap(g);
        assert!(
            e.accepted_full <= 2,
            "{g}: one full login per station: {e:?}"
        );
        assert!(e.accepted_resumed >= 2, "{g}: {e:?}");
    }
    for g in ["tls-full", "ttls-full"] {
        assert_eq!(eap(g).accepted_resumed, 0, "{g}");
        assert!(eap(g).accepted_full >= 2, "{g}");
    }
    let guesser = group("guesser");
    assert!(guesser.outcomes[&Outcome::AuthFailure] >= 3, "{guesser:?}");
    assert_eq!(guesser.outcomes[&Outcome::Timeout], 0);

    // The lab's counts are the server's.
    let status = r.s.get("/status.json").await.json()["radius"]["eap"].clone();
    let count = |k: &str| status[k].as_u64().unwrap();
    let sum = |groups: &[&str], f: fn(&portcullis_lab::eap::EapSummary) -> u64| -> u64 {
        groups.iter().map(|g| f(&eap(g))).sum()
    };
    let tls = ["tls-resumed", "tls-full"];
    let ttls = ["ttls-resumed", "ttls-full"];
    assert_eq!(
        count("tls_full"),
        sum(&tls, |e| e.accepted_full),
        "{status}"
    );
    assert_eq!(
        count("tls_resumed"),
        sum(&tls, |e| e.accepted_resumed),
        "{status}"
    );
    assert_eq!(
        count("ttls_full"),
        sum(&ttls, |e| e.accepted_full),
        "{status}"
    );
    assert_eq!(
        count("ttls_resumed"),
        sum(&ttls, |e| e.accepted_resumed),
        "{status}"
    );
    // Every reject the guesser saw: a failed conversation, or a new one refused before its
    // handshake because the throttle holds the guessing station (issue 25's `held`).
    assert_eq!(
        count("failures") + count("held"),
        guesser.outcomes[&Outcome::AuthFailure],
        "{status}"
    );
    let logins: u64 = rep
        .groups
        .iter()
        .filter_map(|g| g.eap.as_ref())
        .map(|e| e.logins)
        .sum();
    // Every login the lab began started a conversation, or was refused before one (held).
    assert_eq!(count("started") + count("held"), logins, "{status}");
}
