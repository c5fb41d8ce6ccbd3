//! The accounting storm's control (issue 41 item 8): a UDP listener in the demo's process
//! that answers every Accounting-Request signed with the demo's secret at once with a valid Accounting-Response and
//! stores nothing, so the lab's storm generator does its sending, receiving and checking
//! while the server does no accounting work. Given the rate the server acknowledged, it
//! answers no more than that and drops the rest (as the server sheds them), so the
//! generator sends, retransmits and receives as it did against the server.

use std::net::SocketAddr;
use std::sync::Arc;

use portcullis_lab::LabError;
use portcullis_radius::acct::{check_accounting_request, encode_accounting_response};
use portcullis_radius::packet::Packet;
use tokio::net::UdpSocket;

/// A started stub; stopped by [`AckStub::stop`] or when dropped.
pub struct AckStub {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl AckStub {
    /// Listen on a free loopback port, answering requests signed with `secret`, at most
    /// `max_rate` per second when given.
    pub async fn start(secret: &[u8], max_rate: Option<f64>) -> Result<AckStub, LabError> {
        let io = |e: std::io::Error| LabError::Target(format!("accounting stub: {e}"));
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.map_err(io)?);
        let addr = sock.local_addr().map_err(io)?;
        let secret = secret.to_vec();
        let task = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            // A token bucket holding a tenth of a second's answers.
            let burst = max_rate.map_or(0.0, |r| (r / 10.0).max(1.0));
            let (mut tokens, mut last) = (burst, std::time::Instant::now());
            loop {
                let Ok((n, from)) = sock.recv_from(&mut buf).await else {
                    continue;
                };
                // Checked as a server checks it (a wrong secret is dropped), so the
                // control's cost per record is the server's minus storing it.
                let Ok(p) = Packet::parse(&buf[..n]) else {
                    continue;
                };
                if check_accounting_request(&p, &secret).is_err() {
                    continue;
                }
                if let Some(rate) = max_rate {
                    let now = std::time::Instant::now();
                    tokens = (tokens + rate * now.duration_since(last).as_secs_f64()).min(burst);
                    last = now;
                    if tokens < 1.0 {
                        continue;
                    }
                    tokens -= 1.0;
                }
                if let Ok(reply) = encode_accounting_response(&p, &secret) {
                    let _ = sock.send_to(&reply, from).await;
                }
            }
        });
        Ok(AckStub { addr, task })
    }

    /// `radius://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("radius://{}", self.addr)
    }

    /// Stop answering.
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for AckStub {
    fn drop(&mut self) {
        self.task.abort();
    }
}
