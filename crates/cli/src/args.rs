//! Command-line arguments.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use workloads::htap::Priority;

#[derive(Parser, Debug)]
#[command(
    name = "oltpscope",
    version,
    about = "An OLTP storage engine and a laboratory around it: run a micro-benchmark, TPC-B, TPC-C, TPC-E, TPC-H and CH-benCHmark (TPC-C beside analytical queries) on several engine designs and see where the cycles go."
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Each command has its own options: what it does not use, it does not offer. The
/// workload is an optional subcommand so that a missing one gets one line, not the help.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Load a workload and run it (throughput, aborts, latency, consistency checks).
    Run {
        #[command(subcommand)]
        workload: Option<RunWorkload<RunOpts>>,
    },
    /// Load a workload's database into --db DIR and stop (then `run --no-load` on it).
    Load {
        #[command(subcommand)]
        workload: Option<DataWorkload<LoadOpts>>,
    },
    /// Run a workload under the tracer and simulate its caches: MPKI, stall cycles and
    /// 3C per level, misses by database operation, by storage-manager component (query
    /// operators included: q-scan, hash-join, hash-agg, sort) and by transaction type
    /// (a column per TPC-H query). `simulate tpch` traces the power test's chosen
    /// queries once each, with no warm-up unless --warmup-txns N; `simulate chbench`
    /// TPC-C beside the analytical streams, `simulate tpce --analytics N` TPC-E beside
    /// its analytical streams, until --txns (transactions and queries) are measured.
    Simulate {
        #[command(subcommand)]
        workload: Option<RunWorkload<SimOpts>>,
    },
    /// Run a workload natively under a sampling profiler (perf_event cpu-clock with call
    /// chains): the run's report, then the share of time by storage-manager component,
    /// database operation and transaction type, and the waits by kind.
    Profile {
        #[command(subcommand)]
        workload: Option<RunWorkload<ProfOpts>>,
    },
    /// STEPS tools: `steps place` chooses the context-switch points (autoSTEPS).
    Steps {
        #[command(subcommand)]
        cmd: StepsCmd,
    },
    /// Run a workload's consistency check on an existing database directory.
    Check {
        #[command(subcommand)]
        workload: Option<DataWorkload<CheckOpts>>,
    },
    /// Remove a database directory: only the files its engine recognises as its own; a
    /// directory holding anything else is refused and left as it is.
    Drop(DropArgs),
    /// Put two reports side by side: every figure of A and B with the ratio B/A.
    Compare(CompareArgs),
    /// Run a workload over the product of varied settings, each point repeated, into a
    /// directory (resumed if killed): summary with median, spread, knees, 90/95% points.
    Sweep(SweepArgs),
    /// Draw a sweep directory or a results directory: SVG figures and one HTML page.
    Plot(PlotArgs),
    /// Join sweep directories (e.g. a SLURM campaign's per-point directories) into one
    /// campaign directory with its summary recomputed.
    Merge(MergeArgs),
    /// Run a paper's key experiments at this machine's scale and set them beside the
    /// paper's tables: wonderland, revisited, sensitivity, a-to-e, steps.
    Reproduce(ReproduceArgs),
    /// Kill TPC-B or TPC-C runs at random moments and check that recovery keeps every
    /// acknowledged commit and nothing else (soak test of a durable engine).
    Crashtest(CrashArgs),
}

/// `oltpscope steps ...`.
#[derive(Subcommand, Debug)]
pub enum StepsCmd {
    /// autoSTEPS: trace a workload run without STEPS, replay each operation's
    /// instructions on the modelled L1-I cache and choose the candidate CTX points where
    /// a team should switch (the STEPS paper's Section 5.2); print them, with the L1-I
    /// misses a following team member takes under each choice, and write them to a file
    /// for `--steps-points`.
    Place {
        #[command(subcommand)]
        workload: Option<RunWorkload<PlaceOpts>>,
    },
}

/// `oltpscope steps place`: the traced run's options (as `simulate`'s) and its own.
#[derive(Args, Debug, Clone)]
pub struct PlaceOpts {
    #[command(flatten)]
    pub sim: SimOpts,
    /// The knee: W,H = STEPS misses at most W instructions apart, H of them in a row,
    /// place a CTX point at the knee's start (the paper's Figure 15 uses 200,4).
    #[arg(long, default_value = "200,4", value_parser = parse_knee)]
    pub knee: (u64, u32),
    /// Write the chosen points here (TOML; `run`/`simulate --steps-points` read it).
    #[arg(long, default_value = "steps-points.toml")]
    pub points: PathBuf,
}

impl AsRef<SimOpts> for PlaceOpts {
    fn as_ref(&self) -> &SimOpts {
        &self.sim
    }
}

impl AsRef<SimOpts> for SimOpts {
    fn as_ref(&self) -> &SimOpts {
        self
    }
}

fn parse_knee(s: &str) -> Result<(u64, u32), String> {
    let bad = || format!("'{s}' is not W,H (two positive integers, e.g. 200,4)");
    let (w, h) = s.split_once(',').ok_or_else(bad)?;
    let w: u64 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if w == 0 || h == 0 || h > 1_000_000 {
        return Err(bad());
    }
    Ok((w, h))
}

/// A workload with the options that shape its database and its transactions.
#[derive(Subcommand, Debug)]
pub enum RunWorkload<C: Args> {
    /// The micro-benchmark: one (key, value) table, N random rows read or updated per txn.
    Micro(MicroRun<C>),
    /// TPC-B: the AccountUpdate transaction over Branch, Teller, Account, History.
    Tpcb(TpcbRun<C>),
    /// TPC-C: the five transactions over nine tables, with consistency conditions 1-12.
    Tpcc(TpccRun<C>),
    /// TPC-E: the twelve transactions over 33 tables, with the market (MEE) in the driver;
    /// with --analytics N the resource-sensitivity paper's hybrid mix: N threads beside
    /// them each running four analytical queries of ours (A1-A4) in a loop, TPC-E's
    /// txn/s and tpsE beside the queries per hour, each query's times and staleness.
    Tpce(TpceRun<C>),
    /// TPC-H: the performance test: the power test (RF1, the 22 queries in stream 0's
    /// order, RF2, each timed; Power@Size), then with --streams S the throughput test (S
    /// query streams beside a refresh stream; Throughput@Size) and QphH@Size.
    Tpch(TpchRun<C>),
    /// CH-benCHmark (HTAP): TPC-C's mix on --threads workers beside
    /// --analytic-streams threads each running the analytical queries in a loop
    /// (implemented: Q1, Q4, Q5, Q6, Q10, Q11, Q12, Q13, Q14, Q15, Q17, Q19; the others are missing); TPC-C's txn/s and
    /// the queries per hour side by side, each query's times and staleness.
    Chbench(ChbenchRun<C>),
}

impl<C: Args> RunWorkload<C> {
    /// The command's options, whatever the workload.
    pub fn common(&self) -> &C {
        match self {
            RunWorkload::Micro(a) => &a.common,
            RunWorkload::Tpcb(a) => &a.common,
            RunWorkload::Tpcc(a) => &a.common,
            RunWorkload::Tpce(a) => &a.common,
            RunWorkload::Tpch(a) => &a.common,
            RunWorkload::Chbench(a) => &a.common,
        }
    }
}

