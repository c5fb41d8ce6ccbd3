//! Checks per second and latency of this client against a directory started by
//! scripts/slapd, with closed-loop workers (each: a check, then the next).
//!
//!   scripts/slapd start /tmp/bench-slapd --users 100
//!   cargo run --release -p portcullis-upstream --example bench -- /tmp/bench-slapd/env \
//!       [WORKERS=16] [SECONDS=10] [search|dn] [ldaps|starttls]
//!
//! Prints one line: checks, checks/s, p50/p99 latency, outcomes, and slapd's CPU per
//! check (from /proc/PID/stat, the pid in the env file).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use portcullis_upstream::{Directory, DirectoryConfig, Outcome, SearchConfig};

fn slapd_cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    get(11) + get(12)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let env_file = args
        .get(1)
        .expect("usage: bench DIR/env [WORKERS] [SECONDS] [search|dn] [ldaps|starttls]");
    let workers: usize = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(16);
    let seconds: u64 = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(10);
    let mode = args.get(4).map(String::as_str).unwrap_or("search");
    let transport = args.get(5).map(String::as_str).unwrap_or("ldaps");
    let env: HashMap<String, String> = std::fs::read_to_string(env_file)
        .expect("env file")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let url = if transport == "ldaps" {
        &env["ldaps_url"]
    } else {
        &env["ldap_url"]
    };
    let users: u32 = env["users"].parse().unwrap();
    let mut cfg: DirectoryConfig = toml::from_str(&format!(
        "name = \"bench\"\nservers = [{url:?}]\nca_file = {ca:?}\n\
         bind_dn_template = \"uid={{user}},ou=people,{base}\"\n\
         [admission]\nmax_in_flight = {workers}\nmax_in_flight_per_source = {workers}\n",
        ca = env["ca_file"],
        base = env["base"],
    ))
    .unwrap();
    cfg.pool.max_idle_per_server = workers * 2;
    if mode == "search" {
        cfg.bind_dn_template = None;
        cfg.search = Some(SearchConfig {
            base: env["base"].clone(),
            filter: "(&(objectClass=inetOrgPerson)(uid={user}))".into(),
            service_dn: env["service_dn"].clone(),
            service_password: Some(env["service_password"].clone()),
            service_password_file: None,
        });
    }
    let dir = Arc::new(Directory::new(&cfg).unwrap());
    let ticks_before = slapd_cpu_ticks(&env["pid"]);
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for w in 0..workers {
        let dir = Arc::clone(&dir);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut outcomes: HashMap<&'static str, u64> = HashMap::new();
            let mut n = w as u32;
            while Instant::now() < end {
                let user = n % users + 1;
                n += workers as u32;
                let t = Instant::now();
                let a = dir
                    .check(
                        "bench",
                        &format!("user{user}"),
                        format!("password{user}").as_bytes(),
                    )
                    .await;
                lat.push(t.elapsed());
                *outcomes.entry(a.outcome.label()).or_default() += 1;
                if let Outcome::Unavailable(u) = &a.outcome {
                    eprintln!("unavailable: {u}");
                }
            }
            (lat, outcomes)
        }));
    }
    let mut lat = Vec::new();
    let mut outcomes: HashMap<&'static str, u64> = HashMap::new();
    for t in tasks {
        let (l, o) = t.await.unwrap();
        lat.extend(l);
        for (k, v) in o {
            *outcomes.entry(k).or_default() += v;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let ticks = slapd_cpu_ticks(&env["pid"]).saturating_sub(ticks_before);
    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    let n = lat.len() as f64;
    // Linux reports CPU time in clock ticks of 1/100 s on every common configuration.
    println!(
        "mode={mode} transport={transport} workers={workers} checks={} checks_per_s={:.1} p50_ms={:.1} p99_ms={:.1} slapd_cpu_ms_per_check={:.1} outcomes={outcomes:?}",
        lat.len(),
        n / elapsed,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        ticks as f64 * 10.0 / n.max(1.0),
    );
}
