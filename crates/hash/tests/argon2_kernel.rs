//! Issue 26: our Argon2 is the reference Argon2, byte for byte, on every kernel.
//!
//! Three independent references: RustCrypto's `argon2` (dev-dependency), libargon2 (the
//! reference C implementation, through Python's `argon2-cffi` in the project .venv, raw
//! tags with secret and associated data through its `argon2_ctx` binding, and encoded
//! hashes that our parser and verifier must accept), and the RFC 9106 vectors (unit tests
//! in `src/argon2_kernel/tests.rs`). Every case runs on every kernel this CPU offers
//! (portable, AVX2 and AVX-512 where the CPU has them: each forced by name), alternately
//! serial and with lanes on threads. Random cases are seeded from the OS and the seed is
//! printed on failure. Each test prints (`issue 26: ...`, shown by `scripts/test`) the
//! kernels it ran and those this CPU lacks, so a run on a CPU without AVX-512 says so
//! instead of passing as if it had tested that kernel; which kernels must be offered is
//! checked against the CPU flags in `/proc/cpuinfo`, independently of the code's own
//! detection.
//!
//! `PORTCULLIS_ARGON2_CASES=N` runs N random RustCrypto cases instead of the default.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use portcullis_hash::argon2_kernel::{
    Backend, LaneExecutor, LaneWork, Lent, Params, ScopedThreads, Serial, Variant, Version,
    backends, hash_into,
};
use portcullis_hash::{Credential, Peppers};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

fn seeded() -> (u64, StdRng) {
    let seed = std::env::var("PORTCULLIS_ARGON2_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| StdRng::from_os_rng().next_u64());
    (seed, StdRng::seed_from_u64(seed))
}

#[derive(Debug, Clone)]
struct Case {
    variant: Variant,
    version: Version,
    m: u32,
    t: u32,
    p: u32,
    password: Vec<u8>,
    salt: Vec<u8>,
    secret: Vec<u8>,
    ad: Vec<u8>,
    len: usize,
}

impl Case {
    fn params(&self) -> Params<'_> {
        Params {
            variant: self.variant,
            version: self.version,
            m_cost: self.m,
            t_cost: self.t,
            p_cost: self.p,
            secret: &self.secret,
            ad: &self.ad,
        }
    }

    fn describe(&self) -> String {
        format!(
            "{:?} {:?} m={} t={} p={} password {} B salt {} B secret {} B ad {} B tag {} B",
            self.variant,
            self.version,
            self.m,
            self.t,
            self.p,
            self.password.len(),
            self.salt.len(),
            self.secret.len(),
            self.ad.len(),
            self.len
        )
    }
}

fn bytes(rng: &mut StdRng, lo: usize, hi: usize) -> Vec<u8> {
    let n = rng.random_range(lo..=hi);
    (0..n).map(|_| rng.random()).collect()
}

/// A random case with memory up to `max_kib` (small memories are drawn more often: the
/// indexing corner cases are there, and they are cheap).
fn random_case(rng: &mut StdRng, max_kib: u32) -> Case {
    let p = rng.random_range(1..=4u32);
    let lo = 8 * p;
    let m = if rng.random_bool(0.5) {
        rng.random_range(lo..=lo + 64)
    } else {
        // Log-uniform up to `max_kib`.
        let e = rng.random_range((lo as f64).ln()..=(max_kib as f64).ln());
        (e.exp() as u32).clamp(lo, max_kib)
    };
    Case {
        variant: [Variant::D, Variant::I, Variant::Id][rng.random_range(0..3)],
        version: if rng.random_bool(0.5) {
            Version::V0x13
        } else {
            Version::V0x10
        },
        m,
        t: rng.random_range(1..=4),
        p,
        password: bytes(rng, 0, 128),
        salt: bytes(rng, 8, 64),
        secret: if rng.random_bool(0.3) {
            Vec::new()
        } else {
            bytes(rng, 1, 64)
        },
        // RustCrypto accepts at most 32 bytes of associated data.
        ad: if rng.random_bool(0.3) {
            Vec::new()
        } else {
            bytes(rng, 1, 32)
        },
        len: if rng.random_bool(0.5) {
            32
        } else {
            rng.random_range(4..=160)
        },
    }
}

fn rustcrypto(c: &Case) -> Vec<u8> {
    let mut builder = argon2::ParamsBuilder::new();
    builder
        .m_cost(c.m)
        .t_cost(c.t)
        .p_cost(c.p)
        .output_len(c.len);
    if !c.ad.is_empty() {
        builder.data(argon2::AssociatedData::new(&c.ad).unwrap());
    }
    let params = builder.build().unwrap();
    let algorithm = match c.variant {
        Variant::D => argon2::Algorithm::Argon2d,
        Variant::I => argon2::Algorithm::Argon2i,
        Variant::Id => argon2::Algorithm::Argon2id,
    };
    let version = match c.version {
        Version::V0x10 => argon2::Version::V0x10,
        Version::V0x13 => argon2::Version::V0x13,
    };
    let ctx = argon2::Argon2::new_with_secret(&c.secret, algorithm, version, params).unwrap();
    let mut out = vec![0u8; c.len];
    ctx.hash_password_into(&c.password, &c.salt, &mut out)
        .unwrap();
    out
}

