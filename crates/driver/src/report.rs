//! The run report: every figure of a run, serializable as JSON and printable as a table.

use crate::machine::Machine;
use hdrhistogram::Histogram;
use workloads::Check;

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// From a histogram of nanoseconds, in microseconds.
    pub fn from_ns(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |v: u64| v as f64 / 1000.0;
        Latency {
            mean: h.mean() / 1000.0,
            p50: us(h.value_at_quantile(0.50)),
            p95: us(h.value_at_quantile(0.95)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TxnTypeReport {
    pub name: String,
    pub committed: u64,
    /// Conflict aborts (each retried with the same inputs).
    pub aborted: u64,
    pub user_aborts: u64,
    pub throughput_tps: f64,
    pub latency_us: Latency,
}

/// Waits of one kind (`rt::WaitKind`) by the worker threads in the measured phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WaitReport {
    pub kind: String,
    pub count: u64,
    /// Summed over waits; with coroutines, time a transaction waited while others ran.
    pub total_ms: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Checks {
    pub passed: bool,
    pub list: Vec<Check>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub workload: String,
    pub engine: String,
    pub threads: usize,
    /// Transactions per worker thread run as coroutines (1: none).
    pub coroutines: usize,
    /// Coroutine switches over the whole run (0 without coroutines).
    pub coroutine_switches: u64,
    /// Waits through `rt` by kind, measured phase, all worker threads.
    pub waits: Vec<WaitReport>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub seed: u64,
    pub committed: u64,
    pub aborted: u64,
    pub user_aborts: u64,
    pub abort_rate: f64,
    pub throughput_tps: f64,
    /// Worker threads' CPU time over (threads x measured seconds): well below 1.0 means
    /// the workers waited (I/O, sleeping locks) or other load took their cores.
    pub worker_cpu_busy: Option<f64>,
    /// New-Order transactions per minute (TPC-C only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpmc: Option<f64>,
    pub latency_us: Latency,
    pub per_txn: Vec<TxnTypeReport>,
    pub checks: Checks,
    pub load_s: Option<f64>,
    pub config: serde_json::Value,
    pub engine_stats: serde_json::Value,
    pub machine: Machine,
    pub version: String,
    pub started_at_unix_s: u64,
}

fn fmt_count(v: f64) -> String {
    let s = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Report {
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} on {} engine, {} thread(s), {:.1} s measured after {:.1} s warm-up, seed {}",
            self.workload, self.engine, self.threads, self.duration_s, self.warmup_s, self.seed
        );
        let _ = writeln!(
            o,
            "throughput {} txn/s   committed {}   conflict aborts {} ({:.2}%)   user aborts {}",
            fmt_count(self.throughput_tps),
            fmt_count(self.committed as f64),
            fmt_count(self.aborted as f64),
            self.abort_rate * 100.0,
            fmt_count(self.user_aborts as f64)
        );
        if let Some(b) = self.worker_cpu_busy {
            let _ = writeln!(
                o,
                "workers on CPU {:.0}% of the measured time{}",
                b * 100.0,
                if b < 0.9 {
                    " (they waited for I/O or locks, or other load took their cores)"
                } else {
                    ""
                }
            );
        }
        if self.coroutines > 1 {
            let _ = writeln!(
                o,
                "{} coroutines per thread, {} switches",
                self.coroutines,
                fmt_count(self.coroutine_switches as f64)
            );
        }
        let waited: Vec<String> = self
            .waits
            .iter()
            .filter(|w| w.count > 0)
            .map(|w| {
                format!(
                    "{} {} ({:.1} ms)",
                    w.kind,
                    fmt_count(w.count as f64),
                    w.total_ms
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "waits: {}",
            if waited.is_empty() {
                "none".to_string()
            } else {
                waited.join(", ")
            }
        );
        if let Some(t) = self.tpmc {
            let _ = writeln!(o, "tpmC (New-Order per minute) {}", fmt_count(t));
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:<16} {:>12} {:>10} {:>10} {:>12} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "transaction",
            "committed",
            "aborts",
            "user-ab",
            "txn/s",
            "p50 us",
            "p95 us",
            "p99 us",
            "p99.9 us",
            "max us"
        );
        let mut row = |name: &str, c: u64, a: u64, u: u64, tps: f64, l: &Latency| {
            let _ = writeln!(
                o,
                "{:<16} {:>12} {:>10} {:>10} {:>12} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1}",
                name,
                fmt_count(c as f64),
                fmt_count(a as f64),
                fmt_count(u as f64),
                fmt_count(tps),
                l.p50,
                l.p95,
                l.p99,
                l.p999,
                l.max
            );
        };
        for t in &self.per_txn {
            row(
                &t.name,
                t.committed,
                t.aborted,
                t.user_aborts,
                t.throughput_tps,
                &t.latency_us,
            );
        }
        if self.per_txn.len() > 1 {
            row(
                "all",
                self.committed,
                self.aborted,
                self.user_aborts,
                self.throughput_tps,
                &self.latency_us,
            );
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "consistency checks: {}",
            if self.checks.passed {
                "all passed"
            } else {
                "FAILED"
            }
        );
        for c in &self.checks.list {
            let _ = writeln!(
                o,
                "  [{}] {}: {}",
                if c.passed { "ok" } else { "FAIL" },
                c.name,
                c.detail
            );
        }
        o
    }
}
