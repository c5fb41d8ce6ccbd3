//! Core clock cycles from the thread's CPU time, whatever the clock speed (shared by the
//! cycle-counting examples).
//!
//! Shared cloud machines change clock speed by tens of percent from one second to the
//! next. A chain of dependent 64-bit square-and-add steps takes a fixed number of cycles
//! per step on current x86-64 cores (3 + 1 on AMD Zen and Intel since Sandy Bridge), so
//! timing one right before and after a measurement gives the length of a cycle then.

use std::hint::black_box;

/// Latency of one 64-bit `imul` plus one `add`, in cycles (AMD Zen 1-5, Intel Sandy
/// Bridge and later).
const STEP_LATENCY: f64 = 4.0;

/// Seconds this thread has run on a CPU: other processes that preempt it on a shared
/// machine do not count.
pub fn thread_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID unavailable");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Seconds per cycle, from a serial chain of `n` square-and-add steps.
pub fn seconds_per_cycle(n: u64) -> f64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15_u64);
    let start = thread_seconds();
    for _ in 0..n {
        // Each step needs the previous one: the chain runs at the latency of a multiply
        // and an add, whatever the loop overhead (which executes in parallel with it).
        // Squaring, not a constant factor, so the compiler cannot fold steps together.
        x = x.wrapping_mul(x).wrapping_add(0xd6e8_feb8_6659_fd93);
    }
    black_box(x);
    (thread_seconds() - start) / (n as f64 * STEP_LATENCY)
}

/// The median (upper middle) of `v`, which it sorts.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
