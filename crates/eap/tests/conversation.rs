//! Whole conversations between the server machine and the peer, in memory: EAP-TLS and
//! EAP-TTLS/PAP over TLS 1.2 and 1.3, full and resumed, with fragmentation, and the keys
//! checked three ways: the server's, the peer's, and an independent derivation from the
//! TLS secrets the client logs (PRF and exporter computed here with HMAC-SHA256).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hmac::{Hmac, Mac};
use portcullis_eap::peer::{Credentials, Peer, PeerStep};
use portcullis_eap::{Conversation, Decision, Pending, Settings, Start, Step, method};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

struct Pki {
    ca: CertificateDer<'static>,
    server: (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
    client: (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
    other_client: (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
}

fn issuer(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(
    ca: &CertifiedIssuer<'static, KeyPair>,
    cn: &str,
    eku: ExtendedKeyUsagePurpose,
) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let mut p = CertificateParams::new(vec![cn.to_owned()]).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.extended_key_usages = vec![eku];
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, ca).unwrap();
    (
        vec![cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

fn pki() -> Pki {
    let ca = issuer("eap test CA");
    let other = issuer("another CA");
    Pki {
        ca: ca.der().clone(),
        server: leaf(&ca, "radius.example", ExtendedKeyUsagePurpose::ServerAuth),
        client: leaf(&ca, "alice", ExtendedKeyUsagePurpose::ClientAuth),
        other_client: leaf(&other, "mallory", ExtendedKeyUsagePurpose::ClientAuth),
    }
}

/// SHA-256 suites only, so the independent derivation needs one hash.
fn provider() -> Arc<CryptoProvider> {
    let base = rustls::crypto::aws_lc_rs::default_provider();
    Arc::new(CryptoProvider {
        cipher_suites: base
            .cipher_suites
            .iter()
            .copied()
            .filter(|s| format!("{:?}", s.suite()).ends_with("SHA256"))
            .collect(),
        ..base
    })
}

static V13: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
static V12: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS12];

fn versions(v13: bool) -> &'static [&'static rustls::SupportedProtocolVersion] {
    if v13 { &V13 } else { &V12 }
}

fn settings(pki: &Pki, v13: bool) -> Settings {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.clone()).unwrap();
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .unwrap();
    let mk = |client_auth: bool| {
        let b = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(versions(v13))
            .unwrap();
        let b = if client_auth {
            b.with_client_cert_verifier(verifier.clone())
        } else {
            b.with_no_client_auth()
        };
        let mut c = b
            .with_single_cert(pki.server.0.clone(), pki.server.1.clone_key())
            .unwrap();
        c.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().unwrap();
        c.send_tls13_tickets = 1;
        c.key_log = Arc::new(portcullis_eap::SessionDigest);
        Arc::new(c)
    };
    Settings {
        tls: Some(mk(true)),
        ttls: Some(mk(false)),
        fragment_size: 300,
        max_message: 1 << 16,
        max_fragments: 256,
        max_rounds: 64,
    }
}

#[derive(Debug, Default)]
struct Secrets(Mutex<HashMap<String, Vec<u8>>>);

impl rustls::KeyLog for Secrets {
    fn will_log(&self, _label: &str) -> bool {
        true
    }
    fn log(&self, label: &str, _client_random: &[u8], secret: &[u8]) {
        self.0
            .lock()
            .unwrap()
            .insert(label.to_owned(), secret.to_vec());
    }
}

fn client(
    pki: &Pki,
    v13: bool,
    cert: Option<&(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    log: Arc<Secrets>,
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.clone()).unwrap();
    let b = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions(v13))
        .unwrap()
        .with_root_certificates(roots);
    let mut c = match cert {
        Some((chain, key)) => b
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .unwrap(),
        None => b.with_no_client_auth(),
    };
    c.key_log = log;
    Arc::new(c)
}

struct Outcome {
    accepted: Option<Box<portcullis_eap::Accepted>>,
    reason: Option<String>,
    detail: Option<String>,
    peer_keys: Option<Box<portcullis_eap::Keys>>,
    resumed_peer: bool,
    rounds: u32,
    verified: Vec<String>,
    /// How many responses `Conversation::may_be_costly` called costly.
    costly: usize,
}

/// Run one conversation; `decide` answers the machine's questions.
fn run(
    settings: &Settings,
    peer: &mut Peer,
    methods: &[u8],
    binding: [u8; 16],
    decide: &mut dyn FnMut(&Pending) -> Decision,
) -> Outcome {
    let start = Start {
        methods,
        framed_mtu: None,
        binding,
    };
    let first = peer.identity_response(7);
    let (conv, mut step) = Conversation::start(settings, &first, &start);
    let mut conv = conv;
    let mut verified = Vec::new();
    let mut costly = 0;
    loop {
        match step {
            Step::Challenge(req) => {
                let resp = match peer.step(&req).unwrap() {
                    PeerStep::Send(r) => r,
                    other => panic!("peer ended on a challenge: {other:?}"),
                };
                let c = conv.as_mut().unwrap();
                costly += usize::from(c.may_be_costly(&resp));
                step = c.step(settings, &resp);
            }
            Step::Verify(p) => {
                verified.push(
                    format!("{p:?}")
                        .split_whitespace()
                        .next()
                        .unwrap()
                        .to_owned(),
                );
                let d = decide(&p);
                step = conv.as_mut().unwrap().resolve(d);
            }
            Step::Accept(a) => {
                let PeerStep::Success(keys) = peer.step(&a.eap).unwrap() else {
                    panic!("peer did not take Success")
                };
                return Outcome {
                    rounds: conv.as_ref().unwrap().rounds(),
                    accepted: Some(a),
                    reason: None,
                    detail: None,
                    peer_keys: keys,
                    resumed_peer: peer.resumed(),
                    verified,
                    costly,
                };
            }
            Step::Reject { eap, reason } => {
                assert!(matches!(peer.step(&eap).unwrap(), PeerStep::Failure));
                return Outcome {
                    rounds: conv.as_ref().map_or(0, Conversation::rounds),
                    accepted: None,
                    reason: Some(reason.label().to_owned()),
                    detail: Some(format!("{reason:?}")),
                    peer_keys: None,
                    resumed_peer: false,
                    verified,
                    costly,
                };
            }
            Step::Discard(why) => panic!("discarded: {why}"),
        }
    }
}

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(key).unwrap();
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().to_vec()
}

