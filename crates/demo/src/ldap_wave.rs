//! The demo's "LDAP binds under a guessing wave" section (issue 39): Portcullis' LDAP door
//! beside OpenLDAP slapd 2.5, same machine, same run, the same sixteen users stored as
//! PBKDF2-SHA256 x600,000, measured as `scripts/ldap-bench` measures them
//! ([docs/ldap-bench.md]).
//!
//! slapd is Debian's, as `scripts/slapd start --users 16 --ppolicy 5
//! --pbkdf2-iterations 600000` builds it (pw-pbkdf2, ppolicy as a company sets it:
//! pwdMaxFailure 5, pwdLockout TRUE). Portcullis is whatever the binary hands in through
//! [`DemoServer::start_ldap`](crate::DemoServer::start_ldap): `portcullis serve` with
//! `[ldap]`, run as a **child process**. The rest of the demo runs Portcullis inside its
//! own process, but here the figure is the server's CPU per bind, read from
//! `/proc/PID/stat`: in-process, the door's tasks would share the runtime threads with
//! the lab's load generator and no per-thread sum could tell the two apart. As a process
//! of its own it is measured exactly as slapd is.
//!
//! Both servers are started first and stay up for the whole section; the phases alternate
//! between them (slapd alone, Portcullis alone, slapd attacked, Portcullis attacked), so a
//! shared machine's drift moves both alike. Before them each user logs in once on each
//! server (a warm-up, not measured), as the users of a running deployment have:
//!
//! - *alone*: the 16 honest users, closed loop without pause, a new connection per login,
//!   a simple bind by DN then an unbind, each from its own loopback address: accepted
//!   binds/s, p99 of the login, and the server's CPU (utime + stime of its process) over
//!   every bind the lab counted;
//! - *attacked*: the same users plus 50 guessing sources (each its own address, closed
//!   loop, a new connection per guess) binding as user1, the victim, with wrong passwords:
//!   the honest binds/s (retention: over the phase alone), then whether the victim is
//!   locked out: a bind of its right password from 127.0.0.1, the address its honest
//!   client used all along (for Portcullis a trusted source), after the wave;
//! - *control*, for every server but the reference: the same users beside as many
//!   sources of their own making as many binds, for a user no directory has, so the
//!   server hashes nothing for them. The machine's two cores are shared with the lab's
//!   load generator, and the wave's traffic costs honest binds on both sides of the
//!   socket (attacked over alone read 0.82-1.21 between runs on one Zen 3 where the
//!   wave's guesses cost three hashes); the verdict's retention is over the control, and
//!   the retention over alone is shown beside it. The control runs in two halves, one
//!   just before the wave and one just after, each from sources of its own, for the
//!   reason the phase alone has two: a single control after the wave read 0.89-1.05 of
//!   it between full demos on one Zen 3, the drift between two phases in the figure;
//! - *alone again*, for every server but the reference: the first phase once more, and
//!   the server's "alone" figures are both phases together. A single phase before the wave
//!   put the process's drift (its kernel choice settling, the host's other tenants: alone
//!   49-63 binds/s between runs on one Zen 3, where the attacked phases read 54-59) into
//!   the retention over alone; before and after cancel a steady drift. slapd has no second phase: its victim stays
//!   locked out after the wave (ppolicy `pwdLockoutDuration` 0), so it would measure
//!   fifteen users.
//!
//! The warm-up before them all is a few seconds of the honest users' closed loop, not
//! one login each: it also settles the kernel Portcullis' pool picks in service
//! (`portcullis_hash::contest`), which otherwise moved during the first measured phase.
//!
//! The yardstick is what the hash pool alone derives in the same run
//! ([`portcullis_lab::pool_bench`]) with sixteen jobs in flight, as many as the honest
//! clients (saturated beside it): a bind is one hash and little else.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use portcullis_hash::Prf;
use portcullis_lab::LabError;
use portcullis_lab::Outcome;
use portcullis_lab::ldap::stats::LdapSummary;
use portcullis_lab::record::{GroupResult, SecondRow};
use portcullis_lab::relay::simple_bind;
use portcullis_lab::report::Section;
use portcullis_lab::runner::{RunOptions, ScenarioResult, run_scenario};
use portcullis_lab::scenario::{DirectorySpec, Scenario};

