//! The OAuth 2.0 endpoints: token (RFC 6749 4.3 password and 4.4 client_credentials, JWT
//! access tokens per RFC 9068), introspection (RFC 7662) and revocation (RFC 7009).
//!
//! Every secret (client secret, user password) is checked by the verification core; a
//! handler never hashes and never waits on a hash except through `Verifier::verify`. The
//! core's outcomes and store failures become [`OAuthError`]s here and nowhere else.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use portcullis_core::{Attempt, AuditContext, Outcome, PrincipalKind, Protocol};
use portcullis_store::{ClientRecord, Grant, StoreError};
use serde::Serialize;
use zeroize::Zeroizing;

use crate::HttpContext;
use crate::error::{OAuthError, no_store};
use crate::form::{self, ClientCredentials, Form, Presented};
pub use portcullis_door::http_conn::Peer;
use portcullis_door::metrics::OAUTH_ERRORS;
use portcullis_door::unix_now;
use portcullis_oauth::client_auth::{self, mtls::ClientCerts};
use portcullis_oauth::jwt::{AccessClaims, new_jti};

/// How long clients are told to wait after a store failure.
const STORE_RETRY: Duration = Duration::from_secs(1);

/// Log a store failure and answer 503 (never 500: the client may retry).
pub fn store_failed(what: &str, e: &dyn std::fmt::Display) -> OAuthError {
    portcullis_door::metrics::store_failure(what, e);
    OAuthError::unavailable(STORE_RETRY)
}

fn finish(result: Result<Response, OAuthError>) -> Response {
    match result {
        Ok(r) => r,
        Err(e) => {
            metrics::counter!(OAUTH_ERRORS, "error" => e.code.as_str()).increment(1);
            e.into_response()
        }
    }
}

/// Read the body within the configured limit and decode it as a form.
async fn read_form(ctx: &HttpContext, req: Request) -> Result<(Parts, Form), OAuthError> {
    let (parts, body) = req.into_parts();
    let limit = ctx.config.body_limit;
    form::check_content_type(&parts.headers)?;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|l| l > limit as u64) {
        drain(body).await;
        return Err(OAuthError::too_large(limit));
    }
    let mut body = body;
    let mut buf = Vec::with_capacity(declared.map_or(256, |l| l as usize));
    loop {
        match body.frame().await {
            None => break,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if buf.len() + data.len() > limit {
                        drain(body).await;
                        return Err(OAuthError::too_large(limit));
                    }
                    buf.extend_from_slice(&data);
                }
            }
            Some(Err(_)) => {
                return Err(OAuthError::invalid_request(
                    "could not read the request body",
                ));
            }
        }
    }
    let bytes = Bytes::from(buf);
    let form = Form::parse(&bytes)?;
    Ok((parts, form))
}

/// Most bytes of an oversized body read and discarded before answering 413: closing a
/// socket with unread data makes the kernel send a reset, and the client may then lose
/// our answer. Beyond this bound we close anyway (not worth the bandwidth).
const DRAIN_LIMIT: usize = 256 * 1024;

async fn drain(mut body: Body) {
    let mut seen = 0usize;
    while seen < DRAIN_LIMIT {
        match body.frame().await {
            Some(Ok(f)) => seen += f.data_ref().map_or(0, |d| d.len()),
            _ => break,
        }
    }
}

/// The client's address: the connection's peer, or behind a trusted load balancer the
/// address it forwards (see [`portcullis_door::forwarded`]).
/// The id the request-id middleware gave this request (a fresh one if it is missing,
/// which only happens for a handler called without the router).
fn request_id_of(parts: &Parts) -> String {
    parts
        .extensions
        .get::<crate::RequestId>()
        .map_or_else(portcullis_core::audit::request_id, |r| r.0.clone())
}

fn source_of(ctx: &HttpContext, parts: &Parts) -> IpAddr {
    let peer = parts
        .extensions
        .get::<Peer>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.ip());
    let client = ctx.config.trusted_proxies.client_addr(peer, &parts.headers);
    if client != peer {
        metrics::counter!(portcullis_door::metrics::FORWARDED).increment(1);
        tracing::debug!(%peer, %client, "client address forwarded by a trusted proxy");
    }
    client
}

