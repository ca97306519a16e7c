//! The typed specification of an `oltpscope run`/`simulate`/`profile`/`check` command
//! line that another part of oltpscope starts as a child (sweeps, reproductions, the
//! crash harness, `simulate`'s traced run), and its one encoder to arguments,
//! [`RunSpec::to_args`]. Owns the flag names ([`flag`]); nothing else writes them.
//!
//! `cli`'s round-trip test (`crates/cli/src/spec_roundtrip.rs`) encodes many specs,
//! parses them with the real clap parser and converts them back: a flag renamed in
//! `cli` fails that test instead of a sweep at run time.
//!
//! A field left `None` (or `false`) is not written: the child takes its own default.
//! Options a user gave in a sweep or run file stay as text ([`RunSpec::extra`]): the
//! child's parser checks them, as it checks a command line.
//!
//! Depends on nothing: `lab`, `crashtest` and `cli` all use it.

use std::path::PathBuf;

/// The flags of the child command lines, by the name `cli` declares them with.
pub mod flag {
    pub const ENGINE: &str = "--engine";
    pub const DB: &str = "--db";
    pub const LOG_DIR: &str = "--log-dir";
    pub const THREADS: &str = "--threads";
    pub const SEED: &str = "--seed";
    pub const LOG: &str = "--log";
    pub const BPOOL_SIZE: &str = "--bpool-size";
    pub const ESCALATION: &str = "--escalation";
    pub const CHECKPOINT_MS: &str = "--checkpoint-ms";
    pub const CHECKPOINT_LOG: &str = "--checkpoint-log";
    pub const PARTITIONS: &str = "--partitions";
    pub const ORDERED_INDEX: &str = "--ordered-index";
    pub const COROUTINES: &str = "--coroutines";
    pub const STEPS_TEAM: &str = "--steps-team";
    pub const STEPS_POINTS: &str = "--steps-points";
    pub const INTERLEAVE: &str = "--interleave";
    pub const INTERLEAVE_GROUP: &str = "--interleave-group";
    pub const INTERLEAVE_MIN_TABLE: &str = "--interleave-min-table";
    pub const NO_PIN: &str = "--no-pin";
    pub const DURATION: &str = "--duration";
    pub const TXNS: &str = "--txns";
    pub const WARMUP: &str = "--warmup";
    pub const NO_LOAD: &str = "--no-load";
    pub const RELOAD: &str = "--reload";
    pub const NO_CHECK: &str = "--no-check";
    pub const STATS: &str = "--stats";
    pub const TRACE_MEASURED: &str = "--trace-measured";
    pub const TRACE_CTX: &str = "--trace-ctx";
    pub const BTREE_LEVELS: &str = "--btree-levels";
    pub const ACKED_FILE: &str = "--acked-file";
    pub const REPORT_INTERVAL: &str = "--report-interval";
    pub const CPU: &str = "--cpu";
    pub const L1I: &str = "--l1i";
    pub const LLC: &str = "--llc";
    pub const SWEEP: &str = "--sweep";
    pub const WARMUP_TXNS: &str = "--warmup-txns";
    pub const UNTIL_SETTLED: &str = "--until-settled";
    pub const NO_3C: &str = "--no-3c";
    pub const JSON: &str = "--json";
    pub const PROGRESS_FILE: &str = "--progress-file";
    pub const OUT: &str = "--out";
    // The workloads'.
    pub const SIZE: &str = "--size";
    pub const KEYS: &str = "--keys";
    pub const COLUMNS: &str = "--columns";
    pub const INDEX: &str = "--index";
    pub const MODE: &str = "--mode";
    pub const DISTRIBUTION: &str = "--distribution";
    pub const ROWS: &str = "--rows";
    pub const THETA: &str = "--theta";
    pub const SCALE: &str = "--scale";
    pub const PAD: &str = "--pad";
    pub const AFFINITY: &str = "--affinity";
    pub const WAREHOUSES: &str = "--warehouses";
    pub const MIX: &str = "--mix";
    pub const TERMINAL_TIMES: &str = "--terminal-times";
    pub const CUSTOMERS: &str = "--customers";
    pub const TRADE_DAYS: &str = "--trade-days";
    pub const SCALE_FACTOR: &str = "--scale-factor";
    pub const QUERIES: &str = "--queries";
    pub const STREAMS: &str = "--streams";
    pub const NO_REFRESH: &str = "--no-refresh";
    pub const ANALYTIC_STREAMS: &str = "--analytic-streams";
    pub const ANALYTICS_ONLY: &str = "--analytics-only";
    pub const ANALYTICS: &str = "--analytics";
    pub const ALONE: &str = "--alone";
    pub const QUERY_THREADS: &str = "--query-threads";
    pub const ANALYTICS_PRIORITY: &str = "--analytics-priority";
}

