//! Measurement: what happened to every attempt, per group, overall and per second.
//!
//! Latencies go into HdrHistograms (microseconds) so percentiles are exact to 3 significant
//! digits overall and 2 per second, however many requests a run makes. Completions are
//! bucketed by the second they finished in; the number of requests in flight is sampled once
//! a second by the runner's ticker. The recorder is shared by every task of a group behind a
//! short `parking_lot` lock: recording is a few array increments.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::outcome::{HIGHEST_US, hist, pct_ms};
pub use crate::outcome::{OUTCOMES, Outcome};

/// One second of one group.
#[derive(Debug)]
struct Second {
    counts: [u64; 7],
    hist: Histogram<u64>,
}

impl Second {
    fn new() -> Second {
        Second {
            counts: [0; 7],
            hist: hist(2),
        }
    }
}

/// Independent locks per group, picked by client index, so clients completing at the same
/// moment on different runtime threads rarely wait for each other.
const SHARDS: usize = 16;

fn add_hist(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    // Same bounds everywhere, so adding cannot fail; saturate rather than panic.
    if into.add(from).is_err() {
        for v in from.iter_recorded() {
            into.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

impl Data {
    fn new() -> Data {
        Data {
            hist: hist(3),
            ok_hist: hist(3),
            counts: [0; 7],
            seconds: Vec::new(),
        }
    }

    fn absorb(&mut self, o: &Data) {
        add_hist(&mut self.hist, &o.hist);
        add_hist(&mut self.ok_hist, &o.ok_hist);
        for i in 0..7 {
            self.counts[i] += o.counts[i];
        }
        for (i, s) in o.seconds.iter().enumerate() {
            let d = second_mut(&mut self.seconds, i);
            add_hist(&mut d.hist, &s.hist);
            for k in 0..7 {
                d.counts[k] += s.counts[k];
            }
        }
    }
}

#[derive(Debug)]
struct Data {
    hist: Histogram<u64>,
    /// Successes only: how long an answer that came took (a run whose failures are
    /// timeouts has its all-outcome percentiles at the timeout).
    ok_hist: Histogram<u64>,
    counts: [u64; 7],
    seconds: Vec<Second>,
}

/// Connection set-up of one group: how many connections its attempts opened, and the
/// time their TCP connects and TLS handshakes took.
#[derive(Debug, Default)]
pub struct ConnStats {
    opened: AtomicU64,
    connect_us: AtomicU64,
    handshakes: AtomicU64,
    handshake_us: AtomicU64,
    resumed: AtomicU64,
}

impl ConnStats {
    /// Count one connection opened by an attempt.
    pub fn record(&self, p: &crate::conn::Phases) {
        self.opened.fetch_add(1, Ordering::Relaxed);
        self.connect_us
            .fetch_add(p.connect.as_micros() as u64, Ordering::Relaxed);
        if p.tls {
            self.handshakes.fetch_add(1, Ordering::Relaxed);
            self.handshake_us
                .fetch_add(p.handshake.as_micros() as u64, Ordering::Relaxed);
            if p.resumed {
                self.resumed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The summary, given the summed latency (ms) of the group's attempts.
    fn summary(&self, latency_ms_total: f64) -> Option<ConnectionSummary> {
        let opened = self.opened.load(Ordering::Relaxed);
        if opened == 0 {
            return None;
        }
        let connect_ms = self.connect_us.load(Ordering::Relaxed) as f64 / 1000.0;
        let handshakes = self.handshakes.load(Ordering::Relaxed);
        let tls_ms = self.handshake_us.load(Ordering::Relaxed) as f64 / 1000.0;
        let resumed = self.resumed.load(Ordering::Relaxed);
        let share = |ms: f64| {
            if latency_ms_total > 0.0 {
                (ms / latency_ms_total).min(1.0)
            } else {
                0.0
            }
        };
        Some(ConnectionSummary {
            opened,
            connect_ms_mean: connect_ms / opened as f64,
            tls_handshakes: handshakes,
            tls_ms_mean: if handshakes > 0 {
                tls_ms / handshakes as f64
            } else {
                0.0
            },
            resumed,
            resumed_share: if handshakes > 0 {
                resumed as f64 / handshakes as f64
            } else {
                0.0
            },
            connect_share: share(connect_ms),
            tls_share: share(tls_ms),
        })
    }
}

/// Where a group's time went in setting up connections.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConnectionSummary {
    /// Connections its attempts opened.
    pub opened: u64,
    /// Mean TCP connect (ms).
    pub connect_ms_mean: f64,
    /// TLS handshakes made.
    pub tls_handshakes: u64,
    /// Mean TLS handshake (ms).
    pub tls_ms_mean: f64,
    /// Handshakes that resumed a session.
    pub resumed: u64,
    /// resumed / handshakes.
    pub resumed_share: f64,
    /// Share of the group's summed latency spent in TCP connects.
    pub connect_share: f64,
    /// Share spent in TLS handshakes (the rest is the request itself, and in open loop
    /// any queueing before it).
    pub tls_share: f64,
}

/// The recorder of one group.
#[derive(Debug)]
pub struct GroupRecorder {
    /// Group name.
    pub name: String,
    /// Whether its clients should get tokens.
    pub expects_success: bool,
    /// Length of the group's active time (throughput denominator).
    pub active: Duration,
    /// Requests in flight now.
    pub outstanding: AtomicI64,
    /// Tokens for the wrong client, RADIUS replies for another request (fails the run).
    pub misdelivered: AtomicU64,
    /// RADIUS retransmissions (a server that loses or drops requests makes them).
    pub retransmits: AtomicU64,
    /// Successes for credentials that should have failed (fails the run).
    pub breaches: AtomicU64,
    /// Open-loop arrivals skipped while honouring a Retry-After.
    pub skipped: AtomicU64,
    /// Connections opened and how their set-up went (HTTP drivers).
    pub conns: ConnStats,
    /// 802.1X logins: full and resumed, round trips, key checks (RADIUS EAP driver).
    pub eap: crate::eap::stats::EapStats,
    /// LDAP logins: result codes per operation, bind times, lockouts (LDAP driver).
    pub ldap: crate::ldap::stats::LdapStats,
    /// Requests in flight sampled at the end of each second.
    outstanding_series: Mutex<Vec<i64>>,
    shards: Vec<Mutex<Data>>,
}

impl GroupRecorder {
    /// A recorder for a group.
    pub fn new(name: &str, expects_success: bool, active: Duration) -> GroupRecorder {
        GroupRecorder {
            name: name.to_string(),
            expects_success,
            active,
            outstanding: AtomicI64::new(0),
            misdelivered: AtomicU64::new(0),
            retransmits: AtomicU64::new(0),
            breaches: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            conns: ConnStats::default(),
            eap: crate::eap::stats::EapStats::default(),
            ldap: crate::ldap::stats::LdapStats::default(),
            outstanding_series: Mutex::new(Vec::new()),
            shards: (0..SHARDS).map(|_| Mutex::new(Data::new())).collect(),
        }
    }

    /// Record one completed attempt that finished `at_second` seconds into the run.
    pub fn record(&self, at_second: usize, outcome: Outcome, latency: Duration) {
        self.record_on(0, at_second, outcome, latency);
    }

    /// [`Self::record`] for client `client` (spreads clients over the lock shards).
    pub fn record_on(&self, client: usize, at_second: usize, outcome: Outcome, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, HIGHEST_US);
        if outcome == Outcome::Success && !self.expects_success {
            self.breaches.fetch_add(1, Ordering::Relaxed);
        }
        let mut d = self.shards[client % SHARDS].lock();
        d.hist.saturating_record(us);
        if outcome == Outcome::Success {
            d.ok_hist.saturating_record(us);
        }
        d.counts[outcome.index()] += 1;
        let s = second_mut(&mut d.seconds, at_second);
        s.counts[outcome.index()] += 1;
        s.hist.saturating_record(us);
    }

    /// Store the sampled number of requests in flight for `second`.
    pub fn sample_outstanding(&self, second: usize) {
        let n = self.outstanding.load(Ordering::Relaxed);
        let mut o = self.outstanding_series.lock();
        if o.len() <= second {
            o.resize(second + 1, 0);
        }
        o[second] = n;
    }

    /// Completed attempts so far: (successes, every other outcome).
    pub fn outcome_counts(&self) -> (u64, u64) {
        let mut ok = 0;
        let mut all = 0;
        for s in &self.shards {
            let d = s.lock();
            ok += d.counts[Outcome::Success.index()];
            all += d.counts.iter().sum::<u64>();
        }
        (ok, all - ok)
    }

    /// Completed attempts so far.
    pub fn completed(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.lock().counts.iter().sum::<u64>())
            .sum()
    }

    fn merged(&self) -> Data {
        let mut d = Data::new();
        for s in &self.shards {
            d.absorb(&s.lock());
        }
        d
    }

    /// Summarise into the serialisable result.
    pub fn finish(&self) -> GroupResult {
        let d = self.merged();
        let outstanding = self.outstanding_series.lock().clone();
        let series = d
            .seconds
            .iter()
            .enumerate()
            .map(|(i, s)| SecondRow {
                second: i as u64,
                completed: s.counts.iter().sum(),
                outstanding: outstanding.get(i).copied().unwrap_or(0),
                p50_ms: pct_ms(&s.hist, 50.0),
                p99_ms: pct_ms(&s.hist, 99.0),
                outcomes: outcome_map(&s.counts),
            })
            .collect();
        let mut r = summarize(
            &self.name,
            self.expects_success,
            &d.hist,
            &d.counts,
            self.active,
        );
        r.success_p50_ms = pct_ms(&d.ok_hist, 50.0);
        r.success_p99_ms = pct_ms(&d.ok_hist, 99.0);
        r.misdelivered = self.misdelivered.load(Ordering::Relaxed);
        r.retransmits = self.retransmits.load(Ordering::Relaxed);
        r.breaches = self.breaches.load(Ordering::Relaxed);
        r.skipped_retry_after = self.skipped.load(Ordering::Relaxed);
        r.series = series;
        r.connections = self.conns.summary(r.mean_ms * r.completed as f64);
        r.eap = self.eap.summary(self.active);
        r.ldap = self.ldap.summary(self.active);
        r
    }

    /// The overall histogram and counts (for merging legitimate groups).
    pub fn raw(&self) -> (Histogram<u64>, [u64; 7]) {
        let d = self.merged();
        (d.hist, d.counts)
    }
}

fn second_mut(seconds: &mut Vec<Second>, i: usize) -> &mut Second {
    while seconds.len() <= i {
        seconds.push(Second::new());
    }
    &mut seconds[i]
}

fn outcome_map(counts: &[u64; 7]) -> BTreeMap<Outcome, u64> {
    OUTCOMES.iter().map(|o| (*o, counts[o.index()])).collect()
}

/// Summary figures of a set of attempts.
pub fn summarize(
    name: &str,
    expects_success: bool,
    h: &Histogram<u64>,
    counts: &[u64; 7],
    active: Duration,
) -> GroupResult {
    let completed: u64 = counts.iter().sum();
    let rate = |n: u64| {
        if completed == 0 {
            0.0
        } else {
            n as f64 / completed as f64
        }
    };
    let secs = active.as_secs_f64().max(1e-9);
    GroupResult {
        name: name.to_string(),
        expects_success,
        completed,
        outcomes: outcome_map(counts),
        success_rate: rate(counts[Outcome::Success.index()]),
        timeout_rate: rate(counts[Outcome::Timeout.index()]),
        throughput: counts[Outcome::Success.index()] as f64 / secs,
        completed_per_s: completed as f64 / secs,
        mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
        p50_ms: pct_ms(h, 50.0),
        p90_ms: pct_ms(h, 90.0),
        p99_ms: pct_ms(h, 99.0),
        p999_ms: pct_ms(h, 99.9),
        max_ms: if h.is_empty() {
            0.0
        } else {
            h.max() as f64 / 1000.0
        },
        success_p50_ms: 0.0,
        success_p99_ms: 0.0,
        misdelivered: 0,
        retransmits: 0,
        breaches: 0,
        skipped_retry_after: 0,
        series: Vec::new(),
        connections: None,
        eap: None,
        ldap: None,
    }
}

/// Merge groups (the "legitimate" aggregate used by thresholds and headlines).
pub fn merge(name: &str, parts: &[(Histogram<u64>, [u64; 7])], active: Duration) -> GroupResult {
    let mut h = hist(3);
    let mut counts = [0u64; 7];
    for (ph, pc) in parts {
        add_hist(&mut h, ph);
        for i in 0..7 {
            counts[i] += pc[i];
        }
    }
    summarize(name, true, &h, &counts, active)
}

/// One row of a group's per-second series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SecondRow {
    /// Seconds since the run started.
    pub second: u64,
    /// Attempts completed in this second.
    pub completed: u64,
    /// Requests in flight when the second ended.
    pub outstanding: i64,
    /// Median latency of this second's completions (ms).
    pub p50_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Completions by outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
}

/// What a group experienced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GroupResult {
    /// Group name.
    pub name: String,
    /// Whether its clients should have got tokens.
    pub expects_success: bool,
    /// Attempts completed (all outcomes).
    pub completed: u64,
    /// Completions by outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// successes / completed.
    pub success_rate: f64,
    /// timeouts / completed.
    pub timeout_rate: f64,
    /// Successes per second of the group's active time.
    pub throughput: f64,
    /// Completions per second of the group's active time.
    pub completed_per_s: f64,
    /// Mean latency (ms).
    pub mean_ms: f64,
    /// Percentiles (ms), all outcomes, from the intended send time in open loop.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Maximum.
    pub max_ms: f64,
    /// Median latency of the successes alone (ms; 0 in merged aggregates, which keep
    /// only the all-outcome histogram).
    #[serde(default)]
    pub success_p50_ms: f64,
    /// 99th percentile of the successes alone (an accounting storm's acknowledgements:
    /// its timeouts would put the all-outcome p99 at the timeout).
    #[serde(default)]
    pub success_p99_ms: f64,
    /// Tokens delivered for another client (RADIUS: replies for another request).
    pub misdelivered: u64,
    /// RADIUS retransmissions.
    #[serde(default)]
    pub retransmits: u64,
    /// Successes for credentials that should fail.
    pub breaches: u64,
    /// Open-loop arrivals skipped while honouring Retry-After.
    pub skipped_retry_after: u64,
    /// Per-second series.
    pub series: Vec<SecondRow>,
    /// Connection set-up (HTTP drivers; `None` when no attempt opened a connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionSummary>,
    /// 802.1X logins (RADIUS EAP driver; `None` for other groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eap: Option<crate::eap::stats::EapSummary>,
    /// LDAP logins (LDAP driver; `None` for other drivers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ldap: Option<crate::ldap::stats::LdapSummary>,
}

/// The run's clock: second index of an instant.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    /// When the run (second 0) started.
    pub t0: Instant,
}

