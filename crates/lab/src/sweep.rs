//! `oltpscope sweep`: the cartesian product of the varied settings, each point repeated,
//! each repetition an `oltpscope run` child writing its own results directory, then a
//! summary (median and spread per point, knees and sufficiency per curve).
//!
//! Layout under the sweep directory: `sweep.json` (the specification, so a rerun resumes
//! only the same sweep), `points/<point>/rep<k>/` (results directories), `summary.csv`,
//! `summary.json`. A repetition runs into `rep<k>.partial` and is renamed when complete,
//! so a killed sweep leaves no directory that looks finished; a rerun skips complete
//! repetitions and redoes partial ones (after checking they hold only results files).
//! A sweep that loads once per data shape (`Spec::load_once`) runs on databases in its
//! `root`: `<shape>/` and its markers `<shape>.loading` and `<shape>.loaded`; one that
//! runs each repetition on a copy (`LoadOnce::copy`), its copies beside them too
//! (`<shape>.run-<point>-rep<k>/` and its marker `.copy`).
//!
//! Owns no engine code: the children are this same executable.

use crate::cgroup;
use crate::knee::{self, Sufficiency};
use crate::lanes::{Measured, Share, LANES};
use crate::resident::Msg;
use crate::results;
pub use crate::shapes::{
    check_shared, copy_marker, loaded_marker, loading_marker, remove_shared, LoadOnce,
};
use crate::shapes::{copy_shape, drop_copy, load_shape, prewarms, PREWARM};
use runspec::{flag, RunSpec, Workload};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const SPEC: &str = "sweep.json";
pub const SUMMARY_CSV: &str = "summary.csv";
pub const SUMMARY_JSON: &str = "summary.json";
pub const POINTS: &str = "points";

/// The most points times repetitions a sweep accepts (a bound against typing mistakes
/// such as a product of long lists).
pub const MAX_RUNS: usize = 10_000;

/// How a varied key reaches the child run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Key {
    /// A field of the child's spec (set by [`set_field`]), an option of the workloads
    /// listed; `flag`: the option it is written as; `axis`: how its values read.
    Flag {
        flag: &'static str,
        workloads: &'static [&'static str],
        axis: Axis,
    },
    /// The child is confined to this many cores (a cpuset). Runs only.
    Cores,
    /// A simulated cache level's size (`l1i`, `llc`): `simulate --l1i/--llc` with the
    /// level's other geometry (ways, line, latency) from the CPU preset. Simulate only.
    Cache { level: &'static str },
    /// The storage device's write or read bandwidth, in bytes per second, throttled by
    /// the block-I/O controller (`crate::cgroup`). Runs only.
    Bandwidth { write: bool },
}

/// What each point of a sweep runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `oltpscope run`: throughput, aborts, latency.
    #[default]
    Run,
    /// `oltpscope simulate`: MPKI, stall cycles, misses per transaction.
    Simulate,
    /// `oltpscope profile`: a run under the sampler; throughput as `run`, plus the
    /// shares of the sampled time by component, per transaction type, and the lock
    /// manager's split where the engine has one.
    Profile,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Simulate => "simulate",
            Kind::Profile => "profile",
        }
    }

    /// Does each point run natively (`run`, `profile`), so throughput is measured?
    pub fn native(self) -> bool {
        self != Kind::Simulate
    }

    /// What a sweep of children of `command` runs (`check` is no sweep's: a bug).
    pub fn of(command: runspec::Command) -> Kind {
        match command {
            runspec::Command::Run => Kind::Run,
            runspec::Command::Simulate => Kind::Simulate,
            runspec::Command::Profile => Kind::Profile,
            runspec::Command::Load | runspec::Command::Check => {
                panic!("a sweep runs run, simulate or profile")
            }
        }
    }

    /// The child's command.
    pub fn command(self) -> runspec::Command {
        match self {
            Kind::Run => runspec::Command::Run,
            Kind::Simulate => runspec::Command::Simulate,
            Kind::Profile => runspec::Command::Profile,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    Count,
    Size,
    Category,
}

const ALL: &[&str] = &["micro", "tpcb", "tpcc", "tpce", "tpch", "chbench"];

/// The keys `--vary` supports, and how each reaches the child.
pub(crate) fn key(name: &str) -> Option<Key> {
    use Axis::*;
    let f = |flag, workloads, axis| {
        Some(Key::Flag {
            flag,
            workloads,
            axis,
        })
    };
    match name {
        "threads" => f(flag::THREADS, ALL, Count),
        "size" => f(flag::SIZE, &["micro"], Size),
        "rows" => f(flag::ROWS, &["micro"], Count),
        "keys" => f(flag::KEYS, &["micro"], Count),
        "engine" => f(flag::ENGINE, ALL, Category),
        "warehouses" => f(flag::WAREHOUSES, &["tpcc", "chbench"], Count),
        "scale-factor" => f(flag::SCALE_FACTOR, &["tpch"], Count),
        "streams" => f(flag::STREAMS, &["tpch"], Count),
        "analytic-streams" => f(flag::ANALYTIC_STREAMS, &["chbench"], Count),
        "query-threads" => f(flag::QUERY_THREADS, &["tpch", "chbench"], Count),
        "scale" => f(flag::SCALE, &["tpcb"], Count),
        "customers" => f(flag::CUSTOMERS, &["tpce"], Count),
        "bpool" => f(flag::BPOOL_SIZE, ALL, Size),
        "coroutines" => f(flag::COROUTINES, ALL, Count),
        "mode" => f(flag::MODE, &["micro"], Category),
        "ordered-index" => f(flag::ORDERED_INDEX, ALL, Category),
        "cores" => Some(Key::Cores),
        "llc" => Some(Key::Cache { level: "llc" }),
        "l1i" => Some(Key::Cache { level: "l1i" }),
        "write-bw" | "log-write-bw" => Some(Key::Bandwidth { write: true }),
        "read-bw" => Some(Key::Bandwidth { write: false }),
        _ => None,
    }
}

/// Set the field of `s` that key `name` varies to `x`, parsed as its type.
pub(crate) fn set_field(name: &str, s: &mut RunSpec, x: &str) -> Result<(), String> {
    let whole = |x: &str| {
        x.parse::<u64>()
            .map_err(|_| format!("'{x}' is not a whole number"))
    };
    let small = |x: &str| {
        x.parse::<u32>()
            .map_err(|_| format!("'{x}' is not a whole number below 2^32"))
    };
    // The same parser as the child's (units are powers of 1024).
    let size = cachesim::config::parse_size;
    let o = &mut s.options;
    match (name, &mut s.workload) {
        ("threads", _) => o.threads = Some(small(x)?),
        ("engine", _) => o.engine = Some(x.to_string()),
        ("bpool", _) => o.bpool_size = Some(size(x)?),
        ("coroutines", _) => o.coroutines = Some(small(x)?),
        ("ordered-index", _) => o.ordered_index = Some(runspec::OrderedIndex::parse(x)?),
        ("size", Workload::Micro(m)) => m.size = Some(size(x)?),
        ("rows", Workload::Micro(m)) => m.rows = Some(small(x)?),
        ("keys", Workload::Micro(m)) => m.keys = Some(whole(x)?),
        ("mode", Workload::Micro(m)) => m.mode = Some(runspec::MicroMode::parse(x)?),
        ("warehouses", Workload::Tpcc(c)) => c.warehouses = Some(small(x)?),
        ("scale", Workload::Tpcb(b)) => b.scale = Some(whole(x)?),
        ("customers", Workload::Tpce(e)) => e.customers = Some(whole(x)?),
        ("warehouses", Workload::Chbench(c)) => c.tpcc.warehouses = Some(small(x)?),
        ("scale-factor", Workload::Tpch(h)) => {
            h.scale_factor = Some(
                x.parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0 && f.is_finite())
                    .ok_or_else(|| {
                        format!("'{x}' is not a scale factor (a number above 0, e.g. 0.1)")
                    })?,
            )
        }
        // A whole number of throughput-test streams (`min`, the specification's least
        // for the scale factor, is a category on no axis: give the number).
        ("streams", Workload::Tpch(h)) => h.streams = Some(small(x)?.to_string()),
        ("analytic-streams", Workload::Chbench(c)) => c.analytic_streams = Some(small(x)?),
        ("query-threads", Workload::Tpch(h)) => h.query_threads = Some(small(x)?),
        ("query-threads", Workload::Chbench(c)) => c.query_threads = Some(small(x)?),
        _ => return Err(format!("not a field of {}", s.workload.name())),
    }
    Ok(())
}

pub const KEYS: &str = "threads, size, rows, keys, engine, mode, ordered-index, warehouses, scale, customers, scale-factor, streams, analytic-streams, query-threads, bpool, coroutines, cores, write-bw (or log-write-bw), read-bw; with --simulate: llc, l1i";

/// Why `name` cannot be varied in a sweep of `kind`, if it cannot.
fn refused_for(name: &str, kind: Kind) -> Option<&'static str> {
    match (key(name)?, kind) {
        (Key::Cache { .. }, Kind::Run | Kind::Profile) => {
            Some("a simulated cache size: sweep `oltpscope sweep --simulate`")
        }
        (Key::Cores, Kind::Simulate) => Some(
            "the simulated run is serialized by the tracer, so cores change nothing: sweep `run`",
        ),
        (Key::Bandwidth { .. }, Kind::Simulate) => {
            Some("the simulator has no storage: sweep `run` for bandwidth")
        }
        (Key::Flag { flag, .. }, Kind::Simulate) if flag == flag::QUERY_THREADS => {
            Some("the tracer runs one thread per stream: sweep `run` for query threads")
        }
        _ => None,
    }
}

/// The axis of a key (for plots and knees): counts and sizes are numbers.
pub fn axis(name: &str) -> Axis {
    match key(name) {
        Some(Key::Flag { axis, .. }) => axis,
        Some(Key::Cores) => Axis::Count,
        Some(Key::Cache { .. }) | Some(Key::Bandwidth { .. }) => Axis::Size,
        None => Axis::Category,
    }
}

/// A value of a key as a number (None for categories or what does not parse).
pub fn numeric(name: &str, value: &str) -> Option<f64> {
    match axis(name) {
        Axis::Count => value.parse::<f64>().ok(),
        Axis::Size => cachesim::config::parse_size(value).ok().map(|v| v as f64),
        Axis::Category => None,
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Vary {
    pub key: String,
    pub values: Vec<String>,
}

/// What a sweep is: saved as `sweep.json`; a rerun must match it to resume.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spec {
    /// What each point runs (absent in sweeps written before simulate sweeps: run).
    #[serde(default)]
    pub kind: Kind,
    pub workload: String,
    pub vary: Vec<Vary>,
    pub repeat: u32,
    /// Options given to every run.
    pub args: Vec<String>,
    /// Points equal on these keys share one database, loaded once (issue 41); absent:
    /// each run loads its own. Not written when absent (older sweeps resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_once: Option<LoadOnce>,
}

/// Parse `key=v1,v2,...`.
pub fn parse_vary(s: &str) -> Result<Vary, String> {
    let (k, vs) = s
        .split_once('=')
        .ok_or_else(|| format!("--vary {s}: expected KEY=VALUE[,VALUE...], e.g. threads=1,2"))?;
    let k = k.trim();
    if key(k).is_none() {
        return Err(format!("--vary {s}: unknown key '{k}' (supported: {KEYS})"));
    }
    let values: Vec<String> = vs.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!("--vary {s}: an empty value"));
    }
    Ok(Vary {
        key: k.to_string(),
        values,
    })
}

/// The experiment file's content (TOML): the same as the command line.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// "run" (the default), "simulate" or "profile".
    #[serde(default)]
    kind: Kind,
    workload: String,
    /// `["threads=1,2", "size=1MB,10MB"]`, in the order of the product.
    #[serde(default)]
    vary: Vec<String>,
    #[serde(default)]
    repeat: Option<u32>,
    /// Options given to every run, e.g. `["--txns", "200"]`.
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    out: Option<PathBuf>,
}

