//! Which queued job the pool runs next: priority classes with work-conserving weighted
//! shares, shuffle-sharded fair queues inside each class served by deficit round robin
//! weighted by expected hash cost, and CoDel-style shedding at dequeue.
//!
//! Pure data structure: no threads, no clock (instants are passed in), so every rule is
//! tested deterministically below. The pool wraps it in a mutex.
//!
//! - **Classes.** Each class has a weight; among classes with queued work the one with
//!   the smallest virtual time (work served / weight) goes next, so competing classes
//!   split the pool by weight and an idle class lends its share (work conserving). A class
//!   that becomes active starts at the current virtual time: idleness earns no credit.
//!   The pool may ask for [`Take::ReserveTrusted`] while the trusted class was active
//!   moments ago: its share is then kept, not lent, across the short gaps of a closed
//!   loop, and batches are filled from one class only ([`Take::Only`]).
//! - **Shuffle sharding** (as Kubernetes API Priority and Fairness). A flow (source
//!   prefix) is dealt a hand of `hand_size` queues out of `queues_per_class` from a keyed
//!   hash of its key, and joins the shortest queue of its hand. A heavy flow can only
//!   fill its own hand; a light flow shares all its queues with it only if their hands
//!   coincide entirely (probability ~1/C(64,4) for the defaults).
//! - **Deficit round robin** over the non-empty queues of a class, with deficits in cost
//!   units ([`portcullis_hash::Cost::Work`]): a flow sending argon2 jobs ten times as
//!   expensive as another's PBKDF2 gets a tenth as many.
//! - **CoDel** per queue: when a queue's head has waited longer than `target` for a whole
//!   `interval`, the queue is in the dropping state and every job that waited longer than
//!   `target` is shed at dequeue (answered "overloaded" at once), until a job waits less
//!   than target or the queue empties. Shedding every late job rather than CoDel's
//!   1/sqrt(n) drop schedule suits requests (Facebook's "adaptive LIFO + CoDel" does the
//!   same). A flow with a single outstanding attempt empties its queue each time, so only
//!   flows that build a standing backlog are shed. Jobs whose deadline cannot be met and
//!   jobs whose caller is gone are dropped at dequeue as well.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use portcullis_hash::BatchKey;

use crate::attempt::Class;

/// A job's fair-queuing key as the pool passes it: `group` deals the hand (the source
/// prefix), `member` is the station behind a relaying source (see [`Scheduler::push`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Flow {
    pub(crate) group: u64,
    pub(crate) member: Option<u64>,
}

/// Which classes a pop may serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// Any class, by weighted virtual time (work conserving: an idle class lends).
    Any,
    /// The trusted class was active moments ago and is only briefly empty (its clients
    /// are between answer and next request): it keeps its place, so an untrusted class
    /// is served only while it is behind its weighted share. Without this, every gap of
    /// a millisecond lent the trusted share to a wave's queued jobs (issue 16).
    ReserveTrusted,
    /// Only this class: a batch is filled with its first job's class, so a trusted
    /// request never waits on lanes computing attacker guesses.
    Only(Class),
}

/// What the scheduler needs to know about a job.
pub(crate) trait Schedulable {
    /// Expected hash cost in cost units.
    fn cost(&self) -> u64;
    /// When it was queued.
    fn enqueued_at(&self) -> Instant;
    /// When its answer becomes useless.
    fn deadline(&self) -> Instant;
    /// Jobs with equal keys may share one batch-kernel call.
    fn batch_key(&self) -> Option<BatchKey>;
    /// The caller gave up (dropped its future).
    fn is_cancelled(&self) -> bool;
}

/// Why a job left the queue without being run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShedReason {
    /// Its queue has been above the CoDel target for an interval.
    Codel,
    /// It could no longer finish before its deadline.
    Deadline,
    /// Its caller went away.
    Cancelled,
}

impl ShedReason {
    pub(crate) const fn label(self) -> &'static str {
        match self {
            ShedReason::Codel => "codel",
            ShedReason::Deadline => "deadline",
            ShedReason::Cancelled => "cancelled",
        }
    }
}

/// Dequeue-time parameters, recomputed from measurements by the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DequeueParams {
    /// CoDel target wait.
    pub target: Duration,
    /// CoDel interval.
    pub interval: Duration,
    /// Median nanoseconds of pool time per cost unit (service time estimate).
    pub ns_per_unit: f64,
}