/// An enum of an option's words: the type, its words, `as_str` and `parse`.
macro_rules! words {
    ($(#[$m:meta])* $T:ident { $($V:ident => $w:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $T {
            $($V),*
        }

        impl $T {
            pub const ALL: &'static [$T] = &[$($T::$V),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($T::$V => $w),*
                }
            }

            /// The value named `s`, or one line saying which names there are.
            pub fn parse(s: &str) -> Result<$T, String> {
                $T::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let names: Vec<&str> = $T::ALL.iter().map(|v| v.as_str()).collect();
                    format!("'{s}' is not one of {}", names.join(", "))
                })
            }
        }
    };
}

words!(
    /// The child's command.
    Command {
        Run => "run",
        Simulate => "simulate",
        Profile => "profile",
        Load => "load",
        Check => "check",
    }
);
words!(
    /// `--log`.
    LogMode { Off => "off", Async => "async", Sync => "sync" }
);
words!(
    /// `--ordered-index` (partitioned engine).
    OrderedIndex { Btree => "btree", Rbtree => "rbtree" }
);
words!(
    /// `--analytics-priority`: the analytical streams' CPU priority (CH-benCHmark's and
    /// TPC-E's analytical mix).
    AnalyticsPriority { Normal => "normal", Low => "low", Idle => "idle" }
);
words!(
    /// The micro-benchmark's `--mode`.
    MicroMode { Read => "read", Update => "update" }
);
words!(
    /// The micro-benchmark's `--columns`.
    Columns { Long => "long", String => "string" }
);
words!(
    /// The micro-benchmark's `--index`.
    MicroIndex { Btree => "btree", Hash => "hash" }
);
words!(
    /// The micro-benchmark's `--distribution`.
    Distribution { Uniform => "uniform", Zipf => "zipf" }
);

/// `simulate --warmup-txns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmupTxns {
    Auto,
    Txns(u64),
}

/// The micro-benchmark's options.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Micro {
    /// Bytes of data (written in bytes; `cli` reads any size).
    pub size: Option<u64>,
    pub keys: Option<u64>,
    pub columns: Option<Columns>,
    pub index: Option<MicroIndex>,
    pub mode: Option<MicroMode>,
    pub distribution: Option<Distribution>,
    pub rows: Option<u32>,
    pub theta: Option<f64>,
}

/// TPC-B's options.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tpcb {
    pub scale: Option<u64>,
    pub pad: bool,
    pub affinity: bool,
}

/// TPC-C's options. The mix is in the workload's own words (`payment=100`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tpcc {
    pub warehouses: Option<u32>,
    pub mix: Option<String>,
    pub affinity: bool,
    pub terminal_times: bool,
}

/// TPC-E's options, its analytical mix's included.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tpce {
    pub customers: Option<u64>,
    pub trade_days: Option<u32>,
    pub mix: Option<String>,
    /// `--analytics N`: analytical streams beside the transactions.
    pub analytics: Option<u32>,
    /// `--queries 1,3`: the analytical queries, in the command line's words.
    pub queries: Option<String>,
    pub alone: bool,
    pub analytics_priority: Option<AnalyticsPriority>,
}

/// TPC-H's options: its data, and its run's queries and streams.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tpch {
    pub scale_factor: Option<f64>,
    /// `--queries 1,6,3`, in the command line's words.
    pub queries: Option<String>,
    /// `--streams S` or `--streams min`.
    pub streams: Option<String>,
    pub no_refresh: bool,
    /// `--query-threads N`: threads per query's scans.
    pub query_threads: Option<u32>,
}

/// CH-benCHmark's options: TPC-C's and the analytical side's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chbench {
    pub tpcc: Tpcc,
    pub analytic_streams: Option<u32>,
    pub analytics_only: bool,
    /// `--queries 1,6`, in the command line's words.
    pub queries: Option<String>,
    pub alone: bool,
    /// `--query-threads N`: threads per analytical query's scans.
    pub query_threads: Option<u32>,
    pub analytics_priority: Option<AnalyticsPriority>,
}

/// A workload and the options that shape its database and transactions.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    Micro(Micro),
    Tpcb(Tpcb),
    Tpcc(Tpcc),
    Tpce(Tpce),
    Tpch(Tpch),
    Chbench(Chbench),
}

