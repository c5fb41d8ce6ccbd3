//! The server's side of the timeline: `/metrics` (Prometheus text format) scraped once a
//! second during the run and turned into per-second rates and levels next to the client's
//! own series: queue wait, shed, throttled, busy pool threads, attempts by outcome.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One parsed sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Value.
    pub value: f64,
}

/// Parse Prometheus text exposition format; malformed lines are skipped (a half-written
/// metric must not end the run).
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, labels, rest) = match line.find('{') {
        Some(i) => {
            let end = line.rfind('}')?;
            (
                &line[..i],
                parse_labels(&line[i + 1..end])?,
                &line[end + 1..],
            )
        }
        None => {
            let i = line.find(char::is_whitespace)?;
            (&line[..i], BTreeMap::new(), &line[i..])
        }
    };
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.trim().to_string(),
        labels,
        value,
    })
}

fn parse_labels(s: &str) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start().strip_prefix('"')?;
        let mut val = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => val.push('\n'),
                    Some((_, c2)) => val.push(c2),
                    None => return None,
                },
                '"' => {
                    end = Some(i);
                    break;
                }
                c => val.push(c),
            }
        }
        let end = end?;
        out.insert(key, val);
        rest = after[end + 1..]
            .trim_start()
            .trim_start_matches(',')
            .trim_start();
    }
    Some(out)
}

/// The cumulative values of one scrape that the report uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// `portcullis_queue_wait_seconds` buckets: (le, cumulative count).
    pub queue_buckets: Vec<(f64, f64)>,
    /// `portcullis_queue_wait_seconds_sum`.
    pub queue_sum: f64,
    /// `portcullis_queue_wait_seconds_count`.
    pub queue_count: f64,
    /// `portcullis_shed_total` (all label sets).
    pub shed: f64,
    /// `portcullis_throttled_total`.
    pub throttled: f64,
    /// `portcullis_pool_busy_threads` (gauge).
    pub pool_busy: Option<f64>,
    /// `portcullis_attempts_total` by `outcome`.
    pub attempts: BTreeMap<String, f64>,
}

impl Snapshot {
    /// Pick the report's metrics out of a scrape (summing across label sets).
    pub fn from_samples(samples: &[Sample]) -> Snapshot {
        let mut s = Snapshot::default();
        let mut buckets: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for m in samples {
            match m.name.as_str() {
                "portcullis_queue_wait_seconds_bucket" => {
                    if let Some(le) = m.labels.get("le").and_then(|v| match v.as_str() {
                        "+Inf" => Some(f64::INFINITY),
                        v => v.parse::<f64>().ok(),
                    }) {
                        let e = buckets.entry(le.to_bits()).or_insert((le, 0.0));
                        e.1 += m.value;
                    }
                }
                "portcullis_queue_wait_seconds_sum" => s.queue_sum += m.value,
                "portcullis_queue_wait_seconds_count" => s.queue_count += m.value,
                "portcullis_shed_total" => s.shed += m.value,
                "portcullis_throttled_total" => s.throttled += m.value,
                "portcullis_pool_busy_threads" => *s.pool_busy.get_or_insert(0.0) += m.value,
                "portcullis_attempts_total" => {
                    let o = m
                        .labels
                        .get("outcome")
                        .cloned()
                        .unwrap_or_else(|| "unknown".into());
                    *s.attempts.entry(o).or_insert(0.0) += m.value;
                }
                _ => {}
            }
        }
        let mut b: Vec<(f64, f64)> = buckets.into_values().collect();
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        s.queue_buckets = b;
        s
    }
}

/// One second of server-side figures (differences between consecutive scrapes).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerSecond {
    /// Seconds since the run started.
    pub second: u64,
    /// Whether the scrape for this second answered.
    pub scraped: bool,
    /// Mean queue wait of the jobs that started in this second (ms).
    pub queue_wait_mean_ms: Option<f64>,
    /// Upper bound of the bucket holding the 99th percentile of this second's queue waits (ms).
    pub queue_wait_p99_ms: Option<f64>,
    /// Attempts shed in this second.
    pub shed: f64,
    /// Attempts throttled in this second.
    pub throttled: f64,
    /// Busy pool threads at the scrape.
    pub pool_busy: Option<f64>,
    /// Attempts by outcome in this second.
    pub attempts: BTreeMap<String, f64>,
}

