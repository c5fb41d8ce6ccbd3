//! `/admin/v1/nas`: RADIUS clients. A shared secret is generated unless one is given
//! (and then is shown once, in the answer); it is sealed under the master key before
//! it reaches the store, as the CLI does. Changes (CIDR, the Message-Authenticator
//! rule, a new secret) are compare-and-set on the version the caller's ETag names; the
//! RADIUS doors pick them up at their next NAS table refresh.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use portcullis_store::nas::{
    generate_nas_secret, is_weak_nas_secret, parse_nas_cidr, validate_nas_name, validate_nas_secret,
};
use portcullis_store::{NasRecord, Resource, Versioned};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use zeroize::Zeroizing;

use crate::admin::action::{Trail, bad_path, bad_query, finish};
use crate::admin::auth::Caller;
use crate::admin::conventions::{
    PageQuery, Reply, b64, check_if_match, digest, etag, idempotent, json_body, next_key,
    page_reply, parse_json, path_encode, read_body,
};
use crate::admin::problem::Problem;
use crate::admin::responses::{ReadErrors, WriteErrors};
use crate::app::App;

/// A NAS as the API shows it (never its secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct Nas {
    /// Its name (stable: the resource's key).
    pub name: String,
    /// Source addresses it sends from (CIDR).
    pub cidr: String,
    /// Access-Requests without a valid Message-Authenticator are dropped.
    pub require_message_authenticator: bool,
    /// Creation time, unix seconds.
    pub created_at: i64,
}

/// A new NAS.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewNas {
    /// 1-64 of `A-Z a-z 0-9 . _ -`.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub name: String,
    /// A CIDR or one address; host bits must be zero.
    pub cidr: String,
    /// The shared secret (1-128 bytes); default: a generated one, returned once.
    #[schema(min_length = 1, max_length = 128)]
    pub secret: Option<String>,
    /// Default true (BlastRADIUS defence); false only for NASes that cannot send one.
    pub require_message_authenticator: Option<bool>,
}

/// A change (fields not given are kept).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NasChange {
    /// New source CIDR.
    pub cidr: Option<String>,
    /// New Message-Authenticator rule.
    pub require_message_authenticator: Option<bool>,
}

/// A new shared secret for `rotate-secret`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NasSecret {
    /// The new secret; default: a generated one, returned once.
    pub secret: Option<String>,
}

/// A NAS with the secret just generated for it: shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct NasWithSecret {
    /// The NAS.
    pub nas: Nas,
    /// The generated secret (absent when the caller chose it). Never shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The chosen secret is short enough to be brute-forced from one captured packet.
    pub weak_secret: bool,
}

/// A page of NASes.
#[derive(Debug, Serialize, ToSchema)]
pub struct NasPage {
    /// The NASes, by name.
    pub items: Vec<Nas>,
    /// The name to continue after, when there may be more.
    pub next: Option<String>,
}

fn view(n: &NasRecord) -> Nas {
    Nas {
        name: n.name.clone(),
        cidr: n.cidr.to_string(),
        require_message_authenticator: n.require_message_authenticator,
        created_at: n.created_at,
    }
}

fn fingerprint(n: &NasRecord) -> Vec<u8> {
    format!(
        "{}\0{}\0{}\0{}\0{}",
        n.name,
        n.cidr,
        b64(&n.secret_sealed),
        n.require_message_authenticator,
        n.created_at
    )
    .into_bytes()
}

fn tag(v: &Versioned<NasRecord>) -> String {
    etag(v.version, &fingerprint(&v.record))
}

/// The secret to seal: the given one (checked) or a generated one (to show once).
fn secret(given: Option<String>) -> Result<(Zeroizing<String>, bool), Problem> {
    match given {
        Some(s) => {
            let s = Zeroizing::new(s);
            validate_nas_secret(s.as_bytes())
                .map_err(|e| Problem::field("/secret", e.to_string()))?;
            Ok((s, false))
        }
        None => Ok((
            generate_nas_secret().map_err(|e| Problem::store("generating a NAS secret", &e))?,
            true,
        )),
    }
}

fn cidr(text: &str) -> Result<portcullis_core::IpPrefix, Problem> {
    parse_nas_cidr(text).map_err(|e| Problem::field("/cidr", e.to_string()))
}

async fn load(app: &App, name: &str) -> Result<Versioned<NasRecord>, Problem> {
    match app.store.nas_versioned(name).await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(Problem::not_found(format!("NAS {name:?}"))),
        Err(e) => Err(Problem::store("reading a NAS", &e)),
    }
}