use crate::slapd::Slapd;
use crate::{BoxFuture, DemoServer, Finished};

mod table;
pub use table::{Goals, Pool, table, verdict};

/// The section's name for `--only`.
pub const SECTION: &str = "ldap-binds-wave";
/// Its title in the report.
pub const TITLE: &str = "LDAP binds under a guessing wave";
/// Honest users, `user1` .. `user16` (password `password<n>`).
pub const USERS: usize = 16;
/// Guessing sources, each its own loopback address.
pub const GUESSERS: usize = 50;
/// PBKDF2-SHA256 iterations of every stored password (the issue's, and the default).
pub const ITERATIONS: u32 = 600_000;
/// slapd's ppolicy pwdMaxFailure.
pub const MAX_FAILURE: u32 = 5;
/// The victim: `user1`.
pub const VICTIM: usize = 1;

fn err(msg: impl std::fmt::Display) -> LabError {
    LabError::Target(format!("{SECTION}: {msg}"))
}

/// What a server is given to serve LDAP in this section.
#[derive(Debug, Clone)]
pub struct LdapSetup {
    /// The directory's base DN (users are `uid=NAME,ou=people,BASE`).
    pub base_dn: String,
    /// The users (name, password), to store as PBKDF2-SHA256 x`iterations`.
    pub users: Vec<(String, String)>,
    /// See `users`.
    pub iterations: u32,
}

/// A server started for this section, in a process of its own.
pub struct LdapStarted {
    /// Its plain LDAP listener on loopback.
    pub addr: SocketAddr,
    /// Its process: CPU time is read from `/proc/PID/stat`.
    pub pid: u32,
    /// Stops it.
    pub stop: Box<dyn FnOnce() -> BoxFuture<()> + Send>,
}

/// How long each part lasts.
#[derive(Debug, Clone, Copy)]
pub struct Durations {
    /// The warm-up's closed loop, its 1 s ramp included.
    pub warm_up: Duration,
    /// Each phase alone (a server other than the reference has two).
    pub alone: Duration,
    /// Each server's phase under the guessing wave, and the control's.
    pub attacked: Duration,
    /// The hash pool alone.
    pub pool: Duration,
}

impl Durations {
    /// The demo's: in the full demo 7 s alone (twice for Portcullis), 10 s attacked and
    /// as long for Portcullis' control, about a minute with start-up; `quick` (only with
    /// `--only`) 3 s each.
    pub fn demo(quick: bool) -> Durations {
        let (warm_up, alone, attacked, pool) = match quick {
            true => (3, 3, 3, 2),
            false => (4, 7, 10, 3),
        };
        Durations {
            warm_up: Duration::from_secs(warm_up),
            alone: Duration::from_secs(alone),
            attacked: Duration::from_secs(attacked),
            pool: Duration::from_secs(pool),
        }
    }
}

/// One phase's figures for one server.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    /// The honest users' accepted binds per second.
    pub binds_per_s: f64,
    /// Their logins' 99th percentile (connect, bind, unbind), ms.
    pub p99_ms: f64,
    /// Every user bind the server answered (honest and guesses).
    pub binds: u64,
    /// The server process's CPU time over the phase (s).
    pub cpu_s: f64,
    /// Honest binds with the right password refused.
    pub honest_refused: u64,
    /// Honest users the lab saw locked out (accepted, then refused).
    pub locked_out: Vec<String>,
    /// Guesses answered per second (attacked phase).
    pub guesses_per_s: f64,
}

impl Phase {
    /// CPU ms per answered bind (`None` without binds).
    pub fn cpu_ms_per_bind(&self) -> Option<f64> {
        (self.binds > 0).then(|| 1000.0 * self.cpu_s / self.binds as f64)
    }

    /// Two phases of equal length as one: the mean rates, the sums of counts and CPU
    /// (so CPU per bind is over both), the higher p99, every user locked out in either.
    pub fn merge(&self, other: &Phase) -> Phase {
        let mut locked_out = self.locked_out.clone();
        for u in &other.locked_out {
            if !locked_out.contains(u) {
                locked_out.push(u.clone());
            }
        }
        Phase {
            binds_per_s: (self.binds_per_s + other.binds_per_s) / 2.0,
            p99_ms: self.p99_ms.max(other.p99_ms),
            binds: self.binds + other.binds,
            cpu_s: self.cpu_s + other.cpu_s,
            honest_refused: self.honest_refused + other.honest_refused,
            locked_out,
            guesses_per_s: (self.guesses_per_s + other.guesses_per_s) / 2.0,
        }
    }
}

