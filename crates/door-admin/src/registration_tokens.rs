//! `/admin/v1/registration-tokens`: RFC 7591 initial access tokens, as `portcullis
//! registration token create | list | revoke` manages them: who may register clients
//! dynamically, how often, until when, and what those clients may be given (scopes,
//! grants, auth methods). The token (`<id>.<secret>`) is in the creation answer only; the
//! store keeps the SHA-256 of the secret, and lists show ids, uses and limits.
//!
//! Tokens are not versioned records: a token's ETag digests everything it holds, its
//! use count included, so a revocation sent with the ETag of a token that has been used
//! since is 412 (read it again). Revoking leaves the clients it registered in place.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portcullis_store::registration::{
    DEFAULT_REGISTRATION_AUTH_METHODS, MAX_DESCRIPTION_CHARS, MAX_USES, generate_token_id,
    generate_token_secret, hash_token, validate_auth_methods,
};
use portcullis_store::{Grant, InitialAccessToken};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AdminContext;
use crate::action::{Trail, bad_query, finish};
use crate::auth::Caller;
use crate::conventions::{
    PageQuery, Reply, check_if_match, digest, etag, next_key, page_reply, parse_json, path_encode,
};
use crate::problem::Problem;
use crate::resource::{created, keyed_at};
use crate::responses::{ReadErrors, WriteErrors};

const PATH: &str = "/admin/v1/registration-tokens";
/// Lifetime of a token made without `expires_in` (the CLI's default).
const DEFAULT_LIFETIME_SECS: u32 = 86_400;

/// An initial access token as the API shows it (never its secret or hash).
#[derive(Debug, Serialize, ToSchema)]
pub struct RegistrationToken {
    /// Its public id: the part of the token before the dot (stable: the resource's key).
    pub id: String,
    /// The operator's note: who it is for.
    pub description: String,
    /// Creation time, unix seconds.
    pub created_at: i64,
    /// No registration at or after this instant (unix seconds).
    pub expires_at: i64,
    /// Registrations it allows in all.
    pub max_uses: u32,
    /// Registrations made with it so far.
    pub uses: u32,
    /// Whether a registration may still be made with it now.
    pub usable: bool,
    /// Scopes the clients it registers may be given.
    pub scopes: Vec<String>,
    /// Grant types they may use.
    pub grants: Vec<String>,
    /// `token_endpoint_auth_method`s they may use.
    pub auth_methods: Vec<String>,
}

