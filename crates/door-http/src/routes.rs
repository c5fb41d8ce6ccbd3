//! The HTTP surface: the router, discovery metadata (RFC 8414 and its OpenID Connect
//! twin), JWKS, health, readiness, metrics and the live status page.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};

use crate::HttpContext;
use crate::error::OAuthError;
use crate::oauth;

/// The router of one server.
pub fn router(ctx: Arc<HttpContext>) -> Router {
    let registration = ctx.config.registration.enabled;
    let mut r = Router::new();
    if registration {
        r = r
            .route(
                "/oauth2/register",
                oauth_post(post(crate::register::register)),
            )
            .route(
                "/oauth2/register/{client_id}",
                axum::routing::any(crate::register::configuration),
            );
    }
    r.route("/oauth2/token", oauth_post(post(oauth::token)))
        .route("/oauth2/introspect", oauth_post(post(oauth::introspect)))
        .route("/oauth2/revoke", oauth_post(post(oauth::revoke)))
        .route("/oauth2/jwks", get(jwks))
        .route("/.well-known/oauth-authorization-server", get(discovery))
        .route("/.well-known/openid-configuration", get(discovery))
        .layer(axum::Extension(Discovery(
            metadata(
                &ctx.oauth.issuer,
                ctx.config.client_certificates,
                registration,
            )
            .into(),
        )))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/status", get(crate::status::page))
        .route("/status.json", get(crate::status::json))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            track,
        ))
        .layer(axum::middleware::from_fn_with_state(
            ctx.config
                .hsts
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok()),
            hsts,
        ))
        .with_state(ctx)
}

/// `Strict-Transport-Security` on every answer of an HTTPS door (RFC 6797 7.2: never over
/// a non-secure transport; the router of a plain HTTP door has `None`). Outermost, so the
/// deadline's 503 and the fallback's 404 carry it too.
async fn hsts(State(value): State<Option<HeaderValue>>, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    if let Some(v) = value {
        resp.headers_mut()
            .insert(header::STRICT_TRANSPORT_SECURITY, v);
    }
    resp
}

/// OAuth endpoints answer a wrong method with an OAuth error body too.
fn oauth_post(m: MethodRouter<Arc<HttpContext>>) -> MethodRouter<Arc<HttpContext>> {
    m.fallback(|| async {
        let mut r = OAuthError::invalid_request("use POST").into_response();
        *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        r
    })
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

/// Count the request for the status page and Prometheus, and give it its request id.
async fn track(State(ctx): State<Arc<HttpContext>>, mut req: Request, next: Next) -> Response {
    ctx.stats.in_flight.fetch_add(1, Ordering::Relaxed);
    let _guard = Decrement(&ctx);
    let id = portcullis_core::audit::request_id();
    let header_value = HeaderValue::from_str(&id).ok();
    req.extensions_mut().insert(super::RequestId(id));
    let mut resp = portcullis_door::metrics::track(req, next).await;
    if let Some(v) = header_value {
        resp.headers_mut().insert("x-request-id", v);
    }
    ctx.stats.requests.fetch_add(1, Ordering::Relaxed);
    resp
}

struct Decrement<'a>(&'a HttpContext);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The whole-request deadline: a request that somehow outlives it gets a 503 with
/// Retry-After rather than holding the client until its own timeout. (The core receives
/// the same deadline and normally answers "overloaded" long before this fires.)
async fn deadline(State(ctx): State<Arc<HttpContext>>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(ctx.config.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => {
            tracing::warn!(
                "request exceeded the {:?} deadline",
                ctx.config.request_timeout
            );
            OAuthError::overloaded(std::time::Duration::from_secs(1)).into_response()
        }
    }
}

/// The RFC 8414 metadata document for `issuer`; `mtls`: the server speaks TLS and asks
/// for client certificates, so the RFC 8705 methods are offered; `registration`: dynamic
/// client registration is on, so its endpoint is advertised.
pub fn metadata(issuer: &str, mtls: bool, registration: bool) -> Vec<u8> {
    let mut methods = vec![
        "client_secret_basic",
        "client_secret_post",
        "private_key_jwt",
    ];
    if mtls {
        methods.extend(["tls_client_auth", "self_signed_tls_client_auth"]);
    }
    let algs: Vec<&str> = portcullis_oauth::client_auth::keys::Alg::ALL
        .iter()
        .map(|a| a.name())
        .collect();
    let mut doc = serde_json::json!({
        "issuer": issuer,
        "token_endpoint": format!("{issuer}/oauth2/token"),
        "jwks_uri": format!("{issuer}/oauth2/jwks"),
        "introspection_endpoint": format!("{issuer}/oauth2/introspect"),
        "revocation_endpoint": format!("{issuer}/oauth2/revoke"),
        "grant_types_supported": ["client_credentials", "password"],
        "token_endpoint_auth_methods_supported": methods,
        "introspection_endpoint_auth_methods_supported": methods,
        "revocation_endpoint_auth_methods_supported": methods,
        // No authorization endpoint, so no response types (RFC 8414 makes the field
        // required; an empty list states that truthfully).
        "response_types_supported": [],
        // Client assertions (private_key_jwt) may be signed with these.
        "token_endpoint_auth_signing_alg_values_supported": algs,
        "introspection_endpoint_auth_signing_alg_values_supported": algs,
        "revocation_endpoint_auth_signing_alg_values_supported": algs,
        "access_token_signing_alg_values_supported": ["EdDSA"],
    });
    if mtls {
        doc["tls_client_certificate_bound_access_tokens"] = serde_json::Value::Bool(true);
    }
    if registration {
        doc["registration_endpoint"] =
            serde_json::Value::String(format!("{issuer}/oauth2/register"));
    }
    doc.to_string().into_bytes()
}

fn json(body: Vec<u8>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// The discovery document (RFC 8414), rendered once when the router is built.
#[derive(Clone)]
struct Discovery(Arc<[u8]>);

async fn discovery(axum::Extension(Discovery(doc)): axum::Extension<Discovery>) -> Response {
    json(doc.to_vec())
}

async fn jwks(State(ctx): State<Arc<HttpContext>>) -> Response {
    // Another instance sharing the store may have published a successor key since the
    // last maintenance tick; re-read (at most once a second). On a store failure the keys
    // in memory are still right until their successor signs.
    if let Err(e) = ctx.oauth.keys.refresh(portcullis_door::unix_now()).await {
        tracing::warn!("refreshing signing keys for the JWKS: {e}");
    }
    let mut r = json(ctx.oauth.keys.keys().jwks().to_string().into_bytes());
    // Short caching: clients refetch soon enough to see a rotation.
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    r
}

/// Liveness: the process answers HTTP. Deliberately does nothing else.
async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the store answers and the hash pool is running.
async fn readyz(State(ctx): State<Arc<HttpContext>>) -> Response {
    if ctx.verifier.snapshot().shutting_down {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    match ctx.health.ping().await {
        Ok(()) => {
            // Detail of what is behind the server (issue 40: each upstream directory).
            let mut body = String::from("ready\n");
            for panel in ctx.panels.read().iter() {
                for line in panel.readiness() {
                    body.push_str(&line);
                    body.push('\n');
                }
            }
            (StatusCode::OK, body).into_response()
        }
        Err(e) => {
            tracing::warn!("readiness: store unavailable: {e}");
            let mut r = (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
    }
}

async fn metrics(State(ctx): State<Arc<HttpContext>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        ctx.metrics.render(),
    )
        .into_response()
}