/// Map a non-accepting outcome to its answer.
fn refused(outcome: Outcome, rejected: OAuthError) -> Result<(), OAuthError> {
    match outcome {
        Outcome::Accepted { .. } => Ok(()),
        Outcome::Rejected => Err(rejected),
        Outcome::Throttled { retry_after } => Err(OAuthError::throttled(retry_after)),
        Outcome::Overloaded { retry_after } => Err(OAuthError::overloaded(retry_after)),
        // The user's directory could not answer (issue 40): 503, nothing charged.
        Outcome::Unavailable { retry_after } => Err(OAuthError::unavailable(retry_after)),
    }
}

/// An authenticated client: its record and, when it proved itself with a TLS client
/// certificate, that certificate's thumbprint (the token is bound to it, RFC 8705 3).
struct Authenticated {
    client: Arc<ClientRecord>,
    x5t_s256: Option<String>,
}

/// Authenticate the client through the core and load its record. Secrets are verified by
/// the core (hash pool or inline HMAC); assertions and certificates by a proof check the
/// core runs after its throttle admitted the attempt.
async fn authenticate(
    ctx: &HttpContext,
    presented: Presented,
    parts: &Parts,
    deadline: Instant,
) -> Result<Authenticated, OAuthError> {
    let source = source_of(ctx, parts);
    let attempt = |principal: String, secret: Zeroizing<Vec<u8>>, protocol: Protocol| Attempt {
        kind: PrincipalKind::Client,
        principal,
        secret,
        source,
        protocol,
        deadline,
        station: None,
        context: AuditContext {
            request_id: request_id_of(parts),
            client_id: None,
            eap: None,
        },
    };
    let failed = || OAuthError::invalid_client("client authentication failed");
    let (client_id, outcome, x5t_s256) = match presented {
        Presented::Secret(ClientCredentials {
            client_id, secret, ..
        }) => {
            let a = attempt(client_id.clone(), secret, Protocol::OAuthClient);
            (client_id, ctx.verifier.verify(a).await, None)
        }
        Presented::Assertion {
            client_id,
            assertion,
        } => {
            let unverified = client_auth::assertion::peek(&assertion).map_err(|e| {
                OAuthError::invalid_client(format!("client assertion rejected: {}", e.0))
            })?;
            if client_id
                .as_ref()
                .is_some_and(|id| *id != unverified.client_id)
            {
                return Err(OAuthError::invalid_client(
                    "client_id differs from the assertion's issuer",
                ));
            }
            let id = unverified.client_id.clone();
            let auds = client_auth::audiences(&ctx.oauth.issuer, parts.uri.path());
            let a = attempt(
                id.clone(),
                Zeroizing::default(),
                Protocol::OAuthClientAssertion,
            );
            let outcome = ctx
                .verifier
                .verify_proof(
                    a,
                    client_auth::check_assertion(&ctx.oauth, &unverified, &auds),
                )
                .await;
            (id, outcome, None)
        }
        Presented::Certificate { client_id } => {
            let certs = parts.extensions.get::<ClientCerts>();
            let thumb = certs
                .and_then(|c| c.0.first())
                .map(|leaf| client_auth::mtls::thumbprint(leaf.as_ref()));
            let a = attempt(
                client_id.clone(),
                Zeroizing::default(),
                Protocol::OAuthClientTls,
            );
            let outcome = ctx
                .verifier
                .verify_proof(
                    a,
                    client_auth::check_certificate(&ctx.oauth, &client_id, certs),
                )
                .await;
            (client_id, outcome, thumb)
        }
    };
    refused(outcome, failed())?;
    match ctx.oauth.clients.get(&client_id).await {
        Ok(Some(client)) => Ok(Authenticated { client, x5t_s256 }),
        // Removed between verification and now.
        Ok(None) => Err(failed()),
        Err(e) => Err(store_failed("loading a client", &e)),
    }
}