/// A new initial access token (every field optional: the CLI's defaults).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRegistrationToken {
    /// Who it is for (at most 200 characters).
    #[schema(max_length = 200)]
    pub description: Option<String>,
    /// Seconds it can be used (default 86400).
    #[schema(minimum = 1)]
    pub expires_in: Option<u32>,
    /// How many clients it may register (default 1).
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub uses: Option<u32>,
    /// Scopes its clients may be given (default none).
    pub scopes: Option<Vec<String>>,
    /// Grant types its clients may use (default `["client_credentials"]`).
    pub grants: Option<Vec<String>>,
    /// `token_endpoint_auth_method`s its clients may use (default
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt`; also
    /// `tls_client_auth`, `self_signed_tls_client_auth`).
    pub auth_methods: Option<Vec<String>>,
}

/// A token just made, with its secret: shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RegistrationTokenWithSecret {
    /// The token's record.
    pub token: RegistrationToken,
    /// The bearer token for `POST /oauth2/register`: `<id>.<secret>`. Never shown again.
    pub initial_access_token: String,
}

/// A page of initial access tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct RegistrationTokenPage {
    /// The tokens, by id.
    pub items: Vec<RegistrationToken>,
    /// The id to continue after, when there may be more.
    pub next: Option<String>,
}

fn view(t: &InitialAccessToken, now: i64) -> RegistrationToken {
    RegistrationToken {
        id: t.id.clone(),
        description: t.description.clone(),
        created_at: t.created_at,
        expires_at: t.expires_at,
        max_uses: t.max_uses,
        uses: t.uses,
        usable: t.usable(now),
        scopes: t.scopes.clone(),
        grants: t.grants.iter().map(|g| g.as_str().to_owned()).collect(),
        auth_methods: t.auth_methods.clone(),
    }
}

/// Everything the token holds (its secret's hash included, never the secret).
fn fingerprint(t: &InitialAccessToken) -> Vec<u8> {
    format!(
        "{}\0{}\0{}\0{}\0{}\0{}\0{}\0{}\0{}\0{}",
        t.id,
        t.secret_hash,
        t.description,
        t.created_at,
        t.expires_at,
        t.max_uses,
        t.uses,
        t.scopes.join(" "),
        t.grants
            .iter()
            .map(|g| g.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        t.auth_methods.join(" ")
    )
    .into_bytes()
}

fn tag(t: &InitialAccessToken) -> String {
    etag(0, &fingerprint(t))
}

async fn load(ctx: &AdminContext, id: &str) -> Result<InitialAccessToken, Problem> {
    match ctx.store.get_initial_access_token(id).await {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(Problem::not_found(format!("initial access token {id:?}"))),
        Err(e) => Err(Problem::store("reading an initial access token", &e)),
    }
}

/// The record a creation request describes (each wrong field named), and its secret.
pub fn token_of(
    n: NewRegistrationToken,
    now: i64,
) -> Result<(InitialAccessToken, zeroize::Zeroizing<String>), Problem> {
    let description = n.description.unwrap_or_default();
    if description.chars().count() > MAX_DESCRIPTION_CHARS
        || description.chars().any(char::is_control)
    {
        return Err(Problem::field(
            "/description",
            format!("at most {MAX_DESCRIPTION_CHARS} characters, no control characters"),
        ));
    }
    let lifetime = n.expires_in.unwrap_or(DEFAULT_LIFETIME_SECS);
    if lifetime == 0 {
        return Err(Problem::field("/expires_in", "must be at least 1 second"));
    }
    let max_uses = n.uses.unwrap_or(1);
    if !(1..=MAX_USES).contains(&max_uses) {
        return Err(Problem::field("/uses", format!("must be 1-{MAX_USES}")));
    }
    let scopes = n.scopes.unwrap_or_default();
    portcullis_store::record::validate_scopes(&scopes)
        .map_err(|e| Problem::field("/scopes", e.to_string()))?;
    let grants = match n.grants {
        None => vec![Grant::ClientCredentials],
        Some(g) if g.is_empty() => {
            return Err(Problem::field("/grants", "allow at least one grant type"));
        }
        Some(g) => g
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.parse::<Grant>()
                    .map_err(|e| Problem::field(format!("/grants/{i}"), e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let auth_methods = n.auth_methods.unwrap_or_else(|| {
        DEFAULT_REGISTRATION_AUTH_METHODS
            .map(str::to_owned)
            .to_vec()
    });
    validate_auth_methods(&auth_methods)
        .map_err(|e| Problem::field("/auth_methods", e.to_string()))?;
    let secret = generate_token_secret()
        .map_err(|e| Problem::store("generating an initial access token", &e))?;
    let token = InitialAccessToken {
        id: generate_token_id()
            .map_err(|e| Problem::store("generating an initial access token", &e))?,
        secret_hash: hash_token(&secret),
        description,
        created_at: now,
        expires_at: now.saturating_add(i64::from(lifetime)),
        max_uses,
        uses: 0,
        scopes,
        grants,
        auth_methods,
    };
    // The checks above name the field; this is the store's own, for anything left.
    token
        .validate()
        .map_err(|e| Problem::from_store(e, "", "checking an initial access token"))?;
    Ok((token, secret))
}

/// List initial access tokens by page (never their secrets).
#[utoipa::path(get, operation_id = "list_registration_tokens", path = "/admin/v1/registration-tokens", tag = "registration-tokens", params(PageQuery),
    responses((status = 200, body = RegistrationTokenPage, description = "A page of tokens; `Link: rel=\"next\"` when there may be more"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    let r = async {
        let Query(q) = q.map_err(|e| bad_query(&e))?;
        let size = q.size(&ctx)?;
        let after = q.after()?;
        // Tokens are few (an operator makes them by hand or per partner): the store
        // lists them whole and the page is cut here, by id like every admin list.
        let mut all = ctx
            .store
            .list_initial_access_tokens()
            .await
            .map_err(|e| Problem::store("listing initial access tokens", &e))?;
        all.sort_by(|a, b| a.id.cmp(&b.id));
        let mut items: Vec<InitialAccessToken> = all
            .into_iter()
            .filter(|t| after.is_none_or(|a| t.id.as_str() > a))
            .take(size as usize + 1)
            .collect();
        let next = next_key(&mut items, size, |t| t.id.clone());
        let now = portcullis_door::unix_now();
        page_reply(
            PATH,
            size,
            items.iter().map(|t| view(t, now)).collect::<Vec<_>>(),
            next,
        )
    }
    .await;
    finish(
        &ctx,
        &caller,
        "registration_token.list",
        "registration-tokens".into(),
        Trail::default(),
        r,
    )
}

