//! Legitimate clients against a brute-force flood, in process, with real PBKDF2.
//!
//! Phase 1: `LEGIT` clients (default 10), each its own network and principal, log in with
//! the right password in a closed loop. Phase 2: the same, plus `ATTACKERS` flows (default
//! 100, each its own /24) sending wrong secrets as fast as their round trip allows: half
//! guess the legitimate principals, half random unknown ones. Legitimate clients honour
//! retry-after; attackers do not.
//!
//! Reported: legitimate accepts/s and accept latency (p50/p99) in both phases and their
//! ratios, and how fast attackers are answered (throttled/overloaded p99).
//!
//! Environment: `PORTCULLIS_BENCH_SECS` (per phase, default 10), `PORTCULLIS_BENCH_ITERATIONS`
//! (default 600000), `PORTCULLIS_BENCH_LEGIT` (10), `PORTCULLIS_BENCH_ATTACKERS` (100),
//! `PORTCULLIS_BENCH_ATTACK_RTT_US` (attacker round trip, default 1000; 0 = no pause).
//!
//! Run: `cargo bench -p portcullis-core --bench under_attack`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use portcullis_core::{
    Attempt, CredentialSource, MemoryThrottleStore, Outcome, PrincipalKind, Protocol, SourceError,
    StoredCredentials, SystemClock, Verifier, VerifierConfig,
};
use portcullis_hash::{Peppers, Policy, Prf};
use zeroize::Zeroizing;

struct Source(HashMap<String, StoredCredentials>);

impl CredentialSource for Source {
    fn credentials<'a>(
        &'a self,
        _kind: PrincipalKind,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, SourceError>> {
        futures::future::ready(Ok(self.0.get(principal).cloned())).boxed()
    }
    fn replace_hash<'a>(
        &'a self,
        _: PrincipalKind,
        _: &'a str,
        _: &'a str,
        _: &'a str,
    ) -> BoxFuture<'a, Result<bool, SourceError>> {
        futures::future::ready(Ok(false)).boxed()
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn attempt(principal: &str, secret: &str, ip: IpAddr) -> Attempt {
    Attempt {
        kind: PrincipalKind::User,
        principal: principal.to_owned(),
        secret: Zeroizing::new(secret.as_bytes().to_vec()),
        source: ip,
        protocol: Protocol::Other,
        // A typical client timeout.
        deadline: Instant::now() + Duration::from_secs(5),
        station: None,
        context: Default::default(),
    }
}

#[derive(Default)]
struct Legit {
    accepts: u64,
    overloaded: u64,
    throttled: u64,
    rejected: u64,
    latency: Option<Histogram<u64>>,
}

#[derive(Default)]
struct Attack {
    sent: u64,
    throttled: u64,
    overloaded: u64,
    rejected: u64,
    accepted: u64,
    /// Time to a throttled/overloaded answer, microseconds.
    fast_answer: Option<Histogram<u64>>,
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap()
}

async fn legit_client(v: Verifier, i: usize, stop: Arc<AtomicBool>, out: Arc<Mutex<Legit>>) {
    let ip = IpAddr::V4(Ipv4Addr::new(10, 0, i as u8, 1));
    let (principal, secret) = (format!("user{i}"), format!("password-{i}"));
    let mut mine = Legit {
        latency: Some(hist()),
        ..Legit::default()
    };
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let o = v.verify(attempt(&principal, &secret, ip)).await;
        let took = t.elapsed();
        match o {
            Outcome::Accepted { .. } => {
                mine.accepts += 1;
                if let Some(h) = mine.latency.as_mut() {
                    h.saturating_record(took.as_micros() as u64);
                }
            }
            // No directory here: "unavailable" cannot happen; counted like overload.
            Outcome::Overloaded { retry_after } | Outcome::Unavailable { retry_after } => {
                mine.overloaded += 1;
                tokio::time::sleep(retry_after).await;
            }
            Outcome::Throttled { retry_after } => {
                mine.throttled += 1;
                tokio::time::sleep(retry_after).await;
            }
            Outcome::Rejected => mine.rejected += 1,
        }
    }
    let mut g = out.lock();
    g.accepts += mine.accepts;
    g.overloaded += mine.overloaded;
    g.throttled += mine.throttled;
    g.rejected += mine.rejected;
    let h = g.latency.get_or_insert_with(hist);
    if let Some(m) = mine.latency {
        h.add(m).unwrap();
    }
}