/// Read an experiment file: its spec and its `out` directory, if it names one.
pub fn read_file(path: &Path) -> Result<(Spec, Option<PathBuf>), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let f: File = toml::from_str(&text).map_err(|e| {
        format!(
            "{}: {}",
            path.display(),
            e.to_string().lines().collect::<Vec<_>>().join(" ")
        )
    })?;
    let vary = f
        .vary
        .iter()
        .map(|v| parse_vary(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let spec = Spec {
        kind: f.kind,
        workload: f.workload,
        vary,
        repeat: f.repeat.unwrap_or(1),
        args: f.args,
        load_once: None,
    };
    Ok((spec, f.out))
}

impl Spec {
    /// A sweep of `run`'s command and workload, `run`'s options given to every run.
    pub fn of(run: &RunSpec, vary: Vec<Vary>, repeat: u32) -> Spec {
        Spec {
            kind: Kind::of(run.command),
            workload: run.workload.name().to_string(),
            vary,
            repeat,
            args: run.option_args(),
            load_once: None,
        }
    }

    /// Refuse what cannot make a sweep, before any run.
    pub fn validate(&self) -> Result<(), String> {
        if !ALL.contains(&self.workload.as_str()) {
            return Err(format!(
                "unknown workload '{}' (micro, tpcb, tpcc, tpce, tpch or chbench)",
                self.workload
            ));
        }
        if self.repeat == 0 {
            return Err("--repeat must be at least 1".into());
        }
        for (i, v) in self.vary.iter().enumerate() {
            self.validate_vary(&self.vary[..i], v)?;
        }
        self.validate_load_once()?;
        for a in &self.args {
            for own in [flag::OUT, flag::JSON, flag::PROGRESS_FILE] {
                if runspec::gives(std::slice::from_ref(a), own) {
                    return Err(format!(
                        "{own}: the sweep chooses where each run writes (give the sweep --out DIR)"
                    ));
                }
            }
        }
        let runs = self.points().len() * self.repeat as usize;
        if runs > MAX_RUNS {
            return Err(format!(
                "the sweep has {runs} runs, more than the {MAX_RUNS} accepted"
            ));
        }
        Ok(())
    }

    /// Refuse a varied key that cannot be swept (`earlier`: the keys before it).
    fn validate_vary(&self, earlier: &[Vary], v: &Vary) -> Result<(), String> {
        if earlier
            .iter()
            .any(|u| u.key == v.key || key(&u.key) == key(&v.key))
        {
            return Err(format!("--vary {}: the key is varied twice", v.key));
        }
        if let Some(why) = refused_for(&v.key, self.kind) {
            return Err(format!(
                "--vary {}: not a key of `{}` sweeps ({why})",
                v.key,
                self.kind.as_str()
            ));
        }
        if let Some(Key::Cache { level }) = key(&v.key) {
            let flag = cache_flag(level);
            if runspec::gives(&self.args, flag) {
                return Err(format!(
                    "{flag} is both varied (--vary {}) and given for every run",
                    v.key
                ));
            }
            for x in &v.values {
                cache_level_spec(&self.args, level, x)
                    .map_err(|e| format!("--vary {}: {e}", v.key))?;
            }
        }
        if let Some(Key::Flag {
            flag, workloads, ..
        }) = key(&v.key)
        {
            if !workloads.contains(&self.workload.as_str()) {
                return Err(format!(
                    "--vary {}: {flag} is not an option of {} (it is of {})",
                    v.key,
                    self.workload,
                    workloads.join(", ")
                ));
            }
            if runspec::gives(&self.args, flag) {
                return Err(format!(
                    "{flag} is both varied (--vary {}) and given for every run",
                    v.key
                ));
            }
        }
        if axis(&v.key) != Axis::Category {
            if let Some(bad) = v.values.iter().find(|x| numeric(&v.key, x).is_none()) {
                return Err(format!("--vary {}: '{bad}' is not a number", v.key));
            }
        }
        if matches!(key(&v.key), Some(Key::Bandwidth { .. }))
            && v.values.iter().any(|x| numeric(&v.key, x) == Some(0.0))
        {
            return Err(format!(
                "--vary {}: a bandwidth of 0 is no limit to the kernel: give bytes per second above 0",
                v.key
            ));
        }
        for (j, x) in v.values.iter().enumerate() {
            if v.values[..j].contains(x) {
                return Err(format!("--vary {}: the value {x} is given twice", v.key));
            }
        }
        // Each value as its field's type (a count a whole number, a category one of
        // its words), so a point the child would refuse fails the sweep before any run.
        if let Some(Key::Flag { .. }) = key(&v.key) {
            let mut scratch = RunSpec::new(self.kind.command(), Workload::named(&self.workload)?);
            for x in &v.values {
                set_field(&v.key, &mut scratch, x).map_err(|e| format!("--vary {}: {e}", v.key))?;
            }
        }
        Ok(())
    }

    /// Every point of the product, the last key varying fastest.
    pub fn points(&self) -> Vec<Point> {
        let mut pts = vec![Point { values: vec![] }];
        for v in &self.vary {
            pts = pts
                .into_iter()
                .flat_map(|p| {
                    v.values.iter().map(move |x| {
                        let mut q = p.clone();
                        q.values.push((v.key.clone(), x.clone()));
                        q
                    })
                })
                .collect();
        }
        pts
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// (key, value) in the order of the spec's keys.
    pub values: Vec<(String, String)>,
}

impl Point {
    /// Its directory name: `threads-1_size-1MB` (`base` when nothing varies).
    pub fn name(&self) -> String {
        if self.values.is_empty() {
            return "base".into();
        }
        self.values
            .iter()
            .map(|(k, v)| {
                let v: String = v
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '.' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                format!("{k}-{v}")
            })
            .collect::<Vec<_>>()
            .join("_")
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }

    /// The child's command line, writing into `out`: the sweep's options as given,
    /// then this point's values.
    pub fn child_spec(&self, spec: &Spec, out: &Path) -> RunSpec {
        let workload = Workload::named(&spec.workload).expect("validated with the spec");
        let mut s = RunSpec::new(spec.kind.command(), workload);
        s.extra = spec.args.clone();
        for (k, x) in &self.values {
            match key(k) {
                Some(Key::Flag { .. }) => {
                    set_field(k, &mut s, x).expect("validated with the spec");
                }
                Some(Key::Cache { level }) => {
                    let v =
                        cache_level_spec(&spec.args, level, x).expect("validated with the spec");
                    match level {
                        "l1i" => s.options.l1i = Some(v),
                        _ => s.options.llc = Some(v),
                    }
                }
                _ => {}
            }
        }
        s.options.out = Some(out.to_path_buf());
        s
    }

    /// The child's arguments (after the executable), writing into `out`.
    pub fn child_args(&self, spec: &Spec, out: &Path) -> Vec<String> {
        self.child_spec(spec, out).to_args()
    }

    /// [`Point::child_args`] of repetition `rep`: on its shape's database (or its copy
    /// of it: `LoadOnce::copy`), with `--no-load`, when the sweep loads once per shape.
    pub fn rep_args(&self, spec: &Spec, rep: u32, out: &Path) -> Vec<String> {
        let mut s = self.child_spec(spec, out);
        if let Some(db) = spec.shared_db(self) {
            let copy = spec.run_copy(self, rep);
            // The shape is checked once, after its last run (`check_shared`): a run's
            // own check read every row of it back (a 1GB disk-engine run took 38.2 s with
            // it, 9.6 without, session 67), and a row lost or torn by any run stays so.
            // A run on a copy checks it, as a run that loads its own: the copy is gone
            // after it.
            if copy.is_none() && !runspec::gives(&s.extra, flag::NO_CHECK) {
                s.options.no_check = true;
            }
            s.options.db = Some(copy.unwrap_or(db));
            s.options.no_load = true;
            // As warm as after its load (`shapes::prewarms`); the engine varied, or
            // given to every run (the sweep's own options).
            let engine = (s.options.engine.as_deref())
                .or_else(|| runspec::values_of(&s.extra, flag::ENGINE).last().copied());
            if prewarms(engine) && !runspec::gives(&s.extra, PREWARM) {
                s.extra.push(PREWARM.to_string());
            }
        }
        s.to_args()
    }
}

/// The `SIZE:WAYS:LINE:LATENCY` of a simulated level of `size`, the rest of its geometry
/// from the CPU preset the runs' options name (`--cpu`, else the simulator's default).
/// The ways are the preset's when they divide the size into a power-of-two number of
/// sets, else the most ways below that do (a 20-way 20 MB LLC shrunk to 1 MB is 16-way):
/// the spec, with its ways, is in each point's command line and manifest. Checked as the
/// simulator checks its options, so a size it would refuse fails the sweep before any
/// run.
pub fn cache_level_spec(args: &[String], level: &str, size: &str) -> Result<String, String> {
    let cpu = runspec::values_of(args, flag::CPU)
        .first()
        .map_or_else(|| DEFAULT_CPU.to_string(), |c| c.to_string());
    let mut cfg = cachesim::Config::preset(&cpu)?;
    let base = match level {
        "l1i" => cfg.l1i,
        _ => cfg
            .llc
            .ok_or_else(|| format!("the preset {cpu} has no last-level cache"))?,
    };
    let bytes = cachesim::config::parse_size(size)?;
    let lines = bytes / base.line_bytes as u64;
    let ways = (1..=base.ways)
        .rev()
        .find(|&w| lines.is_multiple_of(w as u64) && (lines / w as u64).is_power_of_two())
        .unwrap_or(base.ways);
    let spec = cachesim::config::LevelConfig {
        size_bytes: bytes,
        ways,
        ..base
    }
    .spec();
    cfg.set_level(level, &spec)?;
    cfg.validate()?;
    Ok(spec)
}

/// The option of a simulated cache level (`l1i`, `llc`).
fn cache_flag(level: &str) -> &'static str {
    match level {
        "l1i" => flag::L1I,
        _ => flag::LLC,
    }
}

/// The simulator's preset when `--cpu` is not given (`simulate --help`).
pub const DEFAULT_CPU: &str = "xeon-e5-2660";

/// What happened to one repetition.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Already complete in the directory: not run again.
    Skipped,
    Done,
    Failed(String),
}

/// Events for the caller to show.
pub enum Event<'a> {
    Start {
        point: &'a str,
        rep: u32,
    },
    Finished {
        point: &'a str,
        rep: u32,
        outcome: &'a Outcome,
        /// The repetition's main figure, as text (throughput, or stall cycles and MPKI).
        headline: Option<String>,
        /// Its own seconds, from holding its lanes to its end (None: found done).
        seconds: Option<f64>,
    },
    /// A data shape loaded into its shared database (`Spec::load_once`).
    Loaded {
        shape: &'a str,
        seconds: f64,
    },
    /// A shared database checked after its runs (`check_shared`): its checks passed.
    Checked {
        shape: &'a str,
        seconds: f64,
    },
}

/// How the sweep's directory is taken: new, or the same sweep to resume.
fn open_dir(dir: &Path, spec: &Spec) -> Result<(), String> {
    let spec_path = dir.join(SPEC);
    let text = serde_json::to_string_pretty(spec).expect("specs serialize") + "\n";
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_none() {
                return std::fs::write(&spec_path, text)
                    .map_err(|e| format!("cannot write {}: {e}", spec_path.display()));
            }
            let old = std::fs::read_to_string(&spec_path).map_err(|_| {
                format!(
                    "--out {}: the directory holds other files and no {SPEC}: not a sweep of oltpscope (choose a new directory)",
                    dir.display()
                )
            })?;
            let old: Spec = serde_json::from_str(&old).map_err(|e| {
                format!("{}: damaged ({e}): refusing to resume", spec_path.display())
            })?;
            if &old != spec {
                return Err(format!(
                    "--out {}: holds a different sweep (its {SPEC} differs): choose a new directory to run this one",
                    dir.display()
                ));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!("--out {}: cannot create the directory: {e}", dir.display())
            })?;
            std::fs::write(&spec_path, text)
                .map_err(|e| format!("cannot write {}: {e}", spec_path.display()))
        }
        Err(e) => Err(format!("--out {}: {e}", dir.display())),
    }
}

/// A repetition's directory, and its partial twin.
pub fn rep_dir(dir: &Path, point: &Point, rep: u32) -> (PathBuf, PathBuf) {
    let p = dir.join(POINTS).join(point.name());
    (
        p.join(format!("rep{rep}")),
        p.join(format!("rep{rep}.partial")),
    )
}

/// Has this repetition to run? Ok(false): complete already. A leftover partial
/// directory holding only results files is removed (a killed run's); anything else is
/// refused.
pub fn needs_run(dir: &Path, point: &Point, rep: u32) -> Result<bool, String> {
    let (done, partial) = rep_dir(dir, point, rep);
    if done.exists() {
        if results::is_complete(&done) {
            return Ok(false);
        }
        return Err(format!(
            "{}: a repetition directory without a complete manifest: damaged or not ours, refusing to touch it (remove it to rerun that repetition)",
            done.display()
        ));
    }
    if partial.exists() {
        if !results::only_our_files(&partial)? {
            return Err(format!(
                "{}: holds files a run does not write: refusing to remove it",
                partial.display()
            ));
        }
        std::fs::remove_dir_all(&partial)
            .map_err(|e| format!("cannot remove {}: {e}", partial.display()))?;
    }
    Ok(true)
}

/// The cgroup hierarchies a sweep's keys need, found once before any run: what cannot
/// be controlled here refuses the sweep in one line.
#[derive(Debug, Default)]
pub struct Controls {
    cpuset: Option<cgroup::Hierarchy>,
    blkio: Option<cgroup::Hierarchy>,
    /// The block devices holding the runs' database and log directories.
    devices: Vec<(u32, u32)>,
}

