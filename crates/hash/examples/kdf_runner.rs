//! One side of `scripts/argon2-bench`: a whole process that makes one stored hash and
//! verifies it `count` times, printing one JSON line (per-verification milliseconds and
//! minor page faults of the first hash and per warm verification).
//!
//! ```text
//! kdf_runner ours argon2id M T P COUNT
//! kdf_runner rustcrypto argon2id M T P COUNT
//! kdf_runner ours-avx512 argon2id M T P COUNT     (also ours-avx2, ours-portable)
//! kdf_runner ours scrypt LOG_N R P COUNT
//! kdf_runner ours bcrypt COST COUNT
//! ```
//!
//! `ours` is the product path: `Policy::hash`, then `Credential::verify` (for argon2 our
//! kernel with the thread's reused arena; scrypt and bcrypt through their crates).
//! `rustcrypto` is the `argon2` crate as a server would use it (fresh memory per call).
//! `ours-KERNEL` forces one of our compression kernels (same reused arena, raw tag
//! compared with the first one's): to compare the kernels in whole processes beside the
//! automatic choice. A kernel the CPU lacks is refused, not replaced.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use portcullis_hash::argon2_kernel::{self as kernel, Backend, Params, Serial, Variant, Version};
use portcullis_hash::{Credential, Peppers, Policy};

fn minor_faults() -> i64 {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a live rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_minflt
}

/// CPU time of this thread in milliseconds (a shared machine deschedules us; this does
/// not count the time another process had the core).
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize| -> u32 { args[i].parse().expect("number") };
    let password = b"benchmark password";
    let (who, alg) = (args[0].as_str(), args[1].as_str());
    let count = num(args.len() - 1) as usize;
    let mut verify: Box<dyn FnMut()> = match (who, alg) {
        ("rustcrypto", "argon2id") => {
            let params = argon2::Params::new(num(2), num(3), num(4), Some(32)).unwrap();
            let ctx =
                argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
            let mut want = [0u8; 32];
            Box::new(move || {
                let mut out = [0u8; 32];
                ctx.hash_password_into(password, b"0123456789abcdef", &mut out)
                    .unwrap();
                if want == [0u8; 32] {
                    want = out;
                }
                assert_eq!(out, want);
            })
        }
        (forced, "argon2id") if forced.starts_with("ours-") => {
            let backend = match forced {
                "ours-avx512" => Backend::Avx512,
                "ours-avx2" => Backend::Avx2,
                "ours-portable" => Backend::Portable,
                other => panic!("unknown kernel {other}"),
            };
            assert_eq!(backend.resolve(), backend, "{forced}: not on this CPU");
            let (m, t, p) = (num(2), num(3), num(4));
            let mut want = [0u8; 32];
            Box::new(move || {
                let params = Params {
                    variant: Variant::Id,
                    version: Version::V0x13,
                    m_cost: m,
                    t_cost: t,
                    p_cost: p,
                    secret: &[],
                    ad: &[],
                };
                let mut out = [0u8; 32];
                kernel::hash_into(
                    &params,
                    password,
                    b"0123456789abcdef",
                    &mut out,
                    backend,
                    &Serial,
                )
                .unwrap();
                if want == [0u8; 32] {
                    want = out;
                }
                assert_eq!(out, want);
            })
        }
        ("ours", _) => {
            let policy = match alg {
                "argon2id" => Policy::Argon2id {
                    m: num(2),
                    t: num(3),
                    p: num(4),
                },
                "scrypt" => Policy::Scrypt {
                    log_n: num(2) as u8,
                    r: num(3),
                    p: num(4),
                },
                "bcrypt" => Policy::Bcrypt { cost: num(2) },
                other => panic!("unknown algorithm {other}"),
            };
            let peppers = Peppers::new();
            let mut cred: Option<Credential> = None;
            Box::new(move || match &cred {
                // The first call makes the stored hash (the thread's first argon2 hash:
                // cold memory); the others verify it.
                None => cred = Some(Credential::parse(&policy.hash(password).unwrap()).unwrap()),
                Some(c) => assert_eq!(c.verify(password, &peppers), Ok(true)),
            })
        }
        _ => panic!("usage: see the module doc"),
    };
    let mut ms = Vec::with_capacity(count);
    let mut cpu = Vec::with_capacity(count);
    let f0 = minor_faults();
    let start = Instant::now();
    verify();
    let first_ms = start.elapsed().as_secs_f64() * 1e3;
    let f1 = minor_faults();
    for _ in 0..count {
        let (start, c0) = (Instant::now(), cpu_ms());
        verify();
        cpu.push(cpu_ms() - c0);
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let f2 = minor_faults();
    println!(
        "{{\"ms\": {ms:?}, \"cpu_ms\": {cpu:?}, \"first_ms\": {first_ms}, \"minflt_first\": {}, \"minflt_warm\": {}}}",
        f1 - f0,
        (f2 - f1) as f64 / count as f64
    );
}
