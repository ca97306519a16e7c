//! The run report: every figure of a run, serializable as JSON and printable as a table.

use crate::machine::Machine;
use hdrhistogram::Histogram;
use workloads::Check;

/// Open-loop arrivals (`--rate`, a setting the report states): `tps` in total, split
/// evenly over the workers.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Rate {
    pub tps: f64,
    /// Exponential gaps between arrivals (a Poisson process) instead of equal ones.
    pub poisson: bool,
}

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
    /// Why the check did not run, when it was to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub workload: String,
    pub engine: String,
    pub threads: usize,
    /// Transactions per worker thread run as coroutines (1: none).
    pub coroutines: usize,
    /// `--interleave`: probe points whose prefetches were issued together (1: each at
    /// once; `--interleave-group`).
    pub interleave_group: usize,
    /// Coroutine switches over the whole run (0 without coroutines).
    pub coroutine_switches: u64,
    /// Of those, the switches made at index probes (`--interleave`; the rest are waits,
    /// conflict-key holds included, and coroutines ending).
    pub probe_switches: u64,
    /// Transactions committed over the whole run, warm-up included: the switches'
    /// denominator (switches per transaction: `coroutine_switches` over it).
    pub committed_whole_run: u64,
    /// `--interleave`: inputs a stream started before older ones of its own because
    /// their conflict classes were in flight on the thread, and waits for such classes,
    /// over the whole run (`Workload::conflicts`; 0 for a kit without them).
    pub keyed_reordered: u64,
    pub keyed_held: u64,
    /// STEPS team statistics over the whole run (with `--steps-team`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepsReport>,
    /// Per-transaction statistics (`--stats`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<crate::stats::StatsReport>,
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
    /// New-Order transactions per minute, rolled-back ones included as clause 5.4.2
    /// requires (TPC-C only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpmc: Option<f64>,
    /// Trade-Result transactions per second, TPC-E's reported throughput (clause 6.7.1;
    /// TPC-E only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpse: Option<f64>,
    /// Open loop: the offered rate and arrivals (latency counts from intended starts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<Rate>,
    /// The workload's counters of measured commits (TPC-C: skipped Delivery districts).
    pub counters: std::collections::BTreeMap<String, u64>,
    /// The workload's remarks on the run (TPC-C: home-warehouse mode, missed mix
    /// minimums, skipped deliveries).
    pub notes: Vec<String>,
    pub latency_us: Latency,
    pub per_txn: Vec<TxnTypeReport>,
    pub checks: Checks,
    /// Why the run ended before its time (a memory limit, a signal); absent when it ran
    /// to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// The process's resident memory during the run and the limit it was held to.
    pub memory: crate::memwatch::MemoryReport,
    /// A stopped run's engine, already shut down, released after the report is out.
    #[serde(skip)]
    pub(crate) _held: Held,
    pub load_s: Option<f64>,
    /// Seconds to open an existing database (`--no-load`): its recovery, checkpoint
    /// and log read and any command replay included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_s: Option<f64>,
    pub config: serde_json::Value,
    pub engine_stats: serde_json::Value,
    pub machine: Machine,
    pub version: String,
    pub started_at_unix_s: u64,
    /// One entry per second of the run, warm-up included (empty unless
    /// `RunConfig::timeseries`); written as CSV, not in the report's JSON.
    #[serde(skip)]
    pub timeseries: Vec<Second>,
    /// The measured latency histograms in nanoseconds, one per transaction type in the
    /// order of `per_txn` (serialized apart, in HdrHistogram's V2 form).
    #[serde(skip)]
    pub histograms: Vec<Histogram<u64>>,
}

/// The engine of a stopped run, kept (shut down) until its report is out: its teardown
/// may allocate (the memory engine lists its records to free them: 90 MB on a 360 MB
/// TPC-C database, measured), which a run stopped at its memory limit does not have.
/// A clone of the report does not hold it.
#[derive(Default)]
pub(crate) struct Held(pub(crate) Option<Box<dyn api::Database>>);

impl Clone for Held {
    fn clone(&self) -> Self {
        Held(None)
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Held(engine)"
        } else {
            "Held(none)"
        })
    }
}

/// A run ended before its time: the report covers what ran until then.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stopped {
    /// `memory-limit` or `interrupted`.
    pub reason: String,
    /// The signal that interrupted the run (the process dies of it after the report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Seconds into the run (warm-up included) when it was stopped.
    pub at_s: f64,
    /// One line saying why.
    pub message: String,
}