fn ours(c: &Case, backend: Backend, lanes: &dyn LaneExecutor) -> Vec<u8> {
    let mut out = vec![0u8; c.len];
    hash_into(&c.params(), &c.password, &c.salt, &mut out, backend, lanes).unwrap();
    out
}

/// Every concrete kernel, in the order `backends()` lists them.
const ALL: [Backend; 3] = [Backend::Portable, Backend::Avx2, Backend::Avx512];

/// The kernels this CPU runs and those it lacks, by name.
fn ran_and_absent() -> (Vec<&'static str>, Vec<&'static str>) {
    let ran = backends();
    let ran_names: Vec<&str> = ran.iter().map(|b| b.name()).collect();
    let absent: Vec<&str> = ALL
        .iter()
        .filter(|b| !ran.contains(b))
        .map(|b| match b {
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
            _ => "portable",
        })
        .collect();
    (ran_names, absent)
}

/// Prints which kernels `test` ran on `cases` cases and which this CPU lacks.
fn report(test: &str, cases: usize) {
    let (ran, absent) = ran_and_absent();
    eprintln!(
        "issue 26: {test}: {cases} cases, each on kernels {ran:?} (not on this CPU, not \
         run: {absent:?})"
    );
}

/// Every kernel against `want`, with the lanes in turn on one thread, on scoped threads,
/// or lent to two long-lived helper threads (as the hash pool lends them to its idle
/// threads), by case.
fn check_all_kernels(n: usize, seed: u64, c: &Case, want: &[u8]) {
    let (tx, rx) = std::sync::mpsc::channel::<LaneWork>();
    let rx = std::sync::Mutex::new(rx);
    let lent = Lent(move |w| {
        // Two helpers may pick it up; a send fails only once they are gone.
        let _ = tx.send(w.clone());
        let _ = tx.send(w);
    });
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Ok(w) = rx.lock().unwrap().recv() {
                    while w.help() {}
                }
            });
        }
        check_with(n, seed, c, want, &lent);
        drop(lent);
    });
}

fn check_with(n: usize, seed: u64, c: &Case, want: &[u8], lent: &dyn LaneExecutor) {
    for backend in backends() {
        let lanes: &dyn LaneExecutor = match n % 3 {
            0 => &Serial,
            1 => &ScopedThreads,
            _ => lent,
        };
        assert_eq!(
            hex::encode(ours(c, backend, lanes)),
            hex::encode(want),
            "case {n} (seed {seed}, PORTCULLIS_ARGON2_SEED reproduces it): {} on {}",
            c.describe(),
            backend.name()
        );
    }
}

/// The CPU flags the Linux kernel reports (empty elsewhere).
fn cpu_flags() -> Vec<String> {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("flags"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.split_whitespace().map(str::to_owned).collect())
        })
        .unwrap_or_default()
}

#[test]
fn issue_26_kernels_offered_match_the_cpu() {
    let names: Vec<&str> = backends().iter().map(|b| b.name()).collect();
    let (_, absent) = ran_and_absent();
    eprintln!("issue 26: argon2 kernels on this CPU: {names:?}; lacking: {absent:?}");
    assert_eq!(names[0], "portable");
    // A forced kernel names what actually runs: one the CPU lacks is not claimed.
    for b in ALL {
        let resolved = b.resolve();
        assert!(
            backends().contains(&resolved),
            "{b:?} resolved to {resolved:?}"
        );
        assert_eq!(resolved == b, backends().contains(&b), "{b:?}");
    }
    #[cfg(target_arch = "x86_64")]
    {
        assert_eq!(
            names.contains(&"avx2"),
            std::arch::is_x86_feature_detected!("avx2"),
            "{names:?}"
        );
        assert_eq!(
            names.contains(&"avx512"),
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw"),
            "{names:?}"
        );
    }
    // Independently of the code's own detection: what the flags promise is offered.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let flags = cpu_flags();
        let has = |f: &str| flags.iter().any(|x| x == f);
        assert!(!flags.is_empty(), "no flags line in /proc/cpuinfo");
        assert_eq!(names.contains(&"avx2"), has("avx2"), "{names:?}");
        assert_eq!(
            names.contains(&"avx512"),
            has("avx512f") && has("avx512bw"),
            "{names:?}"
        );
    }
}

