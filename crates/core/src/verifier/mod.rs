//! The [`Verifier`]: the one entry point front ends call, and the path of one attempt.
//!
//! 1. **Classify and throttle** (no hash, no thread): mask the source to its prefix; the
//!    *origin* is that prefix plus the attempt's station, if any ([`Origin`]: a RADIUS
//!    NAS relays for many users). The attempt is *trusted* if the source is in
//!    `trusted_cidrs` or the origin carries a trust mark for this principal (a success
//!    within `trusted_ttl_secs`). Check the failure budgets ([`crate::throttle`]):
//!    (principal, origin) always, origin unless allow-listed, principal unless trusted. An exhausted budget answers "throttled" at
//!    once; so does an untrusted origin still inside the wait its last shed answer gave
//!    it ("overloaded" again, `hold.rs`). After the lookup, an attempt that will spend a
//!    hash (KDF credential) or mimic
//!    one (unknown principal) is charged up front, atomically; cheap credentials are
//!    charged only when they fail (issue 5: concurrent correct attempts of a busy client
//!    must not exhaust the burst with reservations). Otherwise the class is trusted, suspect (prefix or (principal, prefix) budget
//!    at least `suspect_fill` used) or unknown. Every untrusted charge also feeds the
//!    distributed-attack detector (`spread.rs`); a principal found under attack
//!    is charged with its cut burst from that charge on (issue 16).
//! 2. **Look up** the stored credentials (bounded by the deadline). A store error or
//!    timeout answers "overloaded" with a retry-after: the store is the bottleneck, not
//!    the secret, and a panic or a hang would be worse. The charge is refunded.
//! 3. **Unknown or disabled principal**: the same admission check a real job would face
//!    (so overload looks the same), then "rejected" after a delay drawn from recent real
//!    verification latencies of that principal kind, returned as `answer_after` (a timer,
//!    never a pool slot, never a hash). Its failure stays charged like a wrong password,
//!    so the throttle does not reveal existence either. Real and mimicked rejections are
//!    answered by one rule (`release.rs`), and [`Verifier::verify`] waits the last
//!    milliseconds precisely (`timer.rs`) so the two stay indistinguishable.
//! 4. **Cheap credentials first** (peppered HMAC, salted SHA): verified inline in
//!    microseconds. During a secret rotation a client holds a peppered secret and an older
//!    one; a wrong secret then costs the HMAC plus at most one KDF.
//! 5. **KDF credentials** go to the pool as one job (admission: queue capacity and
//!    deadline feasibility from queue depth and measured hash time; shed at dequeue by
//!    CoDel). If a principal holds two KDF hashes (a legacy import of both rotation
//!    secrets), both are tried in that one job and the flow is charged their summed cost in
//!    fair queuing, so a wrong secret costs two derivations *of that flow's share*; we
//!    chose this over refusing the older secret because rotation must not lock clients out,
//!    and new client secrets are peppered (cheap) anyway.
//! 6. **Verdict**: success refunds the charge, marks the (principal, prefix) trusted and,
//!    if [`Policy::needs_rehash`], queues the upgrade on the pool's background queue after
//!    the answer is returned; the store's compare-and-set makes concurrent logins upgrade
//!    once. Failure keeps the charge and is answered after `reject_delay_ms` (a timer).

use std::collections::HashSet;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use portcullis_hash::{Cost, Credential, Peppers, Policy};
use tokio::sync::oneshot;
use zeroize::Zeroizing;

use crate::attempt::{Attempt, Class, Outcome, PrincipalKind, ProofCheck};
use crate::audit::AuditSink;
use crate::clock::Clock;
use crate::config::VerifierConfig;
use crate::error::CoreError;
use crate::metrics;