/// A workload with the options that shape its database only (load, check).
#[derive(Subcommand, Debug)]
pub enum DataWorkload<C: Args> {
    /// The micro-benchmark: one (key, value) table.
    Micro(WithData<C, MicroData>),
    /// TPC-B: Branch, Teller, Account, History.
    Tpcb(WithData<C, TpcbData>),
    /// TPC-C: nine tables, consistency conditions 1-12.
    Tpcc(WithData<C, TpccData>),
    /// TPC-E: 33 tables, broker, holding, trade-state and cash checks.
    Tpce(WithData<C, TpceData>),
    /// TPC-H: eight tables at a scale factor, cardinality and invariant checks.
    Tpch(WithData<C, TpchData>),
    /// CH-benCHmark: TPC-C's nine tables and SUPPLIER, NATION, REGION; TPC-C's
    /// consistency conditions and the added tables' cardinalities.
    Chbench(WithData<C, TpccData>),
}

#[derive(Args, Debug)]
pub struct MicroRun<C: Args> {
    #[command(flatten)]
    pub common: C,
    #[command(flatten)]
    pub data: MicroData,
    #[command(flatten)]
    pub txn: MicroTxn,
}

#[derive(Args, Debug)]
pub struct TpcbRun<C: Args> {
    #[command(flatten)]
    pub common: C,
    #[command(flatten)]
    pub data: TpcbData,
    #[command(flatten)]
    pub txn: TpcbTxn,
}

#[derive(Args, Debug)]
pub struct TpccRun<C: Args> {
    #[command(flatten)]
    pub common: C,
    #[command(flatten)]
    pub data: TpccData,
    #[command(flatten)]
    pub txn: TpccTxn,
}

#[derive(Args, Debug)]
pub struct TpceRun<C: Args> {
    #[command(flatten)]
    pub common: C,
    #[command(flatten)]
    pub data: TpceData,
    #[command(flatten)]
    pub txn: TpceTxn,
}

#[derive(Args, Debug)]
pub struct TpchRun<C: Args> {
    #[command(flatten)]
    pub common: C,
    #[command(flatten)]
    pub data: TpchData,
    #[command(flatten)]
    pub txn: TpchTxn,
}

#[derive(Args, Debug)]
pub struct ChbenchRun<C: Args> {
    #[command(flatten)]
    pub common: C,
    #[command(flatten)]
    pub data: TpccData,
    #[command(flatten)]
    pub txn: TpccTxn,
    #[command(flatten)]
    pub ch: ChbenchTxn,
}

#[derive(Args, Debug)]
pub struct WithData<C: Args, D: Args> {
    #[command(flatten)]
    pub common: C,
    #[command(flatten)]
    pub data: D,
}

/// `--engine`'s values: the registry's (`engines.rs`).
pub use crate::engines::EngineName;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogArg {
    Off,
    Async,
    Sync,
}

impl SimOpts {
    /// The traced run's logging: `--log`, else async where the engine has a log.
    pub fn log(&self) -> LogArg {
        self.log.unwrap_or(match self.engine {
            EngineName::Serial
            | EngineName::Mvcc
            | EngineName::Partitioned
            | EngineName::Sqlite
            | EngineName::Postgres => LogArg::Off,
            EngineName::Disk | EngineName::Memory => LogArg::Async,
        })
    }

    /// Whether the traced run's threads run several transactions each, as coroutines
    /// (`--coroutines`, `--steps-team`, `--interleave`).
    pub fn runs_coroutines(&self) -> bool {
        self.coroutines.is_some_and(|n| n > 1) || !self.steps_team.is_empty() || self.interleave > 1
    }
}

/// Where a database lives and which engine opens it.
#[derive(Args, Debug, Clone, Default)]
pub struct DbArgs {
    /// Engine design (default: the engine that made the database in --db, else memory).
    #[arg(long, value_enum)]
    pub engine: Option<EngineName>,
    /// Database directory (disk: its pages and log; memory: its log, which is its
    /// database). Default: a new temporary directory, removed at the end.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Separate directory for the disk engine's log (memory engine: same as --db).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    #[command(flatten)]
    pub sqlite: SqliteTuning,
    #[command(flatten)]
    pub postgres: PostgresTuning,
}

