//! RFC 7591 dynamic client registration (`POST /oauth2/register`) and the RFC 7592 client
//! configuration endpoint (`GET`/`PUT`/`DELETE /oauth2/register/{client_id}`), served
//! when `[registration] enabled`.
//!
//! Both are authenticated by a bearer token checked through the verification core
//! ([`portcullis_core::Verifier::verify_proof`], protocol `oauth_registration`): the
//! throttle admits or refuses the attempt first, a wrong, expired or used-up token is a
//! failure charged to the same budgets as a wrong client secret, and every check is an
//! audit event. Initial access tokens are `<id>.<secret>` (the id is the principal);
//! registration access tokens belong to the client named in the path (the client id is
//! the principal). Only SHA-256 digests are stored, compared in constant time.
//!
//! The client secret is in the 201 answer only; reads and updates never return it again.
//! RFC 7592 3 has every read and update answer carry `registration_access_token`; as only
//! its hash is stored, each successful read and update makes a new one, returns it and
//! retires the presented one in the same statement (so of two concurrent uses of one
//! token exactly one succeeds, and the old token stops working at once). Answers carry
//! `Cache-Control: no-store`.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::Mutex;
use portcullis_core::{Attempt, AuditContext, Outcome, PrincipalKind, ProofCheck, Protocol};
use portcullis_hash::pepper::PepperedHmac;
use portcullis_store::registration::{
    ClientRegistration, InitialAccessToken, TokenRotation, generate_token_secret, hash_token,
};
use portcullis_store::{ClientAuth, ClientRecord, StoreError};
use serde_json::{Map, Value};
use zeroize::Zeroizing;

use crate::HttpContext;
use crate::error::{ErrorCode, OAuthError, no_store};
use crate::oauth::{Peer, store_failed};
use portcullis_door::metrics::OAUTH_ERRORS;
use portcullis_door::unix_now;
use portcullis_oauth::registration::{self as reg, Allowance, RegError};

/// Prometheus: registration endpoint answers by operation and result.
pub const REGISTRATIONS: &str = "portcullis_registrations_total";

/// Longest bearer token read from `Authorization`.
const MAX_TOKEN_LEN: usize = 512;

fn finish(op: &'static str, result: Result<Response, OAuthError>) -> Response {
    match result {
        Ok(r) => {
            metrics::counter!(REGISTRATIONS, "operation" => op, "result" => "ok").increment(1);
            r
        }
        Err(e) => {
            metrics::counter!(REGISTRATIONS, "operation" => op, "result" => e.code.as_str())
                .increment(1);
            metrics::counter!(OAUTH_ERRORS, "error" => e.code.as_str()).increment(1);
            e.into_response()
        }
    }
}

fn refused(e: RegError) -> OAuthError {
    let code = match e {
        RegError::InvalidMetadata(_) => ErrorCode::InvalidClientMetadata,
        RegError::InvalidRedirectUri(_) => ErrorCode::InvalidRedirectUri,
        RegError::InvalidStatement(_) => ErrorCode::InvalidSoftwareStatement,
        RegError::UnapprovedStatement(_) => ErrorCode::UnapprovedSoftwareStatement,
    };
    OAuthError::registration(code, e.description().to_owned())
}

fn source_of(ctx: &HttpContext, parts: &Parts) -> IpAddr {
    let peer = parts
        .extensions
        .get::<Peer>()
        .map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |p| p.0.ip());
    ctx.config.trusted_proxies.client_addr(peer, &parts.headers)
}

fn request_id_of(parts: &Parts) -> String {
    parts
        .extensions
        .get::<crate::RequestId>()
        .map_or_else(portcullis_core::audit::request_id, |r| r.0.clone())
}

/// The bearer token of `Authorization: Bearer <token>` (RFC 6750 2.1).
fn bearer(parts: &Parts) -> Result<String, OAuthError> {
    let missing = || OAuthError::invalid_token("a bearer token is required");
    let value = parts
        .headers
        .get(header::AUTHORIZATION)
        .ok_or_else(missing)?
        .to_str()
        .map_err(|_| missing())?;
    let (scheme, token) = value.split_once(' ').ok_or_else(missing)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(missing());
    }
    Ok(token.to_owned())
}

