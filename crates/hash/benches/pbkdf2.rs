//! Criterion benchmarks of the PBKDF2 kernel (issue #2).
//!
//! `compress/<hash>/<backend>` runs the raw compression function over a 16 KiB buffer
//! (as `openssl speed -evp <hash> -bytes 16384` does); `pbkdf2/<hash>/<backend>` runs a
//! derivation of one output block at a fixed iteration count. Read the ratio from one run:
//! a derivation of `c` iterations costs `2c` compressions, so
//! fraction of bound = (2c / 16 KiB-blocks) x compress time / pbkdf2 time.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use portcullis_hash::pbkdf2::{Backend, Prf, backend_name, pbkdf2_hmac_on, raw_compress};

const PRFS: [Prf; 3] = [Prf::Sha1, Prf::Sha256, Prf::Sha512];
/// Iterations per derivation in the benchmark: long enough that setup is noise.
const ITERATIONS: u32 = 10_000;

fn compress(c: &mut Criterion) {
    let buffer: Vec<u8> = (0..16384u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut g = c.benchmark_group("compress");
    g.throughput(Throughput::Bytes(buffer.len() as u64));
    for prf in PRFS {
        for backend in [Backend::Auto, Backend::Portable] {
            let id = BenchmarkId::new(prf.name(), backend_name(prf, backend));
            g.bench_with_input(id, &buffer, |b, buf| {
                b.iter(|| raw_compress(prf, backend, std::hint::black_box(buf)))
            });
        }
    }
    g.finish();
}

fn derive(c: &mut Criterion) {
    let mut g = c.benchmark_group("pbkdf2");
    for prf in PRFS {
        // Elements = compressions, so criterion's rate is comparable with `compress`.
        g.throughput(Throughput::Elements(2 * u64::from(ITERATIONS)));
        for backend in [Backend::Auto, Backend::Portable] {
            let id = BenchmarkId::new(prf.name(), backend_name(prf, backend));
            let mut out = vec![0u8; prf.output_len()];
            g.bench_function(id, |b| {
                b.iter(|| {
                    pbkdf2_hmac_on(
                        backend,
                        prf,
                        std::hint::black_box(b"password"),
                        b"0123456789abcdef",
                        ITERATIONS,
                        &mut out,
                    )
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, compress, derive);
criterion_main!(benches);
