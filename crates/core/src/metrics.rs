//! Metric names and emission through the `metrics` facade. The server installs the
//! Prometheus recorder; without one every call here is a no-op.
//!
//! | name | type | labels |
//! |---|---|---|
//! | `portcullis_attempts_total` | counter | `outcome`, `class`, `protocol` |
//! | `portcullis_throttled_total` | counter | `class`, `protocol` |
//! | `portcullis_shed_total` | counter | `reason` (`codel`, `deadline`, `cancelled`, `queue_full`, `infeasible`, `shutdown`) |
//! | `portcullis_queue_wait_seconds` | histogram | `class` |
//! | `portcullis_hash_seconds` | histogram | `algorithm` |
//! | `portcullis_batch_size` | histogram | |
//! | `portcullis_pool_busy_threads` | gauge | |
//! | `portcullis_pool_threads` | gauge | |
//! | `portcullis_queue_depth` | gauge | `class` (`trusted`, `unknown`, `suspect`, `rehash`) |
//! | `portcullis_in_flight` | gauge | |
//! | `portcullis_rehash_total` | counter | `result` (`replaced`, `lost_race`, `error`, `dropped`) |
//! | `portcullis_store_errors_total` | counter | `store` (`credentials`, `throttle`) |
//! | `portcullis_bad_stored_hash_total` | counter | |
//! | `portcullis_pool_jobs_total` | counter | `class`: verifications that reached a hash thread (one KDF derivation each; two for a principal holding two KDF hashes) |
//! | `portcullis_hash_kernel_relative_time` | gauge | `prf`, `kernel`, `width`: time per derivation of each PBKDF2 kernel this CPU offers, measured at start-up, relative to the single stream (1.0; lower is faster) |
//! | `portcullis_hash_kernel_selected` | gauge | `prf` (`sha1`, `sha256`, `sha512`, `argon2`), `kernel`: the kernel a saturated pool runs now; the value is its batch width (1 for argon2), 0 for a kernel it moved away from |
//! | `portcullis_hash_kernel_switches_total` | counter | the in-service re-check moved a kernel choice (issue 26; `portcullis_hash::contest`) |
//! | `portcullis_distributed_attacks_total` | counter | `kind` (`client`, `user`): a principal's failures came from many untrusted origins and its untrusted budget was cut (alert on its rate) |

use std::time::Duration;

use crate::attempt::Class;
use crate::attempt::{Outcome, PrincipalKind, Protocol};

pub(crate) const ATTEMPTS: &str = "portcullis_attempts_total";
pub(crate) const THROTTLED: &str = "portcullis_throttled_total";
pub(crate) const SHED: &str = "portcullis_shed_total";
pub(crate) const QUEUE_WAIT: &str = "portcullis_queue_wait_seconds";
pub(crate) const HASH_SECONDS: &str = "portcullis_hash_seconds";
pub(crate) const BATCH_SIZE: &str = "portcullis_batch_size";
pub(crate) const POOL_BUSY: &str = "portcullis_pool_busy_threads";
pub(crate) const POOL_THREADS: &str = "portcullis_pool_threads";
pub(crate) const QUEUE_DEPTH: &str = "portcullis_queue_depth";
pub(crate) const IN_FLIGHT: &str = "portcullis_in_flight";
pub(crate) const REHASH: &str = "portcullis_rehash_total";
pub(crate) const STORE_ERRORS: &str = "portcullis_store_errors_total";
pub(crate) const BAD_STORED_HASH: &str = "portcullis_bad_stored_hash_total";
pub(crate) const DISTRIBUTED_ATTACKS: &str = "portcullis_distributed_attacks_total";
pub(crate) const POOL_JOBS: &str = "portcullis_pool_jobs_total";
pub(crate) const KERNEL_TIME: &str = "portcullis_hash_kernel_relative_time";
pub(crate) const KERNEL_SWITCHES: &str = "portcullis_hash_kernel_switches_total";
pub(crate) const KERNEL_SELECTED: &str = "portcullis_hash_kernel_selected";

#[cfg(test)]
pub(crate) fn outcome_label(o: &Outcome) -> &'static str {
    match o {
        Outcome::Accepted { .. } => "accepted",
        Outcome::Rejected => "rejected",
        Outcome::Throttled { .. } => "throttled",
        Outcome::Overloaded { .. } => "overloaded",
        Outcome::Unavailable { .. } => "unavailable",
    }
}