/// One server's figures.
#[derive(Debug, Clone)]
pub struct WaveRun {
    /// Its label ("slapd", "portcullis").
    pub server: String,
    /// Whether it is the reference the goals compare with (slapd).
    pub reference: bool,
    /// The phase alone: for a server other than the reference, the phases before and
    /// after the wave together ([`Phase::merge`]).
    pub alone: Phase,
    /// The honest binds/s of each phase alone, in order (one for the reference).
    pub alone_each: Vec<f64>,
    /// The phase under the wave.
    pub attacked: Phase,
    /// The control around it, for a server other than the reference (its halves just
    /// before and just after the wave, as one [`Phase::merge`]): the same users beside
    /// as many sources making as many binds as the wave's, for a user no directory has,
    /// so the server hashes nothing for them. What the wave's traffic costs on a machine
    /// whose cores the load generator shares, without its credential work.
    pub control: Option<Phase>,
    /// The victim's right password after the wave, from its trusted address: the
    /// server's result code (0 bound, 49 refused).
    pub victim_bind: i32,
}

impl WaveRun {
    /// Honest binds/s under the wave over alone.
    pub fn retention(&self) -> Option<f64> {
        (self.alone.binds_per_s > 0.0).then(|| self.attacked.binds_per_s / self.alone.binds_per_s)
    }

    /// Honest binds/s under the wave over beside the control: what the wave's credential
    /// work costs the honest users, the traffic's own cost taken out.
    pub fn retention_vs_control(&self) -> Option<f64> {
        let c = self.control.as_ref()?;
        (c.binds_per_s > 0.0).then(|| self.attacked.binds_per_s / c.binds_per_s)
    }

    /// Locked out: its right password refused after the wave, or during it after it had
    /// been accepted.
    pub fn victim_locked(&self) -> bool {
        let name = format!("user{VICTIM}");
        self.victim_bind != 0 || self.attacked.locked_out.contains(&name)
    }
}

/// The section's outcome.
pub struct WaveSection {
    /// One row per server.
    pub runs: Vec<WaveRun>,
    /// The hash pool alone, derivations/s.
    pub pool: Pool,
    /// The lab's runs: one section per phase.
    pub sections: Vec<Section>,
}

/// The section as the demo runs it: `None` when it is not selected (the full demo runs
/// it; `--quick` only with `--only`) or no server speaks LDAP; a note instead when slapd
/// is missing (`find` says why: [`crate::slapd::find_slapd`] in the demo).
pub async fn section(
    servers: &[&dyn DemoServer],
    quick: bool,
    only: &[String],
    progress: bool,
    find: impl FnOnce() -> Result<PathBuf, String>,
) -> Result<(Option<Finished>, Option<String>), LabError> {
    let picked = match only.is_empty() {
        true => !quick,
        false => only.iter().any(|o| o == SECTION),
    };
    let ours: Vec<&dyn DemoServer> = servers
        .iter()
        .copied()
        .filter(|s| s.speaks_ldap())
        .collect();
    if !picked || ours.is_empty() {
        return Ok((None, None));
    }
    let script = match find() {
        Ok(p) => p,
        Err(why) => return Ok((None, Some(format!("\"{TITLE}\" is left out: {why}.")))),
    };
    let d = Durations::demo(quick);
    let s = run(&ours, &script, &d, progress).await?;
    let note = format!(
        "{TITLE}: {USERS} users stored as PBKDF2-SHA256 x{ITERATIONS} in OpenLDAP slapd (Debian's, ppolicy pwdMaxFailure {MAX_FAILURE}, pwdLockout TRUE) and in Portcullis (`portcullis serve` with [ldap], run as a child process so that its CPU is its own); {} s per phase, alternating between the servers; the lab's load generator runs on the same cores. Hash pool alone: {:.1} derivations/s with {USERS} jobs in flight, {:.1}/s saturated.",
        d.alone.as_secs(),
        s.pool.in_flight,
        s.pool.saturated
    );
    let mut sections = s.sections;
    carry_verdicts(&mut sections, &s.runs, &s.pool, &Goals::ISSUE);
    let part = Finished {
        name: SECTION.into(),
        headline: false,
        tables: vec![table(&s.runs, &s.pool, &Goals::ISSUE)],
        sections,
    };
    Ok((Some(part), Some(note)))
}

