//! `/admin/v1/clients`: OAuth clients with every authentication method (a secret, shown
//! once at creation and rotation; `private_key_jwt` with a JWKS or PEM public key;
//! `self_signed_tls_client_auth` with certificates; `tls_client_auth` with a subject
//! DN). Generated secrets are peppered HMACs under the current pepper, as the CLI makes
//! them. Changes are compare-and-set on the version the caller's ETag names.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portcullis_hash::pepper::PepperedHmac;
use portcullis_store::record::{validate_name, validate_scopes, validate_token_lifetime};
use portcullis_store::{
    ClientAuth, ClientRecord, DEFAULT_TOKEN_LIFETIME, Grant, Resource, StoreError, Versioned,
    generate_client_secret,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AdminContext;
use crate::auth::Caller;
use crate::conventions::{PageQuery, Reply, json_body, path_encode};
use crate::problem::Problem;
use crate::resource::{self as res, Kind, created, guarded, keyed, shown, written};
use crate::responses::{ReadErrors, WriteErrors};

/// How a client authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// A shared secret (`client_secret_basic` or `client_secret_post`).
    ClientSecret,
    /// RFC 7523 assertions signed by a registered key.
    PrivateKeyJwt,
    /// RFC 8705 2.1: a certificate from the client CAs with this subject DN.
    TlsClientAuth,
    /// RFC 8705 2.2: one of the registered self-signed certificates.
    SelfSignedTlsClientAuth,
}

impl AuthMethod {
    fn of(auth: &ClientAuth) -> Self {
        match auth {
            ClientAuth::Secret => AuthMethod::ClientSecret,
            ClientAuth::PrivateKeyJwt { .. } => AuthMethod::PrivateKeyJwt,
            ClientAuth::TlsClientAuth { .. } => AuthMethod::TlsClientAuth,
            ClientAuth::SelfSignedTlsClientAuth { .. } => AuthMethod::SelfSignedTlsClientAuth,
        }
    }
}

/// A grant type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GrantType {
    /// RFC 6749 4.4.
    ClientCredentials,
    /// RFC 6749 4.3.
    Password,
}

impl GrantType {
    fn grant(self) -> Grant {
        match self {
            GrantType::ClientCredentials => Grant::ClientCredentials,
            GrantType::Password => Grant::Password,
        }
    }

    fn of(g: Grant) -> Self {
        match g {
            Grant::ClientCredentials => GrantType::ClientCredentials,
            Grant::Password => GrantType::Password,
        }
    }
}

/// A client as the API shows it: never a secret or a hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct Client {
    /// The `client_id` (stable: the resource's key).
    pub id: String,
    /// How it authenticates.
    pub auth_method: AuthMethod,
    /// Grant types it may use.
    pub grants: Vec<GrantType>,
    /// Scopes it may be issued.
    pub scopes: Vec<String>,
    /// Lifetime of its access tokens, seconds.
    pub token_lifetime: u32,
    /// Creation time, unix seconds.
    pub created_at: i64,
    /// Secret clients: a previous secret is still accepted (a rotation is in progress).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotation_in_progress: Option<bool>,
    /// `private_key_jwt`: the registered JWKS; `self_signed_tls_client_auth`: the PEM
    /// certificates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// `tls_client_auth`: the certificate subject DN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_subject_dn: Option<String>,
}

/// A new client.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewClient {
    /// The `client_id`; default: a generated one.
    #[schema(min_length = 1, max_length = 255)]
    pub id: Option<String>,
    /// Default `client_secret` (a secret is generated and returned once).
    pub auth_method: Option<AuthMethod>,
    /// Default `[client_credentials]`.
    pub grants: Option<Vec<GrantType>>,
    /// Default none. RFC 6749 scope tokens, at most 64, none repeated.
    #[schema(max_items = 64)]
    pub scopes: Option<Vec<String>>,
    /// Seconds, 60-86400; default 3600.
    #[schema(minimum = 60, maximum = 86400)]
    pub token_lifetime: Option<u32>,
    /// `private_key_jwt`: a JWKS document or PEM public key(s);
    /// `self_signed_tls_client_auth`: PEM certificate(s).
    pub public_key: Option<String>,
    /// `tls_client_auth`: RFC 4514 subject DN.
    pub tls_subject_dn: Option<String>,
}