/// Handles of the per-attempt metrics, registered once when the verifier is built (the
/// recorder must be installed by then), so the hot path neither hashes label sets nor
/// allocates to find its counters.
pub(crate) struct AttemptMetrics {
    /// `portcullis_attempts_total` by outcome, class, protocol.
    attempts: [[[metrics::Counter; PROTOCOLS.len()]; CLASSES.len()]; OUTCOMES.len()],
    /// `portcullis_throttled_total` by class, protocol.
    throttled: [[metrics::Counter; PROTOCOLS.len()]; CLASSES.len()],
    /// `portcullis_in_flight`.
    in_flight: metrics::Gauge,
}

const OUTCOMES: [&str; 5] = [
    "accepted",
    "rejected",
    "throttled",
    "overloaded",
    "unavailable",
];
const CLASSES: [Class; 3] = [Class::Trusted, Class::Unknown, Class::Suspect];
const PROTOCOLS: [Protocol; 13] = [
    Protocol::OAuthClient,
    Protocol::OAuthPassword,
    Protocol::RadiusPap,
    Protocol::Other,
    Protocol::OAuthClientAssertion,
    Protocol::OAuthClientTls,
    Protocol::RadiusEapTls,
    Protocol::RadiusEapTtls,
    Protocol::AdminBearer,
    Protocol::AdminTls,
    Protocol::OAuthRegistration,
    Protocol::RadiusAccounting,
    Protocol::Ldap,
];

impl AttemptMetrics {
    pub(crate) fn register() -> Self {
        let by = |o: &'static str, c: Class| {
            PROTOCOLS.map(|p| {
                metrics::counter!(ATTEMPTS, "outcome" => o, "class" => c.label(), "protocol" => p.label())
            })
        };
        AttemptMetrics {
            attempts: OUTCOMES.map(|o| CLASSES.map(|c| by(o, c))),
            throttled: CLASSES.map(|c| {
                PROTOCOLS.map(
                    |p| metrics::counter!(THROTTLED, "class" => c.label(), "protocol" => p.label()),
                )
            }),
            in_flight: metrics::gauge!(IN_FLIGHT),
        }
    }

    pub(crate) fn attempt(&self, o: &Outcome, class: Class, protocol: Protocol) {
        let oi = match o {
            Outcome::Accepted { .. } => 0,
            Outcome::Rejected => 1,
            Outcome::Throttled { .. } => 2,
            Outcome::Overloaded { .. } => 3,
            Outcome::Unavailable { .. } => 4,
        };
        let ci = match class {
            Class::Trusted => 0,
            Class::Unknown => 1,
            Class::Suspect => 2,
        };
        let pi = match protocol {
            Protocol::OAuthClient => 0,
            Protocol::OAuthPassword => 1,
            Protocol::RadiusPap => 2,
            Protocol::Other => 3,
            Protocol::OAuthClientAssertion => 4,
            Protocol::OAuthClientTls => 5,
            Protocol::RadiusEapTls => 6,
            Protocol::RadiusEapTtls => 7,
            Protocol::AdminBearer => 8,
            Protocol::AdminTls => 9,
            Protocol::OAuthRegistration => 10,
            Protocol::RadiusAccounting => 11,
            Protocol::Ldap => 12,
        };
        self.attempts[oi][ci][pi].increment(1);
        if oi == 2 {
            self.throttled[ci][pi].increment(1);
        }
    }

    pub(crate) fn in_flight(&self, n: usize) {
        self.in_flight.set(n as f64);
    }
}

pub(crate) fn shed(reason: &'static str) {
    metrics::counter!(SHED, "reason" => reason).increment(1);
}

pub(crate) fn pool_job(class: Class) {
    metrics::counter!(POOL_JOBS, "class" => class.label()).increment(1);
}

pub(crate) fn queue_wait(class: Class, d: Duration) {
    metrics::histogram!(QUEUE_WAIT, "class" => class.label()).record(d.as_secs_f64());
}

pub(crate) fn hash_time(algorithm: &'static str, d: Duration) {
    metrics::histogram!(HASH_SECONDS, "algorithm" => algorithm).record(d.as_secs_f64());
}

pub(crate) fn batch_size(n: usize) {
    metrics::histogram!(BATCH_SIZE).record(n as f64);
}

pub(crate) fn pool_busy(n: usize) {
    metrics::gauge!(POOL_BUSY).set(n as f64);
}

