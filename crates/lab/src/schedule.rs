//! When each request is *meant* to be sent.
//!
//! An open-loop group's arrivals follow a piecewise-linear rate: it rises from zero over the
//! run's ramp-up (from the group's start), then goes linearly from `rate` to `rate_end`.
//! The k-th arrival is where the expected cumulative count reaches k (uniform spacing) or
//! the k-th point of a unit Poisson process mapped through that count (seeded), so the
//! intended times are known in advance and do not depend on how fast the server answers.
//! Latency is measured from these times: a stalled server cannot hide its stall by slowing
//! the generator down (no coordinated omission).

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One stretch of linearly changing arrival rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Offset from the start of the run, seconds.
    pub start: f64,
    /// Length, seconds.
    pub len: f64,
    /// Rate at the start of the segment (per second).
    pub r0: f64,
    /// Rate at the end.
    pub r1: f64,
}

impl Segment {
    fn expected(&self) -> f64 {
        (self.r0 + self.r1) / 2.0 * self.len
    }

    /// Time into the segment at which the expected count reaches `m`, if within it.
    fn time_of(&self, m: f64) -> Option<f64> {
        let a = (self.r1 - self.r0) / self.len;
        let disc = self.r0 * self.r0 + 2.0 * a * m;
        if disc < 0.0 {
            return None;
        }
        let den = self.r0 + disc.sqrt();
        // Rationalised root of r0*t + a*t^2/2 = m: stable for a -> 0 and for r0 = 0.
        let t = if den > 0.0 { 2.0 * m / den } else { 0.0 };
        (t <= self.len + 1e-12).then_some(t)
    }
}

/// The arrival-rate curve of one open-loop group.
#[derive(Debug, Clone)]
pub struct RateCurve {
    segments: Vec<Segment>,
}

impl RateCurve {
    /// Ramp from 0 over `ramp_up` (clipped to the group's duration), then `rate` to
    /// `rate_end` over the rest of the group's time.
    pub fn new(
        start: Duration,
        duration: Duration,
        ramp_up: Duration,
        rate: f64,
        rate_end: f64,
    ) -> RateCurve {
        let s = start.as_secs_f64();
        let d = duration.as_secs_f64();
        let ramp = ramp_up.as_secs_f64().min(d);
        let at = |t: f64| rate + (rate_end - rate) * (t / d);
        let mut segments = Vec::new();
        if ramp > 0.0 {
            segments.push(Segment {
                start: s,
                len: ramp,
                r0: 0.0,
                r1: at(ramp),
            });
        }
        if d - ramp > 0.0 {
            segments.push(Segment {
                start: s + ramp,
                len: d - ramp,
                r0: at(ramp),
                r1: rate_end,
            });
        }
        RateCurve { segments }
    }

    /// Expected number of arrivals over the whole curve.
    pub fn expected_total(&self) -> f64 {
        self.segments.iter().map(Segment::expected).sum()
    }

    /// Offset (seconds from run start) at which the expected count reaches `n`, or None
    /// past the end.
    pub fn time_of(&self, n: f64) -> Option<f64> {
        let mut before = 0.0;
        for seg in &self.segments {
            let e = seg.expected();
            if n <= before + e + 1e-9 {
                return seg.time_of(n - before).map(|t| seg.start + t);
            }
            before += e;
        }
        None
    }
}

/// Iterator over intended send times (offsets from the run start).
#[derive(Debug)]
pub struct Arrivals {
    curve: RateCurve,
    next: u64,
    poisson: Option<(StdRng, f64)>,
}

impl Arrivals {
    /// Uniformly spaced arrivals (the first at the curve's start).
    pub fn uniform(curve: RateCurve) -> Arrivals {
        Arrivals {
            curve,
            next: 0,
            poisson: None,
        }
    }

    /// Poisson arrivals with the curve as intensity, reproducible from `seed`.
    pub fn poisson(curve: RateCurve, seed: u64) -> Arrivals {
        Arrivals {
            curve,
            next: 0,
            poisson: Some((StdRng::seed_from_u64(seed), 0.0)),
        }
    }
}

