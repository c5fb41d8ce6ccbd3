//! Helpers of the 802.1X tests: a throwaway PKI (two CAs), a server with `[radius.eap]`,
//! `eapol_test` (Debian `eapoltest`, installed by ./scripts/test through
//! scripts/radius-tools) with generated network blocks, and a NAS-side login loop over UDP
//! around the peer of `portcullis_eap`, which checks every reply and the MPPE keys.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use portcullis_eap::peer::{Peer, PeerStep};
use portcullis_lab::certs::{Pair, TestCa};
use portcullis_radius::{Code, Packet, attr, encode_request, mppe};
use portcullis_server::radius::eap::config::{EapConfig, FileEap};

use crate::radius_support::{Nas, RadiusServer, SECRET, Sent, start_radius, verify_reply};

/// Certificates of one test.
pub struct Pki {
    /// Holds the files.
    pub dir: tempfile::TempDir,
    /// The CA devices trust and the server trusts for client certificates.
    pub ca: PathBuf,
    /// The server's certificate.
    pub server: Pair,
    /// Client certificates by CN, issued by `ca`.
    pub clients: Vec<(String, Pair)>,
    /// A client certificate from another CA.
    pub foreign: Pair,
    /// The CA itself (to write CRLs).
    pub authority: TestCa,
}

impl Pki {
    /// A PKI with client certificates for `cns`.
    pub fn new(cns: &[&str]) -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new(dir.path(), "ca").unwrap();
        let server = ca.server("server", &["radius.test", "127.0.0.1"]).unwrap();
        let clients = cns
            .iter()
            .map(|cn| {
                (
                    (*cn).to_owned(),
                    ca.client(&format!("client-{cn}"), cn).unwrap(),
                )
            })
            .collect();
        let other = TestCa::new(dir.path(), "other-ca").unwrap();
        let foreign = other.client("foreign", "alice").unwrap();
        Pki {
            ca: ca.cert.clone(),
            server,
            clients,
            foreign,
            dir,
            authority: ca,
        }
    }

    /// The certificate of client `cn`.
    pub fn client(&self, cn: &str) -> &Pair {
        &self.clients.iter().find(|(c, _)| c == cn).unwrap().1
    }

    /// `[radius.eap]` over this PKI, changed by `tweak`.
    pub fn eap_config(&self, tweak: impl FnOnce(&mut FileEap)) -> EapConfig {
        let mut f = FileEap {
            cert: Some(self.server.cert.clone()),
            key: Some(self.server.key.clone()),
            client_ca: Some(self.ca.clone()),
            ..FileEap::default()
        };
        tweak(&mut f);
        EapConfig::from_file(f).unwrap().unwrap()
    }
}

/// A server with RADIUS and `[radius.eap]` on loopback (reject delay 100 ms).
pub async fn start_eap(pki: &Pki, tweak: impl FnOnce(&mut FileEap)) -> RadiusServer {
    let eap = pki.eap_config(tweak);
    start_radius("127.0.0.1:0", "127.0.0.0/8", move |c| {
        c.radius.reject_delay = Duration::from_millis(100);
        c.radius.eap = Some(eap);
    })
    .await
}

/// The `radius.eap` counters of `/status.json`.
pub async fn eap_counters(r: &RadiusServer) -> serde_json::Value {
    r.s.get("/status.json").await.json()["radius"]["eap"].clone()
}

/// What `eapol_test` printed and whether it succeeded.
pub struct EapolRun {
    /// Exit status 0 and "SUCCESS".
    pub success: bool,
    /// stdout and stderr.
    pub log: String,
}

impl EapolRun {
    /// Lines containing `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.log.lines().filter(|l| l.contains(needle)).count()
    }
}

/// Run `eapol_test` with the network block `network` (its inner lines) against `server`,
/// with `reauths` reauthentications (`-r`).
pub async fn eapol_test(
    dir: &Path,
    server: std::net::SocketAddr,
    network: &str,
    reauths: u32,
) -> EapolRun {
    let conf = dir.join(format!("eapol-{}.conf", rand_suffix()));
    std::fs::write(
        &conf,
        format!("network={{\n key_mgmt=IEEE8021X\n{network}\n}}\n"),
    )
    .unwrap();
    let secret = String::from_utf8(SECRET.to_vec()).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("eapol_test")
            .arg("-c")
            .arg(&conf)
            .args([
                "-a",
                &server.ip().to_string(),
                "-p",
                &server.port().to_string(),
            ])
            .args(["-s", &secret, "-t", "20", "-r", &reauths.to_string()])
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run eapol_test ({e}): ./scripts/test installs eapoltest")
            })
    })
    .await
    .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    EapolRun {
        success: out.status.success() && log.lines().any(|l| l == "SUCCESS"),
        log,
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// `phase1` forcing a TLS version in wpa_supplicant 2.10 (1.3 is off unless enabled).
pub fn phase1(v13: bool) -> &'static str {
    if v13 {
        "phase1=\"tls_disable_tlsv1_3=0\""
    } else {
        "phase1=\"tls_disable_tlsv1_3=1\""
    }
}

