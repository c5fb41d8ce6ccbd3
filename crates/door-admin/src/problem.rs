//! RFC 9457 problem details: every error the admin API answers is one of these, with
//! `Content-Type: application/problem+json`, and names the field that is wrong
//! (`errors[].pointer`, a JSON Pointer into the request body, or the query parameter or
//! header by name). This is the only place admin errors become status codes.

use std::borrow::Cow;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portcullis_store::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

/// The problem type URIs, relative to the API (RFC 9457 3.1.1 allows relative URIs).
pub mod kind {
    /// The body, a parameter or a header is not acceptable.
    pub const INVALID: &str = "/admin/v1/problems/invalid-request";
    /// No credentials, or credentials that do not authenticate.
    pub const UNAUTHENTICATED: &str = "/admin/v1/problems/unauthenticated";
    /// Authenticated, but the token's scopes do not allow this.
    pub const FORBIDDEN: &str = "/admin/v1/problems/insufficient-scope";
    /// No such resource (or route).
    pub const NOT_FOUND: &str = "/admin/v1/problems/not-found";
    /// The resource exists already, or an Idempotency-Key is in use.
    pub const CONFLICT: &str = "/admin/v1/problems/conflict";
    /// If-Match names another version than the current one.
    pub const STALE: &str = "/admin/v1/problems/stale-etag";
    /// A change without If-Match.
    pub const PRECONDITION_REQUIRED: &str = "/admin/v1/problems/if-match-required";
    /// The body is larger than `admin.body_limit`.
    pub const TOO_LARGE: &str = "/admin/v1/problems/body-too-large";
    /// The body is not JSON.
    pub const MEDIA_TYPE: &str = "/admin/v1/problems/unsupported-media-type";
    /// The method is not allowed on this path.
    pub const METHOD: &str = "/admin/v1/problems/method-not-allowed";
    /// Too many failed authentications from this source.
    pub const THROTTLED: &str = "/admin/v1/problems/throttled";
    /// The store, the throttle store or the hash pool cannot answer now.
    pub const UNAVAILABLE: &str = "/admin/v1/problems/unavailable";
    /// An Idempotency-Key reused with a different request.
    pub const KEY_REUSED: &str = "/admin/v1/problems/idempotency-key-reused";
}

/// One wrong input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    /// Where: a JSON Pointer into the body (`/scopes/2`), or `query:NAME` / `header:NAME`.
    pub pointer: String,
    /// What is wrong with it.
    pub detail: String,
}

/// An RFC 9457 problem (boxed: it travels in every handler's `Result`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem(Box<ProblemDetails>);

impl std::ops::Deref for Problem {
    type Target = ProblemDetails;

    fn deref(&self) -> &ProblemDetails {
        &self.0
    }
}

impl std::ops::DerefMut for Problem {
    fn deref_mut(&mut self) -> &mut ProblemDetails {
        &mut self.0
    }
}

/// An RFC 9457 problem details object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = Problem)]
pub struct ProblemDetails {
    /// The problem type (a URI reference).
    #[serde(rename = "type")]
    pub kind: Cow<'static, str>,
    /// Short summary of the problem type.
    pub title: Cow<'static, str>,
    /// The HTTP status code.
    pub status: u16,
    /// What happened in this case. Never a secret.
    pub detail: String,
    /// The inputs that are wrong, when the problem is about input.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    /// Sent as `Retry-After` (seconds, rounded up); not in the body.
    #[serde(skip)]
    pub retry_after: Option<Duration>,
    /// Sent as `WWW-Authenticate` (401 and 403); not in the body.
    #[serde(skip)]
    pub challenge: Option<&'static str>,
}