/// Settings of the PostgreSQL engine (refused on the others).
#[derive(Args, Debug, Clone, Default)]
pub struct PostgresTuning {
    /// Transaction isolation (postgres engine): serializable (default),
    /// repeatable-read (snapshot isolation: write skew possible) or read-committed
    /// (PostgreSQL's and pgbench's default; every update's read locks its row).
    #[arg(long, value_enum)]
    pub isolation: Option<IsolationArg>,
    /// An existing PostgreSQL server (postgres engine; a libpq connection string or
    /// URL). Default: a private server started for the run and removed at its end.
    #[arg(long)]
    pub pg_url: Option<String>,
    /// PostgreSQL's synchronous_commit for the workers (postgres engine): on (default:
    /// a commit waits for its WAL flush) or off (it returns first, like the built-in
    /// engines' asynchronous log).
    #[arg(long, value_enum)]
    pub pg_sync: Option<OnOff>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl PostgresTuning {
    /// The first PostgreSQL-only option given, by its flag.
    pub fn first_given(&self) -> Option<&'static str> {
        if self.isolation.is_some() {
            Some("--isolation")
        } else if self.pg_url.is_some() {
            Some("--pg-url")
        } else if self.pg_sync.is_some() {
            Some("--pg-sync")
        } else {
            None
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsolationArg {
    Serializable,
    RepeatableRead,
    ReadCommitted,
}

/// Settings of the SQLite engine (refused on the others).
#[derive(Args, Debug, Clone, Default)]
pub struct SqliteTuning {
    /// SQLite's PRAGMA synchronous (sqlite engine): off, normal (default: in WAL mode,
    /// fsync at checkpoints only) or full (fsync at every commit).
    #[arg(long, value_enum)]
    pub sqlite_sync: Option<SqliteSyncArg>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqliteSyncArg {
    Off,
    Normal,
    Full,
}

/// Settings of the disk engine (refused on the others).
#[derive(Args, Debug, Clone, Default)]
pub struct DiskTuning {
    /// Buffer-pool size, e.g. 64MB (disk engine; default: large enough for the data).
    #[arg(long, value_parser = parse_size)]
    pub bpool_size: Option<u64>,
    /// Record locks per table before escalation to a table lock (disk engine).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub escalation: Option<u32>,
    /// Checkpoint interval in milliseconds, 0 = none (disk engine).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_CHECKPOINT_MS))]
    pub checkpoint_ms: Option<u64>,
}

impl DiskTuning {
    /// The first disk-only option given, by its flag.
    pub fn first_given(&self) -> Option<&'static str> {
        if self.bpool_size.is_some() {
            Some("--bpool-size")
        } else if self.escalation.is_some() {
            Some("--escalation")
        } else if self.checkpoint_ms.is_some() {
            Some("--checkpoint-ms")
        } else {
            None
        }
    }
}

/// Settings of the memory engine (refused on the others).
#[derive(Args, Debug, Clone, Default)]
pub struct MemoryTuning {
    /// Record and index memory to fault in before the load, e.g. 4GB (memory engine;
    /// default none): a database that grows during the run then takes pages already
    /// mapped instead of paying each new page's fault and zeroing while it is measured.
    #[arg(long, value_parser = parse_size)]
    pub mem_reserve: Option<u64>,
    /// With logging on, take a checkpoint (memory.ckpt, mvcc.ckpt; the partitioned
    /// engine: a new partitioned.snap) when the log has grown by more than this since the
    /// last one, e.g. 256MB (memory, mvcc and partitioned engines; default: the larger of
    /// 64 MiB and the last checkpoint's size, so recovery reads at most about twice the
    /// database; 0: as often as the log grows; 1TB: in effect never)
    #[arg(long, value_parser = cachesim::config::parse_size)]
    pub checkpoint_log: Option<u64>,
    /// Ignore the workloads' prefetch hints (memory engine; TPC-C's New-Order, Payment,
    /// Delivery and Stock-Level name the rows they will read before reading them, so
    /// their misses overlap inside the transaction): to see what the hints hide, alone
    /// or against --interleave, which overlaps misses across transactions instead.
    #[arg(long)]
    pub no_prefetch_hints: bool,
    /// With --interleave: lookups in a table expected to take less than this (its
    /// records and index entries; memory engine; default 4MB) do not switch, as such a
    /// table stays in cache and a switch there would only cost; 0: every lookup that
    /// prefetched a line switches.
    #[arg(long, value_parser = cachesim::config::parse_size)]
    pub interleave_min_table: Option<u64>,
}

/// Settings of the partitioned engine (refused on the others).
#[derive(Args, Debug, Clone, Default)]
pub struct PartitionedTuning {
    /// Number of partitions (partitioned engine; default: one per worker thread).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=engine_partitioned::MAX_PARTITIONS as u64))]
    pub partitions: Option<u64>,
    /// Structure of the ordered indexes (partitioned engine): btree (default) or rbtree,
    /// a red-black tree as in the "revisited" paper's DBMS N.
    #[arg(long, value_enum)]
    pub ordered_index: Option<OrderedIndexArg>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderedIndexArg {
    Btree,
    Rbtree,
}

/// The longest checkpoint interval accepted: a day.
pub const MAX_CHECKPOINT_MS: u64 = 24 * 3600 * 1000;

/// `oltpscope run`.
#[derive(Args, Debug, Clone)]
pub struct RunOpts {
    #[command(flatten)]
    pub db: DbArgs,
    /// Worker threads (each runs transactions back to back).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Measured interval in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = seconds)]
    pub duration: f64,
    /// Measure this many transactions instead of a duration (after --warmup seconds).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_TXNS), conflicts_with = "duration")]
    pub txns: Option<u64>,
    /// Warm-up before the measured interval, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = seconds_or_zero)]
    pub warmup: f64,
    /// Seed of every random generator (the run prints it; the same seed repeats the inputs).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the full report as JSON to this file (`-`: standard output, the text report
    /// then goes to standard error).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Open loop: transactions arrive at this total rate (per second) instead of back to
    /// back; latency then counts from each one's intended start.
    #[arg(long, value_parser = rate)]
    pub rate: Option<f64>,
    /// Gaps between open-loop arrivals: regular (equal) or poisson (exponential).
    #[arg(long, value_enum, default_value = "regular", requires = "rate")]
    pub arrivals: ArrivalsArg,
    /// Write the per-second lines to this file (on a terminal they go to standard error).
    #[arg(long)]
    pub progress_file: Option<PathBuf>,
    /// Print a plain progress line every SECONDS to standard error (load progress,
    /// throughput over the interval) instead of the terminal's live display; default: 10
    /// when standard error is not a terminal; 0: no progress lines.
    #[arg(long, value_name = "SECONDS", value_parser = seconds_or_zero)]
    pub report_interval: Option<f64>,
    #[command(flatten)]
    pub file: RunFileArg,
    /// Write a results directory here (a new or empty directory): report.json,
    /// timeseries.csv, latency/<txn>.hdr, manifest.json (see docs/results.md).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Logging: off, async (group commit, commit does not wait) or sync (commit waits).
    /// Default: off, except on an in-memory engine's database kept in --db or
    /// --log-dir (memory, mvcc, partitioned), which keeps logging as it was loaded
    /// (async).
    #[arg(long, value_enum)]
    pub log: Option<LogArg>,
    /// Run on the data already in --db instead of loading.
    #[arg(long)]
    pub no_load: bool,
    /// Opening an existing database, read its pages into the buffer pool before the
    /// first transaction, in page order, up to the pool's size (disk engine; PostgreSQL's
    /// pg_prewarm).
    #[arg(long)]
    pub prewarm: bool,
    /// Discard the database that --db holds, if this engine made it, and load anew: the
    /// only way an existing database is ever replaced.
    #[arg(long, conflicts_with = "no_load")]
    pub reload: bool,
    #[command(flatten)]
    pub disk: DiskTuning,
    #[command(flatten)]
    pub partitioned: PartitionedTuning,
    #[command(flatten)]
    pub memory: MemoryTuning,
    /// Resident memory the run may use, e.g. 1.5GB (any engine; default: the cgroup's
    /// limit or the machine's available memory). A run reaching 90% of the smallest of
    /// these stops with its report and exit code 2; one whose growth after the warm-up
    /// will not fit its duration is warned about.
    #[arg(long, value_parser = parse_size)]
    pub mem_limit: Option<u64>,
    /// Do not pin worker threads to cores.
    #[arg(long)]
    pub no_pin: bool,
    /// Skip the consistency check after the run.
    #[arg(long)]
    pub no_check: bool,
    /// Turn the tracer on for the measured phase (set by `oltpscope simulate`).
    #[arg(long, hide = true)]
    pub trace_measured: bool,
    /// Append a line per acknowledged commit to this file (crash testing).
    #[arg(long, hide = true)]
    pub acked_file: Option<PathBuf>,
    /// Transactions each worker thread runs at once, as coroutines that switch whenever
    /// one would wait (lock, latch, log flush, page I/O); 1 = plain threads (default 1,
    /// or the --steps-team size).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub coroutines: Option<u32>,
    /// STEPS: a thread's coroutines about to run the same database operation (on the
    /// same table) form teams of at most N, which pass the thread to one another at
    /// context-switch points inside the engine to share the L1-I cache. Needs
    /// --coroutines >= N (implied when not given).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub steps_team: Option<u32>,
    /// STEPS: switch only at these candidate CTX points (a file `oltpscope steps place`
    /// wrote); without it every candidate point switches.
    #[arg(long, requires = "steps_team")]
    pub steps_points: Option<PathBuf>,
    /// After the measured phase, one more per team size given, on the same database,
    /// each traced in a window of its own (set by `oltpscope simulate --steps-team 1,8`:
    /// one load serves every team size); --json then holds `{"phases": [report...]}`.
    #[arg(long, hide = true, value_delimiter = ',', requires = "steps_team", requires = "trace_measured", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub then_steps_team: Vec<u32>,
    /// Mark every candidate CTX point in the trace (for `steps place`).
    #[arg(long, hide = true)]
    pub trace_ctx: bool,
    /// Mark each node a B+tree descent reaches in the trace (for `simulate
    /// --btree-levels`).
    #[arg(long, hide = true)]
    pub btree_levels: bool,
    /// Memory engine: transactions each worker thread runs at once, as coroutines that
    /// also switch at every index probe that prefetched a line it will need (hash bucket,
    /// B+tree node, record), so memory stalls overlap; 1 = plain threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024), conflicts_with_all = ["coroutines", "steps_team"])]
    pub interleave: u32,
    /// With --interleave N: hold back the prefetches of this many probe points (of as
    /// many transactions) and issue them together, back to back, so that their address
    /// translations (page walks) overlap as well as their misses (at most N; default
    /// N/2; 1: each probe's at once, as before)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub interleave_group: Option<u32>,
    /// Per-transaction statistics (A-to-E's Table 4): records read and written, locks,
    /// escalations, heap and index pages (unique and total), index nodes, averaged per
    /// committed transaction of each type; and each table's records and pages after the
    /// load. Not with coroutines.
    #[arg(long)]
    pub stats: bool,
}

/// `oltpscope profile`: every option of `run`, and the sampler's.
#[derive(Args, Debug, Clone)]
pub struct ProfOpts {
    #[command(flatten)]
    pub run: RunOpts,
    /// Samples per second of each worker thread's CPU time.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=20_000))]
    pub frequency: u64,
    /// Also read hardware counters (cycles, instructions, branch and cache misses: IPC
    /// and misses per 1000 instructions) on the worker threads where the kernel exposes
    /// them; where it does not, say so in one line and give the software profile.
    #[arg(long)]
    pub counters: bool,
    /// Compute IPC, MPKI, MLP and the TMAM breakdown (levels 1-2, Intel event names)
    /// from recorded counter values: a TOML or JSON table of event = value, or `perf
    /// stat` output (text or -x, CSV), e.g. a capture from a machine with counters.
    /// Printed after the profile.
    #[arg(long, value_name = "FILE")]
    pub counters_from: Option<PathBuf>,
}

/// `oltpscope load`.
#[derive(Args, Debug, Clone)]
pub struct LoadOpts {
    #[command(flatten)]
    pub db: DbArgs,
    /// Loader threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Discard the database that --db holds, if this engine made it, and load anew.
    #[arg(long)]
    pub reload: bool,
    /// Buffer-pool size, e.g. 64MB (disk engine; default: large enough for the data).
    #[arg(long, value_parser = parse_size)]
    pub bpool_size: Option<u64>,
    /// Print a plain line on the load's progress every SECONDS to standard error instead
    /// of the terminal's progress bar; default: 10 when standard error is not a
    /// terminal; 0: none.
    #[arg(long, value_name = "SECONDS", value_parser = seconds_or_zero)]
    pub report_interval: Option<f64>,
}

/// `--file F` of run, simulate and profile. `expand_file` replaces it by the file's
/// workload and options before parsing; it is declared so that --help shows it.
#[derive(Args, Debug, Clone)]
pub struct RunFileArg {
    /// Take the workload and options from this file: TOML with a sweep file's keys
    /// (kind, workload, args, out) or a results directory's manifest.json (or the
    /// directory), to repeat its run; options on the command line override the file's.
    #[arg(long = "file", value_name = "FILE")]
    pub path: Option<PathBuf>,
}

/// The commands that take `--file` (their words), and the kind of run file each reads
/// (`steps place` takes simulate's options).
const FILE_COMMANDS: [(&[&str], &str); 4] = [
    (&["run"], "run"),
    (&["simulate"], "simulate"),
    (&["profile"], "profile"),
    (&["steps", "place"], "simulate"),
];

/// `oltpscope run|simulate|profile [WORKLOAD] --file F [options]`: the command line with
/// the file's workload and options put in, before the command line's own options; those
/// override the file's (a file option is dropped when the command line gives it, or an
/// option that conflicts with it). Other command lines are returned as they are.
pub fn expand_file(argv: Vec<String>) -> Result<Vec<String>, String> {
    let Some(&(words, kind_of_cmd)) = FILE_COMMANDS.iter().find(|(w, _)| {
        argv.len() > w.len() && argv[1..=w.len()].iter().zip(w.iter()).all(|(a, b)| a == b)
    }) else {
        return Ok(argv);
    };
    let cmd = words.join(" ");
    let Some(at) = argv
        .iter()
        .position(|a| a == "--file" || a.starts_with("--file="))
    else {
        return Ok(argv);
    };
    let path = match argv[at].strip_prefix("--file=") {
        Some(p) => p.to_string(),
        None => argv
            .get(at + 1)
            .cloned()
            .ok_or("--file needs a value: a TOML file or a results directory's manifest.json")?,
    };
    let f = lab::runfile::read(std::path::Path::new(&path))?;
    if let Some(kind) = f.kind.as_deref().filter(|k| *k != kind_of_cmd) {
        return Err(format!(
            "--file {path}: it is a `{kind}` file; this is `oltpscope {cmd}`"
        ));
    }
    let skip = if argv[at].contains('=') { 1 } else { 2 };
    let first = 1 + words.len();
    if at < first {
        return Err(format!("--file goes after `oltpscope {cmd}`"));
    }
    let mut rest: Vec<String> = argv[first..at].to_vec();
    rest.extend(argv[at + skip..].iter().cloned());
    if rest
        .iter()
        .any(|a| a == "--file" || a.starts_with("--file="))
    {
        return Err("--file given twice".into());
    }
    // The command line's workload, if it names one (it comes first, as always).
    if let Some(w) = rest.first().filter(|a| !a.starts_with('-')).cloned() {
        if w != f.workload {
            return Err(format!(
                "--file {path}: it is a run of {}; the command line names {w}",
                f.workload
            ));
        }
        rest.remove(0);
    }
    use clap::CommandFactory;
    let top = Cli::command();
    let mut sub = &top;
    for w in words.iter().copied().chain([f.workload.as_str()]) {
        sub = sub
            .find_subcommand(w)
            .ok_or_else(|| format!("--file {path}: unknown workload '{}'", f.workload))?;
    }
    let from_file = file_options_kept(sub, &rest, &f.args);
    let mut out = vec![argv[0].clone()];
    out.extend(words.iter().map(|w| w.to_string()));
    out.push(f.workload.clone());
    out.extend(from_file);
    out.extend(rest);
    Ok(out)
}

/// A long option's name (`--name` or `--name=value`), none for other tokens.
fn long_name(tok: &str) -> Option<String> {
    let name = tok.strip_prefix("--")?;
    Some(name.split('=').next().unwrap_or(name).to_string())
}

/// The file's options (`file_args`) that the command line's own (`rest`, of the command
/// `sub`) leave standing: one the command line gives, or one conflicting with it, is
/// dropped with its value.
fn file_options_kept(sub: &clap::Command, rest: &[String], file_args: &[String]) -> Vec<String> {
    // What the command line gives, and what conflicts with it: the file's are dropped.
    let mut given: Vec<String> = Vec::new();
    for name in rest.iter().filter_map(|t| long_name(t)) {
        if let Some(arg) = sub
            .get_arguments()
            .find(|a| a.get_long() == Some(name.as_str()))
        {
            // A conflict is declared on one side only (`--txns` names `--duration`).
            let names = |a: &clap::Arg, b: &clap::Arg| {
                sub.get_arg_conflicts_with(a)
                    .iter()
                    .any(|c| c.get_id() == b.get_id())
            };
            given.extend(
                sub.get_arguments()
                    .filter(|o| names(arg, o) || names(o, arg))
                    .filter_map(|o| o.get_long().map(str::to_string)),
            );
        }
        given.push(name);
    }
    let mut from_file = Vec::new();
    let mut it = file_args.iter();
    while let Some(tok) = it.next() {
        let Some(name) = long_name(tok) else {
            from_file.push(tok.clone());
            continue;
        };
        // An option with a value not written `--name=value` takes the next token.
        let takes_value = !tok.contains('=')
            && sub
                .get_arguments()
                .find(|a| a.get_long() == Some(name.as_str()))
                .is_some_and(|a| a.get_action().takes_values());
        let value = if takes_value {
            it.next().cloned()
        } else {
            None
        };
        if !given.contains(&name) {
            from_file.push(tok.clone());
            from_file.extend(value);
        }
    }
    from_file
}

/// `oltpscope simulate`: the child run's options it passes on, and its own.
#[derive(Args, Debug, Clone)]
pub struct SimOpts {
    /// Engine design.
    #[arg(long, value_enum, default_value = "memory")]
    pub engine: EngineName,
    #[command(flatten)]
    pub file: RunFileArg,
    /// Worker threads of the traced run.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Transactions simulated after the cache warm-up (default 10000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_TXNS))]
    pub txns: Option<u64>,
    /// Seed of every random generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Logging of the traced run: off, async or sync (default: async, as the papers'
    /// engines logged, where the engine has a log: every log record is built and
    /// buffered and a flusher thread writes it; off for the serial engine).
    #[arg(long, value_enum)]
    pub log: Option<LogArg>,
    #[command(flatten)]
    pub disk: DiskTuning,
    #[command(flatten)]
    pub partitioned: PartitionedTuning,
    /// Do not pin worker threads to cores.
    #[arg(long)]
    pub no_pin: bool,
    /// Write the simulation report as JSON to this file (`-`: standard output).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Transactions each worker thread of the traced run runs at once, as coroutines
    /// (see `run --coroutines`); 1 = plain threads (default 1, or the largest
    /// --steps-team).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub coroutines: Option<u32>,
    /// STEPS team sizes (see `run --steps-team`), e.g. 1,2,4,8,16: one simulation per
    /// team size and a table of cache misses against team size.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub steps_team: Vec<u32>,
    /// STEPS: switch only at these candidate CTX points (see `run --steps-points`).
    #[arg(long, requires = "steps_team")]
    pub steps_points: Option<PathBuf>,
    /// With several --steps-team sizes: one traced run that loads once and measures
    /// each team size in turn, in a trace window of its own, instead of a traced run
    /// and its load per team size. Faster, but a later team size runs on the database
    /// the earlier ones changed, which moves its figures (docs/design/tracer.md).
    #[arg(long, requires = "steps_team")]
    pub steps_one_load: bool,
    /// Memory engine: the traced run's worker threads each run N transactions at once,
    /// switching at index probes (see `run --interleave`), so the caches see what an
    /// interleaved run does to them: its transactions' lines side by side, and its
    /// switches' instructions. The tracer sees no prefetch (valgrind drops them), so a
    /// prefetched line's miss counts where it is first read.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024), conflicts_with_all = ["coroutines", "steps_team"])]
    pub interleave: u32,
    /// With --interleave N: the probes whose prefetches are issued together (see `run
    /// --interleave-group`; at most N, default N/2).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub interleave_group: Option<u32>,
    /// With --interleave N: lookups in a table expected to take less than this do not
    /// switch (see `run --interleave-min-table`; default 4MB; 0: every lookup that
    /// prefetched a line switches).
    #[arg(long, value_parser = cachesim::config::parse_size)]
    pub interleave_min_table: Option<u64>,
    /// Add a table of the B+tree by level: for each level of the trees its descents
    /// passed through (root to leaf, by tree height), and for leaves reached through a
    /// hint, the B+tree's own instructions and data misses per node visited, and the
    /// visits and last-level misses per transaction. The traced run marks each node a
    /// descent reaches, which adds about 20 instructions per node to its counts. The
    /// memory, mvcc and disk engines.
    #[arg(long)]
    pub btree_levels: bool,
    /// A database loaded natively (no valgrind) for this simulation by `simulate ...
    /// --db DIR --load-only` (its marker `DIR.loaded` holds that load's command line):
    /// each traced run runs on a fresh copy of it (`run --no-load`, the disk engine's
    /// pool prewarmed) instead of loading under valgrind. DIR itself is never written.
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// With --db DIR: load the traced run's database natively into DIR (which must not
    /// exist), mark it loaded, and stop (no simulation).
    #[arg(long, requires = "db")]
    pub load_only: bool,
    /// Write a results directory here (a new or empty directory): report.json and
    /// manifest.json (see docs/results.md).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// `oltpscope check`.
#[derive(Args, Debug, Clone)]
pub struct CheckOpts {
    #[command(flatten)]
    pub db: DbArgs,
    /// Recover the database in place (write the recovered state) before checking it;
    /// without it `check` writes nothing and recovers in memory only.
    #[arg(long)]
    pub recover: bool,
    /// Buffer-pool size, e.g. 64MB (disk engine; default: large enough for the data).
    #[arg(long, value_parser = parse_size)]
    pub bpool_size: Option<u64>,
    /// Write the checks as JSON to this file (`-`: standard output).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Check that every commit listed in this file is present (crash testing).
    #[arg(long, hide = true)]
    pub acked_file: Option<PathBuf>,
}

/// `oltpscope compare`.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// The first report: a report JSON file or a results directory (or a directory of
    /// TPC-H answers, `run tpch --answers`: then the answers are compared row by row; or
    /// a `reproduce` output directory: then its verdicts and measured tables, per paper).
    pub a: PathBuf,
    /// The second report, set against the first (ratios are B/A).
    pub b: PathBuf,
    /// Every figure, most changed first, with whole names (by default: the settings
    /// that differ, the headline figures and the 20 most changed others, in 100 columns;
    /// for two reproductions every table cell, not only those that moved).
    #[arg(long)]
    pub all: bool,
}

/// `oltpscope sweep`: its own options first, then the options every run gets.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Workload: micro, tpcb, tpcc, tpce, tpch or chbench (or in --file).
    pub workload: Option<String>,
    /// Sweep `oltpscope simulate` instead of `run`: each point is a cache simulation,
    /// summarized by MPKI, stall cycles and misses per transaction.
    #[arg(long)]
    pub simulate: bool,
    /// Sweep `oltpscope profile` instead of `run`: each point is a run under the
    /// sampling profiler, summarized by throughput and the shares of the sampled time
    /// by component, per transaction type, and the lock manager's split (disk engine).
    #[arg(long, conflicts_with = "simulate")]
    pub profile: bool,
    /// A varied setting KEY=V1,V2,... (repeatable; the product of all is swept). Keys:
    /// threads, size, rows, keys, engine, mode, ordered-index, warehouses, scale,
    /// customers, bpool, coroutines, cores, write-bw (or log-write-bw), read-bw; with --simulate: llc,
    /// l1i (sizes).
    #[arg(long)]
    pub vary: Vec<String>,
    /// Runs per point (median and spread are reported).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// The sweep's directory (a rerun on the same directory resumes the same sweep).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// An experiment file (TOML: kind, workload, vary, repeat, args, out) instead of the
    /// command line; --out on the command line overrides the file's.
    #[arg(long, conflicts_with_all = ["workload", "vary", "repeat", "simulate", "profile"])]
    pub file: Option<PathBuf>,
    /// Do not run: write a job script for a cluster scheduler instead (`--emit slurm
    /// DIR`: DIR/sweep.sbatch, a SLURM job array with one task per point, each writing
    /// its own sweep directory under --out; then `oltpscope merge`).
    #[arg(long, num_args = 2, value_names = ["FORMAT", "DIR"])]
    pub emit: Vec<String>,
    /// Options of `oltpscope run <workload>` given to every run (after the sweep's own),
    /// e.g. --txns 200 --engine disk.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "RUN OPTIONS"
    )]
    pub run_args: Vec<String>,
}

/// `oltpscope plot`.
#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// A sweep directory (summary.json) or a results directory (timeseries.csv).
    pub dir: PathBuf,
}

