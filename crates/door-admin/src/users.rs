//! `/admin/v1/users`: resource owners. A user is made with a password (hashed under the
//! policy on the hash pool's background queue, never on the runtime) or with a hash
//! imported from another system (any format the hash crate reads, checked exactly as
//! `portcullis user import` checks a line); it is disabled, enabled, given a new
//! password or new directory attributes (issue 39), or removed, by compare-and-set on
//! its version. Removing a user ends its group memberships.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portcullis_hash::Credential;
use portcullis_store::{Resource, StoreError, UserAttributes, UserRecord, Versioned};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use zeroize::Zeroizing;

use crate::AdminContext;
use crate::auth::Caller;
use crate::conventions::{PageQuery, Reply, json_body, parse_json, path_encode};
use crate::directory::Attributes;
use crate::problem::Problem;
use crate::resource::{self as res, Kind, created, guarded, keyed, shown, written};
use crate::responses::{ReadErrors, WriteErrors};

/// Longest password accepted, in bytes (as the token endpoint).
const MAX_PASSWORD_LEN: usize = 1024;

/// A user as the API shows it (never its hash).
#[derive(Debug, Serialize, ToSchema)]
pub struct User {
    /// The username (stable: the resource's key).
    pub username: String,
    /// A disabled user is refused like an unknown one.
    pub disabled: bool,
    /// The stored hash's algorithm (e.g. `argon2id`, `pbkdf2-sha256`); rehash-on-login
    /// moves it to the policy's.
    pub hash_algorithm: String,
    /// Creation time, unix seconds.
    pub created_at: i64,
    /// `entryUUID`: generated at creation, never changed.
    pub entry_uuid: String,
    /// Directory attributes as given (an absent `cn` is shown as the username).
    pub attributes: Attributes,
}

/// A new user: exactly one of `password` and `password_hash`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// The username.
    #[schema(min_length = 1, max_length = 255)]
    pub username: String,
    /// A password, hashed under the server's policy (1-1024 bytes).
    #[schema(min_length = 1, max_length = 256)]
    pub password: Option<String>,
    /// A hash from another system (PHC, bcrypt, Django, passlib, ASP.NET Identity,
    /// FreeRADIUS, Werkzeug, Keycloak credential, LDAP salted SHA).
    pub password_hash: Option<String>,
    /// With `password_hash`: read it as this format only (e.g. `django`).
    pub hash_format: Option<String>,
    /// Default false.
    pub disabled: Option<bool>,
    /// Directory attributes (default none).
    pub attributes: Option<Attributes>,
}

/// A change (fields not given are kept): disable, enable, new password or hash.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserChange {
    /// Disable (`true`) or enable (`false`).
    pub disabled: Option<bool>,
    /// A new password, hashed under the policy (1-1024 bytes).
    #[schema(min_length = 1, max_length = 256)]
    pub password: Option<String>,
    /// A new hash from another system.
    pub password_hash: Option<String>,
    /// With `password_hash`: its format.
    pub hash_format: Option<String>,
    /// New directory attributes: replace all of them (an attribute not given is
    /// cleared; `{}` clears all).
    pub attributes: Option<Attributes>,
}

/// A page of users.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserPage {
    /// The users, by username.
    pub items: Vec<User>,
    /// The username to continue after, when there may be more.
    pub next: Option<String>,
}

fn view(u: &UserRecord) -> User {
    User {
        username: u.username.clone(),
        disabled: u.disabled,
        hash_algorithm: Credential::parse(&u.password_hash)
            .map_or("unrecognised", |c| c.algorithm())
            .to_owned(),
        created_at: u.created_at,
        entry_uuid: u.entry_uuid.to_string(),
        attributes: Attributes::from_store(&u.attributes),
    }
}

fn fingerprint(u: &UserRecord) -> Vec<u8> {
    format!(
        "{}\0{}\0{}\0{}\0{}\0{:?}",
        u.username, u.password_hash, u.disabled, u.created_at, u.entry_uuid, u.attributes
    )
    .into_bytes()
}

