//! `/admin/v1/groups`: groups of users (issue 39: what an LDAP door shows as
//! `cn=NAME,ou=groups,BASE`): a name, an optional `gidNumber` (posixGroup), a
//! description and members by username. Created, changed (details, the member list
//! whole, or members added and removed) and removed by compare-and-set on the group's
//! version, which every membership change moves, a user's removal included.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portcullis_store::{GroupRecord, Resource, StoreError, Versioned};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::AdminContext;
use crate::auth::Caller;
use crate::conventions::{PageQuery, Reply, json_body, parse_json, path_encode};
use crate::problem::Problem;
use crate::resource::{self as res, Kind, created, guarded, keyed, shown, written};
use crate::responses::{ReadErrors, WriteErrors};

/// A group as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Group {
    /// The group name (stable: the resource's key).
    pub name: String,
    /// `gidNumber`, when the group is a POSIX group.
    pub gid_number: Option<u32>,
    /// `description`.
    pub description: Option<String>,
    /// Members by username, sorted.
    pub members: Vec<String>,
    /// Creation time, unix seconds.
    pub created_at: i64,
}

/// A new group.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGroup {
    /// The group name.
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// `gidNumber` (1-2147483647, unique among groups).
    #[schema(minimum = 1, maximum = 2147483647)]
    pub gid_number: Option<u32>,
    /// `description`.
    #[schema(min_length = 1, max_length = 1024)]
    pub description: Option<String>,
    /// Members by username (each an existing user; default none).
    #[serde(default)]
    pub members: Vec<String>,
}

/// A change (fields not given are kept; `null` clears `gid_number` or `description`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupChange {
    /// New `gidNumber`, or `null` to clear it.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<u32>, nullable)]
    pub gid_number: Option<Option<u32>>,
    /// New description, or `null` to clear it.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<String>, nullable)]
    pub description: Option<Option<String>>,
    /// The whole member list (replaces it).
    pub members: Option<Vec<String>>,
    /// Members to add (after `members`).
    #[serde(default)]
    pub add_members: Vec<String>,
    /// Members to remove (after `add_members`).
    #[serde(default)]
    pub remove_members: Vec<String>,
}

/// A field that is present (its value possibly `null`) is `Some`.
fn given<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A page of groups.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupPage {
    /// The groups, by name.
    pub items: Vec<Group>,
    /// The name to continue after, when there may be more.
    pub next: Option<String>,
}

fn view(g: &GroupRecord) -> Group {
    Group {
        name: g.name.clone(),
        gid_number: g.gid_number,
        description: g.description.clone(),
        members: g.members.clone(),
        created_at: g.created_at,
    }
}

/// Groups as an admin resource.
pub struct Groups;

impl Kind for Groups {
    type Record = GroupRecord;
    type View = Group;
    const COLLECTION: &'static str = "groups";
    const NOUN: &'static str = "group";
    const PLURAL: &'static str = "groups";
    const PARAM: &'static str = "name";
    const RESOURCE: Resource = Resource::Group;

    fn key(r: &GroupRecord) -> String {
        r.name.clone()
    }

    fn view(r: &GroupRecord) -> Group {
        view(r)
    }

    fn fingerprint(r: &GroupRecord) -> Vec<u8> {
        format!("{r:?}").into_bytes()
    }

    async fn read(
        ctx: &AdminContext,
        key: &str,
    ) -> Result<Option<Versioned<GroupRecord>>, StoreError> {
        ctx.store.group_versioned(key).await
    }