/// Each server's verdict, carried onto its run under the wave (`sections[1]`), so the
/// report's verdict by target says what the section's table does: the lab judges a run
/// only by its scenario's thresholds, and this section's goals are not among them (a full
/// demo whose table said FAIL for Portcullis counted it "PASS 15 of 15").
fn carry_verdicts(sections: &mut [Section], runs: &[WaveRun], pool: &Pool, goals: &Goals) {
    let reference = runs.iter().find(|r| r.reference);
    let Some(under) = sections.get_mut(1) else {
        return;
    };
    for r in runs.iter().filter(|r| !r.reference) {
        let v = verdict(r, reference, pool, goals);
        let Some(why) = v.strip_prefix("FAIL: ") else {
            continue;
        };
        for res in under.results.iter_mut().filter(|x| x.target == r.server) {
            res.passed = false;
            res.failures.push(why.to_owned());
        }
    }
}

/// A server under measurement.
struct Target {
    label: String,
    addr: SocketAddr,
    pid: u32,
}

/// Starts slapd and every server in `servers` (those that speak LDAP), runs the phases,
/// stops them all, then measures the pool alone.
pub async fn run(
    servers: &[&dyn DemoServer],
    script: &Path,
    d: &Durations,
    progress: bool,
) -> Result<WaveSection, LabError> {
    let spec = DirectorySpec {
        users: USERS,
        failed_bind_delay: Duration::ZERO,
        ppolicy_max_failure: Some(MAX_FAILURE),
        pbkdf2_iterations: ITERATIONS,
        victim: Some(VICTIM),
        compare_alone: true,
    };
    if progress {
        eprintln!(
            "{TITLE}: starting slapd and Portcullis with {USERS} users (PBKDF2-SHA256 x{ITERATIONS})..."
        );
    }
    let slapd = {
        let script = script.to_path_buf();
        tokio::task::spawn_blocking(move || Slapd::start(&script, &spec, "ldap-wave"))
            .await
            .map_err(err)??
    };
    let mut stops = Vec::new();
    let measured = async {
        let base = slapd.get("base")?.to_owned();
        let mut targets = vec![Target {
            label: "slapd".into(),
            addr: slapd.addr()?,
            pid: slapd.pid()?,
        }];
        let users: Vec<(String, String)> = (1..=USERS)
            .map(|n| (format!("user{n}"), format!("password{n}")))
            .collect();
        for srv in servers {
            let setup = LdapSetup {
                base_dn: base.clone(),
                users: users.clone(),
                iterations: ITERATIONS,
            };
            let started = srv.start_ldap(setup).await?;
            targets.push(Target {
                label: srv.label(),
                addr: started.addr,
                pid: started.pid,
            });
            stops.push(started.stop);
        }
        phases(&targets, &base, d, progress).await
    }
    .await;
    for stop in stops {
        stop().await;
    }
    tokio::task::spawn_blocking(move || slapd.stop())
        .await
        .map_err(err)?;
    let (runs, sections) = measured?;
    if progress {
        eprintln!("{TITLE}: the hash pool alone...");
    }
    let length = d.pool;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = tokio::task::spawn_blocking(move || {
        use portcullis_lab::pool_bench::{Width, measure};
        let saturated = measure(Prf::Sha256, ITERATIONS, threads, length, Width::Saturated)?;
        let in_flight = measure(
            Prf::Sha256,
            ITERATIONS,
            threads,
            length,
            Width::InFlight(USERS),
        )?;
        Ok::<_, std::io::Error>(Pool {
            saturated: saturated.per_s,
            in_flight: in_flight.per_s,
        })
    })
    .await
    .map_err(err)?
    .map_err(err)?;
    Ok(WaveSection {
        runs,
        pool,
        sections,
    })
}