use crate::pool::{JobHook, JobReply, Pool, VerifyJob};
use crate::remote::RemoteSource;
use crate::scheduler::Flow;
use crate::source::CredentialSource;
use crate::spread::Spread;
use crate::stats::Latencies;
use crate::throttle::{
    Charge, Decision, GcraLimit, MemoryThrottleStore, ThrottleKey, ThrottleStore,
};
use crate::timer::{PRECISE_TAIL, PreciseTimer};

/// The largest resume lateness one delayed answer feeds into the estimate.
const MAX_LATENESS: Duration = Duration::from_micros(500);

mod budgets;
mod cache;
mod hold;
mod inspect;
mod proof;
mod rehash;
mod release;
mod remote;

pub use inspect::{BudgetScope, BudgetState, ThrottleReport};
use release::{now_answer, refusal_wait};

use crate::audit::{BUDGET_EXHAUSTED, UNKNOWN_PRINCIPAL, WRONG_SECRET};

/// Principals tracked by the distributed-attack detector (about 100 bytes each).
const SPREAD_CAPACITY: usize = 1 << 16;

/// An outcome and when to send it: failures may be held back (reject delay,
/// unknown-principal delay). Front ends that schedule their own replies (RADIUS) use
/// [`Verifier::verify_deferred`]; others call [`Verifier::verify`], which waits on a timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deferred {
    /// The verdict.
    pub outcome: Outcome,
    /// Send it no earlier than this long after `verify_deferred` returned (zero = now).
    pub answer_after: Duration,
}

/// A point-in-time view of the core for the status page and tests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolSnapshot {
    /// Hash pool threads.
    pub threads: usize,
    /// Threads computing a hash right now.
    pub busy_threads: usize,
    /// Verification jobs waiting, all classes.
    pub queued: usize,
    /// Verification jobs taken by a worker and not yet answered.
    pub in_service: usize,
    /// Waiting jobs per class: trusted, unknown, suspect.
    pub queued_by_class: [usize; 3],
    /// Rehash jobs waiting (lowest priority).
    pub queued_rehash: usize,
    /// Attempts inside `verify` right now.
    pub in_flight: usize,
    /// KDF derivations computed by the pool since start (verifications and rehashes).
    pub hashes_computed: u64,
    /// Argon2 lanes (one slice's segment each) that a pool thread ran for another
    /// thread's p > 1 job.
    pub lanes_helped: u64,
    /// Batch-kernel calls with two or more derivations.
    pub batches: u64,
    /// The most derivations one pool run has gathered so far (1 until a batch forms).
    pub largest_batch: usize,
    /// Summed queue wait, in microseconds, of the jobs that reached a hash thread.
    pub queue_wait_us_total: u64,
    /// How many jobs `queue_wait_us_total` sums over.
    pub queue_waits: u64,
    /// Attempts answered per class: trusted, unknown, suspect.
    pub attempts_by_class: [u64; 3],
    /// Cheap (peppered HMAC, salted SHA) verifications done inline.
    pub cheap_verifications: u64,
    /// Jobs shed by admission control (at enqueue or dequeue).
    pub shed: u64,
    /// Attempts answered "throttled".
    pub throttled: u64,
    /// Attempts answered "accepted".
    pub accepted: u64,
    /// Attempts answered "rejected" (wrong secret, unknown or disabled principal).
    pub rejected: u64,
    /// Attempts answered "overloaded" (shed, infeasible deadline, store error).
    pub overloaded: u64,
    /// Attempts answered "unavailable" (an external directory could not answer).
    pub unavailable: u64,
    /// Stored hashes upgraded by rehash-on-login.
    pub rehashed: u64,
    /// Memory budget for memory-hard KDFs (argon2, scrypt), in bytes.
    pub memory_budget_bytes: u64,
    /// Memory held against it now: jobs in flight and argon2 buffers threads keep.
    pub memory_held_bytes: u64,
    /// The most it has held at once since start.
    pub memory_peak_bytes: u64,
    /// Median recent hash time (per pool run).
    pub median_hash_time: Duration,
    /// Current CoDel target queue wait.
    pub codel_target: Duration,
    /// Current CoDel interval.
    pub codel_interval: Duration,
    /// `shutdown` was called.
    pub shutting_down: bool,
}

