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