/// Make an initial access token; the token itself is in the answer, once.
#[utoipa::path(post, operation_id = "create_registration_token", path = "/admin/v1/registration-tokens", tag = "registration-tokens", request_body = NewRegistrationToken,
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat the request with the same key to get the same answer")),
    responses((status = 201, body = RegistrationTokenWithSecret, description = "Created; `ETag` and `Location` headers"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn create(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    created(
        &ctx,
        &caller,
        "registration_token.create",
        ("registration-tokens", PATH),
        &headers,
        body,
        async |bytes, trail, resource| {
            let n: NewRegistrationToken = parse_json(bytes)?;
            let now = portcullis_door::unix_now();
            let (token, secret) = token_of(n, now)?;
            *resource = format!("registration-tokens/{}", token.id);
            ctx.store
                .put_initial_access_token(&token)
                .await
                .map_err(|e| Problem::from_store(e, "", "storing an initial access token"))?;
            trail.after = Some(digest(&fingerprint(&token)));
            Ok(Reply::json(
                StatusCode::CREATED,
                &RegistrationTokenWithSecret {
                    token: view(&token, now),
                    initial_access_token: format!("{}.{}", token.id, secret.as_str()),
                },
            )?
            .etag(tag(&token))
            .location(format!("{PATH}/{}", path_encode(&token.id))))
        },
    )
    .await
}

/// Read one initial access token (never its secret).
#[utoipa::path(get, operation_id = "get_registration_token", path = "/admin/v1/registration-tokens/{id}", tag = "registration-tokens",
    params(("id" = String, Path, description = "The token's id (the part before the dot)")),
    responses((status = 200, body = RegistrationToken, description = "The token; `ETag` header"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn get(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let at = ("registration-tokens", "id");
    keyed_at(
        &ctx,
        &caller,
        "registration_token.get",
        at,
        id,
        async |id, _| {
            let t = load(&ctx, id).await?;
            Ok(Reply::ok(&view(&t, portcullis_door::unix_now()))?.etag(tag(&t)))
        },
    )
    .await
}

/// Revoke an initial access token (If-Match required): no registration is made with it
/// from now on; the clients it registered stay.
#[utoipa::path(delete, operation_id = "revoke_registration_token", path = "/admin/v1/registration-tokens/{id}", tag = "registration-tokens",
    params(("id" = String, Path, description = "The token's id"), ("If-Match" = String, Header, description = "The ETag of the token as last read")),
    responses((status = 204, description = "Revoked"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn revoke(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let at = ("registration-tokens", "id");
    keyed_at(
        &ctx,
        &caller,
        "registration_token.revoke",
        at,
        id,
        async |id, trail| {
            let t = load(&ctx, id).await?;
            trail.before = Some(digest(&fingerprint(&t)));
            check_if_match(&headers, &tag(&t), &format!("initial access token {id:?}"))?;
            let removed = ctx
                .store
                .remove_initial_access_token(id)
                .await
                .map_err(|e| Problem::store("revoking an initial access token", &e))?;
            if !removed {
                return Err(Problem::not_found(format!("initial access token {id:?}")));
            }
            Ok(Reply::no_content())
        },
    )
    .await
}
