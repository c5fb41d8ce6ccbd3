//! Attempts whose proof the front end checks itself (issue 14): a `private_key_jwt`
//! assertion's signature or a TLS client certificate. They take step 1 of every attempt
//! (classify and throttle, before any work), then the front end's check runs inline: it is
//! microseconds of public-key work, so it never queues for the hash pool and never holds a
//! hash thread. A failed proof is charged like a wrong secret (so guessing signatures or
//! replaying assertions exhausts the same budgets) and answered after the same reject
//! delay; a success marks the origin trusted like a right secret.

use std::future::Future;
use std::time::Duration;

use super::release::now_answer;
use super::{Admitted, Deferred, Verifier};
use crate::attempt::{Attempt, Class, Outcome, ProofCheck};
use crate::metrics;

impl Verifier {
    /// Check one attempt whose proof is `check` (the attempt's `secret` is ignored and
    /// should be empty). `check` runs only if the throttle admits the attempt, bounded by
    /// the attempt's deadline. Never panics; failures are answered after the reject delay.
    pub async fn verify_proof<F>(&self, attempt: Attempt, check: F) -> Outcome
    where
        F: Future<Output = ProofCheck>,
    {
        let d = self.answer(attempt, Some(check)).await;
        self.answer_delay(d.answer_after).await;
        d.outcome
    }

    /// Like [`Verifier::verify_proof`] but returns the failure delay instead of waiting
    /// it out (for front ends that answer on a timer, like RADIUS).
    pub async fn verify_proof_deferred<F>(&self, attempt: Attempt, check: F) -> Deferred
    where
        F: Future<Output = ProofCheck>,
    {
        self.answer(attempt, Some(check)).await
    }

    pub(super) async fn run_proof<F>(
        &self,
        mut adm: Admitted,
        check: F,
        reason: &mut &'static str,
    ) -> (Deferred, Class)
    where
        F: Future<Output = ProofCheck>,
    {
        let i = &*self.inner;
        let budget = adm.deadline.saturating_duration_since(i.clock.now());
        let verdict = match tokio::time::timeout(budget, check).await {
            Ok(v) => v,
            Err(_) => ProofCheck::Unavailable("deadline_passed"),
        };
        match verdict {
            ProofCheck::Valid => {
                *reason = "proof_valid";
                self.succeeded(&adm).await;
                (
                    now_answer(Outcome::Accepted {
                        needs_rehash: false,
                    }),
                    adm.class,
                )
            }
            ProofCheck::Invalid(why) => {
                *reason = why;
                // Charged only now that it failed, as a cheap secret is: a busy client's
                // concurrent good assertions must not use its burst up front.
                if let crate::throttle::Decision::Allowed { fills } = self.charge(&mut adm).await {
                    adm.class = self.classify(adm.trusted, &fills);
                }
                (self.rejected(&adm), adm.class)
            }
            ProofCheck::Unavailable(why) => {
                metrics::store_error("proof");
                *reason = why;
                (self.overloaded(Duration::from_secs(1)), adm.class)
            }
        }
    }
}