impl Workload {
    /// The workloads' names, as the command line spells them.
    pub const NAMES: [&'static str; 6] = ["micro", "tpcb", "tpcc", "tpce", "tpch", "chbench"];

    /// The workload `name` with no option given.
    pub fn named(name: &str) -> Result<Workload, String> {
        match name {
            "micro" => Ok(Workload::Micro(Micro::default())),
            "tpcb" => Ok(Workload::Tpcb(Tpcb::default())),
            "tpcc" => Ok(Workload::Tpcc(Tpcc::default())),
            "tpce" => Ok(Workload::Tpce(Tpce::default())),
            "tpch" => Ok(Workload::Tpch(Tpch::default())),
            "chbench" => Ok(Workload::Chbench(Chbench::default())),
            _ => Err(format!(
                "unknown workload '{name}' (micro, tpcb, tpcc, tpce, tpch or chbench)"
            )),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Workload::Micro(_) => "micro",
            Workload::Tpcb(_) => "tpcb",
            Workload::Tpcc(_) => "tpcc",
            Workload::Tpce(_) => "tpce",
            Workload::Tpch(_) => "tpch",
            Workload::Chbench(_) => "chbench",
        }
    }

    fn push_args(&self, a: &mut Args) {
        match self {
            Workload::Micro(m) => {
                a.opt(flag::KEYS, m.keys);
                a.opt(flag::SIZE, m.size);
                a.opt(flag::COLUMNS, m.columns.map(Columns::as_str));
                a.opt(flag::INDEX, m.index.map(MicroIndex::as_str));
                a.opt(flag::MODE, m.mode.map(MicroMode::as_str));
                a.opt(flag::DISTRIBUTION, m.distribution.map(Distribution::as_str));
                a.opt(flag::ROWS, m.rows);
                a.opt(flag::THETA, m.theta);
            }
            Workload::Tpcb(b) => {
                a.opt(flag::SCALE, b.scale);
                a.switch(flag::PAD, b.pad);
                a.switch(flag::AFFINITY, b.affinity);
            }
            Workload::Tpcc(c) => c.push_args(a),
            Workload::Tpce(e) => {
                a.opt(flag::CUSTOMERS, e.customers);
                a.opt(flag::TRADE_DAYS, e.trade_days);
                a.opt(flag::MIX, e.mix.as_deref());
                a.opt(flag::ANALYTICS, e.analytics);
                a.opt(flag::QUERIES, e.queries.as_deref());
                a.switch(flag::ALONE, e.alone);
                a.opt(
                    flag::ANALYTICS_PRIORITY,
                    e.analytics_priority.map(AnalyticsPriority::as_str),
                );
            }
            Workload::Tpch(h) => {
                a.opt(flag::SCALE_FACTOR, h.scale_factor);
                a.opt(flag::QUERIES, h.queries.as_deref());
                a.opt(flag::STREAMS, h.streams.as_deref());
                a.switch(flag::NO_REFRESH, h.no_refresh);
                a.opt(flag::QUERY_THREADS, h.query_threads);
            }
            Workload::Chbench(c) => {
                c.tpcc.push_args(a);
                a.opt(flag::ANALYTIC_STREAMS, c.analytic_streams);
                a.switch(flag::ANALYTICS_ONLY, c.analytics_only);
                a.opt(flag::QUERIES, c.queries.as_deref());
                a.switch(flag::ALONE, c.alone);
                a.opt(flag::QUERY_THREADS, c.query_threads);
                a.opt(
                    flag::ANALYTICS_PRIORITY,
                    c.analytics_priority.map(AnalyticsPriority::as_str),
                );
            }
        }
    }
}

impl Tpcc {
    fn push_args(&self, a: &mut Args) {
        a.opt(flag::WAREHOUSES, self.warehouses);
        a.opt(flag::MIX, self.mix.as_deref());
        a.switch(flag::AFFINITY, self.affinity);
        a.switch(flag::TERMINAL_TIMES, self.terminal_times);
    }
}

/// The options of the child's command besides the workload's. Which command takes
/// which is `cli`'s to say: the round-trip test checks each command with its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// The engine, by its registry name (`cli/src/engines.rs`).
    pub engine: Option<String>,
    pub db: Option<PathBuf>,
    pub log_dir: Option<PathBuf>,
    pub threads: Option<u32>,
    pub seed: Option<u64>,
    pub log: Option<LogMode>,
    /// Bytes (disk engine).
    pub bpool_size: Option<u64>,
    pub escalation: Option<u32>,
    pub checkpoint_ms: Option<u64>,
    /// Bytes of log between checkpoints (memory, mvcc, partitioned engines).
    pub checkpoint_log: Option<u64>,
    pub partitions: Option<u64>,
    pub ordered_index: Option<OrderedIndex>,
    pub coroutines: Option<u32>,
    /// STEPS team sizes: `run` takes one, `simulate` a list.
    pub steps_team: Vec<u32>,
    pub steps_points: Option<PathBuf>,
    /// `--interleave N` (memory engine): N above 1, else not written.
    pub interleave: Option<u32>,
    pub interleave_group: Option<u32>,
    /// Bytes.
    pub interleave_min_table: Option<u64>,
    pub no_pin: bool,
    /// Seconds.
    pub duration: Option<f64>,
    pub txns: Option<u64>,
    /// Seconds.
    pub warmup: Option<f64>,
    pub no_load: bool,
    pub reload: bool,
    pub no_check: bool,
    pub stats: bool,
    pub trace_measured: bool,
    /// Mark every candidate CTX point in the trace (`steps place`).
    pub trace_ctx: bool,
    /// `simulate`: the B+tree by level; `run` (the traced child): mark each node a
    /// descent reaches.
    pub btree_levels: bool,
    pub acked_file: Option<PathBuf>,
    /// Seconds.
    pub report_interval: Option<f64>,
    /// The simulator's (`simulate`): the CPU preset, cache levels, sweeps, warm-up.
    pub cpu: Option<String>,
    pub l1i: Option<String>,
    pub llc: Option<String>,
    pub sweep: Vec<String>,
    pub warmup_txns: Option<WarmupTxns>,
    /// `simulate --until-settled PCT`: stop measuring once every figure's 95% interval
    /// is within ±PCT% (`--txns` the cap).
    pub until_settled: Option<f64>,
    pub no_3c: bool,
    pub json: Option<PathBuf>,
    pub progress_file: Option<PathBuf>,
    pub out: Option<PathBuf>,
}

