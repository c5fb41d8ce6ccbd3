//! The section's table, its runs for the report, and its note.

use portcullis_lab::report::{Section, Table};
use portcullis_lab::runner::ScenarioResult;

use super::{Findings, LOGIN_USERS, MAX_STORM_RATE, RETENTION_GOAL, SECTION, ack_p99, rate_p99};

/// `r` carrying the section's verdict, so the report's verdict table says what the
/// section's table does (the lab's own judgement of a run has no thresholds here).
fn judged(r: &ScenarioResult, verdict: &str) -> ScenarioResult {
    let mut r = r.clone();
    if let Some(why) = verdict.strip_prefix("FAIL: ") {
        r.passed = false;
        r.failures.push(why.to_owned());
    }
    r
}

/// A server's runs for the report: alone, saturation, then each pair's logins and storm
/// beside the server and beside the stub; the verdict rides on the first storm's logins.
fn runs(f: &Findings) -> Vec<ScenarioResult> {
    let mut out = vec![f.alone.clone(), f.saturation.clone()];
    for (i, p) in f.pairs.iter().enumerate() {
        out.push(match i {
            0 => judged(&p.storm.logins, &f.verdict()),
            _ => p.storm.logins.clone(),
        });
        out.extend([
            p.storm.storm.clone(),
            p.control.logins.clone(),
            p.control.storm.clone(),
        ]);
    }
    out
}

/// Retention over every pair, then each pair's when there are several.
fn retention_cell(f: &Findings) -> String {
    let Some(r) = f.retention() else {
        return "-".into();
    };
    let each = f.retention_by_pair();
    if each.len() < 2 {
        return format!("{r:.2}");
    }
    let each: Vec<String> = each.iter().map(|x| format!("{x:.2}")).collect();
    format!("{r:.2} ({} by pair)", each.join(", "))
}

/// One server's row.
fn row(server: &str, f: &Findings) -> Vec<String> {
    let (alone, _) = rate_p99(&f.alone);
    let (with, control) = f.login_rates();
    let worst_p99 = |pick: fn(&super::Pair) -> &ScenarioResult| {
        f.pairs
            .iter()
            .map(|p| rate_p99(pick(p)).1)
            .fold(0.0, f64::max)
    };
    let (control_p99, with_p99) = (
        worst_p99(|p| &p.control.logins),
        worst_p99(|p| &p.storm.logins),
    );
    let (sat, _) = rate_p99(&f.saturation);
    let acked = super::mean(&f.pairs, |p| rate_p99(&p.storm.storm).0);
    let acked_p99 = f
        .pairs
        .iter()
        .map(|p| ack_p99(&p.storm.storm))
        .fold(0.0, f64::max);
    let of_durable = if sat > 0.0 {
        format!("{:.2}", acked / sat)
    } else {
        "-".into()
    };
    let (_, storm_acks) = f.acknowledged();
    vec![
        server.to_owned(),
        f.verdict(),
        format!("{alone:.1}"),
        format!("{control:.1}"),
        format!("{with:.1}"),
        retention_cell(f),
        format!("{control_p99:.0} / {with_p99:.0}"),
        format!("{sat:.0}"),
        format!("{:.0}", f.offered),
        format!("{acked:.0}"),
        of_durable,
        format!("{acked_p99:.0}"),
        format!("{storm_acks} / {}", f.stored.1),
        if f.nothing_acknowledged_unstored() {
            "yes".into()
        } else {
            "NO".into()
        },
    ]
}

/// The report's section (every run) and table (one row per server).
pub fn report(found: &[(String, Findings)]) -> (Section, Table) {
    let results = found.iter().flat_map(|(_, f)| runs(f)).collect();
    let rows = found.iter().map(|(server, f)| row(server, f)).collect();
    let section = Section {
        scenario: SECTION.into(),
        description: "Accounting storm beside logins: PAP logins alone, the accounting door's durable rate (closed-loop saturation), the same logins beside a storm at twice that rate sent to the server's accounting listener, and beside the same storm sent to a stub that acknowledges at once, second by second, as many records as the server did, and stores nothing (the control: the lab's own load), in the order storm, control, control, storm in the full demo".into(),
        results,
    };
    let table = Table {
        title: "Accounting storm beside logins".into(),
        columns: [
            "server",
            "verdict",
            "logins/s alone",
            "logins/s beside the control (storm to a stub)",
            "logins/s beside the storm",
            "retention vs control (goal >= 0.95)",
            "login p99 ms control / storm",
            "durable records/s (saturation)",
            "storm offered records/s",
            "storm acknowledged records/s",
            "acknowledged / durable",
            "storm ack p99 ms (acknowledged records only)",
            "storm acknowledged / stored",
            "every acknowledged record stored",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Section {SECTION}: {LOGIN_USERS} NAS users log in with PAP in a closed loop without pause, alone; then 128 devices send accounting records without pause (Start, Interim-Update, Stop in turn), whose acknowledged records/s is the durable rate the server sustains here; then the same logins run beside a storm of accounting records at twice that rate (capped at {MAX_STORM_RATE:.0}/s) from 250 devices (each its own loopback NAS address), open loop, retransmitting like NASes (after 1 s, twice), sent either to the server's accounting listener or (the control) to a stub in the demo's process that checks each record, acknowledges at once, in each second, as many records as the server acknowledged in that second of the first storm, drops the rest, and stores nothing. The full demo runs them in the order storm, control, control, storm (two pairs; --quick runs one), so a drift over the section weighs on both sides. The lab's generator runs on the same cores as the server, so logins beside the control already pay for it (compare with logins alone); retention is logins/s beside the storms over logins/s beside the controls, what the server's accounting work costs its logins, shown over every pair and for each. Latencies and the storm's acknowledgements are the worst and the mean over the storms. Verdict: PASS when retention is at least {RETENTION_GOAL} and every acknowledged record was stored. Every record is distinct, so the records the server's store gained during a run must be at least those it acknowledged (counted in the store before the first storm and after the last; more stored than acknowledged is work wasted: an answer that came after the lab's timeout, was lost, or was withheld because it was late). The storm's ack p99 is over its acknowledged records alone, from the intended send time: under 1 s, the drivers' retransmission timeout, means each was acknowledged before its NAS sent it again; acknowledged / durable is the storm's acknowledged records/s over the saturation run's (alone, while the storm runs beside logins that take the CPU first)."
        ),
    };
    (section, table)
}
