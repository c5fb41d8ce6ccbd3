//! The demo's 802.1X section ("802.1X login storm", scenario `eap-login-storm`): what the
//! servers are given to serve EAP, and the side-by-side table built from the section's
//! groups (logins/s full and resumed per method, p99s, the share of logins that resumed,
//! retention of legitimate logins beside the guessing wave).

use std::path::PathBuf;

use portcullis_lab::record::{GroupResult, Outcome};
use portcullis_lab::report::{Section, Table};

/// What a demo server needs to serve EAP-TLS and EAP-TTLS/PAP.
#[derive(Debug, Clone)]
pub struct EapSetup {
    /// The CA (PEM) that issued the server and station certificates: the CA EAP-TLS
    /// client certificates must chain to.
    pub ca: PathBuf,
    /// The server certificate and key the stations verify.
    pub server: portcullis_lab::certs::Pair,
}

/// The section this table reads.
const STORM: &str = "eap-login-storm";
/// First-wave groups (no attack) and their second-wave twins (beside the guessers).
const WAVES: [(&str, &str); 4] = [
    ("tls-full", "tls-full-attacked"),
    ("tls-resumed", "tls-resumed-attacked"),
    ("ttls-full", "ttls-full-attacked"),
    ("ttls-resumed", "ttls-resumed-attacked"),
];
/// The guessing stations.
const GUESSERS: &str = "ttls-guessers";

