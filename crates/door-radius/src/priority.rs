//! CPU priority of the RADIUS accounting door's threads: below authentication's.
//!
//! Report 003's lesson applied to accounting: a storm of Accounting-Requests (every access
//! point of a rebooted controller sending Accounting-On and Start at once) must not take
//! the CPU that logins need. The door's threads (the receive thread of each accounting
//! socket, the writer and its store connection's worker) run at a higher nice value
//! (`[accounting] nice`) than the hash pool and the runtime, so the kernel's scheduler
//! gives them what authentication leaves: all of an idle machine, little of a saturated
//! one. What they cannot keep up with waits in the bounded queue, then is dropped
//! unanswered and counted (the NAS retransmits); nothing is acknowledged early.
//!
//! Linux keeps the nice value per thread and a new thread inherits its creator's: the
//! writer opens its store connection after lowering itself, so the SQLite worker thread
//! that the connect spawns starts at the same value. Elsewhere this is a no-op (the
//! door still works, at authentication's priority).

/// Raise the calling thread's nice value to `nice` (0: leave it). Lowering one's own
/// priority needs no privilege; a failure is logged, not fatal (the door works either
/// way, only without the guarantee).
pub(crate) fn lower_this_thread(nice: i32, what: &str) {
    if nice == 0 {
        return;
    }
    if let Err(e) = set_nice(nice) {
        tracing::warn!("{what}: could not lower its CPU priority to nice {nice}: {e}");
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // the crate's one unsafe block: two system calls on integers
fn set_nice(nice: i32) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: plain system calls on integers. `gettid` cannot fail; `setpriority` with
    // PRIO_PROCESS and a thread id changes that one thread on Linux (per-thread nice).
    let rc = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn set_nice(_nice: i32) -> std::io::Result<()> {
    Ok(())
}
