//! The batch kernels' choice re-checked in service (issue 26): a PRF's calibrated menu and
//! the [`Contest`] among its multi-chain kernels, fed by the derivations the process runs.
//!
//! Start-up calibration ([`super::calibrate`]) ranks the kernels from a few milliseconds
//! of each; this module keeps that ranking honest afterwards. Every full group of a
//! multi-chain kernel that [`super::derive`] runs is timed in thread CPU time, and now and
//! then a group goes to a challenger (a kernel within the contest's range; see
//! [`crate::contest`]). When a challenger's median per chain beats the current kernel's,
//! its planning cost is re-based on the current kernel's (the same ratio the two showed
//! on the same traffic), so the planner, [`super::preferred_batch`] and
//! [`super::calibration`] all move to it. Single-chain runs are not contested: a lone
//! derivation on an idle pool is a different situation from a saturated batch, and the
//! single stream stays the unit every cost is expressed in.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use super::chain::Chain;
use super::{Cpu, Kernel, Lanes};
use crate::contest::Contest;

/// Groups of fewer iterations are not timed: too short for a meaningful clock reading.
const MIN_TIMED_ITERATIONS: u32 = 1000;

/// One entry of a hash's menu on this CPU: a kernel, its lanes, and the relative time of
/// one PBKDF2 iteration of a (full or padded) group, in units where the single stream's
/// one chain is [`super::SINGLE_COST`].
#[derive(Debug)]
pub(super) struct MenuItem {
    /// The kernel.
    pub(super) kernel: Kernel,
    /// Chains per group.
    pub(super) width: usize,
    /// Relative time of a group; atomic because the in-service contest re-bases it.
    cost: AtomicU32,
    /// The measured nanoseconds per iteration of a full group at start-up (reports only).
    pub(super) ns: f64,
}

impl MenuItem {
    pub(super) fn new(kernel: Kernel, width: usize, cost: u32, ns: f64) -> MenuItem {
        MenuItem {
            kernel,
            width,
            cost: AtomicU32::new(cost),
            ns,
        }
    }

    /// The group's current planning cost.
    pub(super) fn cost(&self) -> u32 {
        self.cost.load(Ordering::Relaxed)
    }
}

/// A PRF's menu and its in-service contest.
#[derive(Debug)]
pub(super) struct Menu {
    /// The kernels the planner may use, single stream first.
    pub(super) items: Vec<MenuItem>,
    /// Menu index of each contest candidate (the multi-chain kernels).
    candidates: Vec<usize>,
    /// The contest among `candidates` (indices into it), if there are two or more.
    contest: Option<Mutex<Contested>>,
}

/// The contest and the challenger it is waiting to run.
#[derive(Debug)]
struct Contested {
    /// Who runs, and who leads.
    contest: Contest,
    /// A challenger picked for a derivation too narrow for its lanes (candidate index):
    /// [`Menu::preferred_width`] asks for a batch wide enough until it has run, or a
    /// wide kernel could never be re-checked while a narrow one is current (batches are
    /// gathered at the current kernel's width).
    pending: Option<usize>,
}

impl Menu {
    pub(super) fn new(items: Vec<MenuItem>) -> Menu {
        let candidates: Vec<usize> = (0..items.len()).filter(|&i| items[i].width >= 2).collect();
        // Nanoseconds per chain-iteration at start-up: the unit in-service runs are timed in.
        let per_chain: Vec<f64> = candidates
            .iter()
            .map(|&i| items[i].ns / items[i].width as f64)
            .collect();
        let current = (0..per_chain.len())
            .min_by(|&a, &b| per_chain[a].total_cmp(&per_chain[b]))
            .unwrap_or(0);
        let contest = (candidates.len() >= 2 && crate::thread_cpu_ns().is_some()).then(|| {
            Mutex::new(Contested {
                contest: Contest::new(per_chain, current),
                pending: None,
            })
        });
        Menu {
            items,
            candidates,
            contest,
        }
    }

    /// The contest, if any (a poisoned lock only means a panic elsewhere mid-update of
    /// plain numbers: still usable).
    fn contest(&self) -> Option<std::sync::MutexGuard<'_, Contested>> {
        self.contest
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A challenger to run one full group of in a derivation of `chains` chains, if the
    /// exploration schedule says so: its menu index.
    pub(super) fn explore(&self, chains: usize, iterations: u32) -> Option<usize> {
        if iterations < MIN_TIMED_ITERATIONS {
            return None;
        }
        let mut c = self.contest()?;
        let fits = |k: usize| self.items[self.candidates[k]].width <= chains;
        if let Some(k) = c.pending.filter(|&k| fits(k)) {
            c.pending = None;
            return Some(self.candidates[k]);
        }
        let pick = c.contest.pick();
        if pick == c.contest.current() {
            return None;
        }
        if fits(pick) {
            return Some(self.candidates[pick]);
        }
        c.pending = Some(pick);
        None
    }

