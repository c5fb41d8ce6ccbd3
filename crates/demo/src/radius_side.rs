//! Issue 12's "RADIUS side by side" table, from the demo's two RADIUS sections.

use portcullis_lab::report::{Section, Table};

/// Section names of the RADIUS side-by-side pair: the same honest users alone, then with
/// 50 password-guessing stations.
pub(crate) const RADIUS_ALONE: &str = "radius-demo-legit";
pub(crate) const RADIUS_ATTACKED: &str = "radius-demo-attack";

/// Issue 12's table: per server, honest users' accepts/s alone and under attack, the
/// retention (their ratio) and p99 latencies, from the two RADIUS side-by-side sections.
pub fn radius_table(sections: &[Section]) -> Option<Table> {
    let find = |name: &str| sections.iter().find(|s| s.scenario == name);
    let (alone, attacked) = (find(RADIUS_ALONE)?, find(RADIUS_ATTACKED)?);
    let legit = |s: &Section, target: &str| {
        s.results
            .iter()
            .find(|r| r.target == target)
            .and_then(|r| r.repeats.first()?.legitimate.clone())
    };
    let rows: Vec<Vec<String>> = attacked
        .results
        .iter()
        .filter_map(|r| {
            let (a, b) = (legit(alone, &r.target)?, legit(attacked, &r.target)?);
            let retention = if a.throughput > 0.0 {
                format!("{:.2}", b.throughput / a.throughput)
            } else {
                "-".into()
            };
            Some(vec![
                r.target.clone(),
                format!("{:.1}", a.throughput),
                format!("{:.1}", b.throughput),
                retention,
                format!("{:.0}", a.p99_ms),
                format!("{:.0}", b.p99_ms),
                format!("{:.1}%", b.timeout_rate * 100.0),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(Table {
        title: "RADIUS side by side".into(),
        columns: [
            "server",
            "accepts/s, no attack",
            "accepts/s, 50 attackers",
            "retention",
            "p99 ms, no attack",
            "p99 ms, 50 attackers",
            "timeouts, 50 attackers",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Ten NAS users in a closed loop without pause (sections {RADIUS_ALONE} and {RADIUS_ATTACKED}); the attack adds 50 stations guessing other users' passwords at 100 requests/s in all. Retention is accepts/s under attack over accepts/s without. Same users, hash cost and reject delay on every server, each started fresh. scripts/radius-bench runs the same comparison at the production cost (PBKDF2-SHA256 x600,000)."
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_lab::record::{GroupRecorder, Outcome, merge};
    use portcullis_lab::runner::{RepeatResult, ScenarioResult};
    use std::time::Duration;

    /// A result whose legitimate group made `accepts` successes in 2 s (the slowest at
    /// `slow_ms`) and `timeouts` timeouts.
    fn result(target: &str, accepts: u32, slow_ms: u64, timeouts: u32) -> ScenarioResult {
        let g = GroupRecorder::new("legitimate", true, Duration::from_secs(2));
        for i in 0..accepts {
            let ms = if i == 0 { slow_ms } else { 5 };
            g.record(0, Outcome::Success, Duration::from_millis(ms));
        }
        for _ in 0..timeouts {
            g.record(1, Outcome::Timeout, Duration::from_secs(10));
        }
        ScenarioResult {
            scenario: String::new(),
            description: String::new(),
            target: target.into(),
            driver: "radius".into(),
            scenario_toml: String::new(),
            seed: 1,
            repeats: vec![RepeatResult {
                repeat: 0,
                started_unix: 0,
                duration_s: 2.0,
                requests: u64::from(accepts + timeouts),
                capped: false,
                groups: vec![g.finish()],
                legitimate: Some(merge("legitimate", &[g.raw()], Duration::from_secs(2))),
                server: Vec::new(),
                misdelivered: 0,
                breaches: 0,
            }],
            thresholds: Vec::new(),
            failures: Vec::new(),
            passed: true,
        }
    }

    fn section(name: &str, results: Vec<ScenarioResult>) -> Section {
        Section {
            scenario: name.into(),
            description: String::new(),
            results,
        }
    }

    #[test]
    fn radius_table_gives_each_server_its_retention_under_attack() {
        let sections = vec![
            section(
                RADIUS_ALONE,
                vec![
                    result("portcullis", 100, 5, 0),
                    result("freeradius", 40, 5, 0),
                ],
            ),
            section(
                RADIUS_ATTACKED,
                vec![
                    result("portcullis", 96, 5, 0),
                    result("freeradius", 2, 900, 2),
                ],
            ),
        ];
        let t = radius_table(&sections).expect("both sections present");
        assert_eq!(t.columns.len(), 7);
        assert_eq!(
            t.rows[0],
            ["portcullis", "50.0", "48.0", "0.96", "5", "5", "0.0%"]
        );
        assert_eq!(t.rows[1][0], "freeradius");
        assert_eq!(t.rows[1][1..4], ["20.0", "1.0", "0.05"]);
        assert!(t.rows[1][5].parse::<f64>().unwrap() >= 900.0);
        assert_eq!(t.rows[1][6], "50.0%");
        // Without the attacked section there is nothing to compare.
        assert!(radius_table(&sections[..1]).is_none());
    }
}
