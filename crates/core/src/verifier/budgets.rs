//! Step 1 of every attempt and the budget bookkeeping around it: classify the origin,
//! check the failure budgets before any lookup or work, charge failures (feeding the
//! distributed-attack detector), refund reservations and mark successful origins
//! trusted. When the shared throttle store fails, the node's own memory store answers
//! (invariant 10).

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use std::hash::BuildHasher;

use super::{Admitted, Deferred, Verifier};
use crate::attempt::{Class, PrincipalKind};
use crate::audit::{BUDGET_EXHAUSTED, SHED_HOLD};
use crate::metrics;
use crate::net::{IpPrefix, Origin};
use crate::scheduler::Flow;
use crate::throttle::{Charge, Decision, ThrottleError, ThrottleKey, ThrottleStore};

impl Verifier {
    /// Step 1, shared by secrets and proofs: classify and throttle (no hash, no lookup).
    /// `Err` is the answer when the attempt goes no further.
    pub(super) async fn admit(
        &self,
        kind: PrincipalKind,
        principal: String,
        source: IpAddr,
        station: Option<String>,
        deadline: Instant,
        reason: &mut &'static str,
    ) -> Result<Admitted, (Deferred, Class)> {
        let i = &*self.inner;
        let start = i.clock.now();
        if i.shutting_down.load(Ordering::Relaxed) || deadline <= start {
            *reason = if deadline <= start {
                "deadline_passed"
            } else {
                "shutting_down"
            };
            return Err((self.overloaded(Duration::from_secs(1)), Class::Unknown));
        }

        // 1. Classify and throttle.
        let cfg = &i.config;
        let prefix = IpPrefix::of(source, cfg.ipv4_prefix_len, cfg.ipv6_prefix_len);
        // Fair queuing deals the relay's hand from its prefix and pins each station to
        // one card of it (one NAS's flood stays in its hand; one station's flood in its
        // card); throttling and trust key on the whole origin.
        let flow = Flow {
            group: i.flow_hasher.hash_one(prefix),
            member: station.as_ref().map(|s| i.flow_hasher.hash_one(s)),
        };
        let origin = Origin { prefix, station };
        let origin_id = i.flow_hasher.hash_one(&origin);
        let allow_listed = cfg.trusted_cidrs.iter().any(|c| c.contains(source));
        let pp_key = ThrottleKey::PrincipalPrefix {
            kind,
            principal: principal.clone(),
            origin: origin.clone(),
        };
        let prefix_key = ThrottleKey::Prefix(origin);
        // The budgets charged whether or not the origin is trusted: a refusal already
        // known for one of them is answered before any round trip (issue 30), as a
        // refusal of an untrusted origin (which is what keeps spending them).
        let always: &[&ThrottleKey] = if allow_listed {
            &[&pp_key]
        } else {
            &[&pp_key, &prefix_key]
        };
        if let Some(retry_after) = i.throttle.known_refusal(always, start) {
            self.spread_failed(kind, &principal, origin_id, start);
            *reason = BUDGET_EXHAUSTED;
            return Err(self.throttled(false, retry_after));
        }
        let trusted = allow_listed || self.is_trusted(&pp_key, start).await;
        if !trusted && let Some(left) = i.holds.held(origin_id, start) {
            metrics::shed("hold");
            *reason = SHED_HOLD;
            return Err((self.overloaded(left), Class::Unknown));
        }
        let mut charges = vec![Charge {
            key: pp_key.clone(),
            limit: i.limits[0],
        }];
        if !allow_listed {
            charges.push(Charge {
                key: prefix_key,
                limit: i.limits[1],
            });
        }
        if !trusted {
            let attacked = i.spread.attacked(kind, &principal, start);
            charges.push(Charge {
                key: ThrottleKey::Principal {
                    kind,
                    principal: principal.clone(),
                },
                limit: i.limits[if attacked { 3 } else { 2 }],
            });
        }
        // Check only: whether this attempt is charged up front depends on what is stored.
        let class = match self.peek(&charges, start).await {
            Decision::Denied { retry_after } => {
                if !trusted {
                    self.spread_failed(kind, &principal, origin_id, start);
                }
                *reason = BUDGET_EXHAUSTED;
                return Err(self.throttled(trusted, retry_after));
            }
            Decision::Allowed { fills } => self.classify(trusted, &fills),
        };
        Ok(Admitted {
            kind,
            flow,
            origin_id,
            trusted,
            principal,
            pp_key,
            charges,
            charged: false,
            remote_limit: None,
            class,
            start,
            deadline,
        })
    }