/// The verification core. Cheap to clone: clones share one pool and one state.
#[derive(Clone)]
pub struct Verifier {
    inner: Arc<Inner>,
}

struct Inner {
    /// Validated configuration.
    config: VerifierConfig,
    /// Stored credentials and the compare-and-set used by rehash.
    source: Arc<dyn CredentialSource>,
    /// Failure budgets and trust marks (shared across nodes when Redis-backed).
    throttle: Arc<dyn ThrottleStore>,
    /// Used while `throttle` is failing: throttling degrades to per node, never to none.
    fallback: MemoryThrottleStore,
    /// Pepper keys for cheap credentials (and the pool's copy for verify()).
    peppers: crate::pool::SharedPeppers,
    /// What new hashes look like; decides rehash-on-login.
    policy: Policy,
    /// Every time-based rule reads this.
    clock: Arc<dyn Clock>,
    /// The dedicated hash threads and their scheduler.
    pool: Pool,
    /// GCRA parameters: (principal, origin), origin, principal, and principal under a
    /// distributed attack (same interval, burst cut to `distributed_origins`).
    limits: [GcraLimit; 4],
    /// Which principals are under a distributed attack (issue 16).
    spread: Spread,
    /// Serves the last milliseconds of answer delays precisely (issue 16).
    timer: PreciseTimer,
    /// Untrusted origins held to the Retry-After of their last shed answer.
    holds: hold::ShedHolds,
    /// How late, in nanoseconds, a task resumes after asking to resume at a given
    /// instant (timer error plus the cross-thread wake-up), smoothed. A delayed answer
    /// aims this much early so it resumes on time on average: the mimicked rejection
    /// then lands where the real one it copies resumed, not a wake-up later or earlier
    /// (issue 16, regression seen in CI: D = 0.30 from a 0.1 ms shift).
    resume_lateness: AtomicU64,
    /// Keys the flow hash so shuffle-shard hands cannot be aimed at.
    flow_hasher: std::collections::hash_map::RandomState,
    /// Recent real verification latencies per principal kind (unknown-principal delay).
    latencies: [Mutex<Latencies>; 2],
    /// Rehashes in progress, so one node upgrades a hash once even before the CAS.
    rehashing: Mutex<HashSet<(PrincipalKind, String, String)>>,
    /// Rehash store writes spawned and not yet finished, for [`Verifier::drain`].
    rehash_writes: AtomicUsize,
    /// Signalled when `rehash_writes` drops to zero.
    rehash_done: tokio::sync::Notify,
    /// `shutdown` was called.
    shutting_down: AtomicBool,
    /// Attempts inside `verify_deferred`.
    in_flight: AtomicUsize,
    /// Outcome counters for [`PoolSnapshot`].
    counts: Counts,
    /// Per-attempt metric handles, looked up once.
    metrics: metrics::AttemptMetrics,
    /// Where the audit event of every attempt goes, once the server installed a sink.
    audit: std::sync::OnceLock<Arc<dyn AuditSink>>,
    /// External directories for users the local store does not hold (issue 40), once
    /// the server installed them.
    remote: std::sync::OnceLock<Arc<dyn RemoteSource>>,
    /// Recent real check latencies per directory (the unknown-user mimic of each).
    remote_latencies: Mutex<std::collections::HashMap<Arc<str>, Latencies>>,
    /// Hashes of directory users' passwords, when a directory caches them.
    cache: Mutex<cache::CredentialCache>,
}

/// What the audit event says beside the outcome: the reason, and the directory that
/// answered (issue 40).
#[derive(Default)]
struct Note {
    reason: &'static str,
    directory: Option<Arc<str>>,
}