async fn attacker(
    v: Verifier,
    i: usize,
    legit: usize,
    rtt: Duration,
    stop: Arc<AtomicBool>,
    out: Arc<Mutex<Attack>>,
) {
    // Each attacker is its own /24 (a botnet), 172.16.0.0/12 onwards.
    let ip = IpAddr::V4(Ipv4Addr::new(172, 16 + (i / 256) as u8, (i % 256) as u8, 9));
    let mut mine = Attack {
        fast_answer: Some(hist()),
        ..Attack::default()
    };
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let principal = if i.is_multiple_of(2) {
            format!("user{}", (i / 2 + n as usize) % legit.max(1))
        } else {
            format!("ghost-{i}-{n}")
        };
        let t = Instant::now();
        // The attacker gets its answer when the server sends it (failure delays included).
        let o = v.verify(attempt(&principal, "123456", ip)).await;
        let took = t.elapsed();
        mine.sent += 1;
        match o {
            Outcome::Throttled { .. }
            | Outcome::Overloaded { .. }
            | Outcome::Unavailable { .. } => {
                if matches!(o, Outcome::Throttled { .. }) {
                    mine.throttled += 1;
                } else {
                    mine.overloaded += 1;
                }
                if let Some(h) = mine.fast_answer.as_mut() {
                    h.saturating_record(took.as_micros() as u64);
                }
            }
            Outcome::Rejected => mine.rejected += 1,
            Outcome::Accepted { .. } => mine.accepted += 1,
        }
        if rtt.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(rtt).await;
        }
    }
    let mut g = out.lock();
    g.sent += mine.sent;
    g.throttled += mine.throttled;
    g.overloaded += mine.overloaded;
    g.rejected += mine.rejected;
    g.accepted += mine.accepted;
    let h = g.fast_answer.get_or_insert_with(hist);
    if let Some(m) = mine.fast_answer {
        h.add(m).unwrap();
    }
}

struct PhaseResult {
    legit: Legit,
    attack: Option<Attack>,
    secs: f64,
    hashes: u64,
}

