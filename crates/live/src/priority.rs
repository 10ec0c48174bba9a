//! Thread priorities (Linux): a latency path's threads may run ahead of the kernels, a check's run
//! behind them.
//!
//! Why a real-time level: with the CPU workers' kernels on every core, a protocol thread woken by a
//! request waits for a core until the running kernel's scheduler slice ends, at each of a request's
//! wake-ups. Measured on a 2-core VM at 1,400 requests/s of 0.5 ms Sobel (docs/performance.md,
//! "Real-time priority"): the handler's p99 was 0.7-2.0 ms with every thread at the normal priority,
//! whether the workers ran at nice 10, `SCHED_BATCH`, `SCHED_IDLE` or a 0.1 ms slice, and 0.2-0.4 ms
//! with the protocol threads, the CPU workers and the load generator all at `SCHED_FIFO` 1. One
//! level for all of them: no thread on the path is time-sliced, a kernel runs to its end, and a
//! protocol thread that wakes behind kernels takes the next core to free and then handles everything
//! that has come in. The protocol threads one level above the kernels (preempting them at every
//! wake-up) measured far worse at 2,000 requests/s (p50 8.1 against 2.8-3.1 ms): twice the load
//! generator's CPU time and the kernels cut mid-run. The real-time level alone without the workers,
//! or without the load generator on the same machine, was worse than none: the threads left at the
//! normal priority starve behind it.

use std::fmt;
use std::str::FromStr;

/// How a latency path's threads (the server's protocol threads, the load generator's) are scheduled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// The normal time-shared priority.
    #[default]
    Normal,
    /// The lowest real-time level, `SCHED_FIFO` 1, for the protocol threads, the CPU workers and the
    /// load generator alike: ahead of every normal thread, and none of them time-sliced. Needs root,
    /// `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least 1; the kernel's real-time
    /// throttling (95% of each second by default) still leaves the other threads a share.
    Realtime,
}

impl Priority {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Normal => "normal",
            Priority::Realtime => "realtime",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A priority that is neither `normal` nor `realtime`.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unknown priority '{0}': expected normal or realtime")]
pub struct UnknownPriority(pub String);

impl FromStr for Priority {
    type Err = UnknownPriority;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "normal" => Ok(Priority::Normal),
            "realtime" => Ok(Priority::Realtime),
            _ => Err(UnknownPriority(s.to_string())),
        }
    }
}

/// The system refused a real-time priority.
#[derive(Debug, thiserror::Error)]
#[error(
    "this process may not run threads at a real-time priority ({0})\n  fix: run it as root, grant the \
     binary CAP_SYS_NICE (setcap cap_sys_nice+ep <path>), or raise RLIMIT_RTPRIO to at least 1 \
     (ulimit -r 1); or leave the priority normal"
)]
pub struct Refused(std::io::Error);

/// Puts the calling thread at `priority`. At the real-time level, the threads and processes it
/// starts begin at the normal priority (`SCHED_RESET_ON_FORK`): a CPU worker or a compiler it
/// spawns never inherits it.
pub fn set(priority: Priority) -> Result<(), Refused> {
    let (policy, level) = match priority {
        Priority::Normal => (libc::SCHED_OTHER, 0),
        Priority::Realtime => (libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, 1),
    };
    let param = libc::sched_param { sched_priority: level };
    // SAFETY: a plain syscall on the calling thread (0) with a valid parameter; failure leaves the
    // thread as it was, and is returned.
    match unsafe { libc::sched_setscheduler(0, policy, &param) } {
        0 => Ok(()),
        _ => Err(Refused(std::io::Error::last_os_error())),
    }
}

/// Whether this process may put threads at `priority`: tried on a short-lived thread of its own, so
/// that a refusal is found before the threads that need it start.
pub fn check(priority: Priority) -> Result<(), Refused> {
    if priority == Priority::Normal {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("spork-priority".into())
        .spawn(move || set(priority))
        .map_err(Refused)?
        .join()
        .unwrap_or_else(|_| Err(Refused(std::io::Error::other("the check's thread panicked"))))
}

/// Runs the calling thread only when a core would otherwise idle (`SCHED_IDLE`), best effort: for a
/// check that must never take CPU time from the server it checks.
pub fn idle() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a plain syscall on the calling thread (0); failure only leaves the priority as it was.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

/// Lowers the calling thread to `nice` (best effort): for work that stands in for a separate device
/// and must not take CPU time from the workers whose latency is real wall time.
pub fn lower(nice: i32) {
    // SAFETY: a plain syscall on the calling thread's own id; failure only leaves the priority.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy and real-time level, as the system reports them.
    fn current() -> (i32, i32) {
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: plain syscalls on the calling thread (0), writing into a valid `sched_param`.
        let policy = unsafe { libc::sched_getscheduler(0) };
        unsafe { libc::sched_getparam(0, &mut param) };
        (policy, param.sched_priority)
    }

    #[test]
    fn names_parse_back_and_a_bad_one_is_named() {
        for p in [Priority::Normal, Priority::Realtime] {
            assert_eq!(p.name().parse::<Priority>(), Ok(p));
        }
        assert_eq!("RealTime".parse::<Priority>(), Ok(Priority::Realtime));
        let e = "fifo".parse::<Priority>().unwrap_err();
        assert!(e.to_string().contains("'fifo'") && e.to_string().contains("normal or realtime"), "{e}");
    }

    /// Where the system allows it (root here and in CI), a thread goes real-time and back, and a
    /// thread it starts begins at the normal priority; where it does not, the refusal names the fix.
    #[test]
    fn a_realtime_thread_starts_normal_threads_and_can_go_back() {
        let seen = std::thread::spawn(|| {
            let set = set(Priority::Realtime);
            let here = current();
            let child = std::thread::spawn(current).join().expect("child thread");
            let back = (super::set(Priority::Normal).is_ok(), current());
            (set, here, child, back)
        })
        .join()
        .expect("test thread");
        match seen {
            (Ok(()), here, child, back) => {
                assert_eq!(here, (libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, 1));
                assert_eq!(child, (libc::SCHED_OTHER, 0), "a thread it starts must not inherit it");
                assert_eq!(back, (true, (libc::SCHED_OTHER, 0)));
                assert!(check(Priority::Realtime).is_ok());
            }
            (Err(e), ..) => {
                assert!(e.to_string().contains("CAP_SYS_NICE"), "{e}");
                assert!(check(Priority::Realtime).is_err(), "the check must agree with the thread");
            }
        }
    }
}
