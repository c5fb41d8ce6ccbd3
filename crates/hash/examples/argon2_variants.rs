//! Per-variant argon2 timing of one forced kernel (thread CPU time, median), to separate
//! the compression from the data-dependent walk: Argon2i's references do not depend on
//! the block just computed, Argon2d's do.
//!
//! `cargo run --release -p portcullis-hash --example argon2_variants -- avx512 [M T]`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use portcullis_hash::argon2_kernel::{Backend, Params, Serial, Variant, Version, hash_into};

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
    let backend = match args.first().map(String::as_str) {
        Some("avx2") => Backend::Avx2,
        Some("portable") => Backend::Portable,
        _ => Backend::Avx512,
    };
    assert_eq!(backend.resolve(), backend, "kernel not on this CPU");
    let shapes: Vec<(u32, u32)> = match (args.get(1), args.get(2)) {
        (Some(m), Some(t)) => vec![(m.parse().unwrap(), t.parse().unwrap())],
        _ => vec![(32, 1216), (256, 152), (19456, 2)],
    };
    for (m, t) in shapes {
        for variant in [Variant::I, Variant::D, Variant::Id] {
            let params = Params {
                variant,
                version: Version::V0x13,
                m_cost: m,
                t_cost: t,
                p_cost: 1,
                secret: &[],
                ad: &[],
            };
            let mut out = [0u8; 32];
            let mut ms: Vec<f64> = (0..16)
                .map(|_| {
                    let c = cpu_ms();
                    hash_into(&params, b"pw", b"saltsalt", &mut out, backend, &Serial).unwrap();
                    cpu_ms() - c
                })
                .skip(1)
                .collect();
            ms.sort_by(f64::total_cmp);
            let blocks = f64::from(m / 4 * 4) * f64::from(t);
            println!(
                "{} m={m} t={t} {variant:?}: {:.3} ms, {:.1} ns per block",
                backend.name(),
                ms[ms.len() / 2],
                ms[ms.len() / 2] * 1e6 / blocks
            );
        }
    }
}
