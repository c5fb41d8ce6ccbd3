//! `portcullis hash create | verify | bench`: make and check stored password hashes from
//! the shell, and measure the PBKDF2 kernel against the SHA compression bound of this CPU.
//!
//! Passwords only ever come from stdin (`--password-stdin`), never from arguments, which
//! other users can read in the process table.

use std::io::BufRead;
use std::process::ExitCode;
use std::time::Instant;

use portcullis_hash::Credential;
use portcullis_hash::Peppers;
use portcullis_hash::batch;
use portcullis_hash::pbkdf2::{self, Backend, Prf};
use zeroize::Zeroizing;

use super::fail;

/// `portcullis hash` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum HashCommand {
    /// Hash a password read from stdin and print the stored string.
    Create(CreateArgs),
    /// Check a password read from stdin against a stored string.
    ///
    /// Exit status: 0 match, 1 mismatch, 2 malformed hash or other error.
    Verify(VerifyArgs),
    /// Measure PBKDF2 against the raw compression rate of the same code path, or argon2id
    /// against its compute floor (`--algorithm argon2id`).
    Bench(BenchArgs),
    /// Suggest argon2id / pbkdf2 / bcrypt / scrypt parameters for a target time per
    /// verification on this machine (one core).
    Calibrate {
        /// Target milliseconds per verification (1-10000).
        #[arg(long, default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        target_ms: u64,
    },
}

/// Arguments of `hash create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// pbkdf2-sha256, pbkdf2-sha1 or pbkdf2-sha512.
    #[arg(long, default_value = "pbkdf2-sha256", value_parser = parse_algorithm)]
    algorithm: Prf,
    /// Iterations (default: OWASP's figure for the algorithm: 600000 for sha256, 1300000
    /// for sha1, 210000 for sha512).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(pbkdf2::MAX_ITERATIONS)))]
    iterations: Option<u32>,
    /// Read the password as one line from stdin (required: passwords never go in arguments).
    #[arg(long, required = true)]
    password_stdin: bool,
}

/// Arguments of `hash verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The stored hash string (any supported format).
    #[arg(long)]
    hash: String,
    /// Parse the hash as this format instead of detecting it.
    #[arg(long)]
    format: Option<String>,
    /// Read the password as one line from stdin (required: passwords never go in arguments).
    #[arg(long, required = true)]
    password_stdin: bool,
}

/// Arguments of `hash bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// pbkdf2-sha256, pbkdf2-sha1, pbkdf2-sha512 or argon2id.
    #[arg(long, default_value = "pbkdf2-sha256", value_parser = parse_bench_algorithm)]
    algorithm: BenchAlgorithm,
    /// argon2id memory in KiB (default 19456, OWASP's minimum).
    #[arg(long, value_name = "KIB", value_parser = clap::value_parser!(u32).range(8..))]
    memory: Option<u32>,
    /// argon2id passes (default 2).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    time: Option<u32>,
    /// argon2id lanes (default 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=255))]
    lanes: Option<u32>,
    /// Iterations (default: the algorithm's default for new hashes).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(pbkdf2::MAX_ITERATIONS)))]
    iterations: Option<u32>,
    /// Timed runs; the median is reported.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(5..=1000))]
    runs: u32,
    /// Also derive this many passwords per call through the batch kernel and compare its
    /// throughput with the single stream.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    batch: Option<u32>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Force the portable backend (to measure what CPUs without SHA-NI get).
    #[arg(long, hide = true)]
    portable: bool,
    /// Instead (argon2id: as well): measure the hash pool alone for this many seconds (`--threads` threads
    /// deriving batches through the pool's kernels) and print derivations per second.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pool_seconds: Option<f64>,
    /// Threads for `--pool-seconds` (default: one per core, the pool's default); for
    /// argon2id, the pool part of the report (its `--pool-seconds` default to 3).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// With `--pool-seconds`: every batch on this batch kernel (a name `hash bench` lists,
    /// e.g. shani-x4, avx512-x16), full width, instead of the pool's own choice; for
    /// comparing kernels from outside (scripts/kernel-choice).
    #[arg(long, hide = true, value_name = "KERNEL")]
    kernel: Option<String>,
    /// With `--pool-seconds`: start as if the start-up calibration had ranked this batch
    /// kernel first (as a busy window can), then let the in-service contest correct it;
    /// for showing that it does (scripts/kernel-choice --start-on).
    #[arg(long, hide = true, value_name = "KERNEL", conflicts_with = "kernel")]
    start_on: Option<String>,
    /// With `--pool-seconds`: only this many jobs in flight, split evenly between the
    /// threads (what the pool can derive for that many closed-loop clients, e.g. 16),
    /// instead of full batches on every thread.
    #[arg(long, value_name = "JOBS", conflicts_with = "kernel",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    in_flight: Option<u32>,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.1..=600.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0.1 and 600"
        )),
    }
}