/// The directories a run of `args` keeps its database and log in: `--db`, `--log-dir`,
/// else the temporary directory the run makes its database in.
pub fn data_dirs(args: &[String]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [flag::DB, flag::LOG_DIR]
        .iter()
        .flat_map(|f| runspec::values_of(args, f))
        .map(PathBuf::from)
        .collect();
    if !runspec::gives(args, flag::DB) {
        v.push(std::env::temp_dir());
    }
    v
}

impl Controls {
    /// Find what `spec`'s keys need (nothing when it varies neither cores nor bandwidth).
    pub fn for_spec(spec: &Spec) -> Result<Controls, String> {
        let uses = |f: fn(Key) -> bool| spec.vary.iter().find(|v| key(&v.key).is_some_and(f));
        let mut c = Controls::default();
        if uses(|k| k == Key::Cores).is_none()
            && uses(|k| matches!(k, Key::Bandwidth { .. })).is_none()
        {
            return Ok(c);
        }
        let mi = std::fs::read_to_string(cgroup::MOUNTINFO)
            .map_err(|e| format!("cannot read {}: {e}", cgroup::MOUNTINFO))?;
        if uses(|k| k == Key::Cores).is_some() {
            let h = cgroup::find("cpuset", &mi).ok_or(
                "--vary cores: cores cannot be controlled here: no cgroup v1 cpuset hierarchy and no cgroup v2 hierarchy with the cpuset controller",
            )?;
            h.probe("cpuset")
                .map_err(|e| format!("--vary cores: cores cannot be controlled here: {e}"))?;
            h.remove_stale();
            c.cpuset = Some(h);
        }
        if let Some(v) = uses(|k| matches!(k, Key::Bandwidth { .. })) {
            let h = cgroup::find("blkio", &mi).ok_or_else(|| format!(
                "--vary {}: storage bandwidth cannot be controlled here: no cgroup v1 blkio hierarchy and no cgroup v2 hierarchy with the io controller",
                v.key
            ))?;
            h.probe("io").map_err(|e| {
                format!(
                    "--vary {}: storage bandwidth cannot be controlled here: {e}",
                    v.key
                )
            })?;
            h.remove_stale();
            for d in data_dirs(&spec.args) {
                let dev = cgroup::device_of(&d, &mi, Path::new(cgroup::SYSFS)).map_err(|e| {
                    format!(
                        "--vary {}: storage bandwidth cannot be controlled here: {e}",
                        v.key
                    )
                })?;
                if !c.devices.contains(&dev) {
                    c.devices.push(dev);
                }
            }
            c.blkio = Some(h);
        }
        Ok(c)
    }

    /// The groups confining one repetition of `point`, made and configured, and which
    /// of them throttles its storage; the child joins them before it executes. Removed
    /// when dropped.
    fn groups(
        &self,
        point: &Point,
        rep: u32,
    ) -> Result<(Vec<cgroup::Group>, Option<usize>), String> {
        let tag = format!("{}-{rep}", point.name());
        let mut gs = Vec::new();
        if let (Some(h), Some(n)) = (&self.cpuset, point.get("cores")) {
            let n: u32 = n
                .parse()
                .map_err(|_| format!("cores={n}: not a number of cores"))?;
            let g = h.create("cpuset", &tag)?;
            h.set_cores(&g, n)?;
            gs.push(g);
        }
        if let Some(h) = &self.blkio {
            let mut g = None;
            for (k, x) in &point.values {
                let Some(Key::Bandwidth { write }) = key(k) else {
                    continue;
                };
                let bps = numeric(k, x).expect("validated as a size") as u64;
                if g.is_none() {
                    g = Some(h.create("io", &tag)?);
                }
                h.set_bandwidth(g.as_ref().expect("made above"), &self.devices, write, bps)?;
            }
            if let Some(g) = g {
                gs.push(g);
                let i = gs.len() - 1;
                return Ok((gs, Some(i)));
            }
        }
        Ok((gs, None))
    }

    /// Lift the storage throttle of `group` (one of [`Controls::groups`]').
    fn lift(&self, group: &cgroup::Group) -> Result<(), String> {
        match &self.blkio {
            Some(h) => h.lift_bandwidth(group, &self.devices),
            None => Ok(()),
        }
    }
}

/// Run one repetition: the child writes into the partial directory, renamed when done.
///
/// A measured repetition (`measured`: its share of the machine) runs gated: its child
/// stops at its gate after its load, and the sweep gives the go once it holds every lane
/// and the page cache is written back (`sync`: a load's or a neighbour's close's dirty
/// pages would otherwise be written during the window). The go and window-end times go
/// to the repetition's `gate.txt`.
fn run_rep(
    exe: &Path,
    dir: &Path,
    spec: &Spec,
    controls: &Controls,
    point: &Point,
    rep: u32,
    share: &mut Share<'_>,
) -> Result<Outcome, String> {
    let (done, partial, args) = rep_command(dir, spec, point, rep)?;
    let mut cmd = Command::new(exe);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let gated = share.measured().is_some();
    if gated {
        cmd.env(driver::gate::ENV, "stdin").stdin(Stdio::piped());
    } else {
        crate::lanes::lower_priority(&mut cmd);
    }
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe and touches no memory of ours. A sweep
        // killed (Ctrl-C, a SLURM time limit) takes its running child with it instead
        // of leaving it to finish a repetition no one will collect.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
    let (groups, io) = match controls.groups(point, rep) {
        Ok(g) => {
            cgroup::join_before_exec(&g.0, &mut cmd)?;
            g
        }
        Err(e) => return Ok(Outcome::Failed(e)),
    };
    // A throttled run's throttle holds from its start (its open, its warm-up) to the end
    // of its measured window; what follows (the engine's close and its checkpoint, the
    // consistency checks) measures nothing and runs unthrottled: at 1MB/s the close's
    // writes took 17 of the point's 30 s (session 64).
    let end = io.and(window_end(&args));
    let lift = || match io {
        Some(i) => controls.lift(&groups[i]),
        None => Ok(()),
    };
    let (out, gate) = output_watched(cmd, end, lift, share)
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message")
            .trim()
            .to_string();
        // The child removes a results directory it created when it fails; what it left
        // (a crash) is ours to remove only if it holds results files alone.
        if partial.exists() && results::only_our_files(&partial)? {
            let _ = std::fs::remove_dir_all(&partial);
        }
        return Ok(Outcome::Failed(last));
    }
    if !results::is_complete(&partial) {
        return Ok(Outcome::Failed(format!(
            "the run succeeded but {} is not a complete results directory",
            partial.display()
        )));
    }
    if gated && !gate.iter().any(|g| g.window_end.is_some()) {
        // Its window ran holding one lane only: not a measurement of this sweep.
        return Ok(Outcome::Failed(
            "the run never stopped at its gate: its window was not run alone".into(),
        ));
    }
    let gate_text: String = gate.iter().map(GateTimes::line).collect();
    let mut files: Vec<(&str, &[u8])> =
        vec![("stdout.txt", &out.stdout), ("stderr.txt", &out.stderr)];
    if gated {
        files.push((results::GATE, gate_text.as_bytes()));
    }
    finish_rep(&partial, &done, &files)
}

/// Write a finished repetition's own files into its `partial` directory and rename it
/// to `done` (a killed sweep leaves no directory that looks finished).
pub(crate) fn finish_rep(
    partial: &Path,
    done: &Path,
    files: &[(&str, &[u8])],
) -> Result<Outcome, String> {
    for (name, bytes) in files {
        std::fs::write(partial.join(name), bytes)
            .map_err(|e| format!("cannot write {}: {e}", partial.join(name).display()))?;
    }
    std::fs::rename(partial, done).map_err(|e| {
        format!(
            "cannot rename {} to {}: {e}",
            partial.display(),
            done.display()
        )
    })?;
    Ok(Outcome::Done)
}

/// Repetition `rep` of `p`: its directory, the partial directory it runs into (its
/// point's directory made) and its child's arguments.
pub(crate) fn rep_command(
    dir: &Path,
    spec: &Spec,
    p: &Point,
    rep: u32,
) -> Result<(PathBuf, PathBuf, Vec<String>), String> {
    let (done, partial) = rep_dir(dir, p, rep);
    let parent = partial
        .parent()
        .expect("a repetition has a point directory");
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let args = p.rep_args(spec, rep, &partial);
    Ok((done, partial, args))
}

/// Seconds from a run's start to the end of its measured window (its `--warmup` and
/// `--duration`); None for a run stopped otherwise (`--txns`) or not given both.
fn window_end(args: &[String]) -> Option<f64> {
    let secs = |f: &str| {
        runspec::values_of(args, f)
            .last()
            .and_then(|v| v.parse::<f64>().ok())
    };
    if runspec::gives(args, "--txns") {
        return None;
    }
    Some(secs("--warmup")? + secs("--duration")?)
}

/// Whether a run's progress line says its measured window ended at `end` seconds: its
/// last line, `[   2.5s] measure ...`, printed once the window is over.
fn window_closed(line: &str, end: f64) -> bool {
    let Some((at, rest)) = line
        .trim_start()
        .strip_prefix('[')
        .and_then(|l| l.split_once(']'))
    else {
        return false;
    };
    let at = at
        .trim()
        .strip_suffix('s')
        .and_then(|t| t.parse::<f64>().ok());
    rest.trim_start().starts_with("measure") && at.is_some_and(|t| t >= end - 0.05)
}

/// One gated window of a repetition: when the go was given (after `sync_s` seconds of
/// `sync`) and when the child said its window ended, as seconds since the Unix epoch, and
/// how many processes it stopped.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateTimes {
    pub(crate) go: f64,
    pub(crate) sync_s: f64,
    pub(crate) window_end: Option<f64>,
    /// Processes (lane work's and closes', with their descendants) stopped for it.
    pub(crate) stopped: usize,
}

impl GateTimes {
    pub(crate) fn line(&self) -> String {
        let end = self.window_end.map_or("none".into(), |e| format!("{e:.3}"));
        format!(
            "go {:.3} window_end {end} sync_s {:.3} stopped {}\n",
            self.go, self.sync_s, self.stopped
        )
    }
}

pub(crate) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `cmd.output()` for a repetition's child holding `share`, watching its stderr: `lift`
/// once it says its measured window ended at `end` seconds (a throttled run), and for a
/// gated run (a measured share) the go given at each `gate: ready` once its window holds
/// the machine, and the window ended at each `gate: window ended`.
fn output_watched(
    mut cmd: Command,
    end: Option<f64>,
    lift: impl FnOnce() -> Result<(), String> + Send,
    share: &mut Share<'_>,
) -> std::io::Result<(std::process::Output, Vec<GateTimes>)> {
    use std::io::{BufRead, Write};
    let mut child = cmd.spawn()?;
    share.spawned(child.id());
    let lanes = share.lanes();
    let mut measured = share.measured();
    let err = child.stderr.take().expect("stderr is piped");
    let mut gate_in = child.stdin.take();
    std::thread::scope(|sc| {
        let reader = sc.spawn(move || {
            let (mut r, mut all, mut lift) = (std::io::BufReader::new(err), Vec::new(), Some(lift));
            let mut gate = Vec::new();
            loop {
                let from = all.len();
                match r.read_until(b'\n', &mut all) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let line = String::from_utf8_lossy(&all[from..]).trim().to_string();
                if let (Some(m), Some(input)) = (measured.as_deref_mut(), gate_in.as_mut()) {
                    if line == driver::gate::READY {
                        m.ready();
                        let t = std::time::Instant::now();
                        // SAFETY: sync takes no argument and cannot fail.
                        unsafe { libc::sync() };
                        let sync_s = t.elapsed().as_secs_f64();
                        gate.push(GateTimes {
                            go: unix_now(),
                            sync_s,
                            window_end: None,
                            stopped: m.stopped(),
                        });
                        // A child gone already fails on its own; nothing to give.
                        let _ = input.write_all(b"go\n").and_then(|()| input.flush());
                    } else if line == driver::gate::WINDOW_ENDED {
                        m.window_ended();
                        if let Some(g) = gate.last_mut() {
                            g.window_end = Some(unix_now());
                        }
                    }
                }
                let closed = end.is_some_and(|e| window_closed(&line, e))
                    || (end.is_some() && line == driver::gate::WINDOW_ENDED);
                if lift.is_some() && closed {
                    // A failed lift leaves the rest throttled: slower, the figures the same.
                    let _ = (lift.take().expect("checked"))();
                }
            }
            // The child's stdin closes with the reader: a child still at its gate ends.
            drop(gate_in);
            (all, gate)
        });
        // Read beside stderr: a child blocked on a full stdout pipe would never end.
        let out = child.stdout.take();
        let out_reader = sc.spawn(move || {
            let mut stdout = Vec::new();
            if let Some(mut o) = out {
                use std::io::Read;
                let _ = o.read_to_end(&mut stdout);
            }
            stdout
        });
        let status = crate::lanes::wait_child(&mut child, lanes);
        let stdout = out_reader.join().expect("the stdout reader does not panic");
        let (stderr, gate) = reader.join().expect("the stderr reader does not panic");
        status.map(|status| {
            (
                std::process::Output {
                    status,
                    stdout,
                    stderr,
                },
                gate,
            )
        })
    })
}

