//! Configuration of the verification core (the `[verifier]` table of the server's TOML).
//!
//! Every field has a production default, so an empty table is a valid configuration.
//! [`VerifierConfig::validate`] rejects values that would make the core misbehave rather
//! than clamping them silently.

use std::time::Duration;

use serde::Deserialize;

use crate::error::CoreError;
use crate::net::IpPrefix;

/// Tuning of the verification core. Durations are integers with their unit in the name.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifierConfig {
    /// Dedicated hash threads. `0` (default) means one per available core: KDFs are
    /// CPU-bound, more threads than cores only add queueing inside the OS scheduler.
    pub pool_threads: usize,
    /// Most verification jobs waiting for the pool, all classes together; beyond it new
    /// attempts are answered "overloaded" at once. Default `4096`.
    pub queue_capacity: usize,
    /// Fair-queuing queues per priority class (shuffle-sharding deck size). Default `64`.
    pub queues_per_class: usize,
    /// Queues dealt to each flow (shuffle-sharding hand size); a flow joins the shortest
    /// queue of its hand. Default `4` (with 64 queues, two flows share a whole hand with
    /// probability ~1/635,000).
    pub hand_size: usize,
    /// Weights of the priority classes when they compete; an idle class lends its share.
    pub shares: ClassShares,
    /// Queue-wait (CoDel-style) admission control.
    pub codel: CodelConfig,
    /// Hash time assumed before any has been measured, in milliseconds. Default `250`
    /// (PBKDF2-SHA256 x600,000 on one core of a 2020s server is 150-300 ms).
    pub initial_hash_estimate_ms: u64,
    /// Failure-driven rate limits, applied before any hash is spent.
    pub throttle: ThrottleConfig,
    /// Prefix length that groups IPv4 sources for throttling and fairness. Default `24`.
    /// Loopback sources are never grouped: each 127.0.0.0/8 or ::1 address is its own flow.
    pub ipv4_prefix_len: u8,
    /// Prefix length that groups IPv6 sources for throttling and fairness. Default `64`
    /// (one subscriber or host routinely owns a whole /64).
    pub ipv6_prefix_len: u8,
    /// Sources always in the trusted class, exempt from the per-prefix and per-principal
    /// limits (RADIUS NAS, internal gateways that proxy many users). The per
    /// (principal, prefix) limit still applies. Default empty.
    pub trusted_cidrs: Vec<IpPrefix>,
    /// How long a success makes its (principal, source prefix) trusted, in seconds.
    /// Default `604800` (7 days).
    pub trusted_ttl_secs: u64,
    /// Answer failures (rejections, unknown principals) no earlier than this many
    /// milliseconds after the attempt arrived, as RADIUS servers do. A timer, never a
    /// sleeping thread. `0` (default) = off.
    pub reject_delay_ms: u64,
    /// Every rejection (a wrong secret, or an unknown principal's mimicked one) leaves a
    /// random `0..=reject_jitter_us` microseconds after its verdict, on the precise
    /// timer. Default `2000`. Why (issue 16): a real rejection otherwise leaves when the
    /// hash thread wakes its task and a mimicked one when the timer does; the two
    /// wake-ups differ by tens of microseconds on some VMs, half the spread of answer
    /// times on a quiet loopback, and a two-sample test from outside told them apart
    /// (KS D 0.26-0.29 at 300 samples in one CI run). Through the same timer and
    /// spread over two milliseconds, what is left of the difference is a small part of
    /// the spread. `0` = off (answers at the verdict). At most `1000000`.
    pub reject_jitter_us: u64,
    /// How long an unknown principal waits before its rejection.
    pub unknown_delay: UnknownDelay,
    /// Retry-after values are multiplied by a random factor in `[1, 1 + retry_jitter]` so
    /// refused clients do not come back in lockstep. Default `0.5`.
    pub retry_jitter: f64,
    /// Most rehash-on-login jobs waiting for the pool; more are dropped (the next login
    /// retries the upgrade). Default `64`.
    pub rehash_queue_capacity: usize,
    /// Memory the pool may hold for memory-hard KDFs (argon2, scrypt) at once, in MiB:
    /// verifications in flight plus the argon2 buffers threads keep between hashes. A job
    /// that would exceed it waits for memory instead of exhausting it. `0` (default) =
    /// half of the machine's physical memory.
    pub memory_budget_mib: u64,
}