/// A taken CIDR is a conflict on `/cidr`; a taken name on `/name`.
fn write_error(e: portcullis_store::StoreError, what: &str) -> Problem {
    match e {
        portcullis_store::StoreError::AlreadyExists(m) if m.starts_with("a NAS for") => {
            let mut p = Problem::conflict(format!("{m} already exists"));
            p.errors.push(crate::admin::problem::FieldError {
                pointer: "/cidr".into(),
                detail: "another NAS has this CIDR".into(),
            });
            p
        }
        e => Problem::from_store(e, "/name", what),
    }
}

/// List NASes by page.
#[utoipa::path(get, operation_id = "list_nas", path = "/admin/v1/nas", tag = "nas", params(PageQuery),
    responses((status = 200, body = NasPage, description = "A page of NASes; `Link: rel=\"next\"` when there may be more"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    let r = async {
        let Query(q) = q.map_err(|e| bad_query(&e))?;
        let size = q.size(&app)?;
        let mut items = app
            .store
            .nas_after(q.after()?, size + 1)
            .await
            .map_err(|e| Problem::from_store(e, "query:limit", "listing NASes"))?;
        let next = next_key(&mut items, size, |v| v.record.name.clone());
        page_reply(
            "/admin/v1/nas",
            size,
            items.iter().map(|v| view(&v.record)).collect::<Vec<_>>(),
            next,
        )
    }
    .await;
    finish(&app, &caller, "nas.list", "nas".into(), Trail::default(), r)
}

/// Register a NAS.
#[utoipa::path(post, operation_id = "create_nas", path = "/admin/v1/nas", tag = "nas", request_body = NewNas,
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat the request with the same key to get the same answer")),
    responses((status = 201, body = NasWithSecret, description = "Created; `ETag` and `Location` headers"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn create(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut trail = Trail::default();
    let mut resource = "nas".to_owned();
    let r = async {
        let bytes = read_body(&app, &headers, body).await?;
        idempotent(
            &app,
            &caller.client_id,
            &headers,
            (&Method::POST, "/admin/v1/nas", &bytes),
            async {
                let n: NewNas = parse_json(&bytes)?;
                validate_nas_name(&n.name).map_err(|e| Problem::field("/name", e.to_string()))?;
                resource = format!("nas/{}", n.name);
                let cidr = cidr(&n.cidr)?;
                let (secret, generated) = secret(n.secret)?;
                let record = NasRecord {
                    secret_sealed: NasRecord::seal_secret(
                        &app.master_key,
                        &n.name,
                        secret.as_bytes(),
                    )
                    .map_err(|e| Problem::field("/secret", e.to_string()))?,
                    name: n.name,
                    cidr,
                    require_message_authenticator: n.require_message_authenticator.unwrap_or(true),
                    created_at: crate::keys::unix_now(),
                    // A RadSec certificate is set with `portcullis nas certificate`.
                    certificate: None,
                };
                app.store
                    .put_nas(&record)
                    .await
                    .map_err(|e| write_error(e, "registering a NAS"))?;
                trail.after = Some(digest(&fingerprint(&record)));
                let v = Versioned { record, version: 1 };
                Ok(Reply::json(
                    StatusCode::CREATED,
                    &NasWithSecret {
                        nas: view(&v.record),
                        weak_secret: !generated && is_weak_nas_secret(secret.as_bytes()),
                        secret: generated.then(|| secret.to_string()),
                    },
                )?
                .etag(tag(&v))
                .location(format!("/admin/v1/nas/{}", path_encode(&v.record.name))))
            },
        )
        .await
    }
    .await;
    finish(&app, &caller, "nas.create", resource, trail, r)
}

/// Read one NAS.
#[utoipa::path(get, operation_id = "get_nas", path = "/admin/v1/nas/{name}", tag = "nas",
    params(("name" = String, Path, description = "NAS name")),
    responses((status = 200, body = Nas, description = "The NAS; `ETag` header"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn get(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
) -> Response {
    let (resource, r) = match name {
        Err(_) => ("nas/?".to_owned(), Err(bad_path("name"))),
        Ok(Path(name)) => {
            let r = async {
                let v = load(&app, &name).await?;
                Ok(Reply::ok(&view(&v.record))?.etag(tag(&v)))
            }
            .await;
            (format!("nas/{name}"), r)
        }
    };
    finish(&app, &caller, "nas.get", resource, Trail::default(), r)
}

/// Change the CIDR or the Message-Authenticator rule (If-Match required).
#[utoipa::path(patch, operation_id = "update_nas", path = "/admin/v1/nas/{name}", tag = "nas", request_body = NasChange,
    params(("name" = String, Path, description = "NAS name"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = Nas, description = "Changed; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn update(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut trail = Trail::default();
    let Ok(Path(name)) = name else {
        return finish(
            &app,
            &caller,
            "nas.update",
            "nas/?".into(),
            trail,
            Err(bad_path("name")),
        );
    };
    let r = async {
        let (c, _): (NasChange, _) = json_body(&app, &headers, body).await?;
        let cur = load(&app, &name).await?;
        trail.before = Some(digest(&fingerprint(&cur.record)));
        check_if_match(&headers, &tag(&cur), &format!("NAS {name:?}"))?;
        let mut next = cur.record.clone();
        if let Some(c) = c.cidr {
            next.cidr = cidr(&c)?;
        }
        if let Some(r) = c.require_message_authenticator {
            next.require_message_authenticator = r;
        }
        let version = app
            .store
            .replace_nas(&next, cur.version)
            .await
            .map_err(|e| write_error(e, "changing a NAS"))?;
        trail.after = Some(digest(&fingerprint(&next)));
        let v = Versioned {
            record: next,
            version,
        };
        Ok(Reply::ok(&view(&v.record))?.etag(tag(&v)))
    }
    .await;
    finish(&app, &caller, "nas.update", format!("nas/{name}"), trail, r)
}

/// Give a NAS a new shared secret (If-Match required); a generated one is in the
/// answer, once. The body is optional.
#[utoipa::path(post, operation_id = "rotate_nas", path = "/admin/v1/nas/{name}/rotate-secret", tag = "nas", request_body(content = Option<NasSecret>, description = "Optional: the new secret"),
    params(("name" = String, Path, description = "NAS name"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = NasWithSecret, description = "Rotated; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn rotate(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut trail = Trail::default();
    let Ok(Path(name)) = name else {
        return finish(
            &app,
            &caller,
            "nas.rotate_secret",
            "nas/?".into(),
            trail,
            Err(bad_path("name")),
        );
    };
    let r = async {
        let empty = headers.get(header::CONTENT_TYPE).is_none()
            && headers
                .get(header::CONTENT_LENGTH)
                .is_none_or(|l| l.as_bytes() == b"0");
        let given = if empty {
            None
        } else {
            let (s, _): (NasSecret, _) = json_body(&app, &headers, body).await?;
            s.secret
        };
        let cur = load(&app, &name).await?;
        trail.before = Some(digest(&fingerprint(&cur.record)));
        check_if_match(&headers, &tag(&cur), &format!("NAS {name:?}"))?;
        let (secret, generated) = secret(given)?;
        let mut next = cur.record.clone();
        next.secret_sealed = NasRecord::seal_secret(&app.master_key, &name, secret.as_bytes())
            .map_err(|e| Problem::field("/secret", e.to_string()))?;
        let version = app
            .store
            .replace_nas(&next, cur.version)
            .await
            .map_err(|e| write_error(e, "rotating a NAS secret"))?;
        trail.after = Some(digest(&fingerprint(&next)));
        let v = Versioned {
            record: next,
            version,
        };
        Ok(Reply::ok(&NasWithSecret {
            nas: view(&v.record),
            weak_secret: !generated && is_weak_nas_secret(secret.as_bytes()),
            secret: generated.then(|| secret.to_string()),
        })?
        .etag(tag(&v)))
    }
    .await;
    finish(
        &app,
        &caller,
        "nas.rotate_secret",
        format!("nas/{name}"),
        trail,
        r,
    )
}

/// Remove a NAS (If-Match required).
#[utoipa::path(delete, operation_id = "remove_nas", path = "/admin/v1/nas/{name}", tag = "nas",
    params(("name" = String, Path, description = "NAS name"), ("If-Match" = String, Header, description = "The ETag of the version being removed")),
    responses((status = 204, description = "Removed"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn remove(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let mut trail = Trail::default();
    let Ok(Path(name)) = name else {
        return finish(
            &app,
            &caller,
            "nas.remove",
            "nas/?".into(),
            trail,
            Err(bad_path("name")),
        );
    };
    let r = async {
        let cur = load(&app, &name).await?;
        trail.before = Some(digest(&fingerprint(&cur.record)));
        check_if_match(&headers, &tag(&cur), &format!("NAS {name:?}"))?;
        app.store
            .remove_versioned(Resource::Nas, &name, cur.version)
            .await
            .map_err(|e| Problem::from_store(e, "", "removing a NAS"))?;
        Ok(Reply::no_content())
    }
    .await;
    finish(&app, &caller, "nas.remove", format!("nas/{name}"), trail, r)
}
