//! The flow every versioned admin resource (clients, users, NAS) shares, written once:
//! the path key decoded (a bad one is a problem naming the path parameter), the record
//! loaded by key (404 naming it), the If-Match check against its strong ETag with the
//! before digest noted for the audit event, the after digest and new ETag of a write,
//! the list, read and remove handlers whole, and the frame of a creation (body read
//! under the Idempotency-Key, one audit event). A resource says how it is named,
//! read, paged, shown and fingerprinted ([`Kind`]); its module keeps only what differs
//! (creation and the fields of a change).

use std::future::Future;

use axum::body::Body;
use axum::extract::Path;
use axum::extract::Query;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use portcullis_store::{Resource, StoreError, Versioned};
use serde::Serialize;

use crate::AdminContext;
use crate::action::{Trail, bad_path, bad_query, finish};
use crate::auth::Caller;
use crate::conventions::{
    PageQuery, Reply, check_if_match, digest, etag, idempotent, next_key, page_reply, read_body,
};
use crate::problem::Problem;

/// A versioned record kind of the admin API.
pub trait Kind {
    /// The stored record.
    type Record: Clone + Send + Sync;
    /// What the API shows of it (never a secret or a hash).
    type View: Serialize;
    /// Path segment under `/admin/v1/`, also the audit resource's prefix (`clients`).
    const COLLECTION: &'static str;
    /// Its name in messages (`client`).
    const NOUN: &'static str;
    /// Its plural in messages (`clients`).
    const PLURAL: &'static str;
    /// The path parameter naming one record (`id`).
    const PARAM: &'static str;
    /// The store's name for it (compare-and-set removal).
    const RESOURCE: Resource;
    /// The record's key.
    fn key(r: &Self::Record) -> String;
    /// What the API shows.
    fn view(r: &Self::Record) -> Self::View;
    /// Everything the record holds, for its ETag and audit digests.
    fn fingerprint(r: &Self::Record) -> Vec<u8>;
    /// The record `key` and its version.
    fn read(
        ctx: &AdminContext,
        key: &str,
    ) -> impl Future<Output = Result<Option<Versioned<Self::Record>>, StoreError>> + Send;
    /// At most `limit` records after `after`, by key.
    fn page(
        ctx: &AdminContext,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Versioned<Self::Record>>, StoreError>> + Send;
    /// After a change or removal of `key`: drop what this instance caches of it.
    fn forget(_app: &AdminContext, _key: &str) {}
}

/// The strong ETag of a version.
pub fn tag<K: Kind>(v: &Versioned<K::Record>) -> String {
    etag(v.version, &K::fingerprint(&v.record))
}

/// The record `key`, or 404 naming it.
pub async fn load<K: Kind>(ctx: &AdminContext, key: &str) -> Result<Versioned<K::Record>, Problem> {
    match K::read(ctx, key).await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(Problem::not_found(format!("{} {key:?}", K::NOUN))),
        Err(e) => Err(Problem::store(&format!("reading a {}", K::NOUN), &e)),
    }
}

/// The record `key` for a change: its before digest noted, If-Match checked against
/// its ETag (428 missing, 412 stale).
pub async fn guarded<K: Kind>(
    ctx: &AdminContext,
    headers: &HeaderMap,
    key: &str,
    trail: &mut Trail,
) -> Result<Versioned<K::Record>, Problem> {
    let cur = load::<K>(ctx, key).await?;
    trail.before = Some(digest(&K::fingerprint(&cur.record)));
    check_if_match(headers, &tag::<K>(&cur), &format!("{} {key:?}", K::NOUN))?;
    Ok(cur)
}

/// A record just written at `version`: its after digest noted, its caches dropped.
pub fn written<K: Kind>(
    ctx: &AdminContext,
    trail: &mut Trail,
    record: K::Record,
    version: i64,
) -> Versioned<K::Record> {
    K::forget(ctx, &K::key(&record));
    trail.after = Some(digest(&K::fingerprint(&record)));
    Versioned { record, version }
}

