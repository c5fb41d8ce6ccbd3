//! Helpers of the RADIUS tests: a server with RADIUS on 127.0.0.1:0 and a NAS registered
//! before it starts, a small UDP client that builds requests with the codec crate, and
//! the per-NAS counters read from `/status.json`.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use portcullis_radius::{Code, attr, encode_request, hide_user_password, verify_response};
use portcullis_server::Config;
use portcullis_store::{DataDir, NasRecord, NasStore, UserStore};
use tokio::net::UdpSocket;

use crate::server_support::{TestServer, start_in};

/// The shared secret of the test NAS.
pub const SECRET: &[u8] = b"a test shared secret, 30 chars";

/// A server with RADIUS listening on an ephemeral loopback port, and NAS `lab` covering
/// `nas_cidr` registered before it starts.
pub struct RadiusServer {
    /// The server (HTTP side too: `/status.json`).
    pub s: TestServer,
    /// Where RADIUS listens.
    pub addr: SocketAddr,
}

/// Start with RADIUS on `listen` (port 0), a NAS for `nas_cidr`, and the test's tweaks.
pub async fn start_radius(
    listen: &str,
    nas_cidr: &str,
    tweak: impl FnOnce(&mut Config),
) -> RadiusServer {
    start_radius_nases(listen, &[("lab", nas_cidr)], tweak).await
}

/// [`start_radius`] with several NASes (name, CIDR), all with [`SECRET`].
pub async fn start_radius_nases(
    listen: &str,
    nases: &[(&str, &str)],
    tweak: impl FnOnce(&mut Config),
) -> RadiusServer {
    let dir = tempfile::tempdir().unwrap();
    {
        let data = DataDir::open(dir.path()).await.unwrap();
        for (name, cidr) in nases {
            let nas = NasRecord {
                name: (*name).into(),
                cidr: portcullis_store::nas::parse_nas_cidr(cidr).unwrap(),
                secret_sealed: NasRecord::seal_secret(data.master_key(), name, SECRET).unwrap(),
                require_message_authenticator: true,
                created_at: 0,
                certificate: None,
            };
            data.store().put_nas(&nas).await.unwrap();
        }
        data.close().await;
    }
    let listen = listen.parse().unwrap();
    let s = start_in(dir, |c| {
        c.radius.listen = vec![listen];
        // Short enough to keep the suite quick, long enough that a retransmission sent
        // right after its original finds it still in progress.
        c.radius.reject_delay = Duration::from_millis(1500);
        c.radius.reject_jitter = Duration::ZERO;
        // The test policy hashes in milliseconds; without this the core would assume the
        // default quarter second per hash until it has measured one, and refuse a burst.
        c.verifier.initial_hash_estimate_ms = 5;
        tweak(c);
    })
    .await;
    let addr = s.server.radius_addrs()[0];
    RadiusServer { s, addr }
}

impl RadiusServer {
    /// The counters of NAS `nas` from `/status.json` (requests, accepts, rejects,
    /// duplicates, dropped{reason}).
    pub async fn counters(&self, nas: &str) -> serde_json::Value {
        let status = self.s.get("/status.json").await.json();
        status["radius"]["nas"][nas].clone()
    }

    /// Users `lab-client-0..n` with passwords `lab-secret-N` (the lab's generated
    /// principals), hashed with the test policy.
    pub async fn put_lab_users(&self, n: usize) {
        let policy = crate::server_support::test_policy();
        for i in 0..n {
            let user = portcullis_store::UserRecord::new(
                format!("lab-client-{i}"),
                policy.hash(format!("lab-secret-{i}").as_bytes()).unwrap(),
                0,
            )
            .unwrap();
            self.s.data.store().put_user(&user).await.unwrap();
        }
    }

    /// Full KDF derivations the core has run so far.
    pub async fn hashes(&self) -> u64 {
        let status = self.s.get("/status.json").await.json();
        status["verifier"]["hashes_computed"].as_u64().unwrap()
    }
}

/// A NAS-side UDP client bound to `local` (e.g. `127.0.0.5:0`).
pub struct Nas {
    /// Its socket, connected to nothing (it may talk to several servers).
    pub sock: UdpSocket,
    /// Where it sends.
    pub server: SocketAddr,
}

/// One request as sent, to match and verify its reply.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The datagram.
    pub bytes: Vec<u8>,
    /// Its identifier.
    pub id: u8,
    /// Its Request Authenticator.
    pub authenticator: [u8; 16],
}

impl Nas {
    /// Bind a client socket.
    pub async fn bind(local: &str, server: SocketAddr) -> Nas {
        Nas {
            sock: UdpSocket::bind(local).await.unwrap(),
            server,
        }
    }