/// A hybrid run's analytical queries per hour, from its report: the `analytic_queries`
/// counter (queries finished in the measured time) over `duration_s`.
fn queries_per_hour(r: &serde_json::Value) -> Option<f64> {
    let q = r.get("counters")?.get("analytic_queries")?.as_f64()?;
    let d = r.get("duration_s")?.as_f64().filter(|d| *d > 0.0)?;
    Some(q / d * 3600.0)
}

/// One point's figures over its repetitions.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PointSummary {
    pub name: String,
    pub values: Vec<(String, String)>,
    pub reps_done: u32,
    pub reps_failed: u32,
    /// The last failure's message, if any repetition failed.
    pub error: Option<String>,
    pub throughput_tps: Option<Spread>,
    pub abort_rate: Option<Spread>,
    pub latency_p99_us: Option<Spread>,
    /// Analytical queries per hour of a hybrid run (`chbench`, `tpce --analytics N`:
    /// the report's `analytic_queries` counter over its measured time); None elsewhere.
    /// Its transactions are `throughput_tps`, which counts the queries too (a few in
    /// tens of thousands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries_per_hour: Option<Spread>,
    /// The figures of a simulate sweep's point (None in run sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<SimFigures>,
    /// The figures of a profile sweep's point (None in other sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileFigures>,
    /// The workers' share of the measured time on CPU (the report's `worker_cpu_busy`)
    /// over the repetitions; None in simulate sweeps and where no thread clock exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_cpu_busy: Option<Spread>,
    /// The repetitions' spread of the point's main figure (`main_figure`): max / min;
    /// None with fewer than two repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_ratio: Option<f64>,
    /// Why the point's figure is noise rather than measurement (`reliability`); None
    /// when it is not flagged. Summaries older than the flag have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreliable: Option<String>,
}

/// A point whose repetitions' main figure spans more than this ratio (max / min) is
/// flagged unreliable: a 25% disagreement between repeats of one setting is larger
/// than most effects a sweep looks for.
pub const MAX_SPREAD_RATIO: f64 = 1.25;

/// A run point whose workers were on CPU less than this share of the measured time
/// (median over its repetitions) is flagged unreliable: the workers waited (disk,
/// locks) or something else took their cores, so its throughput measures the machine
/// as much as the engine (the README's "compare only runs near 100%").
pub const MIN_WORKER_CPU: f64 = 0.90;

/// The figure a point's repetitions are judged by: throughput for runs and profiles,
/// stall cycles per transaction for simulations.
pub fn main_figure(kind: Kind) -> &'static str {
    match kind {
        Kind::Run | Kind::Profile => "throughput_tps",
        Kind::Simulate => "stall_cycles_per_txn",
    }
}

/// The spread ratio of `p`'s main figure and, when the spread exceeds
/// `MAX_SPREAD_RATIO` or the workers' CPU share is under `MIN_WORKER_CPU`, the reason
/// the point is unreliable.
pub fn reliability(kind: Kind, p: &PointSummary) -> (Option<f64>, Option<String>) {
    let ratio = figure(p, main_figure(kind)).filter(|t| t.n >= 2).map(|t| {
        if t.min > 0.0 {
            t.max / t.min
        } else if t.max > 0.0 {
            f64::INFINITY
        } else {
            1.0
        }
    });
    let mut why = Vec::new();
    if let Some(r) = ratio.filter(|r| *r > MAX_SPREAD_RATIO) {
        why.push(format!(
            "repetitions spread {r:.2}x (max/min; bound {MAX_SPREAD_RATIO}x)"
        ));
    }
    if let Some(c) = p.worker_cpu_busy.filter(|c| c.median < MIN_WORKER_CPU) {
        why.push(format!(
            "workers on CPU {:.0}% (bound {:.0}%)",
            100.0 * c.median,
            100.0 * MIN_WORKER_CPU
        ));
    }
    (ratio, (!why.is_empty()).then(|| why.join("; ")))
}

