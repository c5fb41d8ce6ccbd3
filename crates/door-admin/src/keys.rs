//! `/admin/v1/signing-keys` and `/admin/v1/revocations`: the token signing keys (public
//! facts only; rotation on request) and the revocation list (by page; revoke a token
//! given whole, or by its `jti` and expiry when only the id is known).

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AdminContext;
use crate::action::{Trail, bad_query, finish};
use crate::auth::Caller;
use crate::conventions::{
    PageQuery, Reply, check_if_match, digest, etag, next_key, page_reply, parse_json,
};
use crate::problem::Problem;
use crate::resource::created;
use crate::responses::{ReadErrors, WriteErrors};

/// A signing key (never its private half).
#[derive(Debug, Serialize, ToSchema)]
pub struct SigningKey {
    /// Key id (`kid`).
    pub kid: String,
    /// JOSE algorithm.
    pub alg: String,
    /// When it starts (or started) signing, unix seconds.
    pub created_at: i64,
    /// Published until then, unix seconds.
    pub not_after: i64,
    /// When it stopped signing new tokens.
    pub retired_at: Option<i64>,
    /// It signs the tokens issued now (on this instance).
    pub signing: bool,
}

/// Every signing key, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SigningKeys {
    /// The keys.
    pub items: Vec<SigningKey>,
    /// Always absent: the key set fits one page.
    pub next: Option<String>,
}

/// One revoked token.
#[derive(Debug, Serialize, ToSchema)]
pub struct Revocation {
    /// The token's `jti`.
    pub jti: String,
    /// Kept until the token would have expired, unix seconds.
    pub expires_at: i64,
}

/// A page of revocations.
#[derive(Debug, Serialize, ToSchema)]
pub struct RevocationPage {
    /// The revocations, by jti.
    pub items: Vec<Revocation>,
    /// The jti to continue after, when there may be more.
    pub next: Option<String>,
}

/// What to revoke: a whole token of this server, or a `jti` with its expiry.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRevocation {
    /// An access token issued by this server.
    pub token: Option<String>,
    /// A token id (with `expires_at`).
    pub jti: Option<String>,
    /// The token's expiry, unix seconds (with `jti`).
    pub expires_at: Option<i64>,
}

async fn key_set(ctx: &AdminContext) -> Result<(Vec<SigningKey>, String), Problem> {
    let records = ctx
        .store
        .list_signing_keys()
        .await
        .map_err(|e| Problem::store("listing signing keys", &e))?;
    let current = ctx.oauth.keys.keys().current.kid().to_owned();
    let mut f = Vec::new();
    let items = records
        .into_iter()
        .map(|r| {
            f.extend_from_slice(
                format!(
                    "{}\0{}\0{}\0{:?}\0",
                    r.kid, r.created_at, r.not_after, r.retired_at
                )
                .as_bytes(),
            );
            SigningKey {
                signing: r.kid == current,
                kid: r.kid,
                alg: r.alg,
                created_at: r.created_at,
                not_after: r.not_after,
                retired_at: r.retired_at,
            }
        })
        .collect();
    f.extend_from_slice(current.as_bytes());
    Ok((items, etag(0, &f)))
}