/// The store's attributes for a body's `attributes`, or a problem naming the field.
fn attributes(a: Option<&Attributes>) -> Result<Option<UserAttributes>, Problem> {
    a.map(|a| a.to_store().map_err(|e| Problem::field("/attributes", e)))
        .transpose()
}

/// Users as an admin resource.
pub struct Users;

impl Kind for Users {
    type Record = UserRecord;
    type View = User;
    const COLLECTION: &'static str = "users";
    const NOUN: &'static str = "user";
    const PLURAL: &'static str = "users";
    const PARAM: &'static str = "username";
    const RESOURCE: Resource = Resource::User;

    fn key(r: &UserRecord) -> String {
        r.username.clone()
    }

    fn view(r: &UserRecord) -> User {
        view(r)
    }

    fn fingerprint(r: &UserRecord) -> Vec<u8> {
        fingerprint(r)
    }

    async fn read(
        ctx: &AdminContext,
        key: &str,
    ) -> Result<Option<Versioned<UserRecord>>, StoreError> {
        ctx.store.user_versioned(key).await
    }

    async fn page(
        ctx: &AdminContext,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<UserRecord>>, StoreError> {
        ctx.store.users_after(after, limit).await
    }

    fn forget(ctx: &AdminContext, key: &str) {
        ctx.oauth.clients.invalidate_user(key);
    }
}

/// The stored hash for a password or an imported hash (exactly one of them).
async fn stored_hash(
    ctx: &AdminContext,
    username: &str,
    password: Option<String>,
    hash: Option<String>,
    format: Option<String>,
) -> Result<Option<String>, Problem> {
    match (password, hash) {
        (Some(_), Some(_)) => Err(Problem::field(
            "/password_hash",
            "give either password or password_hash, not both",
        )),
        (Some(p), None) => {
            let p = Zeroizing::new(p.into_bytes());
            if p.is_empty() || p.len() > MAX_PASSWORD_LEN {
                return Err(Problem::field(
                    "/password",
                    format!("must be 1-{MAX_PASSWORD_LEN} bytes"),
                ));
            }
            if format.is_some() {
                return Err(Problem::field("/hash_format", "only with password_hash"));
            }
            let wait = ctx.config.request_timeout;
            match tokio::time::timeout(wait, ctx.verifier.hash_with_policy(p)).await {
                Ok(Some(h)) => Ok(Some(h)),
                _ => Err(Problem::unavailable(
                    "the hash pool cannot hash the password now; retry",
                    std::time::Duration::from_secs(1),
                )),
            }
        }
        (None, Some(h)) => {
            let format = format
                .map(|f| {
                    f.parse::<portcullis_hash::formats::Format>()
                        .map_err(|e| Problem::field("/hash_format", e.to_string()))
                })
                .transpose()?;
            if h.contains(['\n', '\r', '\t']) {
                return Err(Problem::field(
                    "/password_hash",
                    "must be one line without tabs",
                ));
            }
            // The same check as one line of `portcullis user import`.
            let line = format!("{username}\t{h}");
            let report = portcullis_hash::import::import_lines(line.as_bytes(), format);
            match (report.accepted.into_iter().next(), report.rejected.first()) {
                (Some((_, _, stored)), _) => Ok(Some(stored)),
                (None, Some((_, reason))) => Err(Problem::field("/password_hash", reason.clone())),
                (None, None) => Err(Problem::field("/password_hash", "not a hash")),
            }
        }
        (None, None) => {
            if format.is_some() {
                return Err(Problem::field("/hash_format", "only with password_hash"));
            }
            Ok(None)
        }
    }
}

/// List users by page.
#[utoipa::path(get, operation_id = "list_users", path = "/admin/v1/users", tag = "users", params(PageQuery),
    responses((status = 200, body = UserPage, description = "A page of users; `Link: rel=\"next\"` when there may be more"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    res::list::<Users>(&ctx, &caller, "user.list", q).await
}

/// Create a user with a password or an imported hash.
#[utoipa::path(post, operation_id = "create_user", path = "/admin/v1/users", tag = "users", request_body = NewUser,
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat the request with the same key to get the same answer")),
    responses((status = 201, body = User, description = "Created; `ETag` and `Location` headers"), WriteErrors),
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
        "user.create",
        ("users", "/admin/v1/users"),
        &headers,
        body,
        async |bytes, trail, resource| {
            let n: NewUser = parse_json(bytes)?;
            portcullis_store::record::validate_name("username", &n.username)
                .map_err(|e| Problem::field("/username", e.to_string()))?;
            *resource = format!("users/{}", n.username);
            if n.password.is_none() && n.password_hash.is_none() {
                return Err(Problem::field(
                    "/password",
                    "give password or password_hash",
                ));
            }
            let attrs = attributes(n.attributes.as_ref())?.unwrap_or_default();
            let hash = stored_hash(
                &ctx,
                &n.username,
                n.password,
                n.password_hash,
                n.hash_format,
            )
            .await?
            .unwrap_or_default();
            let mut record = UserRecord::new(n.username, hash, portcullis_door::unix_now())
                .map_err(|e| Problem::store("creating a user", &e))?;
            record.disabled = n.disabled.unwrap_or(false);
            record.attributes = attrs;
            ctx.store
                .put_user(&record)
                .await
                .map_err(|e| Problem::from_store(e, "/username", "creating a user"))?;
            let v = written::<Users>(&ctx, trail, record, 1);
            Ok(Reply::json(StatusCode::CREATED, &view(&v.record))?
                .etag(res::tag::<Users>(&v))
                .location(format!(
                    "/admin/v1/users/{}",
                    path_encode(&v.record.username)
                )))
        },
    )
    .await
}

