//! The hybrid run's report lines: TPC-C's throughput and the analytical streams'
//! queries per hour side by side, each query's measured times and rows, and how
//! stale the queries' reads were. Prints nothing itself (the driver does).

use super::{queries, Chbench, Timed};

/// `TPC-C ... txn/s (tpmC ...) | analytics ... queries/h`, over the measured seconds.
pub fn side_by_side(ch: &Chbench, done: &[u64], secs: f64) -> String {
    let secs = secs.max(1e-9);
    let tpcc: u64 = done[..5].iter().sum();
    let q: u64 = done[5..].iter().sum();
    format!(
        "chbench: TPC-C {:.1} txn/s (tpmC {:.0}) on {} worker(s) | analytics {:.1} queries/h on {} stream(s) ({q} queries in {secs:.1} s)",
        tpcc as f64 / secs,
        done[0] as f64 * 60.0 / secs,
        ch.cfg.tpcc_threads,
        q as f64 * 3600.0 / secs,
        ch.cfg.streams,
    )
}

/// One line per query that completed in the measured phase (runs, mean, min and max
/// seconds, rows of its last answer, TPC-C commits while it ran), then staleness.
pub fn query_lines(times: &[Timed]) -> Vec<String> {
    if times.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for n in queries::IMPLEMENTED {
        let of: Vec<&Timed> = times.iter().filter(|t| t.query == n).collect();
        let Some(last) = of.last() else { continue };
        let secs: Vec<f64> = of.iter().map(|t| t.seconds).collect();
        let mean = secs.iter().sum::<f64>() / secs.len() as f64;
        let min = secs.iter().copied().fold(f64::MAX, f64::min);
        let max = secs.iter().copied().fold(0.0, f64::max);
        let stale: Vec<u64> = of.iter().map(|t| t.commits_during).collect();
        out.push(format!(
            "Q{n:<2} {:>5} run(s)  mean {mean:.3} s  min {min:.3} s  max {max:.3} s  {} row(s)  TPC-C commits while it ran: mean {:.0}, max {}",
            of.len(),
            last.rows,
            stale.iter().sum::<u64>() as f64 / stale.len() as f64,
            stale.iter().max().unwrap_or(&0),
        ));
    }
    let n = times.len() as f64;
    let mean_stale = times.iter().map(|t| t.commits_during).sum::<u64>() as f64 / n;
    let max_stale = times.iter().map(|t| t.commits_during).max().unwrap_or(0);
    let mean_age = times.iter().map(|t| t.seconds).sum::<f64>() / n;
    out.push(format!(
        "staleness: by its end a query had missed {mean_stale:.0} TPC-C commits on average (max {max_stale}), its snapshot then {mean_age:.3} s old on average (mvcc reads the snapshot of the query's begin; memory, disk and sqlite read what is committed as they go: see docs/design/chbench.md)"
    ));
    out
}
