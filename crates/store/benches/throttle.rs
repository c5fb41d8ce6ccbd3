//! Cost of the shared throttle check (issue 13): what one attempt's budget check costs
//! when the budgets live in Redis instead of this process. Each sample is one `peek`
//! followed by one `acquire` of an attempt's three budgets (what the core does for a
//! failed cheap-credential attempt), measured end to end from a tokio runtime, spread
//! over 1,000 principals and 100 sources; the in-memory store is measured the same way in
//! the same run for the ratio. Prints p50/p90/p99/p99.9 in microseconds.
//!
//!     cargo bench -p portcullis-store --bench throttle [-- SAMPLES]
//!
//! Uses the machine's Redis (scripts/services; `PORTCULLIS_TEST_REDIS` overrides) under
//! a fresh key prefix; keys expire on their own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use portcullis_core::{
    Charge, GcraLimit, IpPrefix, MemoryThrottleStore, Origin, PrincipalKind, ThrottleKey,
    ThrottleStore,
};
use portcullis_store::{RedisThrottleConfig, RedisThrottleStore};

fn charges(i: usize) -> Vec<Charge> {
    let kind = PrincipalKind::Client;
    let principal = format!("client-{}", i % 1000);
    let origin = Origin::of(IpPrefix::of(
        format!("10.0.{}.1", i % 100).parse().unwrap(),
        24,
        64,
    ));
    // Generous budgets: every sample takes the full path (read, check, write).
    let limit = GcraLimit::new(1_000_000, Duration::from_secs(60));
    vec![
        Charge {
            key: ThrottleKey::PrincipalPrefix {
                kind,
                principal: principal.clone(),
                origin: origin.clone(),
            },
            limit,
        },
        Charge {
            key: ThrottleKey::Prefix(origin),
            limit,
        },
        Charge {
            key: ThrottleKey::Principal { kind, principal },
            limit,
        },
    ]
}

async fn measure(store: &dyn ThrottleStore, samples: usize) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for i in 0..samples {
        let c = charges(i);
        let t = Instant::now();
        store.peek(&c, t).await.unwrap();
        store.acquire(&c, t).await.unwrap();
        h.record(t.elapsed().as_nanos() as u64).unwrap();
    }
    h
}

fn line(name: &str, h: &Histogram<u64>) {
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{name:<22} p50 {:>7.1} µs  p90 {:>7.1} µs  p99 {:>7.1} µs  p99.9 {:>7.1} µs  ({} samples)",
        us(0.5),
        us(0.9),
        us(0.99),
        us(0.999),
        h.len()
    );
}

fn main() {
    let samples: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let url =
        std::env::var("PORTCULLIS_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let redis = RedisThrottleStore::new(&RedisThrottleConfig {
            target: portcullis_store::RedisTarget::Node(url),
            key_prefix: format!("bench-{}", std::process::id()),
            timeout: Duration::from_secs(1),
            retry: Duration::from_secs(1),
        })
        .unwrap();
        redis.ping().await.expect("Redis (run scripts/services)");
        let memory = MemoryThrottleStore::default();
        // Warm both (script load, connection, allocations), then measure in turn.
        measure(&redis, 1000).await;
        measure(&memory, 1000).await;
        let r = measure(&redis, samples).await;
        let m = measure(&memory, samples).await;
        println!("throttle check = peek + acquire of 3 budgets, one attempt at a time");
        line("redis (loopback)", &r);
        line("in-process memory", &m);
        println!(
            "redis/memory at p50: {:.0}x",
            r.value_at_quantile(0.5) as f64 / m.value_at_quantile(0.5).max(1) as f64
        );
    });
}
