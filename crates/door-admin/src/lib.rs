//! The admin door (issue 27): a JSON REST API under `/admin/v1/` on its own listener
//! (`[admin] listen`, off by default), over its [`AdminContext`] (the same verifier,
//! store and OAuth state as the HTTP door). It manages clients, users, NAS, signing keys,
//! revocations and RFC 7591 initial access tokens, and shows and lifts throttle blocks;
//! its OpenAPI 3.1 document is generated from these handlers and types (`utoipa`) and
//! served at `/admin/v1/openapi.json`.
//!
//! Path of one request: the accept loop ([`serve::run`]: connection cap, header
//! timeout, TLS when `[tls]` is configured) -> request id, metrics, deadline (here) ->
//! [`auth::require`] (bearer token through the core's failure budgets; scope by method)
//! -> the resource handler, which reads its JSON body within `admin.body_limit`
//! ([`conventions`]), checks If-Match against the current ETag, writes by
//! compare-and-set on the version, and ends in [`action::finish`]: one audit event, and
//! the answer (a [`conventions::Reply`] or an RFC 9457 [`problem::Problem`]).
//!
//! Modules: [`config`] (`[admin]`), [`problem`] (errors), [`conventions`] (bodies,
//! ETags, pages, Idempotency-Key), [`resource`] (the read, change and remove flow of
//! versioned records, written once), [`auth`], [`action`] (audit), [`responses`]
//! (documented error sets), [`directory`] (users' directory attributes), and one
//! module per resource: [`clients`], [`users`], [`groups`], [`nas`], [`keys`] (signing
//! keys, revocations), [`registration_tokens`], [`throttle`],
//! [`apply`] (configuration as code, planned and carried out here);
//! [`openapi`].
#![forbid(unsafe_code)]

pub mod action;
pub mod apply;
pub mod apply_endpoint;
pub mod auth;
pub mod clients;
pub mod config;
pub mod context;
pub mod conventions;
pub mod directory;
pub mod groups;
pub mod keys;
pub mod nas;
pub mod openapi;
pub mod problem;
pub mod registration_tokens;
pub mod resource;
pub mod responses;
pub mod serve;
pub mod throttle;
pub mod users;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use crate::problem::Problem;
pub use context::{AdminContext, AdminDoorConfig};

/// The admin router.
pub fn router(ctx: Arc<AdminContext>) -> Router {
    let api = Router::new()
        .route(
            "/admin/v1/clients",
            get(clients::list).post(clients::create),
        )
        .route(
            "/admin/v1/clients/{id}",
            get(clients::get)
                .patch(clients::update)
                .delete(clients::remove),
        )
        .route(
            "/admin/v1/clients/{id}/rotate-secret",
            post(clients::rotate),
        )
        .route(
            "/admin/v1/clients/{id}/finish-rotation",
            post(clients::finish_rotation),
        )
        .route("/admin/v1/users", get(users::list).post(users::create))
        .route("/admin/v1/groups", get(groups::list).post(groups::create))
        .route(
            "/admin/v1/groups/{name}",
            get(groups::get)
                .patch(groups::update)
                .delete(groups::remove),
        )
        .route(
            "/admin/v1/users/{username}",
            get(users::get).patch(users::update).delete(users::remove),
        )
        .route("/admin/v1/nas", get(nas::list).post(nas::create))
        .route(
            "/admin/v1/nas/{name}",
            get(nas::get).patch(nas::update).delete(nas::remove),
        )
        .route("/admin/v1/nas/{name}/rotate-secret", post(nas::rotate))
        .route("/admin/v1/signing-keys", get(keys::list_keys))
        .route("/admin/v1/signing-keys/rotate", post(keys::rotate_keys))
        .route(
            "/admin/v1/revocations",
            get(keys::list_revocations).post(keys::revoke),
        )
        .route(
            "/admin/v1/registration-tokens",
            get(registration_tokens::list).post(registration_tokens::create),
        )
        .route(
            "/admin/v1/registration-tokens/{id}",
            get(registration_tokens::get).delete(registration_tokens::revoke),
        )
        .route("/admin/v1/throttle", get(throttle::show))
        .route("/admin/v1/throttle/lift", post(throttle::lift))
        .route("/admin/v1/apply", post(apply_endpoint::apply))
        .route_layer(from_fn_with_state(Arc::clone(&ctx), auth::require));
    Router::new()
        .route("/admin/v1/openapi.json", get(openapi::document))
        .merge(api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state(Arc::clone(&ctx), deadline))
        .layer(from_fn_with_state(Arc::clone(&ctx), track))
        .with_state(ctx)
}

async fn not_found() -> Response {
    Problem::not_found("this path").into_response()
}

async fn method_not_allowed() -> Response {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        problem::kind::METHOD,
        "Method not allowed",
        "this method is not allowed on this path",
    )
    .into_response()
}

/// Request id (also `X-Request-Id`) and the HTTP metrics, as on the OAuth door.
async fn track(State(_app): State<Arc<AdminContext>>, mut req: Request, next: Next) -> Response {
    let id = portcullis_core::audit::request_id();
    let value = HeaderValue::from_str(&id).ok();
    req.extensions_mut()
        .insert(portcullis_door::http_conn::RequestId(id));
    let mut resp = portcullis_door::metrics::track(req, next).await;
    if let Some(v) = value {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

/// The whole-request deadline (`server.request_timeout_ms`).
async fn deadline(State(ctx): State<Arc<AdminContext>>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(ctx.config.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => {
            let mut r = Problem::unavailable("the request took too long", Duration::from_secs(1))
                .into_response();
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            r
        }
    }
}

/// Background upkeep of the admin door: forget Idempotency-Keys past their retention.
pub async fn upkeep(ctx: Arc<AdminContext>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(300));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let ttl = i64::try_from(ctx.config.admin.idempotency_ttl.as_secs()).unwrap_or(86_400);
        if let Err(e) = ctx
            .store
            .purge_idempotency_keys(portcullis_door::unix_now() - ttl)
            .await
        {
            tracing::warn!("purging expired Idempotency-Keys failed: {e}");
        }
    }
}

/// Bind the admin listener if `[admin] listen` is set.
pub async fn bind(
    config: &config::AdminConfig,
) -> std::io::Result<Option<tokio::net::TcpListener>> {
    match config.listen {
        None => Ok(None),
        Some(addr) => tokio::net::TcpListener::bind(addr).await.map(Some),
    }
}
