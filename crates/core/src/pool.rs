//! The hash pool: a fixed set of dedicated OS threads that run every KDF.
//!
//! Never tokio's blocking pool and never a runtime worker: a KDF holds a core for
//! hundreds of milliseconds, and the runtime must stay free to answer throttled and
//! overloaded attempts in microseconds. Callers queue a [`VerifyJob`] through
//! [`Pool::submit`] (admission: capacity and deadline feasibility) and await its
//! [`JobReply`] on a oneshot channel; workers take jobs in the order the
//! [`Scheduler`] decides and shed late ones at dequeue.
//!
//! Batching: when a worker picks a PBKDF2 job and more queued jobs share its parameters
//! than there are other idle workers to take them, it gathers up to
//! `batch::preferred_batch(prf)` of them (in scheduler order) into one
//! `batch::derive` call; otherwise it derives single-stream. Idle pool: lowest latency;
//! busy pool: most derivations per second. With few jobs in flight it takes only its part
//! of the split between the threads that derives the most per second (`width.rs`).
//!
//! Rehash jobs go to a separate background queue served only when no verification is
//! waiting, so upgrading stored hashes never delays an answer.
//!
//! Memory: argon2 and scrypt jobs take their working memory from a budget
//! ([`crate::memory`]) before they hash, and wait for it when it is spent.
//!
//! Lanes: an argon2 job with p > 1 lends the lanes of each slice to the pool's own
//! threads (`argon2_kernel::Lent`): the slice's [`LaneWork`] goes on a queue that idle
//! workers serve before any new job, one lane per pick-up, and the job's own thread runs
//! every lane nobody picked up, then waits only for lanes a helper is already running.
//! So a pool whose every thread holds a p > 1 job still finishes them all (each runs its
//! own lanes), no thread is ever spawned per hash, and the lanes share the memory the job
//! already took from the budget (a helper holds none of its own for them).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use portcullis_hash::argon2_kernel::LaneWork;
use portcullis_hash::{BatchKey, Credential, Peppers, batch};
use tokio::sync::oneshot;
use zeroize::Zeroizing;

use crate::attempt::Class;
use crate::clock::Clock;
use crate::config::{CodelConfig, VerifierConfig};
use crate::error::CoreError;
use crate::memory::{MemoryBudget, MemoryStats};
use crate::metrics;
use crate::scheduler::{DequeueParams, Flow, Schedulable, Scheduler, ShedReason, Take};
use crate::stats::HashTimes;

mod compute;
mod reserve;
mod width;
use reserve::{MAX_TRUSTED_GRACE, TrustedReserve};
pub(crate) use width::{best_share, deadline_width, gather_window};

/// One verification for the pool: a secret against one or two KDF credentials.
pub(crate) struct VerifyJob {
    /// The presented secret (shared with the caller for a possible rehash).
    pub secret: Arc<Zeroizing<Vec<u8>>>,
    /// The KDF credentials to try, in order; the first match wins.
    pub creds: Vec<Credential>,
    /// Summed expected cost.
    pub cost: u64,
    /// Set only for a single PBKDF2 credential (batchable).
    pub key: Option<BatchKey>,
    /// When it was queued (CoDel sojourn).
    pub enqueued_at: Instant,
    /// When the answer becomes useless.
    pub deadline: Instant,
    /// Where the verdict goes.
    pub reply: oneshot::Sender<JobReply>,
}

impl Schedulable for VerifyJob {
    fn cost(&self) -> u64 {
        self.cost
    }
    fn enqueued_at(&self) -> Instant {
        self.enqueued_at
    }
    fn deadline(&self) -> Instant {
        self.deadline
    }
    fn batch_key(&self) -> Option<BatchKey> {
        self.key
    }
    fn is_cancelled(&self) -> bool {
        self.reply.is_closed()
    }
}