/// The phases, alternating between the targets; then one row per target.
async fn phases(
    targets: &[Target],
    base: &str,
    d: &Durations,
    progress: bool,
) -> Result<(Vec<WaveRun>, Vec<Section>), LabError> {
    for t in targets {
        warm_up(t, base, d.warm_up, progress).await?;
    }
    let mut alone = Vec::new();
    let mut alone_results = Vec::new();
    for t in targets {
        let (r, figures) = phase(t, base, Wave::Alone, d.alone, progress).await?;
        alone_results.push(r);
        alone.push(figures);
    }
    let mut attacked = Vec::new();
    let mut attacked_results = Vec::new();
    let mut control_results = [Vec::new(), Vec::new()];
    for t in targets {
        // The control in two halves of its own sources, just before the wave and just
        // after it (for every server but the reference): a steady drift of the machine
        // cancels out of the wave over the control as it does out of the phases alone.
        // A single control after the wave read 0.89-1.05 of it between runs on one Zen 3.
        let reference = t.label == "slapd";
        // Each half has steady seconds of its own to measure ([`steady_rate`]).
        let half = (d.attacked / 2).max(Duration::from_secs(3));
        let mut control = Vec::new();
        if !reference {
            let (r, c) = phase(t, base, Wave::Control(Half::Before), half, progress).await?;
            control_results[0].push(r);
            control.push(c);
        }
        let (r, figures) = phase(t, base, Wave::Guesses, d.attacked, progress).await?;
        attacked_results.push(r);
        let dn = format!("uid=user{VICTIM},ou=people,{base}");
        let victim_bind = simple_bind(
            t.addr,
            &dn,
            &format!("password{VICTIM}"),
            Duration::from_secs(10),
        )
        .await
        .map_err(err)?;
        if !reference {
            let (r, c) = phase(t, base, Wave::Control(Half::After), half, progress).await?;
            control_results[1].push(r);
            control.push(c);
        }
        let control = match control.as_slice() {
            [before, after] => Some(before.merge(after)),
            _ => None,
        };
        attacked.push((figures, victim_bind, control));
    }
    let mut runs = Vec::new();
    let mut after_results = Vec::new();
    for ((t, before), (attacked, victim_bind, control)) in targets.iter().zip(alone).zip(attacked) {
        let reference = t.label == "slapd";
        let mut alone_each = vec![before.binds_per_s];
        let mut alone = before;
        if !reference {
            let (r, after) = phase(t, base, Wave::Alone, d.alone, progress).await?;
            after_results.push(r);
            alone_each.push(after.binds_per_s);
            alone = alone.merge(&after);
        }
        runs.push(WaveRun {
            server: t.label.clone(),
            reference,
            alone,
            alone_each,
            attacked,
            control,
            victim_bind,
        });
    }
    let mut sections = vec![
        Section {
            scenario: format!("{SECTION} (honest users alone)"),
            description: format!(
                "{USERS} honest users binding by DN, closed loop, a new connection per login"
            ),
            results: alone_results,
        },
        Section {
            scenario: format!("{SECTION} (under {GUESSERS} guessing sources)"),
            description: format!(
                "the same users beside {GUESSERS} guessing sources binding as user{VICTIM} with wrong passwords"
            ),
            results: attacked_results,
        },
    ];
    let [control_before, control_after] = control_results;
    for (half, results) in [(Half::Before, control_before), (Half::After, control_after)] {
        sections.push(Section {
            scenario: format!(
                "{SECTION} (control, the half {} the wave: {GUESSERS} sources binding as a user no directory has)",
                half.name()
            ),
            description: format!(
                "the same users beside {GUESSERS} sources of their own binding as user{CONTROL_USER} with wrong passwords: the wave's traffic without its credential work, for every server but the reference, half of it {} the wave",
                half.name()
            ),
            results,
        });
    }
    sections.push(
        Section {
            scenario: format!("{SECTION} (honest users alone, after the wave)"),
            description: "the first phase again, for every server but the reference (slapd's victim stays locked out): its alone figures are both phases'".into(),
            results: after_results,
        },
    );
    Ok((runs, sections))
}

