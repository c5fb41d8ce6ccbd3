//! `/admin/v1/nas`: RADIUS clients. A shared secret is generated unless one is given
//! (and then is shown once, in the answer); it is sealed under the master key before
//! it reaches the store, as the CLI does. Changes (CIDR, the Message-Authenticator
//! rule, the RadSec certificate, a new secret) are compare-and-set on the version the
//! caller's ETag names; the RADIUS doors pick them up at their next NAS table refresh.
//!
//! The RadSec client certificate is what `portcullis nas add --certificate FILE |
//! --certificate-name NAME` sets, in the form `nas list` shows: `sha256:<hex>` (a pinned
//! certificate) or `name:<name>` (any certificate of the RadSec CA with that name); a
//! PEM certificate may be sent instead (`certificate_pem`) to be pinned.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use portcullis_store::nas::{
    generate_nas_secret, is_weak_nas_secret, parse_nas_cidr, validate_nas_name, validate_nas_secret,
};
use portcullis_store::{NasCertificate, NasRecord, Resource, StoreError, Versioned};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use zeroize::Zeroizing;

use crate::AdminContext;
use crate::auth::Caller;
use crate::conventions::{PageQuery, Reply, b64, json_body, parse_json, path_encode};
use crate::problem::Problem;
use crate::resource::{self as res, Kind, created, guarded, keyed, shown, written};
use crate::responses::{ReadErrors, WriteErrors};

/// A NAS as the API shows it (never its secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct Nas {
    /// Its name (stable: the resource's key).
    pub name: String,
    /// Source addresses it sends from (CIDR).
    pub cidr: String,
    /// Access-Requests without a valid Message-Authenticator are dropped.
    pub require_message_authenticator: bool,
    /// The RadSec client certificate that names it: `sha256:<64 hex>` (pinned) or
    /// `name:<name>` (subjectAltName dNSName, else CN); absent: UDP only.
    pub certificate: Option<String>,
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
    /// Its RadSec client certificate: `sha256:<64 hex>` or `name:<name>` (at most one
    /// of `certificate` and `certificate_pem`).
    #[schema(pattern = "^(sha256:[0-9a-fA-F]{64}|name:[!-~]{1,253})$")]
    pub certificate: Option<String>,
    /// Its RadSec client certificate as PEM (the first certificate is pinned).
    pub certificate_pem: Option<String>,
}

/// A change (fields not given are kept).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NasChange {
    /// New source CIDR.
    pub cidr: Option<String>,
    /// New Message-Authenticator rule.
    pub require_message_authenticator: Option<bool>,
    /// New RadSec client certificate (`sha256:<64 hex>` or `name:<name>`); `null`
    /// forgets it (the NAS can then no longer connect over RadSec).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, pattern = "^(sha256:[0-9a-fA-F]{64}|name:[!-~]{1,253})$")]
    pub certificate: Option<Option<String>>,
    /// New RadSec client certificate as PEM (pinned).
    pub certificate_pem: Option<String>,
}

/// A member that is present (even `null`) is `Some`: `null` clears, absent keeps.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The certificate named by `certificate` or `certificate_pem` (at most one).
fn certificate(
    named: Option<&str>,
    pem: Option<String>,
) -> Result<Option<NasCertificate>, Problem> {
    match (named, pem) {
        (Some(_), Some(_)) => Err(Problem::field(
            "/certificate_pem",
            "give certificate or certificate_pem, not both",
        )),
        (Some(c), None) => c
            .parse::<NasCertificate>()
            .map(Some)
            .map_err(|e| Problem::field("/certificate", e.to_string())),
        (None, Some(pem)) => {
            portcullis_door::tls::pin::pin_bytes(pem.into_bytes(), "certificate_pem")
                .map(Some)
                .map_err(|e| Problem::field("/certificate_pem", e.to_string()))
        }
        (None, None) => Ok(None),
    }
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
        certificate: n.certificate.as_ref().map(ToString::to_string),
        created_at: n.created_at,
    }
}

