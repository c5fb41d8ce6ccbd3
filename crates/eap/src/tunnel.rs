//! The TLS inside a conversation: one rustls server connection driven sans-I/O (records
//! in, records out, plaintext of the tunnel), the TLS 1.2 session digest that binds a
//! resumed TTLS session to its first one, and the TTLS phase-2 AVPs read as inner PAP.

use std::io::Read;

use zeroize::Zeroizing;

use crate::fragment::{Fragmenter, Reassembler};
use crate::reason::{MAX_IDENTITY, Reason};
use crate::{avp, hello};

/// Where a TLS method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Handshake,
    /// Handshake done (TTLS waits for the inner AVPs).
    Tunnel,
    /// A decision is pending; `final_flight` then goes out before Success.
    Deciding,
    /// The last flight is out; an acknowledgement brings Success.
    Final,
}

pub(crate) struct TlsMethod {
    pub(crate) conn: rustls::ServerConnection,
    pub(crate) method: u8,
    pub(crate) reasm: Reassembler,
    /// The flight being sent, fragment by fragment.
    pub(crate) out: Option<Fragmenter>,
    /// Output to send after a positive decision, before Success.
    pub(crate) final_flight: Vec<u8>,
    pub(crate) client_random: Option<[u8; 32]>,
    pub(crate) server_random: Option<[u8; 32]>,
    /// TLS 1.2: the digest of the master secret ([`SessionDigest`]).
    pub(crate) master_digest: Option<[u8; 16]>,
    pub(crate) phase: Phase,
    pub(crate) resumed: bool,
    pub(crate) tls13: bool,
}

impl TlsMethod {
    pub(crate) fn feed(&mut self, msg: &[u8]) -> Result<(), Reason> {
        if self.client_random.is_none() {
            self.client_random = hello::random(msg, hello::CLIENT_HELLO);
        }
        let mut rd = msg;
        while !rd.is_empty() {
            match self.conn.read_tls(&mut rd) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(Reason::Tls(e.to_string())),
            }
            let _stale = take_session_digest();
            let r = self.conn.process_new_packets();
            if let Some(d) = take_session_digest() {
                self.master_digest = Some(d);
            }
            r.map_err(|e| Reason::Tls(e.to_string()))?;
        }
        Ok(())
    }

    pub(crate) fn drain(&mut self) -> Result<Vec<u8>, Reason> {
        let mut out = Vec::new();
        while self.conn.wants_write() {
            self.conn
                .write_tls(&mut out)
                .map_err(|e| Reason::Tls(e.to_string()))?;
        }
        if self.server_random.is_none() && !out.is_empty() {
            self.server_random = hello::random(&out, hello::SERVER_HELLO);
        }
        Ok(out)
    }

    /// Application data received (the inner AVPs), bounded.
    pub(crate) fn plaintext(&mut self) -> Result<Vec<u8>, Reason> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match self.conn.reader().read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    out.extend_from_slice(&buf[..n]);
                    if out.len() > 16 * 1024 {
                        return Err(Reason::Protocol("phase 2 data too long".into()));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(Reason::Tls(e.to_string())),
            }
        }
        Ok(out)
    }
}

thread_local! {
    /// The digest [`SessionDigest`] computed in the `process_new_packets` call running on
    /// this thread (a connection's packets are processed on one thread at a time, and the
    /// value is taken right after the call).
    static DIGEST: std::cell::Cell<Option<[u8; 16]>> = const { std::cell::Cell::new(None) };
}

fn take_session_digest() -> Option<[u8; 16]> {
    DIGEST.with(std::cell::Cell::take)
}

/// The key log of the servers' TLS configurations: keeps nothing but a 16-octet digest
/// of a TLS 1.2 master secret (`SHA-256("portcullis eap session" || master)`), in a
/// thread-local slot the conversation takes right after rustls processed the handshake
/// message that made it. The master secret itself is neither kept nor written anywhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct SessionDigest;

impl rustls::KeyLog for SessionDigest {
    fn will_log(&self, label: &str) -> bool {
        label == "CLIENT_RANDOM"
    }

    fn log(&self, label: &str, _client_random: &[u8], secret: &[u8]) {
        use sha2::Digest;
        if label != "CLIENT_RANDOM" {
            return;
        }
        let h = sha2::Sha256::new()
            .chain_update(b"portcullis eap session")
            .chain_update(secret)
            .finalize();
        let mut d = [0u8; 16];
        d.copy_from_slice(&h[..16]);
        DIGEST.with(|c| c.set(Some(d)));
    }
}

/// User-Name and User-Password from TTLS phase-2 AVPs; other inner methods are refused.
pub(crate) fn inner_pap(plain: &[u8]) -> Result<(String, Zeroizing<Vec<u8>>), Reason> {
    let avps = avp::parse(plain, 32).map_err(|e| Reason::Protocol(e.to_string()))?;
    let mut user = None;
    let mut password = None;
    for a in &avps {
        match (a.vendor, a.code) {
            (None | Some(0), avp::code::USER_NAME) => user = Some(a.data),
            (None | Some(0), avp::code::USER_PASSWORD) => password = Some(a.data),
            (None | Some(0), avp::code::EAP_MESSAGE) => return Err(Reason::InnerMethod("eap")),
            (None | Some(0), avp::code::CHAP_PASSWORD) => return Err(Reason::InnerMethod("chap")),
            (Some(311), _) => return Err(Reason::InnerMethod("mschap")),
            _ if a.mandatory() => {
                return Err(Reason::Protocol(format!(
                    "unsupported mandatory AVP {}",
                    a.code
                )));
            }
            _ => {}
        }
    }
    let (Some(user), Some(password)) = (user, password) else {
        return Err(Reason::Protocol(
            "phase 2 without User-Name and User-Password".into(),
        ));
    };
    let end = password.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    Ok((
        String::from_utf8_lossy(user)
            .chars()
            .take(MAX_IDENTITY)
            .collect(),
        Zeroizing::new(password[..end].to_vec()),
    ))
}
