//! Time our argon2 kernels (and RustCrypto's `argon2`, the dev-dependency reference) on
//! one thread: `cargo run --release -p portcullis-hash --example argon2_kernels -- \
//! [m_kib] [t] [p] [runs]`. Interleaved rounds, median ms per hash; for whole-process
//! comparisons with libargon2 use `scripts/argon2-bench`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use portcullis_hash::argon2_kernel::{self as k, Params, Serial, Variant, Version};

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("number"))
        .collect();
    let m = args.first().copied().unwrap_or(19456);
    let t = args.get(1).copied().unwrap_or(2);
    let p = args.get(2).copied().unwrap_or(1);
    let runs = args.get(3).copied().unwrap_or(21) as usize;
    let params = Params {
        variant: Variant::Id,
        version: Version::V0x13,
        m_cost: m,
        t_cost: t,
        p_cost: p,
        secret: &[],
        ad: &[],
    };
    let reference = argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon2::Params::new(m, t, p, Some(32)).unwrap(),
    );
    let mut rc_mem = vec![argon2::Block::default(); reference.params().block_count()];
    let names: Vec<String> = k::backends()
        .iter()
        .map(|b| b.name().to_owned())
        .chain(["rustcrypto".to_owned()])
        .collect();
    let mut samples = vec![Vec::new(); names.len()];
    let mut tags = vec![[0u8; 32]; names.len()];
    for round in 0..=runs {
        for (i, name) in names.iter().enumerate() {
            let start = Instant::now();
            if name == "rustcrypto" {
                reference
                    .hash_password_into_with_memory(
                        b"password",
                        b"somesalt",
                        &mut tags[i],
                        &mut rc_mem,
                    )
                    .unwrap();
            } else {
                let backend = k::backends()[i];
                k::hash_into(
                    &params,
                    b"password",
                    b"somesalt",
                    &mut tags[i],
                    backend,
                    &Serial,
                )
                .unwrap();
            }
            if round > 0 {
                samples[i].push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    assert!(tags.iter().all(|t| *t == tags[0]), "kernels disagree");
    println!(
        "argon2id m={m} t={t} p={p}, {runs} interleaved rounds, median ms per hash (one thread):"
    );
    for (name, s) in names.iter().zip(samples.iter_mut()) {
        s.sort_by(f64::total_cmp);
        println!("  {name:<10} {:8.3} ms  (min {:.3})", s[s.len() / 2], s[0]);
    }
    println!("  chosen: {}", k::kernel_choice().backend.name());
}