#[test]
fn issue_26_differential_against_rustcrypto_random_parameters() {
    let (seed, mut rng) = seeded();
    let cases: usize = std::env::var("PORTCULLIS_ARGON2_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    // Every variant x version x lane count at least once, then random ones.
    let mut all = Vec::new();
    for variant in [Variant::D, Variant::I, Variant::Id] {
        for version in [Version::V0x10, Version::V0x13] {
            for p in 1..=4 {
                let mut c = random_case(&mut rng, 4096);
                (c.variant, c.version, c.p, c.t) = (variant, version, p, 1 + p % 4);
                c.m = c.m.max(8 * p);
                all.push(c);
            }
        }
    }
    all.extend((0..cases).map(|_| random_case(&mut rng, 4096)));
    for (n, c) in all.iter().enumerate() {
        check_all_kernels(n, seed, c, &rustcrypto(c));
    }
    report("random cases against RustCrypto", all.len());
}

#[test]
fn issue_26_differential_64_mib() {
    let (seed, mut rng) = seeded();
    for (n, (variant, p)) in [(Variant::Id, 1), (Variant::D, 4)].into_iter().enumerate() {
        let mut c = random_case(&mut rng, 64);
        (c.variant, c.version, c.m, c.t, c.p) = (variant, Version::V0x13, 64 * 1024, 1, p);
        check_all_kernels(n, seed, &c, &rustcrypto(&c));
    }
    report("64 MiB against RustCrypto", 2);
}

/// The project interpreter (the .venv `./scripts/test` prepares); a missing one fails.
fn python() -> String {
    std::env::var("PORTCULLIS_PYTHON").unwrap_or_else(|_| {
        panic!(
            "PORTCULLIS_PYTHON is not set: run ./scripts/test (it prepares .venv with \
             argon2-cffi) or export PORTCULLIS_PYTHON=$PWD/.venv/bin/python after \
             scripts/python-env"
        )
    })
}

/// For each input line, libargon2's raw tag (with secret and associated data, through
/// `argon2_ctx`) and its encoded hash of the same password and parameters (no secret).
const LIBARGON2: &str = r#"
import sys
from argon2.low_level import ffi, lib, core, hash_secret, Type
types = {"d": Type.D, "i": Type.I, "id": Type.ID}
for line in sys.stdin:
    v, ver, m, t, p, pw, salt, sec, ad, n = line.split(":")
    ver, m, t, p, n = int(ver), int(m), int(t), int(p), int(n)
    pw, salt, sec, ad = (bytes.fromhex(x) for x in (pw, salt, sec, ad))
    buf = lambda b: ffi.new("uint8_t[]", b) if b else ffi.NULL
    keep = [buf(pw), buf(salt), buf(sec), buf(ad)]
    out = ffi.new("uint8_t[]", n)
    ctx = ffi.new("argon2_context *", dict(
        version=ver, out=out, outlen=n, pwd=keep[0], pwdlen=len(pw), salt=keep[1],
        saltlen=len(salt), secret=keep[2], secretlen=len(sec), ad=keep[3], adlen=len(ad),
        t_cost=t, m_cost=m, lanes=p, threads=p, allocate_cbk=ffi.NULL, free_cbk=ffi.NULL,
        flags=lib.ARGON2_DEFAULT_FLAGS))
    rc = core(ctx, types[v].value)
    if rc != 0:
        sys.exit("argon2_ctx: %d" % rc)
    enc = hash_secret(pw, salt, time_cost=t, memory_cost=m, parallelism=p, hash_len=n,
                      type=types[v], version=ver)
    print(bytes(ffi.buffer(out, n)).hex(), enc.decode())
"#;

#[test]
fn issue_26_differential_against_libargon2_raw_and_encoded() {
    let python = python();
    let (seed, mut rng) = seeded();
    let mut cases: Vec<Case> = (0..150).map(|_| random_case(&mut rng, 2048)).collect();
    for c in &mut cases {
        // libargon2 allows longer associated data than RustCrypto: use it.
        if rng.random_bool(0.3) {
            c.ad = bytes(&mut rng, 33, 200);
        }
    }
    let mut input = String::new();
    for c in &cases {
        let v = match c.variant {
            Variant::D => "d",
            Variant::I => "i",
            Variant::Id => "id",
        };
        input.push_str(&format!(
            "{v}:{}:{}:{}:{}:{}:{}:{}:{}:{}\n",
            c.version as u32,
            c.m,
            c.t,
            c.p,
            hex::encode(&c.password),
            hex::encode(&c.salt),
            hex::encode(&c.secret),
            hex::encode(&c.ad),
            c.len
        ));
    }
    let mut child = Command::new(&python)
        .args(["-c", LIBARGON2])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python} (set PORTCULLIS_PYTHON): {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "{python} failed: {output:?}");
    let lines: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), cases.len());
    for (n, (c, line)) in cases.iter().zip(&lines).enumerate() {
        let (raw, encoded) = line.split_once(' ').unwrap();
        check_all_kernels(n, seed, c, &hex::decode(raw).unwrap());
        let cred = Credential::parse(encoded)
            .unwrap_or_else(|e| panic!("case {n} (seed {seed}): {encoded} rejected: {e}"));
        let peppers = Peppers::new();
        assert_eq!(
            cred.verify(&c.password, &peppers),
            Ok(true),
            "case {n} (seed {seed}): {encoded} does not verify ({})",
            c.describe()
        );
        let mut wrong = c.password.clone();
        match wrong.first_mut() {
            Some(b) => *b ^= 1,
            None => wrong.push(0),
        }
        assert_eq!(
            cred.verify(&wrong, &peppers),
            Ok(false),
            "case {n} (seed {seed}): {encoded} accepts a wrong password"
        );
    }
    report("random cases against libargon2 (argon2-cffi)", cases.len());
}