fn fingerprint(n: &NasRecord) -> Vec<u8> {
    format!(
        "{}\0{}\0{}\0{}\0{}\0{}",
        n.name,
        n.cidr,
        b64(&n.secret_sealed),
        n.require_message_authenticator,
        n.created_at,
        n.certificate
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    )
    .into_bytes()
}

/// NASes as an admin resource.
pub struct Nases;

impl Kind for Nases {
    type Record = NasRecord;
    type View = Nas;
    const COLLECTION: &'static str = "nas";
    const NOUN: &'static str = "NAS";
    const PLURAL: &'static str = "NASes";
    const PARAM: &'static str = "name";
    const RESOURCE: Resource = Resource::Nas;

    fn key(r: &NasRecord) -> String {
        r.name.clone()
    }

    fn view(r: &NasRecord) -> Nas {
        view(r)
    }

    fn fingerprint(r: &NasRecord) -> Vec<u8> {
        fingerprint(r)
    }

    async fn read(
        ctx: &AdminContext,
        key: &str,
    ) -> Result<Option<Versioned<NasRecord>>, StoreError> {
        ctx.store.nas_versioned(key).await
    }

    async fn page(
        ctx: &AdminContext,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<NasRecord>>, StoreError> {
        ctx.store.nas_after(after, limit).await
    }
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

/// A taken CIDR is a conflict on `/cidr`, a taken certificate on `/certificate`, a
/// taken name on `/name`.
fn write_error(e: StoreError, what: &str) -> Problem {
    let taken = |m: &str, pointer: &str, detail: &str| {
        let mut p = Problem::conflict(format!("{m} already exists"));
        p.errors.push(crate::problem::FieldError {
            pointer: pointer.into(),
            detail: detail.into(),
        });
        p
    };
    match e {
        StoreError::AlreadyExists(m) if m.starts_with("a NAS for") => {
            taken(&m, "/cidr", "another NAS has this CIDR")
        }
        StoreError::AlreadyExists(m) if m.contains("certificate") => {
            taken(&m, "/certificate", "another NAS has this certificate")
        }
        e => Problem::from_store(e, "/name", what),
    }
}

/// List NASes by page.
#[utoipa::path(get, operation_id = "list_nas", path = "/admin/v1/nas", tag = "nas", params(PageQuery),
    responses((status = 200, body = NasPage, description = "A page of NASes; `Link: rel=\"next\"` when there may be more"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    res::list::<Nases>(&ctx, &caller, "nas.list", q).await
}

/// Register a NAS.
#[utoipa::path(post, operation_id = "create_nas", path = "/admin/v1/nas", tag = "nas", request_body = NewNas,
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat the request with the same key to get the same answer")),
    responses((status = 201, body = NasWithSecret, description = "Created; `ETag` and `Location` headers"), WriteErrors),
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
        "nas.create",
        ("nas", "/admin/v1/nas"),
        &headers,
        body,
        async |bytes, trail, resource| {
            let n: NewNas = parse_json(bytes)?;
            validate_nas_name(&n.name).map_err(|e| Problem::field("/name", e.to_string()))?;
            *resource = format!("nas/{}", n.name);
            let cidr = cidr(&n.cidr)?;
            let certificate = certificate(n.certificate.as_deref(), n.certificate_pem)?;
            let (secret, generated) = secret(n.secret)?;
            let record = NasRecord {
                secret_sealed: NasRecord::seal_secret(&ctx.master_key, &n.name, secret.as_bytes())
                    .map_err(|e| Problem::field("/secret", e.to_string()))?,
                name: n.name,
                cidr,
                require_message_authenticator: n.require_message_authenticator.unwrap_or(true),
                created_at: portcullis_door::unix_now(),
                certificate,
            };
            ctx.store
                .put_nas(&record)
                .await
                .map_err(|e| write_error(e, "registering a NAS"))?;
            let v = written::<Nases>(&ctx, trail, record, 1);
            Ok(Reply::json(
                StatusCode::CREATED,
                &NasWithSecret {
                    nas: view(&v.record),
                    weak_secret: !generated && is_weak_nas_secret(secret.as_bytes()),
                    secret: generated.then(|| secret.to_string()),
                },
            )?
            .etag(res::tag::<Nases>(&v))
            .location(format!("/admin/v1/nas/{}", path_encode(&v.record.name))))
        },
    )
    .await
}

/// Read one NAS.
#[utoipa::path(get, operation_id = "get_nas", path = "/admin/v1/nas/{name}", tag = "nas",
    params(("name" = String, Path, description = "NAS name")),
    responses((status = 200, body = Nas, description = "The NAS; `ETag` header"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn get(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
) -> Response {
    res::get::<Nases>(&ctx, &caller, "nas.get", name).await
}

/// Change the CIDR, the Message-Authenticator rule or the RadSec certificate (If-Match
/// required).
#[utoipa::path(patch, operation_id = "update_nas", path = "/admin/v1/nas/{name}", tag = "nas", request_body = NasChange,
    params(("name" = String, Path, description = "NAS name"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = Nas, description = "Changed; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn update(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    keyed::<Nases>(&ctx, &caller, "nas.update", name, async |name, trail| {
        let (c, _): (NasChange, _) = json_body(&ctx, &headers, body).await?;
        let cur = guarded::<Nases>(&ctx, &headers, name, trail).await?;
        let mut next = cur.record.clone();
        if let Some(c) = c.cidr {
            next.cidr = cidr(&c)?;
        }
        if let Some(r) = c.require_message_authenticator {
            next.require_message_authenticator = r;
        }
        match (c.certificate, c.certificate_pem) {
            (None, None) => {}
            (Some(None), None) => next.certificate = None,
            (named, pem) => next.certificate = certificate(named.flatten().as_deref(), pem)?,
        }
        let version = ctx
            .store
            .replace_nas(&next, cur.version)
            .await
            .map_err(|e| write_error(e, "changing a NAS"))?;
        shown::<Nases>(&written::<Nases>(&ctx, trail, next, version))
    })
    .await
}

/// Give a NAS a new shared secret (If-Match required); a generated one is in the
/// answer, once. The body is optional.
#[utoipa::path(post, operation_id = "rotate_nas", path = "/admin/v1/nas/{name}/rotate-secret", tag = "nas", request_body(content = Option<NasSecret>, description = "Optional: the new secret"),
    params(("name" = String, Path, description = "NAS name"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = NasWithSecret, description = "Rotated; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn rotate(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    keyed::<Nases>(
        &ctx,
        &caller,
        "nas.rotate_secret",
        name,
        async |name, trail| {
            let empty = headers.get(header::CONTENT_TYPE).is_none()
                && headers
                    .get(header::CONTENT_LENGTH)
                    .is_none_or(|l| l.as_bytes() == b"0");
            let given = if empty {
                None
            } else {
                let (s, _): (NasSecret, _) = json_body(&ctx, &headers, body).await?;
                s.secret
            };
            let cur = guarded::<Nases>(&ctx, &headers, name, trail).await?;
            let (secret, generated) = secret(given)?;
            let mut next = cur.record.clone();
            next.secret_sealed = NasRecord::seal_secret(&ctx.master_key, name, secret.as_bytes())
                .map_err(|e| Problem::field("/secret", e.to_string()))?;
            let version = ctx
                .store
                .replace_nas(&next, cur.version)
                .await
                .map_err(|e| write_error(e, "rotating a NAS secret"))?;
            let v = written::<Nases>(&ctx, trail, next, version);
            Ok(Reply::ok(&NasWithSecret {
                nas: view(&v.record),
                weak_secret: !generated && is_weak_nas_secret(secret.as_bytes()),
                secret: generated.then(|| secret.to_string()),
            })?
            .etag(res::tag::<Nases>(&v)))
        },
    )
    .await
}

/// Remove a NAS (If-Match required).
#[utoipa::path(delete, operation_id = "remove_nas", path = "/admin/v1/nas/{name}", tag = "nas",
    params(("name" = String, Path, description = "NAS name"), ("If-Match" = String, Header, description = "The ETag of the version being removed")),
    responses((status = 204, description = "Removed"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn remove(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    res::remove::<Nases>(&ctx, &caller, "nas.remove", name, &headers).await
}