impl Options {
    fn push_args(&self, a: &mut Args) {
        a.opt(flag::ENGINE, self.engine.as_deref());
        a.path(flag::DB, &self.db);
        a.path(flag::LOG_DIR, &self.log_dir);
        a.opt(flag::THREADS, self.threads);
        a.opt(flag::SEED, self.seed);
        a.opt(flag::LOG, self.log.map(LogMode::as_str));
        a.opt(flag::BPOOL_SIZE, self.bpool_size);
        a.opt(flag::ESCALATION, self.escalation);
        a.opt(flag::CHECKPOINT_MS, self.checkpoint_ms);
        a.opt(flag::CHECKPOINT_LOG, self.checkpoint_log);
        a.opt(flag::PARTITIONS, self.partitions);
        a.opt(
            flag::ORDERED_INDEX,
            self.ordered_index.map(OrderedIndex::as_str),
        );
        a.opt(flag::COROUTINES, self.coroutines);
        if !self.steps_team.is_empty() {
            let teams: Vec<String> = self.steps_team.iter().map(u32::to_string).collect();
            a.opt(flag::STEPS_TEAM, Some(teams.join(",")));
        }
        a.path(flag::STEPS_POINTS, &self.steps_points);
        a.opt(flag::INTERLEAVE, self.interleave);
        a.opt(flag::INTERLEAVE_GROUP, self.interleave_group);
        a.opt(flag::INTERLEAVE_MIN_TABLE, self.interleave_min_table);
        a.switch(flag::NO_PIN, self.no_pin);
        a.opt(flag::DURATION, self.duration);
        a.opt(flag::TXNS, self.txns);
        a.opt(flag::WARMUP, self.warmup);
        a.switch(flag::NO_LOAD, self.no_load);
        a.switch(flag::RELOAD, self.reload);
        a.switch(flag::NO_CHECK, self.no_check);
        a.switch(flag::STATS, self.stats);
        a.switch(flag::TRACE_MEASURED, self.trace_measured);
        a.switch(flag::TRACE_CTX, self.trace_ctx);
        a.switch(flag::BTREE_LEVELS, self.btree_levels);
        a.path(flag::ACKED_FILE, &self.acked_file);
        a.opt(flag::REPORT_INTERVAL, self.report_interval);
        a.opt(flag::CPU, self.cpu.as_deref());
        a.opt(flag::L1I, self.l1i.as_deref());
        a.opt(flag::LLC, self.llc.as_deref());
        for s in &self.sweep {
            a.opt(flag::SWEEP, Some(s));
        }
        match self.warmup_txns {
            Some(WarmupTxns::Auto) => a.opt(flag::WARMUP_TXNS, Some("auto")),
            Some(WarmupTxns::Txns(n)) => a.opt(flag::WARMUP_TXNS, Some(n)),
            None => {}
        }
        a.opt(flag::UNTIL_SETTLED, self.until_settled);
        a.switch(flag::NO_3C, self.no_3c);
        a.path(flag::JSON, &self.json);
        a.path(flag::PROGRESS_FILE, &self.progress_file);
        a.path(flag::OUT, &self.out);
    }
}