impl Default for VerifierConfig {
    fn default() -> Self {
        VerifierConfig {
            pool_threads: 0,
            queue_capacity: 4096,
            queues_per_class: 64,
            hand_size: 4,
            shares: ClassShares::default(),
            codel: CodelConfig::default(),
            initial_hash_estimate_ms: 250,
            throttle: ThrottleConfig::default(),
            ipv4_prefix_len: 24,
            ipv6_prefix_len: 64,
            trusted_cidrs: Vec::new(),
            trusted_ttl_secs: 7 * 24 * 3600,
            reject_delay_ms: 0,
            reject_jitter_us: 2000,
            unknown_delay: UnknownDelay::default(),
            retry_jitter: 0.5,
            rehash_queue_capacity: 64,
            memory_budget_mib: 0,
        }
    }
}

/// Relative weights of the priority classes. Only ratios matter, and only while classes
/// compete: a class with nothing queued lends its whole share to the others, except that
/// the trusted class keeps its share while it had work moments ago (two hash times).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassShares {
    /// Sources with a recent success for the principal, or in `trusted_cidrs`. Default
    /// `396`: under attack the users who logged in before keep 99% of a pool they
    /// saturate. Issue 16: at 90 a wave of new-looking guesses took a tenth of it. Issue
    /// 41: at 96 a wave's first guesses (three per attacked account before the
    /// distributed-attack cut) held the untrusted classes' 4% for their first ten seconds
    /// or more, 4% of every legitimate token where one lane does one derivation (SHA-NI).
    pub trusted: u32,
    /// Everyone else (new device, new network). Default `3` (0.75% of a pool the trusted
    /// class saturates; all of what it leaves, and a newly active class is served at
    /// once: the share only bounds a backlog).
    pub unknown: u32,
    /// Sources whose prefix has used half or more of its failure budget. Default `1`.
    pub suspect: u32,
}

impl Default for ClassShares {
    fn default() -> Self {
        ClassShares {
            trusted: 396,
            unknown: 3,
            suspect: 1,
        }
    }
}

/// CoDel-style shedding on queue wait (enqueue to worker pick-up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct CodelConfig {
    /// Acceptable standing queue wait, in milliseconds. Absent (default) = auto: the
    /// median measured hash time.
    pub target_ms: Option<u64>,
    /// How long the wait must stay above target before shedding starts, in milliseconds.
    /// Absent (default) = auto: ten times the target.
    pub interval_ms: Option<u64>,
}

/// A failure budget: `burst` failures at once, refilled evenly over `period_secs`
/// (so one more failure every `period_secs / burst` seconds). Enforced with GCRA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitConfig {
    /// Failures allowed at once.
    pub burst: u32,
    /// Time for a full budget to refill, in seconds.
    pub period_secs: u64,
}

impl LimitConfig {
    /// The refill period as a duration.
    pub fn period(&self) -> Duration {
        Duration::from_secs(self.period_secs)
    }
}

/// The three failure budgets, checked together before any hash is spent.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThrottleConfig {
    /// Per (principal, source prefix): guessing one account from one network.
    /// Default `{ burst = 5, period_secs = 300 }`.
    pub principal_prefix: LimitConfig,
    /// Per source prefix, any principals: password spraying from one network.
    /// Default `{ burst = 100, period_secs = 60 }` (room for a NAT of typing humans).
    pub prefix: LimitConfig,
    /// Per principal from untrusted sources: a distributed guess at one account. Never
    /// applied to the principal's trusted sources, so it cannot lock the real user out.
    /// Default `{ burst = 20, period_secs = 600 }`.
    pub principal: LimitConfig,
    /// A source prefix that has used at least this fraction of its budget is "suspect"
    /// (lowest class). Default `0.5`.
    pub suspect_fill: f64,
    /// A principal charged for failures from this many distinct untrusted origins within
    /// `distributed_window_secs` is under a distributed attack: its untrusted burst is
    /// cut at once to this many failures (then one per refill interval) until the window
    /// passes without new origins, instead of letting the rest of `principal.burst`
    /// through in the wave's first second. Its trusted sources are unaffected. `0` turns
    /// detection off. Default `3`.
    pub distributed_origins: u32,
    /// The detection window, in seconds. Default `600` (the principal budget's period).
    pub distributed_window_secs: u64,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            principal_prefix: LimitConfig {
                burst: 5,
                period_secs: 300,
            },
            prefix: LimitConfig {
                burst: 100,
                period_secs: 60,
            },
            principal: LimitConfig {
                burst: 20,
                period_secs: 600,
            },
            suspect_fill: 0.5,
            distributed_origins: 3,
            distributed_window_secs: 600,
        }
    }
}