impl RunClock {
    /// Whole seconds from t0 to `at` (0 before t0).
    pub fn second(&self, at: Instant) -> usize {
        at.saturating_duration_since(self.t0).as_secs() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn counts_percentiles_and_series_follow_the_recorded_attempts() {
        let g = GroupRecorder::new("legit", true, Duration::from_secs(2));
        // Second 0: 99 successes at 10 ms and one timeout at 2000 ms.
        for _ in 0..99 {
            g.record(0, Outcome::Success, ms(10));
        }
        g.record(0, Outcome::Timeout, ms(2000));
        // Second 1: 50 auth failures at 1 ms, 50 sheds at 3 ms.
        for _ in 0..50 {
            g.record(1, Outcome::AuthFailure, ms(1));
            g.record(1, Outcome::Shed, ms(3));
        }
        g.outstanding.store(7, Ordering::Relaxed);
        g.sample_outstanding(1);
        let r = g.finish();
        assert_eq!(r.completed, 200);
        assert_eq!(r.outcomes[&Outcome::Success], 99);
        assert_eq!(r.outcomes[&Outcome::Timeout], 1);
        assert_eq!(r.outcomes[&Outcome::AuthFailure], 50);
        assert_eq!(r.outcomes[&Outcome::Shed], 50);
        assert_eq!(r.outcomes[&Outcome::WrongResponse], 0);
        assert!((r.success_rate - 0.495).abs() < 1e-12);
        assert!((r.timeout_rate - 0.005).abs() < 1e-12);
        assert!((r.throughput - 49.5).abs() < 1e-9);
        // 200 values sorted: 50 x 1 ms, 50 x 3 ms, 99 x 10 ms, 1 x 2000 ms.
        assert!((r.p50_ms - 3.0).abs() < 0.01, "{}", r.p50_ms);
        assert!((r.p90_ms - 10.0).abs() < 0.01);
        assert!((r.max_ms - 2000.0).abs() < 2.0);
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.series[0].completed, 100);
        assert!((r.series[0].p99_ms - 10.0).abs() < 0.1);
        assert_eq!(r.series[1].completed, 100);
        assert_eq!(r.series[1].outstanding, 7);
        assert_eq!(r.series[1].outcomes[&Outcome::Shed], 50);
    }

    #[test]
    fn a_success_for_wrong_credentials_is_a_breach() {
        let g = GroupRecorder::new("attackers", false, Duration::from_secs(1));
        g.record(0, Outcome::AuthFailure, ms(1));
        g.record(0, Outcome::Success, ms(1));
        let r = g.finish();
        assert_eq!(r.breaches, 1);
        let ok = GroupRecorder::new("legit", true, Duration::from_secs(1));
        ok.record(0, Outcome::Success, ms(1));
        assert_eq!(ok.finish().breaches, 0);
    }

    #[test]
    fn merging_adds_counts_and_histograms() {
        let a = GroupRecorder::new("a", true, Duration::from_secs(1));
        let b = GroupRecorder::new("b", true, Duration::from_secs(1));
        for _ in 0..3 {
            a.record(0, Outcome::Success, ms(5));
        }
        b.record(0, Outcome::Shed, ms(500));
        let m = merge("legitimate", &[a.raw(), b.raw()], Duration::from_secs(1));
        assert_eq!(m.completed, 4);
        assert!((m.success_rate - 0.75).abs() < 1e-12);
        assert!((m.max_ms - 500.0).abs() < 1.0);
        assert!((m.p50_ms - 5.0).abs() < 0.01);
    }
}