/// Issue 25's table, one row per server, from the `eap-login-storm` section.
pub fn eap_table(sections: &[Section]) -> Option<Table> {
    let section = sections.iter().find(|s| s.scenario == STORM)?;
    let rows: Vec<Vec<String>> = section
        .results
        .iter()
        .filter_map(|r| {
            let groups = &r.repeats.first()?.groups;
            let g = |name: &str| groups.iter().find(|g| g.name == name);
            let (tls_full, tls_res) = (g(WAVES[0].0)?, g(WAVES[1].0)?);
            let (ttls_full, ttls_res) = (g(WAVES[2].0)?, g(WAVES[3].0)?);
            let per_s = |x: &GroupResult, resumed: bool| {
                x.eap.as_ref().map_or(0.0, |e| {
                    if resumed {
                        e.resumed_per_s
                    } else {
                        e.full_per_s
                    }
                })
            };
            let p99 = |x: &GroupResult, resumed: bool| {
                x.eap.as_ref().map_or("-".to_string(), |e| {
                    let (n, v) = if resumed {
                        (e.accepted_resumed, e.resumed_p99_ms)
                    } else {
                        (e.accepted_full, e.full_p99_ms)
                    };
                    if n == 0 {
                        "-".into()
                    } else {
                        format!("{v:.0}")
                    }
                })
            };
            // Of the resuming stations' accepted logins, the share that did resume.
            let share = |x: &GroupResult| {
                x.eap.as_ref().map_or("-".to_string(), |e| {
                    let all = e.accepted_full + e.accepted_resumed;
                    if all == 0 {
                        "-".into()
                    } else {
                        format!("{:.0}%", 100.0 * e.accepted_resumed as f64 / all as f64)
                    }
                })
            };
            let wave = |second: bool| -> f64 {
                WAVES
                    .iter()
                    .filter_map(|(a, b)| g(if second { b } else { a }))
                    .map(|x| x.throughput)
                    .sum()
            };
            let (alone, attacked) = (wave(false), wave(true));
            let retention = if alone > 0.0 {
                format!("{:.2}", attacked / alone)
            } else {
                "-".into()
            };
            let guesses = g(GUESSERS).map_or(0, |x| x.breaches);
            // Legitimate logins that got no final answer within the run's timeout.
            let (timeouts, completed) = WAVES
                .iter()
                .flat_map(|(a, b)| [g(a), g(b)])
                .flatten()
                .fold((0, 0), |(t, c), x| {
                    (
                        t + x.outcomes.get(&Outcome::Timeout).copied().unwrap_or(0),
                        c + x.completed,
                    )
                });
            let timeouts = if completed > 0 {
                format!("{:.1}%", 100.0 * timeouts as f64 / completed as f64)
            } else {
                "-".into()
            };
            let rounds = [tls_full, tls_res, ttls_full, ttls_res]
                .iter()
                .filter_map(|x| x.eap.as_ref())
                .map(|e| e.round_trips_mean)
                .fold(0.0, f64::max);
            Some(vec![
                r.target.clone(),
                format!("{:.1}", per_s(tls_full, false)),
                format!("{:.1}", per_s(tls_res, true)),
                format!("{:.1}", per_s(ttls_full, false)),
                format!("{:.1}", per_s(ttls_res, true)),
                format!("{} / {}", p99(tls_full, false), p99(tls_res, true)),
                format!("{} / {}", p99(ttls_full, false), p99(ttls_res, true)),
                format!("{} / {}", share(tls_res), share(ttls_res)),
                format!("{rounds:.1}"),
                format!("{alone:.1}"),
                format!("{attacked:.1}"),
                retention,
                timeouts,
                guesses.to_string(),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(Table {
        title: "802.1X login storm".into(),
        columns: [
            "server",
            "EAP-TLS full logins/s",
            "EAP-TLS resumed logins/s",
            "TTLS full logins/s",
            "TTLS resumed logins/s",
            "EAP-TLS p99 ms full / resumed",
            "TTLS p99 ms full / resumed",
            "resumed share TLS / TTLS",
            "round trips per login (max)",
            "legit logins/s, no attack",
            "legit logins/s, 50 guessers",
            "retention",
            "legit timeouts",
            "guesses accepted",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Section {STORM}: 200 stations associate at once (50 per column pair: EAP-TLS and EAP-TTLS/PAP, keeping no TLS session or resuming theirs after their first login), each logging in again as soon as its login ends; then 200 other stations of the same users do the same beside 50 stations guessing TTLS passwords. Logins/s are accepted logins of that kind per second of the first wave; p99 from the first Access-Request to the Access-Accept. The resumed share says how many of the resuming stations' logins the server let resume (a server without a session cache gives 0%). Retention is all legitimate logins/s of the second wave over the first; timeouts are legitimate logins without a final answer within the run's timeout (the station gives up and associates again). The lab's stations share the machine's cores with the server, so these rates are lower than a server alone would reach. scripts/eap-bench measures the same servers from outside with eapol_test, with CPU per login."
        ),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use portcullis_lab::eap::EapLogin;
    use portcullis_lab::record::GroupRecorder;
    use portcullis_lab::runner::{RepeatResult, ScenarioResult};

    /// A group that accepted `full` full and `resumed` resumed logins in 2 s.
    fn group(name: &str, full: u32, resumed: u32, legit: bool) -> GroupResult {
        let g = GroupRecorder::new(name, legit, Duration::from_secs(2));
        for i in 0..full + resumed {
            let login = EapLogin {
                round_trips: if i < full { 8 } else { 4 },
                resumed: i >= full,
                wrong_keys: false,
            };
            let latency = Duration::from_millis(if i < full { 40 } else { 10 });
            g.record(0, Outcome::Success, latency);
            g.eap.record(&login, Outcome::Success, latency);
        }
        g.finish()
    }

    fn result(target: &str, scale: u32) -> ScenarioResult {
        let mut groups = Vec::new();
        for (a, b) in WAVES {
            let resumed = if a.ends_with("resumed") {
                10 * scale
            } else {
                0
            };
            groups.push(group(a, 10, resumed, true));
            groups.push(group(b, 9, resumed, true));
        }
        groups.push(group(GUESSERS, 0, 0, false));
        ScenarioResult {
            scenario: STORM.into(),
            description: String::new(),
            target: target.into(),
            driver: "radius eap-tls, eap-ttls/pap".into(),
            scenario_toml: String::new(),
            seed: 1,
            repeats: vec![RepeatResult {
                repeat: 0,
                started_unix: 0,
                duration_s: 4.0,
                requests: 0,
                capped: false,
                groups,
                legitimate: None,
                server: Vec::new(),
                misdelivered: 0,
                breaches: 0,
            }],
            thresholds: Vec::new(),
            failures: Vec::new(),
            passed: true,
        }
    }

    #[test]
    fn issue_25_storm_table_splits_full_and_resumed_and_gives_retention() {
        let sections = vec![Section {
            scenario: STORM.into(),
            description: String::new(),
            results: vec![result("portcullis", 3), result("freeradius", 0)],
        }];
        let t = eap_table(&sections).expect("the storm section is there");
        assert_eq!(t.columns.len(), t.rows[0].len());
        let p = &t.rows[0];
        assert_eq!(p[0], "portcullis");
        // 10 full logins in 2 s; 30 resumed in 2 s.
        assert_eq!((p[1].as_str(), p[2].as_str()), ("5.0", "15.0"));
        assert_eq!(p[5], "40 / 10");
        assert_eq!(p[7], "75% / 75%");
        assert_eq!(p[12], "0.0%");
        let f = &t.rows[1];
        assert_eq!(
            (f[2].as_str(), f[5].as_str(), f[7].as_str()),
            ("0.0", "40 / -", "0% / 0%")
        );
        assert!(eap_table(&[]).is_none());
    }
}