/// The signing keys (the list's `ETag` is the one `rotate` needs).
#[utoipa::path(get, operation_id = "list_keys", path = "/admin/v1/signing-keys", tag = "signing-keys",
    responses((status = 200, body = SigningKeys, description = "The keys; `ETag` of the key set"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list_keys(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let r = async {
        let (items, tag) = key_set(&ctx).await?;
        Ok(Reply::ok(&SigningKeys { items, next: None })?.etag(tag))
    }
    .await;
    finish(
        &ctx,
        &caller,
        "signing_key.list",
        "signing-keys".into(),
        Trail::default(),
        r,
    )
}

/// Rotate now: a new key signs from now on; the previous one is retired but stays
/// published until its tokens expire (If-Match: the key set's ETag).
#[utoipa::path(post, operation_id = "rotate_keys", path = "/admin/v1/signing-keys/rotate", tag = "signing-keys",
    params(("If-Match" = String, Header, description = "The ETag of the key set")),
    responses((status = 200, body = SigningKeys, description = "Rotated; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn rotate_keys(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Response {
    let mut trail = Trail::default();
    let r = async {
        let (_, before) = key_set(&ctx).await?;
        trail.before = Some(digest(before.as_bytes()));
        check_if_match(&headers, &before, "the signing key set")?;
        ctx.oauth
            .keys
            .rotate_now(portcullis_door::unix_now())
            .await
            .map_err(|e| Problem::store("rotating the signing key", &e))?;
        let (items, after) = key_set(&ctx).await?;
        trail.after = Some(digest(after.as_bytes()));
        Ok(Reply::ok(&SigningKeys { items, next: None })?.etag(after))
    }
    .await;
    finish(
        &ctx,
        &caller,
        "signing_key.rotate",
        "signing-keys".into(),
        trail,
        r,
    )
}

/// Revoked tokens by page.
#[utoipa::path(get, operation_id = "list_revocations", path = "/admin/v1/revocations", tag = "revocations", params(PageQuery),
    responses((status = 200, body = RevocationPage, description = "A page of revocations; `Link: rel=\"next\"` when there may be more"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list_revocations(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    let r = async {
        let Query(q) = q.map_err(|e| bad_query(&e))?;
        let size = q.size(&ctx)?;
        let mut items = ctx
            .store
            .revocations_after(q.after()?, size + 1)
            .await
            .map_err(|e| Problem::from_store(e, "query:limit", "listing revocations"))?;
        let next = next_key(&mut items, size, |(jti, _)| jti.clone());
        page_reply(
            "/admin/v1/revocations",
            size,
            items
                .into_iter()
                .map(|(jti, expires_at)| Revocation { jti, expires_at })
                .collect::<Vec<_>>(),
            next,
        )
    }
    .await;
    finish(
        &ctx,
        &caller,
        "revocation.list",
        "revocations".into(),
        Trail::default(),
        r,
    )
}

/// Revoke a token (given whole, or by jti and expiry). Revoking again is harmless.
#[utoipa::path(post, operation_id = "revoke", path = "/admin/v1/revocations", tag = "revocations", request_body = NewRevocation,
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat the request with the same key to get the same answer")),
    responses((status = 201, body = Revocation, description = "Revoked"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn revoke(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    created(
        &ctx,
        &caller,
        "revocation.create",
        ("revocations", "/admin/v1/revocations"),
        &headers,
        body,
        async |bytes, trail, resource| {
            let n: NewRevocation = parse_json(bytes)?;
            let now = portcullis_door::unix_now();
            let (jti, expires_at) = match (n.token, n.jti, n.expires_at) {
                (Some(t), None, None) => {
                    let nowu = u64::try_from(now).unwrap_or(0);
                    let c = ctx
                        .oauth
                        .keys
                        .keys()
                        .verify(&t, &ctx.oauth.issuer, nowu)
                        .map_err(|_| {
                            Problem::field("/token", "not an unexpired access token of this server")
                        })?;
                    (c.jti, i64::try_from(c.exp).unwrap_or(i64::MAX))
                }
                (None, Some(jti), Some(exp)) => {
                    portcullis_store::record::validate_name("token id", &jti)
                        .map_err(|e| Problem::field("/jti", e.to_string()))?;
                    let longest =
                        i64::try_from(ctx.oauth.token_lifetime.as_secs()).unwrap_or(86_400);
                    if exp <= now || exp > now + longest {
                        return Err(Problem::field(
                            "/expires_at",
                            format!(
                                "must be in the future and at most {longest} s away \
                                 (no token of ours lives longer)"
                            ),
                        ));
                    }
                    (jti, exp)
                }
                (None, Some(_), None) => {
                    return Err(Problem::field("/expires_at", "required with jti"));
                }
                (None, None, Some(_)) => {
                    return Err(Problem::field("/jti", "required with expires_at"));
                }
                (Some(_), _, _) => {
                    return Err(Problem::field(
                        "/token",
                        "give token alone, or jti and expires_at",
                    ));
                }
                (None, None, None) => {
                    return Err(Problem::field(
                        "/token",
                        "give token, or jti and expires_at",
                    ));
                }
            };
            *resource = format!("revocations/{jti}");
            ctx.store
                .revoke_token(&jti, expires_at)
                .await
                .map_err(|e| Problem::from_store(e, "/jti", "revoking a token"))?;
            trail.after = Some(digest(format!("{jti}\0{expires_at}").as_bytes()));
            Reply::json(StatusCode::CREATED, &Revocation { jti, expires_at })
        },
    )
    .await
}
