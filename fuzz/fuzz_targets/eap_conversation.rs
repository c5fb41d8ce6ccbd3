//! Fuzz the server's EAP conversation machine (issue 25, crates/eap/src/conversation.rs)
//! with attacker-controlled EAP-Responses, as the RADIUS door feeds them: start a
//! conversation, then answer each Access-Challenge with a response taken from the input
//! (raw, raw with the right identifier and length patched in, a real peer's answer, or
//! that answer with one octet flipped), and answer `Step::Verify` with a decision from the
//! input. The TLS servers (EAP-TLS with a client certificate required, EAP-TTLS) and the
//! peers' TLS clients are built once, with a throwaway CA made by rcgen at first use;
//! their session caches and tickets live across runs, so resumed handshakes are reached
//! too.
//!
//! Checked: no panic; a conversation is kept exactly when a Challenge goes out; every
//! Challenge is a Request one identifier past the last, with at most the fragment size of
//! TLS octets; Success and Failure carry the last Request's identifier; an Accept comes
//! only after the caller allowed; a Discard changes nothing; nothing but Discard comes
//! after the end; rounds stay within `max_rounds`; and, once the input runs out, answering
//! every Challenge with an acknowledgement ends the conversation within `max_rounds`.
//! When a real peer finishes, its MSK/EMSK equal the server's.
//!
//! Input: an options octet (methods, Framed-MTU, EAP-Start, which peer, TLS 1.2 or 1.3),
//! a seed octet (binding, Framed-MTU/8), then records: a control octet whose low two bits
//! pick the source (0 raw, 1 raw with code/identifier/length fixed, 2 the peer's answer,
//! 3 the peer's answer with one octet xored), a two-octet length and the octets for 0 and
//! 1, a two-octet position and an xor octet for 3. At each `Step::Verify` one octet is
//! read: 2 mod 4 denies, 3 mod 4 feeds the next record instead of deciding, else allow.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use portcullis_eap::fragment::TlsData;
use portcullis_eap::packet::{self, Code, Packet};
use portcullis_eap::peer::{Credentials, Peer, PeerStep};
use portcullis_eap::{Conversation, Decision, Pending, Settings, Start, Step, method};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use zeroize::Zeroizing;

/// Fragment size of the settings (before Framed-MTU lowers it).
const FRAGMENT: usize = 300;
const MAX_ROUNDS: u32 = 40;
const IDENTITY: &str = "fuzz-identity";

struct World {
    settings: Settings,
    /// Peer TLS clients: `[tls13][with client certificate]`.
    clients: [[Arc<rustls::ClientConfig>; 2]; 2],
}