    /// Build an Access-Request (Message-Authenticator first) for `user`/`password` from
    /// `station`; `extra` attributes are appended. The authenticator is derived from `id`
    /// and `salt` so every request in a test differs.
    pub fn access_request(
        id: u8,
        salt: u64,
        user: &str,
        password: &str,
        station: &str,
        extra: &[(u8, &[u8])],
    ) -> Sent {
        let mut authenticator = [0u8; 16];
        authenticator[..8].copy_from_slice(&salt.to_be_bytes());
        authenticator[8] = id;
        authenticator[9..].copy_from_slice(b"testnas");
        let hidden = hide_user_password(password.as_bytes(), SECRET, &authenticator).unwrap();
        let mut attrs: Vec<(u8, &[u8])> = vec![
            (attr::USER_NAME, user.as_bytes()),
            (attr::USER_PASSWORD, &hidden),
            (attr::CALLING_STATION_ID, station.as_bytes()),
        ];
        attrs.extend_from_slice(extra);
        let bytes = encode_request(Code::AccessRequest, id, authenticator, &attrs, SECRET).unwrap();
        Sent {
            bytes,
            id,
            authenticator,
        }
    }

    /// A Status-Server.
    pub fn status_server(id: u8, salt: u64) -> Sent {
        let mut authenticator = [0x5a; 16];
        authenticator[..8].copy_from_slice(&salt.to_be_bytes());
        authenticator[8] = id;
        let bytes = encode_request(Code::StatusServer, id, authenticator, &[], SECRET).unwrap();
        Sent {
            bytes,
            id,
            authenticator,
        }
    }

    /// Send raw bytes.
    pub async fn send(&self, bytes: &[u8]) {
        self.sock.send_to(bytes, self.server).await.unwrap();
    }

    /// The next datagram, or `None` after `wait`.
    pub async fn recv(&self, wait: Duration) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; 4096];
        match tokio::time::timeout(wait, self.sock.recv_from(&mut buf)).await {
            Ok(Ok((n, from))) => {
                assert_eq!(
                    from, self.server,
                    "a reply must come from the address we sent to"
                );
                buf.truncate(n);
                Some(buf)
            }
            Ok(Err(e)) => panic!("recv: {e}"),
            Err(_) => None,
        }
    }

    /// Send `req` and return the verified reply's code (panics on no reply or a reply
    /// that does not verify against this request).
    pub async fn exchange(&self, req: &Sent) -> (Code, Vec<u8>) {
        self.send(&req.bytes).await;
        let raw = self
            .recv(Duration::from_secs(20))
            .await
            .expect("no reply within 20 s");
        let code = verify_reply(&raw, req);
        (code, raw)
    }

    /// Whether nothing is waiting on the socket right now.
    pub fn nothing_queued(&self) -> bool {
        let mut buf = [0u8; 64];
        matches!(self.sock.try_recv_from(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }
}

/// Check a reply against the request it answers (identifier, Response Authenticator,
/// Message-Authenticator required); returns its code.
pub fn verify_reply(raw: &[u8], req: &Sent) -> Code {
    let reply = verify_response(raw, &req.authenticator, SECRET, true)
        .unwrap_or_else(|e| panic!("reply to id {} does not verify: {e}", req.id));
    assert_eq!(reply.identifier, req.id);
    assert_eq!(
        reply.attributes().next().map(|a| a.0),
        Some(attr::MESSAGE_AUTHENTICATOR),
        "Message-Authenticator must be the first attribute"
    );
    reply.code
}

/// Make sure every datagram `nas` sent before now was processed: send a Status-Server
/// and wait for its answer (datagrams from one socket are handled in order).
pub async fn barrier(nas: &Nas, salt: u64) {
    let probe = Nas::status_server(255, salt);
    nas.send(&probe.bytes).await;
    loop {
        let raw = nas
            .recv(Duration::from_secs(20))
            .await
            .expect("barrier timed out");
        if raw.get(1) == Some(&255) {
            assert_eq!(verify_reply(&raw, &probe), Code::AccessAccept);
            return;
        }
    }
}

/// Run FreeRADIUS' `radclient -x -r RETRIES -t TIMEOUT ADDR KIND SECRET` with `attrs` on
/// stdin (it checks the reply's identifier and authenticators itself): (exit ok, stdout
/// and stderr). A missing radclient fails the test.
pub fn radclient(
    server: SocketAddr,
    kind: &str,
    secret: &str,
    attrs: &str,
    retries: u32,
    timeout_secs: u32,
) -> (bool, String) {
    let mut child = Command::new("radclient")
        .args([
            "-x",
            "-r",
            &retries.to_string(),
            "-t",
            &timeout_secs.to_string(),
        ])
        .arg(server.to_string())
        .arg(kind)
        .arg(secret)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run radclient ({e}): ./scripts/test installs freeradius-utils")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(attrs.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
