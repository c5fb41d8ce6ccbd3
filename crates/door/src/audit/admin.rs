//! One audit event per admin API action (issue 27): who (the admin client and its
//! token's id, the source address), what (the action), which resource, the answer's
//! status, and digests of the resource before and after (never the record itself: a
//! digest tells that and when something changed, and a secret or hash is never in it).

use std::net::IpAddr;
use std::time::SystemTime;

use super::{Audit, Writer, push, rfc3339};

/// Prometheus: admin actions by action and status class.
pub const ADMIN_ACTIONS: &str = "portcullis_admin_actions_total";

/// One admin action.
#[derive(Debug, Clone)]
pub struct AdminEvent {
    /// The request's id (also `X-Request-Id`).
    pub request_id: String,
    /// The admin client that acted.
    pub actor: String,
    /// Its token's `jti`.
    pub token_id: String,
    /// Where the request came from.
    pub source: IpAddr,
    /// What was done, e.g. `client.create`, `user.update`, `throttle.lift`.
    pub action: &'static str,
    /// The resource, e.g. `clients/ci` (the collection for lists).
    pub resource: String,
    /// The answer's HTTP status.
    pub status: u16,
    /// Digest of the resource before the action (`None`: it did not exist or was not
    /// read).
    pub before: Option<String>,
    /// Digest after (`None`: removed, or unchanged by a read).
    pub after: Option<String>,
}

impl Audit {
    /// Record an admin action (always written: admin callers are authenticated).
    pub fn admin(&self, e: &AdminEvent) {
        let class = match e.status {
            200..=299 => "success",
            400..=499 => "refused",
            _ => "failed",
        };
        metrics::counter!(ADMIN_ACTIONS, "action" => e.action, "result" => class).increment(1);
        match &self.writer {
            Writer::Off => {}
            Writer::Log => tracing::info!(
                target: "portcullis::audit",
                event = "admin",
                request_id = %e.request_id,
                actor = ?e.actor,
                token_id = %e.token_id,
                source = %e.source,
                action = e.action,
                resource = ?e.resource,
                status = e.status,
                before = e.before.as_deref().unwrap_or("none"),
                after = e.after.as_deref().unwrap_or("none"),
                "admin {} {}",
                e.action,
                e.status
            ),
            Writer::File(tx) => push(tx, admin_json(e).to_string()),
        }
    }
}

/// One admin event as a JSON object (the audit file's format).
pub fn admin_json(e: &AdminEvent) -> serde_json::Value {
    serde_json::json!({
        "time": rfc3339(SystemTime::now()),
        "event": "admin",
        "request_id": e.request_id,
        "actor": e.actor,
        "token_id": e.token_id,
        "source": e.source.to_string(),
        "action": e.action,
        "resource": e.resource,
        "status": e.status,
        "before": e.before,
        "after": e.after,
    })
}
