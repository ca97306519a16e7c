//! The power run's bookkeeping (clause 5.3.5): which queries run in which order, the
//! line announcing each, each query's time as the workload measured it, and the report's
//! per-query times, geometric mean and power figure (clause 5.4.1). It never runs a
//! query itself (the kit's `execute` does).

use super::queries::{Query, IMPLEMENTED, STREAM0};
use std::sync::Mutex;

/// Parse `--queries 1,6,3` (or `--query N`): numbers in 1..=22, each implemented,
/// none twice. Out of range, unknown or not implemented: one line (exit 2 upstream).
pub fn parse_queries(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let n: u32 = part
            .trim()
            .parse()
            .map_err(|_| format!("query '{part}' is not a number"))?;
        if !(1..=22).contains(&n) {
            return Err(format!(
                "query {n} is out of range: TPC-H has queries 1 to 22"
            ));
        }
        if !IMPLEMENTED.contains(&n) {
            return Err(format!(
                "query {n} is not implemented yet (implemented: {})",
                list(&IMPLEMENTED)
            ));
        }
        if out.contains(&n) {
            return Err(format!("query {n} is named twice"));
        }
        out.push(n);
    }
    Ok(out)
}

fn list(q: &[u32]) -> String {
    q.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The queries of a power run in stream 0's order (Appendix A): the `chosen` ones, or
/// every implemented one.
pub fn stream_order(chosen: Option<&[u32]>) -> Vec<u32> {
    STREAM0
        .iter()
        .copied()
        .filter(|n| chosen.map_or(IMPLEMENTED.contains(n), |c| c.contains(n)))
        .collect()
}

/// One query's measured execution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    pub query: u32,
    pub seconds: f64,
    pub rows: usize,
}

/// The times of the measured queries, in the order they completed.
#[derive(Debug, Default)]
pub struct Times(Mutex<Vec<Timed>>);

impl Times {
    pub fn record(&self, t: Timed) {
        self.0.lock().unwrap().push(t);
    }

    pub fn all(&self) -> Vec<Timed> {
        self.0.lock().unwrap().clone()
    }
}

/// The line announcing a query of the run (stderr, as the other kits' progress).
pub fn announce(q: &Query, at: usize, of: usize) {
    eprintln!("tpch: Q{} running ({} of {of})", q.number(), at + 1);
}

/// Clause 5.4.1.4: timing intervals shorter than the longest / 1000 count as that.
fn floored(secs: &[f64]) -> Vec<f64> {
    let max = secs.iter().copied().fold(0.0, f64::max);
    secs.iter().map(|&s| s.max(max / 1000.0)).collect()
}

/// The geometric mean of the (floored) times, seconds.
pub fn geometric_mean(secs: &[f64]) -> f64 {
    let f = floored(secs);
    (f.iter().map(|s| s.ln()).sum::<f64>() / f.len() as f64).exp()
}

/// The report's lines: each query's time, the geometric mean and the power figure
/// 3600 x SF / geometric mean (clause 5.4.1's Power@Size over the queries that ran;
/// marked partial: the refresh functions, and any query not run, are missing).
pub fn notes(times: &[Timed], sf: f64) -> Vec<String> {
    if times.is_empty() {
        return vec!["tpch power run: no query completed in the measured phase".into()];
    }
    let mut out: Vec<String> = times
        .iter()
        .map(|t| {
            format!(
                "Q{:<2} {:>10.3} s  {} row{}",
                t.query,
                t.seconds,
                t.rows,
                if t.rows == 1 { "" } else { "s" }
            )
        })
        .collect();
    let secs: Vec<f64> = times.iter().map(|t| t.seconds).collect();
    let gm = geometric_mean(&secs);
    let ran: Vec<u32> = times.iter().map(|t| t.query).collect();
    let missing: Vec<u32> = (1..=22).filter(|n| !ran.contains(n)).collect();
    out.push(format!(
        "queries run: {} of 22 ({}); total {:.3} s; geometric mean {gm:.4} s",
        ran.len(),
        list(&ran),
        secs.iter().sum::<f64>()
    ));
    let queries = if missing.is_empty() {
        String::new()
    } else {
        format!("queries {} and ", list(&missing))
    };
    out.push(format!(
        "power (partial: {queries}both refresh functions missing): {:.1} = 3600 x SF {sf} / geometric mean",
        3600.0 * sf / gm
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_and_order_as_stream_zero() {
        assert_eq!(parse_queries("1,6,3"), Ok(vec![1, 6, 3]));
        assert!(parse_queries("0").unwrap_err().contains("out of range"));
        assert!(parse_queries("23").unwrap_err().contains("out of range"));
        assert!(parse_queries("x").is_err());
        assert!(parse_queries("1,1").unwrap_err().contains("twice"));
        assert_eq!(stream_order(Some(&[1, 6, 3])), vec![6, 3, 1]);
        // Every implemented query, in stream 0's order (whatever IMPLEMENTED holds).
        let all = stream_order(None);
        let at = |n: &u32| STREAM0.iter().position(|m| m == n).unwrap();
        assert_eq!(all.len(), IMPLEMENTED.len());
        assert!(IMPLEMENTED.iter().all(|n| all.contains(n)));
        assert!(all.windows(2).all(|w| at(&w[0]) < at(&w[1])), "{all:?}");
        assert_eq!(all[0], 14);
    }

    #[test]
    fn the_geometric_mean_floors_at_a_thousandth_of_the_longest() {
        assert!((geometric_mean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
        // 0.0001 counts as 10 / 1000 = 0.01: sqrt(0.01 x 10) = 0.316...
        assert!((geometric_mean(&[0.0001, 10.0]) - 0.1f64.sqrt()).abs() < 1e-12);
        let n = notes(
            &[
                Timed {
                    query: 6,
                    seconds: 1.0,
                    rows: 1,
                },
                Timed {
                    query: 1,
                    seconds: 4.0,
                    rows: 4,
                },
            ],
            0.1,
        );
        assert!(n[2].contains("geometric mean 2.0000 s"), "{n:?}");
        assert!(
            n[3].starts_with("power (partial: queries 2, 3, 4, 5,"),
            "{n:?}"
        );
        assert!(n[3].contains(": 180.0 = "), "{n:?}");
    }
}