/// STEPS team statistics (the paper's Table 4 and Section 4.3), over the whole run,
/// warm-up and retried transactions included, summed over worker threads.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StepsReport {
    /// The team size cap (`--steps-team`).
    pub team_cap: usize,
    /// The candidate CTX points that switch (`--steps-points`); None: all of them.
    pub enabled_ctx_points: Option<usize>,
    /// Teams formed.
    pub teams: u64,
    /// Mean members per team when formed.
    pub avg_team_size: f64,
    /// `team_sizes[k - 1]`: teams formed with k members.
    pub team_sizes: Vec<u64>,
    /// Mean coroutines parked or stray when a team was formed ("ready threads").
    pub avg_ready: f64,
    /// Operation entries.
    pub operations: u64,
    /// Share of operations run to their end in a team of two or more, not as strays.
    pub in_teams_share: f64,
    /// Members that left their team by waiting (lock, latch, I/O, back-off).
    pub strays: u64,
    /// Operations of transactions retried after a conflict: they run alone, in no team.
    pub retry_operations: u64,
    /// CTX points at which the thread passed to another team member.
    pub ctx_switches: u64,
    /// Transactions begun (retries included).
    pub transactions: u64,
    pub ctx_switches_per_txn: f64,
    /// Per team list: the paper's Table 4 rows.
    pub per_operation: Vec<TeamReport>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TeamReport {
    /// Operation and, for per-table teams, its table (and secondary index).
    pub operation: String,
    pub teams: u64,
    /// Mean members that entered a team ("in") and left it at their next operation,
    /// not as strays ("out").
    pub avg_in: f64,
    pub avg_out: f64,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl StepsReport {
    pub fn new(s: &rt::coro::StepsStats, schema: &api::schema::Schema) -> StepsReport {
        let name = |op: u32, obj: u64| {
            let opn = probe::Op::ALL
                .iter()
                .find(|o| **o as u32 == op)
                .map_or("op?", |o| o.name());
            if obj == rt::NO_OBJ {
                return opn.to_string();
            }
            let (t, i) = ((obj >> 16) as usize, (obj & 0xffff) as usize);
            let tn = schema
                .tables
                .get(t)
                .map_or_else(|| format!("table {t}"), |d| d.name.clone());
            match i {
                0 => format!("{opn}({tn})"),
                _ => {
                    let ix = schema.tables.get(t).and_then(|d| d.secondary.get(i - 1));
                    format!("{opn}({tn}.{})", ix.map_or("?", |x| x.name.as_str()))
                }
            }
        };
        StepsReport {
            team_cap: s.cap,
            enabled_ctx_points: rt::ctx_points().map(|p| p.len()),
            teams: s.teams,
            avg_team_size: s.avg_team(),
            team_sizes: s.team_sizes.iter().skip(1).copied().collect(),
            avg_ready: ratio(s.ready_sum, s.teams),
            operations: s.ops,
            in_teams_share: ratio(s.ops_in_teams, s.ops),
            strays: s.strays,
            retry_operations: s.retry_ops,
            ctx_switches: s.ctx_switches,
            transactions: s.txns,
            ctx_switches_per_txn: ratio(s.ctx_switches, s.txns),
            per_operation: s
                .rows
                .iter()
                .map(|r| TeamReport {
                    operation: name(r.op, r.obj),
                    teams: r.teams,
                    avg_in: ratio(r.members_in, r.teams),
                    avg_out: ratio(r.members_out, r.teams),
                })
                .collect(),
        }
    }

    fn to_text(&self, o: &mut String) {
        use std::fmt::Write;
        let sizes: Vec<String> = self
            .team_sizes
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{}:{}", k + 1, fmt_count(*n as f64)))
            .collect();
        let _ = writeln!(
            o,
            "STEPS teams of at most {}: {} teams, mean size {:.2} (sizes {}), {:.1} ready on average",
            self.team_cap,
            fmt_count(self.teams as f64),
            self.avg_team_size,
            sizes.join(" "),
            self.avg_ready
        );
        let _ = writeln!(
            o,
            "  {:.1}% of {} operations in teams, {} strays, {} operations of retries run alone, {:.1} CTX switches per transaction ({})",
            self.in_teams_share * 100.0,
            fmt_count(self.operations as f64),
            fmt_count(self.strays as f64),
            fmt_count(self.retry_operations as f64),
            self.ctx_switches_per_txn,
            match self.enabled_ctx_points {
                None => "at every candidate point".to_string(),
                Some(n) => format!("at the {n} points of --steps-points"),
            }
        );
        let _ = writeln!(
            o,
            "  {:<32} {:>10} {:>7} {:>7}",
            "operation (team)", "teams", "in", "out"
        );
        for t in &self.per_operation {
            let _ = writeln!(
                o,
                "  {:<32} {:>10} {:>7.2} {:>7.2}",
                t.operation,
                fmt_count(t.teams as f64),
                t.avg_in,
                t.avg_out
            );
        }
    }
}

/// One second of the run (the last one may be partial: `interval_s`).
#[derive(Debug, Clone)]
pub struct Second {
    /// Seconds since the run started (load excluded); the interval [second, second+1).
    pub second: u64,
    /// Any of the interval was warm-up.
    pub warmup: bool,
    pub interval_s: f64,
    pub committed: u64,
    pub aborted: u64,
    pub user_aborts: u64,
    /// Worker CPU time over (threads x interval).
    pub worker_cpu_busy: Option<f64>,
    /// Latency of the transactions that ended in the interval, all types.
    pub latency_us: Latency,
    /// Per transaction type, in the order of `Report::per_txn`.
    pub per_txn: Vec<SecondTxn>,
}

#[derive(Debug, Clone)]
pub struct SecondTxn {
    pub committed: u64,
    pub aborted: u64,
    pub user_aborts: u64,
    pub latency_us: Latency,
}

/// A count or rate rounded to an integer, with thousands separators.
pub fn fmt_count(v: f64) -> String {
    use num_format::{Locale, ToFormattedString};
    (v.round() as i64).to_formatted_string(&Locale::en)
}

/// A borderless table: the first column left-aligned, the others right-aligned.
fn table(out: &mut String, header: &[&str], rows: Vec<Vec<String>>) {
    use comfy_table::{presets::NOTHING, CellAlignment, Table};
    let mut t = Table::new();
    t.load_style(NOTHING)
        .set_header(header.to_vec())
        .add_rows(rows);
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((if i == 0 { 0 } else { 2 }, 0));
        if i > 0 {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for l in t.lines() {
        out.push_str(l.trim_end());
        out.push('\n');
    }
}

/// Below this measured interval, rates mostly measure start-up and the end of the run:
/// the text report says so instead of printing tpmC or reading the CPU share.
pub const SHORT_RUN_S: f64 = 0.5;

/// Seconds, or milliseconds below one second (never "0.0 s").
fn fmt_secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        format!("{s:.1} s")
    }
}