/// Before anything is measured, the honest users log in for `length` in a closed loop
/// (`scripts/ldap-bench` has each log in once): as the users of a running deployment
/// have, so Portcullis serves them as trusted sources (a user's first login from a new
/// place is in its unknown class, behind the trusted ones: without this the first
/// phase's p99 was those first logins, 1-4 s on a busy pool, not the steady state it is
/// about); and long enough for the pool's in-service kernel check to settle
/// (`portcullis_hash::contest`: a few dozen batches), which otherwise moved the kernel,
/// and the rate, during the first measured phase. slapd gets the same logins.
async fn warm_up(t: &Target, base: &str, length: Duration, progress: bool) -> Result<(), LabError> {
    phase(t, base, Wave::Alone, length, progress)
        .await
        .map(|_| ())
}

/// One phase against one target: the lab's run and its figures.
async fn phase(
    t: &Target,
    base: &str,
    wave: Wave,
    length: Duration,
    progress: bool,
) -> Result<(ScenarioResult, Phase), LabError> {
    run_phase(t, &scenario(base, length, wave), length, progress).await
}

/// The lab's run of scenario `text` against `t`, and its figures with the server's CPU.
async fn run_phase(
    t: &Target,
    text: &str,
    length: Duration,
    progress: bool,
) -> Result<(ScenarioResult, Phase), LabError> {
    let s = Scenario::parse(text, None)?.with_target_url(&format!("ldap://{}", t.addr))?;
    let opts = RunOptions {
        allow_targets: Vec::new(),
        progress,
        label: t.label.clone(),
        position: None,
    };
    let before = cpu_seconds(t.pid)?;
    let result = run_scenario(&s, &opts).await?;
    let cpu_s = cpu_seconds(t.pid)? - before;
    let figures = figures(&result, length, cpu_s)?;
    Ok((result, figures))
}

fn figures(result: &ScenarioResult, length: Duration, cpu_s: f64) -> Result<Phase, LabError> {
    let groups = &result
        .repeats
        .first()
        .ok_or_else(|| err("the lab ran no repeat"))?
        .groups;
    let group = |name: &str| groups.iter().find(|g| g.name == name);
    let ldap = |g: Option<&GroupResult>| -> Option<LdapSummary> { g.and_then(|g| g.ldap.clone()) };
    let honest = group("honest").ok_or_else(|| err("no honest group in the lab's result"))?;
    let h = ldap(Some(honest)).unwrap_or_else(empty);
    let guesses = ldap(group("guessers"));
    Ok(Phase {
        binds_per_s: steady_rate(&honest.series, length).unwrap_or(h.accepted_per_s),
        p99_ms: honest.p99_ms,
        binds: groups
            .iter()
            .filter_map(|g| g.ldap.as_ref())
            .map(|l| l.binds)
            .sum(),
        cpu_s,
        honest_refused: h.right_password_refused,
        locked_out: h.locked_out,
        guesses_per_s: guesses.map_or(0.0, |g| g.binds_per_s),
    })
}

/// The honest users' accepted binds per second over the phase's steady seconds: its whole
/// seconds after the first (the ramp), none of what was answered after its end (the drain);
/// `None` for a phase shorter than 3 s.
///
/// The lab counts a phase's binds over its length, but its edges are not steady: in its
/// first second its clients are still starting (the 1 s ramp), and the row after its last
/// second holds the binds still in flight at its end, answered after it. Each edge costs
/// or adds about as many binds whatever the phase's length, so over the whole phase a
/// 5 s phase read ~5% below a 10 s one at the same rate (a Xeon, this section: 57.4 and
/// 58.8 binds/s over the control's 5 s halves, 60.8 over the wave's 10 s, the steady
/// seconds of all three mostly 62-64). Phases of different lengths compare only by their
/// steady seconds.
fn steady_rate(series: &[SecondRow], length: Duration) -> Option<f64> {
    let whole = length.as_secs();
    if whole < 3 {
        return None;
    }
    let accepted: u64 = series
        .iter()
        .filter(|r| (1..whole).contains(&r.second))
        .filter_map(|r| r.outcomes.get(&Outcome::Success))
        .sum();
    Some(accepted as f64 / (whole - 1) as f64)
}

fn empty() -> LdapSummary {
    LdapSummary {
        binds: 0,
        binds_per_s: 0.0,
        accepted_per_s: 0.0,
        bind_p50_ms: 0.0,
        bind_p99_ms: 0.0,
        bind_codes: Default::default(),
        service_bind_codes: Default::default(),
        lookup_codes: Default::default(),
        no_entry: 0,
        search_codes: Default::default(),
        starttls_codes: Default::default(),
        right_password_refused: 0,
        locked_out: Vec::new(),
        never_accepted: Vec::new(),
    }
}

