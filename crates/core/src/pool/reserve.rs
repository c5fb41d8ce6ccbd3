//! When the trusted class counts as active, so that its share is kept rather than lent to
//! queued untrusted work ([`crate::scheduler::Take::ReserveTrusted`]).
//!
//! A closed-loop client has no job queued while its answer travels and its next request
//! comes back, and none while its job is in service. With wide batch kernels every
//! trusted job can be in one batch at once (16 on AVX-512) for a whole batch time, longer
//! than the grace after the last arrival: a free thread then saw an empty trusted queue,
//! lent it, and ran a batch of a wave's guesses while the trusted jobs came back to find
//! both threads taken (issue 41: the first second of a wave at a third of the legitimate
//! rate on an AVX-512 Xeon). So the class is active while any of its jobs is in service,
//! and for a grace after the last one arrived or was answered.

use std::time::{Duration, Instant};

/// Longest the trusted class counts as active after its last job arrived or was answered.
pub(crate) const MAX_TRUSTED_GRACE: Duration = Duration::from_millis(500);

/// The trusted class's recent activity, kept under the pool's state lock.
#[derive(Debug, Default)]
pub(crate) struct TrustedReserve {
    /// When a trusted job last arrived or was answered, on the real clock.
    seen: Option<Instant>,
    /// Trusted jobs taken by workers and not yet answered.
    in_service: usize,
}

impl TrustedReserve {
    /// A trusted job was queued.
    pub(crate) fn arrived(&mut self, now: Instant) {
        self.seen = Some(now);
    }

    /// A worker took `n` trusted jobs.
    pub(crate) fn taken(&mut self, n: usize) {
        self.in_service += n;
    }

    /// `n` trusted jobs were answered: their clients may come back within the grace.
    pub(crate) fn answered(&mut self, n: usize, now: Instant) {
        self.in_service = self.in_service.saturating_sub(n);
        self.seen = Some(now);
    }

    /// Whether trusted jobs are in service (their answers end any wait for them).
    pub(crate) fn in_service(&self) -> bool {
        self.in_service > 0
    }

    /// Until when the trusted share is reserved, as seen at `now`; `None` if it is not.
    /// While trusted jobs are in service the reserve has no end yet: it is looked at
    /// again one grace later, or at the next arrival.
    pub(crate) fn until(&self, grace: Duration, now: Instant) -> Option<Instant> {
        if self.in_service > 0 {
            return Some(now + grace);
        }
        self.seen.map(|t| t + grace).filter(|&until| until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_millis(100);

    #[test]
    fn issue_41_the_reserve_holds_while_trusted_jobs_are_in_service() {
        let t0 = Instant::now();
        let mut r = TrustedReserve::default();
        assert_eq!(r.until(GRACE, t0), None, "never active: nothing reserved");
        r.arrived(t0);
        assert_eq!(r.until(GRACE, t0), Some(t0 + GRACE));
        r.taken(16);
        // A batch of every trusted job runs far longer than the grace: still reserved.
        let later = t0 + GRACE * 10;
        assert_eq!(r.until(GRACE, later), Some(later + GRACE));
        r.answered(10, later);
        assert_eq!(r.until(GRACE, later + GRACE * 5), Some(later + GRACE * 6));
        r.answered(6, later);
        // All answered: one grace for the clients to come back, then lent again.
        assert_eq!(r.until(GRACE, later), Some(later + GRACE));
        assert_eq!(r.until(GRACE, later + GRACE), None);
    }

    #[test]
    fn issue_41_the_reserve_ends_one_grace_after_the_last_arrival() {
        let t0 = Instant::now();
        let mut r = TrustedReserve::default();
        r.arrived(t0);
        assert_eq!(r.until(GRACE, t0 + GRACE / 2), Some(t0 + GRACE));
        assert_eq!(r.until(GRACE, t0 + GRACE), None);
        // Answers never drive the count below zero (a job shed after it was taken).
        r.answered(3, t0);
        assert_eq!(r.until(GRACE, t0 + GRACE * 2), None);
    }
}
