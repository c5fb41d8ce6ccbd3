//! Steps 3-6 for a user whose password lives in an external directory (issue 40).
//!
//! The attempt has passed step 1 (classify, throttle) and the local store does not hold the
//! user; the [`RemoteSource`] named a directory. Then, in order:
//!
//! 1. the directory's per-user failure budget joins the attempt's budgets (untrusted
//!    origins only, beside `throttle.principal`) and the attempt is charged up front like
//!    a hash: a concurrent flood gets at most the budget's burst of guesses to
//!    the directory, which stays below its lockout threshold;
//! 2. the check is awaited on this task (never a hash thread, never a pool slot), bounded
//!    by the attempt's deadline; the directory bounds its own checks in flight, queued
//!    fairly per origin (suspect origins all under one key), so a slow directory holds
//!    only its own users;
//! 3. the verdict maps onto a local hash's: accepted (charge refunded, origin trusted),
//!    rejected (charge kept, reject delay), unknown (charge kept, answered when a real
//!    check of that directory would have been: the mimic samples its recent latencies),
//!    unavailable (charge refunded, [`Outcome::Unavailable`]) unless the optional
//!    credential cache (`cache.rs`) can answer.

use std::sync::Arc;
use std::time::Duration;

use zeroize::Zeroizing;

use super::release::now_answer;
use super::{Admitted, Deferred, Note, Verifier};
use crate::attempt::{Class, Outcome};
use crate::audit::{BUDGET_EXHAUSTED, UNKNOWN_PRINCIPAL, WRONG_SECRET};
use crate::remote::{RemoteRoute, RemoteVerdict};
use crate::stats::{Latencies, jittered};
use crate::throttle::{Charge, Decision, GcraLimit, ThrottleKey};

/// A directory's budget under a distributed attack: its burst cut to the origins that
/// revealed the attack, as the core cuts `throttle.principal` (issue 16).
pub(super) fn under_attack(limit: GcraLimit, origins: u32) -> GcraLimit {
    GcraLimit {
        tolerance: (limit.interval * origins.saturating_sub(1)).min(limit.tolerance),
        ..limit
    }
}

impl Verifier {
    pub(super) async fn run_remote(
        &self,
        mut adm: Admitted,
        route: RemoteRoute,
        secret: Zeroizing<Vec<u8>>,
        note: &mut Note,
    ) -> (Deferred, Class) {
        let i = &*self.inner;
        note.directory = Some(Arc::clone(&route.directory));
        let Some(remote) = i.remote.get() else {
            // `route` came from it, so it is installed; answered as a store fault if not.
            note.reason = "store_unavailable";
            return (self.overloaded(Duration::from_secs(1)), adm.class);
        };
        // Untrusted origins also spend the directory's own per-user budget, kept under a
        // key of its own (its GCRA parameters differ from `throttle.principal`'s); it is
        // the last charge, which `charge` cuts under a distributed attack.
        if !adm.trusted {
            adm.charges.push(Charge {
                key: ThrottleKey::Principal {
                    kind: adm.kind,
                    principal: format!("{}\u{1f}{}", route.directory, adm.principal),
                },
                limit: route.failure_limit,
            });
            adm.remote_limit = Some(route.failure_limit);
        }
        match self.charge(&mut adm).await {
            Decision::Denied { retry_after } => {
                note.reason = BUDGET_EXHAUSTED;
                return self.throttled(adm.trusted, retry_after);
            }
            Decision::Allowed { fills } => {
                adm.class = self.classify(adm.trusted, &fills);
                adm.charged = true;
            }
        }
        let class = adm.class;
        let budget = adm.deadline.saturating_duration_since(i.clock.now());
        // The directory queues fairly per source key, each key at most
        // `max_in_flight_per_source` of its slots. Only trusted origins (a recent success
        // for this user) get a key each; every origin without that trust shares one key,
        // and every suspect origin (half its budget spent) another. So however many
        // stations guess, and however long the directory holds their failed binds (report
        // 000's back office), they hold at most two keys' share of the slots and the
        // rest stays free for the users' trusted stations (issue 40).
        let source = source_key(class, adm.origin_id);
        let check = remote.check(&route, &source, &adm.principal, &secret);
        let answer = match tokio::time::timeout(budget, check).await {
            Ok(a) => a,
            Err(_) => crate::remote::RemoteAnswer {
                verdict: RemoteVerdict::Unavailable("deadline_passed"),
                server: None,
            },
        };
        match answer.verdict {
            RemoteVerdict::Accepted => {
                self.record_remote_latency(&route, adm.start);
                self.succeeded(&adm).await;
                self.cache_store(&route, &adm.principal, secret);
                note.reason = "upstream_accepted";
                (
                    now_answer(Outcome::Accepted {
                        needs_rehash: false,
                    }),
                    class,
                )
            }
            RemoteVerdict::Rejected => {
                self.record_remote_latency(&route, adm.start);
                // The directory's word is newer than any cached hash.
                self.cache_forget(&route, &adm.principal);
                note.reason = WRONG_SECRET;
                (self.rejected(&adm), class)
            }
            RemoteVerdict::Unknown => {
                self.cache_forget(&route, &adm.principal);
                note.reason = UNKNOWN_PRINCIPAL;
                (self.remote_unknown(&adm, &route), class)
            }
            RemoteVerdict::Unavailable(why) => {
                if let Some(answer) = self.cache_answer(&mut adm, &route, secret, note).await {
                    return answer;
                }
                self.refund(&adm.charges).await;
                note.reason = why;
                let wait = Duration::from_secs(1);
                let outcome = Outcome::Unavailable {
                    retry_after: jittered(wait, i.config.retry_jitter),
                };
                (now_answer(outcome), class)
            }
        }
    }

    /// A name the directory does not know: rejected when a real check of this directory
    /// would have answered (a sampled recent latency from arrival), by the same release
    /// rule as a real rejection.
    fn remote_unknown(&self, adm: &Admitted, route: &RemoteRoute) -> Deferred {
        let i = &*self.inner;
        let took = i
            .remote_latencies
            .lock()
            .get(&route.directory)
            .and_then(Latencies::sample)
            .unwrap_or_default();
        // After the draw, as in `unknown`: the delay runs from now.
        let now = i.clock.now();
        self.release_rejection(adm, (adm.start + took).max(now), now)
    }

    fn record_remote_latency(&self, route: &RemoteRoute, start: std::time::Instant) {
        let took = self.inner.clock.now().saturating_duration_since(start);
        let mut map = self.inner.remote_latencies.lock();
        map.entry(Arc::clone(&route.directory))
            .or_insert_with(Latencies::new)
            .record(took);
    }
}

/// The directory's admission key of an origin of this class (see `run_remote`).
pub(crate) fn source_key(class: Class, origin_id: u64) -> String {
    match class {
        Class::Trusted => format!("{origin_id:016x}"),
        Class::Unknown => "untrusted".to_owned(),
        Class::Suspect => "suspect".to_owned(),
    }
}
