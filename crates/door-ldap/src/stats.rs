//! The door's counters: Prometheus metrics (operations by name and result code,
//! connections by outcome, connections open) and the status page's `ldap` panel.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use portcullis_ldap::ResultCode;

/// Prometheus: operations answered, by `operation` and `result` (RFC 4511 name).
pub const OPERATIONS: &str = "portcullis_ldap_operations_total";
/// Prometheus: connections by outcome (`accepted`, or why one was closed at once).
pub const CONNECTIONS: &str = "portcullis_ldap_connections_total";
/// Prometheus: connections open now.
pub const OPEN: &str = "portcullis_ldap_connections_open";
/// Prometheus: messages that could not be read (bad BER, too large, unknown operation).
pub const MALFORMED: &str = "portcullis_ldap_malformed_total";

/// The ways a connection is refused or ends before its first operation.
pub const REFUSALS: [&str; 4] = ["limit", "per_source", "proxy_header", "tls_handshake"];

/// Describe the metrics and create their series at zero, so dashboards see them before
/// the first connection.
pub fn describe() {
    metrics::describe_counter!(
        OPERATIONS,
        "LDAP operations answered, by operation and result"
    );
    metrics::describe_counter!(CONNECTIONS, "LDAP connections, by outcome");
    metrics::describe_gauge!(OPEN, "LDAP connections open");
    metrics::describe_counter!(MALFORMED, "LDAP messages that could not be read");
    for outcome in std::iter::once("accepted").chain(REFUSALS) {
        metrics::counter!(CONNECTIONS, "outcome" => outcome).absolute(0);
    }
    metrics::counter!(MALFORMED).absolute(0);
}

/// Live counters for the status page (the metrics have the same, by label).
#[derive(Debug, Default)]
pub struct Stats {
    open: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    malformed: AtomicU64,
    /// (operation, result) -> count; a few dozen keys at most.
    operations: Mutex<std::collections::BTreeMap<(&'static str, &'static str), u64>>,
}

impl Stats {
    /// A connection was accepted and is now open.
    pub fn opened(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(CONNECTIONS, "outcome" => "accepted").increment(1);
        metrics::gauge!(OPEN).increment(1.0);
    }

    /// An open connection closed.
    pub fn closed(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        metrics::gauge!(OPEN).decrement(1.0);
    }

    /// A connection was refused or dropped before serving (`reason` is one of
    /// [`REFUSALS`]).
    pub fn refused(&self, reason: &'static str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(CONNECTIONS, "outcome" => reason).increment(1);
    }

    /// A message could not be read.
    pub fn malformed(&self) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(MALFORMED).increment(1);
    }

    /// One operation answered with `code`.
    pub fn operation(&self, operation: &'static str, code: ResultCode) {
        *self
            .operations
            .lock()
            .entry((operation, code.name()))
            .or_insert(0) += 1;
        metrics::counter!(OPERATIONS, "operation" => operation, "result" => code.name())
            .increment(1);
    }
}

impl portcullis_door::status::StatusPanel for Stats {
    fn key(&self) -> &'static str {
        "ldap"
    }

    fn json(&self) -> serde_json::Value {
        let mut operations = serde_json::Map::new();
        for ((op, result), n) in self.operations.lock().iter() {
            let by = operations
                .entry(op.to_string())
                .or_insert_with(|| serde_json::json!({}));
            if let Some(m) = by.as_object_mut() {
                m.insert(result.to_string(), serde_json::json!(n));
            }
        }
        serde_json::json!({
            "connections_open": self.open.load(Ordering::Relaxed),
            "connections_accepted": self.accepted.load(Ordering::Relaxed),
            "connections_refused": self.refused.load(Ordering::Relaxed),
            "malformed_messages": self.malformed.load(Ordering::Relaxed),
            "operations": operations,
        })
    }
}
