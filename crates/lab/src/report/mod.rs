//! Outputs of a run in `--out DIR`: `summary.json` (everything, machine-readable),
//! `timeseries.csv` (one row per group or server per second), `groups.csv` (one row per
//! group: summary and connection set-up) and `report.html`
//! (self-contained: inline SVG charts drawn here, no scripts, no network).
//!
//! A [`Report`] holds sections, one per scenario; a section holds one result per target,
//! so `portcullis demo` shows the naive baseline and Portcullis side by side.

mod html;
mod svg;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::fingerprint::Fingerprint;
use crate::record::OUTCOMES;
use crate::runner::ScenarioResult;

/// Everything a report shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Title.
    pub title: String,
    /// Machine, commit, seed context.
    pub fingerprint: Fingerprint,
    /// Sentences shown under the title (e.g. which hash cost the demo used).
    pub notes: Vec<String>,
    /// Comparisons across sections (e.g. the demo's RADIUS side-by-side table).
    #[serde(default)]
    pub tables: Vec<Table>,
    /// One per scenario.
    pub sections: Vec<Section>,
}

/// A small table of figures drawn from several sections, shown under the notes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Table {
    /// Heading.
    pub title: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Cells, one row per target, as many as `columns`.
    pub rows: Vec<Vec<String>>,
    /// How the figures were obtained.
    pub note: String,
}

impl Table {
    /// The table as aligned plain text (title, header, rows; no note), for a terminal.
    pub fn to_text(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                match widths.get_mut(i) {
                    Some(w) => *w = (*w).max(cell.chars().count()),
                    None => widths.push(cell.chars().count()),
                }
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
                .collect();
            padded.join(" | ").trim_end().to_string()
        };
        let mut out = format!("== {} ==\n{}\n", self.title, line(&self.columns));
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }
}

/// One scenario run against one or more targets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Section {
    /// Scenario name.
    pub scenario: String,
    /// Its description.
    pub description: String,
    /// One result per target, shown side by side.
    pub results: Vec<ScenarioResult>,
}

impl Report {
    /// Per target (in order of first appearance): scenarios passed and scenarios run.
    /// A side-by-side demo is judged per target: the baseline failing is its point.
    pub fn verdicts_by_target(&self) -> Vec<(String, usize, usize)> {
        let mut out: Vec<(String, usize, usize)> = Vec::new();
        for r in self.sections.iter().flat_map(|s| s.results.iter()) {
            let i = match out.iter().position(|(t, _, _)| *t == r.target) {
                Some(i) => i,
                None => {
                    out.push((r.target.clone(), 0, 0));
                    out.len() - 1
                }
            };
            out[i].1 += usize::from(r.passed);
            out[i].2 += 1;
        }
        out
    }

    /// Whether every result passed.
    pub fn passed(&self) -> bool {
        self.sections
            .iter()
            .all(|s| s.results.iter().all(|r| r.passed))
    }

