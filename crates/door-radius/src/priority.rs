//! CPU priority of the RADIUS accounting door's threads: below authentication's.
//!
//! Report 003's lesson applied to accounting: a storm of Accounting-Requests (every access
//! point of a rebooted controller sending Accounting-On and Start at once) must not take
//! the CPU that logins need. The door's threads (the receive thread of each accounting
//! socket, the writer and its store connection's worker) run below the hash pool and the
//! runtime (`[accounting] idle`, `nice`), so the kernel's scheduler gives them what
//! authentication leaves: all of an idle machine, little of a saturated one. What they
//! cannot keep up with waits in the bounded queue, then is dropped unanswered and counted
//! (the NAS retransmits); nothing is acknowledged early.
//!
//! By default they run under Linux's `SCHED_IDLE` policy, whose weight (3) is a fifth of
//! nice 19's (15): measured beside PAP logins that saturate the hash pool (issue 41 item
//! 8, Xeon 2 vCPU), the door's threads took 0.06-0.07 of a core from the logins' CPU at
//! nice 19 and 0.03-0.04 under `SCHED_IDLE`.
//!
//! Linux keeps the policy and the nice value per thread and a new thread inherits its
//! creator's: the writer opens its store connection after lowering itself, so the SQLite
//! worker thread that the connect spawns starts the same. Elsewhere this is a no-op (the
//! door still works, at authentication's priority).

/// How a thread is scheduled beside authentication's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadPriority {
    /// The process's own (authentication's).
    Normal,
    /// A nice value from 1 (slightly below) to 19 (the lowest).
    Nice(i32),
    /// `SCHED_IDLE`: only CPU that no other thread wants.
    Idle,
}

/// Lower the calling thread to `priority`. Lowering one's own priority needs no
/// privilege; a failure is logged, not fatal (the door works either way, only without the
/// guarantee).
pub(crate) fn lower_this_thread(priority: ThreadPriority, what: &str) {
    let result = match priority {
        ThreadPriority::Normal => return,
        ThreadPriority::Nice(nice) => set_nice(nice),
        ThreadPriority::Idle => set_idle(),
    };
    if let Err(e) = result {
        tracing::warn!("{what}: could not lower its CPU priority to {priority:?}: {e}");
    }
}

/// 0 from a system call, or its error.
#[cfg(target_os = "linux")]
fn checked(rc: i32) -> std::io::Result<()> {
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // the crate's unsafe blocks: system calls on integers
fn set_nice(nice: i32) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: plain system calls on integers. `gettid` cannot fail; `setpriority` with
    // PRIO_PROCESS and a thread id changes that one thread on Linux (per-thread nice).
    checked(unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    })
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // the crate's unsafe blocks: system calls on integers
fn set_idle() -> std::io::Result<()> {
    use nix::libc;
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` lives across the call, which only reads it; pid 0 is the calling
    // thread (Linux schedules threads, not processes).
    checked(unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) })
}

#[cfg(not(target_os = "linux"))]
fn set_nice(_nice: i32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set_idle() -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{ThreadPriority, lower_this_thread};

    /// The policy and nice value the kernel reports for the calling thread.
    #[allow(unsafe_code)]
    fn this_thread() -> (i32, i32) {
        use nix::libc;
        // SAFETY: calls on the calling thread without pointers.
        unsafe {
            let tid = libc::gettid();
            (
                libc::sched_getscheduler(0),
                libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t),
            )
        }
    }

    #[test]
    fn each_priority_is_what_the_kernel_then_schedules_the_thread_at() {
        let seen = |p| {
            std::thread::spawn(move || {
                lower_this_thread(p, "test");
                // A thread it starts inherits it (the writer's SQLite worker).
                let child = std::thread::spawn(this_thread).join().unwrap();
                (this_thread(), child)
            })
            .join()
            .unwrap()
        };
        let normal = this_thread();
        assert_eq!(seen(ThreadPriority::Normal), (normal, normal));
        let (own, child) = seen(ThreadPriority::Nice(19));
        assert_eq!(
            (own, child),
            ((nix::libc::SCHED_OTHER, 19), (nix::libc::SCHED_OTHER, 19))
        );
        let (own, child) = seen(ThreadPriority::Idle);
        assert_eq!(own.0, nix::libc::SCHED_IDLE);
        assert_eq!(child.0, nix::libc::SCHED_IDLE);
    }
}