#[derive(Default)]
struct Counts {
    /// By class: trusted, unknown, suspect.
    by_class: [AtomicU64; 3],
    accepted: AtomicU64,
    rejected: AtomicU64,
    throttled: AtomicU64,
    overloaded: AtomicU64,
    unavailable: AtomicU64,
    cheap: AtomicU64,
    rehashed: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.pool.shutdown();
    }
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("snapshot", &self.snapshot())
            .finish_non_exhaustive()
    }
}

/// Decrements the in-flight count even when the caller drops the future.
struct InFlight<'a>(&'a Inner);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let n = self.0.in_flight.fetch_sub(1, Ordering::Relaxed) - 1;
        self.0.metrics.in_flight(n);
    }
}

/// Everything decided before the store lookup.
struct Admitted {
    kind: PrincipalKind,
    principal: String,
    pp_key: ThrottleKey,
    charges: Vec<Charge>,
    /// The budgets hold a reservation for this attempt (KDF and unknown principals) that
    /// a success or a shed gives back; cheap credentials are only charged on failure.
    charged: bool,
    /// The per-user failure budget of the user's directory, when an external directory
    /// checks this user (issue 40).
    remote_limit: Option<GcraLimit>,
    class: Class,
    flow: Flow,
    /// Keyed hash of the origin (distributed-attack detection).
    origin_id: u64,
    /// The origin is trusted for this principal (no principal budget, no detection).
    trusted: bool,
    start: Instant,
    deadline: Instant,
}