impl Report {
    /// Terminal rendering: the summary lines, the per-type table, the checks.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        self.text_summary(&mut o);
        o.push('\n');
        self.text_types(&mut o);
        o.push('\n');
        self.text_checks(&mut o);
        o
    }

    /// What ran and how fast, the run's conditions, waits and the workload's notes.
    fn text_summary(&self, o: &mut String) {
        use std::fmt::Write;
        let short = self.duration_s < SHORT_RUN_S;
        let _ = writeln!(
            o,
            "{} on {} engine, {} thread(s), {} measured after {} warm-up, seed {}",
            self.workload,
            self.engine,
            self.threads,
            fmt_secs(self.duration_s),
            if self.warmup_s > 0.0 {
                fmt_secs(self.warmup_s)
            } else {
                "no".into()
            },
            self.seed
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
        // An engine's own settings worth a line (a SQL engine's isolation level).
        if let Some(s) = self.engine_stats.get("settings").and_then(|s| s.as_str()) {
            let _ = writeln!(o, "engine settings: {s}");
        }
        if let Some(s) = self.open_s {
            let _ = writeln!(
                o,
                "opened the database in {} (recovery included)",
                fmt_secs(s)
            );
        }
        if let Some(s) = &self.stopped {
            let _ = writeln!(o, "stopped {:.1} s into the run: {}", s.at_s, s.message);
        }
        if let Some(r) = &self.open_loop {
            let _ = writeln!(
                o,
                "open loop: offered {} txn/s, {} arrivals; latency counts from each transaction's intended start",
                fmt_count(r.tps),
                if r.poisson { "Poisson" } else { "regular" }
            );
        }
        if short {
            let _ = writeln!(
                o,
                "(a run under {SHORT_RUN_S} s: rates and CPU shares mostly measure its start and end; \
                 use --duration or more --txns for figures)"
            );
        } else if let Some(b) = self.worker_cpu_busy {
            let _ = writeln!(
                o,
                "workers on CPU {:.0}% of the measured time{}",
                b * 100.0,
                if self.open_loop.is_some() {
                    " (open loop: they also wait for arrivals)"
                } else if b < 0.9 {
                    " (they waited for I/O or locks, or other load took their cores)"
                } else {
                    ""
                }
            );
        }
        if self.coroutines > 1 {
            let per_txn = |n: u64| n as f64 / self.committed_whole_run.max(1) as f64;
            let group = if self.interleave_group > 1 {
                format!(
                    " (prefetches issued {} probes at a time)",
                    self.interleave_group
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "{} coroutines per thread{group}, {} switches ({} at index probes): {:.1} ({:.1}) per committed transaction",
                self.coroutines,
                fmt_count(self.coroutine_switches as f64),
                fmt_count(self.probe_switches as f64),
                per_txn(self.coroutine_switches),
                per_txn(self.probe_switches)
            );
            if self.keyed_reordered + self.keyed_held > 0 {
                let _ = writeln!(
                    o,
                    "conflict classes in flight: {} inputs started before older ones of their stream, {} waits",
                    fmt_count(self.keyed_reordered as f64),
                    fmt_count(self.keyed_held as f64)
                );
            }
        }
        if let Some(s) = &self.steps {
            s.to_text(o);
        }
        self.text_waits_and_merit(o, short);
    }

    /// The summary's last lines: the workers' waits, the TPC figures of merit (not for a
    /// short run) and the workload's notes.
    fn text_waits_and_merit(&self, o: &mut String, short: bool) {
        use std::fmt::Write;
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
        if let Some(t) = self.tpmc.filter(|_| !short) {
            let _ = writeln!(
                o,
                "tpmC (New-Order per minute, rolled back included) {}",
                fmt_count(t)
            );
        }
        if let Some(t) = self.tpse.filter(|_| !short) {
            let _ = writeln!(o, "tpsE (Trade-Result per second) {}", fmt_count(t));
        }
        for n in &self.notes {
            let _ = writeln!(o, "{n}");
        }
    }

    /// One row per transaction type (and all of them), with latency percentiles.
    fn text_types(&self, o: &mut String) {
        use std::fmt::Write;
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut row = |name: &str, c: u64, a: u64, u: u64, tps: f64, l: &Latency| {
            let mut r = vec![
                name.to_string(),
                fmt_count(c as f64),
                fmt_count(a as f64),
                fmt_count(u as f64),
                fmt_count(tps),
            ];
            r.extend([l.p50, l.p95, l.p99, l.p999, l.max].map(|v| format!("{v:.1}")));
            rows.push(r);
        };
        // A type never tried (CH-benCHmark's 22 queries in a run without a stream) is a
        // row of zeros: named once below the table instead.
        let mut idle: Vec<&str> = Vec::new();
        for t in &self.per_txn {
            if t.committed + t.aborted + t.user_aborts == 0 {
                idle.push(&t.name);
                continue;
            }
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
        table(
            o,
            &[
                "transaction",
                "committed",
                "aborts",
                "user-ab",
                "txn/s",
                "p50 us",
                "p95 us",
                "p99 us",
                "p99.9 us",
                "max us",
            ],
            rows,
        );
        if !idle.is_empty() {
            let _ = writeln!(o, "not run: {}", idle.join(", "));
        }
    }

    /// The consistency checks, one line each.
    fn text_checks(&self, o: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(
            o,
            "consistency checks: {}",
            match &self.checks.skipped {
                Some(why) => format!("skipped ({why})"),
                None if self.checks.passed => "all passed".into(),
                None => "FAILED".into(),
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
    }
}

/// Plain progress lines (sysbench's `--report-interval`): what a terminal's live display
/// shows, as a line every interval on standard error, for logs and pipes where a
/// progress bar is invisible. The interval in milliseconds, 0 = no lines; process-wide
/// like the standard error it writes to, set once by the CLI before the work starts.
static PLAIN_INTERVAL_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Print plain progress lines every `seconds` (0: none).
pub fn set_plain_interval(seconds: f64) {
    assert!(
        seconds >= 0.0 && seconds.is_finite(),
        "an interval is a duration"
    );
    let ms = (seconds * 1000.0).round() as u64;
    PLAIN_INTERVAL_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
}

/// The plain lines' interval in milliseconds, if they are on.
fn plain_interval_ms() -> Option<u64> {
    Some(PLAIN_INTERVAL_MS.load(std::sync::atomic::Ordering::Relaxed)).filter(|&ms| ms > 0)
}

/// A load's plain progress: a line on starting, one every interval (rows, share, rate),
/// one at the end. Shared by the loader threads.
pub struct PlainLoad {
    what: String,
    total: u64,
    every_ms: u64,
    start: std::time::Instant,
    done: std::sync::atomic::AtomicU64,
    next_ms: std::sync::atomic::AtomicU64,
}

impl PlainLoad {
    /// None when plain lines are off; else says what is being loaded.
    pub fn start(what: &str, total: u64, threads: usize) -> Option<PlainLoad> {
        let every_ms = plain_interval_ms()?;
        eprintln!(
            "loading {what}: {} rows with {threads} thread(s)",
            fmt_count(total as f64)
        );
        Some(PlainLoad {
            what: what.to_string(),
            total,
            every_ms,
            start: std::time::Instant::now(),
            done: 0.into(),
            next_ms: every_ms.into(),
        })
    }

    /// `n` more rows loaded; prints a line when the interval has passed (one thread
    /// wins the line, the others go on).
    pub fn inc(&self, n: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let done = self.done.fetch_add(n, Relaxed) + n;
        let now = self.start.elapsed().as_millis() as u64;
        let next = self.next_ms.load(Relaxed);
        if now < next
            || self
                .next_ms
                .compare_exchange(next, now + self.every_ms, Relaxed, Relaxed)
                .is_err()
        {
            return;
        }
        let secs = now as f64 / 1000.0;
        eprintln!(
            "[{secs:>6.0}s] loading {}: {} of {} rows ({:.0}%), {} rows/s",
            self.what,
            fmt_count(done as f64),
            fmt_count(self.total as f64),
            100.0 * done as f64 / self.total.max(1) as f64,
            fmt_count(done as f64 / secs.max(1e-3))
        );
    }

    pub fn finish(&self) {
        eprintln!(
            "loaded {}: {} rows in {:.1} s",
            self.what,
            fmt_count(self.done.load(std::sync::atomic::Ordering::Relaxed) as f64),
            self.start.elapsed().as_secs_f64()
        );
    }
}

/// A run's plain progress: throughput and abort share over each interval.
pub struct PlainRun {
    every_s: f64,
    warmup_s: f64,
    /// The last line's time and (committed, aborted) then.
    last_s: f64,
    last: (u64, u64),
}

impl PlainRun {
    /// None when plain lines are off; else says what the run will do.
    pub fn start(workload: &str, warmup_s: f64, stop: &str) -> Option<PlainRun> {
        let every_s = plain_interval_ms()? as f64 / 1000.0;
        eprintln!("running {workload}: {warmup_s:.1} s warm-up, then {stop}");
        Some(PlainRun {
            every_s,
            warmup_s,
            last_s: 0.0,
            last: (0, 0),
        })
    }

    /// At `t_s` seconds into the run with `now` (committed, aborted) so far: a line if
    /// an interval has passed since the last one, or at the `end` (when anything is left).
    pub fn at(&mut self, t_s: f64, now: (u64, u64), end: bool) {
        let len = t_s - self.last_s;
        // The warm-up's end closes an interval, so a measured line holds no warm-up (the
        // first, at a whole second, holds the warm-up's fraction, as per-second lines).
        let warmup_ends = self.last_s < self.warmup_s && t_s >= self.warmup_s;
        if len < self.every_s - 1e-6 && !(end && len > 0.05) && !warmup_ends {
            return;
        }
        let (dc, da) = (now.0 - self.last.0, now.1 - self.last.1);
        let what = if self.last_s < self.warmup_s {
            "warm-up"
        } else {
            "measure"
        };
        let aborts = if dc + da > 0 {
            100.0 * da as f64 / (dc + da) as f64
        } else {
            0.0
        };
        eprintln!(
            "[{t_s:>6.1}s] {what:<8} {:>11} txn/s   aborts {aborts:>6.2}%",
            fmt_count(dc as f64 / len)
        );
        (self.last_s, self.last) = (t_s, now);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_get_separators_and_short_times_milliseconds() {
        assert_eq!(super::fmt_count(1234567.4), "1,234,567");
        assert_eq!(super::fmt_count(-1234.6), "-1,235");
        assert_eq!(super::fmt_count(999.0), "999");
        assert_eq!(super::fmt_secs(0.026), "26 ms");
        assert_eq!(super::fmt_secs(10.0), "10.0 s");
    }
}
