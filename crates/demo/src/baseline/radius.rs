//! The deliberately naive RADIUS server: report 003's "before" state. ONE thread receives
//! a datagram, checks it, verifies the password with PBKDF2 right there, sleeps the reject
//! delay right there, answers, and only then reads the next datagram. No duplicate
//! detection (a retransmission is hashed again), no bound but the kernel's socket buffer,
//! no fairness: one attacker's wrong passwords hold up every NAS user behind it.
//!
//! It speaks correct RADIUS (Message-Authenticator checked and sent first, Response
//! Authenticator), so the lab judges it the same way as Portcullis or FreeRADIUS.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use portcullis_hash::Prf;
use portcullis_hash::pbkdf2::pbkdf2_hmac;
use portcullis_radius::{
    Code, MessageAuthenticator, Packet, attr, check_request_message_authenticator, encode_response,
    unhide_user_password,
};
use subtle::ConstantTimeEq;

use portcullis_lab::LabError;

/// A running naive RADIUS server.
#[derive(Debug)]
pub struct BaselineRadius {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

/// Stored user: salt and PBKDF2-HMAC-SHA256 key.
struct User {
    salt: [u8; 16],
    key: [u8; 32],
}

impl BaselineRadius {
    /// Hash `users`' passwords (`iterations` of PBKDF2-HMAC-SHA256), bind 127.0.0.1:0 and
    /// serve until [`BaselineRadius::shutdown`].
    pub fn start(
        users: &[(String, String)],
        secret: &[u8],
        iterations: u32,
        reject_delay: Duration,
    ) -> Result<BaselineRadius, LabError> {
        let io = |e: std::io::Error| LabError::Baseline(format!("radius: {e}"));
        let sock = UdpSocket::bind("127.0.0.1:0").map_err(io)?;
        // Short read timeout only so shutdown is noticed; it is not a design feature.
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(io)?;
        let addr = sock.local_addr().map_err(io)?;
        let table: HashMap<String, User> = users
            .iter()
            .enumerate()
            .map(|(i, (name, pw))| {
                let mut salt = [0u8; 16];
                salt[..8].copy_from_slice(&(i as u64).to_be_bytes());
                let mut key = [0u8; 32];
                pbkdf2_hmac(Prf::Sha256, pw.as_bytes(), &salt, iterations, &mut key);
                (name.clone(), User { salt, key })
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let secret = secret.to_vec();
        let thread = thread::Builder::new()
            .name("baseline-radius".into())
            .spawn(move || serve(sock, table, secret, iterations, reject_delay, flag))
            .map_err(io)?;
        Ok(BaselineRadius {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The UDP address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop and join (finishes the datagram in hand first, reject delay included).
    pub fn shutdown(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    sock: UdpSocket,
    users: HashMap<String, User>,
    secret: Vec<u8>,
    iterations: u32,
    reject_delay: Duration,
    stop: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, peer)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let Ok(p) = Packet::parse(&buf[..n]) else {
            continue;
        };
        if p.code != Code::AccessRequest
            || check_request_message_authenticator(&p, &secret) != MessageAuthenticator::Valid
        {
            continue;
        }
        let (Some(name), Some(hidden)) = (p.attr(attr::USER_NAME), p.attr(attr::USER_PASSWORD))
        else {
            continue;
        };
        let Ok(pw) = unhide_user_password(hidden, &secret, &p.authenticator) else {
            continue;
        };
        // The hash runs on the receive path: nothing else is read meanwhile.
        let ok = match users.get(&*String::from_utf8_lossy(name)) {
            Some(u) => {
                let mut key = [0u8; 32];
                pbkdf2_hmac(Prf::Sha256, &pw, &u.salt, iterations, &mut key);
                bool::from(key.ct_eq(&u.key))
            }
            None => false,
        };
        if !ok {
            // ... and so does the reject delay.
            thread::sleep(reject_delay);
        }
        let code = if ok {
            Code::AccessAccept
        } else {
            Code::AccessReject
        };
        if let Ok(reply) = encode_response(code, &p, &[], &secret) {
            let _ = sock.send_to(&reply, peer);
        }
    }
}