/// What the pool did with a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobReply {
    /// Hashed.
    Done {
        /// Index into `creds` of the credential that matched.
        matched: Option<usize>,
        /// A credential could not be verified (e.g. unknown pepper); counts as no match.
        error: bool,
        /// Enqueue to pick-up.
        queue_wait: Duration,
    },
    /// Dropped before hashing.
    Shed(ShedReason),
}

/// Why [`Pool::submit`] refused a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The pool is shutting down.
    Shutdown,
    /// `queue_capacity` jobs are waiting.
    Full(Duration),
    /// The job would not finish before its deadline; carries the expected finish delay.
    Infeasible(Duration),
}

impl Refusal {
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Refusal::Shutdown => "shutdown",
            Refusal::Full(_) => "queue_full",
            Refusal::Infeasible(_) => "infeasible",
        }
    }
}

/// The pepper keys, shared by the verifier (cheap checks) and the pool, replaced whole
/// when the secrets file is reloaded; readers clone the inner `Arc` and let go at once.
pub(crate) type SharedPeppers = Arc<parking_lot::RwLock<Arc<Peppers>>>;

/// A unit of background work (rehash).
pub(crate) type Background = Box<dyn FnOnce() + Send + 'static>;

/// Runs inside every job on the worker thread (tests record where hashing happens).
pub(crate) type JobHook = Arc<dyn Fn() + Send + Sync + 'static>;

struct State {
    sched: Scheduler<VerifyJob>,
    background: VecDeque<Background>,
    /// Argon2 lanes lent by jobs in service, served before new work (they finish a job
    /// already started, and free its memory sooner).
    lanes: VecDeque<LaneWork>,
    shutdown: bool,
    /// Workers waiting on the condvar.
    idle: usize,
    /// The trusted class's arrivals and jobs in service: while it is active its share
    /// is reserved, not lent ([`Take::ReserveTrusted`]).
    trusted: TrustedReserve,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when work arrives or on shutdown.
    work: Condvar,
    threads: usize,
    background_capacity: usize,
    busy: AtomicUsize,
    /// Jobs taken by workers and not yet answered.
    in_service: AtomicUsize,
    hashes: AtomicU64,
    /// Argon2 lanes run by a thread other than their job's (issue 26).
    lanes_helped: AtomicU64,
    batches: AtomicU64,
    /// The widest batch run so far: whether saturation reached the widest kernel.
    largest_batch: AtomicUsize,
    /// The hash crate's count of in-service kernel switches last published: a batch that
    /// sees it move republishes the kernel gauges (issue 26).
    kernel_changes: AtomicU64,
    /// Summed queue wait (microseconds) and count of the jobs that reached a thread: the
    /// status page's mean wait per second comes from their differences.
    wait_us: AtomicU64,
    waits: AtomicU64,
    shed: AtomicU64,
    times: Mutex<HashTimes>,
    codel: CodelConfig,
    peppers: SharedPeppers,
    clock: Arc<dyn Clock>,
    hook: Option<JobHook>,
    memory: MemoryBudget,
}

/// Handle to the pool; the threads hold their own reference to the shared state.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    /// The workers, joined by [`Pool::join`] once shut down and drained.
    handles: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// Counters for [`crate::PoolSnapshot`].
pub(crate) struct PoolStats {
    pub threads: usize,
    pub busy: usize,
    pub in_service: usize,
    pub queued: usize,
    pub queued_by_class: [usize; 3],
    pub queued_background: usize,
    pub hashes: u64,
    pub lanes_helped: u64,
    pub batches: u64,
    pub largest_batch: usize,
    pub wait_us: u64,
    pub waits: u64,
    pub shed: u64,
    pub median: Duration,
    pub target: Duration,
    pub interval: Duration,
    pub shutdown: bool,
    pub memory: MemoryStats,
}