impl Verifier {
    /// Validate `config`, start the hash pool threads and return the core.
    pub fn new(
        config: VerifierConfig,
        source: Arc<dyn CredentialSource>,
        throttle: Arc<dyn ThrottleStore>,
        peppers: Peppers,
        policy: Policy,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, CoreError> {
        Self::with_hook(config, source, throttle, peppers, policy, clock, None)
    }

    pub(crate) fn with_hook(
        config: VerifierConfig,
        source: Arc<dyn CredentialSource>,
        throttle: Arc<dyn ThrottleStore>,
        peppers: Peppers,
        policy: Policy,
        clock: Arc<dyn Clock>,
        hook: Option<JobHook>,
    ) -> Result<Self, CoreError> {
        config.validate()?;
        let peppers: crate::pool::SharedPeppers = Arc::new(RwLock::new(Arc::new(peppers)));
        let pool = Pool::start(&config, Arc::clone(&peppers), Arc::clone(&clock), hook)?;
        let t = &config.throttle;
        let principal = GcraLimit::from_config(&t.principal);
        let limits = [
            GcraLimit::from_config(&t.principal_prefix),
            GcraLimit::from_config(&t.prefix),
            principal,
            // Under attack the burst shrinks to the origins that revealed it: the wave
            // has had its hashes, and a user logging in from a few new networks at
            // once is not the one cut off.
            GcraLimit {
                tolerance: (principal.interval * t.distributed_origins.saturating_sub(1))
                    .min(principal.tolerance),
                ..principal
            },
        ];
        let spread = Spread::new(
            t.distributed_origins,
            Duration::from_secs(t.distributed_window_secs),
            SPREAD_CAPACITY,
        );
        let timer = PreciseTimer::start().map_err(CoreError::Spawn)?;
        let holds = hold::ShedHolds::new(clock.now());
        Ok(Verifier {
            inner: Arc::new(Inner {
                config,
                source,
                throttle,
                fallback: MemoryThrottleStore::new(1 << 16),
                peppers,
                policy,
                clock,
                pool,
                limits,
                spread,
                timer,
                holds,
                resume_lateness: AtomicU64::new(0),
                flow_hasher: std::collections::hash_map::RandomState::new(),
                latencies: [Mutex::new(Latencies::new()), Mutex::new(Latencies::new())],
                rehashing: Mutex::new(HashSet::new()),
                rehash_writes: AtomicUsize::new(0),
                rehash_done: tokio::sync::Notify::new(),
                shutting_down: AtomicBool::new(false),
                in_flight: AtomicUsize::new(0),
                counts: Counts::default(),
                metrics: metrics::AttemptMetrics::register(),
                audit: std::sync::OnceLock::new(),
                remote: std::sync::OnceLock::new(),
                remote_latencies: Mutex::new(std::collections::HashMap::new()),
                cache: Mutex::new(cache::CredentialCache::default()),
            }),
        })
    }

    /// Check one attempt. Never panics; answers by the attempt's deadline plus the
    /// configured failure delays.
    pub async fn verify(&self, attempt: Attempt) -> Outcome {
        let d = self.verify_deferred(attempt).await;
        self.answer_delay(d.answer_after).await;
        d.outcome
    }

    /// Wait out an answer delay: the runtime's timer for all but its last
    /// 4 ms (`PRECISE_TAIL`), a precise timer for those (see `timer.rs` for why a
    /// mimicked rejection must not land on the runtime's millisecond lattice). The task
    /// resumes at `now + d` on average: it aims early by the measured resume lateness.
    pub async fn answer_delay(&self, d: Duration) {
        if d.is_zero() {
            return;
        }
        let i = &*self.inner;
        let until = Instant::now() + d;
        let early = Duration::from_nanos(i.resume_lateness.load(Ordering::Relaxed));
        let aim = until.checked_sub(early).unwrap_or(until);
        if let Some(coarse) = aim
            .saturating_duration_since(Instant::now())
            .checked_sub(PRECISE_TAIL)
            .filter(|c| !c.is_zero())
        {
            tokio::time::sleep(coarse).await;
        }
        // If the service is gone the answer just goes now.
        let _ = i.timer.at(aim).await;
        // Smoothed over 1/16 steps and capped, like the timer's own overshoot, so one
        // descheduling does not make answers early for long.
        let late = Instant::now()
            .saturating_duration_since(aim)
            .min(MAX_LATENESS)
            .as_nanos() as i128;
        let o = i.resume_lateness.load(Ordering::Relaxed) as i128;
        let next = (o + (late - o) / 16).max(0) as u64;
        i.resume_lateness.store(next, Ordering::Relaxed);
    }

    /// Replace the pepper keys (a reloaded secrets file): cheap credentials peppered under
    /// a key added since start verify from the next attempt on. Jobs already running
    /// finish with the keys they started with.
    pub fn set_peppers(&self, peppers: Peppers) {
        *self.inner.peppers.write() = Arc::new(peppers);
    }

    /// The configured delay of a rejection (`reject_delay_ms`): what a door that answers a
    /// throttled attempt like a rejection waits first, so a refused guess costs a
    /// guessing client as much time as a wrong one and it cannot spin on refusals.
    pub fn reject_delay(&self) -> Duration {
        Duration::from_millis(self.inner.config.reject_delay_ms)
    }

    /// The pepper keys in force (new generated secrets are peppered under the current
    /// one, as the CLI does; issue 27's admin API).
    pub fn peppers(&self) -> Arc<Peppers> {
        Arc::clone(&self.inner.peppers.read())
    }

    /// Install where audit events go (once; later calls are ignored). Until then no
    /// events are produced.
    pub fn set_audit_sink(&self, sink: Arc<dyn AuditSink>) {
        let _ = self.inner.audit.set(sink);
    }

    /// Install the external directories that check users the local store does not hold
    /// (once; later calls are ignored). Until then such users are unknown.
    pub fn set_remote_source(&self, remote: Arc<dyn RemoteSource>) {
        let _ = self.inner.remote.set(remote);
    }

    /// The installed audit sink, for front ends' own events (RADIUS drops, duplicates).
    pub fn audit_sink(&self) -> Option<&Arc<dyn AuditSink>> {
        self.inner.audit.get()
    }

    /// Like [`Verifier::verify`] but returns failure delays instead of waiting them out.
    pub async fn verify_deferred(&self, attempt: Attempt) -> Deferred {
        self.answer(attempt, None::<std::future::Ready<ProofCheck>>)
            .await
    }

    /// One attempt with its counters, metrics and audit event; `proof`, when given, is
    /// checked instead of the attempt's secret.
    async fn answer<F>(&self, mut attempt: Attempt, proof: Option<F>) -> Deferred
    where
        F: std::future::Future<Output = ProofCheck>,
    {
        let inner = &*self.inner;
        let n = inner.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        inner.metrics.in_flight(n);
        let _guard = InFlight(inner);
        let protocol = attempt.protocol;
        let start = inner.clock.now();
        // What the audit event needs after `run` has consumed the attempt.
        let audit = inner.audit.get().map(|sink| {
            let who = (
                attempt.kind,
                attempt.principal.clone(),
                attempt.source,
                attempt.station.clone(),
                std::mem::take(&mut attempt.context),
            );
            (sink, who)
        });
        let mut note = Note::default();
        let (d, class) = self.run(attempt, proof, &mut note).await;
        let counter = match d.outcome {
            Outcome::Accepted { .. } => &inner.counts.accepted,
            Outcome::Rejected => &inner.counts.rejected,
            Outcome::Throttled { .. } => &inner.counts.throttled,
            Outcome::Overloaded { .. } => &inner.counts.overloaded,
            Outcome::Unavailable { .. } => &inner.counts.unavailable,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let c = match class {
            Class::Trusted => 0,
            Class::Unknown => 1,
            Class::Suspect => 2,
        };
        inner.counts.by_class[c].fetch_add(1, Ordering::Relaxed);
        inner.metrics.attempt(&d.outcome, class, protocol);
        if let Some((sink, who)) = audit {
            let latency = inner.clock.now().saturating_duration_since(start);
            sink.record(crate::audit::verdict_event(
                who,
                protocol,
                &d.outcome,
                note.reason,
                latency,
                class,
                note.directory,
            ));
        }
        d
    }

    /// The principals under a distributed attack now (at most `limit`, longest first):
    /// kind, principal, failing origins in the detection window, time the state lasts.
    pub fn under_attack(&self, limit: usize) -> Vec<(PrincipalKind, String, usize, Duration)> {
        self.inner
            .spread
            .under_attack(self.inner.clock.now(), limit)
    }

    /// Queue depth, busy threads and counters.
    pub fn snapshot(&self) -> PoolSnapshot {
        let i = &*self.inner;
        let p = i.pool.stats();
        PoolSnapshot {
            threads: p.threads,
            busy_threads: p.busy,
            queued: p.queued,
            in_service: p.in_service,
            queued_by_class: p.queued_by_class,
            queued_rehash: p.queued_background,
            in_flight: i.in_flight.load(Ordering::Relaxed),
            hashes_computed: p.hashes,
            lanes_helped: p.lanes_helped,
            batches: p.batches,
            largest_batch: p.largest_batch,
            queue_wait_us_total: p.wait_us,
            queue_waits: p.waits,
            attempts_by_class: [0, 1, 2].map(|c| i.counts.by_class[c].load(Ordering::Relaxed)),
            cheap_verifications: i.counts.cheap.load(Ordering::Relaxed),
            shed: p.shed,
            throttled: i.counts.throttled.load(Ordering::Relaxed),
            accepted: i.counts.accepted.load(Ordering::Relaxed),
            rejected: i.counts.rejected.load(Ordering::Relaxed),
            overloaded: i.counts.overloaded.load(Ordering::Relaxed),
            unavailable: i.counts.unavailable.load(Ordering::Relaxed),
            rehashed: i.counts.rehashed.load(Ordering::Relaxed),
            memory_budget_bytes: p.memory.budget,
            memory_held_bytes: p.memory.held,
            memory_peak_bytes: p.memory.peak,
            median_hash_time: p.median,
            codel_target: p.target,
            codel_interval: p.interval,
            shutting_down: p.shutdown,
        }
    }

    /// Stop accepting work (new attempts are answered "overloaded"), let the workers drain
    /// what is queued, then let them exit. Does not block; see [`Verifier::drain`].
    pub fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::Relaxed);
        self.inner.pool.shutdown();
    }