impl DequeueParams {
    pub(crate) fn service(&self, cost: u64) -> Duration {
        Duration::from_nanos((cost as f64 * self.ns_per_unit).min(1e18) as u64)
    }
}

const CLASSES: [Class; 3] = [Class::Trusted, Class::Unknown, Class::Suspect];
/// Virtual-time resolution: work units are multiplied by this before dividing by weight.
const VSCALE: u128 = 1 << 20;

struct FlowQueue<T> {
    jobs: VecDeque<T>,
    /// DRR deficit, in cost units.
    deficit: u64,
    /// Received its quantum for the current turn.
    fresh: bool,
    /// Summed cost of queued jobs.
    work: u64,
    /// CoDel: when the wait above target will have lasted an interval.
    first_above: Option<Instant>,
    /// CoDel: shedding late jobs.
    dropping: bool,
}

impl<T> FlowQueue<T> {
    fn new() -> Self {
        FlowQueue {
            jobs: VecDeque::new(),
            deficit: 0,
            fresh: false,
            work: 0,
            first_above: None,
            dropping: false,
        }
    }
}

struct ClassQueues<T> {
    weight: u64,
    queues: Vec<FlowQueue<T>>,
    /// Non-empty queues in round-robin order.
    active: VecDeque<usize>,
    /// Work served divided by weight, scaled by [`VSCALE`].
    vtime: u128,
    len: usize,
    work: u64,
}

/// The scheduler state (see the module docs).
pub(crate) struct Scheduler<T> {
    classes: [ClassQueues<T>; 3],
    hand_size: usize,
    /// Keys the shuffle-shard deal; random per process so hands cannot be aimed at.
    hasher: std::collections::hash_map::RandomState,
    /// Virtual time of the last served job (where newly active classes start).
    sys_vtime: u128,
    /// DRR quantum: the largest job cost seen, so a turn always affords one job (and
    /// costs in use today are PBKDF2/argon2 of similar magnitude, so turns stay short).
    quantum: u64,
    len: usize,
    capacity: usize,
}

