//! The analytical streams' CPU priority (`--analytics-priority`): workload isolation
//! on a machine with fewer cores than threads, as HTAP deployments give analytical
//! work a lower resource class. Applied by each stream's own thread before its first
//! query; the threads a query starts for its scan parts (`--query-threads`) inherit
//! it, as Linux gives a new thread its creator's nice value and policy.

/// How a stream's thread shares the CPU with the transactions' threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// As every other thread (the default: the benchmark as published).
    #[default]
    Normal,
    /// Nice 19 (`setpriority` on the thread's own id), the weight CFS gives a thread
    /// least among the normal policy's: about 1.5% of a core a busy nice-0 thread
    /// shares with it.
    Low,
    /// `SCHED_IDLE`: the thread runs only when no thread of another policy wants the
    /// core (a weight of about a fifth of nice 19's).
    Idle,
}

impl Priority {
    pub const ALL: [Priority; 3] = [Priority::Normal, Priority::Low, Priority::Idle];

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Normal => "normal",
            Priority::Low => "low",
            Priority::Idle => "idle",
        }
    }

    /// `--analytics-priority`'s word, or one line naming the words there are.
    pub fn parse(s: &str) -> Result<Priority, String> {
        Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("'{s}' is not one of normal, low, idle"))
    }

    /// What the report says the streams ran at.
    pub fn describe(self) -> &'static str {
        match self {
            Priority::Normal => "normal (as the transactions' threads)",
            Priority::Low => {
                "low (each stream's thread and its scan threads at nice 19, not pinned to a core)"
            }
            Priority::Idle => {
                "idle (each stream's thread and its scan threads SCHED_IDLE, not pinned to a core)"
            }
        }
    }
}

/// Set `p` on the calling thread. A lowered stream is also let run on any of the
/// process's CPUs: the driver pins worker `w` to core `w mod cores`, which would
/// confine it to the idle time of the one core it shares with a transaction worker;
/// unpinned, it takes what any core leaves idle. `Err`: the call's failure, in words.
pub fn apply(p: Priority) -> Result<(), String> {
    match p {
        Priority::Normal => return Ok(()),
        // SAFETY: both calls act on this thread's own id and read nothing of ours but
        // the parameter block, which lives across the call.
        Priority::Low => unsafe {
            if libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) != 0 {
                return Err(format!(
                    "setpriority(nice 19): {}",
                    std::io::Error::last_os_error()
                ));
            }
        },
        Priority::Idle => unsafe {
            let param = libc::sched_param { sched_priority: 0 };
            if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
                return Err(format!(
                    "sched_setscheduler(SCHED_IDLE): {}",
                    std::io::Error::last_os_error()
                ));
            }
        },
    }
    rt::unpin_current();
    Ok(())
}

/// The calling thread's nice value and scheduling policy, as the kernel reports them.
pub fn current() -> (i32, i32) {
    // SAFETY: reads of this thread's own attributes. getpriority's -1 is a valid nice
    // value: errno is cleared first and checked after.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
        assert!(
            nice != -1 || *libc::__errno_location() == 0,
            "getpriority: {}",
            std::io::Error::last_os_error()
        );
        (nice, libc::sched_getscheduler(0))
    }
}

/// What `p` reads back as from [`current`] on a thread that applied it, starting from
/// nice `base` under the normal policy.
pub fn expected(p: Priority, base: i32) -> (i32, i32) {
    match p {
        Priority::Normal => (base, libc::SCHED_OTHER),
        Priority::Low => (19, libc::SCHED_OTHER),
        Priority::Idle => (base, libc::SCHED_IDLE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each priority, applied on a thread of its own, reads back from that thread's id
    /// as asked, and a thread it then starts (a query's scan thread) inherits it.
    #[test]
    fn a_thread_reads_back_the_priority_it_applied_and_its_scan_threads_inherit_it() {
        for p in Priority::ALL {
            let (got, child, base) = std::thread::spawn(move || {
                let (base, _) = current();
                apply(p).unwrap();
                let child = std::thread::spawn(current).join().unwrap();
                (current(), child, base)
            })
            .join()
            .unwrap();
            assert_eq!(got, expected(p, base), "{p:?}");
            assert_eq!(child, got, "{p:?}: the scan thread");
        }
        // This thread was never touched: the priority is the stream's, not the process's.
        assert_eq!(current().1, libc::SCHED_OTHER);
    }

    #[test]
    fn words_parse_and_bad_ones_are_named() {
        for p in Priority::ALL {
            assert_eq!(Priority::parse(p.as_str()), Ok(p));
        }
        assert_eq!(
            Priority::parse("high").unwrap_err(),
            "'high' is not one of normal, low, idle"
        );
    }
}