/// Read a JSON body within `server.body_limit`.
async fn read_json(
    ctx: &HttpContext,
    body: Body,
    parts: &Parts,
) -> Result<Map<String, Value>, OAuthError> {
    let json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json {
        return Err(OAuthError::registration(
            ErrorCode::InvalidClientMetadata,
            "the body must be application/json",
        ));
    }
    let bytes = axum::body::to_bytes(body, ctx.config.body_limit)
        .await
        .map_err(|_| OAuthError::too_large(ctx.config.body_limit))?;
    reg::parse_body(&bytes).map_err(refused)
}

/// Check a bearer token through the core: `principal` is what the throttle and the audit
/// event see; `check` loads and compares. Returns what the check found.
async fn check_token<T, F>(
    ctx: &HttpContext,
    parts: &Parts,
    principal: &str,
    check: F,
) -> Result<T, OAuthError>
where
    F: AsyncFnOnce(&Mutex<Option<T>>) -> ProofCheck,
{
    let found: Mutex<Option<T>> = Mutex::new(None);
    let attempt = Attempt {
        kind: PrincipalKind::Client,
        principal: principal.to_owned(),
        secret: Zeroizing::default(),
        source: source_of(ctx, parts),
        protocol: Protocol::OAuthRegistration,
        deadline: Instant::now() + ctx.config.request_timeout,
        station: None,
        context: AuditContext {
            request_id: request_id_of(parts),
            client_id: None,
            eap: None,
        },
    };
    let outcome = ctx.verifier.verify_proof(attempt, check(&found)).await;
    match outcome {
        Outcome::Accepted { .. } => found
            .into_inner()
            .ok_or_else(|| OAuthError::invalid_token("the token is not valid")),
        Outcome::Rejected => Err(OAuthError::invalid_token(
            "the token is unknown, expired or used up",
        )),
        Outcome::Throttled { retry_after } => Err(OAuthError::throttled(retry_after)),
        Outcome::Overloaded { retry_after } => Err(OAuthError::overloaded(retry_after)),
        Outcome::Unavailable { retry_after } => Err(OAuthError::unavailable(retry_after)),
    }
}

/// `POST /oauth2/register`
pub async fn register(State(ctx): State<Arc<HttpContext>>, req: Request) -> Response {
    finish("register", register_inner(&ctx, req).await)
}