    async fn page(
        ctx: &AdminContext,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<GroupRecord>>, StoreError> {
        ctx.store.groups_after(after, limit).await
    }
}

/// Members sorted, repeats dropped (a member named twice is a member).
fn members(mut m: Vec<String>) -> Vec<String> {
    m.sort();
    m.dedup();
    m
}

/// A store error of a group write: an unknown member is the request's fault (400 at
/// `/members`), not a missing resource.
fn write_problem(e: StoreError, what: &str) -> Problem {
    match e {
        StoreError::NotFound(m) if m.starts_with("user ") => {
            Problem::field("/members", format!("{m} not found"))
        }
        StoreError::Invalid(m) if m.contains("member") => Problem::field("/members", m),
        StoreError::Invalid(m) if m.contains("gidNumber") => Problem::field("/gid_number", m),
        StoreError::Invalid(m) if m.contains("description") => Problem::field("/description", m),
        other => Problem::from_store(other, "/name", what),
    }
}

/// List groups by page.
#[utoipa::path(get, operation_id = "list_groups", path = "/admin/v1/groups", tag = "groups", params(PageQuery),
    responses((status = 200, body = GroupPage, description = "A page of groups; `Link: rel=\"next\"` when there may be more"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn list(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    res::list::<Groups>(&ctx, &caller, "group.list", q).await
}

/// Create a group with its members.
#[utoipa::path(post, operation_id = "create_group", path = "/admin/v1/groups", tag = "groups", request_body = NewGroup,
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat the request with the same key to get the same answer")),
    responses((status = 201, body = Group, description = "Created; `ETag` and `Location` headers"), WriteErrors),
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
        "group.create",
        ("groups", "/admin/v1/groups"),
        &headers,
        body,
        async |bytes, trail, resource| {
            let n: NewGroup = parse_json(bytes)?;
            portcullis_store::record::validate_name("group name", &n.name)
                .map_err(|e| Problem::field("/name", e.to_string()))?;
            *resource = format!("groups/{}", n.name);
            let record = GroupRecord {
                name: n.name,
                gid_number: n.gid_number,
                description: n.description,
                members: members(n.members),
                created_at: portcullis_door::unix_now(),
            };
            ctx.store
                .put_group(&record)
                .await
                .map_err(|e| write_problem(e, "creating a group"))?;
            let v = written::<Groups>(&ctx, trail, record, 1);
            Ok(Reply::json(StatusCode::CREATED, &view(&v.record))?
                .etag(res::tag::<Groups>(&v))
                .location(format!("/admin/v1/groups/{}", path_encode(&v.record.name))))
        },
    )
    .await
}

/// Read one group.
#[utoipa::path(get, operation_id = "get_group", path = "/admin/v1/groups/{name}", tag = "groups",
    params(("name" = String, Path, description = "group name")),
    responses((status = 200, body = Group, description = "The group; `ETag` header"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn get(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
) -> Response {
    res::get::<Groups>(&ctx, &caller, "group.get", name).await
}

/// Change details or members (If-Match required).
#[utoipa::path(patch, operation_id = "update_group", path = "/admin/v1/groups/{name}", tag = "groups", request_body = GroupChange,
    params(("name" = String, Path, description = "group name"), ("If-Match" = String, Header, description = "The ETag of the version being changed")),
    responses((status = 200, body = Group, description = "Changed; new `ETag`"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn update(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    keyed::<Groups>(&ctx, &caller, "group.update", name, async |name, trail| {
        let (c, _): (GroupChange, _) = json_body(&ctx, &headers, body).await?;
        let cur = guarded::<Groups>(&ctx, &headers, name, trail).await?;
        let mut next = cur.record.clone();
        if let Some(g) = c.gid_number {
            next.gid_number = g;
        }
        if let Some(d) = c.description {
            next.description = d;
        }
        let mut list = c.members.unwrap_or(next.members);
        list.extend(c.add_members);
        list.retain(|m| !c.remove_members.contains(m));
        next.members = members(list);
        let version = ctx
            .store
            .replace_group(&next, cur.version)
            .await
            .map_err(|e| write_problem(e, "changing a group"))?;
        shown::<Groups>(&written::<Groups>(&ctx, trail, next, version))
    })
    .await
}

/// Remove a group (If-Match required); its members stay users.
#[utoipa::path(delete, operation_id = "remove_group", path = "/admin/v1/groups/{name}", tag = "groups",
    params(("name" = String, Path, description = "group name"), ("If-Match" = String, Header, description = "The ETag of the version being removed")),
    responses((status = 204, description = "Removed"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn remove(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    res::remove::<Groups>(&ctx, &caller, "group.remove", name, &headers).await
}
