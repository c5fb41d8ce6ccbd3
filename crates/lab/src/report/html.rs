//! `report.html`: one self-contained page (inline CSS and SVG, no scripts, no network).
//! Results of one scenario against several targets share chart scales, so the eye compares
//! like with like.

use std::fmt::Write;

use super::svg::{self, Line, esc};
use super::{Report, Section, Table};
use crate::fingerprint::utc;
use crate::record::{GroupResult, OUTCOMES, Outcome};
use crate::runner::{RepeatResult, ScenarioResult};

const GROUP_COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn outcome_color(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "#2ca02c",
        Outcome::AuthFailure => "#9467bd",
        Outcome::Throttled => "#ff7f0e",
        Outcome::Shed => "#e377c2",
        Outcome::Timeout => "#d62728",
        Outcome::ConnectionError => "#7f7f7f",
        Outcome::WrongResponse => "#000000",
    }
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:18px auto;max-width:1380px;color:#222;padding:0 12px}
h1{font-size:26px;margin:4px 0}h2{font-size:20px;margin:26px 0 2px;border-top:2px solid #ddd;padding-top:12px}
h3{font-size:16px;margin:6px 0}p{margin:4px 0}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
td,th{border:1px solid #ddd;padding:2px 5px;text-align:right}
.col table{font-size:12px}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
.pass{color:#17803d;font-weight:600}.fail{color:#c0392b;font-weight:600}
.cols{display:grid;gap:18px}
.col{min-width:0}
.chart{width:100%;height:auto;display:block;margin:4px 0}
.ct{font-size:13px;font-weight:600;fill:#222}.tk{font-size:10px;fill:#555}.lg{font-size:11px;fill:#333}
.note{color:#555;font-size:13px}
pre{background:#f7f7f7;padding:8px;font-size:12px;overflow:auto}
.fp td{text-align:left}
"#;

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.2} ms")
    }
}

fn verdict(passed: bool) -> &'static str {
    if passed {
        r#"<span class="pass">PASS</span>"#
    } else {
        r#"<span class="fail">FAIL</span>"#
    }
}

/// Render the page.
pub fn render(r: &Report) -> String {
    let mut o = String::with_capacity(256 * 1024);
    let _ = write!(
        o,
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{t}</title><style>{CSS}</style></head><body><h1>{t}</h1>"#,
        t = esc(&r.title),
    );
    // Figures first (the verdicts, then the side-by-side tables), explanations after:
    // a reader sees what happened before reading how it was measured.
    let targets = r.verdicts_by_target();
    if targets.len() > 1 {
        o.push_str("<h2>Verdict by target</h2><table><tr><th>target</th><th>verdict</th><th>scenarios passed</th></tr>");
        for (t, passed, total) in &targets {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{passed} of {total}</td></tr>",
                esc(t),
                verdict(passed == total)
            );
        }
        o.push_str("</table>");
    } else {
        let _ = write!(o, "<p>Overall: {}</p>", verdict(r.passed()));
    }
    for t in &r.tables {
        table(&mut o, t);
    }
    headline(&mut o, r);
    if !r.notes.is_empty() || r.tables.iter().any(|t| !t.note.is_empty()) {
        o.push_str("<h2>How these were measured</h2>");
    }
    for n in &r.notes {
        let _ = write!(o, r#"<p class="note">{}</p>"#, esc(n));
    }
    for t in r.tables.iter().filter(|t| !t.note.is_empty()) {
        let _ = write!(
            o,
            r#"<p class="note"><b>{}</b>: {}</p>"#,
            esc(&t.title),
            esc(&t.note)
        );
    }
    for s in &r.sections {
        section(&mut o, s);
    }
    let f = &r.fingerprint;
    let seeds: Vec<String> = r
        .sections
        .iter()
        .flat_map(|s| s.results.iter().map(|x| x.seed.to_string()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let _ = write!(
        o,
        r#"<h2>Fingerprint</h2><table class="fp"><tr><td>CPU</td><td>{}</td></tr><tr><td>cores</td><td>{}</td></tr><tr><td>git commit</td><td>{}</td></tr><tr><td>seed</td><td>{}</td></tr><tr><td>os</td><td>{}</td></tr><tr><td>portcullis</td><td>{}</td></tr><tr><td>created (UTC)</td><td>{}</td></tr></table></body></html>"#,
        esc(&f.cpu),
        f.cores,
        esc(&f.git_commit),
        seeds.join(", "),
        esc(&f.os),
        esc(&f.version),
        utc(f.created_unix)
    );
    o
}

fn first_non_legit(rep: &RepeatResult) -> Option<&GroupResult> {
    rep.groups.iter().find(|g| !g.expects_success)
}

fn table(o: &mut String, t: &Table) {
    let _ = write!(o, "<h2>{}</h2><table><tr>", esc(&t.title));
    for c in &t.columns {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr>");
    for row in &t.rows {
        o.push_str("<tr>");
        for cell in row {
            let _ = write!(o, "<td>{}</td>", esc(cell));
        }
        o.push_str("</tr>");
    }
    // Its note (how it was measured) comes after every table, under the explanations.
    o.push_str("</table>");
}

fn headline(o: &mut String, r: &Report) {
    o.push_str("<h2>Summary</h2><table><tr><th>scenario</th><th>target</th><th>legitimate success</th><th>legitimate tokens/s</th><th>p50</th><th>p99</th><th>timeouts</th><th>other clients: answered/s, p50</th><th>verdict</th></tr>");
    for s in &r.sections {
        for res in &s.results {
            let Some(rep) = res.repeats.first() else {
                continue;
            };
            let other = first_non_legit(rep)
                .map(|g| format!("{:.1}/s, {}", g.completed_per_s, ms(g.p50_ms)))
                .unwrap_or_else(|| "-".into());
            match &rep.legitimate {
                Some(l) => {
                    let _ = write!(
                        o,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(&res.scenario),
                        esc(&res.target),
                        pct(l.success_rate),
                        l.throughput,
                        ms(l.p50_ms),
                        ms(l.p99_ms),
                        l.outcomes.get(&Outcome::Timeout).copied().unwrap_or(0),
                        other,
                        verdict(res.passed)
                    );
                }
                None => {
                    let g = rep.groups.first();
                    let _ = write!(
                        o,
                        "<tr><td>{}</td><td>{}</td><td colspan=6>{}</td><td>{}</td></tr>",
                        esc(&res.scenario),
                        esc(&res.target),
                        g.map(|g| format!(
                            "{:.0} completed/s, p99 {}",
                            g.completed_per_s,
                            ms(g.p99_ms)
                        ))
                        .unwrap_or_default(),
                        verdict(res.passed)
                    );
                    let _ = other;
                }
            }
        }
    }
    o.push_str("</table>");
}

/// Shared chart scales of a section.
struct Scales {
    x: f64,
    rate: f64,
    p99: f64,
    wait: f64,
    server: f64,
}

fn scales(s: &Section) -> Scales {
    let mut sc = Scales {
        x: 1.0,
        rate: 1.0,
        p99: 1.0,
        wait: 1.0,
        server: 1.0,
    };
    for res in &s.results {
        let Some(rep) = res.repeats.first() else {
            continue;
        };
        sc.x = sc.x.max(rep.duration_s);
        for g in &rep.groups {
            for row in &g.series {
                // Answers to requests sent just before the end land in the next seconds.
                sc.x = sc.x.max(row.second as f64 + 1.0);
                sc.rate = sc.rate.max(row.completed as f64);
                sc.p99 = sc.p99.max(row.p99_ms);
            }
        }
        for row in &rep.server {
            if let Some(w) = row.queue_wait_mean_ms {
                sc.wait = sc.wait.max(w);
            }
            sc.server = sc
                .server
                .max(row.shed)
                .max(row.throttled)
                .max(row.pool_busy.unwrap_or(0.0));
        }
    }
    let up = |v: f64| {
        let st = svg::nice_step(v * 1.05, 4.0);
        (v * 1.05 / st).ceil() * st
    };
    sc.rate = up(sc.rate);
    sc.p99 = up(sc.p99);
    sc.wait = up(sc.wait);
    sc.server = up(sc.server);
    sc
}

fn section(o: &mut String, s: &Section) {
    let _ = write!(
        o,
        "<h2>{}</h2><p>{}</p>",
        esc(&s.scenario),
        esc(&s.description)
    );
    let sc = scales(s);
    let _ = write!(
        o,
        r#"<div class="cols" style="grid-template-columns:repeat({},minmax(0,1fr))">"#,
        s.results.len().max(1)
    );
    for res in &s.results {
        column(o, res, &sc);
    }
    o.push_str("</div>");
    if let Some(res) = s.results.first() {
        let _ = write!(
            o,
            "<details><summary>Scenario file</summary><pre>{}</pre></details>",
            esc(&res.scenario_toml)
        );
    }
}

fn group_table(o: &mut String, rep: &RepeatResult) {
    o.push_str("<table><tr><th>group</th><th>done</th><th>success</th><th>auth fail</th><th>429</th><th>503</th><th>timeout</th><th>conn err</th><th>wrong</th><th>/s</th><th>p50</th><th>p99</th><th>max</th></tr>");
    // The merged row only adds information when several groups expect success.
    let merged = rep
        .legitimate
        .iter()
        .filter(|_| rep.groups.iter().filter(|g| g.expects_success).count() > 1);
    for g in rep.groups.iter().chain(merged) {
        let c = |x: Outcome| g.outcomes.get(&x).copied().unwrap_or(0);
        let _ = write!(
            o,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&g.name),
            if g.expects_success {
                ""
            } else {
                " (bad creds)"
            },
            g.completed,
            c(Outcome::Success),
            c(Outcome::AuthFailure),
            c(Outcome::Throttled),
            c(Outcome::Shed),
            c(Outcome::Timeout),
            c(Outcome::ConnectionError),
            c(Outcome::WrongResponse),
            g.completed_per_s,
            ms(g.p50_ms),
            ms(g.p99_ms),
            ms(g.max_ms)
        );
    }
    o.push_str("</table>");
}

/// Connection set-up per group (groups that opened connections): one bar per group, as
/// long as its completed calls per second, split by where its latency went (TCP connect,
/// TLS handshake, the request), and the figures behind it.
fn connections(o: &mut String, rep: &RepeatResult) {
    let groups: Vec<&GroupResult> = rep
        .groups
        .iter()
        .filter(|g| g.connections.is_some())
        .collect();
    if groups.is_empty() {
        return;
    }
    let top = groups
        .iter()
        .map(|g| g.completed_per_s)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (w, row, label) = (760.0, 26.0, 150.0);
    let h = row * groups.len() as f64 + 24.0;
    let _ = write!(
        o,
        r##"<svg class="conn" viewBox="0 0 {w} {h}" width="100%" style="max-width:{w}px" role="img" aria-label="calls per second and latency split by group">"##
    );
    for (i, g) in groups.iter().enumerate() {
        let Some(c) = &g.connections else { continue };
        let y = 4.0 + row * i as f64;
        let len = (w - label - 70.0) * g.completed_per_s / top;
        let parts = [
            (c.connect_share, "#8e6cc0", "TCP connect"),
            (c.tls_share, "#d9822b", "TLS handshake"),
            (
                (1.0 - c.connect_share - c.tls_share).max(0.0),
                "#2b7bb9",
                "request",
            ),
        ];
        let _ = write!(
            o,
            r##"<text x="0" y="{:.1}" font-size="12">{}</text>"##,
            y + 14.0,
            esc(&g.name)
        );
        let mut x = label;
        for (share, color, what) in parts {
            let seg = len * share;
            let _ = write!(
                o,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{seg:.1}" height="18" fill="{color}"><title>{what}: {}</title></rect>"##,
                pct(share)
            );
            x += seg;
        }
        let _ = write!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-size="12">{:.1}/s</text>"##,
            x + 4.0,
            y + 14.0,
            g.completed_per_s
        );
    }
    let _ = write!(
        o,
        r##"<text x="0" y="{:.1}" font-size="11"><tspan fill="#8e6cc0">&#9632; TCP connect</tspan> <tspan fill="#d9822b">&#9632; TLS handshake</tspan> <tspan fill="#2b7bb9">&#9632; request</tspan> (share of each group's latency; bar length: calls/s)</text></svg>"##,
        h - 4.0
    );
    o.push_str("<table><tr><th>group</th><th>calls/s</th><th>connections</th><th>TCP connect</th><th>TLS handshakes</th><th>resumed</th><th>TLS handshake</th><th>latency in connect</th><th>in TLS</th><th>in request</th></tr>");
    for g in groups {
        let Some(c) = &g.connections else { continue };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&g.name),
            g.completed_per_s,
            c.opened,
            ms(c.connect_ms_mean),
            c.tls_handshakes,
            pct(c.resumed_share),
            ms(c.tls_ms_mean),
            pct(c.connect_share),
            pct(c.tls_share),
            pct((1.0 - c.connect_share - c.tls_share).max(0.0))
        );
    }
    o.push_str("</table>");
}

/// LDAP groups: binds per second, the user's bind p50/p99, every operation's outcomes by
/// result code, and the honest users locked out.
fn ldap(o: &mut String, rep: &RepeatResult) {
    let groups: Vec<_> = rep
        .groups
        .iter()
        .filter_map(|g| g.ldap.as_ref().map(|l| (g, l)))
        .collect();
    if groups.is_empty() {
        return;
    }
    let codes = |m: &std::collections::BTreeMap<u16, u64>| {
        m.iter()
            .map(|(c, n)| format!("{c} {}: {n}", crate::ldap::stats::code_name(*c)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    o.push_str("<table><tr><th>group</th><th>binds/s</th><th>accepted/s</th><th>bind p50</th><th>bind p99</th><th>binds by result code</th><th>other operations</th><th>locked out</th></tr>");
    for (g, l) in groups {
        let mut other = Vec::new();
        for (what, m) in [
            ("StartTLS", &l.starttls_codes),
            ("service bind", &l.service_bind_codes),
            ("user search", &l.lookup_codes),
            ("search after bind", &l.search_codes),
        ] {
            if !m.is_empty() {
                other.push(format!("{what}: {}", codes(m)));
            }
        }
        if l.no_entry > 0 {
            other.push(format!("no entry: {}", l.no_entry));
        }
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>",
            esc(&g.name),
            l.binds_per_s,
            l.accepted_per_s,
            ms(l.bind_p50_ms),
            ms(l.bind_p99_ms),
            esc(&codes(&l.bind_codes)),
            esc(&other.join("; ")),
            if l.locked_out.is_empty() {
                ""
            } else {
                r#" class="fail""#
            },
            if l.locked_out.is_empty() {
                "none".to_string()
            } else {
                esc(&l.locked_out.join(", "))
            }
        );
    }
    o.push_str("</table>");
}

fn column(o: &mut String, res: &ScenarioResult, sc: &Scales) {
    let _ = write!(
        o,
        r#"<div class="col"><h3>{} &mdash; {}</h3><p class="note">{}</p>"#,
        esc(&res.target),
        verdict(res.passed),
        esc(&res.driver)
    );
    let Some(rep) = res.repeats.first() else {
        o.push_str("<p>no data</p></div>");
        return;
    };
    group_table(o, rep);
    connections(o, rep);
    ldap(o, rep);
    if res.repeats.len() > 1 {
        o.push_str(
            "<table><tr><th>repeat</th><th>legit success</th><th>tokens/s</th><th>p99</th></tr>",
        );
        for r in &res.repeats {
            if let Some(l) = &r.legitimate {
                let _ = write!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
                    r.repeat + 1,
                    pct(l.success_rate),
                    l.throughput,
                    ms(l.p99_ms)
                );
            }
        }
        o.push_str("</table><p class=\"note\">Charts show repeat 1.</p>");
    }
    for t in &res.thresholds {
        let _ = write!(
            o,
            r#"<p class="note">{} {} (observed {})</p>"#,
            verdict(t.passed),
            esc(&t.rule),
            t.values
                .iter()
                .map(|v| format!("{v:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for f in &res.failures {
        let _ = write!(o, r#"<p class="fail">{}</p>"#, esc(f));
    }
    let col = |i: usize| GROUP_COLORS[i % GROUP_COLORS.len()];
    let rate: Vec<Line<'_>> = rep
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| Line {
            name: &g.name,
            color: col(i),
            points: g
                .series
                .iter()
                .map(|r| (r.second as f64 + 0.5, r.completed as f64))
                .collect(),
            dashed: !g.expects_success,
        })
        .collect();
    o.push_str(&svg::lines(
        "Completed requests per second",
        "req/s",
        &rate,
        sc.x,
        sc.rate,
    ));
    let p99: Vec<Line<'_>> = rep
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| Line {
            name: &g.name,
            color: col(i),
            points: g
                .series
                .iter()
                .filter(|r| r.completed > 0)
                .map(|r| (r.second as f64 + 0.5, r.p99_ms))
                .collect(),
            dashed: !g.expects_success,
        })
        .collect();
    o.push_str(&svg::lines(
        "p99 latency per second (from intended send time in open loop)",
        "ms",
        &p99,
        sc.x,
        sc.p99,
    ));
    let cats: Vec<(&str, &str)> = OUTCOMES
        .iter()
        .map(|x| (x.name(), outcome_color(*x)))
        .collect();
    for g in rep.groups.iter().take(3) {
        let bars: Vec<(f64, Vec<f64>)> = g
            .series
            .iter()
            .map(|r| {
                (
                    r.second as f64,
                    OUTCOMES
                        .iter()
                        .map(|x| r.outcomes.get(x).copied().unwrap_or(0) as f64)
                        .collect(),
                )
            })
            .collect();
        let title = format!("Outcomes per second: {}", g.name);
        o.push_str(&svg::stacked(&title, "req/s", &cats, &bars, sc.x, sc.rate));
    }
    if rep.server.iter().any(|r| r.scraped) {
        let wait = Line {
            name: "mean queue wait",
            color: "#1f77b4",
            points: rep
                .server
                .iter()
                .filter_map(|r| r.queue_wait_mean_ms.map(|w| (r.second as f64 + 1.0, w)))
                .collect(),
            dashed: false,
        };
        o.push_str(&svg::lines(
            "Server: queue wait (ms, from /metrics)",
            "ms",
            &[wait],
            sc.x,
            sc.wait,
        ));
        let pts = |f: &dyn Fn(&crate::scrape::ServerSecond) -> Option<f64>| -> Vec<(f64, f64)> {
            rep.server
                .iter()
                .filter(|r| r.scraped)
                .filter_map(|r| f(r).map(|v| (r.second as f64 + 1.0, v)))
                .collect()
        };
        let server = [
            Line {
                name: "busy pool threads",
                color: "#9467bd",
                points: pts(&|r| r.pool_busy),
                dashed: false,
            },
            Line {
                name: "shed/s",
                color: "#e377c2",
                points: pts(&|r| Some(r.shed)),
                dashed: false,
            },
            Line {
                name: "throttled/s",
                color: "#ff7f0e",
                points: pts(&|r| Some(r.throttled)),
                dashed: false,
            },
        ];
        o.push_str(&svg::lines(
            "Server: busy threads, shed/s, throttled/s",
            "count",
            &server,
            sc.x,
            sc.server,
        ));
        let missed = rep.server.iter().filter(|r| !r.scraped).count();
        if missed > 0 {
            let _ = write!(
                o,
                r#"<p class="note">{missed} scrape(s) of /metrics got no answer.</p>"#
            );
        }
    } else {
        o.push_str(r#"<p class="note">Server metrics were not scraped.</p>"#);
    }
    o.push_str("</div>");
}