impl Iterator for Arrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let n = match &mut self.poisson {
            None => {
                let n = self.next as f64;
                self.next += 1;
                n
            }
            Some((rng, acc)) => {
                let u: f64 = rng.random();
                *acc += -(1.0 - u).ln();
                *acc
            }
        };
        // Uniform: the k-th arrival sits where the expected count is k, but a ramp from 0
        // gives count 0 at time 0, so k counts from 0 on a constant rate and the last
        // arrival is strictly before the end.
        if self.poisson.is_none() && n >= self.curve.expected_total() - 1e-9 {
            return None;
        }
        self.curve.time_of(n).map(Duration::from_secs_f64)
    }
}

/// Start offset of closed-loop client `i` of `size`: spread evenly over the ramp-up.
pub fn closed_start(group_start: Duration, ramp_up: Duration, i: usize, size: usize) -> Duration {
    if size == 0 {
        return group_start;
    }
    group_start + ramp_up.mul_f64(i as f64 / size as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(v: &[Duration]) -> Vec<f64> {
        v.iter()
            .map(|d| (d.as_secs_f64() * 1e6).round() / 1e6)
            .collect()
    }

    #[test]
    fn constant_rate_is_evenly_spaced_from_the_group_start() {
        let c = RateCurve::new(
            Duration::from_secs(2),
            Duration::from_secs(1),
            Duration::ZERO,
            10.0,
            10.0,
        );
        let t: Vec<_> = Arrivals::uniform(c).collect();
        assert_eq!(
            secs(&t),
            vec![2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9]
        );
    }

    #[test]
    fn linear_ramp_from_zero_follows_the_square_root() {
        // r(t) = 20 t over 1 s: N(t) = 10 t^2, so the k-th arrival is at sqrt(k / 10).
        let c = RateCurve::new(
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::ZERO,
            0.0,
            20.0,
        );
        let t: Vec<_> = Arrivals::uniform(c).collect();
        assert_eq!(t.len(), 10);
        for (k, d) in t.iter().enumerate() {
            let want = (k as f64 / 10.0).sqrt();
            assert!(
                (d.as_secs_f64() - want).abs() < 1e-9,
                "k={k}: {d:?} vs {want}"
            );
        }
    }

    #[test]
    fn ramp_up_then_constant_counts_add_up() {
        // 1 s ramp from 0 to 100/s (50 arrivals), then 2 s at 100/s (200 arrivals).
        let c = RateCurve::new(
            Duration::ZERO,
            Duration::from_secs(3),
            Duration::from_secs(1),
            100.0,
            100.0,
        );
        assert!((c.expected_total() - 250.0).abs() < 1e-9);
        let t: Vec<_> = Arrivals::uniform(c).collect();
        assert_eq!(t.len(), 250);
        // The 50th arrival is exactly at the end of the ramp, later ones 10 ms apart.
        assert!((t[50].as_secs_f64() - 1.0).abs() < 1e-9);
        assert!((t[51].as_secs_f64() - 1.01).abs() < 1e-9);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn poisson_arrivals_are_reproducible_and_have_the_right_mean() {
        let c = RateCurve::new(
            Duration::ZERO,
            Duration::from_secs(100),
            Duration::ZERO,
            50.0,
            50.0,
        );
        let a: Vec<_> = Arrivals::poisson(c.clone(), 7).collect();
        let b: Vec<_> = Arrivals::poisson(c.clone(), 7).collect();
        let other: Vec<_> = Arrivals::poisson(c, 8).collect();
        assert_eq!(a, b);
        assert_ne!(a, other);
        // 5000 expected; a Poisson count has sd ~71, so 4 sd is +-283.
        assert!((a.len() as i64 - 5000).abs() < 283, "{}", a.len());
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn closed_loop_clients_are_spread_over_the_ramp_up() {
        let s = Duration::from_secs(1);
        let r = Duration::from_secs(2);
        assert_eq!(closed_start(s, r, 0, 4), Duration::from_secs(1));
        assert_eq!(closed_start(s, r, 2, 4), Duration::from_secs(2));
        assert_eq!(closed_start(s, Duration::ZERO, 3, 4), s);
    }
}