/// What `hash bench` measures.
#[derive(Debug, Clone, Copy)]
enum BenchAlgorithm {
    Pbkdf2(Prf),
    Argon2id,
}

fn parse_bench_algorithm(s: &str) -> Result<BenchAlgorithm, String> {
    if s == "argon2id" {
        return Ok(BenchAlgorithm::Argon2id);
    }
    parse_algorithm(s)
        .map(BenchAlgorithm::Pbkdf2)
        .map_err(|e| format!("{e}, or argon2id"))
}

fn parse_algorithm(s: &str) -> Result<Prf, String> {
    s.strip_prefix("pbkdf2-")
        .and_then(Prf::from_name)
        .ok_or_else(|| {
            format!(
                "unknown algorithm {s:?} (expected pbkdf2-sha256, pbkdf2-sha1 or pbkdf2-sha512)"
            )
        })
}

/// Run a `hash` subcommand.
pub fn run(cmd: HashCommand) -> ExitCode {
    match cmd {
        HashCommand::Create(a) => create(a),
        HashCommand::Verify(a) => verify(a),
        HashCommand::Bench(a) => bench(a),
        HashCommand::Calibrate { target_ms } => calibrate(target_ms),
    }
}

/// One line from stdin without its trailing `\n` or `\r\n` (nothing else is stripped:
/// spaces are part of the password). Bytes need not be UTF-8.
fn read_password() -> Result<Zeroizing<Vec<u8>>, String> {
    let mut line = Zeroizing::new(Vec::with_capacity(128));
    let n = std::io::stdin()
        .lock()
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
    if n == 0 {
        return Err("no password on stdin (expected one line)".to_owned());
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    Ok(line)
}

fn create(a: CreateArgs) -> ExitCode {
    let _ = a.password_stdin;
    let password = match read_password() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let iterations = a
        .iterations
        .unwrap_or_else(|| a.algorithm.default_iterations());
    match pbkdf2::hash_password(a.algorithm, iterations, &password) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn verify(a: VerifyArgs) -> ExitCode {
    let _ = a.password_stdin;
    let credential = match a.format.as_deref() {
        None => Credential::parse(&a.hash),
        Some(name) => match name.parse::<portcullis_hash::Format>() {
            Ok(format) => Credential::parse_as(&a.hash, format),
            Err(e) => return fail(e),
        },
    };
    let credential = match credential {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let password = match read_password() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    match credential.verify(&password, &Peppers::new()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("portcullis: password does not match");
            ExitCode::from(1)
        }
        Err(e) => fail(e),
    }
}

/// Time source of the bench. `openssl speed` divides by CPU time by default, so on a
/// shared, busy machine we do too: this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`,
/// nanosecond resolution), falling back to wall-clock time where that is unavailable.
#[derive(Clone, Copy)]
enum Clock {
    ThreadCpu,
    Wall,
}

impl Clock {
    fn detect() -> Clock {
        if thread_cpu_ns().is_some() {
            Clock::ThreadCpu
        } else {
            Clock::Wall
        }
    }

    fn name(self) -> &'static str {
        match self {
            Clock::ThreadCpu => "thread-cpu",
            Clock::Wall => "wall",
        }
    }

    /// Milliseconds `f` takes on this clock.
    fn time_ms(self, f: impl FnOnce()) -> f64 {
        match self {
            Clock::ThreadCpu => {
                let start = thread_cpu_ns().unwrap_or(0);
                f();
                thread_cpu_ns().unwrap_or(0).saturating_sub(start) as f64 / 1e6
            }
            Clock::Wall => {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e3
            }
        }
    }
}

/// CPU time consumed by the calling thread, in nanoseconds.
fn thread_cpu_ns() -> Option<u64> {
    portcullis_hash::thread_cpu_ns()
}

/// Median of `v` (sorted in place); `v` is never empty here (at least five runs).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn bench(a: BenchArgs) -> ExitCode {
    let threads = a.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |t| t as usize,
    );
    let prf = match a.algorithm {
        BenchAlgorithm::Pbkdf2(prf) => prf,
        BenchAlgorithm::Argon2id => {
            return super::hash_argon2::run(super::hash_argon2::Argon2Bench {
                m: a.memory.unwrap_or(19456),
                t: a.time.unwrap_or(2),
                p: a.lanes.unwrap_or(1),
                runs: a.runs as usize,
                json: a.json,
                portable: a.portable,
                pool_seconds: a.pool_seconds.unwrap_or(3.0),
                threads,
            });
        }
    };
    if a.memory.is_some() || a.time.is_some() || a.lanes.is_some() {
        return fail("--memory, --time and --lanes are argon2id parameters");
    }
    let iterations = a.iterations.unwrap_or_else(|| prf.default_iterations());
    if let Some(seconds) = a.pool_seconds {
        let forced = match a.kernel.as_deref() {
            None => None,
            Some(name) => match batch::backend_named(prf, name) {
                Some(b) => Some(b),
                None => {
                    return fail(format_args!(
                        "no batch kernel {name} for this PRF on this CPU"
                    ));
                }
            },
        };
        if let Some(name) = a.start_on.as_deref() {
            let started = batch::backend_named(prf, name).map(|b| batch::start_on(b, prf));
            if !matches!(started, Some(Ok(()))) {
                return fail(format_args!(
                    "no multi-chain batch kernel {name} for this PRF on this CPU"
                ));
            }
        }
        let in_flight = a.in_flight.map(|n| n as usize);
        return super::hash_pool::run(prf, iterations, threads, seconds, a.json, forced, in_flight);
    }
    let backend = if a.portable {
        Backend::Portable
    } else {
        Backend::Auto
    };
    let runs = a.runs as usize;
    let out_len = prf.output_len();
    let blocks_per_output = out_len.div_ceil(prf.output_len()) as u64;

    // The compression bound: the same number of compressions one derivation does
    // (2 per iteration per output block), as whole 16 KiB buffers through the raw
    // compression function of the same backend (`openssl speed -bytes 16384` style).
    let buffer: Vec<u8> = (0..16384u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let blocks_per_buffer = (buffer.len() / prf.block_len()) as u64;
    let compressions = 2 * u64::from(iterations) * blocks_per_output;
    let buffers = compressions.div_ceil(blocks_per_buffer).max(1);

    let password = b"portcullis bench password";
    let salt = b"0123456789abcdef";
    let mut out = vec![0u8; out_len];
    let mut sink = 0u64;
    // The kernel calibration runs on first use; done here so it is not timed below.
    let cal = batch::calibration(prf);
    // Warm up caches, frequency and the feature-detection cache.
    pbkdf2::pbkdf2_hmac_on(
        backend,
        prf,
        password,
        salt,
        iterations.min(10_000),
        &mut out,
    );

    // With --batch, each run times one single-stream derivation and one batch call back
    // to back, so clock-speed drift on a shared machine hits both sides of the ratio.
    let batch_k = a.batch.map(|k| k as usize).unwrap_or(0);
    let passwords: Vec<Vec<u8>> = (0..batch_k)
        .map(|i| format!("password {i}").into_bytes())
        .collect();
    let mut outs = vec![vec![0u8; out_len]; batch_k];

    let clock = Clock::detect();
    let mut derivation_ms = Vec::with_capacity(runs);
    let mut blocks_per_ms = Vec::with_capacity(runs);
    let mut batch_secs = Vec::with_capacity(runs);
    for _ in 0..runs {
        derivation_ms.push(clock.time_ms(|| {
            pbkdf2::pbkdf2_hmac_on(backend, prf, password, salt, iterations, &mut out);
        }));
        sink ^= u64::from(out[0]);
        if batch_k > 0 {
            let mut jobs: Vec<batch::Job<'_>> = passwords
                .iter()
                .zip(outs.iter_mut())
                .map(|(p, o)| batch::Job {
                    password: p,
                    salt,
                    out: o,
                })
                .collect();
            batch_secs.push(clock.time_ms(|| batch::derive(prf, iterations, &mut jobs)) / 1e3);
        }
        let ms = clock.time_ms(|| {
            for _ in 0..buffers {
                sink ^= pbkdf2::raw_compress(prf, backend, std::hint::black_box(&buffer));
            }
        });
        blocks_per_ms.push((buffers * blocks_per_buffer) as f64 / ms);
    }
    std::hint::black_box(sink);
    let ms = median(&mut derivation_ms);
    let rate = median(&mut blocks_per_ms);
    let bound_ms = compressions as f64 / rate;
    let fraction = bound_ms / ms;

    let batch_result = (batch_k > 0).then(|| {
        let dps = batch_k as f64 / median(&mut batch_secs);
        (batch_k, dps, dps / (1e3 / ms))
    });

    let backend_name = pbkdf2::backend_name(prf, backend);
    let cpu = super::cpu_model();
    if a.json {
        let mut j = serde_json::json!({
            "algorithm": format!("pbkdf2-{}", prf.name()),
            "iterations": iterations,
            "output_bytes": out_len,
            "runs": runs,
            "clock": clock.name(),
            "backend": backend_name,
            "cpu": cpu,
            "ms_per_derivation": ms,
            "bound_ms": bound_ms,
            "fraction_of_bound": fraction,
            "compression_blocks_per_second": rate * 1e3,
        });
        if let (Some((k, dps, ratio)), Some(obj)) = (batch_result, j.as_object_mut()) {
            obj.insert("batch".into(), k.into());
            obj.insert("derivations_per_second".into(), dps.into());
            obj.insert("single_derivations_per_second".into(), (1e3 / ms).into());
            obj.insert("batch_ratio".into(), ratio.into());
            obj.insert("plan".into(), plan_json(prf, k));
        }
        if let Some(obj) = j.as_object_mut() {
            obj.insert("kernels".into(), kernels_json(&cal));
        }
        println!("{j}");
    } else {
        println!(
            "pbkdf2-{} x{iterations} ({out_len}-byte output), backend {backend_name}, cpu {cpu}",
            prf.name()
        );
        println!(
            "  derivation:        {ms:.2} ms (median of {runs}, {} time)",
            clock.name()
        );
        println!(
            "  compression bound: {bound_ms:.2} ms ({:.2}M blocks/s, same backend, same run)",
            rate / 1e3
        );
        println!("  fraction of bound: {fraction:.3}");
        if let Some((k, dps, ratio)) = batch_result {
            println!(
                "  batch of {k}: {dps:.1} derivations/s, {ratio:.2}x the single stream ({:.1}/s)",
                1e3 / ms
            );
            let plan: Vec<String> = batch::plan_for(prf, k)
                .iter()
                .map(|(b, n)| format!("{n} on {}", b.name()))
                .collect();
            println!("  plan: {}", plan.join(", "));
        }
        println!("  kernels measured at start-up (time per chain, single stream = 1.00):");
        for c in &cal.kernels {
            let chosen = if c.backend == cal.best {
                "  <- chosen"
            } else {
                ""
            };
            println!(
                "    {:<12} {:>2} lanes  {:.3}{chosen}",
                c.backend, c.width, c.per_chain
            );
        }
    }
    ExitCode::SUCCESS
}