/// 200 with the view and ETag of `v`.
pub fn shown<K: Kind>(v: &Versioned<K::Record>) -> Result<Reply, Problem> {
    Ok(Reply::ok(&K::view(&v.record))?.etag(tag::<K>(v)))
}

/// A handler on one record: the path key decoded, `run` given the key and the trail,
/// then the answer and one audit event `action` on `<collection>/<key>`.
pub async fn keyed<K: Kind>(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    key: Result<Path<String>, PathRejection>,
    run: impl AsyncFnOnce(&str, &mut Trail) -> Result<Reply, Problem>,
) -> Response {
    keyed_at(ctx, caller, action, (K::COLLECTION, K::PARAM), key, run).await
}

/// [`keyed`] for a resource that is not a [`Kind`]: `at` is its collection and the
/// name of its path parameter.
pub async fn keyed_at(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    (collection, param): (&str, &str),
    key: Result<Path<String>, PathRejection>,
    run: impl AsyncFnOnce(&str, &mut Trail) -> Result<Reply, Problem>,
) -> Response {
    let mut trail = Trail::default();
    let Ok(Path(key)) = key else {
        let resource = format!("{collection}/?");
        return finish(ctx, caller, action, resource, trail, Err(bad_path(param)));
    };
    let r = run(&key, &mut trail).await;
    finish(ctx, caller, action, format!("{collection}/{key}"), trail, r)
}

/// `POST /admin/v1/<collection>` (`path`): the body read and `run` under the request's
/// Idempotency-Key, given the body, the trail and the audit resource (the collection
/// until `run` names the record), then the answer and one audit event `action`.
pub async fn created(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    (collection, path): (&str, &str),
    headers: &HeaderMap,
    body: Body,
    run: impl AsyncFnOnce(&[u8], &mut Trail, &mut String) -> Result<Reply, Problem>,
) -> Response {
    let mut trail = Trail::default();
    let mut resource = collection.to_owned();
    let r = async {
        let bytes = read_body(ctx, headers, body).await?;
        let creation = run(&bytes, &mut trail, &mut resource);
        idempotent(
            ctx,
            &caller.client_id,
            headers,
            (&Method::POST, path, &bytes),
            creation,
        )
        .await
    }
    .await;
    finish(ctx, caller, action, resource, trail, r)
}

/// `GET /admin/v1/<collection>`: one keyset page.
pub async fn list<K: Kind>(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    let r = async {
        let Query(q) = q.map_err(|e| bad_query(&e))?;
        let size = q.size(ctx)?;
        let mut items = K::page(ctx, q.after()?, size + 1).await.map_err(|e| {
            Problem::from_store(e, "query:limit", &format!("listing {}", K::PLURAL))
        })?;
        let next = next_key(&mut items, size, |v| K::key(&v.record));
        page_reply(
            &format!("/admin/v1/{}", K::COLLECTION),
            size,
            items.iter().map(|v| K::view(&v.record)).collect::<Vec<_>>(),
            next,
        )
    }
    .await;
    finish(
        ctx,
        caller,
        action,
        K::COLLECTION.into(),
        Trail::default(),
        r,
    )
}

/// `GET /admin/v1/<collection>/{key}`.
pub async fn get<K: Kind>(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    key: Result<Path<String>, PathRejection>,
) -> Response {
    keyed::<K>(ctx, caller, action, key, async |key, _| {
        shown::<K>(&load::<K>(ctx, key).await?)
    })
    .await
}

/// `DELETE /admin/v1/<collection>/{key}` (If-Match required).
pub async fn remove<K: Kind>(
    ctx: &AdminContext,
    caller: &Caller,
    action: &'static str,
    key: Result<Path<String>, PathRejection>,
    headers: &HeaderMap,
) -> Response {
    keyed::<K>(ctx, caller, action, key, async |key, trail| {
        let cur = guarded::<K>(ctx, headers, key, trail).await?;
        ctx.store
            .remove_versioned(K::RESOURCE, key, cur.version)
            .await
            .map_err(|e| Problem::from_store(e, "", &format!("removing a {}", K::NOUN)))?;
        K::forget(ctx, key);
        Ok(Reply::no_content())
    })
    .await
}
