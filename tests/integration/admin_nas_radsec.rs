//! Issue 27: the admin API shows and sets a NAS's RadSec client certificate, in the forms
//! `portcullis nas add --certificate | --certificate-name` store, and the RadSec door
//! obeys what it set: a NAS created through the API with a pinned certificate is let in
//! over RadSec, and forgetting the certificate through the API shuts it out again.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use portcullis_radius::Code;
use portcullis_store::Grant;
use serde_json::json;

use crate::admin::{WRITE, call, text, token};
use crate::radsec_support::{RadsecServer, client_config, connect, login, start_radsec};

/// `sha256:<hex>` of a PEM certificate's DER, as OpenSSL computes the fingerprint (not
/// through the code under test).
fn openssl_pin(cert: &Path) -> String {
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(cert)
        .output()
        .expect("openssl (Debian openssl) is needed for this test");
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = text.split('=').nth(1).unwrap().trim().replace(':', "");
    format!("sha256:{}", hex.to_ascii_lowercase())
}

/// A RadSec login as fred with `cert`: the answer's code, or why the NAS was refused.
async fn attempt(r: &RadsecServer, cert: &portcullis_lab::certs::Pair) -> Result<Code, String> {
    let config = client_config(&r.certs.ca, Some(cert), &[]);
    let addr = r.addr;
    tokio::task::spawn_blocking(move || {
        connect(addr, config)
            .and_then(|mut c| login(&mut c, 5, "fred", "fr3d's password"))
            .map_err(|e| e.to_string())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_admin_api_shows_and_sets_a_nas_radsec_certificate() {
    let r = start_radsec(
        |_| {},
        |c| {
            c.radius.nas_refresh = Duration::from_secs(1);
            c.admin.listen = Some("127.0.0.1:0".parse().unwrap());
        },
    )
    .await;
    r.s.add_user("fred", "fr3d's password").await;
    let addr = r.s.server.admin_addr().unwrap();
    let ops =
        r.s.add_client("ops", &[Grant::ClientCredentials], &[WRITE])
            .await;
    let tok = token(&r.s, "ops", &ops).await;

    // What the CLI set is shown: ap1 pinned, ap2 by name (lower-cased).
    let a = call(addr, "GET", "/admin/v1/nas/ap1", Some(&tok), &[], None).await;
    assert_eq!(a.status, 200, "{}", text(&a));
    assert_eq!(a.json()["certificate"], openssl_pin(&r.certs.ap1.cert));
    let a = call(addr, "GET", "/admin/v1/nas/ap2", Some(&tok), &[], None).await;
    assert_eq!(a.json()["certificate"], "name:ap2.example.net");
    let ap2_tag = a.header("etag").unwrap().to_owned();

    // A certificate no NAS names is refused; created through the API with it pinned
    // (sent as PEM), it is let in once the door's NAS table is refreshed.
    assert!(attempt(&r, &r.certs.stranger).await.is_err());
    let pem = std::fs::read_to_string(&r.certs.stranger.cert).unwrap();
    let a = call(
        addr,
        "POST",
        "/admin/v1/nas",
        Some(&tok),
        &[],
        Some(&json!({"name": "ap3", "cidr": "127.0.0.0/24", "certificate_pem": pem})),
    )
    .await;
    assert_eq!(a.status, 201, "{}", text(&a));
    let pin = openssl_pin(&r.certs.stranger.cert);
    assert_eq!(a.json()["nas"]["certificate"], pin.as_str());
    let etag = a.header("etag").unwrap().to_owned();
    let stored = r.s.store().get_nas("ap3").await.unwrap().unwrap();
    assert_eq!(stored.certificate.unwrap().to_string(), pin);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match attempt(&r, &r.certs.stranger).await {
            Ok(code) => break assert_eq!(code, Code::AccessAccept),
            Err(e) => assert!(Instant::now() < deadline, "the API's pin never took: {e}"),
        }
    }

    // Wrong forms name the field; both forms at once are refused; nothing changes.
    for (body, pointer) in [
        (json!({"certificate": "sha256:zz"}), "/certificate"),
        (json!({"certificate": "ap3.example.net"}), "/certificate"),
        (
            json!({"certificate_pem": "not a certificate"}),
            "/certificate_pem",
        ),
        (
            json!({"certificate": "name:x.example", "certificate_pem": "x"}),
            "/certificate_pem",
        ),
    ] {
        let a = call(
            addr,
            "PATCH",
            "/admin/v1/nas/ap3",
            Some(&tok),
            &[("If-Match", &etag)],
            Some(&body),
        )
        .await;
        assert_eq!(a.status, 400, "{body}: {}", text(&a));
        assert_eq!(a.json()["errors"][0]["pointer"], pointer, "{body}");
    }
    // One certificate names one NAS: ap1's pin for ap2 is a conflict on /certificate.
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/nas/ap2",
        Some(&tok),
        &[("If-Match", &ap2_tag)],
        Some(&json!({"certificate": openssl_pin(&r.certs.ap1.cert)})),
    )
    .await;
    assert_eq!(a.status, 409, "{}", text(&a));
    assert_eq!(a.json()["errors"][0]["pointer"], "/certificate");
    assert_eq!(
        r.s.store()
            .get_nas("ap2")
            .await
            .unwrap()
            .unwrap()
            .certificate
            .unwrap()
            .to_string(),
        "name:ap2.example.net"
    );

    // `null` forgets it (a new ETag), and the NAS is shut out of RadSec again.
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/nas/ap3",
        Some(&tok),
        &[("If-Match", &etag)],
        Some(&json!({"certificate": null})),
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    assert!(a.json()["certificate"].is_null());
    assert_ne!(a.header("etag").unwrap(), etag);
    assert!(
        r.s.store()
            .get_nas("ap3")
            .await
            .unwrap()
            .unwrap()
            .certificate
            .is_none()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while attempt(&r, &r.certs.stranger).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "ap3 still served without a certificate"
        );
    }
    // By name, set through the API: matched case-insensitively, as the CLI's.
    let a = call(addr, "GET", "/admin/v1/nas/ap3", Some(&tok), &[], None).await;
    let etag = a.header("etag").unwrap().to_owned();
    let a = call(
        addr,
        "PATCH",
        "/admin/v1/nas/ap3",
        Some(&tok),
        &[("If-Match", &etag)],
        Some(&json!({"certificate": "name:Stranger.Example.NET"})),
    )
    .await;
    assert_eq!(a.status, 200, "{}", text(&a));
    assert_eq!(a.json()["certificate"], "name:stranger.example.net");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match attempt(&r, &r.certs.stranger).await {
            Ok(code) => break assert_eq!(code, Code::AccessAccept),
            Err(e) => assert!(Instant::now() < deadline, "the name never took: {e}"),
        }
    }
    r.s.server.shutdown().await.unwrap();
}
