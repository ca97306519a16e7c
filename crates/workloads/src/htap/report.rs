//! The hybrid run's report lines: the kit's throughput and the analytical streams'
//! queries per hour side by side, each query's measured times and rows, and how
//! stale the queries' reads were. Prints nothing itself (the driver does).

use super::{Hybrid, Kit, Timed};

/// `TPC-C ... txn/s (tpmC ...) on N worker(s) | analytics ... queries/h on S
/// stream(s)`, over the measured seconds.
pub fn side_by_side<K: Kit>(h: &Hybrid<K>, done: &[u64], secs: f64) -> String {
    let secs = secs.max(1e-9);
    let k = h.kit_types();
    let q: u64 = done[k..].iter().sum();
    format!(
        "{}: {} on {} worker(s) | analytics {:.1} queries/h on {} stream(s) ({q} queries in {secs:.1} s)",
        h.kit.name(),
        h.kit.txn_rate(&done[..k], secs),
        h.cfg.txn_threads,
        q as f64 * 3600.0 / secs,
        h.cfg.streams,
    )
}

/// One line per query that completed in the measured phase (runs, mean, min and max
/// seconds, rows of its last answer, the kit's commits while it ran), then staleness.
pub fn query_lines<K: Kit>(h: &Hybrid<K>, times: &[Timed]) -> Vec<String> {
    if times.is_empty() {
        return Vec::new();
    }
    let label = h.kit.txn_label();
    let mut out = Vec::new();
    for &n in h.kit.implemented() {
        let of: Vec<&Timed> = times.iter().filter(|t| t.query == n).collect();
        let Some(last) = of.last() else { continue };
        let secs: Vec<f64> = of.iter().map(|t| t.seconds).collect();
        let mean = secs.iter().sum::<f64>() / secs.len() as f64;
        let min = secs.iter().copied().fold(f64::MAX, f64::min);
        let max = secs.iter().copied().fold(0.0, f64::max);
        let stale: Vec<u64> = of.iter().map(|t| t.commits_during).collect();
        out.push(format!(
            "{:<3} {:>5} run(s)  mean {mean:.3} s  min {min:.3} s  max {max:.3} s  {} row(s)  {label} commits while it ran: mean {:.0}, max {}",
            h.kit.query_name(n),
            of.len(),
            last.rows,
            stale.iter().sum::<u64>() as f64 / stale.len() as f64,
            stale.iter().max().unwrap_or(&0),
        ));
    }
    let n = times.len() as f64;
    let mean_stale = times.iter().map(|t| t.commits_during).sum::<u64>() as f64 / n;
    let max_stale = times.iter().map(|t| t.commits_during).max().unwrap_or(0);
    let busy = times.iter().map(|t| t.seconds).sum::<f64>();
    let mean_age = busy / n;
    out.push(format!(
        "staleness: by its end a query had missed {mean_stale:.0} {label} commits on average (max {max_stale}), its snapshot then {mean_age:.3} s old on average (mvcc reads the snapshot of the query's begin; memory, disk and sqlite read what is committed as they go: see {})",
        h.kit.doc()
    ));
    out.push(format!(
        "analytics on CPU: the streams' threads ran {:.0}% of their queries' time",
        100.0 * times.iter().map(|t| t.cpu_seconds).sum::<f64>() / busy.max(1e-9)
    ));
    out
}

/// The streams' CPU priority (`--analytics-priority`), and, once, why it could not be
/// set when a stream's call failed. None without a stream.
pub fn priority_line<K: Kit>(h: &Hybrid<K>, failed: Option<&str>) -> Option<String> {
    if h.cfg.streams == 0 {
        return None;
    }
    let p = h.cfg.priority;
    Some(match failed {
        None => format!("analytics priority: {}", p.describe()),
        Some(why) => format!(
            "analytics priority: {} was asked, but a stream could not set it ({why}): it ran at its thread's priority before",
            p.as_str()
        ),
    })
}