impl Pool {
    /// Start `config.resolved_pool_threads()` workers.
    pub(crate) fn start(
        config: &VerifierConfig,
        peppers: SharedPeppers,
        clock: Arc<dyn Clock>,
        hook: Option<JobHook>,
    ) -> Result<Pool, CoreError> {
        let threads = config.resolved_pool_threads();
        // Time the batch kernels now, before any traffic: the first batch would otherwise
        // pay for it, and a measurement under load would be skewed.
        metrics::hash_kernels();
        metrics::register_series();
        let s = config.shares;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                sched: Scheduler::new(
                    [s.trusted, s.unknown, s.suspect],
                    config.queues_per_class,
                    config.hand_size,
                    config.queue_capacity,
                ),
                background: VecDeque::new(),
                lanes: VecDeque::new(),
                shutdown: false,
                idle: 0,
                trusted: TrustedReserve::default(),
            }),
            work: Condvar::new(),
            threads,
            background_capacity: config.rehash_queue_capacity,
            busy: AtomicUsize::new(0),
            in_service: AtomicUsize::new(0),
            hashes: AtomicU64::new(0),
            lanes_helped: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            largest_batch: AtomicUsize::new(0),
            kernel_changes: AtomicU64::new(portcullis_hash::kernel_choice_changes()),
            wait_us: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            times: Mutex::new(HashTimes::new(Duration::from_millis(
                config.initial_hash_estimate_ms,
            ))),
            codel: config.codel,
            peppers,
            clock,
            hook,
            memory: MemoryBudget::new(config.resolved_memory_budget(), threads),
        });
        let pool = Pool {
            shared,
            handles: Mutex::new(Vec::with_capacity(threads)),
        };
        for i in 0..threads {
            let shared = Arc::clone(&pool.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("portcullis-hash-{i}"))
                .spawn(move || shared.worker());
            match spawned {
                Ok(handle) => pool.handles.lock().push(handle),
                Err(e) => {
                    pool.shutdown();
                    return Err(CoreError::Spawn(e));
                }
            }
        }
        metrics::pool_threads(threads);
        metrics::pool_busy(0);
        Ok(pool)
    }

    /// Check admission for a job of `cost` for `flow` in `class` without queueing it.
    pub(crate) fn check(
        &self,
        class: Class,
        flow: Flow,
        cost: u64,
        deadline: Instant,
        now: Instant,
    ) -> Result<(), Refusal> {
        let st = self.shared.state.lock();
        self.shared.admit(&st, class, flow, cost, deadline, now)
    }

    /// Queue `job` if it can finish before its deadline and there is room.
    pub(crate) fn submit(&self, class: Class, flow: Flow, job: VerifyJob) -> Result<(), Refusal> {
        let mut st = self.shared.state.lock();
        let now = job.enqueued_at;
        self.shared
            .admit(&st, class, flow, job.cost, job.deadline, now)?;
        if class == Class::Trusted {
            st.trusted.arrived(Instant::now());
        }
        if st.sched.push(class, &flow.group, flow.member, job).is_err() {
            let wait = self.shared.params().service(crate::stats::REFERENCE_COST);
            return Err(Refusal::Full(wait));
        }
        self.shared.gauges(&st);
        drop(st);
        self.shared.work.notify_one();
        Ok(())
    }

    /// Queue background work; `false` if the background queue is full or shutting down.
    pub(crate) fn submit_background(&self, work: Background) -> bool {
        let mut st = self.shared.state.lock();
        if st.shutdown || st.background.len() >= self.shared.background_capacity {
            return false;
        }
        st.background.push_back(work);
        drop(st);
        self.shared.work.notify_one();
        true
    }

    /// Stop accepting work; workers drain the queues and exit.
    pub(crate) fn shutdown(&self) {
        self.shared.state.lock().shutdown = true;
        self.shared.work.notify_all();
    }

    /// Block until every worker has exited: after [`Pool::shutdown`], once the queued
    /// verifications and background work are done.
    pub(crate) fn join(&self) {
        let handles = std::mem::take(&mut *self.handles.lock());
        for handle in handles {
            // Jobs run under `catch_unwind`; a worker that still panicked (a bug) has
            // been reported by the panic hook, and there is nothing left to drain.
            let _ = handle.join();
        }
    }

    pub(crate) fn params(&self) -> DequeueParams {
        self.shared.params()
    }

    pub(crate) fn stats(&self) -> PoolStats {
        let sh = &self.shared;
        let (queued, by_class, bg, shutdown) = {
            let st = sh.state.lock();
            (
                st.sched.len(),
                [Class::Trusted, Class::Unknown, Class::Suspect].map(|c| st.sched.class_len(c)),
                st.background.len(),
                st.shutdown,
            )
        };
        let p = sh.params();
        PoolStats {
            threads: sh.threads,
            busy: sh.busy.load(Ordering::Relaxed),
            in_service: sh.in_service.load(Ordering::SeqCst),
            queued,
            queued_by_class: by_class,
            queued_background: bg,
            hashes: sh.hashes.load(Ordering::Relaxed),
            lanes_helped: sh.lanes_helped.load(Ordering::Relaxed),
            batches: sh.batches.load(Ordering::Relaxed),
            largest_batch: sh.largest_batch.load(Ordering::Relaxed),
            wait_us: sh.wait_us.load(Ordering::Relaxed),
            waits: sh.waits.load(Ordering::Relaxed),
            shed: sh.shed.load(Ordering::Relaxed),
            median: sh.times.lock().median(),
            target: p.target,
            interval: p.interval,
            shutdown,
            memory: sh.memory.stats(),
        }
    }

    /// Median wall time of one pool run.
    pub(crate) fn median_hash_time(&self) -> Duration {
        self.shared.times.lock().median()
    }

    /// A calibration hash's time, while the pool has measured none ([`HashTimes::seed`]).
    pub(crate) fn seed_hash_time(&self, took: Duration, cost: u64) {
        self.shared.times.lock().seed(took, cost);
    }

    /// Median cost units of one job.
    pub(crate) fn typical_cost(&self) -> u64 {
        self.shared.times.lock().job_cost()
    }

    /// Count a job shed outside the pool (refused at submit).
    pub(crate) fn count_shed(&self) {
        self.shared.shed.fetch_add(1, Ordering::Relaxed);
    }
}