/// How long an attempt on an unknown (or disabled) principal waits before its rejection.
/// It never computes a hash and never occupies a pool thread: it is a timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "snake_case", tag = "strategy")]
pub enum UnknownDelay {
    /// Default: a delay drawn from the recent real verification latencies of the same
    /// principal kind (queue wait + hash), so timing does not reveal existence.
    #[default]
    Sampled,
    /// Always this many milliseconds (deployments that prefer a constant).
    Fixed {
        /// The delay in milliseconds.
        ms: u64,
    },
    /// Answer at once (only sensible when principal names are public anyway).
    None,
}

impl VerifierConfig {
    /// Check every value; the error names the field and says what is wrong.
    pub fn validate(&self) -> Result<(), CoreError> {
        if self.pool_threads > 1024 {
            return Err(CoreError::config("pool_threads", "at most 1024"));
        }
        if self.queue_capacity == 0 {
            return Err(CoreError::config("queue_capacity", "must be at least 1"));
        }
        if !(1..=4096).contains(&self.queues_per_class) {
            return Err(CoreError::config("queues_per_class", "must be 1..=4096"));
        }
        if self.hand_size == 0 || self.hand_size > self.queues_per_class || self.hand_size > 16 {
            return Err(CoreError::config(
                "hand_size",
                "must be 1..=16 and at most queues_per_class",
            ));
        }
        let s = self.shares;
        if s.trusted == 0 || s.unknown == 0 || s.suspect == 0 {
            return Err(CoreError::config(
                "shares",
                "every class needs a weight of at least 1 (a zero share would starve it)",
            ));
        }
        if s.trusted.max(s.unknown).max(s.suspect) > 1_000_000 {
            return Err(CoreError::config(
                "shares",
                "weights must be at most 1000000",
            ));
        }
        if self.codel.target_ms == Some(0) {
            return Err(CoreError::config("codel.target_ms", "must be positive"));
        }
        if self.codel.interval_ms == Some(0) {
            return Err(CoreError::config("codel.interval_ms", "must be positive"));
        }
        if let (Some(t), Some(i)) = (self.codel.target_ms, self.codel.interval_ms)
            && i < t
        {
            return Err(CoreError::config(
                "codel.interval_ms",
                "must be at least codel.target_ms",
            ));
        }
        if self.initial_hash_estimate_ms == 0 || self.initial_hash_estimate_ms > 60_000 {
            return Err(CoreError::config(
                "initial_hash_estimate_ms",
                "must be 1..=60000",
            ));
        }
        for (name, l) in [
            ("throttle.principal_prefix", self.throttle.principal_prefix),
            ("throttle.prefix", self.throttle.prefix),
            ("throttle.principal", self.throttle.principal),
        ] {
            if l.burst == 0 || l.period_secs == 0 {
                return Err(CoreError::config(
                    name,
                    "burst and period_secs must both be positive",
                ));
            }
            if l.period_secs > 365 * 24 * 3600 {
                return Err(CoreError::config(
                    name,
                    "period_secs must be at most a year",
                ));
            }
        }
        let f = self.throttle.suspect_fill;
        if !(f > 0.0 && f <= 1.0) {
            return Err(CoreError::config(
                "throttle.suspect_fill",
                "must be in (0, 1]",
            ));
        }
        if self.throttle.distributed_origins > 1000 {
            return Err(CoreError::config(
                "throttle.distributed_origins",
                "must be at most 1000 (0 turns detection off)",
            ));
        }
        if !(1..=365 * 24 * 3600).contains(&self.throttle.distributed_window_secs) {
            return Err(CoreError::config(
                "throttle.distributed_window_secs",
                "must be between 1 second and a year",
            ));
        }
        if !(1..=32).contains(&self.ipv4_prefix_len) {
            return Err(CoreError::config("ipv4_prefix_len", "must be 1..=32"));
        }
        if !(1..=128).contains(&self.ipv6_prefix_len) {
            return Err(CoreError::config("ipv6_prefix_len", "must be 1..=128"));
        }
        if self.trusted_ttl_secs > 365 * 24 * 3600 {
            return Err(CoreError::config(
                "trusted_ttl_secs",
                "must be at most a year",
            ));
        }
        if self.reject_delay_ms > 60_000 {
            return Err(CoreError::config(
                "reject_delay_ms",
                "must be at most 60000",
            ));
        }
        if self.reject_jitter_us > 1_000_000 {
            return Err(CoreError::config(
                "reject_jitter_us",
                "must be at most 1000000",
            ));
        }
        if let UnknownDelay::Fixed { ms } = self.unknown_delay
            && ms > 60_000
        {
            return Err(CoreError::config(
                "unknown_delay.ms",
                "must be at most 60000",
            ));
        }
        if !(0.0..=10.0).contains(&self.retry_jitter) {
            return Err(CoreError::config("retry_jitter", "must be in [0, 10]"));
        }
        Ok(())
    }