/// A child command line: command, workload, options.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    pub command: Command,
    pub workload: Workload,
    pub options: Options,
    /// Options as a user wrote them (a sweep's or run file's `args`), put right after
    /// the workload: not interpreted here.
    pub extra: Vec<String>,
}

impl RunSpec {
    /// `command workload` with no option.
    pub fn new(command: Command, workload: Workload) -> RunSpec {
        RunSpec {
            command,
            workload,
            options: Options::default(),
            extra: Vec::new(),
        }
    }

    /// The child's arguments (after the executable).
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            self.command.as_str().to_string(),
            self.workload.name().to_string(),
        ];
        v.extend(self.option_args());
        v
    }

    /// The arguments after the command and the workload's name: the user's, the
    /// workload's options, the others. (A sweep keeps these as its runs' options.)
    pub fn option_args(&self) -> Vec<String> {
        let mut a = Args(self.extra.clone());
        self.workload.push_args(&mut a);
        self.options.push_args(&mut a);
        a.0
    }
}

/// Arguments being written.
struct Args(Vec<String>);

impl Args {
    fn opt(&mut self, flag: &str, v: Option<impl ToString>) {
        if let Some(v) = v {
            self.0.extend([flag.to_string(), v.to_string()]);
        }
    }

    fn path(&mut self, flag: &str, p: &Option<PathBuf>) {
        self.opt(flag, p.as_ref().map(|p| p.display()));
    }

    fn switch(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.to_string());
        }
    }
}

/// The value `args` give `flag` (`--flag V` or `--flag=V`; the last one if several):
/// for the options a user gave as text.
pub fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    values_of(args, flag).pop()
}

/// Every value `args` give `flag`, in order.
pub fn values_of<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
    let mut v = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a == flag {
            v.extend(args.get(i + 1).map(String::as_str));
        } else if let Some(x) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            v.push(x);
        }
    }
    v
}

/// Do `args` give `flag` (alone or as `--flag=V`)?
pub fn gives(args: &[String], flag: &str) -> bool {
    args.iter()
        .any(|a| a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_fields_write_nothing_and_set_ones_their_flag() {
        let mut s = RunSpec::new(Command::Run, Workload::named("tpcb").unwrap());
        assert_eq!(s.to_args(), ["run", "tpcb"]);
        s.extra = vec!["--txns".into(), "200".into()];
        s.options.threads = Some(2);
        s.options.duration = Some(0.3);
        s.options.no_check = true;
        s.options.bpool_size = Some(64 << 20);
        s.options.steps_team = vec![1, 4];
        if let Workload::Tpcb(b) = &mut s.workload {
            b.scale = Some(3);
        }
        assert_eq!(
            s.to_args().join(" "),
            "run tpcb --txns 200 --scale 3 --threads 2 --bpool-size 67108864 --steps-team 1,4 --duration 0.3 --no-check"
        );
        s.options.warmup_txns = Some(WarmupTxns::Auto);
        assert!(s
            .to_args()
            .ends_with(&["--warmup-txns".into(), "auto".into()]));
        s.options.until_settled = Some(2.5);
        assert!(s
            .to_args()
            .ends_with(&["--until-settled".into(), "2.5".into()]));
    }

    #[test]
    fn words_parse_back_and_refuse_others_in_one_line() {
        for m in LogMode::ALL {
            assert_eq!(LogMode::parse(m.as_str()), Ok(*m));
        }
        assert_eq!(
            MicroMode::parse("write").unwrap_err(),
            "'write' is not one of read, update"
        );
        assert!(Workload::named("tpcd").is_err());
    }

    #[test]
    fn values_are_found_in_both_spellings() {
        let a: Vec<String> = ["--db", "/d", "--log-dir=/l", "--dbx", "y", "--db=/e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(values_of(&a, flag::DB), ["/d", "/e"]);
        assert_eq!(value_of(&a, flag::LOG_DIR), Some("/l"));
        assert!(gives(&a, flag::DB) && !gives(&a, flag::CPU));
        assert!(!gives(&["--dbx".to_string()], flag::DB));
    }
}