/// A change of a client's settings (fields not given are kept).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientChange {
    /// New grant types.
    pub grants: Option<Vec<GrantType>>,
    /// New scopes.
    pub scopes: Option<Vec<String>>,
    /// New token lifetime, seconds.
    #[schema(minimum = 60, maximum = 86400)]
    pub token_lifetime: Option<u32>,
    /// New key material of a `private_key_jwt` or `self_signed_tls_client_auth` client.
    pub public_key: Option<String>,
    /// New subject DN of a `tls_client_auth` client.
    pub tls_subject_dn: Option<String>,
}

/// A client with the secret just made for it (creation, rotation): shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClientWithSecret {
    /// The client.
    pub client: Client,
    /// The new secret (secret clients only). Store it now: it is never shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// A page of clients.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClientPage {
    /// The clients, by id.
    pub items: Vec<Client>,
    /// The id to continue after (`?after=`), when there may be more.
    pub next: Option<String>,
}

fn view(c: &ClientRecord) -> Client {
    Client {
        id: c.id.clone(),
        auth_method: AuthMethod::of(&c.auth),
        grants: c.grants.iter().map(|g| GrantType::of(*g)).collect(),
        scopes: c.scopes.clone(),
        token_lifetime: c.token_lifetime,
        created_at: c.created_at,
        rotation_in_progress: matches!(c.auth, ClientAuth::Secret)
            .then_some(c.secret_hashes.len() > 1),
        public_key: match &c.auth {
            ClientAuth::PrivateKeyJwt { jwks } => Some(jwks.clone()),
            ClientAuth::SelfSignedTlsClientAuth { certs } => Some(certs.clone()),
            _ => None,
        },
        tls_subject_dn: match &c.auth {
            ClientAuth::TlsClientAuth { subject_dn } => Some(subject_dn.clone()),
            _ => None,
        },
    }
}