impl<T: Schedulable> Scheduler<T> {
    pub(crate) fn new(
        weights: [u32; 3],
        queues_per_class: usize,
        hand_size: usize,
        capacity: usize,
    ) -> Self {
        let class = |w: u32| ClassQueues {
            weight: u64::from(w.max(1)),
            queues: (0..queues_per_class.max(1))
                .map(|_| FlowQueue::new())
                .collect(),
            active: VecDeque::new(),
            vtime: 0,
            len: 0,
            work: 0,
        };
        Scheduler {
            classes: [class(weights[0]), class(weights[1]), class(weights[2])],
            hand_size: hand_size.clamp(1, queues_per_class.max(1)),
            hasher: std::collections::hash_map::RandomState::new(),
            sys_vtime: 0,
            quantum: 1,
            len: 0,
            capacity,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn class_len(&self, c: Class) -> usize {
        self.classes[idx(c)].len
    }

    /// The flow's hand: `hand_size` distinct queue indices dealt from a keyed hash.
    fn hand(&self, flow: &impl std::hash::Hash, n: usize) -> impl Iterator<Item = usize> {
        let mut h = self.hasher.hash_one(flow);
        let mut dealt: Vec<usize> = Vec::with_capacity(self.hand_size);
        for i in 0..self.hand_size {
            let remaining = (n - i) as u64;
            let mut card = (h % remaining) as usize;
            h /= remaining;
            // The card-th queue not yet dealt (dealing without replacement).
            let mut sorted = dealt.clone();
            sorted.sort_unstable();
            for d in sorted {
                if d <= card {
                    card += 1;
                }
            }
            dealt.push(card);
        }
        dealt.into_iter()
    }

    /// The queue a job of `flow` would join: the shortest of its hand, or, for a
    /// `member` of a relaying flow (a station behind a NAS), the member's own card of the
    /// flow's hand. Pinning keeps one station's backlog in one queue, so deficit round
    /// robin still serves the NAS's other stations from the rest of its hand; joining the
    /// shortest queue would let a flooding station spread over all of them.
    fn choose(&self, class: Class, flow: &impl std::hash::Hash, member: Option<u64>) -> usize {
        let cq = &self.classes[idx(class)];
        if let Some(m) = member {
            let hand: Vec<usize> = self.hand(flow, cq.queues.len()).collect();
            let card = (self.hasher.hash_one(m) % hand.len() as u64) as usize;
            return hand[card];
        }
        let mut best = 0;
        let mut best_key = (usize::MAX, u64::MAX);
        for q in self.hand(flow, cq.queues.len()) {
            let key = (cq.queues[q].jobs.len(), cq.queues[q].work);
            if key < best_key {
                best_key = key;
                best = q;
            }
        }
        best
    }

    /// Queue `job`; gives it back if the scheduler is full.
    pub(crate) fn push(
        &mut self,
        class: Class,
        flow: &impl std::hash::Hash,
        member: Option<u64>,
        job: T,
    ) -> Result<(), T> {
        if self.len >= self.capacity {
            return Err(job);
        }
        let q = self.choose(class, flow, member);
        let cost = job.cost();
        self.quantum = self.quantum.max(cost);
        let sys = self.sys_vtime;
        let cq = &mut self.classes[idx(class)];
        if cq.len == 0 {
            cq.vtime = cq.vtime.max(sys);
        }
        let fq = &mut cq.queues[q];
        if fq.jobs.is_empty() {
            cq.active.push_back(q);
        }
        fq.jobs.push_back(job);
        fq.work += cost;
        cq.len += 1;
        cq.work += cost;
        self.len += 1;
        Ok(())
    }

    /// Expected time until a job of `cost` queued now for `flow` in `class` would finish,
    /// on `threads` threads at `ns_per_unit`: DRR serves, before it, at most as much of
    /// every other active queue of its class as is queued in its own, at the class's
    /// weight's fraction of the pool among the classes with work; then the job itself.
    pub(crate) fn estimate_finish(
        &self,
        class: Class,
        flow: &impl std::hash::Hash,
        member: Option<u64>,
        cost: u64,
        threads: usize,
        ns_per_unit: f64,
    ) -> Duration {
        let c = idx(class);
        let cq = &self.classes[c];
        let q = self.choose(class, flow, member);
        let mine = cq.queues[q].work + cost;
        let mut ahead = mine as u128;
        for &other in &cq.active {
            if other != q {
                ahead += u128::from(cq.queues[other].work.min(mine));
            }
        }
        let mut weights = cq.weight;
        for (i, other) in self.classes.iter().enumerate() {
            if i != c && other.len > 0 {
                weights += other.weight;
            }
        }
        let share = cq.weight as f64 / weights as f64;
        // The class's work ahead drains at its share of the pool; the job itself then
        // runs on one thread. A class with nothing queued is served at the next pick
        // whatever its weight (it starts at the current virtual time, behind every busy
        // class), so its first job waits for no share: charging it the share's rate
        // refused a newcomer whenever a trusted job was queued (issue 41's 396/3/1).
        let rest = ahead.saturating_sub(u128::from(cost));
        let parallel = rest as f64 * ns_per_unit / (threads.max(1) as f64 * share);
        let single = cost as f64 * ns_per_unit;
        Duration::from_nanos((parallel + single).min(1e18) as u64)
    }

    /// The next job to run, or `None` if nothing (matching `only`) is queued. Jobs shed on
    /// the way are appended to `shed`.
    #[cfg(test)]
    pub(crate) fn pop(
        &mut self,
        now: Instant,
        p: &DequeueParams,
        only: Option<BatchKey>,
        shed: &mut Vec<(T, Class, ShedReason)>,
    ) -> Option<(T, Class)> {
        self.pop_from(now, p, only, Take::Any, shed)
    }

    /// [`Scheduler::pop`] restricted by `take` (see [`Take`]).
    pub(crate) fn pop_from(
        &mut self,
        now: Instant,
        p: &DequeueParams,
        only: Option<BatchKey>,
        take: Take,
        shed: &mut Vec<(T, Class, ShedReason)>,
    ) -> Option<(T, Class)> {
        loop {
            let c = self.next_class(take)?;
            let class = CLASSES[c];
            let quantum = self.quantum;
            let cq = &mut self.classes[c];
            let qi = *cq.active.front()?;
            let fq = &mut cq.queues[qi];
            let head = fq.jobs.front()?;
            let cost = head.cost();
            if !fq.fresh {
                fq.deficit = fq.deficit.saturating_add(quantum);
                fq.fresh = true;
            }
            if fq.deficit < cost {
                fq.fresh = false;
                cq.active.rotate_left(1);
                continue;
            }
            if only.is_some() && head.batch_key() != only {
                return None;
            }
            let job = fq.jobs.pop_front()?;
            fq.deficit -= cost;
            fq.work -= cost;
            cq.len -= 1;
            cq.work -= cost;
            self.len -= 1;

            // CoDel bookkeeping on this job's wait.
            let sojourn = now.saturating_duration_since(job.enqueued_at());
            if sojourn < p.target {
                fq.first_above = None;
                fq.dropping = false;
            } else {
                match fq.first_above {
                    None => fq.first_above = Some(now + p.interval),
                    Some(t) if now >= t => fq.dropping = true,
                    Some(_) => {}
                }
            }
            let reason = if job.is_cancelled() {
                Some(ShedReason::Cancelled)
            } else if now + p.service(cost) > job.deadline() {
                Some(ShedReason::Deadline)
            } else if fq.dropping && sojourn > p.target {
                Some(ShedReason::Codel)
            } else {
                None
            };
            if fq.jobs.is_empty() {
                fq.deficit = 0;
                fq.fresh = false;
                fq.first_above = None;
                fq.dropping = false;
                cq.active.pop_front();
            } else if reason.is_some() {
                // A shed job consumed no pool time: its flow keeps the deficit.
                fq.deficit += cost;
            }
            match reason {
                Some(r) => shed.push((job, class, r)),
                None => {
                    // The class was the minimum among active ones: its start tag is the
                    // system virtual time newly active classes join at. Not so for a
                    // batch's further jobs, taken from the same class out of turn: their
                    // start tags would carry the system time ahead of the other classes
                    // and strip a returning trusted class of its lead (issue 16).
                    if !matches!(take, Take::Only(_)) {
                        self.sys_vtime = self.sys_vtime.max(cq.vtime);
                    }
                    cq.vtime += u128::from(cost) * VSCALE / u128::from(cq.weight);
                    return Some((job, class));
                }
            }
        }
    }

    /// Give `class` back the part of its charge that a batch of `jobs` jobs of `total`
    /// cost units did not take: on a lane kernel they run in the time of `factor` single
    /// derivations (the kernel plan's), so the class is charged that time, not the jobs'
    /// sum. The classes then split the pool's time by weight, not its job count: a wave's
    /// lone guess on one stream was charged as one of the sixteen trusted jobs a group
    /// runs in 6.1 singles' time (Xeon, AVX-512), and took 2.5 times its share of the
    /// legitimate clients' time (issue 41).
    pub(crate) fn rebate(&mut self, class: Class, total: u64, jobs: usize, factor: f64) {
        if jobs < 2 || !factor.is_finite() || factor <= 0.0 || factor >= jobs as f64 {
            return;
        }
        let spent = (total as f64 * factor / jobs as f64) as u64;
        let back = u128::from(total.saturating_sub(spent));
        let cq = &mut self.classes[idx(class)];
        cq.vtime = cq
            .vtime
            .saturating_sub(back * VSCALE / u128::from(cq.weight));
    }

    fn next_class(&self, take: Take) -> Option<usize> {
        if let Take::Only(c) = take {
            let i = idx(c);
            return (self.classes[i].len > 0).then_some(i);
        }
        let best = (0..3)
            .filter(|&i| self.classes[i].len > 0)
            .min_by_key(|&i| (self.classes[i].vtime, i))?;
        let trusted = &self.classes[idx(Class::Trusted)];
        if take == Take::ReserveTrusted
            && best != idx(Class::Trusted)
            && trusted.vtime <= self.classes[best].vtime
        {
            // The trusted class's turn, and it is only briefly empty: wait for it.
            return None;
        }
        Some(best)
    }

    /// Whether queued work is held back by [`Take::ReserveTrusted`] right now.
    pub(crate) fn reserved(&self) -> bool {
        self.len > 0 && self.next_class(Take::ReserveTrusted).is_none()
    }

    /// Take every queued job out (shutdown without draining, or tests).
    #[cfg(test)]
    pub(crate) fn drain_all(&mut self) -> Vec<T> {
        let mut out = Vec::new();
        for cq in &mut self.classes {
            for fq in &mut cq.queues {
                out.extend(fq.jobs.drain(..));
                fq.work = 0;
                fq.deficit = 0;
            }
            cq.active.clear();
            cq.len = 0;
            cq.work = 0;
        }
        self.len = 0;
        out
    }
}

fn idx(c: Class) -> usize {
    match c {
        Class::Trusted => 0,
        Class::Unknown => 1,
        Class::Suspect => 2,
    }
}

#[cfg(test)]
mod tests;