/// The calibrated kernel menu and the choice, as `hash bench --json` reports it.
fn kernels_json(cal: &batch::Calibration) -> serde_json::Value {
    serde_json::json!({
        "measured": cal.kernels.iter().map(|c| serde_json::json!({
            "backend": c.backend,
            "width": c.width,
            "group_ns_per_iteration": c.group_ns,
            "per_chain": c.per_chain,
        })).collect::<Vec<_>>(),
        "chosen": cal.best,
        "chosen_width": cal.best_width,
        "chosen_speedup": cal.best_speedup,
    })
}

/// How [`batch::derive`] splits `k` one-chain jobs of `prf`.
fn plan_json(prf: Prf, k: usize) -> serde_json::Value {
    batch::plan_for(prf, k)
        .iter()
        .map(|(b, n)| serde_json::json!({"backend": b.name(), "chains": n}))
        .collect()
}

/// `hash calibrate` (issue #7): measured suggestions plus the config lines for each.
fn calibrate(target_ms: u64) -> ExitCode {
    use portcullis_hash::calibrate;
    let c = match calibrate::calibrate(std::time::Duration::from_millis(target_ms)) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    println!(
        "target {target_ms} ms per verification on one core of: {}",
        super::cpu_model()
    );
    for s in &c.suggestions {
        let owasp = if s.meets_owasp_minimum {
            ""
        } else {
            "  (below OWASP minimum)"
        };
        println!();
        println!("# measured {:.1} ms{owasp}", s.measured.as_secs_f64() * 1e3);
        print!("{}", s.policy.to_config_toml());
    }
    let (argon2, bcrypt, scrypt) = c.units.work_units();
    println!();
    println!(
        "# cost model: sha256 compression {:.1} ns; work units per argon2 block-pass {argon2:.1}, \
         per bcrypt round {bcrypt:.0}, per scrypt N*r*p {scrypt:.1}",
        c.units.sha256_compression.as_secs_f64() * 1e9
    );
    ExitCode::SUCCESS
}
