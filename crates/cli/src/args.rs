//! Command-line arguments.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "oltpscope",
    version,
    about = "An OLTP storage engine and a laboratory around it: run TPC-B, TPC-C and a micro-benchmark on several engine designs and see where the cycles go."
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Load a workload and run it (throughput, aborts, latency, consistency checks).
    Run {
        #[command(subcommand)]
        workload: WorkloadCmd,
    },
    /// Run a workload under the tracer and simulate its caches: MPKI, stall cycles and
    /// 3C per level, misses by database operation and by storage-manager component.
    Simulate {
        #[command(subcommand)]
        workload: WorkloadCmd,
    },
    /// Kill TPC-B runs at random moments and check that recovery keeps every
    /// acknowledged commit and nothing else (soak test of a durable engine).
    Crashtest(CrashArgs),
    /// Run a workload's consistency check on an existing database directory.
    Check {
        #[command(subcommand)]
        workload: WorkloadCmd,
    },
}

#[derive(Subcommand, Debug)]
pub enum WorkloadCmd {
    /// The micro-benchmark: one (key, value) table, N random rows read or updated per txn.
    Micro(MicroArgs),
    /// TPC-B: the AccountUpdate transaction over Branch, Teller, Account, History.
    Tpcb(TpcbArgs),
    /// TPC-C: the five transactions over nine tables, with consistency conditions 1-12.
    Tpcc(TpccArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineName {
    /// In-memory, Silo-style: OCC with epochs, B+tree with optimistic lock coupling.
    Memory,
    /// Disk-based, Shore-MT-style: buffer pool, latches, page B+tree, 2PL, ARIES log.
    Disk,
    /// One transaction at a time under a global lock (the reference oracle).
    Serial,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogArg {
    Off,
    Async,
    Sync,
}

#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Engine design.
    #[arg(long, value_enum, default_value = "memory")]
    pub engine: EngineName,
    /// Worker threads (each runs transactions back to back).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Measured interval in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = seconds)]
    pub duration: f64,
    /// Measure this many transactions instead of a duration (no warm-up then).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "duration")]
    pub txns: Option<u64>,
    /// Warm-up before the measured interval, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = seconds_or_zero)]
    pub warmup: f64,
    /// Seed of every random generator (the run prints it; the same seed repeats the inputs).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the full report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Logging: off, async (group commit, commit does not wait) or sync (commit waits).
    #[arg(long, value_enum, default_value = "off")]
    pub log: LogArg,
    /// Directory for log files (default: a new directory under the system temp dir).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// Database directory (disk engine; default: a new temporary directory).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Run on the data already in --db (disk engine) or --log-dir (memory engine)
    /// instead of loading.
    #[arg(long)]
    pub no_load: bool,
    /// Discard the database (or log) that --db (--log-dir) holds, if this engine made
    /// it, and load anew: the only way an existing database is ever replaced.
    #[arg(long, conflicts_with = "no_load")]
    pub reload: bool,
    /// `check`: recover the database in place (write the recovered state) before
    /// checking it; without it `check` writes nothing and recovers in memory only.
    #[arg(long)]
    pub recover: bool,
    /// Buffer-pool size, e.g. 64MB (disk engine; default: large enough for the data).
    #[arg(long, value_parser = parse_size)]
    pub bpool_size: Option<u64>,
    /// Record locks per table before escalation to a table lock (disk engine).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub escalation: Option<u32>,
    /// Checkpoint interval in milliseconds, 0 = none (disk engine).
    #[arg(long)]
    pub checkpoint_ms: Option<u64>,
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
    /// one would wait (lock, latch, log flush, page I/O); 1 = plain threads (`run`,
    /// `simulate`; default 1, or the largest --steps-team).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub coroutines: Option<u32>,
    /// STEPS (`run`, `simulate`): a thread's coroutines about to run the same database
    /// operation (on the same table) form teams of at most N, which pass the thread to
    /// one another at context-switch points inside the engine to share the L1-I cache.
    /// Needs --coroutines >= N (implied when not given). `simulate` takes a list, e.g.
    /// 1,2,4,8,16: one simulation per team size and a table of cache misses.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub steps_team: Vec<u32>,
    #[command(flatten)]
    pub sim: SimArgs,
}

impl Common {
    /// Coroutines per worker thread: --coroutines, else the largest --steps-team, else 1.
    /// Errors when --coroutines is below a --steps-team (a team forms from one thread's
    /// coroutines).
    pub fn coroutines(&self) -> Result<u32, String> {
        let team = self.steps_team.iter().copied().max();
        match (self.coroutines, team) {
            (Some(c), Some(t)) if c < t => Err(format!(
                "--steps-team {t} needs --coroutines {t} or more (teams form from a worker thread's coroutines), not {c}"
            )),
            (Some(c), _) => Ok(c),
            (None, Some(t)) => Ok(t),
            (None, None) => Ok(1),
        }
    }
}

/// Options of `oltpscope simulate` (refused by the other commands).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Cache simulation (oltpscope simulate only)")]
pub struct SimArgs {
    /// Cache hierarchy preset: xeon-e5-2660, broadwell-e5-2680v4, athlonxp, pentium3,
    /// skylake-sp, zen3.
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
    /// Transactions that warm the caches before statistics start (default 1000).
    #[arg(long)]
    pub warmup_txns: Option<u64>,
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

impl SimArgs {
    pub fn given(&self) -> bool {
        self.cpu.is_some()
            || self.l1i.is_some()
            || self.l1d.is_some()
            || self.l2.is_some()
            || self.llc.is_some()
            || !self.sweep.is_empty()
            || self.warmup_txns.is_some()
            || !self.components.is_empty()
            || self.no_3c
            || self.plru
            || self.non_inclusive
            || self.memory_latency.is_some()
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

#[derive(Args, Debug, Clone)]
pub struct MicroArgs {
    #[command(flatten)]
    pub common: Common,
    /// Database size in bytes of row data (e.g. 1MB, 10MB, 1GB, 10GB; powers of 1024).
    #[arg(long, value_parser = parse_size, conflicts_with = "keys")]
    pub size: Option<u64>,
    /// Number of rows (keys), instead of --size. Default: 10MB worth of rows.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub keys: Option<u64>,
    /// Rows read or updated per transaction.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rows: u32,
    /// read: read-only; update: read-modify-write of each row.
    #[arg(long, value_enum, default_value = "read")]
    pub mode: ModeArg,
    /// long: two 8-byte integers; string: two 50-byte strings.
    #[arg(long, value_enum, default_value = "long")]
    pub columns: ColumnsArg,
    /// Key distribution.
    #[arg(long, value_enum, default_value = "uniform")]
    pub distribution: DistArg,
    /// Zipf skew (with --distribution zipf), in (0, 1).
    #[arg(long, default_value_t = 0.99)]
    pub theta: f64,
    /// Index of the table.
    #[arg(long, value_enum, default_value = "btree")]
    pub index: IndexArg,
}

#[derive(Args, Debug, Clone)]
pub struct TpcbArgs {
    #[command(flatten)]
    pub common: Common,
    /// Number of branches (each with 10 tellers and 100,000 accounts).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub scale: u64,
    /// Put each Branch and Teller row on its own cache lines and page.
    #[arg(long)]
    pub pad: bool,
    /// Give each worker its own home branch (needs --scale >= --threads).
    #[arg(long)]
    pub affinity: bool,
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

/// Sizes: a number with an optional unit B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB (all
/// powers of 1024). Zero is refused.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 64MB, 1GB)"))?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        u => {
            return Err(format!(
                "unknown size unit '{u}' in '{s}' (use KB, MB, GB or TB)"
            ))
        }
    };
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("size '{s}' must be at least one byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("10MB"), Ok(10 << 20));
        assert_eq!(parse_size("1gb"), Ok(1 << 30));
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0MB").is_err());
        assert!(parse_size("-1MB").is_err());
        assert!(parse_size("10XB").is_err());
        assert!(parse_size("MB").is_err());
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashWorkload {
    Tpcb,
    Tpcc,
}

#[derive(Args, Debug, Clone)]
pub struct CrashArgs {
    /// Engine under test (must be durable: disk or memory).
    #[arg(long, value_enum, default_value = "disk")]
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

#[derive(Args, Debug, Clone)]
pub struct TpccArgs {
    #[command(flatten)]
    pub common: Common,
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub warehouses: u32,
    /// Transaction mix in percent, e.g. new-order=50,payment=50 (unnamed types get 0;
    /// default: the specification's 45/43/4/4/4).
    #[arg(long, value_parser = workloads::tpcc::parse_mix)]
    pub mix: Option<[u32; 5]>,
    /// Give each worker its own home warehouse (as Silo and Shore-Kits run it);
    /// otherwise home warehouses are drawn uniformly per transaction.
    #[arg(long)]
    pub affinity: bool,
}
