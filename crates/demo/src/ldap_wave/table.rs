//! The section's table and its verdict against issue 39's goals.

use portcullis_lab::report::Table;

use super::{GUESSERS, TITLE, VICTIM, WaveRun};

/// The bar a server is held to (issue 39).
#[derive(Debug, Clone, Copy)]
pub struct Goals {
    /// Binds/s alone over the reference's (slapd's), at least.
    pub over_reference: f64,
    /// Binds/s alone over what the hash pool alone derives, at least.
    pub of_pool: f64,
    /// Honest binds/s under the wave over alone, at least.
    pub retention: f64,
}

impl Goals {
    /// Issue 39's: 3.5x slapd's binds/s, 0.8 of the pool alone, retention 0.95; and the
    /// victim never locked out of its trusted source (not a number).
    pub const ISSUE: Goals = Goals {
        over_reference: 3.5,
        of_pool: 0.8,
        retention: 0.95,
    };
}

/// One row's verdict: the reference (slapd) is not judged; any other server is held to
/// `goals` (against `reference`'s binds/s and `pool_per_s`), and its victim must bind.
pub fn verdict(r: &WaveRun, reference: Option<&WaveRun>, pool_per_s: f64, goals: &Goals) -> String {
    if r.reference {
        return "- (the reference)".into();
    }
    let mut fails = Vec::new();
    let mut passes = Vec::new();
    let mut check = |ok: bool, text: String| match ok {
        true => passes.push(text),
        false => fails.push(text),
    };
    match reference.filter(|x| x.alone.binds_per_s > 0.0) {
        Some(x) => {
            let k = r.alone.binds_per_s / x.alone.binds_per_s;
            check(
                k >= goals.over_reference,
                format!(
                    "{k:.2}x {}'s binds/s (goal {:.1}x)",
                    x.server, goals.over_reference
                ),
            );
        }
        None => check(false, "no reference binds/s to compare with".into()),
    }
    let of_pool = if pool_per_s > 0.0 {
        r.alone.binds_per_s / pool_per_s
    } else {
        0.0
    };
    check(
        of_pool >= goals.of_pool,
        format!("{of_pool:.2} of the pool alone (goal {:.2})", goals.of_pool),
    );
    let k = r.retention().unwrap_or(0.0);
    check(
        k >= goals.retention,
        format!("retention {k:.2} (goal {:.2})", goals.retention),
    );
    check(
        !r.victim_locked(),
        match r.victim_locked() {
            true => format!("user{VICTIM} locked out"),
            false => format!("user{VICTIM} not locked out"),
        },
    );
    match fails.is_empty() {
        true => format!("PASS: {}", passes.join("; ")),
        false => format!("FAIL: {}; met: {}", fails.join("; "), passes.join("; ")),
    }
}

/// The section's table: one row per server.
pub fn table(runs: &[WaveRun], pool_per_s: f64, goals: &Goals) -> Table {
    let reference = runs.iter().find(|r| r.reference);
    let rows = runs
        .iter()
        .map(|r| {
            let ratio = |v: f64, over: f64| match over > 0.0 {
                true => format!("{:.2}", v / over),
                false => "-".into(),
            };
            vec![
                r.server.clone(),
                format!("{:.1}", r.alone.binds_per_s),
                format!("{:.0}", r.alone.p99_ms),
                r.alone
                    .cpu_ms_per_bind()
                    .map_or("-".into(), |v| format!("{v:.1}")),
                format!(
                    "{:.1} (p99 {:.0} ms)",
                    r.attacked.binds_per_s, r.attacked.p99_ms
                ),
                r.retention().map_or("-".into(), |k| format!("{k:.2}")),
                format!("{:.0}", r.attacked.guesses_per_s),
                format!(
                    "{} (its right password after the wave: result {})",
                    if r.victim_locked() { "yes" } else { "no" },
                    r.victim_bind
                ),
                ratio(r.alone.binds_per_s, pool_per_s),
                match reference {
                    Some(x) if !r.reference => ratio(r.alone.binds_per_s, x.alone.binds_per_s),
                    _ => "-".into(),
                },
                verdict(r, reference, pool_per_s, goals),
            ]
        })
        .collect();
    let under = format!("binds/s under {GUESSERS} guessers");
    let victim = format!("victim (user{VICTIM}) locked out");
    Table {
        title: TITLE.into(),
        columns: [
            "server",
            "binds/s alone",
            "p99 ms alone",
            "server CPU ms/bind alone",
            under.as_str(),
            "retention",
            "guesses answered/s",
            victim.as_str(),
            "vs pool alone",
            "vs slapd",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "Issue 39's goals: binds/s alone at least {:.1}x slapd's and {:.2} of what the hash pool alone derives ({pool_per_s:.1} derivations/s on this machine, in the same run), retention at least {:.2}, the victim never locked out of its trusted source. Binds/s are the honest users' accepted binds; CPU per bind is the server process's utime + stime (/proc/PID/stat) over every bind it answered in the phase alone; the victim's state is a bind of its right password from 127.0.0.1 (where its honest client logged in) after the wave: result 0 bound, 49 refused. The machine is shared with the lab's load generator: compare within one run.",
            goals.over_reference, goals.of_pool, goals.retention
        ),
    }
}
