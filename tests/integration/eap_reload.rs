//! Issue 25: SIGHUP re-reads the 802.1X door's files (certificate and key, client CAs,
//! CRLs) in the real `portcullis serve`: a certificate revoked by a new CRL stops logging
//! in, resumed or not, without a restart; devices whose sessions were made before the
//! reload keep resuming (ticket keys carry over); a file that does not pass the start-up
//! checks is refused and the files in force stay.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use portcullis_eap::peer::{Credentials, Peer};
use rustls::pki_types::ServerName;

use crate::eap_support::{Login, Pki, client_config, login};
use crate::process_support::{cli, serve};
use crate::radius_support::{Nas, SECRET};
use crate::reload::{hup, wait_for_log};

async fn log_in(nas: &Nas, cfg: &Arc<rustls::ClientConfig>, salt: &mut u64) -> Login {
    let mut peer = Peer::new(
        Arc::clone(cfg),
        ServerName::try_from("radius.test").unwrap(),
        "anonymous",
        Credentials::Tls,
    );
    login(nas, &mut peer, "02-00-00-00-00-0b", salt).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_sighup_rereads_eap_crls_and_sessions_keep_resuming() {
    let pki = Pki::new(&["frank", "mallet"]);
    let dir = pki.dir.path();
    let crl = dir.join("in-force.crl");
    std::fs::copy(pki.authority.crl("none", &[]).unwrap(), &crl).unwrap();
    let revoking = pki
        .authority
        .crl("revoking", &[pki.client("mallet")])
        .unwrap();
    let data = dir.join("data");
    cli(
        &data,
        &[
            "nas",
            "add",
            "lab",
            "--address",
            "127.0.0.0/8",
            "--secret-stdin",
        ],
        std::str::from_utf8(SECRET).unwrap(),
    );
    let config = dir.join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "[radius]\nlisten = [\"127.0.0.1:0\"]\naccess_reject_delay_ms = 100\naccess_reject_jitter_ms = 0\n\
             [radius.eap]\ncert = {:?}\nkey = {:?}\nclient_ca = {:?}\ncrl = [{crl:?}]\n\
             methods = [\"tls\"]\n",
            pki.server.cert, pki.server.key, pki.ca
        ),
    )
    .unwrap();
    let mut srv = serve(&config, &data);
    let line = wait_for_log(&srv.log, "RADIUS listening on udp ");
    let addr: SocketAddr = line.split("udp ").nth(1).unwrap().trim().parse().unwrap();
    let nas = Nas::bind("127.0.0.1:0", addr).await;
    let mut salt = 0;
    let frank = client_config(&pki, Some(pki.client("frank")));
    let mallet = client_config(&pki, Some(pki.client("mallet")));
    for (who, cfg) in [("frank", &frank), ("mallet", &mallet)] {
        let first = log_in(&nas, cfg, &mut salt).await;
        assert!(
            matches!(first, Login::Accepted { resumed: false, .. }),
            "{who} before the new CRL: {first:?}"
        );
    }

    std::fs::copy(&revoking, &crl).unwrap();
    hup(srv.child.id());
    let reloaded = wait_for_log(&srv.log, "radius.eap: reloaded");
    assert!(reloaded.contains("1 revoked"), "{reloaded}");
    // Made before the reload, still resumes: the ticket keys carried over.
    let again = log_in(&nas, &frank, &mut salt).await;
    assert!(
        matches!(again, Login::Accepted { resumed: true, .. }),
        "frank after the reload: {again:?}"
    );
    // Revoked now: neither its session nor a full handshake logs in.
    assert_eq!(log_in(&nas, &mallet, &mut salt).await, Login::Rejected);
    let fresh = client_config(&pki, Some(pki.client("mallet")));
    assert_eq!(log_in(&nas, &fresh, &mut salt).await, Login::Rejected);

    // A CRL file that does not parse is refused; the one in force stays.
    std::fs::write(&crl, "not a CRL").unwrap();
    hup(srv.child.id());
    let refused = wait_for_log(&srv.log, "radius.eap: reload refused");
    assert!(refused.contains("in-force.crl"), "{refused}");
    let fresh = client_config(&pki, Some(pki.client("mallet")));
    assert_eq!(log_in(&nas, &fresh, &mut salt).await, Login::Rejected);
    let fresh = client_config(&pki, Some(pki.client("frank")));
    assert!(matches!(
        log_in(&nas, &fresh, &mut salt).await,
        Login::Accepted { resumed: false, .. }
    ));
    srv.child.kill().unwrap();
    let _ = srv.child.wait();
}
