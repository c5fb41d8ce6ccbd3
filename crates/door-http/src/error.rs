//! OAuth 2.0 error answers (RFC 6749 section 5.2, RFC 7009, RFC 7662) and their HTTP form.
//!
//! This is the one place where failures become status codes: handlers return
//! [`OAuthError`] and never build error responses by hand, so every error a client sees
//! carries a registered `error` code, a JSON body and `Cache-Control: no-store`.

use std::borrow::Cow;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Registered OAuth error codes we answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// Malformed request: missing or repeated parameter, bad encoding, wrong content type.
    InvalidRequest,
    /// Client authentication failed (401 with `WWW-Authenticate`).
    InvalidClient,
    /// The resource owner's credentials are wrong.
    InvalidGrant,
    /// The client may not use this grant type.
    UnauthorizedClient,
    /// The grant type is not one we implement.
    UnsupportedGrantType,
    /// The requested scope exceeds what the client is allowed.
    InvalidScope,
    /// RFC 7009 2.2.1: revocation of this token type is not supported.
    UnsupportedTokenType,
    /// Throttled, overloaded or the store is unavailable: retry later.
    TemporarilyUnavailable,
    /// RFC 6750 3.1: the bearer token (initial or registration access token) is missing,
    /// unknown, expired or used up (401 with a `Bearer` challenge).
    InvalidToken,
    /// RFC 7591 3.2.2: a metadata value is invalid or refused by policy.
    InvalidClientMetadata,
    /// RFC 7591 3.2.2: redirect URIs were sent (no flow here redirects).
    InvalidRedirectUri,
    /// RFC 7591 3.2.2: the software statement is malformed or expired.
    InvalidSoftwareStatement,
    /// RFC 7591 3.2.2: the software statement is not signed by a trusted issuer's key.
    UnapprovedSoftwareStatement,
}

impl ErrorCode {
    /// The registered string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidClient => "invalid_client",
            ErrorCode::InvalidGrant => "invalid_grant",
            ErrorCode::UnauthorizedClient => "unauthorized_client",
            ErrorCode::UnsupportedGrantType => "unsupported_grant_type",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::UnsupportedTokenType => "unsupported_token_type",
            ErrorCode::TemporarilyUnavailable => "temporarily_unavailable",
            ErrorCode::InvalidToken => "invalid_token",
            ErrorCode::InvalidClientMetadata => "invalid_client_metadata",
            ErrorCode::InvalidRedirectUri => "invalid_redirect_uri",
            ErrorCode::InvalidSoftwareStatement => "invalid_software_statement",
            ErrorCode::UnapprovedSoftwareStatement => "unapproved_software_statement",
        }
    }
}

/// An error answer: code, HTTP status, human-readable description, optional Retry-After.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    /// The registered error code.
    pub code: ErrorCode,
    /// HTTP status (400 for most codes, 401 for `invalid_client`, 413, 429, 503).
    pub status: StatusCode,
    /// `error_description`; never contains secrets.
    pub description: Cow<'static, str>,
    /// Sent as `Retry-After` in whole seconds, rounded up.
    pub retry_after: Option<Duration>,
}

impl OAuthError {
    fn new(code: ErrorCode, status: StatusCode, description: impl Into<Cow<'static, str>>) -> Self {
        OAuthError {
            code,
            status,
            description: description.into(),
            retry_after: None,
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid_request(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::InvalidRequest,
            StatusCode::BAD_REQUEST,
            description,
        )
    }

    /// 413 `invalid_request`: the body exceeds the configured limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            ErrorCode::InvalidRequest,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body exceeds {limit} bytes"),
        )
    }

    /// 401 `invalid_client`.
    pub fn invalid_client(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::InvalidClient,
            StatusCode::UNAUTHORIZED,
            description,
        )
    }

    /// 400 `invalid_grant`.
    pub fn invalid_grant(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::InvalidGrant,
            StatusCode::BAD_REQUEST,
            description,
        )
    }

    /// 400 `unauthorized_client`.
    pub fn unauthorized_client(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::UnauthorizedClient,
            StatusCode::BAD_REQUEST,
            description,
        )
    }

    /// 400 `unsupported_grant_type`.
    pub fn unsupported_grant_type(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::UnsupportedGrantType,
            StatusCode::BAD_REQUEST,
            description,
        )
    }

    /// 400 `invalid_scope`.
    pub fn invalid_scope(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::InvalidScope,
            StatusCode::BAD_REQUEST,
            description,
        )
    }

    /// 400 `unsupported_token_type`.
    pub fn unsupported_token_type(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::UnsupportedTokenType,
            StatusCode::BAD_REQUEST,
            description,
        )
    }

    /// 401 `invalid_token` (RFC 6750 3.1), with a `Bearer` challenge.
    pub fn invalid_token(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorCode::InvalidToken,
            StatusCode::UNAUTHORIZED,
            description,
        )
    }

    /// 400 with one of RFC 7591's registration error codes.
    pub fn registration(code: ErrorCode, description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(code, StatusCode::BAD_REQUEST, description)
    }

    /// 429: too many failures from this source or for this principal.
    pub fn throttled(retry_after: Duration) -> Self {
        OAuthError {
            retry_after: Some(retry_after),
            ..Self::new(
                ErrorCode::TemporarilyUnavailable,
                StatusCode::TOO_MANY_REQUESTS,
                "too many failed attempts; retry later",
            )
        }
    }

    /// 503: the verifier is saturated.
    pub fn overloaded(retry_after: Duration) -> Self {
        OAuthError {
            retry_after: Some(retry_after),
            ..Self::new(
                ErrorCode::TemporarilyUnavailable,
                StatusCode::SERVICE_UNAVAILABLE,
                "server busy; retry later",
            )
        }
    }

    /// 503: a dependency (the store) failed. The cause is logged by the caller, not sent.
    pub fn unavailable(retry_after: Duration) -> Self {
        OAuthError {
            retry_after: Some(retry_after),
            ..Self::new(
                ErrorCode::TemporarilyUnavailable,
                StatusCode::SERVICE_UNAVAILABLE,
                "service temporarily unavailable; retry later",
            )
        }
    }
}

/// Whole seconds for `Retry-After`, rounded up and at least 1 (0 would invite a hot loop).
pub fn retry_after_secs(d: Duration) -> u64 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    secs.max(1)
}

/// Headers every token-endpoint answer carries (RFC 6749 5.1): never cache credentials.
pub fn no_store(resp: &mut Response) {
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

#[derive(serde::Serialize)]
struct Body<'a> {
    error: &'static str,
    error_description: &'a str,
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&Body {
            error: self.code.as_str(),
            error_description: &self.description,
        })
        .unwrap_or_else(|_| br#"{"error":"invalid_request"}"#.to_vec());
        let mut resp = (
            self.status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response();
        no_store(&mut resp);
        if self.code == ErrorCode::InvalidClient {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"portcullis\""),
            );
        }
        if self.code == ErrorCode::InvalidToken {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"portcullis\", error=\"invalid_token\""),
            );
        }
        if let Some(d) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs(d)));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_and_is_never_zero() {
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
    }

    #[test]
    fn invalid_client_is_401_with_basic_challenge_and_no_store() {
        let r = OAuthError::invalid_client("bad").into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Basic realm=\"portcullis\""
        );
        assert_eq!(r.headers()[header::CACHE_CONTROL], "no-store");
        assert_eq!(r.headers()[header::PRAGMA], "no-cache");
    }

    #[test]
    fn throttled_is_429_with_retry_after() {
        let r = OAuthError::throttled(Duration::from_millis(2500)).into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "3");
        assert!(r.headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
