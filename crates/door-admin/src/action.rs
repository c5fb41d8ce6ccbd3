//! The end of every admin request: the answer (a [`Reply`] or a [`Problem`]) becomes the
//! response, and the action becomes one audit event with the caller, the resource and
//! the before/after digests the handler noted in its [`Trail`].

use axum::response::{IntoResponse, Response};

use crate::AdminContext;
use crate::auth::Caller;
use crate::conventions::Reply;
use crate::problem::Problem;
use portcullis_door::audit::AdminEvent;

/// Digests of the resource before and after the action, noted by the handler.
#[derive(Debug, Default)]
pub struct Trail {
    /// Before (`None`: absent or not read).
    pub before: Option<String>,
    /// After (`None`: removed or unchanged).
    pub after: Option<String>,
}

/// Answer and audit one action.
pub fn finish(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    resource: String,
    trail: Trail,
    result: Result<Reply, Problem>,
) -> Response {
    let status = match &result {
        Ok(r) => r.status,
        Err(p) => p.status,
    };
    audit(ctx, caller, action, resource, status, trail);
    match result {
        Ok(r) => r.into_response(),
        Err(p) => p.into_response(),
    }
}

/// One `admin` audit event of `caller` (also one per record an apply writes).
pub fn audit(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    resource: String,
    status: u16,
    trail: Trail,
) {
    ctx.audit.admin(&AdminEvent {
        request_id: caller.request_id.clone(),
        actor: caller.client_id.clone(),
        token_id: caller.jti.clone(),
        source: caller.source,
        action,
        resource,
        status,
        before: trail.before,
        after: trail.after,
    });
}

/// A path segment that failed to decode.
pub fn bad_path(name: &str) -> Problem {
    Problem::field(
        format!("path:{name}"),
        "not a valid percent-encoded UTF-8 key",
    )
}

/// A query string that failed to parse.
pub fn bad_query(e: &dyn std::fmt::Display) -> Problem {
    Problem::field("query", e.to_string())
}
