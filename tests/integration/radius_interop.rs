//! Issue #12: unmodified third-party RADIUS clients against the in-process server:
//! FreeRADIUS' `radclient` (Debian `freeradius-utils`, installed by ./scripts/test) and
//! Python's `pyrad` (tests/interop/radius_pyrad.py, in the project .venv). Both check the
//! reply's identifier and Response Authenticator themselves; pyrad also the
//! Message-Authenticator. A missing client FAILS the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::radius_support::{Nas, SECRET, barrier, radclient, start_radius};

fn secret() -> String {
    String::from_utf8(SECRET.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_radclient_accept_reject_status_and_silence_without_message_authenticator() {
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.reject_delay = std::time::Duration::from_millis(100);
    })
    .await;
    r.s.add_user("fred", "fr3d's password").await;
    let addr = r.addr;
    let run = |kind: &'static str, attrs: &'static str, timeout: u32| {
        tokio::task::spawn_blocking(move || radclient(addr, kind, &secret(), attrs, 1, timeout))
    };
    let (ok, out) = run(
        "auth",
        "User-Name = fred, User-Password = \"fr3d's password\", Message-Authenticator = 0x00",
        10,
    )
    .await
    .unwrap();
    assert!(ok && out.contains("Received Access-Accept"), "{out}");
    assert!(out.contains("Message-Authenticator"), "{out}");
    let (ok, out) = run(
        "auth",
        "User-Name = fred, User-Password = wrong, Message-Authenticator = 0x00",
        10,
    )
    .await
    .unwrap();
    assert!(!ok && out.contains("Received Access-Reject"), "{out}");
    let (ok, out) = run("status", "Message-Authenticator = 0x00", 10)
        .await
        .unwrap();
    assert!(ok && out.contains("Received Access-Accept"), "{out}");
    // Without Message-Authenticator: radclient hears nothing.
    let (ok, out) = run(
        "auth",
        "User-Name = fred, User-Password = \"fr3d's password\"",
        2,
    )
    .await
    .unwrap();
    assert!(!ok && !out.contains("Received"), "{out}");
    // Make sure the server did see it, and dropped it on purpose.
    let nas = Nas::bind("127.0.0.1:0", r.addr).await;
    barrier(&nas, 99).await;
    let c = r.counters("lab").await;
    assert_eq!(c["dropped"]["bad_authenticator"], 1, "{c}");
    assert_eq!(c["accepts"], 1);
    assert_eq!(c["rejects"], 1);
    r.s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_pyrad_accept_reject_status_and_silence_without_message_authenticator() {
    let r = start_radius("127.0.0.1:0", "127.0.0.0/8", |c| {
        c.radius.reject_delay = Duration::from_millis(100);
    })
    .await;
    r.s.add_user("wilma", "w1lma pass").await;
    let args: Vec<std::ffi::OsString> = [
        "127.0.0.1".to_owned(),
        r.addr.port().to_string(),
        secret(),
        "wilma".into(),
        "w1lma pass".into(),
    ]
    .into_iter()
    .map(Into::into)
    .collect();
    let v = crate::server_interop::run_python("radius_pyrad.py", args).await;
    assert_eq!(v["right"]["code"], 2, "Access-Accept: {v}");
    assert_eq!(v["right"]["has_ma"], true);
    assert_eq!(
        v["right"]["proxy_state"], "pyrad-proxy-state",
        "Proxy-State echoed"
    );
    assert_eq!(v["wrong"]["code"], 3, "Access-Reject: {v}");
    assert_eq!(
        v["no_ma"],
        serde_json::Value::Null,
        "no answer without MA: {v}"
    );
    assert_eq!(
        v["status"], 2,
        "Status-Server answered with Access-Accept: {v}"
    );
    r.s.server.shutdown().await.unwrap();
}