/// Per-second differences from a list of (second, snapshot or failed scrape).
pub fn series(snaps: &[(u64, Option<Snapshot>)]) -> Vec<ServerSecond> {
    let mut out = Vec::new();
    let mut prev: Option<&Snapshot> = None;
    for (sec, snap) in snaps {
        let Some(s) = snap else {
            out.push(ServerSecond {
                second: *sec,
                ..ServerSecond::default()
            });
            continue;
        };
        let mut row = ServerSecond {
            second: *sec,
            scraped: true,
            pool_busy: s.pool_busy,
            ..ServerSecond::default()
        };
        if let Some(p) = prev {
            let dc = s.queue_count - p.queue_count;
            if dc > 0.0 {
                row.queue_wait_mean_ms = Some((s.queue_sum - p.queue_sum) / dc * 1000.0);
                // First bucket whose count delta reaches 99% of this second's jobs.
                let target = 0.99 * dc;
                row.queue_wait_p99_ms = s.queue_buckets.iter().find_map(|(le, c)| {
                    let before = p
                        .queue_buckets
                        .iter()
                        .find(|(l, _)| l == le)
                        .map_or(0.0, |(_, v)| *v);
                    (c - before >= target).then_some(le * 1000.0)
                });
            }
            row.shed = (s.shed - p.shed).max(0.0);
            row.throttled = (s.throttled - p.throttled).max(0.0);
            for (k, v) in &s.attempts {
                let before = p.attempts.get(k).copied().unwrap_or(0.0);
                row.attempts.insert(k.clone(), (v - before).max(0.0));
            }
        }
        out.push(row);
        prev = Some(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"# HELP portcullis_shed_total Attempts shed.
# TYPE portcullis_shed_total counter
portcullis_shed_total{protocol="oauth2"} 3
portcullis_shed_total{protocol="radius"} 1
portcullis_throttled_total 10
portcullis_pool_busy_threads 2
portcullis_attempts_total{outcome="success",class="client",protocol="oauth2"} 100
portcullis_attempts_total{outcome="failure",class="client",protocol="oauth2"} 5
portcullis_queue_wait_seconds_bucket{le="0.001"} 90
portcullis_queue_wait_seconds_bucket{le="0.01"} 100
portcullis_queue_wait_seconds_bucket{le="+Inf"} 100
portcullis_queue_wait_seconds_sum 0.05
portcullis_queue_wait_seconds_count 100
garbage line without value
weird{le="x} 1
"#;

    const B: &str = r#"portcullis_shed_total{protocol="oauth2"} 13
portcullis_shed_total{protocol="radius"} 1
portcullis_throttled_total 10
portcullis_pool_busy_threads 1
portcullis_attempts_total{outcome="success",class="client",protocol="oauth2"} 150
portcullis_attempts_total{outcome="failure",class="client",protocol="oauth2"} 5
portcullis_queue_wait_seconds_bucket{le="0.001"} 90
portcullis_queue_wait_seconds_bucket{le="0.01"} 130
portcullis_queue_wait_seconds_bucket{le="+Inf"} 150
portcullis_queue_wait_seconds_sum 1.05
portcullis_queue_wait_seconds_count 150
"#;

    #[test]
    fn labels_with_escapes_parse() {
        let s = parse(r#"m{a="x\"y",b="1,2"} 4.5 1700000000"#);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].labels["a"], "x\"y");
        assert_eq!(s[0].labels["b"], "1,2");
        assert_eq!(s[0].value, 4.5);
    }

    #[test]
    fn per_second_series_are_differences_of_cumulative_counters() {
        let a = Snapshot::from_samples(&parse(A));
        assert_eq!(a.shed, 4.0);
        assert_eq!(a.attempts["success"], 100.0);
        let b = Snapshot::from_samples(&parse(B));
        let s = series(&[(0, Some(a)), (1, None), (2, Some(b))]);
        assert_eq!(s.len(), 3);
        assert!(s[0].scraped && !s[1].scraped && s[2].scraped);
        assert_eq!(s[2].shed, 10.0);
        assert_eq!(s[2].throttled, 0.0);
        assert_eq!(s[2].pool_busy, Some(1.0));
        assert_eq!(s[2].attempts["success"], 50.0);
        assert_eq!(s[2].attempts["failure"], 0.0);
        // 50 jobs, 1.0 s of waiting in all: mean 20 ms.
        assert!((s[2].queue_wait_mean_ms.unwrap() - 20.0).abs() < 1e-9);
        // Deltas: 0 in <=1 ms, 40 in <=10 ms, 50 in +Inf: 99% (49.5) only in +Inf.
        assert_eq!(s[2].queue_wait_p99_ms, Some(f64::INFINITY));
    }
}
