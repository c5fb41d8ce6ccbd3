//! `/admin/v1/throttle`: what an operator needs in an incident. For a principal (client
//! or user), a source address (with the station behind a RADIUS NAS), or both: each
//! failure budget that applies, how full it is, whether and until when it refuses, and
//! why (trusted origin, allow-listed source, distributed attack on the principal); and
//! lifting the block. Answers come from the verification core, which builds the budget
//! keys as it does for a real attempt.
//!
//! Lifting has no If-Match: the throttle state is not a versioned resource (it changes
//! with every attempt), and lifting is idempotent. It is a change all the same: it needs
//! the write scope and is audited.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use portcullis_core::{PrincipalKind, ThrottleReport};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::AdminContext;
use crate::action::{Trail, bad_query, finish};
use crate::auth::Caller;
use crate::conventions::{Reply, json_body};
use crate::problem::Problem;
use crate::responses::{ReadErrors, WriteErrors};

/// Client or user.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// An OAuth client (also admin callers).
    Client,
    /// A user (password grant, RADIUS).
    User,
}

/// Whose throttle state.
#[derive(Debug, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    /// Default `user`.
    pub kind: Option<Kind>,
    /// The client id or username, as presented.
    pub principal: Option<String>,
    /// A source IP address (it is masked to the core's prefix).
    pub source: Option<String>,
    /// The station behind a RADIUS NAS (Calling-Station-Id), with `source`.
    pub station: Option<String>,
}

/// One failure budget.
#[derive(Debug, Serialize, ToSchema)]
pub struct Budget {
    /// `principal_from_origin`, `origin` or `principal`.
    pub scope: String,
    /// The origin it is kept for (prefix, and station), if any.
    pub origin: Option<String>,
    /// Fraction in use after one more failure (1: the next failure is refused).
    pub fill: f64,
    /// An attempt now would pay this budget.
    pub applies: bool,
    /// Refuses attempts until then (unix seconds); absent: it admits the next one.
    pub refused_until: Option<i64>,
}

/// The throttle's view.
#[derive(Debug, Serialize, ToSchema)]
pub struct Throttle {
    /// The next attempt of this principal from this source would be refused.
    pub refused: bool,
    /// Until then (unix seconds), when refused.
    pub refused_until: Option<i64>,
    /// The source is trusted for the principal (a recent success from its origin): the
    /// principal budget does not apply to it.
    pub trusted: bool,
    /// The source is in `verifier.trusted_cidrs`.
    pub allow_listed: bool,
    /// The principal is under a distributed attack until then (its untrusted budget is
    /// cut meanwhile).
    pub under_attack_until: Option<i64>,
    /// Every budget that concerns the query.
    pub budgets: Vec<Budget>,
}

/// The result of a lift.
#[derive(Debug, Serialize, ToSchema)]
pub struct Lifted {
    /// Budgets emptied.
    pub budgets_reset: usize,
    /// The state now.
    pub throttle: Throttle,
}

type Target = (
    PrincipalKind,
    Option<String>,
    Option<(IpAddr, Option<String>)>,
);

fn target(s: Subject, prefix: &str) -> Result<Target, Problem> {
    let kind = match s.kind.unwrap_or(Kind::User) {
        Kind::Client => PrincipalKind::Client,
        Kind::User => PrincipalKind::User,
    };
    if let Some(p) = &s.principal {
        portcullis_store::record::validate_name("principal", p)
            .map_err(|e| Problem::field(format!("{prefix}principal"), e.to_string()))?;
    }
    let source = s
        .source
        .map(|t| {
            t.parse::<IpAddr>()
                .map_err(|_| Problem::field(format!("{prefix}source"), "not an IP address"))
        })
        .transpose()?;
    if let Some(st) = &s.station
        && (st.is_empty() || st.len() > 64 || st.chars().any(char::is_control))
    {
        return Err(Problem::field(
            format!("{prefix}station"),
            "must be 1-64 bytes without control characters",
        ));
    }
    if s.station.is_some() && source.is_none() {
        return Err(Problem::field(
            format!("{prefix}station"),
            "only with source",
        ));
    }
    if s.principal.is_none() && source.is_none() {
        return Err(Problem::field(
            format!("{prefix}principal"),
            "give a principal, a source, or both",
        ));
    }
    Ok((kind, s.principal, source.map(|ip| (ip, s.station))))
}

fn at(d: Duration) -> i64 {
    let when = SystemTime::now() + d;
    let secs = when
        .duration_since(UNIX_EPOCH)
        .map_or(0, |t| t.as_secs() + u64::from(t.subsec_nanos() > 0));
    i64::try_from(secs).unwrap_or(i64::MAX)
}

fn view(r: &ThrottleReport) -> Throttle {
    let refused = r.refused_for();
    Throttle {
        refused: refused.is_some(),
        refused_until: refused.map(at),
        trusted: r.trusted,
        allow_listed: r.allow_listed,
        under_attack_until: r.under_attack_for.map(at),
        budgets: r
            .budgets
            .iter()
            .map(|b| Budget {
                scope: b.scope.as_str().to_owned(),
                origin: b.origin.clone(),
                fill: (b.fill * 1000.0).round() / 1000.0,
                applies: b.applies,
                refused_until: b.refused_for.map(at),
            })
            .collect(),
    }
}

fn resource(t: &Target) -> String {
    format!(
        "throttle/{}/{}@{}",
        match t.0 {
            PrincipalKind::Client => "client",
            PrincipalKind::User => "user",
        },
        t.1.as_deref().unwrap_or("*"),
        t.2.as_ref()
            .map_or("*".to_owned(), |(ip, _)| ip.to_string())
    )
}

/// Why is this principal or source refused, and until when.
#[utoipa::path(get, operation_id = "show_throttle", path = "/admin/v1/throttle", tag = "throttle", params(Subject),
    responses((status = 200, body = Throttle, description = "The throttle state"), ReadErrors),
    security(("bearer" = ["portcullis:admin:read"])))]
pub async fn show(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<Subject>, QueryRejection>,
) -> Response {
    let mut res = "throttle".to_owned();
    let r = async {
        let Query(q) = q.map_err(|e| bad_query(&e))?;
        let t = target(q, "query:")?;
        res = resource(&t);
        let report = ctx.verifier.throttle_report(t.0, t.1.as_deref(), t.2).await;
        Reply::ok(&view(&report))
    }
    .await;
    finish(&ctx, &caller, "throttle.get", res, Trail::default(), r)
}

/// Lift the block on a principal and/or a source.
#[utoipa::path(post, operation_id = "lift_throttle", path = "/admin/v1/throttle/lift", tag = "throttle", request_body = Subject,
    responses((status = 200, body = Lifted, description = "Lifted"), WriteErrors),
    security(("bearer" = ["portcullis:admin:write"])))]
pub async fn lift(
    State(ctx): State<Arc<AdminContext>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut res = "throttle".to_owned();
    let r = async {
        let (s, _): (Subject, _) = json_body(&ctx, &headers, body).await?;
        let t = target(s, "/")?;
        res = resource(&t);
        let n = ctx
            .verifier
            .lift_throttle(t.0, t.1.as_deref(), t.2.clone())
            .await
            .map_err(|e| {
                Problem::unavailable(
                    format!("the throttle store failed: {e}"),
                    Duration::from_secs(1),
                )
            })?;
        let report = ctx.verifier.throttle_report(t.0, t.1.as_deref(), t.2).await;
        Reply::ok(&Lifted {
            budgets_reset: n,
            throttle: view(&report),
        })
    }
    .await;
    finish(&ctx, &caller, "throttle.lift", res, Trail::default(), r)
}
