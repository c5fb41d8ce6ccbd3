//! The throttle as an operator sees it in an incident (issue 27): for a principal, a
//! source, or both, each failure budget that applies, how full it is and until when it
//! refuses; whether the source is trusted for the principal, allow-listed, and whether
//! the principal is under a distributed attack. And lifting a block: the budgets emptied
//! (in the shared store and this node's fallback), the attack record forgotten.
//!
//! The keys are built exactly as step 1 builds them (`budgets.rs`: same prefix masking,
//! same limits), so what is shown is what the next attempt would meet. A station (the
//! RADIUS Calling-Station-Id) is part of the origin when given.

use std::net::IpAddr;
use std::time::Duration;

use super::Verifier;
use crate::attempt::PrincipalKind;
use crate::net::{IpPrefix, Origin};
use crate::throttle::{Charge, Decision, ThrottleError, ThrottleKey};

/// Which budget a [`BudgetState`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetScope {
    /// One principal from one origin.
    PrincipalFromOrigin,
    /// One origin, every principal.
    Origin,
    /// One principal from every untrusted origin.
    Principal,
}

impl BudgetScope {
    /// A stable name for APIs.
    pub const fn as_str(self) -> &'static str {
        match self {
            BudgetScope::PrincipalFromOrigin => "principal_from_origin",
            BudgetScope::Origin => "origin",
            BudgetScope::Principal => "principal",
        }
    }
}

/// One failure budget now.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetState {
    /// Which budget.
    pub scope: BudgetScope,
    /// The origin it is kept for (masked prefix, station), when it has one.
    pub origin: Option<String>,
    /// Fraction in use after one more failure (1 = the next failure is refused).
    pub fill: f64,
    /// How long it refuses attempts from now (`None`: it admits the next attempt).
    pub refused_for: Option<Duration>,
    /// Whether the attempt would pay this budget (the principal budget is skipped from
    /// trusted origins, the origin budget for allow-listed sources).
    pub applies: bool,
}

/// The throttle's view of a principal and/or a source.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleReport {
    /// Every budget that concerns the query.
    pub budgets: Vec<BudgetState>,
    /// The source is trusted for the principal (a recent success from its origin).
    pub trusted: bool,
    /// The source is in `trusted_cidrs`.
    pub allow_listed: bool,
    /// The principal is under a distributed attack for this much longer.
    pub under_attack_for: Option<Duration>,
}

impl ThrottleReport {
    /// How long the next attempt of this principal from this source would be refused.
    pub fn refused_for(&self) -> Option<Duration> {
        self.budgets
            .iter()
            .filter(|b| b.applies)
            .filter_map(|b| b.refused_for)
            .max()
    }
}

impl Verifier {
    fn origin_of(&self, source: IpAddr, station: Option<String>) -> Origin {
        let cfg = &self.inner.config;
        Origin {
            prefix: IpPrefix::of(source, cfg.ipv4_prefix_len, cfg.ipv6_prefix_len),
            station,
        }
    }

    /// The budgets that concern `principal` (of `kind`) and/or `source` (with its
    /// `station` behind a relay), with the scope and origin of each.
    async fn budgets_of(
        &self,
        kind: PrincipalKind,
        principal: Option<&str>,
        source: Option<(IpAddr, Option<String>)>,
    ) -> (Vec<(BudgetScope, Option<String>, Charge, bool)>, bool, bool) {
        let i = &*self.inner;
        let now = i.clock.now();
        let mut out = Vec::new();
        let mut trusted = false;
        let mut allow_listed = false;
        let origin = source.map(|(ip, station)| {
            allow_listed = i.config.trusted_cidrs.iter().any(|c| c.contains(ip));
            self.origin_of(ip, station)
        });
        if let (Some(p), Some(o)) = (principal, &origin) {
            let key = ThrottleKey::PrincipalPrefix {
                kind,
                principal: p.to_owned(),
                origin: o.clone(),
            };
            trusted = allow_listed || self.is_trusted(&key, now).await;
            let charge = Charge {
                key,
                limit: i.limits[0],
            };
            out.push((
                BudgetScope::PrincipalFromOrigin,
                Some(o.to_string()),
                charge,
                true,
            ));
        }
        if let Some(o) = &origin {
            let charge = Charge {
                key: ThrottleKey::Prefix(o.clone()),
                limit: i.limits[1],
            };
            out.push((
                BudgetScope::Origin,
                Some(o.to_string()),
                charge,
                !allow_listed,
            ));
        }
        if let Some(p) = principal {
            let attacked = i.spread.attacked(kind, p, now);
            let charge = Charge {
                key: ThrottleKey::Principal {
                    kind,
                    principal: p.to_owned(),
                },
                limit: i.limits[if attacked { 3 } else { 2 }],
            };
            out.push((BudgetScope::Principal, None, charge, !trusted));
        }
        (out, trusted, allow_listed)
    }

    /// What the throttle holds for `principal` and/or `source` now (see the module docs).
    /// A failing shared store is answered from this node's fallback, as attempts are.
    pub async fn throttle_report(
        &self,
        kind: PrincipalKind,
        principal: Option<&str>,
        source: Option<(IpAddr, Option<String>)>,
    ) -> ThrottleReport {
        let i = &*self.inner;
        let (budgets, trusted, allow_listed) = self.budgets_of(kind, principal, source).await;
        let now = i.clock.now();
        let mut states = Vec::with_capacity(budgets.len());
        for (scope, origin, charge, applies) in budgets {
            let (fill, refused_for) = match self.peek(std::slice::from_ref(&charge), now).await {
                Decision::Allowed { fills } => (fills.first().copied().unwrap_or(0.0), None),
                Decision::Denied { retry_after } => (1.0, Some(retry_after)),
            };
            states.push(BudgetState {
                scope,
                origin,
                fill,
                refused_for,
                applies,
            });
        }
        ThrottleReport {
            budgets: states,
            trusted,
            allow_listed,
            under_attack_for: principal.and_then(|p| {
                i.spread
                    .attacked_until(kind, p, now)
                    .map(|u| u.saturating_duration_since(now))
            }),
        }
    }

    /// Lift the block on `principal` and/or `source`: forget their budgets (shared store,
    /// every instance's remembered refusals, this node's fallback: [`Verifier::unblock`])
    /// and end the principal's attack state. A shared store that fails is reported, not
    /// skipped: the block may still be in force elsewhere.
    pub async fn lift_throttle(
        &self,
        kind: PrincipalKind,
        principal: Option<&str>,
        source: Option<(IpAddr, Option<String>)>,
    ) -> Result<usize, ThrottleError> {
        let i = &*self.inner;
        let (budgets, _, _) = self.budgets_of(kind, principal, source).await;
        let keys: Vec<ThrottleKey> = budgets.into_iter().map(|(_, _, c, _)| c.key).collect();
        if let Some(p) = principal {
            i.spread.forget(kind, p);
        }
        self.unblock(&keys).await?;
        Ok(keys.len())
    }
}
