//! `--stats`: per-transaction statistics (A-to-E's Table 4) from the `txnstats` counters
//! the engines keep on each worker thread: sums per transaction type of the measured
//! phase's committed transactions, and apart from them the attempts that aborted
//! (conflicts and user aborts), as averages; and the database's tables as stored after
//! the load.

use txnstats::{Counter, Counts};

/// Sums of one transaction type's measured attempts on one worker.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sums {
    pub committed: Counts,
    pub aborted: Counts,
    pub aborted_attempts: u64,
}

impl Sums {
    pub(crate) fn add(&mut self, o: &Sums) {
        self.committed.add(&o.committed);
        self.aborted.add(&o.aborted);
        self.aborted_attempts += o.aborted_attempts;
    }
}

/// Averages over a set of transaction attempts. `None`: the engine design has no such
/// thing (`api::Counted`), never a zero standing in for "not counted".
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Averages {
    pub records_read: f64,
    pub records_written: f64,
    /// Read + written (A-to-E's "records accessed").
    pub records_accessed: f64,
    pub row_locks: f64,
    pub higher_locks: f64,
    pub escalations: Option<f64>,
    pub heap_pages_unique: Option<f64>,
    pub heap_pages: Option<f64>,
    pub index_pages_unique: Option<f64>,
    pub index_pages: Option<f64>,
    pub index_nodes: Option<f64>,
}

impl Averages {
    fn new(c: &Counts, n: u64, has: api::Counted) -> Averages {
        let d = n.max(1) as f64;
        let f = |v: u64| v as f64 / d;
        let pages = |v: u64| has.pages.then(|| f(v));
        let read = f(c.get(Counter::RecordsRead));
        let written = f(c.get(Counter::RecordsWritten));
        Averages {
            records_read: read,
            records_written: written,
            records_accessed: read + written,
            row_locks: f(c.get(Counter::RowLocks)),
            higher_locks: f(c.get(Counter::HigherLocks)),
            escalations: has.escalations.then(|| f(c.get(Counter::Escalations))),
            heap_pages_unique: pages(c.heap_pages_unique),
            heap_pages: pages(c.heap_pages),
            index_pages_unique: pages(c.index_pages_unique),
            index_pages: pages(c.index_pages),
            index_nodes: has.index_nodes.then(|| f(c.get(Counter::IndexNodes))),
        }
    }

