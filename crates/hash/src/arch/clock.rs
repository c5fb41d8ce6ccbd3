//! The calling thread's CPU time: what kernel timings are measured in, so that time the
//! thread spent descheduled (a neighbour preempting it) does not count against a kernel.

/// CPU time consumed by the calling thread, in nanoseconds (`None` where the OS has no
/// per-thread CPU clock).
#[cfg(target_os = "linux")]
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call, and
    // clock_gettime writes nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs * 1_000_000_000 + nanos)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    None
}
