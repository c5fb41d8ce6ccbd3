//! Per-source connection limits, shared by the doors that accept TCP connections (the
//! HTTP door in `serve`, the RadSec door in `radius::radsec`): one host may hold only so
//! many connections, so a single client cannot take every slot of the total limit.

use std::sync::Arc;

/// Connections held per source address (`server.max_connections_per_source`,
/// `radius.radsec.max_connections_per_source`). The table holds only addresses with a
/// connection open, so it is bounded by the door's total connection limit.
pub struct PerSource {
    limit: usize,
    open: parking_lot::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

/// One counted connection; uncounted when dropped (the connection's task ends).
pub struct Held(Arc<PerSource>, std::net::IpAddr);

impl PerSource {
    pub fn new(limit: usize) -> Self {
        PerSource {
            limit,
            open: parking_lot::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Count a new connection from `ip`, unless it already has the limit.
    pub fn enter(this: &Arc<Self>, ip: std::net::IpAddr) -> Option<Held> {
        let mut open = this.open.lock();
        let n = open.entry(ip).or_insert(0);
        if *n >= this.limit {
            if *n == 0 {
                open.remove(&ip);
            }
            return None;
        }
        *n += 1;
        Some(Held(Arc::clone(this), ip))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut open = self.0.open.lock();
        if let Some(n) = open.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.1);
            }
        }
    }
}