    /// (label, value) in the order of the text table; the labels name the rows of the
    /// paper's table they stand beside (`papers/a-to-e.toml`).
    pub fn rows(&self) -> Vec<(&'static str, Option<f64>)> {
        vec![
            ("records read", Some(self.records_read)),
            ("records written", Some(self.records_written)),
            ("records accessed", Some(self.records_accessed)),
            ("row-level locks", Some(self.row_locks)),
            ("higher-level locks", Some(self.higher_locks)),
            ("escalations", self.escalations),
            ("heap pages (unique)", self.heap_pages_unique),
            ("index pages (unique)", self.index_pages_unique),
            ("heap pages", self.heap_pages),
            ("index pages", self.index_pages),
            ("index nodes", self.index_nodes),
        ]
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TxnStats {
    pub name: String,
    pub committed: u64,
    /// Averages per committed transaction.
    pub per_commit: Averages,
    /// Measured attempts that aborted (conflicts, retried, and user aborts): not in
    /// `per_commit`.
    pub aborted_attempts: u64,
    pub per_aborted_attempt: Option<Averages>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StatsReport {
    pub what: &'static str,
    /// The engine's counters that exist in its design.
    pub counted: api::Counted,
    pub per_txn: Vec<TxnStats>,
    /// Over every committed transaction of the mix (A-to-E's "average per xct").
    pub all: TxnStats,
    /// Each table as stored after the load (empty when the engine does not say).
    pub tables: Vec<api::TableSize>,
}

const WHAT: &str = "averages per committed transaction of the measured phase; aborted attempts are counted apart. Records: read = rows a get or scan returned, written = rows inserted, updated or deleted. Locks: granted record/key locks and page/table/database locks (intention locks included; the memory engine locks its write set at commit, the serial engine the database). Pages: requests to the buffer pool (total) and distinct page ids per transaction (unique). Index nodes: B+tree nodes per descent, hash buckets and chain entries.";

impl StatsReport {
    pub(crate) fn new(
        names: &[&str],
        sums: &[Sums],
        committed: &[u64],
        has: api::Counted,
        tables: Vec<api::TableSize>,
    ) -> StatsReport {
        let one = |name: &str, s: &Sums, n: u64| TxnStats {
            name: name.to_string(),
            committed: n,
            per_commit: Averages::new(&s.committed, n, has),
            aborted_attempts: s.aborted_attempts,
            per_aborted_attempt: (s.aborted_attempts > 0)
                .then(|| Averages::new(&s.aborted, s.aborted_attempts, has)),
        };
        let mut total = Sums::default();
        for s in sums {
            total.add(s);
        }
        StatsReport {
            what: WHAT,
            counted: has,
            per_txn: names
                .iter()
                .zip(sums)
                .zip(committed)
                .map(|((n, s), &c)| one(n, s, c))
                .collect(),
            all: one("all", &total, committed.iter().sum()),
            tables,
        }
    }

    /// The text table: a row per figure, a column per transaction type with commits,
    /// then the mix, then `extra` columns (a paper's), each (header, row label -> value).
    pub fn to_text(&self, extra: &[(String, Vec<(String, String)>)]) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "\nper-transaction statistics (--stats: averages per committed transaction, measured phase)"
        );
        let cols: Vec<&TxnStats> = self
            .per_txn
            .iter()
            .filter(|t| t.committed > 0)
            .chain(std::iter::once(&self.all))
            .collect();
        let w = cols
            .iter()
            .map(|t| t.name.len())
            .chain(extra.iter().map(|(h, _)| h.len()))
            .max()
            .unwrap_or(0)
            .max(9);
        let _ = write!(o, "  {:<22}", "");
        for t in &cols {
            let _ = write!(o, " {:>w$}", t.name);
        }
        for (h, _) in extra {
            let _ = write!(o, " {:>w$}", h);
        }
        let _ = writeln!(o);
        let _ = write!(o, "  {:<22}", "committed");
        for t in &cols {
            let _ = write!(o, " {:>w$}", t.committed);
        }
        let _ = writeln!(o);
        let rows: Vec<Vec<(&str, Option<f64>)>> =
            cols.iter().map(|t| t.per_commit.rows()).collect();
        for (i, (label, _)) in rows[0].iter().enumerate() {
            let _ = write!(o, "  {:<22}", label);
            for r in &rows {
                let v = r[i].1.map_or("-".to_string(), |v| format!("{v:.1}"));
                let _ = write!(o, " {:>w$}", v);
            }
            for (_, vals) in extra {
                let v = vals
                    .iter()
                    .find(|(l, _)| l == label)
                    .map_or("", |(_, v)| v.as_str());
                let _ = write!(o, " {:>w$}", v);
            }
            let _ = writeln!(o);
        }
        let aborted: Vec<String> = self
            .per_txn
            .iter()
            .filter(|t| t.aborted_attempts > 0)
            .map(|t| format!("{} {}", t.name, t.aborted_attempts))
            .collect();
        if !aborted.is_empty() {
            let _ = writeln!(
                o,
                "  aborted attempts, not in the averages (theirs are in the JSON): {}",
                aborted.join(", ")
            );
        }
        if !self.tables.is_empty() {
            let _ = writeln!(o, "\ndatabase after the load");
            let _ = writeln!(
                o,
                "  {:<14} {:>12} {:>11} {:>11} {:>11}",
                "table", "records", "heap pages", "index pages", "index nodes"
            );
            let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            let sum = |f: fn(&api::TableSize) -> Option<u64>| {
                self.tables
                    .iter()
                    .map(f)
                    .reduce(|a, b| Some(a? + b?))
                    .flatten()
            };
            let all = api::TableSize {
                name: "all".into(),
                records: self.tables.iter().map(|t| t.records).sum(),
                heap_pages: sum(|t| t.heap_pages),
                index_pages: sum(|t| t.index_pages),
                index_nodes: sum(|t| t.index_nodes),
            };
            for t in self.tables.iter().chain(std::iter::once(&all)) {
                let _ = writeln!(
                    o,
                    "  {:<14} {:>12} {:>11} {:>11} {:>11}",
                    t.name,
                    t.records,
                    opt(t.heap_pages),
                    opt(t.index_pages),
                    opt(t.index_nodes)
                );
            }
        }
        o
    }
}