    /// [`Verifier::shutdown`], then wait until the hash threads have finished what was
    /// queued and exited, and every rehash-on-login upgrade already computed has reached
    /// the store. A server calls this after its last request is answered, so that an
    /// upgrade a user's login paid for is not lost to the exit.
    pub async fn drain(&self) {
        self.shutdown();
        let inner = Arc::clone(&self.inner);
        // Joining blocks: off the runtime's worker threads.
        let _ = tokio::task::spawn_blocking(move || inner.pool.join()).await;
        let i = &*self.inner;
        loop {
            // Registered before the check, so a write finishing in between still wakes us.
            let done = i.rehash_done.notified();
            if i.rehash_writes.load(Ordering::SeqCst) == 0 {
                return;
            }
            done.await;
        }
    }

    /// The path of one attempt (module doc); `reason` is set to the audit reason of the
    /// verdict.
    async fn run<F>(&self, attempt: Attempt, proof: Option<F>, note: &mut Note) -> (Deferred, Class)
    where
        F: std::future::Future<Output = ProofCheck>,
    {
        let reason = &mut note.reason;
        let Attempt {
            kind,
            principal,
            secret,
            source,
            station,
            protocol: _,
            deadline,
            context: _,
        } = attempt;
        let adm = match self
            .admit(kind, principal, source, station, deadline, reason)
            .await
        {
            Ok(adm) => adm,
            Err(answer) => return answer,
        };
        match proof {
            Some(check) => self.run_proof(adm, check, reason).await,
            // 2.-6. Look up and verify.
            None => self.run_secret(adm, secret, note).await,
        }
    }