async fn register_inner(ctx: &HttpContext, req: Request) -> Result<Response, OAuthError> {
    let (parts, body) = req.into_parts();
    let token = bearer(&parts)?;
    let Some((token_id, secret)) = reg::split_token(&token) else {
        return Err(OAuthError::invalid_token("not an initial access token"));
    };
    let now = unix_now();
    let iat: InitialAccessToken = check_token(ctx, &parts, token_id, async |slot: &Mutex<_>| {
        match ctx.registrations.get_initial_access_token(token_id).await {
            Err(_) => ProofCheck::Unavailable("store_unavailable"),
            Ok(None) => ProofCheck::Invalid(portcullis_oauth::client_auth::UNKNOWN),
            Ok(Some(t)) if !reg::token_matches(secret, &t.secret_hash) => {
                ProofCheck::Invalid("wrong_token")
            }
            Ok(Some(t)) if now >= t.expires_at => ProofCheck::Invalid("token_expired"),
            Ok(Some(t)) if t.uses >= t.max_uses => ProofCheck::Invalid("token_used_up"),
            Ok(Some(t)) => {
                *slot.lock() = Some(t);
                ProofCheck::Valid
            }
        }
    })
    .await?;
    let request = read_json(ctx, body, &parts).await?;
    let cfg = &ctx.config.registration;
    let policy = Allowance {
        grants: cfg.grants.clone(),
        auth_methods: cfg.auth_methods.clone(),
        scopes: iat.scopes.clone(),
    };
    let allow = reg::narrow(
        &policy,
        &Allowance {
            grants: iat.grants.clone(),
            auth_methods: iat.auth_methods.clone(),
            scopes: iat.scopes.clone(),
        },
    );
    let accepted = decide(ctx, request, &allow, now)?;
    let client_id = new_id("dcr-", 16)?;
    let (auth, secret_hashes, client_secret) = match &accepted.auth {
        Some(keyed) => (keyed.clone(), Vec::new(), None),
        None => {
            let secret = portcullis_store::generate_client_secret()
                .map_err(|e| store_failed("generating a client secret", &e))?;
            let peppers = ctx.verifier.peppers();
            let key = peppers
                .current()
                .ok_or_else(|| store_failed("hashing a client secret", &"no current pepper key"))?;
            let hash = PepperedHmac::create(key, secret.as_bytes());
            (ClientAuth::Secret, vec![hash], Some(secret))
        }
    };
    let access_token = generate_token_secret()
        .map_err(|e| store_failed("generating a registration access token", &e))?;
    let client = ClientRecord {
        id: client_id.clone(),
        auth,
        secret_hashes,
        grants: accepted.grants.clone(),
        scopes: accepted.scopes.clone(),
        token_lifetime: u32::try_from(cfg.token_lifetime.as_secs()).unwrap_or(3600),
        created_at: now,
    };
    let metadata_text = Value::Object(accepted.metadata.clone()).to_string();
    let registration = ClientRegistration {
        client_id: client_id.clone(),
        access_token_hash: hash_token(&access_token),
        metadata: metadata_text,
        initial_token: Some(iat.id.clone()),
        created_at: now,
        updated_at: now,
    };
    match ctx
        .registrations
        .register_client(&client, &registration, now)
        .await
    {
        Ok(()) => {}
        // Its last use went to a concurrent registration, or it expired meanwhile.
        Err(StoreError::NotFound(_)) => {
            return Err(OAuthError::invalid_token(
                "the initial access token is used up or expired",
            ));
        }
        Err(StoreError::Invalid(why)) => {
            return Err(OAuthError::registration(
                ErrorCode::InvalidClientMetadata,
                why,
            ));
        }
        Err(e) => return Err(store_failed("registering a client", &e)),
    }
    ctx.audit.registration(
        "registered",
        &client_id,
        Some(&iat.id),
        source_of(ctx, &parts),
        &request_id_of(&parts),
    );
    let mut body = accepted.metadata;
    info_members(ctx, &mut body, &client_id, now);
    body.insert(
        "registration_access_token".into(),
        Value::String(access_token.to_string()),
    );
    if let Some(secret) = &client_secret {
        body.insert("client_secret".into(), Value::String(secret.to_string()));
        body.insert("client_secret_expires_at".into(), Value::from(0));
    }
    Ok(json(StatusCode::CREATED, &body))
}

/// Verify a statement if present, enforce `require_software_statement`, then the rules.
fn decide(
    ctx: &HttpContext,
    request: Map<String, Value>,
    allow: &Allowance,
    now: i64,
) -> Result<reg::Accepted, OAuthError> {
    let cfg = &ctx.config.registration;
    let skew = i64::try_from(ctx.oauth.client_auth.clock_skew.as_secs()).unwrap_or(60);
    let (merged, with_statement) =
        reg::apply_statement(request, &cfg.issuers, now, skew).map_err(refused)?;
    if cfg.require_software_statement && !with_statement {
        return Err(OAuthError::registration(
            ErrorCode::InvalidSoftwareStatement,
            "a software statement from a trusted issuer is required",
        ));
    }
    reg::decide(&merged, allow).map_err(refused)
}

/// `client_id`, `client_id_issued_at` and `registration_client_uri` (RFC 7591 3.2.1,
/// RFC 7592 3).
fn info_members(ctx: &HttpContext, body: &mut Map<String, Value>, client_id: &str, issued: i64) {
    body.insert("client_id".into(), Value::String(client_id.to_owned()));
    body.insert("client_id_issued_at".into(), Value::from(issued));
    body.insert(
        "registration_client_uri".into(),
        Value::String(format!("{}/oauth2/register/{client_id}", ctx.oauth.issuer)),
    );
}

fn new_id(prefix: &str, bytes: usize) -> Result<String, OAuthError> {
    let mut raw = vec![0u8; bytes];
    portcullis_hash::os_random(&mut raw).map_err(|e| store_failed("generating a client id", &e))?;
    Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(raw)))
}

fn json(status: StatusCode, body: &Map<String, Value>) -> Response {
    let mut resp = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Value::Object(body.clone()).to_string(),
    )
        .into_response();
    no_store(&mut resp);
    resp
}