/// TLS 1.2 P_SHA256 (RFC 5246 §5).
fn prf12(secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Vec<u8> {
    let s: Vec<u8> = [label, seed].concat();
    let mut a = hmac(secret, &[&s]);
    let mut out = Vec::new();
    while out.len() < len {
        out.extend(hmac(secret, &[&a, &s]));
        a = hmac(secret, &[&a]);
    }
    out.truncate(len);
    out
}

fn expand_label(secret: &[u8], label: &str, ctx: &[u8], len: usize) -> Vec<u8> {
    let full = format!("tls13 {label}");
    let mut info = (len as u16).to_be_bytes().to_vec();
    info.push(full.len() as u8);
    info.extend(full.as_bytes());
    info.push(ctx.len() as u8);
    info.extend(ctx);
    let mut out = Vec::new();
    let mut t = Vec::new();
    let mut i = 1u8;
    while out.len() < len {
        t = hmac(secret, &[&t, &info, &[i]]);
        out.extend(&t);
        i += 1;
    }
    out.truncate(len);
    out
}

/// TLS 1.3 exporter (RFC 8446 §7.5) from EXPORTER_SECRET.
fn exporter13(exporter_secret: &[u8], label: &str, ctx: &[u8], len: usize) -> Vec<u8> {
    let derived = expand_label(exporter_secret, label, &Sha256::digest(b""), 32);
    expand_label(&derived, "exporter", &Sha256::digest(ctx), len)
}

fn independent_msk(
    log: &Secrets,
    conn: &rustls::ClientConnection,
    m: u8,
    v13: bool,
    randoms: ([u8; 32], [u8; 32]),
) -> Vec<u8> {
    let secrets = log.0.lock().unwrap();
    let _ = conn;
    if v13 {
        exporter13(
            &secrets["EXPORTER_SECRET"],
            "EXPORTER_EAP_TLS_Key_Material",
            &[m],
            128,
        )
    } else {
        let label: &[u8] = if m == method::TTLS {
            b"ttls keying material"
        } else {
            b"client EAP encryption"
        };
        prf12(
            &secrets["CLIENT_RANDOM"],
            label,
            &[randoms.0, randoms.1].concat(),
            128,
        )
    }
}

fn randoms_of(a: &portcullis_eap::Accepted) -> ([u8; 32], [u8; 32]) {
    let id = a.keys.session_id.as_ref().unwrap();
    let mut c = [0u8; 32];
    let mut s = [0u8; 32];
    c.copy_from_slice(&id[1..33]);
    s.copy_from_slice(&id[33..65]);
    (c, s)
}

fn allow(p: &Pending) -> Decision {
    match p {
        Pending::Password { user, password } => {
            if &password[..] == b"correct horse" {
                Decision::Allow {
                    identity: user.clone(),
                }
            } else {
                Decision::Deny("wrong_password")
            }
        }
        Pending::Certificate { chain, .. } => {
            assert!(!chain.is_empty(), "EAP-TLS always has the peer's chain");
            Decision::Allow {
                identity: "alice".into(),
            }
        }
        Pending::Resumption { .. } => Decision::Allow {
            identity: "alice".into(),
        },
    }
}

#[test]
fn issue_25_tls_and_ttls_full_and_resumed_with_keys_derived_independently() {
    let pki = pki();
    for v13 in [false, true] {
        let s = settings(&pki, v13);
        for m in [method::TLS, method::TTLS] {
            let log = Arc::new(Secrets::default());
            let (cert, creds) = if m == method::TLS {
                (Some(&pki.client), Credentials::Tls)
            } else {
                (
                    None,
                    Credentials::TtlsPap {
                        user: "alice".into(),
                        password: Zeroizing::new(b"correct horse".to_vec()),
                    },
                )
            };
            let cfg = client(&pki, v13, cert, Arc::clone(&log));
            let name = ServerName::try_from("radius.example").unwrap();
            let mut resumed_rounds = Vec::new();
            let mut first_binding = None;
            let mut full_rounds = 0;
            for attempt in 0..3 {
                let mut peer =
                    Peer::new(Arc::clone(&cfg), name.clone(), "anonymous", creds.clone());
                let o = run(&s, &mut peer, &[m], [attempt; 16], &mut allow);
                let a = o
                    .accepted
                    .unwrap_or_else(|| panic!("v13={v13} m={m} attempt {attempt}: {:?}", o.detail));
                let peer_keys = o.peer_keys.expect("peer keys");
                assert_eq!(&a.keys.msk[..], &peer_keys.msk[..], "MSK, v13={v13} m={m}");
                assert_eq!(&a.keys.emsk[..], &peer_keys.emsk[..]);
                assert_eq!(a.keys.session_id, peer_keys.session_id);
                let sid = a.keys.session_id.as_ref().unwrap();
                assert_eq!((sid.len(), sid[0]), (65, m));
                let randoms = if v13 {
                    ([0; 32], [0; 32])
                } else {
                    randoms_of(&a)
                };
                let want = independent_msk(&log, peer.connection().unwrap(), m, v13, randoms);
                assert_eq!(
                    &a.keys.msk[..],
                    &want[..64],
                    "independent MSK (Recv||Send keys)"
                );
                assert_eq!(&a.keys.emsk[..], &want[64..], "independent EMSK");
                assert_eq!(a.tls13, v13);
                assert_eq!(a.resumed, attempt > 0, "v13={v13} m={m} attempt {attempt}");
                assert_eq!(o.resumed_peer, a.resumed);
                if m == method::TTLS {
                    let want = if attempt == 0 {
                        "Password"
                    } else {
                        "Resumption"
                    };
                    assert_eq!(o.verified, [want]);
                    if v13 {
                        assert_eq!(a.binding, Some([attempt; 16]));
                    } else {
                        // TLS 1.2: the master secret's digest, shared by resumed sessions.
                        let b = a.binding.expect("binding");
                        if attempt == 0 {
                            first_binding = Some(b);
                        } else {
                            assert_eq!(Some(b), first_binding);
                        }
                    }
                } else {
                    assert_eq!(o.verified, ["Certificate"]);
                }
                // A full handshake signs on its ClientHello and verifies the client's
                // flight; a resumption does neither, even when its ClientHello (a ticket
                // with the client's chain) spans fragments.
                assert_eq!(
                    o.costly,
                    if attempt == 0 { 2 } else { 0 },
                    "costly steps, v13={v13} m={m} attempt {attempt}"
                );
                if attempt > 0 {
                    resumed_rounds.push(o.rounds);
                } else {
                    full_rounds = o.rounds;
                    assert!(
                        o.rounds >= 3,
                        "a full handshake with 300-octet fragments takes several rounds"
                    );
                }
            }
            assert!(
                resumed_rounds.iter().all(|r| *r < full_rounds),
                "resumed rounds {resumed_rounds:?}"
            );
        }
    }
}

#[test]
fn issue_25_refusals_end_in_failure_with_a_reason() {
    let pki = pki();
    let s = settings(&pki, false);
    let name = ServerName::try_from("radius.example").unwrap();
    // Wrong TTLS password: the caller denies.
    let cfg = client(&pki, false, None, Arc::new(Secrets::default()));
    let mut peer = Peer::new(
        Arc::clone(&cfg),
        name.clone(),
        "anonymous",
        Credentials::TtlsPap {
            user: "alice".into(),
            password: Zeroizing::new(b"guess".to_vec()),
        },
    );
    let o = run(&s, &mut peer, &[method::TTLS], [1; 16], &mut allow);
    assert_eq!(o.reason.as_deref(), Some("wrong_password"));
    // A client certificate from another CA: the handshake fails.
    let cfg = client(
        &pki,
        false,
        Some(&pki.other_client),
        Arc::new(Secrets::default()),
    );
    let mut peer = Peer::new(cfg, name.clone(), "mallory", Credentials::Tls);
    let o = run(
        &s,
        &mut peer,
        &[method::TLS, method::TTLS],
        [2; 16],
        &mut allow,
    );
    assert_eq!(o.reason.as_deref(), Some("tls_handshake"));
    // The server proposes TTLS, the peer wants TLS: Nak then TLS.
    let cfg = client(&pki, true, Some(&pki.client), Arc::new(Secrets::default()));
    let settings13 = settings(&pki, true);
    let mut peer = Peer::new(cfg, name.clone(), "alice", Credentials::Tls);
    let o = run(
        &settings13,
        &mut peer,
        &[method::TTLS, method::TLS],
        [3; 16],
        &mut allow,
    );
    assert!(o.accepted.is_some(), "{:?}", o.reason);
    // Only TTLS allowed for this NAS and the peer wants TLS: no common method.
    let cfg = client(&pki, false, Some(&pki.client), Arc::new(Secrets::default()));
    let mut peer = Peer::new(cfg, name, "alice", Credentials::Tls);
    let o = run(&s, &mut peer, &[method::TTLS], [4; 16], &mut allow);
    assert_eq!(o.reason.as_deref(), Some("no_common_method"));
}

#[test]
fn issue_25_peap_gets_a_failure_naming_the_nt_hash() {
    let pki = pki();
    let s = settings(&pki, false);
    let start = Start {
        methods: &[method::TTLS, method::TLS],
        framed_mtu: Some(1400),
        binding: [0; 16],
    };
    let identity =
        portcullis_eap::packet::encode(portcullis_eap::Code::Response, 1, method::IDENTITY, b"bob")
            .unwrap();
    let (conv, step) = Conversation::start(&s, &identity, &start);
    let mut conv = conv.unwrap();
    let Step::Challenge(req) = step else { panic!() };
    let nak = portcullis_eap::packet::encode(
        portcullis_eap::Code::Response,
        req[1],
        method::NAK,
        &[method::PEAP, method::MSCHAPV2],
    )
    .unwrap();
    let Step::Reject { eap, reason } = conv.step(&s, &nak) else {
        panic!()
    };
    assert_eq!(reason.label(), "nt_hash_method");
    assert_eq!(eap[0], 4, "EAP-Failure");
}

#[test]
fn issue_25_hostile_responses_never_panic_and_stay_bounded() {
    let pki = pki();
    let s = settings(&pki, true);
    let start = Start {
        methods: &[method::TTLS],
        framed_mtu: None,
        binding: [0; 16],
    };
    let identity =
        portcullis_eap::packet::encode(portcullis_eap::Code::Response, 1, method::IDENTITY, b"x")
            .unwrap();
    // Endless fragments: refused once the per-message cap is reached.
    let (conv, step) = Conversation::start(&s, &identity, &start);
    let mut conv = conv.unwrap();
    let Step::Challenge(mut req) = step else {
        panic!()
    };
    let mut n = 0;
    loop {
        let frag = portcullis_eap::packet::encode(
            portcullis_eap::Code::Response,
            req[1],
            method::TTLS,
            &[0x40, 22, 3, 1],
        )
        .unwrap();
        match conv.step(&s, &frag) {
            Step::Challenge(r) => req = r,
            Step::Reject { reason, .. } => {
                assert!(
                    ["protocol", "too_many_rounds"].contains(&reason.label()),
                    "{reason:?}"
                );
                break;
            }
            other => panic!("{other:?}"),
        }
        n += 1;
        assert!(n <= 64, "bounded by max_rounds");
    }
    // Wrong identifier: discarded, the conversation unchanged.
    let (conv, step) = Conversation::start(&s, &identity, &start);
    let mut conv = conv.unwrap();
    let Step::Challenge(req) = step else { panic!() };
    let wrong = portcullis_eap::packet::encode(
        portcullis_eap::Code::Response,
        req[1].wrapping_add(9),
        method::TTLS,
        &[0],
    )
    .unwrap();
    assert!(matches!(
        conv.step(&s, &wrong),
        Step::Discard("identifier_mismatch")
    ));
    // Garbage TLS: a handshake failure, not a panic.
    let junk = portcullis_eap::packet::encode(
        portcullis_eap::Code::Response,
        req[1],
        method::TTLS,
        &[0, 99, 3, 3, 0, 1, 0],
    )
    .unwrap();
    assert!(matches!(conv.step(&s, &junk), Step::Reject { .. }));
    // A method message with no conversation.
    let stray =
        portcullis_eap::packet::encode(portcullis_eap::Code::Response, 5, method::TLS, &[0])
            .unwrap();
    let (conv, step) = Conversation::start(&s, &stray, &start);
    assert!(conv.is_none() && matches!(step, Step::Reject { .. }));
}

/// Found by the `eap_conversation` fuzz target: a malformed EAP-Message fed to a finished
/// conversation was answered with a second EAP-Failure (and one after an EAP-Success)
/// instead of being dropped. The fuzzer's input, `[32, 11, 2, 2, 2, 2, 2, 2, 0, 2]`: a
/// TTLS peer over TLS 1.3 against the methods [TLS, TTLS] (binding 11), the peer's own
/// answers up to its Finished (a resumed handshake there), the caller denying, then the
/// peer's last answer again and an empty EAP-Message.
#[test]
fn issue_25_fuzz_nothing_but_discard_after_the_end() {
    let pki = pki();
    let s = settings(&pki, true);
    let name = ServerName::try_from("radius.example").unwrap();
    let cfg = client(&pki, true, None, Arc::new(Secrets::default()));
    for deny in [true, false] {
        let mut peer = Peer::new(
            Arc::clone(&cfg),
            name.clone(),
            "anonymous",
            Credentials::TtlsPap {
                user: "alice".into(),
                password: Zeroizing::new(b"correct horse".to_vec()),
            },
        );
        let start = Start {
            methods: &[method::TLS, method::TTLS],
            framed_mtu: None,
            binding: [11; 16],
        };
        let (conv, mut step) = Conversation::start(&s, &peer.identity_response(11), &start);
        let mut conv = conv.unwrap();
        let mut last = Vec::new();
        loop {
            step = match step {
                Step::Challenge(req) => {
                    let PeerStep::Send(r) = peer.step(&req).unwrap() else {
                        panic!("peer ended on a challenge")
                    };
                    last = r;
                    conv.step(&s, &last)
                }
                Step::Verify(_) if deny => conv.resolve(Decision::Deny("fuzz")),
                Step::Verify(_) => conv.resolve(Decision::Allow {
                    identity: "alice".into(),
                }),
                Step::Accept(_) => {
                    assert!(!deny);
                    break;
                }
                Step::Reject { reason, .. } => {
                    assert!(deny && reason.label() == "fuzz", "{reason:?}");
                    break;
                }
                Step::Discard(why) => panic!("discarded: {why}"),
            };
        }
        assert!(conv.is_done());
        let rounds = conv.rounds();
        let id = last[1];
        let late = [
            last.clone(),
            Vec::new(),
            vec![2, id, 0],
            portcullis_eap::packet::success(id),
            portcullis_eap::packet::encode(portcullis_eap::Code::Response, id, 99, &[]).unwrap(),
        ];
        for eap in &late {
            assert!(
                matches!(conv.step(&s, eap), Step::Discard("conversation_over")),
                "after the end, {eap:?}"
            );
        }
        assert_eq!(conv.rounds(), rounds);
    }
}
