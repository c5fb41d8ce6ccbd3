//! The load loops of a run: closed-loop virtual clients (on per-core single-threaded
//! runtimes) and open-loop groups dispatching at their intended times. The parent module
//! builds them from the scenario and collects what they record.

use super::*;

fn timed_out() -> AttemptResult {
    AttemptResult::of(Outcome::Timeout)
}

/// Run `vus` on a thread of their own with a single-threaded runtime, until they finish or
/// `hard_end`; runs them on the caller's runtime instead if no thread or runtime can be had.
pub(super) async fn run_closed_shard<D: Driver>(
    si: usize,
    vus: Vec<ClosedVu<D>>,
    hard_end: Instant,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<bool>();
    // Shared so the clients stay reachable here when the thread cannot run them.
    let vus = Arc::new(Mutex::new(vus));
    let theirs = vus.clone();
    // The runtime is built (and dropped) on the new thread: a runtime may not be dropped
    // from inside an async context.
    let spawned = std::thread::Builder::new()
        .name(format!("lab-clients-{si}"))
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                let _ = tx.send(false);
                return;
            };
            let vus = std::mem::take(&mut *theirs.lock());
            rt.block_on(run_all(vus, hard_end));
            let _ = tx.send(true);
        });
    let ran = spawned.is_ok() && rx.await.unwrap_or(false);
    if !ran {
        let left = std::mem::take(&mut *vus.lock());
        if !left.is_empty() {
            run_all(left, hard_end).await;
        }
    }
}

async fn run_all<D: Driver>(vus: Vec<ClosedVu<D>>, hard_end: Instant) {
    let mut set = JoinSet::new();
    for vu in vus {
        set.spawn(vu.run());
    }
    let joined =
        tokio::time::timeout_at(hard_end, async { while set.join_next().await.is_some() {} }).await;
    if joined.is_err() {
        set.abort_all();
    }
}

pub(super) struct ClosedVu<D: Driver> {
    pub(super) d: Arc<D>,
    pub(super) clients: Arc<Vec<D::Client>>,
    pub(super) index: usize,
    pub(super) recs: Arc<Vec<GroupRecorder>>,
    pub(super) gi: usize,
    pub(super) start: Instant,
    pub(super) end: Instant,
    pub(super) think: Duration,
    pub(super) timeout: Duration,
    pub(super) honour: bool,
    pub(super) budget: Arc<Budget>,
    pub(super) clock: RunClock,
}