impl Shared {
    fn params(&self) -> DequeueParams {
        let (median, ns_per_unit) = {
            let t = self.times.lock();
            (t.median(), t.ns_per_unit())
        };
        let target = match self.codel.target_ms {
            Some(ms) => Duration::from_millis(ms),
            None => median.clamp(Duration::from_millis(1), Duration::from_secs(10)),
        };
        let interval = match self.codel.interval_ms {
            Some(ms) => Duration::from_millis(ms),
            None => target * 10,
        };
        DequeueParams {
            target,
            interval,
            ns_per_unit,
        }
    }

    fn admit(
        &self,
        st: &State,
        class: Class,
        flow: Flow,
        cost: u64,
        deadline: Instant,
        now: Instant,
    ) -> Result<(), Refusal> {
        if st.shutdown {
            return Err(Refusal::Shutdown);
        }
        let p = self.params();
        let mut finish = st.sched.estimate_finish(
            class,
            &flow.group,
            flow.member,
            cost,
            self.threads,
            p.ns_per_unit,
        );
        if st.idle == 0 {
            // Every thread is busy: on average half a job remains before one frees up.
            finish += p.service(cost) / 2;
        }
        if st.sched.len() >= st.sched_capacity() {
            return Err(Refusal::Full(finish));
        }
        if now + finish > deadline {
            return Err(Refusal::Infeasible(finish));
        }
        Ok(())
    }

    fn gauges(&self, st: &State) {
        metrics::queue_depth(
            [Class::Trusted, Class::Unknown, Class::Suspect].map(|c| st.sched.class_len(c)),
            st.background.len(),
        );
    }