async fn phase(
    v: &Verifier,
    legit: usize,
    attackers: usize,
    secs: u64,
    rtt: Duration,
) -> PhaseResult {
    let stop = Arc::new(AtomicBool::new(false));
    let lout = Arc::new(Mutex::new(Legit::default()));
    let aout = Arc::new(Mutex::new(Attack::default()));
    let hashes0 = v.snapshot().hashes_computed;
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..legit {
        tasks.push(tokio::spawn(legit_client(
            v.clone(),
            i,
            stop.clone(),
            lout.clone(),
        )));
    }
    for i in 0..attackers {
        tasks.push(tokio::spawn(attacker(
            v.clone(),
            i,
            legit,
            rtt,
            stop.clone(),
            aout.clone(),
        )));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let secs = t0.elapsed().as_secs_f64();
    for t in tasks {
        t.await.unwrap();
    }
    let legit = std::mem::take(&mut *lout.lock());
    let attack = std::mem::take(&mut *aout.lock());
    PhaseResult {
        legit,
        attack: (attackers > 0).then_some(attack),
        secs,
        hashes: v.snapshot().hashes_computed - hashes0,
    }
}

fn merge(acc: Option<PhaseResult>, p: PhaseResult) -> PhaseResult {
    let Some(mut a) = acc else { return p };
    a.secs += p.secs;
    a.hashes += p.hashes;
    a.legit.accepts += p.legit.accepts;
    a.legit.overloaded += p.legit.overloaded;
    a.legit.throttled += p.legit.throttled;
    a.legit.rejected += p.legit.rejected;
    if let (Some(x), Some(y)) = (a.legit.latency.as_mut(), p.legit.latency.as_ref()) {
        x.add(y).unwrap();
    }
    if let (Some(x), Some(y)) = (a.attack.as_mut(), p.attack) {
        x.sent += y.sent;
        x.throttled += y.throttled;
        x.overloaded += y.overloaded;
        x.rejected += y.rejected;
        x.accepted += y.accepted;
        if let (Some(hx), Some(hy)) = (x.fast_answer.as_mut(), y.fast_answer.as_ref()) {
            hx.add(hy).unwrap();
        }
    }
    a
}

/// What one core does alone: single-stream time and the batch kernel's preferred width.
fn kernel_figures(iterations: u32) {
    use portcullis_hash::batch;
    let b = batch::preferred_batch(Prf::Sha256);
    let t = Instant::now();
    let mut out = [0u8; 32];
    portcullis_hash::pbkdf2::pbkdf2_hmac(
        Prf::Sha256,
        b"pw",
        b"salt-salt-salt-1",
        iterations,
        &mut out,
    );
    let single = t.elapsed();
    let mut outs = vec![[0u8; 32]; b];
    let mut jobs: Vec<batch::Job<'_>> = outs
        .iter_mut()
        .map(|o| batch::Job {
            password: b"pw",
            salt: b"salt-salt-salt-1",
            out: o,
        })
        .collect();
    let t = Instant::now();
    batch::derive(Prf::Sha256, iterations, &mut jobs);
    let batched = t.elapsed();
    eprintln!(
        "kernel: single-stream {:.1} ms; preferred batch {b}: {:.1} ms ({:.1} ms per hash)",
        single.as_secs_f64() * 1e3,
        batched.as_secs_f64() * 1e3,
        batched.as_secs_f64() * 1e3 / b as f64
    );
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn main() {
    let secs = env("PORTCULLIS_BENCH_SECS", 10);
    let iterations = env("PORTCULLIS_BENCH_ITERATIONS", 600_000) as u32;
    let legit = env("PORTCULLIS_BENCH_LEGIT", 10) as usize;
    let attackers = env("PORTCULLIS_BENCH_ATTACKERS", 100) as usize;
    let rtt = Duration::from_micros(env("PORTCULLIS_BENCH_ATTACK_RTT_US", 1000));
    let rounds = env("PORTCULLIS_BENCH_ROUNDS", 2).max(1);
    kernel_figures(iterations);
    let policy = Policy::Pbkdf2 {
        prf: Prf::Sha256,
        iterations,
    };
    eprintln!("hashing {legit} passwords (PBKDF2-SHA256 x{iterations})...");
    let mut users = HashMap::new();
    for i in 0..legit {
        let h = policy.hash(format!("password-{i}").as_bytes()).unwrap();
        users.insert(
            format!("user{i}"),
            StoredCredentials {
                hashes: vec![h],
                disabled: false,
            },
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let v = Verifier::new(
            VerifierConfig::default(),
            Arc::new(Source(users)),
            Arc::new(MemoryThrottleStore::default()),
            Peppers::new(),
            policy,
            Arc::new(SystemClock),
        )
        .unwrap();
        // Warm-up: every client logs in once (and becomes trusted), the pool measures.
        phase(&v, legit, 0, 2, rtt).await;
        // The machine is shared: alternate the phases in rounds so drift in background
        // load hits both alike, and sum each phase's rounds.
        let per = (secs / rounds).max(1);
        let (mut base, mut hot) = (None::<PhaseResult>, None::<PhaseResult>);
        for r in 0..rounds {
            eprintln!(
                "round {}/{rounds}: {legit} legitimate clients, {per} s...",
                r + 1
            );
            let b = phase(&v, legit, 0, per, rtt).await;
            base = Some(merge(base, b));
            eprintln!(
                "round {}/{rounds}: + {attackers} attackers (rtt {rtt:?}), {per} s...",
                r + 1
            );
            let h = phase(&v, legit, attackers, per, rtt).await;
            hot = Some(merge(hot, h));
        }
        let (base, hot) = (base.unwrap(), hot.unwrap());
        report(&v, &base, &hot, iterations, attackers, rtt);
        v.shutdown();
    });
}

fn report(
    v: &Verifier,
    base: &PhaseResult,
    hot: &PhaseResult,
    iterations: u32,
    attackers: usize,
    rtt: Duration,
) {
    let rate = |p: &PhaseResult| p.legit.accepts as f64 / p.secs;
    let q = |p: &PhaseResult, x: f64| {
        p.legit
            .latency
            .as_ref()
            .map_or(0, |h| h.value_at_quantile(x))
    };
    let (r0, r1) = (rate(base), rate(hot));
    let (p50_0, p99_0, p50_1, p99_1) = (q(base, 0.5), q(base, 0.99), q(hot, 0.5), q(hot, 0.99));
    let atk = hot.attack.as_ref();
    let fast = |x: f64| {
        atk.and_then(|a| a.fast_answer.as_ref()).map_or(0, |h| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(x)
            }
        })
    };
    let s = v.snapshot();
    println!();
    println!(
        "under_attack: PBKDF2-SHA256 x{iterations}, pool {} threads",
        s.threads
    );
    println!(
        "{:<34} {:>12} {:>12} {:>8}",
        "", "no attack", "attack", "ratio"
    );
    println!(
        "{:<34} {:>12.2} {:>12.2} {:>8.2}",
        "legit accepts/s",
        r0,
        r1,
        r1 / r0.max(1e-9)
    );
    println!(
        "{:<34} {:>12.1} {:>12.1} {:>8.2}",
        "legit accept p50 (ms)",
        ms(p50_0),
        ms(p50_1),
        p50_1 as f64 / p50_0.max(1) as f64
    );
    println!(
        "{:<34} {:>12.1} {:>12.1} {:>8.2}",
        "legit accept p99 (ms)",
        ms(p99_0),
        ms(p99_1),
        p99_1 as f64 / p99_0.max(1) as f64
    );
    println!(
        "{:<34} {:>12} {:>12}",
        "legit overloaded / throttled",
        format!("{}/{}", base.legit.overloaded, base.legit.throttled),
        format!("{}/{}", hot.legit.overloaded, hot.legit.throttled)
    );
    println!(
        "{:<34} {:>12} {:>12}",
        "hashes computed", base.hashes, hot.hashes
    );
    if let Some(a) = atk {
        println!(
            "{:<34} {:>12} {:>12.0}",
            "attack attempts (/s)",
            a.sent,
            a.sent as f64 / hot.secs
        );
        println!(
            "{:<34} {:>25}",
            "  throttled/overloaded/rejected",
            format!("{}/{}/{}", a.throttled, a.overloaded, a.rejected)
        );
        println!(
            "{:<34} {:>25}",
            "  throttled+overloaded p50/p99 (ms)",
            format!("{:.3}/{:.3}", ms(fast(0.5)), ms(fast(0.99)))
        );
        println!(
            "{:<34} {:>25}",
            "  attacker hashes (hot - legit)",
            hot.hashes.saturating_sub(hot.legit.accepts)
        );
    }
    let json = serde_json::json!({
        "bench": "under_attack",
        "iterations": iterations,
        "pool_threads": s.threads,
        "attackers": attackers,
        "attack_rtt_us": rtt.as_micros() as u64,
        "no_attack": {
            "legit_accepts_per_s": r0, "p50_ms": ms(p50_0), "p99_ms": ms(p99_0),
            "overloaded": base.legit.overloaded, "hashes": base.hashes,
        },
        "attack": {
            "legit_accepts_per_s": r1, "p50_ms": ms(p50_1), "p99_ms": ms(p99_1),
            "overloaded": hot.legit.overloaded, "throttled": hot.legit.throttled, "hashes": hot.hashes,
            "attack_attempts": atk.map_or(0, |a| a.sent),
            "attack_throttled": atk.map_or(0, |a| a.throttled),
            "attack_overloaded": atk.map_or(0, |a| a.overloaded),
            "attack_rejected": atk.map_or(0, |a| a.rejected),
            "fast_answer_p50_ms": ms(fast(0.5)),
            "fast_answer_p99_ms": ms(fast(0.99)),
        },
        "ratios": {
            "accepts": r1 / r0.max(1e-9),
            "p99": p99_1 as f64 / p99_0.max(1) as f64,
        },
    });
    println!("{json}");
}