/// `oltpscope merge`.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Sweep directories of one sweep (same workload, options and varied keys).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The campaign directory to write (new or empty).
    #[arg(long, required = true)]
    pub out: PathBuf,
}

/// `oltpscope reproduce`.
#[derive(Args, Debug, Clone)]
pub struct ReproduceArgs {
    /// The paper: wonderland, revisited, sensitivity, a-to-e or steps; or all (each into
    /// <out>/<paper>, then one index over the five).
    pub paper: String,
    /// A few minutes instead of up to an hour (fewer points, shorter runs).
    #[arg(long)]
    pub quick: bool,
    /// The smallest runs that exercise every step, in seconds (the figures mean
    /// nothing: a check that the machinery works).
    #[arg(long, conflicts_with = "quick")]
    pub tiny: bool,
    /// Where the sweeps, reproduce.json, reproduce.txt and index.html go (default
    /// reproduce-<paper>, reproduce-all; a rerun on the same directory resumes its sweeps).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `oltpscope drop`.
#[derive(Args, Debug, Clone)]
pub struct DropArgs {
    /// The database directory to remove.
    #[arg(long, required = true)]
    pub db: PathBuf,
    /// The disk engine's separate log directory, if the database was made with one.
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
}

/// The most transactions `--txns` accepts (a bound far beyond any run, so sums never
/// overflow).
pub const MAX_TXNS: u64 = 1 << 48;

/// The cache simulator's options.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Cache simulation")]
pub struct SimArgs {
    /// Cache hierarchy preset: xeon-e5-2660, broadwell-e5-2680v4, athlonxp, pentium3,
    /// skylake-sp, zen3 (the papers' and today's machines), or a lean preset keeping the
    /// papers' code-footprint-to-L1-I ratio (~4:1) for oltpscope's ~48 KB of hot code:
    /// xeon-e5-2660-lean16k, xeon-e5-2660-lean8k, athlonxp-lean16k (the machine with a
    /// 16K or 8K L1-I).
    #[arg(long)]
    pub cpu: Option<String>,
    /// L1-I override, SIZE:WAYS:LINE[:LATENCY], e.g. 32K:8:64.
    #[arg(long)]
    pub l1i: Option<String>,
    /// L1-D override, SIZE:WAYS:LINE[:LATENCY].
    #[arg(long)]
    pub l1d: Option<String>,
    /// L2 override, SIZE:WAYS:LINE[:LATENCY] or none.
    #[arg(long)]
    pub l2: Option<String>,
    /// Last-level cache override, SIZE:WAYS:LINE[:LATENCY] or none.
    #[arg(long)]
    pub llc: Option<String>,
    /// Extra sizes simulated in the same pass, e.g. l1i=8K,16K,32K,64K,128K,256K or
    /// llc=2M,8M,32M (repeatable).
    #[arg(long)]
    pub sweep: Vec<String>,
    /// Transactions that warm the caches before statistics start: a number, or auto
    /// (default: until the miss rates of successive windows settle, at most
    /// --warmup-cap; with --steps-team the default is 1000).
    #[arg(long, value_parser = parse_warmup)]
    pub warmup_txns: Option<Warmup>,
    /// Stop measuring once the figures have settled: instructions per transaction and
    /// every level's (and sweep point's) MPKI, each with its 95% confidence interval
    /// over batches of 100 transactions within ±PCT% (default 2; an MPKI also within
    /// ±0.05), after at least 10 batches; --txns is the cap. The report gives the
    /// intervals.
    #[arg(long, value_name = "PCT", num_args = 0..=1, default_missing_value = "2", value_parser = parse_settle)]
    pub until_settled: Option<f64>,
    /// The most transactions an auto warm-up takes (default 200000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_TXNS))]
    pub warmup_cap: Option<u64>,
    /// Background threads (page cleaner, log flusher, ...) share the workers' L1s and
    /// L2 instead of running on a core of their own (sharing only the last level).
    #[arg(long)]
    pub background_shares_core: bool,
    /// Charge code without a component (libc, non-inlined std code) to `other` instead
    /// of the component of the code that ran before it (its caller).
    #[arg(long)]
    pub no_caller_attribution: bool,
    /// Extra component rule PATTERN=NAME (first match on the function's path wins; may
    /// be repeated).
    #[arg(long = "component")]
    pub components: Vec<String>,
    /// Skip the 3C classification (faster).
    #[arg(long)]
    pub no_3c: bool,
    /// Tree pseudo-LRU replacement instead of true LRU.
    #[arg(long)]
    pub plru: bool,
    /// Make the last level non-inclusive (presets say which they are).
    #[arg(long)]
    pub non_inclusive: bool,
    /// Memory latency in cycles (default: the preset's).
    #[arg(long)]
    pub memory_latency: Option<u32>,
}

/// `--warmup-txns`: a fixed number of transactions, or until the caches settle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Warmup {
    Auto,
    Txns(u64),
}