    /// The memory budget in bytes after resolving `0` to half the physical memory.
    pub fn resolved_memory_budget(&self) -> u64 {
        if self.memory_budget_mib > 0 {
            self.memory_budget_mib.saturating_mul(1 << 20)
        } else {
            crate::memory::default_budget()
        }
    }

    /// The pool size after resolving `0` to the number of available cores.
    pub fn resolved_pool_threads(&self) -> usize {
        if self.pool_threads > 0 {
            self.pool_threads
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        VerifierConfig::default().validate().unwrap();
        let empty: VerifierConfig = toml::from_str("").unwrap();
        assert_eq!(empty, VerifierConfig::default());
    }

    #[test]
    fn parses_toml_and_refuses_unknown_fields() {
        let c: VerifierConfig = toml::from_str(
            r#"
            pool_threads = 4
            trusted_cidrs = ["10.0.0.0/8", "2001:db8::/32"]
            reject_delay_ms = 1000
            reject_jitter_us = 500
            unknown_delay = { strategy = "fixed", ms = 300 }
            [shares]
            trusted = 10
            [codel]
            target_ms = 5
            [throttle]
            principal = { burst = 3, period_secs = 60 }
            "#,
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.pool_threads, 4);
        assert_eq!(c.trusted_cidrs.len(), 2);
        assert_eq!(c.unknown_delay, UnknownDelay::Fixed { ms: 300 });
        assert_eq!(c.reject_jitter_us, 500);
        assert_eq!(c.shares.trusted, 10);
        assert_eq!(c.shares.unknown, 3, "unset fields keep their default");
        assert_eq!(c.codel.target_ms, Some(5));
        assert_eq!(c.throttle.principal.burst, 3);
        assert_eq!(c.throttle.prefix.burst, 100);

        for bad in [
            "pool_thread = 4",
            "[throttle]\nprefix = { burst = 1 }",
            "trusted_cidrs = [\"10.0.0.1/8\"]",
            "unknown_delay = { strategy = \"random\" }",
            "[codel]\ntarget = 5",
        ] {
            assert!(
                toml::from_str::<VerifierConfig>(bad).is_err(),
                "{bad} parsed"
            );
        }
    }

    #[test]
    fn bad_values_name_their_field() {
        type Mutation = Box<dyn Fn(&mut VerifierConfig)>;
        let cases: Vec<(&str, Mutation)> = vec![
            ("queue_capacity", Box::new(|c| c.queue_capacity = 0)),
            ("hand_size", Box::new(|c| c.hand_size = 65)),
            ("shares", Box::new(|c| c.shares.suspect = 0)),
            (
                "codel.interval_ms",
                Box::new(|c| {
                    c.codel.target_ms = Some(100);
                    c.codel.interval_ms = Some(50);
                }),
            ),
            ("throttle.prefix", Box::new(|c| c.throttle.prefix.burst = 0)),
            (
                "throttle.suspect_fill",
                Box::new(|c| c.throttle.suspect_fill = f64::NAN),
            ),
            ("ipv4_prefix_len", Box::new(|c| c.ipv4_prefix_len = 33)),
            ("retry_jitter", Box::new(|c| c.retry_jitter = -1.0)),
            (
                "reject_jitter_us",
                Box::new(|c| c.reject_jitter_us = 1_000_001),
            ),
        ];
        for (field, mutate) in cases {
            let mut c = VerifierConfig::default();
            mutate(&mut c);
            match c.validate() {
                Err(CoreError::Config { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: expected a config error, got {other:?}"),
            }
        }
    }
}
