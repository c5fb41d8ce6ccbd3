//! The accounting storm's control (issue 41 item 8): a UDP listener in the demo's process
//! that answers Accounting-Requests signed with the demo's secret with a valid
//! Accounting-Response at once and stores nothing, so the lab's storm generator does its
//! sending, receiving and checking while the server does no accounting work.
//!
//! Given the acknowledgements the server sent in each second of the storm, it answers no
//! more than that many in the same second of its own run and drops the rest, so the
//! generator receives, retransmits and times out second by second as it did beside the
//! server. (A cap on the average rate did not: the server acknowledges almost nothing
//! while logins take the CPU and catches up after them, and a stub answering evenly gave
//! the control's generator thousands of answers a second more to check than the storm's.)

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use portcullis_lab::LabError;
use portcullis_radius::acct::{check_accounting_request, encode_accounting_response};
use portcullis_radius::packet::Packet;
use tokio::net::UdpSocket;

/// Whether a record arriving `elapsed_s` whole seconds after the stub's first, with
/// `answered` already answered in that second, gets an answer: at most `per_second[i]` in
/// second `i`, none after the last.
fn allows(per_second: &[u64], elapsed_s: u64, answered: u64) -> bool {
    usize::try_from(elapsed_s)
        .ok()
        .and_then(|s| per_second.get(s))
        .is_some_and(|&budget| answered < budget)
}

/// A started stub; stopped by [`AckStub::stop`] or when dropped.
pub struct AckStub {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl AckStub {
    /// Listen on a free loopback port, answering requests signed with `secret`, at most
    /// `per_second[i]` in its second `i`; its seconds count from the first record it checks (the lab's run
    /// sends its first at once), so a run that starts late still lines up.
    pub async fn start(secret: &[u8], per_second: Vec<u64>) -> Result<AckStub, LabError> {
        let io = |e: std::io::Error| LabError::Target(format!("accounting stub: {e}"));
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.map_err(io)?);
        let addr = sock.local_addr().map_err(io)?;
        let secret = secret.to_vec();
        let task = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let mut started: Option<Instant> = None;
            // (second, records answered in it)
            let mut this_second = (0u64, 0u64);
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
                let second = started.get_or_insert_with(Instant::now).elapsed().as_secs();
                if second != this_second.0 {
                    this_second = (second, 0);
                }
                if !allows(&per_second, second, this_second.1) {
                    continue;
                }
                this_second.1 += 1;
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

#[cfg(test)]
mod tests {
    use super::allows;

    #[test]
    fn a_schedule_answers_its_budget_in_each_second_and_nothing_after_it() {
        let n = [2, 0, 1];
        assert!(allows(&n, 0, 0) && allows(&n, 0, 1) && !allows(&n, 0, 2));
        assert!(!allows(&n, 1, 0));
        assert!(allows(&n, 2, 0) && !allows(&n, 2, 1));
        assert!(!allows(&n, 3, 0) && !allows(&n, u64::MAX, 0));
    }
}