/// `GET`, `PUT`, `DELETE /oauth2/register/{client_id}` (RFC 7592).
pub async fn configuration(
    State(ctx): State<Arc<HttpContext>>,
    Path(client_id): Path<String>,
    req: Request,
) -> Response {
    let op = match *req.method() {
        Method::GET => "read",
        Method::PUT => "update",
        Method::DELETE => "delete",
        _ => {
            let mut r = OAuthError::invalid_request("use GET, PUT or DELETE").into_response();
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, PUT, DELETE"));
            return r;
        }
    };
    finish(op, configuration_inner(&ctx, &client_id, req).await)
}

async fn configuration_inner(
    ctx: &HttpContext,
    client_id: &str,
    req: Request,
) -> Result<Response, OAuthError> {
    let (parts, body) = req.into_parts();
    let token = bearer(&parts)?;
    if portcullis_store::record::validate_name("client id", client_id).is_err() {
        return Err(OAuthError::invalid_token("the token is not valid"));
    }
    let registration: ClientRegistration =
        check_token(ctx, &parts, client_id, async |slot: &Mutex<_>| {
            match ctx.registrations.get_client_registration(client_id).await {
                Err(_) => ProofCheck::Unavailable("store_unavailable"),
                Ok(None) => ProofCheck::Invalid(portcullis_oauth::client_auth::UNKNOWN),
                Ok(Some(r)) if !reg::token_matches(&token, &r.access_token_hash) => {
                    ProofCheck::Invalid("wrong_token")
                }
                Ok(Some(r)) => {
                    *slot.lock() = Some(r);
                    ProofCheck::Valid
                }
            }
        })
        .await?;
    let source = source_of(ctx, &parts);
    let request_id = request_id_of(&parts);
    let stored = ctx
        .client_records
        .get_client(client_id)
        .await
        .map_err(|e| store_failed("loading a client", &e))?
        // Removed between the check and now.
        .ok_or_else(|| OAuthError::invalid_token("the token is not valid"))?;
    // Only made (and hashed) here; a delete retires the token with the client.
    let next_token = || {
        generate_token_secret()
            .map_err(|e| store_failed("generating a registration access token", &e))
    };
    let rotated = |what: &'static str| {
        OAuthError::invalid_token(format!(
            "the registration access token was used by a concurrent {what}; use the token \
             that request returned"
        ))
    };
    match parts.method {
        Method::GET => {
            let mut body = stored_metadata(&registration)?;
            let next = next_token()?;
            let next_hash = hash_token(&next);
            let swapped = ctx
                .registrations
                .rotate_registration_token(
                    client_id,
                    &TokenRotation {
                        old_hash: &registration.access_token_hash,
                        new_hash: &next_hash,
                    },
                )
                .await
                .map_err(|e| store_failed("rotating a registration access token", &e))?;
            if !swapped {
                return Err(rotated("request"));
            }
            info_members(ctx, &mut body, client_id, registration.created_at);
            body.insert(
                "registration_access_token".into(),
                Value::String(next.to_string()),
            );
            ctx.audit
                .registration("read", client_id, None, source, &request_id);
            Ok(json(StatusCode::OK, &body))
        }
        Method::DELETE => {
            ctx.client_records
                .remove_client(client_id)
                .await
                .map_err(|e| store_failed("removing a client", &e))?;
            ctx.oauth.clients.invalidate(client_id);
            ctx.audit
                .registration("deleted", client_id, None, source, &request_id);
            let mut r = (StatusCode::NO_CONTENT, Body::empty()).into_response();
            no_store(&mut r);
            Ok(r)
        }
        _ => {
            let request = read_json(ctx, body, &parts).await?;
            if request.get("client_id").and_then(Value::as_str) != Some(client_id) {
                return Err(OAuthError::registration(
                    ErrorCode::InvalidClientMetadata,
                    "client_id must be sent and equal the client being updated",
                ));
            }
            check_sent_secret(ctx, &request, &stored)?;
            let allow = update_allowance(ctx, &registration, &stored).await?;
            let accepted = decide(ctx, request, &allow, unix_now())?;
            // New key material is fine (a key rotation); another kind of method is not.
            let auth = match (&stored.auth, &accepted.auth) {
                (ClientAuth::Secret, None) => ClientAuth::Secret,
                (old, Some(new)) if old.method() == new.method() => new.clone(),
                _ => {
                    return Err(OAuthError::registration(
                        ErrorCode::InvalidClientMetadata,
                        "token_endpoint_auth_method cannot change to another kind of method",
                    ));
                }
            };
            let client = ClientRecord {
                auth,
                grants: accepted.grants.clone(),
                scopes: accepted.scopes.clone(),
                ..stored
            };
            let metadata = Value::Object(accepted.metadata.clone()).to_string();
            let next = next_token()?;
            let next_hash = hash_token(&next);
            let rotation = TokenRotation {
                old_hash: &registration.access_token_hash,
                new_hash: &next_hash,
            };
            match ctx
                .registrations
                .update_registered_client(&client, &metadata, &rotation, unix_now())
                .await
            {
                Ok(()) => {}
                Err(StoreError::Invalid(why)) => {
                    return Err(OAuthError::registration(
                        ErrorCode::InvalidClientMetadata,
                        why,
                    ));
                }
                // Removed, or its token rotated by a concurrent read or update.
                Err(StoreError::NotFound(_)) => return Err(rotated("request or deletion")),
                Err(e) => return Err(store_failed("updating a client", &e)),
            }
            ctx.oauth.clients.invalidate(client_id);
            ctx.audit
                .registration("updated", client_id, None, source, &request_id);
            let mut body = accepted.metadata;
            info_members(ctx, &mut body, client_id, registration.created_at);
            body.insert(
                "registration_access_token".into(),
                Value::String(next.to_string()),
            );
            Ok(json(StatusCode::OK, &body))
        }
    }
}