/// The network block of an EAP-TLS login with `pair`.
pub fn tls_network(pki: &Pki, identity: &str, pair: &Pair, v13: bool) -> String {
    format!(
        " eap=TLS\n identity=\"{identity}\"\n ca_cert=\"{}\"\n client_cert=\"{}\"\n private_key=\"{}\"\n {}",
        pki.ca.display(),
        pair.cert.display(),
        pair.key.display(),
        phase1(v13)
    )
}

/// The network block of a TTLS/PAP login.
pub fn ttls_network(pki: &Pki, user: &str, password: &str, v13: bool) -> String {
    format!(
        " eap=TTLS\n identity=\"{user}\"\n anonymous_identity=\"anonymous\"\n password=\"{password}\"\n ca_cert=\"{}\"\n phase2=\"auth=PAP\"\n {}",
        pki.ca.display(),
        phase1(v13)
    )
}

/// How a login through [`login`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Login {
    /// Access-Accept with EAP-Success and MPPE keys equal to the peer's.
    Accepted {
        /// The handshake was abbreviated.
        resumed: bool,
        /// Round trips.
        rounds: u32,
    },
    /// Access-Reject with EAP-Failure.
    Rejected,
}

/// One request of a login: EAP-Message split at 253 octets, State echoed.
pub fn eap_request(id: u8, salt: u64, station: &str, eap: &[u8], state: Option<&[u8]>) -> Sent {
    let mut authenticator = [0u8; 16];
    authenticator[..8].copy_from_slice(&salt.to_be_bytes());
    authenticator[8] = id;
    authenticator[9..].copy_from_slice(b"eap-nas");
    let mut attrs: Vec<(u8, &[u8])> = vec![
        (attr::USER_NAME, b"anonymous"),
        (attr::CALLING_STATION_ID, station.as_bytes()),
    ];
    attrs.extend(portcullis_eap::radius::split(eap).map(|c| (attr::EAP_MESSAGE, c)));
    if let Some(s) = state {
        attrs.push((attr::STATE, s));
    }
    let bytes = encode_request(Code::AccessRequest, id, authenticator, &attrs, SECRET).unwrap();
    Sent {
        bytes,
        id,
        authenticator,
    }
}

/// Run one login of `peer` through `nas`, checking every reply, and on Access-Accept that
/// the MS-MPPE keys decrypt to the keys the peer derived.
pub async fn login(nas: &Nas, peer: &mut Peer, station: &str, salt: &mut u64) -> Login {
    let mut eap = peer.identity_response(1);
    let mut state: Option<Vec<u8>> = None;
    let mut rounds = 0;
    loop {
        *salt += 1;
        let req = eap_request((*salt % 250) as u8, *salt, station, &eap, state.as_deref());
        nas.send(&req.bytes).await;
        let raw = nas
            .recv(Duration::from_secs(20))
            .await
            .expect("no reply within 20 s");
        let code = verify_reply(&raw, &req);
        let reply = Packet::parse(&raw).unwrap();
        let msg = portcullis_eap::radius::join(
            reply
                .attributes()
                .filter(|(t, _)| *t == attr::EAP_MESSAGE)
                .map(|(_, v)| v),
            4096,
        )
        .unwrap();
        match code {
            Code::AccessChallenge => {
                state = reply.attr(attr::STATE).map(<[u8]>::to_vec);
                assert!(state.is_some(), "a challenge carries State");
                rounds += 1;
                match peer.step(&msg).unwrap() {
                    PeerStep::Send(r) => eap = r,
                    other => panic!("peer ended on a challenge: {other:?}"),
                }
            }
            Code::AccessAccept => {
                let PeerStep::Success(Some(keys)) = peer.step(&msg).unwrap() else {
                    panic!("Access-Accept without EAP-Success")
                };
                let mut got = std::collections::BTreeMap::new();
                for (t, v) in reply.attributes() {
                    if t == attr::VENDOR_SPECIFIC {
                        let (vt, key) =
                            mppe::decode_key_attribute(v, SECRET, &req.authenticator).unwrap();
                        got.insert(vt, key);
                    }
                }
                assert_eq!(
                    got.get(&mppe::MS_MPPE_RECV_KEY).map(Vec::as_slice),
                    Some(keys.recv_key())
                );
                assert_eq!(
                    got.get(&mppe::MS_MPPE_SEND_KEY).map(Vec::as_slice),
                    Some(keys.send_key())
                );
                return Login::Accepted {
                    resumed: peer.resumed(),
                    rounds,
                };
            }
            Code::AccessReject => {
                assert!(
                    matches!(peer.step(&msg).unwrap(), PeerStep::Failure),
                    "Access-Reject carries EAP-Failure"
                );
                return Login::Rejected;
            }
            other => panic!("unexpected reply {other:?}"),
        }
    }
}

/// A rustls client configuration for a peer trusting `pki.ca`, with a client
/// certificate when given; keep it between logins to resume.
pub fn client_config(pki: &Pki, cert: Option<&Pair>) -> std::sync::Arc<rustls::ClientConfig> {
    let read = |p: &Path| std::fs::read(p).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    for c in CertificateDer::pem_slice_iter(&read(&pki.ca)) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let c = match cert {
        Some(p) => {
            let chain: Vec<_> = CertificateDer::pem_slice_iter(&read(&p.cert))
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_slice(&read(&p.key)).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
        None => b.with_no_client_auth(),
    };
    std::sync::Arc::new(c)
}
