//! How a verdict leaves: when a rejection (real or mimicked for an unknown principal) is
//! answered, and the immediate answers (throttled, overloaded). Timing is the one place
//! where principal existence could leak, so both rejection paths share one release rule.

use std::time::{Duration, Instant};

use rand::Rng;

use super::{Admitted, Deferred, Verifier, kind_idx};
use crate::attempt::{Class, Outcome, PrincipalKind};
use crate::config::UnknownDelay;
use crate::pool::Refusal;
use crate::stats::{jittered, with_rng};

impl Verifier {
    pub(super) fn rejected(&self, adm: &Admitted) -> Deferred {
        let now = self.inner.clock.now();
        self.release_rejection(adm, now, now)
    }

    /// When to answer a rejection whose verdict was (or, for an unknown principal, is
    /// made to look) reached at `verdict`: then, and no earlier than `reject_delay_ms`
    /// after arrival, plus a random `0..=reject_jitter_us`. Real and mimicked rejections
    /// share this rule; [`Verifier::verify`] then waits the delay with the precise
    /// timer's hand-off (`timer.rs`), so the runtime's millisecond rounding does not set
    /// the mimicked path apart (issue 16). The jitter makes a real rejection leave through
    /// that timer too, not on the hash thread's wake-up of its task: both paths then end
    /// in the same hand-off, and the wake-ups they still differ by are a small part of
    /// the answer times' spread.
    pub(super) fn release_rejection(
        &self,
        adm: &Admitted,
        verdict: Instant,
        now: Instant,
    ) -> Deferred {
        let i = &*self.inner;
        let reject = adm.start + Duration::from_millis(i.config.reject_delay_ms);
        let release = verdict.max(reject) + reject_jitter(i.config.reject_jitter_us);
        let delay = release.saturating_duration_since(now);
        Deferred {
            outcome: Outcome::Rejected,
            answer_after: delay.min(adm.deadline.saturating_duration_since(now)),
        }
    }

    /// An unknown or disabled principal: no hash, no pool slot; the same admission
    /// answer a real job would get, then a rejection timed like a real one.
    pub(super) async fn unknown(&self, adm: &Admitted) -> Deferred {
        let i = &*self.inner;
        let now = i.clock.now();
        let typical = i.pool.typical_cost();
        if let Err(r) = i
            .pool
            .check(adm.class, adm.flow, typical, adm.deadline, now)
        {
            return self.shed_answer(adm, refusal_wait(r)).await;
        }
        // A real verification's latency runs from arrival to verdict (lookup, queue,
        // hash, hand-back): the mimicked verdict lands a sampled such latency after
        // arrival, and is then released by the same rule as a real one.
        let took = match i.config.unknown_delay {
            UnknownDelay::Sampled => {
                let sample = i.latencies[kind_idx(adm.kind)].lock().sample();
                // Before any real verification: what one would take now.
                sample.unwrap_or_else(|| i.pool.median_hash_time())
            }
            UnknownDelay::Fixed { ms } => Duration::from_millis(ms),
            // The verdict is "now": only the reject delay applies.
            UnknownDelay::None => Duration::ZERO,
        };
        // The delay runs from now, not from before the admission check and the draw: a
        // real rejection's runs from its verdict, with nothing between.
        let now = i.clock.now();
        self.release_rejection(adm, (adm.start + took).max(now), now)
    }

    /// A budget is exhausted: answer at once, no lookup, no hash.
    pub(super) fn throttled(&self, trusted: bool, retry_after: Duration) -> (Deferred, Class) {
        let class = if trusted {
            Class::Trusted
        } else {
            Class::Unknown
        };
        let outcome = Outcome::Throttled {
            retry_after: jittered(retry_after, self.inner.config.retry_jitter),
        };
        (now_answer(outcome), class)
    }

    pub(super) fn overloaded(&self, wait: Duration) -> Deferred {
        now_answer(Outcome::Overloaded {
            retry_after: jittered(advertised(wait), self.inner.config.retry_jitter),
        })
    }

    /// A real verification's latency from arrival to now, when its task resumed with
    /// the verdict: the mimic aims at the same moment (`Verifier::answer_delay` corrects
    /// its own wake-up), so neither pays a wake-up the other does not.
    pub(super) fn record_latency(&self, kind: PrincipalKind, start: Instant) {
        let took = self.inner.clock.now().saturating_duration_since(start);
        self.inner.latencies[kind_idx(kind)].lock().record(took);
    }
}

/// The Retry-After an "overloaded" answer advertises for `wait`, before its jitter.
pub(super) fn advertised(wait: Duration) -> Duration {
    wait.clamp(Duration::from_millis(1), Duration::from_secs(60))
}

pub(super) fn now_answer(outcome: Outcome) -> Deferred {
    Deferred {
        outcome,
        answer_after: Duration::ZERO,
    }
}

/// A uniformly drawn `0..=max_us` microseconds.
fn reject_jitter(max_us: u64) -> Duration {
    if max_us == 0 {
        return Duration::ZERO;
    }
    Duration::from_micros(with_rng(|r| r.random_range(0..=max_us)))
}

pub(super) fn refusal_wait(r: Refusal) -> Duration {
    match r {
        Refusal::Shutdown => Duration::from_secs(1),
        Refusal::Full(w) | Refusal::Infeasible(w) => w,
    }
}
