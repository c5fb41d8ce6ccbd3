//! What the demo hands out as it goes (issue 41 item 9): each section's tables as soon as
//! the section ends, the headline (the field reports' seed failures, naive baseline vs
//! Portcullis) first, so a newcomer sees a result within the first minute instead of one
//! table at the end.

use portcullis_lab::outcome::Outcome;
use portcullis_lab::report::{Section, Table};

/// A part of the demo that has just ended: what it adds to the report, in order.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Its name (a scenario's, or a section's such as `acct-storm-beside-logins`).
    pub name: String,
    /// Whether it is the headline: the seed failure the demo opens with.
    pub headline: bool,
    /// Its tables (a side-by-side table per scenario, and the cross-section tables the
    /// part completes, e.g. "RADIUS side by side" once both RADIUS sections ran).
    pub tables: Vec<Table>,
    /// Its sections (one per scenario run).
    pub sections: Vec<Section>,
}

/// The scenario the demo runs first: the field report's seed failure (three clients with
/// wrong passwords taking a naive server's workers from ten honest ones).
pub const HEADLINE: &str = "brute-force-3x1s";

/// The order the demo runs its scenarios in: the headline, then the other reports'
/// failures (RADIUS side by side, overload), then the rest. Names not listed run after
/// these, in the built-in order.
const ORDER: &[&str] = &[
    HEADLINE,
    "radius-demo-legit",
    "radius-demo-attack",
    "overload-2x",
    "brute-force-2x5s",
    "eap-login-storm",
    "handshake-cost",
    "connect-per-request",
];

/// Where `name` runs among the demo's scenarios (smaller first).
pub fn rank(name: &str) -> usize {
    ORDER.iter().position(|n| *n == name).unwrap_or(ORDER.len())
}

/// One row per server of a scenario: how its honest clients fared, and its verdict (the
/// scenario's thresholds).
pub fn side_by_side(section: &Section, headline: bool) -> Table {
    let rows = section
        .results
        .iter()
        .map(|r| {
            let legit = r.repeats.first().and_then(|rep| rep.legitimate.as_ref());
            let figures = match legit {
                Some(l) => vec![
                    format!("{:.1}%", l.success_rate * 100.0),
                    format!("{:.1}", l.throughput),
                    format!("{:.0}", l.p99_ms),
                    l.outcomes
                        .get(&Outcome::Timeout)
                        .copied()
                        .unwrap_or(0)
                        .to_string(),
                ],
                None => vec!["-".into(); 4],
            };
            let verdict = match (r.passed, r.thresholds.is_empty()) {
                // Nothing to meet but the lab's own checks (no token or accept for
                // wrong credentials or the wrong client): say so, not a bare PASS.
                (true, true) => "PASS (no thresholds: no wrong answers)".to_string(),
                (true, false) => "PASS".to_string(),
                (false, _) => format!("FAIL: {}", r.failures.join("; ")),
            };
            std::iter::once(r.target.clone())
                .chain(figures)
                .chain([verdict])
                .collect()
        })
        .collect();
    Table {
        title: match headline {
            true => format!(
                "Seed failure ({}): naive baseline vs Portcullis",
                section.scenario
            ),
            false => section.scenario.clone(),
        },
        columns: [
            "server",
            "honest requests succeeded",
            "honest successes/s",
            "honest p99 ms",
            "honest timeouts",
            "verdict (the scenario's thresholds)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!("{}: {}", section.scenario, section.description),
    }
}

#[cfg(test)]
mod tests {
    use portcullis_lab::runner::{ScenarioResult, ThresholdResult};
    use portcullis_lab::scenario::Credentials;

    use super::*;

    fn result(target: &str, thresholds: Vec<ThresholdResult>) -> ScenarioResult {
        let passed = thresholds.iter().all(|t| t.passed);
        ScenarioResult {
            scenario: "s".into(),
            description: String::new(),
            target: target.into(),
            driver: "radius".into(),
            scenario_toml: String::new(),
            seed: 1,
            repeats: Vec::new(),
            failures: match passed {
                true => Vec::new(),
                false => vec!["threshold legitimate success_rate >= 0.95 not met".into()],
            },
            thresholds,
            passed,
        }
    }

    fn threshold(passed: bool) -> ThresholdResult {
        ThresholdResult {
            rule: "legitimate success_rate >= 0.95".into(),
            values: vec![if passed { 1.0 } else { 0.25 }],
            passed,
        }
    }

    /// Issue 41 item 8 (found in a quick demo on an AMD EPYC): "radius-demo-attack" had no
    /// thresholds, and the naive baseline, its honest users 25% answered, read "PASS".
    #[test]
    fn a_verdict_says_when_there_was_nothing_to_meet() {
        let section = Section {
            scenario: "s".into(),
            description: String::new(),
            results: vec![
                result("none", Vec::new()),
                result("met", vec![threshold(true)]),
                result("missed", vec![threshold(false)]),
            ],
        };
        let verdicts: Vec<String> = side_by_side(&section, false)
            .rows
            .iter()
            .filter_map(|r| r.last().cloned())
            .collect();
        assert_eq!(verdicts[0], "PASS (no thresholds: no wrong answers)");
        assert_eq!(verdicts[1], "PASS");
        assert!(verdicts[2].starts_with("FAIL: threshold"), "{verdicts:?}");
    }

    #[test]
    fn every_attack_the_demo_runs_judges_what_is_left_for_honest_users() {
        for quick in [false, true] {
            for s in crate::scenarios(quick, 500.0, &[]).unwrap() {
                let attacked = s
                    .groups
                    .iter()
                    .any(|g| matches!(g.credentials, Credentials::WrongSecret));
                assert!(
                    !attacked || !s.thresholds.is_empty(),
                    "{}: guesses and no threshold",
                    s.raw.name
                );
            }
        }
    }
}
