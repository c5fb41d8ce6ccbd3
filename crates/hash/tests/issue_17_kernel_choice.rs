//! Issue 17: the automatic choice is the fastest kernel this CPU offers.
//!
//! A test binary of its own, so that no other test competes for the cores while it times
//! kernels (cargo runs test binaries one after another); `scripts/test` runs it with its
//! output shown.
//!
//! Two independent checks, so that a broken detection cannot hide behind a test that only
//! asks the code under test what it detected: the CPU's feature flags as the kernel reports
//! them in `/proc/cpuinfo` decide which kernels must be on offer (a CPU with AVX-512VL whose
//! SHA-512 fell back to portable code fails here), and the offered kernels are timed here,
//! independently of the start-up calibration, to check that the plan for a saturated pool
//! is the fastest of them. Every test prints the kernels it exercised, so a run on a CPU
//! without some feature says so instead of passing silently.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use portcullis_hash::batch::{
    Backend, Job, backends, calibration, derive_on, plan_for, preferred_batch,
};
use portcullis_hash::pbkdf2::{Backend as SingleBackend, Prf, backend_name};

/// The CPU flags the Linux kernel reports (empty elsewhere: then only the timing test
/// below applies).
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

/// What a CPU with `flags` must offer: the single-stream backend name and the batch
/// kernels, per PRF.
fn expected(prf: Prf, flags: &[String]) -> (&'static str, Vec<Backend>) {
    let has = |f: &str| flags.iter().any(|x| x == f);
    let mut batch = vec![Backend::Single];
    let single = match prf {
        Prf::Sha1 | Prf::Sha256 => {
            if has("sha_ni") {
                batch.extend([Backend::ShaNiX2, Backend::ShaNiX3, Backend::ShaNiX4]);
            }
            if has("avx512f") {
                batch.push(Backend::Avx512X16);
            }
            // Eight lanes: AVX-512VL's build where the CPU has it, AVX2's otherwise.
            if has("avx512f") && has("avx512vl") {
                batch.push(Backend::Avx512VlX8);
            } else if has("avx2") {
                batch.push(Backend::Avx2X8);
            }
            if has("sha_ni") { "sha-ni" } else { "portable" }
        }
        Prf::Sha512 => {
            if has("avx512f") {
                batch.push(Backend::Avx512X8);
            }
            if has("avx2") {
                batch.push(Backend::Avx2X4);
            }
            if has("avx512vl") && has("avx2") {
                "avx512vl-schedule"
            } else if has("bmi2") {
                "scalar-bmi2"
            } else {
                "portable"
            }
        }
    };
    (single, batch)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn issue_17_every_kernel_the_cpu_flags_promise_is_offered() {
    let flags = cpu_flags();
    assert!(!flags.is_empty(), "no flags line in /proc/cpuinfo");
    for prf in [Prf::Sha1, Prf::Sha256, Prf::Sha512] {
        let (single, want) = expected(prf, &flags);
        let cal = calibration(prf);
        let offered: Vec<&str> = cal.kernels.iter().map(|k| k.backend).collect();
        eprintln!(
            "issue 17: pbkdf2-{}: single stream {}, batch kernels offered {offered:?}",
            prf.name(),
            backend_name(prf, SingleBackend::Auto)
        );
        assert_eq!(backend_name(prf, SingleBackend::Auto), single, "{prf:?}");
        for b in &want {
            assert!(backends(prf).contains(b), "{prf:?}: {b:?} not available");
            assert!(offered.contains(&b.name()), "{prf:?}: {b:?} not planned");
        }
        assert_eq!(offered.len(), want.len(), "{prf:?}: offered {offered:?}");
    }
}

/// Nanoseconds per chain-iteration of `backend` on a full group of `width`, best of
/// `rounds` (interference only ever slows a round down).
fn time_per_chain(prf: Prf, backend: Backend, width: usize, iterations: u32) -> f64 {
    let passwords: Vec<Vec<u8>> = (0..width).map(|i| vec![i as u8; 8]).collect();
    let mut outs = vec![vec![0u8; prf.output_len()]; width];
    let mut jobs: Vec<Job<'_>> = passwords
        .iter()
        .zip(outs.iter_mut())
        .map(|(p, o)| Job {
            password: p,
            salt: b"salt",
            out: o,
        })
        .collect();
    let start = Instant::now();
    derive_on(backend, prf, iterations, &mut jobs).expect("offered backend");
    start.elapsed().as_nanos() as f64 / (width as f64 * f64::from(iterations))
}

/// The plan for a saturated pool (a full batch of the preferred width) runs the kernel
/// that is fastest per chain when each offered kernel is timed here, within 20% (the
/// calibration and this test measure at different moments on a shared machine).
#[test]
fn issue_17_saturated_plan_uses_the_fastest_offered_kernel() {
    for prf in [Prf::Sha1, Prf::Sha256, Prf::Sha512] {
        let cal = calibration(prf);
        let mut best = vec![f64::INFINITY; cal.kernels.len()];
        let iterations = if prf == Prf::Sha512 { 4000 } else { 8000 };
        for _ in 0..7 {
            for (b, k) in best.iter_mut().zip(&cal.kernels) {
                let backend = Backend::ALL
                    .into_iter()
                    .find(|x| x.name() == k.backend)
                    .expect("known backend");
                *b = b.min(time_per_chain(prf, backend, k.width, iterations));
            }
        }
        let (fastest, fastest_ns) = cal
            .kernels
            .iter()
            .zip(&best)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, ns)| (k.backend, *ns))
            .expect("the single stream is always offered");
        let plan = plan_for(prf, preferred_batch(prf));
        let chosen = plan.first().map_or("none", |(b, _)| b.name());
        let chosen_ns = cal
            .kernels
            .iter()
            .zip(&best)
            .find(|(k, _)| k.backend == chosen)
            .map_or(f64::INFINITY, |(_, ns)| *ns);
        let single_ns = best[0];
        eprintln!(
            "issue 17: pbkdf2-{}: timed here (ns per chain-iteration) {:?}; fastest {fastest} \
             ({:.2}x single); saturated plan {plan:?}",
            prf.name(),
            cal.kernels
                .iter()
                .zip(&best)
                .map(|(k, ns)| format!("{} {ns:.1}", k.backend))
                .collect::<Vec<_>>(),
            single_ns / fastest_ns,
        );
        assert!(
            chosen_ns <= fastest_ns * 1.2,
            "pbkdf2-{}: saturated plan runs {chosen} at {chosen_ns:.1} ns per chain, but \
             {fastest} takes {fastest_ns:.1}",
            prf.name()
        );
        assert_eq!(cal.best, chosen, "calibration and plan disagree");
    }
}