/// Measure the PBKDF2 kernels of this CPU (once per process; tens of milliseconds) and
/// publish the measurement and the choice.
pub(crate) fn hash_kernels() {
    use portcullis_hash::batch::calibration;
    use portcullis_hash::pbkdf2::Prf;
    for prf in [Prf::Sha1, Prf::Sha256, Prf::Sha512] {
        let cal = calibration(prf);
        for k in &cal.kernels {
            metrics::gauge!(
                KERNEL_TIME,
                "prf" => prf.name(),
                "kernel" => k.backend,
                "width" => k.width.to_string()
            )
            .set(k.per_chain);
        }
        metrics::gauge!(KERNEL_SELECTED, "prf" => prf.name(), "kernel" => cal.best)
            .set(cal.best_width as f64);
    }
    argon2_kernel_selected();
    metrics::counter!(KERNEL_SWITCHES).increment(0);
}

/// A kernel choice moved in service (the hash crate's contest): count it and publish the
/// new choice of every PRF and of argon2.
pub(crate) fn hash_kernels_switched() {
    use portcullis_hash::batch::calibration;
    use portcullis_hash::pbkdf2::Prf;
    metrics::counter!(KERNEL_SWITCHES).increment(1);
    for prf in [Prf::Sha1, Prf::Sha256, Prf::Sha512] {
        let cal = calibration(prf);
        for k in &cal.kernels {
            let selected = if k.backend == cal.best {
                cal.best_width as f64
            } else {
                0.0
            };
            metrics::gauge!(KERNEL_SELECTED, "prf" => prf.name(), "kernel" => k.backend)
                .set(selected);
        }
    }
    argon2_kernel_selected();
}

/// Publish the argon2 kernel in use (value 1; the others 0).
fn argon2_kernel_selected() {
    use portcullis_hash::argon2_kernel::{backends, kernel_in_service};
    let now = kernel_in_service();
    for b in backends() {
        metrics::gauge!(KERNEL_SELECTED, "prf" => "argon2", "kernel" => b.name())
            .set(if b == now { 1.0 } else { 0.0 });
    }
}

/// Register every labelled counter the core may increment at zero, so that dashboards
/// and alert rules see a series (at 0) before the first event rather than none.
pub(crate) fn register_series() {
    for reason in [
        "codel",
        "deadline",
        "cancelled",
        "queue_full",
        "infeasible",
        "shutdown",
        "hold",
    ] {
        metrics::counter!(SHED, "reason" => reason).increment(0);
    }
    for store in ["credentials", "throttle"] {
        metrics::counter!(STORE_ERRORS, "store" => store).increment(0);
    }
    for result in ["replaced", "lost_race", "error", "dropped"] {
        metrics::counter!(REHASH, "result" => result).increment(0);
    }
    for kind in ["client", "user"] {
        metrics::counter!(DISTRIBUTED_ATTACKS, "kind" => kind).increment(0);
    }
    for class in [Class::Trusted, Class::Unknown, Class::Suspect] {
        metrics::counter!(POOL_JOBS, "class" => class.label()).increment(0);
    }
    metrics::counter!(BAD_STORED_HASH).increment(0);
}

pub(crate) fn pool_threads(n: usize) {
    metrics::gauge!(POOL_THREADS).set(n as f64);
}

pub(crate) fn queue_depth(depths: [usize; 3], rehash: usize) {
    for (c, d) in [Class::Trusted, Class::Unknown, Class::Suspect]
        .into_iter()
        .zip(depths)
    {
        metrics::gauge!(QUEUE_DEPTH, "class" => c.label()).set(d as f64);
    }
    metrics::gauge!(QUEUE_DEPTH, "class" => "rehash").set(rehash as f64);
}

pub(crate) fn rehash(result: &'static str) {
    metrics::counter!(REHASH, "result" => result).increment(1);
}

pub(crate) fn store_error(store: &'static str) {
    metrics::counter!(STORE_ERRORS, "store" => store).increment(1);
}

pub(crate) fn bad_stored_hash() {
    metrics::counter!(BAD_STORED_HASH).increment(1);
}

pub(crate) fn distributed_attack(kind: PrincipalKind) {
    let kind = match kind {
        PrincipalKind::Client => "client",
        PrincipalKind::User => "user",
    };
    metrics::counter!(DISTRIBUTED_ATTACKS, "kind" => kind).increment(1);
}