    /// Steps 2-6 for a secret: look up, cheap credentials inline, KDFs on the pool.
    async fn run_secret(
        &self,
        mut adm: Admitted,
        secret: Zeroizing<Vec<u8>>,
        note: &mut Note,
    ) -> (Deferred, Class) {
        let i = &*self.inner;
        let reason = &mut note.reason;
        let (kind, start, deadline, trusted) = (adm.kind, adm.start, adm.deadline, adm.trusted);
        let class = adm.class;
        let budget = deadline.saturating_duration_since(i.clock.now());
        let looked = tokio::time::timeout(budget, i.source.credentials(kind, &adm.principal));
        let stored = match looked.await {
            Ok(Ok(s)) => s,
            Ok(Err(_)) | Err(_) => {
                // Nothing is charged yet, so nothing to give back.
                metrics::store_error("credentials");
                *reason = "store_unavailable";
                return (self.overloaded(Duration::from_secs(1)), class);
            }
        };
        if stored.is_none() && kind == PrincipalKind::User {
            let remote = i.remote.get().and_then(|r| r.route(&adm.principal));
            if let Some(route) = remote {
                return self.run_remote(adm, route, secret, note).await;
            }
        }
        let mut creds: Vec<(String, Credential)> = Vec::new();
        if let Some(s) = stored.filter(|s| !s.disabled) {
            for h in s.hashes {
                match Credential::parse(&h) {
                    Ok(c) => creds.push((h, c)),
                    // An unparseable stored hash matches nothing; the other one may.
                    Err(_) => metrics::bad_stored_hash(),
                }
            }
        }

        let (cheap, kdf): (Vec<_>, Vec<_>) = creds
            .into_iter()
            .partition(|(_, c)| c.cost() == Cost::Cheap);

        // Reserve before any hash (and for unknown principals, which mimic one): a flood
        // must not get more than a burst of hashes in before its first failure counts.
        if cheap.is_empty() || !kdf.is_empty() {
            match self.charge(&mut adm).await {
                Decision::Denied { retry_after } => {
                    *reason = BUDGET_EXHAUSTED;
                    return self.throttled(trusted, retry_after);
                }
                Decision::Allowed { fills } => {
                    adm.class = self.classify(trusted, &fills);
                    adm.charged = true;
                }
            }
        }
        let class = adm.class;

        // 3. Unknown principal.
        if cheap.is_empty() && kdf.is_empty() {
            *reason = UNKNOWN_PRINCIPAL;
            return (self.unknown(&adm).await, class);
        }

        // 4. Cheap credentials inline.
        for (old, c) in &cheap {
            i.counts.cheap.fetch_add(1, Ordering::Relaxed);
            let peppers = Arc::clone(&i.peppers.read());
            if matches!(c.verify(&secret, &peppers), Ok(true)) {
                self.record_latency(kind, start);
                *reason = "secret_matched";
                return (self.accepted(&adm, old, c, secret).await, class);
            }
        }
        if kdf.is_empty() {
            self.record_latency(kind, start);
            // Charged only now that it failed. If a concurrent failure used the last of
            // the budget, this one is not charged again (the budget is exhausted anyway).
            let _ = self.charge(&mut adm).await;
            *reason = WRONG_SECRET;
            return (self.rejected(&adm), class);
        }

        // 5. The pool.
        let cost = kdf
            .iter()
            .map(|(_, c)| match c.cost() {
                Cost::Work(w) => w,
                Cost::Cheap => 1,
            })
            .fold(0u64, u64::saturating_add)
            .max(1);
        let key = match kdf.as_slice() {
            [(_, c)] => c.batch_key(),
            _ => None,
        };
        let secret = Arc::new(secret);
        let (tx, rx) = oneshot::channel();
        let job = VerifyJob {
            secret: Arc::clone(&secret),
            creds: kdf.iter().map(|(_, c)| c.clone()).collect(),
            cost,
            key,
            enqueued_at: i.clock.now(),
            deadline,
            reply: tx,
        };
        if let Err(r) = i.pool.submit(class, adm.flow, job) {
            i.pool.count_shed();
            metrics::shed(r.label());
            *reason = r.label();
            return (self.shed_answer(&adm, refusal_wait(r)).await, class);
        }
        match rx.await {
            Ok(JobReply::Done { matched, .. }) => {
                // Until this task resumed: the mimic aims at the same moment and
                // corrects its own wake-up (`answer_delay`).
                self.record_latency(kind, start);
                match matched.and_then(|m| kdf.get(m)) {
                    Some((old, c)) => {
                        let secret = Arc::unwrap_or_clone(secret);
                        *reason = "secret_matched";
                        (self.accepted(&adm, old, c, secret).await, class)
                    }
                    None => {
                        *reason = WRONG_SECRET;
                        (self.rejected(&adm), class)
                    }
                }
            }
            Ok(JobReply::Shed(why)) => {
                *reason = why.label();
                (self.shed_answer(&adm, i.pool.params().target).await, class)
            }
            Err(_) => {
                *reason = "hash_failed";
                self.refund(&adm.charges).await;
                let wait = i.pool.params().target;
                (self.overloaded(wait), class)
            }
        }
    }

    async fn accepted(
        &self,
        adm: &Admitted,
        old: &str,
        cred: &Credential,
        secret: Zeroizing<Vec<u8>>,
    ) -> Deferred {
        let i = &*self.inner;
        self.succeeded(adm).await;
        let needs_rehash = i.policy.needs_rehash(cred);
        if needs_rehash {
            self.spawn_rehash(adm.kind, &adm.principal, old, secret);
        }
        now_answer(Outcome::Accepted { needs_rehash })
    }
}

fn kind_idx(k: PrincipalKind) -> usize {
    match k {
        PrincipalKind::Client => 0,
        PrincipalKind::User => 1,
    }
}