    /// The batch width callers should gather: the planner's best kernel's, or wider while
    /// a challenger waits for a batch its lanes fit.
    pub(super) fn preferred_width(&self) -> usize {
        let best = super::best_item(&self.items).map_or(1, |o| o.width);
        let waiting = self
            .contest()
            .and_then(|c| c.pending)
            .map_or(1, |k| self.items[self.candidates[k]].width);
        best.max(waiting)
    }

    /// Run one group on menu item `item`, timing it for the contest when it is a full
    /// group of a candidate.
    pub(super) fn run<H: Lanes>(
        &self,
        cpu: &Cpu,
        item: usize,
        group: &mut [Chain<H>],
        iterations: u32,
    ) {
        let kernel = self.items[item].kernel;
        let width = self.items[item].width;
        let candidate = self.candidate(item);
        let timed = self.contest.is_some()
            && candidate.is_some()
            && group.len() == width
            && iterations >= MIN_TIMED_ITERATIONS;
        if !timed {
            return H::run(cpu, kernel, group, iterations);
        }
        let start = crate::thread_cpu_ns();
        H::run(cpu, kernel, group, iterations);
        let (Some(start), Some(end), Some(k)) = (start, crate::thread_cpu_ns(), candidate) else {
            return;
        };
        let per_chain = end.saturating_sub(start) as f64 / (width as f64 * f64::from(iterations));
        self.record(k, per_chain);
    }

    /// Record one timed full group of candidate `k` (thread-CPU nanoseconds per chain and
    /// iteration); when the contest moves, re-base the winner's planning cost on the
    /// loser's by the ratio the two showed on the same traffic.
    pub(super) fn record(&self, k: usize, per_chain: f64) {
        let Some(mut c) = self.contest() else {
            return;
        };
        let contest = &mut c.contest;
        let before = contest.current();
        if let Some(now) = contest.record(k, per_chain) {
            let from = &self.items[self.candidates[before]];
            let to = &self.items[self.candidates[now]];
            let ratio = contest.estimate(now) / contest.estimate(before);
            let cost = f64::from(from.cost()) / from.width as f64 * to.width as f64 * ratio;
            to.cost.store(
                cost.round().clamp(1.0, f64::from(u32::MAX)) as u32,
                Ordering::Relaxed,
            );
        }
    }

    /// Make menu item `item` (a multi-chain kernel) the start-up choice, as a busy window
    /// at start-up can: its planning cost is set 3% per chain under the best item's, and
    /// the contest starts on it. Returns false for an item that is not a candidate.
    pub(super) fn start_on(&self, item: usize) -> bool {
        let Some(k) = self.candidate(item) else {
            return false;
        };
        let Some(best) = super::best_item(&self.items) else {
            return false;
        };
        let to = &self.items[item];
        let cost = f64::from(best.cost()) / best.width as f64 * to.width as f64 * 0.97;
        to.cost.store(
            cost.round().clamp(1.0, f64::from(u32::MAX)) as u32,
            Ordering::Relaxed,
        );
        if let Some(mut c) = self.contest() {
            c.contest.start_on(k);
        }
        true
    }

    /// The contest index of menu item `item`, if it is a candidate.
    pub(super) fn candidate(&self, item: usize) -> Option<usize> {
        self.candidates.iter().position(|&i| i == item)
    }

    /// The menu index of `kernel`.
    pub(super) fn index_of(&self, kernel: Kernel) -> Option<usize> {
        self.items.iter().position(|o| o.kernel == kernel)
    }

    /// In-service state for reports: per candidate (menu index, runs in the window,
    /// median nanoseconds per chain-iteration), and the switches so far.
    pub(super) fn in_service(&self) -> (Vec<(usize, usize, f64)>, u64) {
        let Some(c) = self.contest() else {
            return (Vec::new(), 0);
        };
        let contest = &c.contest;
        let rows = self
            .candidates
            .iter()
            .enumerate()
            .filter(|&(k, _)| contest.samples(k) > 0)
            .map(|(k, &i)| (i, contest.samples(k), contest.estimate(k)))
            .collect();
        (rows, contest.switches())
    }
}