    /// Write the three files into `dir` (created if missing); returns the HTML path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, LabError> {
        let err = |p: &Path, e: std::io::Error| LabError::Output(format!("{}: {e}", p.display()));
        std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
        let json =
            serde_json::to_string_pretty(self).map_err(|e| LabError::Output(e.to_string()))?;
        let p = dir.join("summary.json");
        std::fs::write(&p, json).map_err(|e| err(&p, e))?;
        let p = dir.join("timeseries.csv");
        std::fs::write(&p, self.csv()).map_err(|e| err(&p, e))?;
        let p = dir.join("groups.csv");
        std::fs::write(&p, self.groups_csv()).map_err(|e| err(&p, e))?;
        let p = dir.join("report.html");
        std::fs::write(&p, html::render(self)).map_err(|e| err(&p, e))?;
        Ok(p)
    }

    /// The CSV text: a header, then per scenario, target, repeat and second one row per
    /// group and one `server` row (server columns empty on group rows and vice versa).
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "scenario,target,repeat,series,second,completed,outstanding,p50_ms,p99_ms",
        );
        for o in OUTCOMES {
            out.push(',');
            out.push_str(o.name());
        }
        out.push_str(",queue_wait_mean_ms,queue_wait_p99_ms,server_shed,server_throttled,pool_busy,server_attempts\n");
        let opt = |v: Option<f64>| {
            v.filter(|x| x.is_finite())
                .map(|x| format!("{x:.3}"))
                .unwrap_or_default()
        };
        for s in &self.sections {
            for r in &s.results {
                for rep in &r.repeats {
                    let lead = format!(
                        "{},{},{}",
                        csv_field(&r.scenario),
                        csv_field(&r.target),
                        rep.repeat
                    );
                    for g in &rep.groups {
                        for row in &g.series {
                            out.push_str(&format!(
                                "{lead},{},{},{},{},{:.3},{:.3}",
                                csv_field(&g.name),
                                row.second,
                                row.completed,
                                row.outstanding,
                                row.p50_ms,
                                row.p99_ms
                            ));
                            for o in OUTCOMES {
                                out.push_str(&format!(
                                    ",{}",
                                    row.outcomes.get(&o).copied().unwrap_or(0)
                                ));
                            }
                            out.push_str(",,,,,,\n");
                        }
                    }
                    for row in &rep.server {
                        out.push_str(&format!("{lead},server,{},,,,", row.second));
                        out.push_str(&",".repeat(OUTCOMES.len()));
                        if row.scraped {
                            out.push_str(&format!(
                                ",{},{},{},{},{},{}\n",
                                opt(row.queue_wait_mean_ms),
                                opt(row.queue_wait_p99_ms),
                                row.shed,
                                row.throttled,
                                opt(row.pool_busy),
                                row.attempts.values().sum::<f64>()
                            ));
                        } else {
                            out.push_str(",,,,,,\n");
                        }
                    }
                }
            }
        }
        out
    }
}

impl Report {
    /// One row per scenario, target, repeat and group: the group's summary figures, its
    /// connection set-up (empty for groups that opened no connection) and its LDAP figures
    /// (binds/s, the bind's p50/p99, binds by result code as `code=count` words, locked-out
    /// users; empty for other drivers).
    pub fn groups_csv(&self) -> String {
        let mut out = String::from(
            "scenario,target,repeat,group,expects_success,completed,success_rate,completed_per_s,\
             throughput,mean_ms,p50_ms,p99_ms,max_ms,connections,connect_ms_mean,tls_handshakes,\
             tls_ms_mean,resumed,resumed_share,connect_share,tls_share,ldap_binds_per_s,\
             ldap_bind_p50_ms,ldap_bind_p99_ms,ldap_bind_codes,ldap_locked_out\n",
        );
        for s in &self.sections {
            for r in &s.results {
                for rep in &r.repeats {
                    for g in &rep.groups {
                        out.push_str(&format!(
                            "{},{},{},{},{},{},{:.4},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3}",
                            csv_field(&r.scenario),
                            csv_field(&r.target),
                            rep.repeat,
                            csv_field(&g.name),
                            g.expects_success,
                            g.completed,
                            g.success_rate,
                            g.completed_per_s,
                            g.throughput,
                            g.mean_ms,
                            g.p50_ms,
                            g.p99_ms,
                            g.max_ms
                        ));
                        match &g.connections {
                            Some(c) => out.push_str(&format!(
                                ",{},{:.3},{},{:.3},{},{:.4},{:.4},{:.4}",
                                c.opened,
                                c.connect_ms_mean,
                                c.tls_handshakes,
                                c.tls_ms_mean,
                                c.resumed,
                                c.resumed_share,
                                c.connect_share,
                                c.tls_share
                            )),
                            None => out.push_str(",,,,,,,,"),
                        }
                        match &g.ldap {
                            Some(l) => out.push_str(&format!(
                                ",{:.3},{:.3},{:.3},{},{}\n",
                                l.binds_per_s,
                                l.bind_p50_ms,
                                l.bind_p99_ms,
                                l.bind_codes
                                    .iter()
                                    .map(|(c, n)| format!("{c}={n}"))
                                    .collect::<Vec<_>>()
                                    .join(" "),
                                csv_field(&l.locked_out.join(" "))
                            )),
                            None => out.push_str(",,,,,\n"),
                        }
                    }
                }
            }
        }
        out
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests;
