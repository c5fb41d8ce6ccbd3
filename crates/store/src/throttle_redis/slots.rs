//! Which Cluster node serves which slots, which nodes are down, and the slot map's
//! refresh: in the background, one at a time, at most once per `retry`, so no request
//! ever waits for it (issue 41: inline, a request that failed could wait a second
//! timeout for the refresh).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::redis_target::Conn;

/// Node health: which node serves which slots (Cluster) and which are down until when.
#[derive(Default)]
pub(super) struct Health {
    /// `(first slot, last slot, node)` from `CLUSTER SLOTS`; empty on one node and until
    /// the first refresh answered.
    pub(super) map: Vec<(u16, u16, String)>,
    /// Node ("" for the single node, or a slot whose node is not known yet) considered
    /// down until the instant.
    pub(super) down: HashMap<String, Instant>,
    /// When the slot map was last asked for (at most once per `retry`).
    refreshed: Option<Instant>,
}

impl Health {
    pub(super) fn node(&self, slot: Option<u16>) -> String {
        match slot {
            None => String::new(),
            Some(s) => self
                .map
                .iter()
                .find(|(a, b, _)| (*a..=*b).contains(&s))
                .map_or_else(String::new, |(_, _, n)| n.clone()),
        }
    }
}

/// The slot map and the one refresh that may be running.
#[derive(Default)]
pub(super) struct Slots {
    pub(super) health: Arc<Mutex<Health>>,
    /// A refresh is running (the others coalesce into it).
    refreshing: Arc<AtomicBool>,
}

/// Clears the running flag however the refresh task ends (answer, timeout, abort).
struct Running(Arc<AtomicBool>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Slots {
    /// Ask the Cluster for its slot map on `conn` in the background, unless a refresh is
    /// running or one started less than `retry` ago (and answered). Never waits.
    pub(super) fn refresh_soon(&self, conn: Conn, retry: Duration, timeout: Duration) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        {
            let mut h = self.health.lock();
            let now = Instant::now();
            if h.refreshed.is_some_and(|t| now < t + retry) && !h.map.is_empty() {
                return;
            }
            if self.refreshing.swap(true, Ordering::AcqRel) {
                return;
            }
            h.refreshed = Some(now);
        }
        let running = Running(Arc::clone(&self.refreshing));
        let health = Arc::clone(&self.health);
        let mut conn = conn;
        rt.spawn(async move {
            let _running = running;
            let reply = tokio::time::timeout(
                timeout,
                redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query_async::<redis::Value>(&mut conn),
            )
            .await;
            if let Ok(Ok(v)) = reply
                && let Some(map) = parse_cluster_slots(&v)
            {
                health.lock().map = map;
            }
        });
    }
}

/// `(first, last, "host:port")` of each range of a `CLUSTER SLOTS` reply.
pub(super) fn parse_cluster_slots(v: &redis::Value) -> Option<Vec<(u16, u16, String)>> {
    use redis::Value;
    let Value::Array(ranges) = v else {
        return None;
    };
    let mut out = Vec::new();
    for r in ranges {
        let Value::Array(r) = r else { return None };
        let (Some(Value::Int(a)), Some(Value::Int(b)), Some(Value::Array(node))) =
            (r.first(), r.get(1), r.get(2))
        else {
            return None;
        };
        let host = match node.first() {
            Some(Value::BulkString(h)) => String::from_utf8_lossy(h).into_owned(),
            _ => return None,
        };
        let Some(Value::Int(port)) = node.get(1) else {
            return None;
        };
        out.push((
            u16::try_from(*a).ok()?,
            u16::try_from(*b).ok()?,
            format!("{host}:{port}"),
        ));
    }
    Some(out)
}
