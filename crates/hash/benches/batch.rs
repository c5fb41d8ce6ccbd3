//! Criterion benchmarks of batch PBKDF2 (issue #3): derivations per second for batch sizes
//! 1..=8 on one thread, next to the single-stream kernel in the same run.
//!
//! `batch/<hash>/single` derives one password with `pbkdf2::pbkdf2_hmac`;
//! `batch/<hash>/derive/<k>` derives `k` passwords in one `batch::derive` call (the
//! planner's choice of kernels). Criterion's throughput is in elements = derivations, so
//! the ratio of the two rates is the batching gain. Pin to one core for stable figures:
//! `taskset -c 1 cargo bench -p portcullis-hash --bench batch`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use portcullis_hash::batch::{self, Job};
use portcullis_hash::pbkdf2::{Prf, pbkdf2_hmac};

/// Iterations per derivation: long enough that the per-job set-up (key states and the
/// first block over the salt) is noise, short enough for criterion's sample counts.
const ITERATIONS: u32 = 10_000;
const MAX_BATCH: usize = 8;

fn batches(c: &mut Criterion) {
    let passwords: Vec<Vec<u8>> = (0..MAX_BATCH)
        .map(|i| format!("password {i}").into_bytes())
        .collect();
    let salts: Vec<Vec<u8>> = (0..MAX_BATCH)
        .map(|i| format!("salt-{i:04}").into_bytes())
        .collect();
    for prf in [Prf::Sha1, Prf::Sha256, Prf::Sha512] {
        let mut g = c.benchmark_group(format!("batch/{}", prf.name()));
        g.sample_size(20);
        let mut outs = vec![vec![0u8; prf.output_len()]; MAX_BATCH];
        g.throughput(Throughput::Elements(1));
        g.bench_function("single", |b| {
            b.iter(|| {
                pbkdf2_hmac(
                    prf,
                    std::hint::black_box(&passwords[0]),
                    &salts[0],
                    ITERATIONS,
                    &mut outs[0],
                )
            })
        });
        for k in 1..=MAX_BATCH {
            g.throughput(Throughput::Elements(k as u64));
            g.bench_with_input(BenchmarkId::new("derive", k), &k, |b, &k| {
                b.iter(|| {
                    let mut jobs: Vec<Job<'_>> = passwords[..k]
                        .iter()
                        .zip(&salts[..k])
                        .zip(outs.iter_mut())
                        .map(|((p, s), o)| Job {
                            password: std::hint::black_box(p),
                            salt: s,
                            out: o,
                        })
                        .collect();
                    batch::derive(prf, ITERATIONS, &mut jobs);
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, batches);
criterion_main!(benches);