/// Clock ticks per second of the times in `/proc/PID/stat`: USER_HZ, 100 on every Linux
/// architecture this project builds for (a fixed part of the kernel's ABI, unlike HZ).
const USER_HZ: f64 = 100.0;

/// utime + stime of process `pid` and all its threads, past and present (fields 14 and
/// 15 of `/proc/PID/stat`), in seconds.
pub fn cpu_seconds(pid: u32) -> Result<f64, LabError> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| err(format!("{path}: {e}")))?;
    parse_stat_cpu(&text).ok_or_else(|| err(format!("{path}: no utime/stime")))
}

/// See [`cpu_seconds`]: the command name (field 2) may hold spaces and parentheses, so
/// the fields are counted after its last `)`.
fn parse_stat_cpu(stat: &str) -> Option<f64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

/// What guesses a phase carries beside the honest users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wave {
    /// None: the users alone.
    Alone,
    /// [`GUESSERS`] sources guessing the victim's password.
    Guesses,
    /// The control: as many sources, as many binds, each a wrong password for a user no
    /// server has ([`CONTROL_USER`]), so no server hashes anything for them; one half
    /// before the wave, one after, each from sources of its own.
    Control(Half),
}

/// Which half of the control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    /// Just before the wave.
    Before,
    /// Just after it.
    After,
}

impl Half {
    fn name(self) -> &'static str {
        match self {
            Half::Before => "before",
            Half::After => "after",
        }
    }
}

/// The user of the control's binds: in no directory of the section.
pub const CONTROL_USER: usize = USERS + 1;
// Past the honest users (user1 .. user{USERS}), so no directory of the section has it.
const _: () = assert!(CONTROL_USER > USERS);

/// The lab scenario of one phase, every client in a closed loop without pause (the
/// target is set by the caller).
fn scenario(base: &str, length: Duration, wave: Wave) -> String {
    let mut text = format!(
        r#"name = "{SECTION}-{phase}"
description = "{USERS} honest users binding by DN{beside}"
[target]
url = "ldap://127.0.0.1:389"
metrics = "off"
[driver]
kind = "ldap"
[driver.ldap]
base_dn = "{base}"
user_dn = "uid={{user}},ou=people,{base}"
[principals]
prefix = "user"
secret_prefix = "password"
count = {count}
[run]
duration = "{ms}ms"
ramp_up = "1s"
seed = 1
timeout = "10s"
[[group]]
name = "honest"
size = {USERS}
principal_offset = 1
think = "0ms"
connection = "per-request"
sources = "127.0.0.1-127.0.0.{USERS}"
"#,
        phase = match wave {
            Wave::Alone => "alone",
            Wave::Guesses => "attacked",
            Wave::Control(Half::Before) => "control-before",
            Wave::Control(Half::After) => "control-after",
        },
        beside = match wave {
            Wave::Alone => String::new(),
            Wave::Guesses => format!(", beside {GUESSERS} guessing sources"),
            Wave::Control(_) => format!(
                ", beside {GUESSERS} sources binding as user{CONTROL_USER}, whom no directory has"
            ),
        },
        count = CONTROL_USER + 1,
        ms = length.as_millis(),
    );
    // Each control half's sources are its own, so they meet no state the wave or the
    // other half left: both start fresh, as the wave does.
    let (offset, sources) = match wave {
        Wave::Alone => return text,
        Wave::Guesses => (VICTIM, "127.0.1"),
        Wave::Control(Half::Before) => (CONTROL_USER, "127.0.2"),
        Wave::Control(Half::After) => (CONTROL_USER, "127.0.3"),
    };
    text.push_str(&format!(
        r#"
[[group]]
name = "guessers"
credentials = "wrong_secret"
size = {GUESSERS}
principal_offset = {offset}
principal_count = 1
think = "0ms"
connection = "per-request"
sources = "{sources}.1-{sources}.{GUESSERS}"
honour_retry_after = false
"#
    ));
    text
}

#[cfg(test)]
mod tests;
