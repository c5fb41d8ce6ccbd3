//! Issue 41: a Cluster node that stops answering costs a request one `timeout`, never
//! two. The "Cluster" is a fake node of the test's own on loopback: it answers what a
//! client needs to connect (`PING`, `CLIENT`, `CLUSTER SLOTS` naming itself for every
//! slot) until it is told to go silent; then it accepts and reads but never answers. So
//! the node's silence is exactly when the test says, and nothing depends on a real
//! server's timing.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use portcullis_core::net::{IpPrefix, Origin};
use portcullis_core::{Charge, GcraLimit, ThrottleKey, ThrottleStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// The fake node: its port and the switch that silences it.
struct FakeNode {
    port: u16,
    silent: Arc<AtomicBool>,
}

impl FakeNode {
    async fn start() -> FakeNode {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let silent = Arc::new(AtomicBool::new(false));
        let quiet = Arc::clone(&silent);
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(serve(s, port, Arc::clone(&quiet)));
            }
        });
        FakeNode { port, silent }
    }
}

/// One RESP command (an array of bulk strings) from the front of `buf`, if whole.
fn command(buf: &mut Vec<u8>) -> Option<Vec<String>> {
    let line = |at: usize| -> Option<(String, usize)> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((String::from_utf8_lossy(&buf[at..end]).into_owned(), end + 2))
    };
    let (head, mut at) = line(0)?;
    let n: usize = head.strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        let (len, next) = line(at)?;
        let len: usize = len.strip_prefix('$')?.parse().ok()?;
        if buf.len() < next + len + 2 {
            return None;
        }
        args.push(String::from_utf8_lossy(&buf[next..next + len]).into_owned());
        at = next + len + 2;
    }
    buf.drain(..at);
    Some(args)
}

async fn serve(mut s: TcpStream, port: u16, silent: Arc<AtomicBool>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        while let Some(args) = command(&mut buf) {
            if silent.load(Ordering::SeqCst) {
                continue;
            }
            let verb = args.iter().take(2).cloned().collect::<Vec<_>>().join(" ");
            let reply = match verb.to_ascii_uppercase().as_str() {
                "CLUSTER SLOTS" => format!(
                    "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:{port}\r\n$4\r\nfake\r\n"
                ),
                v if v.starts_with("PING") => "+PONG\r\n".into(),
                _ => "+OK\r\n".into(),
            };
            if s.write_all(reply.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

fn one_budget(i: usize) -> Vec<Charge> {
    let addr = format!("10.41.{i}.1").parse().unwrap();
    vec![Charge {
        key: ThrottleKey::Prefix(Origin::of(IpPrefix::of(addr, 24, 64))),
        limit: GcraLimit::new(5, Duration::from_secs(3600)),
    }]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_a_cluster_node_that_stops_answering_costs_a_request_one_timeout() {
    let node = FakeNode::start().await;
    let timeout = Duration::from_millis(1000);
    let store = Arc::new(
        RedisThrottleStore::new(&RedisThrottleConfig {
            target: RedisTarget::Cluster(vec![format!("redis://127.0.0.1:{}", node.port)]),
            key_prefix: "silent".into(),
            timeout,
            // Shorter than anything here: the slot map is asked for again after any
            // failure, as it would be in service long after the last refresh.
            retry: Duration::from_millis(1),
        })
        .unwrap(),
    );
    // Connected, and the slot map known (the refresh at connect is in the background).
    store.ping().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.slots.health.lock().map.is_empty() {
        assert!(Instant::now() < deadline, "no slot map");
        tokio::task::yield_now().await;
    }
    node.silent.store(true, Ordering::SeqCst);
    // Twenty attempts at once on the silent node: each answered (by this instance's own
    // budgets) within one timeout, none waiting for the slot map's refresh, which runs
    // in the background and itself gets no answer.
    let start = Instant::now();
    let attempts: Vec<_> = (0..20)
        .map(|i| {
            let s = Arc::clone(&store);
            tokio::spawn(async move {
                let d = s.acquire(&one_budget(i), Instant::now()).await;
                (d, Instant::now())
            })
        })
        .collect();
    for a in attempts {
        let (d, done) = a.await.unwrap();
        assert!(matches!(d, Ok(Decision::Allowed { .. })), "{d:?}");
        let took = done - start;
        // One timeout plus scheduling; inline refresh made it two.
        assert!(took < timeout + timeout / 2, "took {took:?}");
    }
}