/// RFC 7592 2.2: a `client_secret` sent with an update must be the client's current
/// secret (it can never set one). Registered secrets are peppered HMACs, checked inline
/// in constant time; a stored hash of any other kind (a KDF an operator set) is not run
/// here, on the runtime (invariant 1), and such an update must leave the member out.
fn check_sent_secret(
    ctx: &HttpContext,
    request: &Map<String, Value>,
    stored: &ClientRecord,
) -> Result<(), OAuthError> {
    let Some(sent) = request.get("client_secret") else {
        return Ok(());
    };
    let refused = |why: &'static str| {
        Err(OAuthError::registration(
            ErrorCode::InvalidClientMetadata,
            why,
        ))
    };
    let Some(sent) = sent.as_str() else {
        return refused("client_secret must be a string");
    };
    let peppers = ctx.verifier.peppers();
    let mut matched = false;
    for h in &stored.secret_hashes {
        match portcullis_hash::Credential::parse(h) {
            Ok(portcullis_hash::Credential::Peppered(p)) => {
                matched |= p.verify(sent.as_bytes(), &peppers).unwrap_or(false);
            }
            _ => return refused("leave client_secret out of updates of this client"),
        }
    }
    if matched {
        Ok(())
    } else {
        refused("client_secret is not this client's secret (it cannot be changed here)")
    }
}

fn stored_metadata(r: &ClientRegistration) -> Result<Map<String, Value>, OAuthError> {
    match serde_json::from_str::<Value>(&r.metadata) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(store_failed(
            "reading a client's registered metadata",
            &"not a JSON object",
        )),
    }
}

/// What an RFC 7592 update may ask for: `[registration]` narrowed by the initial access
/// token the client was registered with; if that token is gone, by what the client has
/// now (an update can then only narrow).
async fn update_allowance(
    ctx: &HttpContext,
    registration: &ClientRegistration,
    stored: &ClientRecord,
) -> Result<Allowance, OAuthError> {
    let cfg = &ctx.config.registration;
    let policy = Allowance {
        grants: cfg.grants.clone(),
        auth_methods: cfg.auth_methods.clone(),
        scopes: stored.scopes.clone(),
    };
    let token = match &registration.initial_token {
        Some(id) => ctx
            .registrations
            .get_initial_access_token(id)
            .await
            .map_err(|e| store_failed("loading an initial access token", &e))?,
        None => None,
    };
    Ok(match token {
        Some(t) => reg::narrow(
            &Allowance {
                scopes: t.scopes.clone(),
                ..policy
            },
            &Allowance {
                grants: t.grants,
                auth_methods: t.auth_methods,
                scopes: t.scopes,
            },
        ),
        None => reg::narrow(
            &policy,
            &Allowance {
                grants: stored.grants.clone(),
                auth_methods: cfg.auth_methods.clone(),
                scopes: stored.scopes.clone(),
            },
        ),
    })
}
