//! `POST /admin/v1/apply`: configuration as code against a running server
//! (`portcullis apply FILE --server URL`). The body is the declared document with its
//! secrets resolved by the CLI ([`Declared`]); it is checked by the same code as a local
//! file, planned against this server's store and carried out by the same
//! compare-and-set steps as a local apply ([`crate::apply::plan`]). The plan is computed
//! here because it compares declared secrets with stored hashes and sealed secrets, which
//! the API never shows. The answer is the plan, never a secret; every record changed is
//! one audit event, besides the `apply` event of the request.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portcullis_store::Resource;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::AdminContext;
use crate::action::{Trail, audit, bad_query, finish};
use crate::apply::declared::Declared;
use crate::apply::plan::{Action, ApplyResult, Context, Plan, Step, changes};
use crate::auth::Caller;
use crate::clients::Clients;
use crate::conventions::{Reply, parse_json, read_body};
use crate::nas::Nases;
use crate::problem::{Problem, kind};
use crate::resource::Kind;
use crate::responses::WriteErrors;
use crate::users::Users;

/// Held while an apply runs: one at a time per instance.
static APPLY_GATE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Flags of an apply.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ApplyQuery {
    /// Answer the plan and change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Remove clients, users and NAS the document does not declare (dynamically
    /// registered clients are never removed).
    #[serde(default)]
    pub prune: bool,
}

/// Make the store hold what the document declares.
#[utoipa::path(post, operation_id = "apply", path = "/admin/v1/apply", tag = "apply", request_body = Declared,
    params(ApplyQuery),
    responses((status = 200, body = ApplyResult, description = "The plan; carried out unless dry_run"),
        (status = 503, description = "The store is unavailable"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn apply(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<ApplyQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let r = async {
        let Query(q) = q.map_err(|e| bad_query(&e))?;
        let bytes = read_body(&ctx, &headers, body).await?;
        let declared: Declared = parse_json(&bytes)?;
        let desired = declared
            .check()
            .map_err(|e| Problem::field(e.pointer, e.message))?;
        // Comparing and hashing client secrets costs a KDF each, and no KDF runs on the
        // runtime's workers or its blocking pool (ARCHITECTURE.md, invariant 1): the apply
        // runs on a thread of its own, one apply at a time (two declarative applies
        // interleaved would each undo the other's plan, and the gate bounds the threads).
        let _gate = APPLY_GATE.lock().await;
        let (app2, caller2) = (Arc::clone(&ctx), caller.clone());
        let rt = tokio::runtime::Handle::current();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let unavailable =
            || Problem::unavailable("apply failed; retry", std::time::Duration::from_secs(1));
        std::thread::Builder::new()
            .name("portcullis-apply".into())
            .spawn(move || {
                let r = rt.block_on(run(&app2, &caller2, &desired, q.dry_run, q.prune));
                let _ = tx.send(r);
            })
            .map_err(|_| unavailable())?;
        rx.await.map_err(|_| unavailable())?
    }
    .await;
    finish(
        &ctx,
        &caller,
        "apply",
        "apply".to_owned(),
        Trail::default(),
        r,
    )
}

async fn run(
    ctx: &AdminContext,
    caller: &Caller,
    desired: &crate::apply::Desired,
    dry_run: bool,
    prune: bool,
) -> Result<Reply, Problem> {
    let peppers = ctx.verifier.peppers();
    let cx = Context {
        store: Arc::clone(&ctx.store),
        peppers: &peppers,
        master_key: &ctx.master_key,
        policy: &ctx.config.policy,
        now: portcullis_door::unix_now(),
    };
    let plan = Plan::make(desired, &cx, prune).await.map_err(|e| {
        Problem::unavailable(
            format!("planning failed: {e}"),
            std::time::Duration::from_secs(1),
        )
    })?;
    let items = plan.items();
    let applied = !dry_run && changes(&items);
    if applied {
        let mut done = |s: &Step| audit_step(ctx, caller, s);
        plan.execute(ctx.store.as_ref(), &mut done)
            .await
            .map_err(|e| {
                Problem::new(
                    StatusCode::CONFLICT,
                    kind::CONFLICT,
                    "Apply stopped",
                    format!("{e} (steps before it were applied; apply again)"),
                )
            })?;
    }
    Reply::ok(&ApplyResult {
        items,
        applied,
        dry_run,
    })
}

/// A record changed: its caches are forgotten and the change is audited like the
/// matching single-record action.
fn audit_step(ctx: &AdminContext, caller: &Caller, s: &Step) {
    let (collection, noun) = match s.kind {
        Resource::Client => {
            Clients::forget(ctx, &s.key);
            (
                "clients",
                ["client.create", "client.update", "client.remove"],
            )
        }
        Resource::User => {
            Users::forget(ctx, &s.key);
            ("users", ["user.create", "user.update", "user.remove"])
        }
        Resource::Nas => {
            Nases::forget(ctx, &s.key);
            ("nas", ["nas.create", "nas.update", "nas.remove"])
        }
        Resource::Group => ("groups", ["group.create", "group.update", "group.remove"]),
    };
    let (action, status) = match s.action {
        Action::Create => (noun[0], StatusCode::CREATED),
        Action::Update(_) => (noun[1], StatusCode::OK),
        Action::Remove => (noun[2], StatusCode::NO_CONTENT),
        Action::Unchanged | Action::Kept(_) => return,
    };
    audit(
        ctx,
        caller,
        action,
        format!("{collection}/{}", s.key),
        status.as_u16(),
        Trail::default(),
    );
}