    fn worker(self: Arc<Self>) {
        // Bytes of argon2 arena this thread keeps between hashes, counted in the budget.
        let mut retained = 0u64;
        while let Some(work) = self.next_work() {
            let busy = self.busy.fetch_add(1, Ordering::Relaxed) + 1;
            metrics::pool_busy(busy);
            if let Some(hook) = &self.hook {
                hook();
            }
            match work {
                Work::Verify(batch) => {
                    let need = batch
                        .iter()
                        .flat_map(|(j, _)| j.creds.iter().map(Credential::memory_bytes))
                        .max()
                        .unwrap_or(0);
                    let extra = self.memory.acquire(need, retained);
                    self.run_verify(batch);
                    retained = self.settle_memory(retained, extra);
                }
                Work::Lanes(work) => {
                    // The lane runs in the lending job's memory, already counted in the
                    // budget by its thread: nothing to acquire or settle here.
                    if work.help() {
                        self.lanes_helped.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Work::Background(f) => {
                    // Counted when started, like verifications, so the count never lags
                    // behind what the work's result has already caused.
                    self.hashes.fetch_add(1, Ordering::Relaxed);
                    // A panic in background work must not take the thread down.
                    let _ = catch_unwind(AssertUnwindSafe(f));
                    // A rehash to argon2 may have grown this thread's arena: count it
                    // (or give it back) like a verification's.
                    retained = self.settle_memory(retained, 0);
                }
            }
            let busy = self.busy.fetch_sub(1, Ordering::Relaxed) - 1;
            metrics::pool_busy(busy);
        }
    }

    /// After a job that took `extra` bytes on a thread that kept `retained`: give the
    /// thread's argon2 arena back if it is over the retention limit, tell the budget what
    /// the thread keeps now, and return that.
    fn settle_memory(&self, retained: u64, extra: u64) -> u64 {
        let mut keep = portcullis_hash::argon2_kernel::thread_arena_bytes() as u64;
        if keep > self.memory.retain_limit() {
            portcullis_hash::argon2_kernel::release_thread_arena();
            keep = 0;
        }
        if keep != retained || extra != 0 {
            self.memory.release(retained, extra, keep);
        }
        keep
    }

    /// Block until there is work; `None` once shut down and drained.
    fn next_work(&self) -> Option<Work> {
        let mut shed = Vec::new();
        let mut st = self.state.lock();
        loop {
            // Lanes of a job in service first: bounded (one segment), and the job they
            // belong to holds a thread and memory until its last lane is done.
            while let Some(work) = st.lanes.front() {
                if work.exhausted() {
                    st.lanes.pop_front();
                } else {
                    return Some(Work::Lanes(work.clone()));
                }
            }
            let now = self.clock.now();
            let p = self.params();
            // How long the trusted class counts as active after its last job arrived:
            // two hash times covers a closed-loop client's turn-around many times over
            // and ends soon after its last request, so the share is never held for
            // nobody. Real time: the reserve must end even under a test's manual clock.
            let grace = (self.times.lock().median() * 2).min(MAX_TRUSTED_GRACE);
            let reserve_until = st.trusted.until(grace, Instant::now());
            let take = match reserve_until {
                Some(_) => Take::ReserveTrusted,
                None => Take::Any,
            };
            let first = st.sched.pop_from(now, &p, None, take, &mut shed);

            self.answer_shed(&mut shed, now);
            if let Some(first) = first {
                let only = Take::Only(first.1);
                let mut batch = vec![first];
                if let Some(key) = batch[0].0.key {
                    // Batch only the work other idle workers could not start right away,
                    // or what may come back while every thread is busy (below). Only this
                    // class's queue counts: a wave's guesses waiting for their class's
                    // turn cannot join this batch, and counting them made one worker take
                    // every trusted job and leave the idle one nothing (issue 41).
                    let spare = st.sched.class_len(batch[0].1).saturating_sub(st.idle);
                    let others_busy =
                        self.threads > 1 && self.busy.load(Ordering::Relaxed) + 1 >= self.threads;
                    // As wide as the kernel likes, but only as wide as the earliest
                    // deadline in the batch allows: every job of a batch finishes when
                    // the widest group does. A lone job on an idle pool skips all this.
                    let alone = {
                        let t = self.times.lock();
                        Duration::from_nanos(
                            (t.single_ns_per_unit() * batch[0].0.cost as f64).min(1e18) as u64,
                        )
                    };
                    let run_time = |k| alone.mul_f64(batch::batch_time_factor(key.prf, k));
                    let slack = batch[0].0.deadline.saturating_duration_since(now);
                    let class = batch[0].1;
                    let want = if spare == 0 && !others_busy {
                        1
                    } else if take == Take::ReserveTrusted && class != Class::Trusted {
                        // While the trusted class is reserved, another class's turn is
                        // one derivation's time: a class newly active starts behind the
                        // trusted one, and its first turn filled a whole batch at once
                        // (sixteen guesses, six singles' time of a thread, in a wave's
                        // first second; issue 41). Its share is served a turn at a time.
                        // (In units of one derivation: `alone` is 0 before any is timed.)
                        let single = Duration::from_secs(1);
                        deadline_width(batch::preferred_batch(key.prf), single, |k| {
                            single.mul_f64(batch::batch_time_factor(key.prf, k))
                        })
                    } else {
                        deadline_width(batch::preferred_batch(key.prf), slack, run_time)
                    };
                    // With few jobs in flight, only this worker's part of the fastest split
                    // between the threads (`best_share`), counted again as clients come
                    // back during the gathering below.
                    let elsewhere = self.in_service.load(Ordering::SeqCst);
                    let time: Vec<f64> = (0..=want)
                        .map(|k| batch::batch_time_factor(key.prf, k))
                        .collect();
                    let limit = |st: &State, taken: usize| {
                        let active = taken + st.sched.class_len(class) + elsewhere;
                        want.min(best_share(active, self.threads, &time))
                    };
                    let first_limit = limit(&st, 1);
                    for _ in 0..(first_limit - 1).min(spare) {
                        match st.sched.pop_from(now, &p, Some(key), only, &mut shed) {
                            Some(j) => batch.push(j),
                            None => break,
                        }
                    }
                    // Every thread busy and the batch not full: lanes would run empty at
                    // almost no saving in wall time, so wait a sliver of the batch's run
                    // for the clients just answered to come back (`gather_window`). An
                    // idle pool never waits: lowest latency when idle.
                    let window = gather_window(run_time(first_limit), slack);
                    let until = std::time::Instant::now() + window;
                    while batch.len() < limit(&st, batch.len())
                        && others_busy
                        && st.idle == 0
                        && !st.shutdown
                        && !window.is_zero()
                        && !self.work.wait_until(&mut st, until).timed_out()
                    {
                        let now = self.clock.now();
                        while batch.len() < limit(&st, batch.len()) {
                            match st.sched.pop_from(now, &p, Some(key), only, &mut shed) {
                                Some(j) => batch.push(j),
                                None => break,
                            }
                        }
                    }
                    self.answer_shed(&mut shed, now);
                    // Charge the class the batch's time, not its job count (`rebate`).
                    let total = batch.iter().map(|(j, _)| j.cost).sum();
                    let n = batch.len();
                    st.sched
                        .rebate(class, total, n, time.get(n).copied().unwrap_or(n as f64));
                }
                self.gauges(&st);
                self.in_service.fetch_add(batch.len(), Ordering::SeqCst);
                if batch[0].1 == Class::Trusted {
                    st.trusted.taken(batch.len());
                }
                return Some(Work::Verify(batch));
            }
            if let Some(bg) = st.background.pop_front() {
                self.gauges(&st);
                return Some(Work::Background(bg));
            }
            if st.shutdown {
                // Wake the others so they see the empty queues and exit too.
                self.work.notify_all();
                return None;
            }
            st.idle += 1;
            match reserve_until {
                // Held back for the trusted class: look again when the reserve ends, or
                // (trusted jobs in service) when they are answered, which notifies.
                Some(until) if st.sched.reserved() && !st.trusted.in_service() => {
                    let _ = self.work.wait_until(&mut st, until);
                }
                _ => self.work.wait(&mut st),
            }
            st.idle -= 1;
        }
    }

    /// Answer the jobs the scheduler shed at dequeue (late or abandoned), counting them.
    fn answer_shed(&self, shed: &mut Vec<(VerifyJob, Class, ShedReason)>, now: Instant) {
        for (job, class, reason) in shed.drain(..) {
            self.shed.fetch_add(1, Ordering::Relaxed);
            metrics::shed(reason.label());
            metrics::queue_wait(class, now.saturating_duration_since(job.enqueued_at));
            let _ = job.reply.send(JobReply::Shed(reason));
        }
    }

    fn run_verify(&self, batch: Vec<(VerifyJob, Class)>) {
        let start = self.clock.now();
        let outcome = catch_unwind(AssertUnwindSafe(|| self.compute(&batch)));
        let took = self.clock.now().saturating_duration_since(start);
        let total: u64 = batch.iter().map(|(j, _)| j.cost).sum();
        // Batches hold one class: a trusted one's clients come back after these answers.
        let trusted = batch[0].1 == Class::Trusted;
        let n = batch.len();
        // How many single derivations' time this run took: the batch kernel's plan, or
        // one after another when the jobs could not share a batch call.
        let factor = match (&outcome, batch[0].0.key) {
            (Ok((_, true)), Some(key)) => batch::batch_time_factor(key.prf, batch.len()),
            _ => batch.len() as f64,
        };
        self.times.lock().record(took, total, batch.len(), factor);
        if batch.len() >= 2 {
            self.batches.fetch_add(1, Ordering::Relaxed);
        }
        self.largest_batch.fetch_max(batch.len(), Ordering::Relaxed);
        metrics::batch_size(batch.len());
        let changes = portcullis_hash::kernel_choice_changes();
        if self.kernel_changes.swap(changes, Ordering::Relaxed) != changes {
            metrics::hash_kernels_switched();
        }
        let results = match outcome {
            Ok((r, _)) => r,
            // A bug in a KDF must cost one answer, not a pool thread.
            Err(_) => vec![(None, true); batch.len()],
        };
        for ((job, class), (matched, error)) in batch.into_iter().zip(results) {
            let queue_wait = start.saturating_duration_since(job.enqueued_at);
            metrics::queue_wait(class, queue_wait);
            let us = u64::try_from(queue_wait.as_micros()).unwrap_or(u64::MAX);
            self.wait_us.fetch_add(us, Ordering::Relaxed);
            self.waits.fetch_add(1, Ordering::Relaxed);
            metrics::pool_job(class);
            if let Some(c) = job.creds.first() {
                metrics::hash_time(c.algorithm(), took);
            }
            // Out of service before the answer leaves, so whoever sees the answer (the
            // status page, a test) never still sees its job in service.
            self.in_service.fetch_sub(1, Ordering::SeqCst);
            let _ = job.reply.send(JobReply::Done {
                matched,
                error,
                queue_wait,
            });
        }
        if trusted {
            self.state.lock().trusted.answered(n, Instant::now());
            // A worker held back while these were in service times the grace from now.
            self.work.notify_all();
        }
    }
}

enum Work {
    Verify(Vec<(VerifyJob, Class)>),
    /// One lane of an argon2 slice another worker lent.
    Lanes(LaneWork),
    Background(Background),
}

impl State {
    fn sched_capacity(&self) -> usize {
        self.sched.capacity()
    }
}