impl<D: Driver> ClosedVu<D> {
    async fn run(self) {
        tokio::time::sleep_until(self.start).await;
        let g = &self.recs[self.gi];
        let client = &self.clients[self.index];
        let mut session = self.d.session();
        // One timer per client, re-armed lazily: it stays at an earlier request's deadline
        // (never later than the current one, as send times only grow) and is moved on only
        // when it fires early, so a fast exchange touches the timer wheel about once per
        // timeout rather than once per request.
        let deadline = tokio::time::sleep_until(self.start + self.timeout);
        tokio::pin!(deadline);
        let mut now = Instant::now();
        while now < self.end {
            if !self.budget.take() {
                break;
            }
            let sent = now;
            let due = sent + self.timeout;
            g.outstanding.fetch_add(1, Ordering::Relaxed);
            let res = {
                let attempt = self.d.attempt(client, &mut session);
                tokio::pin!(attempt);
                loop {
                    tokio::select! {
                        biased;
                        r = &mut attempt => break Some(r),
                        _ = &mut deadline => {
                            if Instant::now() >= due {
                                break None;
                            }
                            deadline.as_mut().reset(due);
                        }
                    }
                }
            };
            let res = res.unwrap_or_else(|| {
                if !self.d.keep_after_timeout(&mut session) {
                    session = self.d.session();
                }
                timed_out()
            });
            g.outstanding.fetch_sub(1, Ordering::Relaxed);
            let done = Instant::now();
            g.record_on(
                self.index,
                self.clock.second(done.into_std()),
                res.outcome,
                done - sent,
            );
            if res.misdelivered {
                g.misdelivered.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(p) = &res.conn {
                g.conns.record(p);
            }
            g.retransmits
                .fetch_add(u64::from(res.retransmits), Ordering::Relaxed);
            if let Some(e) = &res.eap {
                g.eap.record(e, res.outcome, done - sent);
            }
            if let Some(l) = &res.ldap {
                g.ldap.record(self.index, l, g.expects_success);
            }
            let mut pause = self.think;
            if self.honour
                && let Some(ra) = res.retry_after
            {
                pause = pause.max(ra);
            }
            now = if pause.is_zero() {
                done
            } else {
                tokio::time::sleep_until((done + pause).min(self.end)).await;
                Instant::now()
            };
        }
    }
}

pub(super) struct OpenGroup<D: Driver> {
    pub(super) d: Arc<D>,
    pub(super) clients: Arc<Vec<D::Client>>,
    pub(super) recs: Arc<Vec<GroupRecorder>>,
    pub(super) gi: usize,
    pub(super) start: Instant,
    pub(super) end: Instant,
    pub(super) arrivals: Arrivals,
    pub(super) max_outstanding: usize,
    pub(super) timeout: Duration,
    pub(super) honour: bool,
    pub(super) budget: Arc<Budget>,
    pub(super) clock: RunClock,
}

impl<D: Driver> OpenGroup<D> {
    pub(super) async fn run(self) {
        let slots = Arc::new(Semaphore::new(self.max_outstanding));
        let pools: Arc<Vec<Mutex<Vec<D::Session>>>> = Arc::new(
            (0..self.clients.len())
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
        );
        // Per client: microseconds after `start` before which a Retry-After asked it not
        // to send (Retry-After binds the client that got it, not the whole group).
        let not_before: Arc<Vec<AtomicU64>> =
            Arc::new((0..self.clients.len()).map(|_| AtomicU64::new(0)).collect());
        let mut tasks = JoinSet::new();
        let n = self.clients.len().max(1);
        for (k, offset) in self.arrivals.enumerate() {
            let intended = self.start + offset;
            if intended >= self.end {
                break;
            }
            tokio::time::sleep_until(intended).await;
            let g = &self.recs[self.gi];
            let ci = k % n;
            if self.honour
                && (Instant::now() - self.start).as_micros() as u64
                    <= not_before[ci].load(Ordering::Relaxed)
            {
                g.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if !self.budget.take() {
                break;
            }
            g.outstanding.fetch_add(1, Ordering::Relaxed);
            let (d, clients, pools, slots, recs, not_before) = (
                self.d.clone(),
                self.clients.clone(),
                pools.clone(),
                slots.clone(),
                self.recs.clone(),
                not_before.clone(),
            );
            let (gi, timeout, clock, start, honour) =
                (self.gi, self.timeout, self.clock, self.start, self.honour);
            tasks.spawn(async move {
                // Outside the attempt's future, so a timeout (which drops that future)
                // leaves it here for `keep_after_timeout`.
                let mut session = None;
                let attempt = async {
                    let Ok(_slot) = slots.acquire_owned().await else {
                        return AttemptResult::of(Outcome::ConnectionError);
                    };
                    let s = session.insert(pools[ci].lock().pop().unwrap_or_else(|| d.session()));
                    d.attempt(&clients[ci], s).await
                };
                // Counted from the intended time: waiting for a slot is part of the latency.
                let res = tokio::time::timeout_at(intended + timeout, attempt).await;
                if let Some(mut s) = session.take()
                    && (res.is_ok() || d.keep_after_timeout(&mut s))
                {
                    pools[ci].lock().push(s);
                }
                let res = res.unwrap_or_else(|_| timed_out());
                let done = Instant::now();
                let g = &recs[gi];
                g.outstanding.fetch_sub(1, Ordering::Relaxed);
                g.record_on(
                    ci,
                    clock.second(done.into_std()),
                    res.outcome,
                    done - intended,
                );
                if res.misdelivered {
                    g.misdelivered.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(p) = &res.conn {
                    g.conns.record(p);
                }
                g.retransmits
                    .fetch_add(u64::from(res.retransmits), Ordering::Relaxed);
                if let Some(e) = &res.eap {
                    g.eap.record(e, res.outcome, done - intended);
                }
                if let Some(l) = &res.ldap {
                    g.ldap.record(ci, l, g.expects_success);
                }
                if honour && let Some(ra) = res.retry_after {
                    let until = (done + ra - start).as_micros() as u64;
                    not_before[ci].fetch_max(until, Ordering::Relaxed);
                }
            });
            while tasks.try_join_next().is_some() {}
        }
        while tasks.join_next().await.is_some() {}
    }
}
