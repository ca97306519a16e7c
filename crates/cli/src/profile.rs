//! `oltpscope profile`'s additions to the run's text: the waits as shares of the
//! workers' time (the run report gives them in milliseconds). The sampling itself is
//! the `profiler` crate's; the command is `run` with an observer (`commands::run_with`).

use std::fmt::Write as _;

/// Time waiting by kind over the workers' measured time (threads x duration): the time
/// the cpu-clock samples do not see while a worker sleeps.
pub fn waits_text(r: &driver::Report) -> String {
    let worker_ms = r.duration_s * 1000.0 * r.threads as f64;
    let mut s = String::from("\ntime waiting by kind (share of the workers' measured time)\n");
    let mut any = false;
    for w in r.waits.iter().filter(|w| w.count > 0) {
        any = true;
        let _ = writeln!(
            s,
            "  {:<10} {:5.1}%  ({} waits)",
            w.kind,
            100.0 * w.total_ms / worker_ms.max(1e-9),
            w.count
        );
    }
    if !any {
        s += "  none\n";
    }
    s
}

/// The disk engine's lock manager time split as A-to-E's Figure 2, as shares of the
/// workers' measured time: Lock-PC (waiting for the latch of a lock's entry), Lock-LC
/// (waiting for a conflicting lock after the request was queued: the measured phase's
/// `lock` waits from `rt`), and Lock (the locking work: the lock component's share of
/// the CPU samples).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct LockSplit {
    pub lock: f64,
    pub lock_pc: f64,
    pub lock_lc: f64,
}

/// None for engines without a lock manager.
pub fn lock_split(r: &driver::Report, p: &profiler::Profile) -> Option<LockSplit> {
    let l = &r.engine_stats["lock"];
    let pc_ns = l["latch_wait_ns"].as_u64()?;
    let lc_ns = r
        .waits
        .iter()
        .filter(|w| w.kind == "lock")
        .map(|w| w.total_ms * 1e6)
        .sum::<f64>();
    let worker_ns = r.duration_s * 1e9 * r.threads as f64;
    let cpu = r.worker_cpu_busy.unwrap_or(1.0);
    let lock_cpu = p
        .components
        .iter()
        .find(|c| c.name == "lock")
        .map_or(0.0, |c| c.share);
    Some(LockSplit {
        lock: lock_cpu * cpu,
        lock_pc: pc_ns as f64 / worker_ns.max(1.0),
        lock_lc: lc_ns / worker_ns.max(1.0),
    })
}

pub fn lock_split_text(s: Option<LockSplit>) -> String {
    let Some(s) = s else {
        return String::new();
    };
    format!(
        "\nlock manager time (share of the workers' time; A-to-E Figure 2)\n  Lock     {:5.1}%  (CPU samples in the lock component, spinning waits included)\n  Lock-PC  {:5.1}%  (waiting for a lock entry's latch)\n  Lock-LC  {:5.1}%  (waiting for a conflicting lock)\n  (Lock-PC is the lock manager's own clock since its creation: warm-up included)\n",
        100.0 * s.lock,
        100.0 * s.lock_pc,
        100.0 * s.lock_lc,
    )
}