impl Problem {
    /// A problem of `kind` with `status`, `title` and `detail`.
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        Problem(Box::new(ProblemDetails {
            kind: kind.into(),
            title: title.into(),
            status: status.as_u16(),
            detail: detail.into(),
            errors: Vec::new(),
            retry_after: None,
            challenge: None,
        }))
    }

    /// 400: the input at `pointer` is wrong.
    pub fn field(pointer: impl Into<String>, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let pointer = pointer.into();
        let mut p = Problem::new(
            StatusCode::BAD_REQUEST,
            kind::INVALID,
            "Invalid request",
            format!("{pointer}: {detail}"),
        );
        p.errors.push(FieldError { pointer, detail });
        p
    }

    /// 404 for `what`.
    pub fn not_found(what: impl Into<String>) -> Self {
        Problem::new(
            StatusCode::NOT_FOUND,
            kind::NOT_FOUND,
            "Not found",
            format!("{} not found", what.into()),
        )
    }

    /// 409.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Problem::new(StatusCode::CONFLICT, kind::CONFLICT, "Conflict", detail)
    }

    /// 412: If-Match does not name the current version.
    pub fn stale(what: &str) -> Self {
        Problem::new(
            StatusCode::PRECONDITION_FAILED,
            kind::STALE,
            "Stale ETag",
            format!("{what} changed since the ETag given in If-Match; read it again"),
        )
    }

    /// 428: a change without If-Match.
    pub fn if_match_required() -> Self {
        let mut p = Problem::new(
            StatusCode::PRECONDITION_REQUIRED,
            kind::PRECONDITION_REQUIRED,
            "If-Match required",
            "every change needs If-Match with the ETag of the version it changes",
        );
        p.errors.push(FieldError {
            pointer: "header:If-Match".into(),
            detail: "missing".into(),
        });
        p
    }

    /// 401 (with a Bearer challenge).
    pub fn unauthenticated(detail: impl Into<String>, invalid_token: bool) -> Self {
        let mut p = Problem::new(
            StatusCode::UNAUTHORIZED,
            kind::UNAUTHENTICATED,
            "Authentication required",
            detail,
        );
        p.challenge = Some(if invalid_token {
            "Bearer realm=\"portcullis-admin\", error=\"invalid_token\""
        } else {
            "Bearer realm=\"portcullis-admin\""
        });
        p
    }

    /// 403: the token lacks `scope`.
    pub fn forbidden(scope: &'static str) -> Self {
        let mut p = Problem::new(
            StatusCode::FORBIDDEN,
            kind::FORBIDDEN,
            "Insufficient scope",
            format!("this call needs scope {scope}"),
        );
        p.challenge = Some(match scope {
            "portcullis:admin:read" => {
                "Bearer realm=\"portcullis-admin\", error=\"insufficient_scope\", scope=\"portcullis:admin:read\""
            }
            _ => {
                "Bearer realm=\"portcullis-admin\", error=\"insufficient_scope\", scope=\"portcullis:admin:write\""
            }
        });
        p
    }

    /// 429 after too many failures.
    pub fn throttled(retry_after: Duration) -> Self {
        let mut p = Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            kind::THROTTLED,
            "Too many failed attempts",
            "too many failed authentications from this source; retry later",
        );
        p.retry_after = Some(retry_after);
        p
    }

    /// 503 with Retry-After.
    pub fn unavailable(detail: impl Into<String>, retry_after: Duration) -> Self {
        let mut p = Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            kind::UNAVAILABLE,
            "Temporarily unavailable",
            detail,
        );
        p.retry_after = Some(retry_after);
        p
    }

    /// 413.
    pub fn too_large(limit: usize) -> Self {
        Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            kind::TOO_LARGE,
            "Request body too large",
            format!("the request body exceeds {limit} bytes"),
        )
    }

    /// A store failure of `what`: logged, answered 503 (never 500: the caller may retry).
    pub fn store(what: &str, e: &dyn std::fmt::Display) -> Self {
        portcullis_door::metrics::store_failure(what, e);
        Problem::unavailable("the store is unavailable; retry", Duration::from_secs(1))
    }

    /// Map a store error of a write on `pointer`'s resource: invalid input names the
    /// field, a taken key is 409, a moved version 412, a missing object 404, the rest
    /// 503.
    pub fn from_store(e: StoreError, pointer: &str, what: &str) -> Self {
        match e {
            StoreError::Invalid(m) => Problem::field(pointer, m),
            StoreError::AlreadyExists(m) => Problem::conflict(format!("{m} already exists")),
            StoreError::Conflict(m) => Problem::stale(&m),
            StoreError::NotFound(m) => Problem::not_found(m),
            other => Problem::store(what, &other),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = serde_json::to_vec(&*self.0).unwrap_or_else(|_| b"{}".to_vec());
        let mut r = (status, body).into_response();
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(d) = self.retry_after {
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        if let Some(c) = self.challenge {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(c));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_problems_name_the_field_and_carry_no_secret_headers() {
        let r = Problem::field("/scopes/1", "not a scope token").into_response();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let p = Problem::field("/scopes/1", "bad");
        let v = serde_json::to_value(&*p).unwrap_or_default();
        assert_eq!(v["errors"][0]["pointer"], "/scopes/1");
        assert_eq!(v["status"], 400);
        assert!(v.get("retry_after").is_none());
    }

    #[test]
    fn retry_after_rounds_up() {
        let r = Problem::throttled(Duration::from_millis(1200)).into_response();
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
    }
}