/// Granted scope: the requested scopes (a subset of the client's) or all of them.
pub fn grant_scope(requested: Option<&str>, allowed: &[String]) -> Result<String, OAuthError> {
    let Some(requested) = requested else {
        return Ok(allowed.join(" "));
    };
    let mut granted: Vec<&str> = Vec::new();
    for s in requested.split(' ') {
        let valid = !s.is_empty()
            && s.len() <= portcullis_store::record::MAX_SCOPE_LEN
            && s.bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if !valid {
            return Err(OAuthError::invalid_scope("malformed scope"));
        }
        if !allowed.iter().any(|a| a == s) {
            return Err(OAuthError::invalid_scope(format!(
                "scope '{s}' is not allowed for this client"
            )));
        }
        if !granted.contains(&s) {
            granted.push(s);
        }
    }
    Ok(granted.join(" "))
}

#[derive(Serialize)]
struct TokenResponse<'a> {
    access_token: &'a str,
    token_type: &'static str,
    expires_in: u64,
    #[serde(skip_serializing_if = "str::is_empty")]
    scope: &'a str,
}

fn json_no_store(status: StatusCode, body: Vec<u8>) -> Response {
    let mut resp = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    no_store(&mut resp);
    resp
}

/// `POST /oauth2/token`
pub async fn token(State(ctx): State<Arc<HttpContext>>, req: Request) -> Response {
    finish(token_inner(&ctx, req).await)
}

async fn token_inner(ctx: &HttpContext, req: Request) -> Result<Response, OAuthError> {
    let arrived = Instant::now();
    let deadline = arrived + ctx.config.request_timeout;
    let (parts, form) = read_form(ctx, req).await?;
    let grant = match form.require("grant_type")? {
        "client_credentials" => Grant::ClientCredentials,
        "password" => Grant::Password,
        _ => {
            return Err(OAuthError::unsupported_grant_type(
                "supported grant types: client_credentials, password",
            ));
        }
    };
    let creds = form::presented(&parts.headers, &form)?;
    // Syntax of the password grant is checked before any secret is verified.
    let user = if grant == Grant::Password {
        let username = form.require("username")?;
        form::check_principal(username)
            .map_err(|e| OAuthError::invalid_request(format!("username: {e}")))?;
        let password = form.require("password")?;
        if password.len() > form::MAX_SECRET_LEN {
            return Err(OAuthError::invalid_grant(
                "invalid resource owner credentials",
            ));
        }
        Some((username, password))
    } else {
        None
    };
    let source = source_of(ctx, &parts);
    let Authenticated { client, x5t_s256 } = authenticate(ctx, creds, &parts, deadline).await?;
    if !client.allows(grant) {
        return Err(OAuthError::unauthorized_client(format!(
            "this client may not use the {} grant",
            grant.as_str()
        )));
    }
    let scope = grant_scope(form.get("scope"), &client.scopes)?;
    let sub = match user {
        None => client.id.clone(),
        Some((username, password)) => {
            let outcome = ctx
                .verifier
                .verify(Attempt {
                    kind: PrincipalKind::User,
                    principal: username.to_owned(),
                    secret: Zeroizing::new(password.as_bytes().to_vec()),
                    source,
                    protocol: Protocol::OAuthPassword,
                    deadline,
                    station: None,
                    context: AuditContext {
                        request_id: request_id_of(&parts),
                        client_id: Some(client.id.clone()),
                        eap: None,
                    },
                })
                .await;
            refused(
                outcome,
                OAuthError::invalid_grant("invalid resource owner credentials"),
            )?;
            username.to_owned()
        }
    };
    let lifetime = u64::from(client.token_lifetime).min(ctx.oauth.token_lifetime.as_secs());
    let iat = u64::try_from(unix_now()).unwrap_or(0);
    let jti = new_jti().map_err(|e| store_failed("generating a token id", &e))?;
    let claims = AccessClaims {
        iss: ctx.oauth.issuer.clone(),
        sub,
        aud: ctx.oauth.audience.clone(),
        client_id: client.id.clone(),
        scope,
        jti,
        iat,
        exp: iat + lifetime,
        cnf: x5t_s256.map(|x5t_s256| portcullis_oauth::jwt::Confirmation { x5t_s256 }),
    };
    let keys = ctx.oauth.keys.keys();
    let access_token = keys
        .current
        .sign(&claims)
        .map_err(|e| store_failed("encoding a token", &e))?;
    let body = serde_json::to_vec(&TokenResponse {
        access_token: &access_token,
        token_type: "Bearer",
        expires_in: lifetime,
        scope: &claims.scope,
    })
    .map_err(|e| store_failed("encoding a token response", &e))?;
    ctx.tokens_issued[match grant {
        Grant::ClientCredentials => 0,
        Grant::Password => 1,
    }]
    .increment(1);
    ctx.stats.tokens_issued.fetch_add(1, Ordering::Relaxed);
    Ok(json_no_store(StatusCode::OK, body))
}