type Chain = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn leaf(ca: &CertifiedIssuer<'static, KeyPair>, cn: &str, eku: ExtendedKeyUsagePurpose) -> Chain {
    let mut p = CertificateParams::new(vec![cn.to_owned()])
        .unwrap_or_else(|e| panic!("certificate params: {e}"));
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.extended_key_usages = vec![eku];
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("key: {e}"));
    let cert = p
        .signed_by(&key, ca)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    (
        vec![cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let mut p = CertificateParams::new(Vec::<String>::new())
            .unwrap_or_else(|e| panic!("CA params: {e}"));
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "eap fuzz CA");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca = CertifiedIssuer::self_signed(
            p,
            KeyPair::generate().unwrap_or_else(|e| panic!("CA key: {e}")),
        )
        .unwrap_or_else(|e| panic!("CA: {e}"));
        let server = leaf(&ca, "radius.example", ExtendedKeyUsagePurpose::ServerAuth);
        let client = leaf(&ca, "alice", ExtendedKeyUsagePurpose::ClientAuth);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca.der().clone())
            .unwrap_or_else(|e| panic!("root: {e}"));
        let roots = Arc::new(roots);
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .unwrap_or_else(|e| panic!("client verifier: {e}"));
        let server_config = |client_auth: bool| {
            let b = rustls::ServerConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(rustls::ALL_VERSIONS)
                .unwrap_or_else(|e| panic!("versions: {e}"));
            let b = if client_auth {
                b.with_client_cert_verifier(verifier.clone())
            } else {
                b.with_no_client_auth()
            };
            let mut c = b
                .with_single_cert(server.0.clone(), server.1.clone_key())
                .unwrap_or_else(|e| panic!("server certificate: {e}"));
            c.ticketer =
                rustls::crypto::aws_lc_rs::Ticketer::new().unwrap_or_else(|e| panic!("{e}"));
            c.send_tls13_tickets = 1;
            c.key_log = Arc::new(portcullis_eap::SessionDigest);
            Arc::new(c)
        };
        let client_config = |tls13: bool, cert: bool| {
            let v: &[&rustls::SupportedProtocolVersion] = if tls13 {
                &[&rustls::version::TLS13]
            } else {
                &[&rustls::version::TLS12]
            };
            let b = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(v)
                .unwrap_or_else(|e| panic!("versions: {e}"))
                .with_root_certificates(roots.clone());
            Arc::new(if cert {
                b.with_client_auth_cert(client.0.clone(), client.1.clone_key())
                    .unwrap_or_else(|e| panic!("client certificate: {e}"))
            } else {
                b.with_no_client_auth()
            })
        };
        World {
            settings: Settings {
                tls: Some(server_config(true)),
                ttls: Some(server_config(false)),
                fragment_size: FRAGMENT,
                max_message: 1 << 14,
                max_fragments: 32,
                max_rounds: MAX_ROUNDS,
            },
            clients: [
                [client_config(false, false), client_config(false, true)],
                [client_config(true, false), client_config(true, true)],
            ],
        }
    })
}

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn u16(&mut self) -> Option<usize> {
        Some(usize::from(self.byte()?) << 8 | usize::from(self.byte()?))
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

/// An acknowledgement of `challenge` (right identifier and method), or an Identity
/// response before any challenge.
fn ack(challenge: Option<&[u8]>) -> Vec<u8> {
    let (id, m) = match challenge.and_then(|c| Packet::parse(c).ok()) {
        Some(p) => (p.identifier, p.method.unwrap_or(method::IDENTITY)),
        None => (0, method::IDENTITY),
    };
    let data: &[u8] = if m == method::IDENTITY {
        b"anonymous"
    } else {
        &[0]
    };
    packet::encode(Code::Response, id, m, data).unwrap_or_default()
}

/// The next response from the input; `None` when it is exhausted.
fn next_response(
    input: &mut Input<'_>,
    challenge: Option<&[u8]>,
    peer_answer: Option<&[u8]>,
) -> Option<Vec<u8>> {
    let ctl = input.byte()?;
    Some(match ctl % 4 {
        0 => {
            let n = input.u16().unwrap_or(0);
            input.bytes(n).to_vec()
        }
        1 => {
            let n = input.u16().unwrap_or(0);
            let mut r = input.bytes(n).to_vec();
            if r.len() >= 4 {
                let id = challenge.map_or(0, |c| c[1]);
                let len = u16::try_from(r.len()).unwrap_or(u16::MAX).to_be_bytes();
                r[0] = Code::Response.as_u8();
                r[1] = id;
                r[2..4].copy_from_slice(&len);
            }
            r
        }
        2 => peer_answer.map_or_else(|| ack(challenge), <[u8]>::to_vec),
        _ => {
            let pos = input.u16().unwrap_or(0);
            let x = input.byte().unwrap_or(0);
            let mut r = peer_answer.map_or_else(|| ack(challenge), <[u8]>::to_vec);
            if !r.is_empty() {
                let i = pos % r.len();
                r[i] ^= x;
            }
            r
        }
    })
}

fn check_pending(p: &Pending) {
    match p {
        Pending::Password { user, password } => {
            assert!(user.chars().count() <= 253);
            assert!(password.last() != Some(&0), "trailing NULs are removed");
        }
        Pending::Certificate { chain, .. } => {
            assert!(
                !chain.is_empty(),
                "EAP-TLS asked to authorise an empty chain"
            );
        }
        Pending::Resumption { .. } => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    let s = &w.settings;
    let mut input = Input(data);
    let Some(opts) = input.byte() else {
        return;
    };
    let seed = input.byte().unwrap_or(0);
    let methods: &[u8] = match opts & 3 {
        0 => &[method::TLS, method::TTLS],
        1 => &[method::TTLS, method::TLS],
        2 => &[method::TLS],
        _ => &[method::TTLS],
    };
    let framed_mtu = (opts & 4 != 0).then_some(usize::from(seed) * 8);
    let fragment = framed_mtu.map_or(FRAGMENT, |m| FRAGMENT.min(m.saturating_sub(14)).max(64));
    let tls13 = opts & 0x40 == 0;
    let name = ServerName::try_from("radius.example").unwrap_or_else(|e| panic!("{e}"));
    let client = |cert: bool| Arc::clone(&w.clients[usize::from(tls13)][usize::from(cert)]);
    let mut peer = match (opts >> 4) & 3 {
        0 => None,
        1 => Some(Peer::new(client(true), name, "alice", Credentials::Tls)),
        2 => Some(Peer::new(
            client(false),
            name,
            "anonymous",
            Credentials::TtlsPap {
                user: "alice".into(),
                password: Zeroizing::new(b"correct horse".to_vec()),
            },
        )),
        _ => Some(Peer::new(client(false), name, "nocert", Credentials::Tls)),
    };
    let start = Start {
        methods,
        framed_mtu,
        binding: [seed; 16],
    };
    let first = if opts & 8 != 0 {
        Vec::new()
    } else {
        let identity = peer.as_ref().map(|p| p.identity_response(seed));
        let Some(r) = next_response(&mut input, None, identity.as_deref()) else {
            return;
        };
        r
    };
    let (conv, mut step) = Conversation::start(s, &first, &start);
    let Some(mut conv) = conv else {
        assert!(
            !matches!(step, Step::Challenge(_) | Step::Verify(_) | Step::Accept(_)),
            "a conversation not kept, yet it goes on: {step:?}"
        );
        return;
    };
    assert!(
        matches!(step, Step::Challenge(_)),
        "a kept conversation starts with a Challenge: {step:?}"
    );

    let mut last: Vec<u8> = Vec::new();
    let mut peer_answer: Option<Vec<u8>> = None;
    let mut challenges = 0u32;
    let mut done = false;
    let mut allowed = false;
    let mut exhausted = false;
    let mut after_input = 0u32;
    loop {
        let mut skip_decision = false;
        match step {
            Step::Challenge(req) => {
                assert!(!done, "a Challenge after the end");
                let p = Packet::parse(&req).unwrap_or_else(|e| panic!("our own Request: {e}"));
                assert_eq!(p.code, Code::Request);
                if !last.is_empty() {
                    assert_eq!(p.identifier, last[1].wrapping_add(1), "identifier sequence");
                }
                let m = p
                    .method
                    .unwrap_or_else(|| panic!("a Request without a type"));
                if m == method::TLS || m == method::TTLS {
                    let d = TlsData::parse(p.data).unwrap_or_else(|e| panic!("our framing: {e}"));
                    assert!(d.data.len() <= fragment, "{} TLS octets", d.data.len());
                    assert!(methods.contains(&m));
                } else {
                    assert_eq!(m, method::IDENTITY);
                }
                challenges += 1;
                assert!(challenges <= MAX_ROUNDS + 2, "{challenges} challenges");
                peer_answer = peer.as_mut().and_then(|peer| match peer.step(&req) {
                    Ok(PeerStep::Send(r)) => Some(r),
                    _ => None,
                });
                last = req;
            }
            Step::Verify(p) => {
                assert!(!done, "a Verify after the end");
                check_pending(&p);
                let d = if exhausted { Some(2) } else { input.byte() };
                match d.map(|d| d % 4) {
                    Some(2) => {
                        step = conv.resolve(Decision::Deny("fuzz"));
                        continue;
                    }
                    Some(3) => skip_decision = true,
                    _ => {
                        allowed = true;
                        step = conv.resolve(Decision::Allow {
                            identity: IDENTITY.into(),
                        });
                        continue;
                    }
                }
            }
            Step::Accept(a) => {
                assert!(!done, "an Accept after the end");
                assert!(allowed, "Accept without the caller allowing");
                assert!(conv.is_done());
                assert_eq!(a.eap, packet::success(last[1]));
                assert_eq!(a.identity, IDENTITY);
                assert!(methods.contains(&a.method));
                assert_eq!(a.binding.is_some(), a.method == method::TTLS);
                assert_eq!(conv.method(), Some(a.method));
                if let Some(peer) = peer.as_mut()
                    && let Ok(PeerStep::Success(Some(keys))) = peer.step(&a.eap)
                {
                    assert_eq!(
                        &keys.msk[..],
                        &a.keys.msk[..],
                        "MSK differs from the peer's"
                    );
                    assert_eq!(&keys.emsk[..], &a.keys.emsk[..], "EMSK differs");
                }
                done = true;
            }
            Step::Reject { eap, reason } => {
                assert!(!done, "a Reject after the end");
                assert!(conv.is_done());
                assert_eq!(eap, packet::failure(last[1]), "{reason:?}");
                let _ = reason.label();
                done = true;
            }
            Step::Discard(_) => {}
        }
        if exhausted {
            if done {
                break;
            }
            after_input += 1;
            assert!(
                after_input <= MAX_ROUNDS + 4,
                "the conversation does not end: {} rounds",
                conv.rounds()
            );
            step = conv.step(s, &ack(Some(&last)));
            continue;
        }
        let Some(resp) = next_response(&mut input, Some(&last), peer_answer.as_deref()) else {
            exhausted = true;
            if skip_decision {
                step = conv.resolve(Decision::Deny("fuzz"));
            } else if done {
                break;
            } else {
                step = conv.step(s, &ack(Some(&last)));
            }
            continue;
        };
        let rounds = conv.rounds();
        let was_done = conv.is_done();
        step = conv.step(s, &resp);
        if let Step::Discard(why) = &step {
            assert_eq!(
                conv.rounds(),
                rounds,
                "a Discard ({why}) changed the rounds"
            );
            assert_eq!(conv.is_done(), was_done, "a Discard ({why}) ended it");
        } else {
            assert!(!done, "a step after the end: {step:?}");
        }
        assert!(conv.rounds() <= MAX_ROUNDS + 1, "{} rounds", conv.rounds());
    }
    assert!(conv.is_done());
    assert!(conv.rounds() <= MAX_ROUNDS + 1);
});