/// Everything the record holds, for its ETag and audit digest.
fn fingerprint(c: &ClientRecord) -> Vec<u8> {
    let mut f = Vec::new();
    for part in [
        c.id.as_str(),
        c.auth.method(),
        c.auth.key().unwrap_or(""),
        &c.secret_hashes.join("\n"),
        &c.grants
            .iter()
            .map(|g| g.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        &c.scopes.join(" "),
        &c.token_lifetime.to_string(),
        &c.created_at.to_string(),
    ] {
        f.extend_from_slice(part.as_bytes());
        f.push(0);
    }
    f
}

/// Clients as an admin resource.
pub struct Clients;

impl Kind for Clients {
    type Record = ClientRecord;
    type View = Client;
    const COLLECTION: &'static str = "clients";
    const NOUN: &'static str = "client";
    const PLURAL: &'static str = "clients";
    const PARAM: &'static str = "id";
    const RESOURCE: Resource = Resource::Client;

    fn key(r: &ClientRecord) -> String {
        r.id.clone()
    }

    fn view(r: &ClientRecord) -> Client {
        view(r)
    }

    fn fingerprint(r: &ClientRecord) -> Vec<u8> {
        fingerprint(r)
    }

    async fn read(
        ctx: &AdminContext,
        key: &str,
    ) -> Result<Option<Versioned<ClientRecord>>, StoreError> {
        ctx.store.client_versioned(key).await
    }

    async fn page(
        ctx: &AdminContext,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<ClientRecord>>, StoreError> {
        ctx.store.clients_after(after, limit).await
    }

    fn forget(ctx: &AdminContext, key: &str) {
        ctx.oauth.clients.invalidate(key);
    }
}

fn location(id: &str) -> String {
    format!("/admin/v1/clients/{}", path_encode(id))
}

fn grants(list: &[GrantType]) -> Result<Vec<Grant>, Problem> {
    if list.is_empty() {
        return Err(Problem::field(
            "/grants",
            "a client needs at least one grant",
        ));
    }
    let out: Vec<Grant> = list.iter().map(|g| g.grant()).collect();
    for (i, g) in out.iter().enumerate() {
        if out[..i].contains(g) {
            return Err(Problem::field(format!("/grants/{i}"), "repeated grant"));
        }
    }
    Ok(out)
}

fn scopes(list: Vec<String>) -> Result<Vec<String>, Problem> {
    for (i, s) in list.iter().enumerate() {
        portcullis_store::record::validate_scope(s)
            .map_err(|e| Problem::field(format!("/scopes/{i}"), e.to_string()))?;
        if list[..i].contains(s) {
            return Err(Problem::field(format!("/scopes/{i}"), "repeated scope"));
        }
    }
    validate_scopes(&list).map_err(|e| Problem::field("/scopes", e.to_string()))?;
    Ok(list)
}

fn lifetime(secs: u32) -> Result<u32, Problem> {
    validate_token_lifetime(secs).map_err(|e| Problem::field("/token_lifetime", e.to_string()))?;
    Ok(secs)
}

/// Key material for `method` from the request's fields.
fn material(
    method: AuthMethod,
    public_key: Option<String>,
    dn: Option<String>,
) -> Result<ClientAuth, Problem> {
    let (name, pointer, text) = match (method, public_key, dn) {
        (AuthMethod::ClientSecret, None, None) => return Ok(ClientAuth::Secret),
        (AuthMethod::ClientSecret, Some(_), _) => {
            return Err(Problem::field(
                "/public_key",
                "a client_secret client has no key",
            ));
        }
        (AuthMethod::ClientSecret, None, Some(_))
        | (AuthMethod::PrivateKeyJwt | AuthMethod::SelfSignedTlsClientAuth, _, Some(_)) => {
            return Err(Problem::field(
                "/tls_subject_dn",
                "only for tls_client_auth",
            ));
        }
        (AuthMethod::TlsClientAuth, Some(_), _) => {
            return Err(Problem::field(
                "/public_key",
                "tls_client_auth takes tls_subject_dn",
            ));
        }
        (AuthMethod::TlsClientAuth, None, Some(dn)) => ("tls_client_auth", "/tls_subject_dn", dn),
        (AuthMethod::TlsClientAuth, None, None) => {
            return Err(Problem::field(
                "/tls_subject_dn",
                "required for tls_client_auth",
            ));
        }
        (AuthMethod::PrivateKeyJwt, Some(k), None) => ("private_key_jwt", "/public_key", k),
        (AuthMethod::SelfSignedTlsClientAuth, Some(k), None) => {
            ("self_signed_tls_client_auth", "/public_key", k)
        }
        (_, None, None) => {
            return Err(Problem::field(
                "/public_key",
                "required for this auth method",
            ));
        }
    };
    if text.len() > portcullis_store::record::MAX_AUTH_KEY_LEN {
        return Err(Problem::field(pointer, "larger than 65536 bytes"));
    }
    portcullis_oauth::client_auth::registration(name, &text).map_err(|e| Problem::field(pointer, e))
}

/// A new secret and its stored form (peppered HMAC under the current pepper).
fn new_secret(ctx: &AdminContext) -> Result<(String, zeroize::Zeroizing<String>), Problem> {
    let secret = generate_client_secret().map_err(|e| Problem::store("generating a secret", &e))?;
    let peppers = ctx.verifier.peppers();
    let key = peppers.current().ok_or_else(|| {
        Problem::unavailable(
            "no current pepper key to hash a new secret under",
            std::time::Duration::from_secs(60),
        )
    })?;
    Ok((PepperedHmac::create(key, secret.as_bytes()), secret))
}

fn generated_id() -> Result<String, Problem> {
    let mut raw = [0u8; 12];
    portcullis_hash::os_random(&mut raw).map_err(|e| Problem::store("generating an id", &e))?;
    Ok(format!("c-{}", hex::encode(raw)))
}

/// Check a new client's fields (each error names its field): the record to store,
/// without secret hashes, with an empty id when the server is to choose one.
pub fn check_new(n: NewClient) -> Result<ClientRecord, Problem> {
    let id = match n.id {
        Some(id) => {
            validate_name("client id", &id).map_err(|e| Problem::field("/id", e.to_string()))?;
            id
        }
        None => String::new(),
    };
    let method = n.auth_method.unwrap_or(AuthMethod::ClientSecret);
    Ok(ClientRecord {
        id,
        auth: material(method, n.public_key, n.tls_subject_dn)?,
        secret_hashes: Vec::new(),
        grants: grants(&n.grants.unwrap_or(vec![GrantType::ClientCredentials]))?,
        scopes: scopes(n.scopes.unwrap_or_default())?,
        token_lifetime: lifetime(n.token_lifetime.unwrap_or(DEFAULT_TOKEN_LIFETIME))?,
        created_at: 0,
    })
}

/// List clients by page.
#[utoipa::path(get, operation_id = "list_clients", path = "/admin/v1/clients", tag = "clients", params(PageQuery),
    responses((status = 200, body = ClientPage, description = "A page of clients; `Link: rel=\"next\"` when there may be more"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    res::list::<Clients>(&ctx, &caller, "client.list", q).await
}

/// Create a client; a secret client's secret is in the answer, once.
#[utoipa::path(post, operation_id = "create_client", path = "/admin/v1/clients", tag = "clients", request_body = NewClient,
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat the request with the same key to get the same answer")),
    responses((status = 201, body = ClientWithSecret, description = "Created; `ETag` and `Location` headers"), WriteErrors),
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
        "client.create",
        ("clients", "/admin/v1/clients"),
        &headers,
        body,
        async |bytes, trail, resource| {
            let n: NewClient = crate::conventions::parse_json(bytes)?;
            let mut record = check_new(n)?;
            if record.id.is_empty() {
                record.id = generated_id()?;
            }
            *resource = format!("clients/{}", record.id);
            let ClientRecord {
                id,
                auth,
                grants,
                scopes,
                token_lifetime,
                ..
            } = record;
            let (hashes, secret) = if auth == ClientAuth::Secret {
                let (hash, secret) = new_secret(&ctx)?;
                (vec![hash], Some(secret))
            } else {
                (Vec::new(), None)
            };
            let record = ClientRecord {
                id,
                auth,
                secret_hashes: hashes,
                grants,
                scopes,
                token_lifetime,
                created_at: portcullis_door::unix_now(),
            };
            ctx.store
                .put_client(&record)
                .await
                .map_err(|e| Problem::from_store(e, "/id", "creating a client"))?;
            let v = written::<Clients>(&ctx, trail, record, 1);
            Ok(Reply::json(
                StatusCode::CREATED,
                &ClientWithSecret {
                    client: view(&v.record),
                    client_secret: secret.map(|s| s.to_string()),
                },
            )?
            .etag(res::tag::<Clients>(&v))
            .location(location(&v.record.id)))
        },
    )
    .await
}

/// Read one client.
#[utoipa::path(get, operation_id = "get_client", path = "/admin/v1/clients/{id}", tag = "clients",
    params(("id" = String, Path, description = "client id")),
    responses((status = 200, body = Client, description = "The client; `ETag` header"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn get(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    res::get::<Clients>(&ctx, &caller, "client.get", id).await
}

/// Change settings or key material (If-Match required).
#[utoipa::path(patch, operation_id = "update_client", path = "/admin/v1/clients/{id}", tag = "clients", request_body = ClientChange,
    params(("id" = String, Path, description = "client id"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = Client, description = "Changed; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn update(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    keyed::<Clients>(&ctx, &caller, "client.update", id, async |id, trail| {
        let (c, _): (ClientChange, _) = json_body(&ctx, &headers, body).await?;
        let cur = guarded::<Clients>(&ctx, &headers, id, trail).await?;
        let mut next = cur.record.clone();
        if let Some(g) = c.grants {
            next.grants = grants(&g)?;
        }
        if let Some(s) = c.scopes {
            next.scopes = scopes(s)?;
        }
        if let Some(t) = c.token_lifetime {
            next.token_lifetime = lifetime(t)?;
        }
        if c.public_key.is_some() || c.tls_subject_dn.is_some() {
            let method = AuthMethod::of(&cur.record.auth);
            if method == AuthMethod::ClientSecret {
                return Err(Problem::field(
                    if c.public_key.is_some() {
                        "/public_key"
                    } else {
                        "/tls_subject_dn"
                    },
                    "a client_secret client has no key; its secret changes by rotation",
                ));
            }
            next.auth = material(method, c.public_key, c.tls_subject_dn)?;
        }
        let version = ctx
            .store
            .replace_client(&next, cur.version)
            .await
            .map_err(|e| Problem::from_store(e, "", "changing a client"))?;
        shown::<Clients>(&written::<Clients>(&ctx, trail, next, version))
    })
    .await
}

/// Give a secret client a new secret; the previous one stays valid until
/// `finish-rotation` (If-Match required). The new secret is in the answer, once.
#[utoipa::path(post, operation_id = "rotate_client", path = "/admin/v1/clients/{id}/rotate-secret", tag = "clients",
    params(("id" = String, Path, description = "client id"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = ClientWithSecret, description = "Rotated; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn rotate(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    secret_change(ctx, caller, id, headers, true).await
}

/// End a rotation: only the current secret stays valid (If-Match required).
#[utoipa::path(post, operation_id = "finish_rotation_client", path = "/admin/v1/clients/{id}/finish-rotation", tag = "clients",
    params(("id" = String, Path, description = "client id"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = ClientWithSecret, description = "Done; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn finish_rotation(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    secret_change(ctx, caller, id, headers, false).await
}

async fn secret_change(
    ctx: Arc<AdminContext>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    rotate: bool,
) -> Response {
    let action = if rotate {
        "client.rotate_secret"
    } else {
        "client.finish_rotation"
    };
    keyed::<Clients>(&ctx, &caller, action, id, async |id, trail| {
        let cur = guarded::<Clients>(&ctx, &headers, id, trail).await?;
        if cur.record.auth != ClientAuth::Secret {
            return Err(Problem::conflict(format!(
                "client {id:?} authenticates with {}, not a secret",
                cur.record.auth.method()
            )));
        }
        let mut next = cur.record.clone();
        let shown = if rotate {
            let (hash, secret) = new_secret(&ctx)?;
            next.secret_hashes = vec![hash, cur.record.secret_hashes[0].clone()];
            Some(secret.to_string())
        } else {
            next.secret_hashes.truncate(1);
            None
        };
        let version = ctx
            .store
            .replace_client(&next, cur.version)
            .await
            .map_err(|e| Problem::from_store(e, "", "rotating a client secret"))?;
        let v = written::<Clients>(&ctx, trail, next, version);
        Ok(Reply::ok(&ClientWithSecret {
            client: view(&v.record),
            client_secret: shown,
        })?
        .etag(res::tag::<Clients>(&v)))
    })
    .await
}

/// Remove a client (If-Match required).
#[utoipa::path(delete, operation_id = "remove_client", path = "/admin/v1/clients/{id}", tag = "clients",
    params(("id" = String, Path, description = "client id"), ("If-Match" = String, Header, description = "The ETag of the version being removed")),
    responses((status = 204, description = "Removed"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn remove(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    res::remove::<Clients>(&ctx, &caller, "client.remove", id, &headers).await
}