/// A presented token that verifies, is unexpired and not revoked.
async fn active_claims(ctx: &HttpContext, token: &str) -> Result<Option<AccessClaims>, OAuthError> {
    ctx.oauth
        .active_claims(token)
        .await
        .map_err(|f| store_failed(f.what, &f.error))
}

/// `POST /oauth2/introspect` (RFC 7662): any authenticated client may ask.
pub async fn introspect(State(ctx): State<Arc<HttpContext>>, req: Request) -> Response {
    finish(introspect_inner(&ctx, req).await)
}

async fn introspect_inner(ctx: &HttpContext, req: Request) -> Result<Response, OAuthError> {
    let deadline = Instant::now() + ctx.config.request_timeout;
    let (parts, form) = read_form(ctx, req).await?;
    let creds = form::presented(&parts.headers, &form)?;
    let token = form.require("token")?.to_owned();
    authenticate(ctx, creds, &parts, deadline).await?;
    let body = match active_claims(ctx, &token).await? {
        None => serde_json::json!({ "active": false }),
        Some(c) => {
            let mut v = serde_json::json!({
                "active": true,
                "token_type": "Bearer",
                "client_id": c.client_id,
                "sub": c.sub,
                "aud": c.aud,
                "iss": c.iss,
                "jti": c.jti,
                "iat": c.iat,
                "exp": c.exp,
            });
            if !c.scope.is_empty() {
                v["scope"] = serde_json::Value::String(c.scope);
            }
            if let Some(cnf) = &c.cnf {
                v["cnf"] = serde_json::json!({ "x5t#S256": cnf.x5t_s256 });
            }
            v
        }
    };
    Ok(json_no_store(StatusCode::OK, body.to_string().into_bytes()))
}

/// `POST /oauth2/revoke` (RFC 7009): a client may revoke the tokens issued to it.
pub async fn revoke(State(ctx): State<Arc<HttpContext>>, req: Request) -> Response {
    finish(revoke_inner(&ctx, req).await)
}

async fn revoke_inner(ctx: &HttpContext, req: Request) -> Result<Response, OAuthError> {
    let deadline = Instant::now() + ctx.config.request_timeout;
    let (parts, form) = read_form(ctx, req).await?;
    let creds = form::presented(&parts.headers, &form)?;
    let token = form.require("token")?.to_owned();
    let client = authenticate(ctx, creds, &parts, deadline).await?.client;
    // RFC 7009 2.2: an invalid or expired token is not an error (nothing to revoke).
    if let Some(claims) = active_claims(ctx, &token).await? {
        if claims.client_id != client.id {
            return Err(OAuthError::unauthorized_client(
                "the token was not issued to this client",
            ));
        }
        let exp = i64::try_from(claims.exp).unwrap_or(i64::MAX);
        ctx.revocations
            .revoke_token(&claims.jti, exp)
            .await
            .map_err(|e: StoreError| store_failed("revoking a token", &e))?;
    }
    let mut resp = (StatusCode::OK, Body::empty()).into_response();
    no_store(&mut resp);
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn allowed() -> Vec<String> {
        vec!["read".into(), "write".into(), "admin:all".into()]
    }

    #[test]
    fn default_scope_is_everything_allowed() {
        assert_eq!(
            grant_scope(None, &allowed()).unwrap(),
            "read write admin:all"
        );
        assert_eq!(grant_scope(None, &[]).unwrap(), "");
    }

    #[test]
    fn requested_scope_must_be_a_subset() {
        assert_eq!(
            grant_scope(Some("write read read"), &allowed()).unwrap(),
            "write read"
        );
        let e = grant_scope(Some("read delete"), &allowed()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidScope);
        for bad in ["read  write", " read", "re\"ad", "r\\d"] {
            assert_eq!(
                grant_scope(Some(bad), &allowed()).unwrap_err().code,
                ErrorCode::InvalidScope,
                "{bad:?}"
            );
        }
    }
}