/// Read one user.
#[utoipa::path(get, operation_id = "get_user", path = "/admin/v1/users/{username}", tag = "users",
    params(("username" = String, Path, description = "username")),
    responses((status = 200, body = User, description = "The user; `ETag` header"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn get(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
) -> Response {
    res::get::<Users>(&ctx, &caller, "user.get", name).await
}

/// Disable, enable, or set a password or hash (If-Match required).
#[utoipa::path(patch, operation_id = "update_user", path = "/admin/v1/users/{username}", tag = "users", request_body = UserChange,
    params(("username" = String, Path, description = "username"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = User, description = "Changed; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn update(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    keyed::<Users>(&ctx, &caller, "user.update", name, async |name, trail| {
        let (c, _): (UserChange, _) = json_body(&ctx, &headers, body).await?;
        let attrs = attributes(c.attributes.as_ref())?;
        // Checked before the (costly) hash, so a stale write spends no KDF.
        let cur = guarded::<Users>(&ctx, &headers, name, trail).await?;
        let mut next = cur.record.clone();
        if let Some(d) = c.disabled {
            next.disabled = d;
        }
        if let Some(a) = attrs {
            next.attributes = a;
        }
        if let Some(h) = stored_hash(&ctx, name, c.password, c.password_hash, c.hash_format).await?
        {
            next.password_hash = h;
        }
        let version = ctx
            .store
            .replace_user(&next, cur.version)
            .await
            .map_err(|e| Problem::from_store(e, "", "changing a user"))?;
        shown::<Users>(&written::<Users>(&ctx, trail, next, version))
    })
    .await
}

/// Remove a user (If-Match required).
#[utoipa::path(delete, operation_id = "remove_user", path = "/admin/v1/users/{username}", tag = "users",
    params(("username" = String, Path, description = "username"), ("If-Match" = String, Header, description = "The ETag of the version being removed")),
    responses((status = 204, description = "Removed"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn remove(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    res::remove::<Users>(&ctx, &caller, "user.remove", name, &headers).await
}