    /// A proven principal: give back any reservation, tell the distributed-attack
    /// detector, and mark the origin trusted for it.
    pub(super) async fn succeeded(&self, adm: &Admitted) {
        let i = &*self.inner;
        if adm.charged {
            self.refund(&adm.charges).await;
        }
        if !adm.trusted {
            i.spread.succeeded(adm.kind, &adm.principal, adm.origin_id);
        }
        let now = i.clock.now();
        let ttl = Duration::from_secs(i.config.trusted_ttl_secs);
        if i.throttle
            .mark_trusted(&adm.pp_key, now, ttl)
            .await
            .is_err()
        {
            metrics::store_error("throttle");
            let _ = i.fallback.mark_trusted(&adm.pp_key, now, ttl).await;
        }
    }

    /// Charge a failure (or reserve one) to every budget of the attempt. An untrusted
    /// origin first feeds the distributed-attack detector, and a principal found under
    /// attack (by this attempt or a concurrent one since the peek) pays the cut budget at
    /// once: a wave's concurrent first requests must not all use the full burst.
    pub(super) async fn charge(&self, adm: &mut Admitted) -> Decision {
        let i = &*self.inner;
        let now = i.clock.now();
        if !adm.trusted {
            self.spread_failed(adm.kind, &adm.principal, adm.origin_id, now);
            if i.spread.attacked(adm.kind, &adm.principal, now) {
                let last = adm.charges.len().saturating_sub(1);
                for (n, c) in adm.charges.iter_mut().enumerate() {
                    if matches!(c.key, ThrottleKey::Principal { .. }) {
                        c.limit = match adm.remote_limit {
                            // The directory's own budget (issue 40), pushed last.
                            Some(r) if n == last => super::remote::under_attack(
                                r,
                                i.config.throttle.distributed_origins,
                            ),
                            _ => i.limits[3],
                        };
                    }
                }
            }
        }
        self.acquire(&adm.charges, now).await
    }

    /// An untrusted origin failed on a principal (or was throttled trying): feed the
    /// distributed-attack detector, and raise the alert when an attack starts.
    pub(super) fn spread_failed(
        &self,
        kind: PrincipalKind,
        principal: &str,
        origin: u64,
        now: Instant,
    ) {
        if self.inner.spread.failed(kind, principal, origin, now) {
            metrics::distributed_attack(kind);
        }
    }

    /// Priority class from the budget fills a charge (would) leave.
    pub(super) fn classify(&self, trusted: bool, fills: &[f64]) -> Class {
        let f = self.inner.config.throttle.suspect_fill;
        if trusted {
            Class::Trusted
        } else if fills.iter().take(2).any(|x| *x >= f) {
            Class::Suspect
        } else {
            Class::Unknown
        }
    }

    pub(super) async fn is_trusted(&self, key: &ThrottleKey, now: Instant) -> bool {
        let i = &*self.inner;
        match i.throttle.is_trusted(key, now).await {
            Ok(t) => t,
            Err(_) => {
                metrics::store_error("throttle");
                i.fallback.is_trusted(key, now).await.unwrap_or(false)
            }
        }
    }

    pub(super) async fn acquire(&self, charges: &[Charge], now: Instant) -> Decision {
        let i = &*self.inner;
        match i.throttle.acquire(charges, now).await {
            Ok(d) => d,
            Err(_) => {
                metrics::store_error("throttle");
                i.fallback.acquire_now(charges, now)
            }
        }
    }

    pub(super) async fn peek(&self, charges: &[Charge], now: Instant) -> Decision {
        let i = &*self.inner;
        match i.throttle.peek(charges, now).await {
            Ok(d) => d,
            Err(_) => {
                metrics::store_error("throttle");
                i.fallback.peek_now(charges, now)
            }
        }
    }

    /// An operator's unblock (for the admin API): forget these budgets in the shared
    /// store, every instance's remembered refusals included, and in this instance's
    /// fallback. Returns how many the shared store held.
    pub async fn unblock(&self, keys: &[ThrottleKey]) -> Result<u64, ThrottleError> {
        let i = &*self.inner;
        for k in keys {
            i.fallback.forget(k);
        }
        i.throttle.unblock(keys).await
    }

    pub(super) async fn refund(&self, charges: &[Charge]) {
        let i = &*self.inner;
        let now = i.clock.now();
        if i.throttle.refund(charges, now).await.is_err() {
            metrics::store_error("throttle");
            i.fallback.refund_now(charges, now);
        }
    }
}