/// A profiled point's figures over its repetitions: each share's median and spread
/// (medians are taken share by share, so with several repetitions they add up to about,
/// not exactly, 1).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProfileFigures {
    /// CPU samples taken on the workers.
    pub samples: Option<Spread>,
    /// The workers' own reading of their samples, over their measured time.
    pub read_overhead: Option<Spread>,
    /// Share of the samples per storage-manager component, in the component map's order
    /// (A-to-E's Figure 1).
    pub components: Vec<ShareFigure>,
    /// Per transaction type: its share of the samples and its own components' shares.
    pub txn_types: Vec<TxnFigures>,
    /// The lock manager's time as shares of the workers' measured time (A-to-E's Figure
    /// 2); None where the engine has no lock manager.
    pub lock_split: Option<LockSplitFigures>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShareFigure {
    pub name: String,
    pub share: Option<Spread>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TxnFigures {
    /// As the report names it (`new_order`; `(no transaction)` for the driver's time
    /// between transactions).
    pub name: String,
    pub share: Option<Spread>,
    pub components: Vec<ShareFigure>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LockSplitFigures {
    /// The locking work (CPU samples in the lock component x the workers' CPU share).
    pub lock: Option<Spread>,
    /// Waiting for a lock entry's latch (physical contention).
    pub lock_pc: Option<Spread>,
    /// Waiting for a conflicting lock (logical contention).
    pub lock_lc: Option<Spread>,
}

/// The lock split's parts: (report field, label as A-to-E's Figure 2 names it).
pub const LOCK_SPLIT: [(&str, &str); 3] = [
    ("lock", "Lock"),
    ("lock_pc", "Lock-PC"),
    ("lock_lc", "Lock-LC"),
];

/// A simulated point's figures over its repetitions.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimFigures {
    pub instructions_per_txn: Option<Spread>,
    /// Total stall cycles (misses x next level's latency, all levels) per transaction.
    pub stall_cycles_per_txn: Option<Spread>,
    /// Per cache level, in the report's order (L1-I, L1-D, L2, LLC).
    pub levels: Vec<LevelFigures>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LevelFigures {
    /// As the report names it: `L1-I`, `L1-D`, `L2`, `LLC`.
    pub level: String,
    /// Misses (instruction and data) per 1000 instructions.
    pub mpki: Option<Spread>,
    pub misses_per_txn: Option<Spread>,
    pub stall_cycles_per_txn: Option<Spread>,
}

/// A level's name in figure names: `L1-I` -> `l1i`.
pub fn level_key(level: &str) -> String {
    level.to_ascii_lowercase().replace('-', "")
}

/// One simulated repetition's figures, from its report's `simulation`.
#[derive(Debug, Clone, Default)]
struct SimRep {
    instructions_per_txn: Option<f64>,
    stall_cycles_per_txn: Option<f64>,
    levels: Vec<LevelRep>,
}

/// (level, MPKI, misses per txn, stall cycles per txn) of one repetition.
type LevelRep = (String, f64, Option<f64>, Option<f64>);

/// Which of a spread a summary column shows.
type Pick = fn(&Spread) -> f64;

fn sim_rep(report: &serde_json::Value) -> Option<SimRep> {
    let sim = report.get("simulation")?;
    let f = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    let txns = f(sim, "transactions").filter(|t| *t > 0.0);
    let per_txn = |x: Option<f64>| Some(x? / txns?);
    let mut levels = Vec::new();
    for l in sim.get("levels")?.as_array()? {
        let name = l.get("name")?.as_str()?.to_string();
        let mpki = l.get("mpki").and_then(|m| f(m, "total"))?;
        let misses = l.get("misses").and_then(|m| f(m, "total"));
        let stall = l.get("stall_cycles").and_then(|m| f(m, "total"));
        levels.push((name, mpki, per_txn(misses), per_txn(stall)));
    }
    Some(SimRep {
        instructions_per_txn: per_txn(f(sim, "instructions")),
        stall_cycles_per_txn: per_txn(f(sim, "total_stall_cycles")),
        levels,
    })
}

fn sim_figures(reps: &[SimRep]) -> SimFigures {
    let col = |g: &dyn Fn(&SimRep) -> Option<f64>| {
        Spread::of(&reps.iter().filter_map(g).collect::<Vec<_>>())
    };
    let mut names: Vec<String> = Vec::new();
    for r in reps {
        for l in &r.levels {
            if !names.contains(&l.0) {
                names.push(l.0.clone());
            }
        }
    }
    let level = |n: &String, pick: fn(&LevelRep) -> Option<f64>| {
        col(&|r: &SimRep| r.levels.iter().find(|l| l.0 == *n).and_then(pick))
    };
    SimFigures {
        instructions_per_txn: col(&|r| r.instructions_per_txn),
        stall_cycles_per_txn: col(&|r| r.stall_cycles_per_txn),
        levels: names
            .iter()
            .map(|n| LevelFigures {
                level: n.clone(),
                mpki: level(n, |l| Some(l.1)),
                misses_per_txn: level(n, |l| l.2),
                stall_cycles_per_txn: level(n, |l| l.3),
            })
            .collect(),
    }
}

/// One profiled repetition's figures, from its report's `profile`.
#[derive(Debug, Clone, Default)]
struct ProfRep {
    samples: f64,
    read_overhead: Option<f64>,
    /// (component, share)
    components: Vec<(String, f64)>,
    /// (type, share, [(component, share)])
    txn_types: Vec<TxnRep>,
    /// Lock, Lock-PC, Lock-LC.
    lock_split: Option<[f64; 3]>,
}

/// (transaction type, its share, [(component, share of the type's samples)])
type TxnRep = (String, f64, Vec<(String, f64)>);

fn prof_rep(report: &serde_json::Value) -> Option<ProfRep> {
    let p = report.get("profile")?;
    let shares = |v: &serde_json::Value| -> Option<Vec<(String, f64)>> {
        v.as_array()?
            .iter()
            .map(|c| {
                Some((
                    c.get("name")?.as_str()?.to_string(),
                    c.get("share")?.as_f64()?,
                ))
            })
            .collect()
    };
    let txn_types = p
        .get("txn_types")?
        .as_array()?
        .iter()
        .map(|t| {
            Some((
                t.get("name")?.as_str()?.to_string(),
                t.get("share")?.as_f64()?,
                shares(t.get("components")?)?,
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    let lock_split = p.get("lock_split").and_then(|l| {
        let f = |k: &str| l.get(k)?.as_f64();
        Some([f("lock")?, f("lock_pc")?, f("lock_lc")?])
    });
    Some(ProfRep {
        samples: p.get("samples")?.as_f64()?,
        read_overhead: p.get("read_overhead").and_then(serde_json::Value::as_f64),
        components: shares(p.get("components")?)?,
        txn_types,
        lock_split,
    })
}

/// Names in order of first appearance over the repetitions.
fn names_of<'a>(lists: impl Iterator<Item = &'a [(String, f64)]>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for l in lists {
        for (n, _) in l {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

/// Each name's share over the repetitions that have it.
fn share_figures(names: &[String], lists: &[&[(String, f64)]]) -> Vec<ShareFigure> {
    names
        .iter()
        .map(|n| ShareFigure {
            name: n.clone(),
            share: Spread::of(
                &lists
                    .iter()
                    .filter_map(|l| l.iter().find(|(m, _)| m == n).map(|x| x.1))
                    .collect::<Vec<_>>(),
            ),
        })
        .collect()
}

fn prof_figures(reps: &[ProfRep]) -> ProfileFigures {
    let col = |g: &dyn Fn(&ProfRep) -> Option<f64>| {
        Spread::of(&reps.iter().filter_map(g).collect::<Vec<_>>())
    };
    let comps: Vec<&[(String, f64)]> = reps.iter().map(|r| r.components.as_slice()).collect();
    let mut types: Vec<String> = Vec::new();
    for r in reps {
        for t in &r.txn_types {
            if !types.contains(&t.0) {
                types.push(t.0.clone());
            }
        }
    }
    let txn_types = types
        .iter()
        .map(|n| {
            let of: Vec<&TxnRep> = reps
                .iter()
                .filter_map(|r| r.txn_types.iter().find(|t| t.0 == *n))
                .collect();
            let lists: Vec<&[(String, f64)]> = of.iter().map(|t| t.2.as_slice()).collect();
            TxnFigures {
                name: n.clone(),
                share: Spread::of(&of.iter().map(|t| t.1).collect::<Vec<_>>()),
                components: share_figures(&names_of(lists.iter().copied()), &lists),
            }
        })
        .collect();
    let split = |i: usize| col(&|r: &ProfRep| r.lock_split.map(|l| l[i]));
    ProfileFigures {
        samples: col(&|r| Some(r.samples)),
        read_overhead: col(&|r| r.read_overhead),
        components: share_figures(&names_of(comps.iter().copied()), &comps),
        txn_types,
        lock_split: reps
            .iter()
            .any(|r| r.lock_split.is_some())
            .then(|| LockSplitFigures {
                lock: split(0),
                lock_pc: split(1),
                lock_lc: split(2),
            }),
    }
}

/// A transaction type's name in figure and column names: `(no transaction)` ->
/// `no_transaction`.
pub fn txn_key(name: &str) -> String {
    let k: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    k.split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// A profile figure by name: `samples`, `read_overhead`, `component_<c>_share`,
/// `txn_<t>_share`, `txn_<t>_component_<c>_share`, `lock_split_<part>_share` (part
/// `lock`, `lock_pc`, `lock_lc`).
fn profile_figure(p: &ProfileFigures, name: &str) -> Option<Spread> {
    match name {
        "samples" => return p.samples,
        "read_overhead" => return p.read_overhead,
        _ => {}
    }
    let comp = |list: &[ShareFigure], rest: &str| {
        let c = rest.strip_prefix("component_")?.strip_suffix("_share")?;
        list.iter().find(|x| x.name == c)?.share
    };
    if let Some(rest) = name.strip_prefix("lock_split_") {
        let l = p.lock_split.as_ref()?;
        return match rest.strip_suffix("_share")? {
            "lock" => l.lock,
            "lock_pc" => l.lock_pc,
            "lock_lc" => l.lock_lc,
            _ => None,
        };
    }
    if name.starts_with("component_") {
        return comp(&p.components, name);
    }
    let rest = name.strip_prefix("txn_")?;
    p.txn_types.iter().find_map(|t| {
        let after = rest.strip_prefix(&txn_key(&t.name))?;
        if after == "_share" {
            t.share
        } else {
            comp(&t.components, after.strip_prefix('_')?)
        }
    })
}

/// A figure of a point by name: `throughput_tps`, `abort_rate`, `latency_p99_us`,
/// `instructions_per_txn`, `stall_cycles_per_txn`, `<level>_mpki`,
/// `<level>_misses_per_txn`, `<level>_stall_cycles_per_txn` (level `l1i`, `l1d`, `l2`,
/// `llc`); for profile sweeps, those of `profile_figure`.
pub fn figure(p: &PointSummary, name: &str) -> Option<Spread> {
    match name {
        "throughput_tps" => return p.throughput_tps,
        "abort_rate" => return p.abort_rate,
        "latency_p99_us" => return p.latency_p99_us,
        "worker_cpu_busy" => return p.worker_cpu_busy,
        "queries_per_hour" => return p.queries_per_hour,
        _ => {}
    }
    if let Some(prof) = &p.profile {
        return profile_figure(prof, name);
    }
    let sim = p.simulation.as_ref()?;
    match name {
        "instructions_per_txn" => return sim.instructions_per_txn,
        "stall_cycles_per_txn" => return sim.stall_cycles_per_txn,
        _ => {}
    }
    sim.levels.iter().find_map(|l| {
        let k = level_key(&l.level);
        let rest = name.strip_prefix(&k)?.strip_prefix('_')?;
        match rest {
            "mpki" => l.mpki,
            "misses_per_txn" => l.misses_per_txn,
            "stall_cycles_per_txn" => l.stall_cycles_per_txn,
            _ => None,
        }
    })
}

/// How a figure reads, for tables and axes.
pub fn figure_label(name: &str) -> String {
    match name {
        "throughput_tps" => "txn/s".into(),
        "abort_rate" => "abort rate".into(),
        "latency_p99_us" => "p99 latency (us)".into(),
        "queries_per_hour" => "queries/h".into(),
        "instructions_per_txn" => "instructions/txn".into(),
        "stall_cycles_per_txn" => "stall cycles/txn".into(),
        "samples" => "CPU samples".into(),
        "read_overhead" => "profiler's reading time".into(),
        _ if name.ends_with("_share") => {
            let n = name.strip_suffix("_share").expect("checked");
            if let Some(k) = n.strip_prefix("lock_split_") {
                let label = LOCK_SPLIT.iter().find(|x| x.0 == k).map_or(k, |x| x.1);
                return format!("{label} share of the workers' time");
            }
            let n = n.replace("_component_", " ");
            let n = n.strip_prefix("component_").unwrap_or(&n);
            format!("{} share of the samples", n.replace("txn_", ""))
        }
        _ => {
            for (suffix, what) in [
                ("_mpki", "MPKI"),
                ("_misses_per_txn", "misses/txn"),
                ("_stall_cycles_per_txn", "stall cycles/txn"),
            ] {
                if let Some(l) = name.strip_suffix(suffix) {
                    return format!("{} {what}", l.to_ascii_uppercase());
                }
            }
            name.into()
        }
    }
}

/// Is lower better for this figure? (Costs: misses, stall cycles, latency, aborts.)
pub fn lower_is_better(name: &str) -> bool {
    !matches!(name, "throughput_tps" | "queries_per_hour")
}

/// The figures curves are drawn and knees found on, for a sweep of `kind` over `key`.
pub fn curve_figures(kind: Kind, key: &str) -> Vec<String> {
    match kind {
        // Hybrid runs' queries per hour: a curve only where the points have them.
        Kind::Run | Kind::Profile => vec!["throughput_tps".into(), "queries_per_hour".into()],
        Kind::Simulate => match key {
            "llc" => vec!["llc_mpki".into(), "stall_cycles_per_txn".into()],
            "l1i" => vec!["l1i_mpki".into(), "stall_cycles_per_txn".into()],
            _ => vec!["stall_cycles_per_txn".into()],
        },
    }
}

/// Median, least and greatest of a figure over the repetitions.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }
}

/// A figure (throughput, or a simulated cost) over one numeric key, the other keys
/// fixed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Curve {
    pub over: String,
    /// The figure drawn (see `figure`); summaries older than simulate sweeps: throughput.
    #[serde(default = "throughput_name")]
    pub figure: String,
    /// Costs (simulated misses, stall cycles) are better low: the best is the least, and
    /// 90%/95% read as at most best / 0.90 (0.95).
    #[serde(default)]
    pub lower_is_better: bool,
    /// The other keys' values along this curve.
    pub fixed: Vec<(String, String)>,
    /// (resource value as given, as a number, median of the figure)
    pub points: Vec<(String, f64, f64)>,
    pub analysis: Option<Sufficiency>,
}

fn throughput_name() -> String {
    "throughput_tps".into()
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub spec: Spec,
    pub points: Vec<PointSummary>,
    pub curves: Vec<Curve>,
}

/// Read the finished repetitions of every point and summarize them.
pub fn summarize(
    dir: &Path,
    spec: &Spec,
    failures: &[(String, String)],
) -> Result<Summary, String> {
    let mut points = Vec::new();
    for p in spec.points() {
        let name = p.name();
        let (mut tps, mut ab, mut p99, mut cpu, mut qph) = (vec![], vec![], vec![], vec![], vec![]);
        let mut sims = Vec::new();
        let mut profs = Vec::new();
        let mut done = 0;
        for rep in 1..=spec.repeat {
            let (d, _) = rep_dir(dir, &p, rep);
            if !results::is_complete(&d) {
                continue;
            }
            let r = results::load_report(&d)?;
            if spec.kind == Kind::Profile {
                profs.push(prof_rep(&r).ok_or_else(|| {
                    format!(
                        "{}: a report without a profile's components and transaction types",
                        d.display()
                    )
                })?);
            }
            if spec.kind == Kind::Simulate {
                sims.push(sim_rep(&r).ok_or_else(|| {
                    format!(
                        "{}: a report without a simulation's levels and transactions",
                        d.display()
                    )
                })?);
                done += 1;
                continue;
            }
            let f = |k: &str| r.get(k).and_then(serde_json::Value::as_f64);
            let (Some(t), Some(a)) = (f("throughput_tps"), f("abort_rate")) else {
                return Err(format!(
                    "{}: a report without throughput_tps and abort_rate",
                    d.display()
                ));
            };
            tps.push(t);
            ab.push(a);
            if let Some(c) = f("worker_cpu_busy") {
                cpu.push(c);
            }
            if let Some(q) = queries_per_hour(&r) {
                qph.push(q);
            }
            if let Some(l) = r
                .get("latency_us")
                .and_then(|l| l.get("p99"))
                .and_then(serde_json::Value::as_f64)
            {
                p99.push(l);
            }
            done += 1;
        }
        let errs: Vec<&String> = failures
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, e)| e)
            .collect();
        let mut ps = PointSummary {
            name,
            values: p.values.clone(),
            reps_done: done,
            reps_failed: errs.len() as u32,
            error: errs.last().map(|e| e.to_string()),
            throughput_tps: Spread::of(&tps),
            abort_rate: Spread::of(&ab),
            latency_p99_us: Spread::of(&p99),
            queries_per_hour: Spread::of(&qph),
            simulation: (spec.kind == Kind::Simulate).then(|| sim_figures(&sims)),
            profile: (spec.kind == Kind::Profile).then(|| prof_figures(&profs)),
            worker_cpu_busy: Spread::of(&cpu),
            spread_ratio: None,
            unreliable: None,
        };
        (ps.spread_ratio, ps.unreliable) = reliability(spec.kind, &ps);
        points.push(ps);
    }
    let curves = curves(spec, &points);
    Ok(Summary {
        spec: spec.clone(),
        points,
        curves,
    })
}

/// A curve per numeric key, per figure of the sweep's kind over that key, and per
/// combination of the other keys' values.
pub fn curves(spec: &Spec, points: &[PointSummary]) -> Vec<Curve> {
    let mut out = Vec::new();
    for v in spec.vary.iter().filter(|v| axis(&v.key) != Axis::Category) {
        for fig in curve_figures(spec.kind, &v.key) {
            out.extend(curves_of(v, &fig, points));
        }
    }
    out
}

fn curves_of(v: &Vary, fig: &str, points: &[PointSummary]) -> Vec<Curve> {
    let lower = lower_is_better(fig);
    {
        let mut groups: Vec<Curve> = Vec::new();
        for p in points {
            let fixed: Vec<(String, String)> = p
                .values
                .iter()
                .filter(|(k, _)| *k != v.key)
                .cloned()
                .collect();
            let Some(val) = p
                .values
                .iter()
                .find(|(k, _)| *k == v.key)
                .map(|x| x.1.clone())
            else {
                continue;
            };
            let Some(t) = figure(p, fig) else { continue };
            let x = numeric(&v.key, &val).expect("validated as a number");
            match groups.iter_mut().find(|c| c.fixed == fixed) {
                Some(c) => c.points.push((val, x, t.median)),
                None => groups.push(Curve {
                    over: v.key.clone(),
                    figure: fig.to_string(),
                    lower_is_better: lower,
                    fixed,
                    points: vec![(val, x, t.median)],
                    analysis: None,
                }),
            }
        }
        for c in &mut groups {
            c.points.sort_by(|a, b| a.1.total_cmp(&b.1));
            let xy: Vec<(f64, f64)> = c.points.iter().map(|p| (p.1, p.2)).collect();
            c.analysis = if lower {
                knee::analyse_cost(&xy)
            } else {
                knee::analyse(&xy)
            };
        }
        groups
    }
}

/// Write `summary.csv` and `summary.json`.
pub fn write_summary(dir: &Path, s: &Summary) -> Result<(), String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = s.spec.vary.iter().map(|v| v.key.clone()).collect();
    header.insert(0, "point".into());
    header.extend(["reps_done".into(), "reps_failed".into()]);
    // (column, figure, which of its spread)
    let mut cols: Vec<(String, String, Pick)> = Vec::new();
    let median: Pick = |t| t.median;
    let (min, max): (Pick, Pick) = (|t| t.min, |t| t.max);
    match s.spec.kind {
        Kind::Run | Kind::Profile => {
            for (fig, which) in [
                ("throughput_tps", "median"),
                ("throughput_tps", "min"),
                ("throughput_tps", "max"),
                ("abort_rate", "median"),
                ("latency_p99_us", "median"),
            ] {
                let pick = match which {
                    "min" => min,
                    "max" => max,
                    _ => median,
                };
                cols.push((format!("{fig}_{which}"), fig.into(), pick));
            }
            for (which, pick) in [("median", median), ("min", min)] {
                cols.push((
                    format!("worker_cpu_busy_{which}"),
                    "worker_cpu_busy".into(),
                    pick,
                ));
            }
            if s.points.iter().any(|p| p.queries_per_hour.is_some()) {
                cols.push((
                    "queries_per_hour_median".into(),
                    "queries_per_hour".into(),
                    median,
                ));
            }
            if s.spec.kind == Kind::Profile {
                cols.extend(profile_columns(&s.points));
            }
        }
        Kind::Simulate => {
            for (fig, pick, which) in [
                ("stall_cycles_per_txn", median, "median"),
                ("stall_cycles_per_txn", min, "min"),
                ("stall_cycles_per_txn", max, "max"),
                ("instructions_per_txn", median, "median"),
            ] {
                cols.push((format!("{fig}_{which}"), fig.into(), pick));
            }
            let mut levels: Vec<String> = Vec::new();
            for p in &s.points {
                for l in p.simulation.iter().flat_map(|m| &m.levels) {
                    let k = level_key(&l.level);
                    if !levels.contains(&k) {
                        levels.push(k);
                    }
                }
            }
            for l in levels {
                for f in ["mpki", "misses_per_txn", "stall_cycles_per_txn"] {
                    cols.push((format!("{l}_{f}_median"), format!("{l}_{f}"), median));
                }
            }
        }
    }
    header.extend(cols.iter().map(|c| c.0.clone()));
    header.extend(["spread_ratio".into(), "unreliable".into(), "error".into()]);
    let err = |e: csv::Error| format!("cannot write {SUMMARY_CSV}: {e}");
    w.write_record(&header).map_err(err)?;
    let f = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_default();
    for p in &s.points {
        let mut rec = vec![p.name.clone()];
        rec.extend(p.values.iter().map(|(_, v)| v.clone()));
        rec.extend([p.reps_done.to_string(), p.reps_failed.to_string()]);
        for (_, fig, pick) in &cols {
            rec.push(f(figure(p, fig).map(|t| pick(&t))));
        }
        rec.push(f(p.spread_ratio.filter(|r| r.is_finite())));
        rec.push(p.unreliable.clone().unwrap_or_default());
        rec.push(p.error.clone().unwrap_or_default());
        w.write_record(&rec).map_err(err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| format!("cannot write {SUMMARY_CSV}: {e}"))?;
    let write = |name: &str, b: &[u8]| {
        std::fs::write(dir.join(name), b)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()))
    };
    write(SUMMARY_CSV, &bytes)?;
    let json = serde_json::to_string_pretty(s).expect("summaries serialize") + "\n";
    write(SUMMARY_JSON, json.as_bytes())
}

/// A profile sweep's columns: samples and reading overhead, each component's share
/// (median, min, max), the lock split, then per transaction type its share and its
/// components' (medians). Components no point sampled are left out.
fn profile_columns(points: &[PointSummary]) -> Vec<(String, String, Pick)> {
    let median: Pick = |t| t.median;
    let (min, max): (Pick, Pick) = (|t| t.min, |t| t.max);
    let profs: Vec<&ProfileFigures> = points.iter().filter_map(|p| p.profile.as_ref()).collect();
    let sampled = |list: &[&[ShareFigure]]| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for l in list {
            for c in l.iter() {
                if c.share.is_some_and(|t| t.max > 0.0) && !v.contains(&c.name) {
                    v.push(c.name.clone());
                }
            }
        }
        v
    };
    let mut cols: Vec<(String, String, Pick)> = vec![
        ("samples_median".into(), "samples".into(), median),
        (
            "read_overhead_median".into(),
            "read_overhead".into(),
            median,
        ),
    ];
    let all: Vec<&[ShareFigure]> = profs.iter().map(|p| p.components.as_slice()).collect();
    for c in sampled(&all) {
        let fig = format!("component_{c}_share");
        for (which, pick) in [("median", median), ("min", min), ("max", max)] {
            cols.push((format!("{fig}_{which}"), fig.clone(), pick));
        }
    }
    if profs.iter().any(|p| p.lock_split.is_some()) {
        for (k, _) in LOCK_SPLIT {
            let fig = format!("lock_split_{k}_share");
            cols.push((format!("{fig}_median"), fig, median));
        }
    }
    let mut types: Vec<String> = Vec::new();
    for p in &profs {
        for t in &p.txn_types {
            if !types.contains(&t.name) {
                types.push(t.name.clone());
            }
        }
    }
    for t in types {
        let k = txn_key(&t);
        cols.push((
            format!("txn_{k}_share_median"),
            format!("txn_{k}_share"),
            median,
        ));
        let of: Vec<&[ShareFigure]> = profs
            .iter()
            .filter_map(|p| p.txn_types.iter().find(|x| x.name == t))
            .map(|x| x.components.as_slice())
            .collect();
        for c in sampled(&of) {
            let fig = format!("txn_{k}_component_{c}_share");
            cols.push((format!("{fig}_median"), fig, median));
        }
    }
    cols
}

/// A repetition's main figure as text.
fn headline(kind: Kind, r: &serde_json::Value) -> Option<String> {
    match kind {
        Kind::Run => r
            .get("throughput_tps")
            .and_then(serde_json::Value::as_f64)
            .map(|t| format!("{t:.0} txn/s")),
        Kind::Profile => {
            let t = r.get("throughput_tps")?.as_f64()?;
            let mut c = prof_rep(r)?.components;
            c.sort_by(|a, b| b.1.total_cmp(&a.1));
            let top: Vec<String> = c
                .iter()
                .take(3)
                .map(|(n, x)| format!("{n} {:.1}%", 100.0 * x))
                .collect();
            Some(format!("{t:.0} txn/s; most time: {}", top.join(", ")))
        }
        Kind::Simulate => {
            let s = sim_rep(r)?;
            let mut o = format!("{:.0} stall cycles/txn", s.stall_cycles_per_txn?);
            for (l, mpki, _, _) in &s.levels {
                o += &format!(", {l} MPKI {mpki:.2}");
            }
            Some(o)
        }
    }
}

/// Repetitions a sweep of `kind` runs at once. A simulation counts misses, not time,
/// and its child (valgrind) uses one core: independent points run side by side, one per
/// core (at most 8: each holds a traced process and its simulator). Runs and profiles
/// measure time and run alone.
pub fn jobs(kind: Kind) -> usize {
    match kind {
        Kind::Simulate => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
        Kind::Run | Kind::Profile => 1,
    }
}

/// How many requests for the machine's share (lanes, windows, measured turns) this
/// process has made so far.
pub fn slots_asked() -> u64 {
    LANES.asked()
}

/// Run `f`, in-process work (plotting, writing a paper's output), never beside a
/// measured window of this process ([`crate::lanes::unstoppable`]). A child process is
/// better run stoppable ([`crate::lanes::stoppable_output`]): a window stops it instead
/// of waiting for it.
pub fn lane_work<T>(f: impl FnOnce() -> T) -> T {
    crate::lanes::unstoppable(f)
}

/// A repetition's progress line: its point, its main figure, its own seconds (holding its
/// lanes, the wait for them left out) and the seconds since its sweep began.
pub fn rep_line(
    point: &str,
    rep: u32,
    outcome: &Outcome,
    headline: Option<String>,
    seconds: Option<f64>,
    into: Option<(&str, f64)>,
) -> String {
    let what = match outcome {
        Outcome::Skipped => "already done".to_string(),
        Outcome::Done => headline.unwrap_or_else(|| "done".into()),
        Outcome::Failed(e) => format!("FAILED: {e}"),
    };
    let mut when = Vec::new();
    if let Some(s) = seconds {
        when.push(format!("{s:.1} s"));
    }
    if let Some((id, t)) = into {
        when.push(format!("{t:.0} s into {id}"));
    }
    if when.is_empty() {
        format!("{point} rep{rep}: {what}")
    } else {
        format!("{point} rep{rep}: {what} ({})", when.join("; "))
    }
}

/// A repetition: its point and number.
type Rep = (Point, u32);

/// Repetitions run together: those of one resident shape (`resident`), or one alone.
type Work = (Option<String>, Vec<Rep>);

/// How the sweep reports a repetition's end: its outcome and seconds, as events.
type Finished<'a> = dyn FnMut(&Point, u32, Outcome, Option<f64>, &mut dyn FnMut(Event)) + 'a;

/// The repetitions found complete, and those to run in order: each alone, or those of
/// one resident shape together (its points grouped where they are not adjacent).
fn plan(dir: &Path, spec: &Spec) -> Result<(Vec<Rep>, Vec<Work>), String> {
    let (mut skipped, mut work): (_, Vec<Work>) = (Vec::new(), Vec::new());
    for p in spec.points() {
        for rep in 1..=spec.repeat {
            if !needs_run(dir, &p, rep)? {
                skipped.push((p.clone(), rep));
                continue;
            }
            let shape = spec.resident_shape(&p);
            match work
                .iter_mut()
                .find(|(s, _)| shape.is_some() && *s == shape)
            {
                Some((_, reps)) => reps.push((p.clone(), rep)),
                None => work.push((shape, vec![(p.clone(), rep)])),
            }
        }
    }
    Ok((skipped, work))
}

/// A worker's message `m` as the sweep's events (a repetition's end through
/// `finished`); Ok(true) when a work item ended, Err when it stops the sweep.
fn relay(
    m: Msg,
    finished: &mut Finished<'_>,
    event: &mut dyn FnMut(Event),
) -> Result<bool, String> {
    match m {
        Msg::Start(p, rep) => event(Event::Start {
            point: &p.name(),
            rep,
        }),
        Msg::Rep(p, rep, o, t) => finished(&p, rep, o?, t, event),
        Msg::Loaded(shape, seconds) => event(Event::Loaded {
            shape: &shape,
            seconds,
        }),
        Msg::Checked(shape, seconds) => event(Event::Checked {
            shape: &shape,
            seconds,
        }),
        Msg::Ended(r) => return r.map(|()| true),
    }
    Ok(false)
}

/// Run repetition `rep` of `p` in a thread of `sc`, reporting on `tx`: a measured one
/// loads and closes beside the lanes and runs its window alone; a simulation takes one
/// of `slots` lanes (`lanes`).
fn spawn_rep<'s, 'e>(
    sc: &'s std::thread::Scope<'s, 'e>,
    (exe, dir, spec, controls): (&'e Path, &'e Path, &'e Spec, &'e Controls),
    slots: usize,
    p: Point,
    rep: u32,
    tx: std::sync::mpsc::Sender<Msg>,
) {
    sc.spawn(move || {
        let mut share = if spec.kind.native() {
            Share::Measured(Measured::start(&LANES))
        } else {
            Share::Lane(LANES.lane(slots))
        };
        let t0 = std::time::Instant::now();
        // A copy of its shape's database first (`LoadOnce::copy`), in its turn, where a
        // run that loads its own loads.
        let (o, copy) = match copy_shape(spec, &p, rep) {
            Ok(copy) => (run_rep(exe, dir, spec, controls, &p, rep, &mut share), copy),
            Err(why) => (Ok(Outcome::Failed(why)), None),
        };
        drop(share);
        let o = match copy {
            Some(copy) => drop_copy(&copy, o),
            None => o,
        };
        let t = t0.elapsed().as_secs_f64();
        // The receiver outlives every sender (the sweep's scope).
        let _ = tx.send(Msg::Rep(p, rep, o, Some(t)));
        let _ = tx.send(Msg::Ended(Ok(())));
    });
}

/// Run the sweep into `dir` (resuming it if it holds the same sweep), then summarize.
/// `exe`: the oltpscope executable the children run; [`jobs`] repetitions at once, each
/// announced (`Event::Start`) as it starts and reported as it finishes.
pub fn run(
    exe: &Path,
    dir: &Path,
    spec: &Spec,
    mut event: impl FnMut(Event),
) -> Result<Summary, String> {
    spec.validate()?;
    let controls = Controls::for_spec(spec)?;
    open_dir(dir, spec)?;
    let slots = jobs(Kind::Simulate);
    let jobs = jobs(spec.kind);
    let mut failures = Vec::new();
    let mut finished = |p: &Point,
                        rep: u32,
                        outcome: Outcome,
                        seconds: Option<f64>,
                        event: &mut dyn FnMut(Event)| {
        let name = p.name();
        let headline = match outcome {
            Outcome::Failed(ref e) => {
                failures.push((name.clone(), e.clone()));
                None
            }
            _ => results::load_report(&rep_dir(dir, p, rep).0)
                .ok()
                .and_then(|r| headline(spec.kind, &r)),
        };
        event(Event::Finished {
            point: &name,
            rep,
            outcome: &outcome,
            headline,
            seconds,
        });
    };
    let (skipped, work) = plan(dir, spec)?;
    for (p, rep) in skipped {
        finished(&p, rep, Outcome::Skipped, None, &mut event);
    }
    std::thread::scope(|sc| -> Result<(), String> {
        let (tx, rx) = std::sync::mpsc::channel::<Msg>();
        let mut running = 0;
        let mut load_failed: Vec<(PathBuf, String)> = Vec::new();
        let mut take = |m: Msg, event: &mut dyn FnMut(Event)| relay(m, &mut finished, event);
        for (shape, reps) in work {
            while running >= jobs {
                let m = rx.recv().expect("a running repetition reports");
                running -= usize::from(take(m, &mut event)?);
            }
            if let Some(shape) = shape {
                let tx = tx.clone();
                sc.spawn(move || {
                    let r = crate::resident::run_shape(exe, dir, spec, &shape, &reps, &tx);
                    let _ = tx.send(Msg::Ended(r));
                });
                running += 1;
                continue;
            }
            let (p, rep) = reps.into_iter().next().expect("one repetition");
            // The shape's load, once, after the runs before it (their data stays); a
            // failed load is not tried again for the shape's other repetitions.
            let db = spec.shared_db(&p);
            let failed = load_failed.iter().find(|(d, _)| Some(d) == db.as_ref());
            let why = match failed {
                Some((_, why)) => Some(why.clone()),
                None => load_shape(exe, spec, &p, &mut event)?,
            };
            if let Some(why) = why {
                if failed.is_none() {
                    load_failed.push((db.clone().expect("a shared database"), why.clone()));
                }
                take(Msg::Rep(p, rep, Ok(Outcome::Failed(why)), None), &mut event)?;
                continue;
            }
            event(Event::Start {
                point: &p.name(),
                rep,
            });
            spawn_rep(sc, (exe, dir, spec, &controls), slots, p, rep, tx.clone());
            running += 1;
        }
        drop(tx);
        for m in rx {
            take(m, &mut event)?;
        }
        Ok(())
    })?;
    let s = summarize(dir, spec, &failures)?;
    write_summary(dir, &s)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(vary: &[&str]) -> Spec {
        Spec {
            kind: Kind::Run,
            workload: "micro".into(),
            vary: vary.iter().map(|v| parse_vary(v).unwrap()).collect(),
            repeat: 2,
            args: vec!["--txns".into(), "200".into()],
            load_once: None,
        }
    }

    /// `spec(vary)` loading once per (engine, size) into `root`.
    fn loading_once(vary: &[&str], root: &Path) -> Spec {
        Spec {
            load_once: Some(LoadOnce {
                keys: vec!["engine".into(), "size".into()],
                args: vec![],
                root: root.to_path_buf(),
                only: None,
                copy: false,
            }),
            ..spec(vary)
        }
    }

    #[test]
    fn points_sharing_a_data_shape_share_one_database() {
        let root = Path::new("/x/db");
        let s = loading_once(
            &["engine=disk,memory", "size=1MB,1.5GB", "mode=read,update"],
            root,
        );
        s.validate().unwrap();
        let dbs: Vec<PathBuf> = s.points().iter().map(|p| s.shared_db(p).unwrap()).collect();
        let mut shapes = dbs.clone();
        shapes.dedup();
        // Eight points, four shapes: each mode of a shape on its database.
        assert_eq!((dbs.len(), shapes.len()), (8, 4), "{shapes:?}");
        assert_eq!(dbs[0], root.join("engine-disk_size-1MB"));
        assert_eq!(dbs[0], dbs[1], "read and update share the load");
        assert_ne!(dbs[1], dbs[2], "another size is another load");
        // The marker keeps the whole name (a size with a dot in it too).
        assert_eq!(
            loaded_marker(&root.join("engine-disk_size-1.5GB")),
            root.join("engine-disk_size-1.5GB.loaded")
        );
        // The load: the shape's values, its database, never a run setting.
        let p = &s.points()[1];
        let load = s.load_spec(p, &dbs[1]).unwrap().to_args();
        assert_eq!(load[..2], ["load", "micro"]);
        for (f, v) in [
            ("--engine", "disk"),
            ("--size", "1048576"),
            ("--db", "/x/db/engine-disk_size-1MB"),
        ] {
            assert_eq!(runspec::value_of(&load, f), Some(v), "{load:?}");
        }
        assert!(load.contains(&"--reload".to_string()));
        for run_only in ["--mode", "--txns"] {
            assert!(!runspec::gives(&load, run_only), "{load:?}");
        }
        // Each repetition runs on it, without loading.
        let run = p.rep_args(&s, 1, Path::new("/x/out"));
        assert_eq!(
            runspec::value_of(&run, "--db"),
            Some("/x/db/engine-disk_size-1MB")
        );
        assert!(run.contains(&"--no-load".to_string()), "{run:?}");
        assert_eq!(runspec::value_of(&run, "--mode"), Some("update"));
        // The disk engine's pool read in first, as warm as after its load; not others'.
        assert!(run.contains(&"--prewarm".to_string()), "{run:?}");
        let memory = &s.points()[4];
        assert_eq!(memory.get("engine"), Some("memory"));
        assert!(!memory
            .rep_args(&s, 1, Path::new("/x/out"))
            .contains(&"--prewarm".to_string()));
        // Points outside `only` load their own.
        let mut some = s.clone();
        some.load_once.as_mut().unwrap().only = Some(parse_vary("engine=disk").unwrap());
        let shared: Vec<bool> = (some.points().iter())
            .map(|p| some.shared_db(p).is_some())
            .collect();
        assert_eq!(shared, [true, true, true, true, false, false, false, false]);
        let memory = &some.points()[4];
        assert!(!memory
            .rep_args(&some, 1, Path::new("/o"))
            .contains(&"--no-load".to_string()));
        // Without load_once, nothing changes.
        let plain = spec(&["engine=disk"]);
        assert_eq!(plain.shared_db(&plain.points()[0]), None);
        assert!(!plain.points()[0]
            .rep_args(&plain, 1, Path::new("/o"))
            .contains(&"--no-load".to_string()));
    }

    #[test]
    fn a_load_once_sweep_is_refused_what_it_cannot_share() {
        let root = Path::new("/x/db");
        let not_varied = loading_once(&["engine=disk,memory"], root);
        assert!(not_varied
            .validate()
            .unwrap_err()
            .contains("size is not a varied key"));
        let mut own_db = loading_once(&["engine=disk", "size=1MB"], root);
        own_db.args.extend(["--db".into(), "/y".into()]);
        assert!(own_db
            .validate()
            .unwrap_err()
            .contains("--db is the sweep's"));
        let mut sim = loading_once(&["engine=disk", "size=1MB"], root);
        sim.kind = Kind::Simulate;
        assert!(sim.validate().unwrap_err().contains("`run` sweeps"));
        // An older sweep.json (no load_once) still reads, and none is written.
        let text = serde_json::to_string(&spec(&["engine=disk"])).unwrap();
        assert!(!text.contains("load_once"), "{text}");
    }

    #[test]
    fn only_simulations_run_side_by_side() {
        assert_eq!(jobs(Kind::Run), 1);
        assert_eq!(jobs(Kind::Profile), 1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(jobs(Kind::Simulate), cores.min(8));
    }

    #[test]
    fn a_repetitions_line_has_its_own_seconds_and_its_sweeps() {
        let line = rep_line(
            "engine-disk",
            2,
            &Outcome::Done,
            Some("100 txn/s".into()),
            Some(4.26),
            Some(("size", 31.4)),
        );
        assert_eq!(line, "engine-disk rep2: 100 txn/s (4.3 s; 31 s into size)");
        let skipped = rep_line("base", 1, &Outcome::Skipped, None, None, None);
        assert_eq!(skipped, "base rep1: already done");
        let failed = rep_line(
            "base",
            1,
            &Outcome::Failed("x".into()),
            None,
            Some(1.0),
            None,
        );
        assert_eq!(failed, "base rep1: FAILED: x (1.0 s)");
    }

    #[test]
    fn a_throttle_is_lifted_at_the_measured_windows_last_line_only() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let end = window_end(&a("tpcc --duration 2 --warmup 0.5 --no-load")).unwrap();
        assert!((end - 2.5).abs() < 1e-9);
        assert_eq!(
            window_end(&a("tpcc --txns 100 --duration 2 --warmup 0")),
            None
        );
        assert_eq!(
            window_end(&a("tpcc --duration 2")),
            None,
            "no warm-up given"
        );
        // The run's lines: the warm-up's, a second of the window, then its end.
        assert!(!window_closed(
            "[   1.0s] warm-up          101 txn/s   aborts   0.00%",
            end
        ));
        assert!(!window_closed(
            "[   2.0s] measure          101 txn/s   aborts   0.00%",
            end
        ));
        assert!(window_closed(
            "[   2.5s] measure          102 txn/s   aborts   0.00%",
            end
        ));
        assert!(!window_closed(
            "running tpcc: 0.5 s warm-up, then 2.0 s measured",
            end
        ));
        assert!(!window_closed("[   2.5s] stopped: SIGINT", end));
    }

    #[test]
    fn the_product_has_every_point_with_the_last_key_fastest() {
        let s = spec(&["threads=1,2", "size=1MB,10MB"]);
        s.validate().unwrap();
        let names: Vec<String> = s.points().iter().map(Point::name).collect();
        assert_eq!(
            names,
            [
                "threads-1_size-1MB",
                "threads-1_size-10MB",
                "threads-2_size-1MB",
                "threads-2_size-10MB"
            ]
        );
        let args = s.points()[1].child_args(&s, Path::new("/o"));
        // The sizes go as bytes (the same parser reads both).
        assert_eq!(
            args.join(" "),
            "run micro --txns 200 --size 10485760 --threads 1 --out /o"
        );
    }

    #[test]
    fn each_key_sets_the_field_written_as_its_flag() {
        for name in KEYS
            .split([',', ' ', ';', '(', ')'])
            .filter(|k| key(k).is_some())
        {
            let Some(Key::Flag {
                flag,
                workloads,
                axis,
            }) = key(name)
            else {
                continue;
            };
            let mut s = RunSpec::new(
                runspec::Command::Run,
                Workload::named(workloads[0]).unwrap(),
            );
            let x = match (name, axis) {
                ("mode", _) => "update",
                ("ordered-index", _) => "rbtree",
                (_, Axis::Category) => "disk",
                _ => "2",
            };
            set_field(name, &mut s, x).unwrap();
            assert_eq!(s.option_args()[0], flag, "{name}");
        }
        let mut s = RunSpec::new(runspec::Command::Run, Workload::named("tpcb").unwrap());
        assert!(set_field("rows", &mut s, "2").is_err());
        assert!(set_field("threads", &mut s, "1.5").is_err());
    }

    #[test]
    fn bad_sweeps_are_refused_before_any_run() {
        assert!(parse_vary("color=red").unwrap_err().contains("unknown key"));
        assert!(parse_vary("threads").is_err());
        assert!(parse_vary("threads=1,,2").is_err());
        let e = spec(&["warehouses=1,2"]).validate().unwrap_err();
        assert!(e.contains("not an option of micro"), "{e}");
        let e = spec(&["threads=1,x"]).validate().unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        let e = spec(&["threads=1.5"]).validate().unwrap_err();
        assert!(e.contains("not a whole number"), "{e}");
        let e = spec(&["mode=write"]).validate().unwrap_err();
        assert!(e.contains("not one of read, update"), "{e}");
        let e = spec(&["threads=1,1"]).validate().unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let mut s = spec(&["threads=1"]);
        s.args.push("--threads".into());
        assert!(s.validate().unwrap_err().contains("both varied"));
        let mut s = spec(&[]);
        s.args.extend(["--json".into(), "x".into()]);
        assert!(s.validate().is_err());
    }

    #[test]
    fn complete_repetitions_are_skipped_and_partial_ones_redone() {
        let d = tempfile::tempdir().unwrap();
        let s = spec(&["threads=1,2"]);
        open_dir(d.path(), &s).unwrap();
        let pts = s.points();
        // rep1 of the first point complete, rep2 killed half-way.
        let (done, _) = rep_dir(d.path(), &pts[0], 1);
        std::fs::create_dir_all(&done).unwrap();
        std::fs::write(
            done.join(results::REPORT),
            r#"{"throughput_tps": 5.0, "abort_rate": 0.0}"#,
        )
        .unwrap();
        std::fs::write(done.join(results::MANIFEST), "{}").unwrap();
        let (_, partial) = rep_dir(d.path(), &pts[0], 2);
        std::fs::create_dir_all(&partial).unwrap();
        std::fs::write(partial.join(results::REPORT), "{").unwrap();
        assert!(!needs_run(d.path(), &pts[0], 1).unwrap());
        assert!(needs_run(d.path(), &pts[0], 2).unwrap());
        assert!(
            !partial.exists(),
            "the killed repetition's leftover is removed"
        );
        assert!(needs_run(d.path(), &pts[1], 1).unwrap());
        // A leftover with a foreign file is refused and kept.
        std::fs::create_dir_all(&partial).unwrap();
        std::fs::write(partial.join("mine.txt"), "x").unwrap();
        assert!(needs_run(d.path(), &pts[0], 2).is_err());
        assert!(partial.join("mine.txt").exists());
        // A finished-looking directory without its manifest is refused too.
        let (bad, _) = rep_dir(d.path(), &pts[1], 2);
        std::fs::create_dir_all(&bad).unwrap();
        assert!(needs_run(d.path(), &pts[1], 2).is_err());
        // The same sweep resumes; another is refused; so is a foreign directory.
        open_dir(d.path(), &s).unwrap();
        assert!(open_dir(d.path(), &spec(&["threads=1,4"]))
            .unwrap_err()
            .contains("different sweep"));
        let f = tempfile::tempdir().unwrap();
        std::fs::write(f.path().join("x"), "x").unwrap();
        assert!(open_dir(f.path(), &s).is_err());
        // The summary counts what is complete.
        let sum = summarize(d.path(), &s, &[]).unwrap();
        assert_eq!(sum.points[0].reps_done, 1);
        assert_eq!(sum.points[0].throughput_tps.unwrap().median, 5.0);
        assert_eq!(sum.points[1].reps_done, 0);
    }

    #[test]
    fn hybrid_and_analytical_sweeps_vary_their_own_settings_and_count_queries_per_hour() {
        // TPC-H's and CH-benCHmark's own keys reach their flags; another workload's are
        // refused before any run.
        let mut h = Spec {
            workload: "tpch".into(),
            ..spec(&["scale-factor=0.01,0.1", "streams=1,2", "cores=1,2"])
        };
        h.validate().unwrap();
        let mut run = RunSpec::new(runspec::Command::Run, Workload::named("tpch").unwrap());
        set_field("scale-factor", &mut run, "0.01").unwrap();
        assert_eq!(run.option_args()[..2], ["--scale-factor", "0.01"]);
        for bad in ["0", "-1", "x", "inf"] {
            assert!(set_field("scale-factor", &mut run, bad).is_err(), "{bad}");
        }
        set_field("query-threads", &mut run, "2").unwrap();
        let args = run.option_args();
        assert!(
            args.windows(2).any(|w| w == ["--query-threads", "2"]),
            "{args:?}"
        );
        assert!(refused_for("query-threads", Kind::Simulate).is_some());
        h.vary = vec![parse_vary("warehouses=1,2").unwrap()];
        assert!(h.validate().unwrap_err().contains("not an option of tpch"));
        let c = Spec {
            workload: "chbench".into(),
            repeat: 1,
            ..spec(&[
                "cores=1,2",
                "warehouses=1,2",
                "analytic-streams=0,1",
                "query-threads=1,2",
            ])
        };
        c.validate().unwrap();
        // Queries per hour: the report's analytic_queries over its measured time; none
        // for a point whose report has no such counter (no analytical stream).
        let d = tempfile::tempdir().unwrap();
        let c = Spec {
            vary: vec![parse_vary("cores=1,2").unwrap()],
            ..c
        };
        open_dir(d.path(), &c).unwrap();
        for (p, q) in c.points().iter().zip([Some(3.0), Some(5.0)]) {
            let (done, _) = rep_dir(d.path(), p, 1);
            std::fs::create_dir_all(&done).unwrap();
            let counters = q.map_or(String::new(), |q| {
                format!(r#", "counters": {{"analytic_queries": {q}}}"#)
            });
            std::fs::write(
                done.join(results::REPORT),
                format!(
                    r#"{{"throughput_tps": 5.0, "abort_rate": 0.0, "duration_s": 2.0{counters}}}"#
                ),
            )
            .unwrap();
            std::fs::write(done.join(results::MANIFEST), "{}").unwrap();
        }
        let sum = summarize(d.path(), &c, &[]).unwrap();
        let qph: Vec<f64> = sum
            .points
            .iter()
            .map(|p| p.queries_per_hour.unwrap().median)
            .collect();
        assert_eq!(qph, [5400.0, 9000.0]);
        let curve = sum
            .curves
            .iter()
            .find(|c| c.figure == "queries_per_hour")
            .unwrap();
        assert_eq!(curve.points.len(), 2);
        write_summary(d.path(), &sum).unwrap();
        let csv = std::fs::read_to_string(d.path().join("summary.csv")).unwrap();
        assert!(
            csv.lines()
                .next()
                .unwrap()
                .contains("queries_per_hour_median"),
            "{csv}"
        );
        assert_eq!(figure_label("queries_per_hour"), "queries/h");
    }

    #[test]
    fn bandwidth_is_throttled_where_the_database_and_log_are() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            data_dirs(&a(&["--db", "/d", "--log-dir=/l", "--threads", "2"])),
            [PathBuf::from("/d"), PathBuf::from("/l")]
        );
        // Without --db the run makes its database in the temporary directory.
        assert_eq!(data_dirs(&a(&["--threads", "2"])), [std::env::temp_dir()]);
        let mut s = spec(&["write-bw=10MB,50MB"]);
        s.validate().unwrap();
        assert_eq!(numeric("write-bw", "10MB"), Some(10.0 * 1048576.0));
        s.vary = vec![parse_vary("read-bw=0").unwrap()];
        assert!(s.validate().unwrap_err().contains("above 0"));
        s.kind = Kind::Simulate;
        s.vary = vec![parse_vary("log-write-bw=1MB").unwrap()];
        assert!(s.validate().unwrap_err().contains("no storage"));
        // The bandwidth is no flag of the run: it reaches it as a cgroup only.
        let s = spec(&["write-bw=10MB"]);
        assert!(!s.points()[0]
            .child_args(&s, Path::new("/o"))
            .iter()
            .any(|a| a.contains("bw") || a.contains("10MB")));
    }

    #[test]
    fn spreads_and_curves() {
        let sp = Spread::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((sp.median, sp.min, sp.max, sp.n), (2.5, 1.0, 10.0, 4));
        assert_eq!(Spread::of(&[]), None);
        let s = spec(&["engine=disk,memory", "threads=1,2,3,4,5"]);
        let pts: Vec<PointSummary> = s
            .points()
            .iter()
            .map(|p| {
                let t: f64 = p.get("threads").unwrap().parse().unwrap();
                let tps = if p.get("engine") == Some("disk") {
                    10.0
                } else {
                    100.0
                } * t.min(3.0);
                PointSummary {
                    name: p.name(),
                    values: p.values.clone(),
                    reps_done: 1,
                    reps_failed: 0,
                    error: None,
                    throughput_tps: Spread::of(&[tps]),
                    abort_rate: None,
                    latency_p99_us: None,
                    queries_per_hour: None,
                    simulation: None,
                    profile: None,
                    worker_cpu_busy: None,
                    spread_ratio: None,
                    unreliable: None,
                }
            })
            .collect();
        let c = curves(&s, &pts);
        assert_eq!(c.len(), 2, "one curve over threads per engine");
        assert_eq!(c[0].fixed, vec![("engine".to_string(), "disk".to_string())]);
        let a = c[1].analysis.as_ref().unwrap();
        assert_eq!((a.best_y, a.x_90, a.knee_x), (300.0, 3.0, Some(3.0)));
    }

    /// A profile repetition's report as `profile --out` writes it (the fields read).
    fn profile_report(tps: f64, lock: f64, split: bool) -> String {
        let mut r = serde_json::json!({
            "throughput_tps": tps, "abort_rate": 0.0, "latency_us": {"p99": 50.0},
            "profile": {
                "samples": 1000, "read_overhead": 0.002,
                "components": [
                    {"name": "btree", "samples": 1, "share": 0.5 - lock},
                    {"name": "lock", "samples": 1, "share": lock},
                    {"name": "log", "samples": 1, "share": 0.5},
                    {"name": "occ", "samples": 0, "share": 0.0}
                ],
                "txn_types": [
                    {"name": "payment", "samples": 1, "share": 0.75, "components": [
                        {"name": "lock", "samples": 1, "share": 1.0}]},
                    {"name": "(no transaction)", "samples": 1, "share": 0.25, "components": [
                        {"name": "log", "samples": 1, "share": 1.0}]}
                ]
            }
        });
        if split {
            r["profile"]["lock_split"] =
                serde_json::json!({"lock": lock, "lock_pc": 0.01, "lock_lc": 0.02});
        }
        r.to_string()
    }

    #[test]
    fn a_profile_sweep_summarizes_component_shares_per_point() {
        let d = tempfile::tempdir().unwrap();
        let mut s = spec(&["threads=1,2"]);
        s.kind = Kind::Profile;
        s.workload = "tpcb".into();
        s.validate().unwrap();
        assert_eq!(
            s.points()[1].child_args(&s, Path::new("/o")).join(" "),
            "profile tpcb --txns 200 --threads 2 --out /o"
        );
        open_dir(d.path(), &s).unwrap();
        let pts = s.points();
        for (p, rep, tps, lock) in [(0, 1, 10.0, 0.1), (0, 2, 20.0, 0.3), (1, 1, 30.0, 0.4)] {
            let (done, _) = rep_dir(d.path(), &pts[p], rep);
            std::fs::create_dir_all(&done).unwrap();
            std::fs::write(
                done.join(results::REPORT),
                profile_report(tps, lock, p == 0),
            )
            .unwrap();
            std::fs::write(done.join(results::MANIFEST), "{}").unwrap();
        }
        let sum = summarize(d.path(), &s, &[]).unwrap();
        let p0 = &sum.points[0];
        assert_eq!(p0.reps_done, 2);
        assert_eq!(p0.throughput_tps.unwrap().median, 15.0);
        let lock = figure(p0, "component_lock_share").unwrap();
        assert!((lock.median - 0.2).abs() < 1e-9 && lock.min == 0.1 && lock.max == 0.3);
        // One repetition's shares add up to 1 at the point.
        let p1 = sum.points[1].profile.as_ref().unwrap();
        let total: f64 = p1.components.iter().map(|c| c.share.unwrap().median).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        assert_eq!(
            figure(&sum.points[1], "txn_payment_share").unwrap().median,
            0.75
        );
        assert_eq!(
            figure(&sum.points[1], "txn_no_transaction_component_log_share")
                .unwrap()
                .median,
            1.0
        );
        assert_eq!(figure(p0, "lock_split_lock_lc_share").unwrap().median, 0.02);
        assert!(
            p1.lock_split.is_none(),
            "no report of the point had a split"
        );
        assert_eq!(figure(p0, "component_nosuch_share"), None);
        assert_eq!(
            figure_label("component_lock_share"),
            "lock share of the samples"
        );
        // The CSV: shares with their spread, the sampled components only.
        write_summary(d.path(), &sum).unwrap();
        let mut rd = csv::Reader::from_path(d.path().join(SUMMARY_CSV)).unwrap();
        let h: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
        for c in [
            "throughput_tps_median",
            "component_lock_share_median",
            "component_lock_share_min",
            "component_lock_share_max",
            "lock_split_lock_pc_share_median",
            "txn_payment_share_median",
            "txn_payment_component_lock_share_median",
        ] {
            assert!(h.iter().any(|x| x == c), "{c} in {h:?}");
        }
        assert!(!h.iter().any(|x| x.contains("occ")), "{h:?}");
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        let col = h
            .iter()
            .position(|x| x == "component_lock_share_median")
            .unwrap();
        assert_eq!(&rows[0][col], "0.200");
        // The JSON summary reads back.
        let back: Summary =
            serde_json::from_str(&std::fs::read_to_string(d.path().join(SUMMARY_JSON)).unwrap())
                .unwrap();
        assert_eq!(back.points[0].profile, sum.points[0].profile);
        // A run's report (no profile) in a profile sweep is refused, not read as zeros.
        let (bad, _) = rep_dir(d.path(), &pts[1], 2);
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(
            bad.join(results::REPORT),
            r#"{"throughput_tps": 1.0, "abort_rate": 0.0}"#,
        )
        .unwrap();
        std::fs::write(bad.join(results::MANIFEST), "{}").unwrap();
        let e = summarize(d.path(), &s, &[]).unwrap_err();
        assert!(e.contains("without a profile"), "{e}");
        // Keys of the simulator are refused for profile sweeps.
        s.vary = vec![parse_vary("llc=1MB,2MB").unwrap()];
        let e = s.validate().unwrap_err();
        assert!(e.contains("not a key of `profile` sweeps"), "{e}");
    }

    #[test]
    fn experiment_files_say_the_same_as_the_command_line() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("exp.toml");
        std::fs::write(
            &f,
            "workload = \"micro\"\nvary = [\"threads=1,2\", \"size=1MB,10MB\"]\nrepeat = 3\nargs = [\"--txns\", \"200\"]\nout = \"res\"\n",
        )
        .unwrap();
        let (s, out) = read_file(&f).unwrap();
        assert_eq!(s.vary, spec(&["threads=1,2", "size=1MB,10MB"]).vary);
        assert_eq!(s.repeat, 3);
        assert_eq!(out, Some(PathBuf::from("res")));
        std::fs::write(&f, "workload = \"micro\"\nvaryy = []\n").unwrap();
        let e = read_file(&f).unwrap_err();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains("varyy"), "{e}");
        std::fs::write(
            &f,
            "kind = \"profile\"\nworkload = \"tpcc\"\nvary = [\"threads=1,2\"]\n",
        )
        .unwrap();
        assert_eq!(read_file(&f).unwrap().0.kind, Kind::Profile);
        std::fs::write(&f, "kind = \"perf\"\nworkload = \"tpcc\"\n").unwrap();
        let e = read_file(&f).unwrap_err();
        assert!(!e.contains('\n') && e.contains("perf"), "{e}");
    }
}
