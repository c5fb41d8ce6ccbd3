//! Bounded, fair admission of checks to one directory.
//!
//! This module owns how many checks wait on a directory at once and who goes next. At most
//! `max_in_flight` checks are in flight, at most `max_in_flight_per_source` of them from one
//! source (the caller's key: a client address, a NAS), so one source cannot take every
//! slot. Checks that find no slot wait in a queue per source; a freed slot goes to the
//! sources in turn (round robin), the oldest check of the chosen source first. A full queue
//! (per source or overall) answers at once: a directory that is slow makes its own callers
//! wait a bounded time or get a fast refusal, and never holds an unbounded crowd.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::config::AdmissionConfig;

/// Why a check was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded;

#[derive(Debug, Default)]
struct Source {
    in_flight: usize,
    /// Waiters, oldest first: (ticket, the sender that grants the slot).
    waiters: VecDeque<(u64, oneshot::Sender<()>)>,
}

#[derive(Debug, Default)]
struct State {
    in_flight: usize,
    queued: usize,
    next_ticket: u64,
    sources: HashMap<Arc<str>, Source>,
    /// Sources with waiters, in the order they are served.
    ring: VecDeque<Arc<str>>,
    overloaded: u64,
}

/// The admission control of one directory.
#[derive(Debug)]
pub struct Admission {
    state: Mutex<State>,
    limits: AdmissionConfig,
}

/// A slot; dropping it frees the slot for the next waiter.
#[derive(Debug)]
pub struct Permit {
    admission: Arc<Admission>,
    source: Arc<str>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.admission.release(&self.source);
    }
}

/// Counts for status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AdmissionStatus {
    /// Checks in flight.
    pub in_flight: usize,
    /// Checks waiting for a slot.
    pub queued: usize,
    /// Sources with a check in flight or waiting.
    pub sources: usize,
    /// Checks refused at once because a queue was full, since start.
    pub overloaded: u64,
}

impl Admission {
    /// An admission control with these limits.
    pub fn new(limits: AdmissionConfig) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            limits,
        })
    }

    /// Waits for a slot for `source`, or answers [`Overloaded`] at once when its queue is
    /// full. Dropping the future gives up the place in the queue.
    pub async fn acquire(self: &Arc<Self>, source: &str) -> Result<Permit, Overloaded> {
        let (key, ticket, rx) = {
            let mut s = self.state.lock();
            let key = match s.sources.get_key_value(source) {
                Some((k, _)) => Arc::clone(k),
                None => Arc::from(source),
            };
            let free = s.in_flight < self.limits.max_in_flight;
            let entry = s.sources.entry(Arc::clone(&key)).or_default();
            if free
                && entry.in_flight < self.limits.max_in_flight_per_source
                && entry.waiters.is_empty()
            {
                entry.in_flight += 1;
                s.in_flight += 1;
                return Ok(self.permit(key));
            }
            let (own_queue, own_in_flight) = (entry.waiters.len(), entry.in_flight);
            if own_queue >= self.limits.max_queued_per_source || s.queued >= self.limits.max_queued
            {
                if own_in_flight == 0 && own_queue == 0 {
                    s.sources.remove(&key);
                }
                s.overloaded += 1;
                return Err(Overloaded);
            }
            let ticket = s.next_ticket;
            s.next_ticket += 1;
            let (tx, rx) = oneshot::channel();
            let entry = s.sources.entry(Arc::clone(&key)).or_default();
            entry.waiters.push_back((ticket, tx));
            if entry.waiters.len() == 1 {
                s.ring.push_back(Arc::clone(&key));
            }
            s.queued += 1;
            (key, ticket, rx)
        };
        let mut wait = Waiting {
            admission: self,
            source: key,
            ticket,
            rx: Some(rx),
        };
        let granted = match wait.rx.as_mut() {
            Some(rx) => rx.await.is_ok(),
            None => false,
        };
        wait.rx = None;
        if granted {
            Ok(self.permit(Arc::clone(&wait.source)))
        } else {
            // The sender is only dropped unsent when the admission is dropped.
            Err(Overloaded)
        }
    }

    fn permit(self: &Arc<Self>, source: Arc<str>) -> Permit {
        Permit {
            admission: Arc::clone(self),
            source,
        }
    }

    fn release(&self, source: &Arc<str>) {
        let mut s = self.state.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if let Some(entry) = s.sources.get_mut(source) {
            entry.in_flight = entry.in_flight.saturating_sub(1);
            if entry.in_flight == 0 && entry.waiters.is_empty() {
                s.sources.remove(source);
            }
        }
        self.dispatch(&mut s);
    }

    /// Gives free slots to waiters, one source after another.
    fn dispatch(&self, s: &mut State) {
        while s.in_flight < self.limits.max_in_flight {
            let mut granted = false;
            for _ in 0..s.ring.len() {
                let Some(key) = s.ring.pop_front() else { break };
                let per_source = self.limits.max_in_flight_per_source;
                let Some(entry) = s.sources.get_mut(&key) else {
                    continue;
                };
                if entry.in_flight >= per_source {
                    s.ring.push_back(key);
                    continue;
                }
                let Some((_, tx)) = entry.waiters.pop_front() else {
                    continue;
                };
                let more = !entry.waiters.is_empty();
                // The receiver is alive: a waiter that gives up removes itself under this
                // lock first (see Waiting's drop).
                if tx.send(()).is_ok() {
                    entry.in_flight += 1;
                    s.in_flight += 1;
                }
                s.queued = s.queued.saturating_sub(1);
                if more {
                    s.ring.push_back(key);
                }
                granted = true;
                break;
            }
            if !granted {
                return;
            }
        }
    }

    /// The counts now.
    pub fn status(&self) -> AdmissionStatus {
        let s = self.state.lock();
        AdmissionStatus {
            in_flight: s.in_flight,
            queued: s.queued,
            sources: s.sources.len(),
            overloaded: s.overloaded,
        }
    }
}

/// A place in a queue; dropped unanswered (the check timed out or was cancelled), it leaves
/// the queue, and a slot granted in the meantime is passed on.
struct Waiting<'a> {
    admission: &'a Arc<Admission>,
    source: Arc<str>,
    ticket: u64,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        let mut s = self.admission.state.lock();
        let mut removed = false;
        if let Some(entry) = s.sources.get_mut(&self.source)
            && let Some(i) = entry.waiters.iter().position(|(t, _)| *t == self.ticket)
        {
            entry.waiters.remove(i);
            removed = true;
            if entry.waiters.is_empty() {
                s.ring.retain(|k| k != &self.source);
            }
            s.queued = s.queued.saturating_sub(1);
        }
        if removed {
            if let Some(entry) = s.sources.get(&self.source)
                && entry.in_flight == 0
                && entry.waiters.is_empty()
            {
                s.sources.remove(&self.source);
            }
            return;
        }
        drop(s);
        // Not in the queue any more: the slot was granted as this waiter gave up.
        if rx.try_recv().is_ok() {
            self.admission.release(&self.source);
        }
    }
}

#[cfg(test)]
mod tests;