/// `--until-settled PCT`: a percentage above 0 and at most 50 (`2`, `2.5%`).
fn parse_settle(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 50.0 => Ok(p),
        _ => Err(format!(
            "'{s}' is not a percentage above 0 and at most 50 (e.g. 2 or 2.5%)"
        )),
    }
}

fn parse_warmup(s: &str) -> Result<Warmup, String> {
    if s == "auto" {
        return Ok(Warmup::Auto);
    }
    match s.parse::<u64>() {
        Ok(n) if n <= MAX_TXNS => Ok(Warmup::Txns(n)),
        _ => Err(format!(
            "'{s}' is neither auto nor a number of transactions up to {MAX_TXNS}"
        )),
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    Read,
    Update,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnsArg {
    Long,
    String,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistArg {
    Uniform,
    Zipf,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexArg {
    Btree,
    Hash,
}

/// What shapes the micro-benchmark's database.
#[derive(Args, Debug, Clone)]
pub struct MicroData {
    /// Database size in bytes of row data (e.g. 1MB, 10MB, 1GB, 10GB; powers of 1024).
    #[arg(long, value_parser = parse_size, conflicts_with = "keys")]
    pub size: Option<u64>,
    /// Number of rows (keys), instead of --size. Default: 10MB worth of rows.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub keys: Option<u64>,
    /// long: two 8-byte integers under 8-byte integer keys; string: two 50-byte strings
    /// under 50-byte string keys.
    #[arg(long, value_enum, default_value = "long")]
    pub columns: ColumnsArg,
    /// Index of the table.
    #[arg(long, value_enum, default_value = "btree")]
    pub index: IndexArg,
}

/// The micro-benchmark's transactions.
#[derive(Args, Debug, Clone)]
pub struct MicroTxn {
    /// Rows read or updated per transaction.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rows: u32,
    /// read: read-only; update: read-modify-write of each row.
    #[arg(long, value_enum, default_value = "read")]
    pub mode: ModeArg,
    /// Key distribution.
    #[arg(long, value_enum, default_value = "uniform")]
    pub distribution: DistArg,
    /// Zipf skew (with --distribution zipf), in (0, 1).
    #[arg(long, default_value_t = 0.99)]
    pub theta: f64,
}

/// What shapes TPC-B's database.
#[derive(Args, Debug, Clone)]
pub struct TpcbData {
    /// Number of branches (each with 10 tellers and 100,000 accounts).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub scale: u64,
    /// Put each Branch and Teller row on its own cache lines and page.
    #[arg(long)]
    pub pad: bool,
}

/// TPC-B's transactions.
#[derive(Args, Debug, Clone)]
pub struct TpcbTxn {
    /// Give each worker its own home branch (needs --scale >= --threads).
    #[arg(long)]
    pub affinity: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalsArg {
    Regular,
    Poisson,
}

/// The highest `--rate` accepted (far beyond any engine here; keeps gaps above 1 ns).
pub const MAX_RATE: f64 = 1e8;

/// A rate of transactions per second, above 0 and at most `MAX_RATE`.
fn rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= MAX_RATE => Ok(v),
        _ => Err(format!(
            "'{s}' is not a rate in transactions per second (above 0, at most {MAX_RATE})"
        )),
    }
}

/// The longest run or warm-up accepted: a year (longer ones overflow the clocks).
pub const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// A number of seconds, above 0 and at most `MAX_SECONDS`.
fn seconds(s: &str) -> Result<f64, String> {
    match seconds_or_zero(s)? {
        v if v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// A number of seconds from 0 to `MAX_SECONDS`.
fn seconds_or_zero(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=MAX_SECONDS).contains(&v) => Ok(v),
        Ok(v) if v > MAX_SECONDS => Err(format!(
            "'{s}' seconds is more than a year ({MAX_SECONDS} s), the longest accepted"
        )),
        _ => Err(format!("'{s}' is not a non-negative number of seconds")),
    }
}

/// Sizes: the one size parser (cachesim's, units are powers of 1024); zero is refused
/// (options where zero means something take `cachesim::config::parse_size` itself).
pub fn parse_size(s: &str) -> Result<u64, String> {
    match cachesim::config::parse_size(s)? {
        0 => Err(format!("size '{s}' must be at least one byte")),
        v => Ok(v),
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashWorkload {
    Tpcb,
    Tpcc,
}

/// The engines a crash test can kill: oltpscope's own durable ones (SQLite and
/// PostgreSQL have their own crash tests).
fn durable_engine() -> impl clap::builder::TypedValueParser<Value = EngineName> {
    use clap::builder::TypedValueParser;
    // By name: the order clap lists them in.
    let mut durable: Vec<EngineName> = EngineName::ALL
        .iter()
        .copied()
        .filter(|e| e.descriptor().durable && !e.is_external())
        .collect();
    durable.sort_by_key(|e| e.as_str());
    clap::builder::PossibleValuesParser::new(
        durable
            .iter()
            .map(|e| e.to_possible_value().expect("named")),
    )
    .map(|s| <EngineName as ValueEnum>::from_str(&s, false).expect("a durable engine's name"))
}

#[derive(Args, Debug, Clone)]
pub struct CrashArgs {
    /// Engine under test: one of oltpscope's durable engines.
    #[arg(long, default_value = "disk", value_parser = durable_engine())]
    pub engine: EngineName,
    /// Workload of the killed runs.
    #[arg(long, value_enum, default_value = "tpcb")]
    pub workload: CrashWorkload,
    /// Number of kill-and-recover trials.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: u32,
    /// TPC-B branches.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub scale: u64,
    /// TPC-C warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub warehouses: u32,
    /// Worker threads of the killed run.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// The kill comes at a random moment up to this many milliseconds after the first
    /// acknowledged commit of the trial.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_kill_ms: u64,
    /// Seed of the kill times, checkpoint intervals and of the runs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the database and the trials' files (under this directory) for inspection.
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Instead of killing: fill a small tmpfs until the engine fails with "no space
    /// left", then grow it and check every acknowledged commit (needs root and mount).
    #[arg(long)]
    pub enospc: bool,
}

/// What shapes TPC-C's database.
#[derive(Args, Debug, Clone)]
pub struct TpccData {
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub warehouses: u32,
}

/// What shapes TPC-E's database.
#[derive(Args, Debug, Clone)]
pub struct TpceData {
    /// Customers: a multiple of 1,000 (the load unit).
    #[arg(long, default_value_t = 1000)]
    pub customers: u64,
    /// Initial trade days of eight trading hours (the specification loads 300; the
    /// default keeps the load short).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=300))]
    pub trade_days: u32,
}

/// What shapes TPC-H's database.
#[derive(Args, Debug, Clone)]
pub struct TpchData {
    /// Scale factor, 0.01 to 10000 (1: 6 million line items, about 1 GB of rows).
    #[arg(long, default_value_t = 1.0, value_parser = workloads::tpch::parse_scale_factor)]
    pub scale_factor: f64,
}

/// A list of TPC-H query numbers (`--queries 1,6,3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryList(pub Vec<u32>);

fn query_list(s: &str) -> Result<QueryList, String> {
    workloads::tpch::power::parse_queries(s).map(QueryList)
}

fn one_query(s: &str) -> Result<QueryList, String> {
    if s.contains(',') {
        return Err("--query takes one query number (--queries takes a list)".into());
    }
    query_list(s)
}

/// `--streams S` (`None`: the minimum for the scale factor, `--streams min`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streams(pub Option<usize>);

fn streams(s: &str) -> Result<Streams, String> {
    workloads::tpch::power::parse_streams(s).map(Streams)
}

/// Which TPC-H queries the performance test executes (default: all 22; they run in
/// each stream's order of Appendix A whatever the order given), and its runs: the power
/// test (RF1, the queries, RF2), then with --streams the throughput test.
#[derive(Args, Debug, Clone)]
pub struct TpchTxn {
    /// Run this query only (1 to 22).
    #[arg(long, value_name = "N", value_parser = one_query, conflicts_with = "queries")]
    pub query: Option<QueryList>,
    /// Run these queries, e.g. 1,6,3.
    #[arg(long, value_name = "LIST", value_parser = query_list)]
    pub queries: Option<QueryList>,
    /// After the power test, a throughput test of S query streams (each a thread) and a
    /// refresh stream of S refresh pairs, then QphH@Size. `--streams` alone or `min`:
    /// clause 5.3.4's minimum for the scale factor (2 up to SF 10); 0 or omitted: the
    /// power test only. At most 40.
    #[arg(long, value_name = "S", value_parser = streams, num_args = 0..=1, default_missing_value = "min")]
    pub streams: Option<Streams>,
    /// Leave the refresh functions out (the queries only: a read-only run, whose
    /// figures are marked partial).
    #[arg(long)]
    pub no_refresh: bool,
    /// Threads each query's scans use (1 to 64): the scan's key range split in N
    /// parts, each scanned, filtered and partially aggregated on its own thread, the
    /// answers the serial plan's (memory and mvcc; disk, serial and partitioned scan
    /// on one thread; SQLite and PostgreSQL refuse it).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = query_threads)]
    pub query_threads: usize,
    /// Write the power test's answers to DIR (new or empty), a file per query
    /// (qNN.tsv: a context line, the columns, the rows; decimals rounded to cents);
    /// `oltpscope compare A B` compares two such directories row by row.
    #[arg(long, value_name = "DIR")]
    pub answers: Option<PathBuf>,
}

fn query_threads(s: &str) -> Result<usize, String> {
    workloads::tpch::parse_query_threads(s)
}

/// A list of CH-benCHmark query numbers (`--queries 1,6`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChQueryList(pub Vec<u32>);

fn ch_query_list(s: &str) -> Result<ChQueryList, String> {
    workloads::chbench::queries::parse_queries(s).map(ChQueryList)
}

/// CH-benCHmark's analytical side (its TPC-C side takes `run tpcc`'s options, and
/// --threads is the number of TPC-C workers).
#[derive(Args, Debug, Clone)]
pub struct ChbenchTxn {
    /// Analytical streams, 0 to 64: each a thread running the queries one after the
    /// other in number order, again and again, each query one read-only transaction
    /// (0: TPC-C alone, the baseline of the hybrid run).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub analytic_streams: u32,
    /// The queries the streams run, e.g. 1,6 (default: all 22).
    #[arg(long, value_name = "LIST", value_parser = ch_query_list)]
    pub queries: Option<ChQueryList>,
    /// Run the analytical streams alone, no TPC-C worker (the baseline of the
    /// queries; --threads is then not used).
    #[arg(long, conflicts_with = "alone")]
    pub analytics_only: bool,
    /// Three runs of --duration each, every one on the database loaded afresh: TPC-C
    /// alone, the analytical streams alone, then both; reports each side's rate alone
    /// and together and the slowdown ratios.
    #[arg(long)]
    pub alone: bool,
    /// Threads each analytical query's scans use (1 to 64), as `run tpch
    /// --query-threads`.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = query_threads)]
    pub query_threads: usize,
    /// The analytical streams' CPU priority: normal (as the transactions' threads), low
    /// (each stream's thread and its --query-threads scan threads at nice 19) or idle
    /// (SCHED_IDLE: it runs only where a core has nothing else to run); a lowered stream
    /// is not pinned to a core. Workload isolation where the cores are fewer than the
    /// threads (docs/design/htap.md).
    #[arg(long, value_name = "P", default_value = "normal", value_parser = analytics_priority)]
    pub analytics_priority: Priority,
}

fn analytics_priority(s: &str) -> Result<Priority, String> {
    Priority::parse(s)
}

/// A list of TPC-E analytical query numbers (`--queries 1,3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TpceQueryList(pub Vec<u32>);

fn tpce_query_list(s: &str) -> Result<TpceQueryList, String> {
    workloads::tpce::analytics::parse_queries(s).map(TpceQueryList)
}

/// TPC-E's transactions.
#[derive(Args, Debug, Clone)]
pub struct TpceTxn {
    /// Mix of the dealt transactions in percent (one decimal), e.g.
    /// trade-order=50,trade-status=50 (unnamed types get 0; default: Clause 6's shares;
    /// Trade-Result and Market-Feed come from the market, not the mix).
    #[arg(long, value_parser = workloads::tpce::parse_mix)]
    pub mix: Option<[u32; 12]>,
    /// Analytical streams, 0 to 64, beside the --threads TPC-E workers: each a thread
    /// running the analytical queries A1-A4 one after the other, again and again, each
    /// one read-only transaction (0: TPC-E alone; docs/design/htap.md).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub analytics: u32,
    /// The analytical queries the streams run, e.g. 1,3 (default: all four: A1 trading
    /// by sector, A2 settlements by tier, A3 top brokers by commission, A4 holdings by
    /// industry at the last price).
    #[arg(long, value_name = "LIST", value_parser = tpce_query_list)]
    pub queries: Option<TpceQueryList>,
    /// With --analytics: three runs of --duration each, every one on the database
    /// loaded afresh: TPC-E alone, the analytical streams alone, then both; reports each
    /// side's rate alone and together and the slowdown ratios.
    #[arg(long)]
    pub alone: bool,
    /// The analytical streams' CPU priority: normal (as the transactions' threads), low
    /// (each stream's thread and its --query-threads scan threads at nice 19) or idle
    /// (SCHED_IDLE: it runs only where a core has nothing else to run); a lowered stream
    /// is not pinned to a core. Workload isolation where the cores are fewer than the
    /// threads (docs/design/htap.md).
    #[arg(long, value_name = "P", default_value = "normal", value_parser = analytics_priority)]
    pub analytics_priority: Priority,
}

/// TPC-C's transactions.
#[derive(Args, Debug, Clone)]
pub struct TpccTxn {
    /// Transaction mix in percent, e.g. new-order=50,payment=50 (unnamed types get 0;
    /// default: the specification's 45/43/4/4/4).
    #[arg(long, value_parser = workloads::tpcc::parse_mix)]
    pub mix: Option<[u32; 5]>,
    /// Give each worker its own home warehouse (as Silo and Shore-Kits run it);
    /// otherwise home warehouses are drawn uniformly per transaction.
    #[arg(long)]
    pub affinity: bool,
    /// Each worker is one terminal of the specification: keying time before and think
    /// time after each transaction (clause 5.2.5), instead of back to back.
    #[arg(long)]
    pub terminal_times: bool,
}

/// Coroutines per worker thread: --coroutines, else the largest STEPS team, else 1.
/// Errors when --coroutines is below a team size (a team forms from one thread's
/// coroutines).
pub fn coroutines(coroutines: Option<u32>, teams: &[u32]) -> Result<u32, String> {
    let team = teams.iter().copied().max();
    match (coroutines, team) {
        (Some(c), Some(t)) if c < t => Err(format!(
            "--steps-team {t} needs --coroutines {t} or more (teams form from a worker thread's coroutines), not {c}"
        )),
        (Some(c), _) => Ok(c),
        (None, Some(t)) => Ok(t),
        (None, None) => Ok(1),
    }
}

/// `--interleave N` and `--interleave-group G` (`run`, `profile`, `simulate`): the
/// memory engine only, G at most N.
pub fn interleave_fits(n: u32, group: Option<u32>, engine: EngineName) -> Result<(), String> {
    if n > 1 && engine != EngineName::Memory {
        return Err(
            "--interleave needs the memory engine (only its index probes prefetch and switch)"
                .into(),
        );
    }
    if let Some(g) = group {
        if n < 2 {
            return Err(
                "--interleave-group needs --interleave N with N above 1 (it groups the probes of N transactions)"
                    .into(),
            );
        }
        if g > n {
            return Err(format!(
                "--interleave-group {g} is more than --interleave {n}: a thread has only that many transactions to group"
            ));
        }
    }
    Ok(())
}

/// clap's message on one line: the error and its hints (possible values, a similar
/// argument), without the usage that --help is for.
pub fn one_line(text: &str) -> String {
    let parts: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if parts.is_empty() {
        return "error: bad arguments (see --help)".into();
    }
    format!("{} (see --help)", parts.join("; "))
}
