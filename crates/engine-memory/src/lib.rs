//! The `memory` engine: a Silo-style in-memory design. Records live in memory with a TID
//! word each; transactions run optimistically and validate at commit (`occ`), reading the
//! global epoch (`epoch`) instead of any shared counter; indexes are a B+tree with
//! optimistic lock coupling (`btree`) or a hash table (`hash`); value logging with
//! epoch-based group commit (`log`); removed records and index entries are reclaimed with
//! crossbeam-epoch.
//!
//! Modules: `catalog` (tables and their indexes), `record`, `btree`, `hash`, `xct` (a
//! worker's transaction operations), `occ` (the commit protocol), `epoch`, `log`,
//! `recovery` (replaying the newest checkpoint and the log after it when the engine opens
//! a log directory that holds one), `checkpoint` (fuzzy checkpoints in the background;
//! the log's prefix they cover is freed).
//! See docs/design/memory-engine.md. The engine never waits except through `rt`.

pub mod catalog;
pub mod checkpoint;
pub mod epoch;
pub mod log;
mod occ;
pub(crate) mod record;
pub mod recovery;
pub mod xct;

use api::{Engine, EngineOptions, LogMode, Result, Schema};
use catalog::Catalog;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use log::{read_log, LogContents, LogRecord};
pub use recovery::Replayed;
pub use xct::MemoryWorker;

/// The memory engine's own settings (`Engine::Options`; `--mem-reserve` on the command
/// line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryOptions {
    /// Bytes of record and index memory to fault in when the engine opens, before the
    /// load (`arena::reserve`): a growing database then takes pages already mapped
    /// instead of paying each new page's fault and zeroing while it is measured.
    /// `None`: none reserved (memory is faulted in as it is first used).
    pub reserve_bytes: Option<u64>,
    /// With logging on: a checkpoint is taken when the log has grown by more than this
    /// since the last checkpoint's start in it (checked every 100 ms). `None`: the
    /// larger of 64 MiB and the last checkpoint's size (recovery then reads at most
    /// about twice the database). `Some(0)`: whenever the log grew at all (tests).
    pub checkpoint_log_bytes: Option<u64>,
    /// Ignore the workloads' prefetch hints (`Worker::prefetch`, `--no-prefetch-hints`):
    /// a hinted row is then read with the misses of a lookup nobody announced, so a run
    /// shows what the hints' overlap inside one transaction is worth, alone or against
    /// `--interleave`'s overlap across transactions.
    pub ignore_hints: bool,
    /// Under `--interleave`, lookups in a table expected (the schema's `expected_rows`)
    /// to take less than this many bytes of records and index entries reach no probe
    /// point: such a table stays in cache, so a switch there would cost and hide
    /// nothing (`--interleave-min-table`). `None`: [`PROBE_MIN_BYTES`]; `Some(0)`: every
    /// lookup switches (the tests' seeded schedules then also cut into small tables'
    /// probes).
    pub probe_min_bytes: Option<u64>,
}

/// [`MemoryOptions::probe_min_bytes`]' default: two L2 caches of the Xeon kind, four of
/// the AMD kind (issue 40: 1 MiB and 4 MiB did alike on TPC-E, 4 MiB better on TPC-B).
pub const PROBE_MIN_BYTES: u64 = 4 << 20;

/// Why a transaction aborted (index into the per-worker abort counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum AbortReason {
    /// A record read changed, or was locked by another committer, before validation.
    ReadValidation = 0,
    /// An index leaf or bucket an absent-key lookup or a scan depended on changed.
    NodeValidation = 1,
    /// An insert found the key held by an uncommitted insert or a committed delete.
    InsertBusy = 2,
    /// The transaction logic asked to roll back, or an operation failed.
    User = 3,
}

impl AbortReason {
    pub const ALL: [AbortReason; 4] = [
        AbortReason::ReadValidation,
        AbortReason::NodeValidation,
        AbortReason::InsertBusy,
        AbortReason::User,
    ];
    pub fn name(self) -> &'static str {
        match self {
            AbortReason::ReadValidation => "read_validation",
            AbortReason::NodeValidation => "node_validation",
            AbortReason::InsertBusy => "insert_busy",
            AbortReason::User => "user_or_error",
        }
    }
}

/// A worker's counters: written only by its worker (relaxed), read by `stats`.
#[derive(Default)]
pub struct WorkerStats {
    pub commits: AtomicU64,
    pub read_only_commits: AtomicU64,
    pub aborts: [AtomicU64; 4],
    pub records_inserted: AtomicU64,
    pub records_deleted: AtomicU64,
}

impl WorkerStats {
    #[inline]
    fn bump(c: &AtomicU64) {
        c.store(c.load(Relaxed) + 1, Relaxed);
    }
}

pub struct MemoryEngine {
    schema: Arc<Schema>,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) epochs: Arc<epoch::Epochs>,
    pub(crate) logger: Option<Arc<log::Logger>>,
    pub(crate) log_mode: LogMode,
    pub(crate) stats: Box<[CachePadded<WorkerStats>]>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    shut: std::sync::atomic::AtomicBool,
    /// The storage the log lives on.
    storage: Arc<dyn storage::Storage>,
    /// The log directory's files (logging on, or a recovered log).
    log_dir: Option<recovery::LogDir>,
    /// The default log directory this engine created (held only to be removed on drop).
    #[allow(dead_code)]
    temp_log_dir: Option<storage::temp::TempDir>,
    /// `open` replayed a log whose load had finished.
    recovered: Option<Replayed>,
    /// The checkpointer (logging on, once the load is done or a log was recovered).
    ckpt: checkpoint::Slot,
    /// `MemoryOptions::checkpoint_log_bytes`.
    checkpoint_log_bytes: Option<u64>,
    /// `MemoryOptions::ignore_hints`.
    pub(crate) ignore_hints: bool,
}

impl MemoryEngine {
    /// Path of the log file, when logging is on.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.logger.as_ref().map(|l| l.path.clone())
    }

    /// The current global epoch.
    pub fn epoch(&self) -> u64 {
        self.epochs.current()
    }

    /// The latest epoch whose commits are all durable (0 without logging).
    pub fn durable_epoch(&self) -> u64 {
        self.logger.as_ref().map_or(0, |l| l.durable())
    }

    /// What `open` replayed from an existing log (None: the engine started empty).
    pub fn recovered(&self) -> Option<&Replayed> {
        self.recovered.as_ref()
    }

    /// The checkpointer, once started (tests take checkpoints with it).
    pub fn checkpointer(&self) -> Option<Arc<checkpoint::Checkpointer>> {
        self.ckpt.get()
    }

    /// Start the checkpointer thread (once; logging on, the load done).
    fn start_checkpointer(&self) -> Result<()> {
        let (Some(l), Some(ld)) = (&self.logger, &self.log_dir) else {
            return Ok(());
        };
        let from = self
            .recovered
            .as_ref()
            .and_then(|r| r.checkpoint.map(|e| (e, r.checkpoint_bytes)));
        let make = || {
            let rows = checkpoint::Rows {
                catalog: self.catalog.clone(),
            };
            checkpoint::Checkpointer::new(
                rows,
                l.clone(),
                self.storage.clone(),
                ld.dir.clone(),
                &checkpoint::FORMAT,
                self.schema.fingerprint(),
                self.checkpoint_log_bytes,
                from,
            )
        };
        self.ckpt
            .start_once("mem-ckpt", make)
            .map_err(api::Error::Fatal)
    }
}

/// Find, create, replay or remove the log as the options say. Returns where the logger
/// appends (None: no logging), what was replayed, and the temporary directory made for
/// a log nobody asked to keep.
#[allow(clippy::type_complexity)]
fn open_log(
    schema: &Schema,
    opts: &EngineOptions,
    catalog: &mut Catalog,
) -> Result<(
    Option<log::LogTail>,
    Option<recovery::LogDir>,
    Option<Replayed>,
    Option<storage::temp::TempDir>,
)> {
    let st = &*opts.storage;
    let fp = schema.fingerprint();
    let logging = opts.log != LogMode::Off;
    let Some(dir) = &opts.log_dir else {
        if !opts.create {
            return Err(api::Error::fatal(
                "the memory engine keeps its data only in its log: give the --log-dir of a run with --log sync or --log async",
            ));
        }
        if !logging {
            return Ok((None, None, None, None));
        }
        let tmp = storage::temp::create("memory")
            .map_err(|e| api::Error::fatal(format!("cannot create a log directory: {e}")))?;
        let ld = log::log_dir(tmp.path());
        let tail = ld.create_tail(st, fp).map_err(api::Error::Fatal)?;
        return Ok((Some(tail), Some(ld), None, Some(tmp)));
    };
    let ld = log::log_dir(dir);
    if opts.reload {
        ld.remove_with(st, &[checkpoint::SIDE])
            .map_err(api::Error::Fatal)?;
    }
    let ckpt = dir.join(checkpoint::CKPT_FILE);
    let ckpt_here = st
        .exists(&ckpt)
        .map_err(|e| api::Error::fatal(format!("looking for the checkpoint: {e}")))?;
    if ckpt_here && !ld.has_log(st).map_err(api::Error::Fatal)? {
        return Err(api::Error::fatal(format!(
            "{} is there but {} is missing: the log was removed or lost, refused (remove the directory or rerun with --reload)",
            ckpt.display(),
            ld.log.display()
        )));
    }
    if ld.has_log(st).map_err(api::Error::Fatal)? {
        if !logging && opts.create {
            return Err(api::Error::fatal(format!(
                "{} holds a memory-engine log: with --log off this run's changes would not be logged; give --log sync or --log async (or --reload to start over)",
                dir.display()
            )));
        }
        let (r, tail) = recovery::recover(&ld, st, catalog, fp, logging)?;
        return Ok((tail, Some(ld), Some(r), None));
    }
    if ld.has_marker(st).map_err(api::Error::Fatal)? {
        return Err(api::Error::fatal(format!(
            "{} is there but {} is missing: the log was removed or lost, refused (remove the directory or rerun with --reload)",
            ld.marker.display(),
            ld.log.display()
        )));
    }
    if !opts.create {
        return Err(api::Error::fatal(format!(
            "no memory-engine log in {}: nothing to check",
            dir.display()
        )));
    }
    if !logging {
        return Ok((None, None, None, None));
    }
    let tail = ld.create_tail(st, fp).map_err(api::Error::Fatal)?;
    Ok((Some(tail), Some(ld), None, None))
}

impl Engine for MemoryEngine {
    type Worker<'e> = MemoryWorker<'e>;
    type Options = MemoryOptions;
    const NAME: &'static str = "memory";
    const COUNTED: api::Counted = api::Counted {
        pages: false,
        index_nodes: true,
        escalations: false,
    };
    const ABOUT: &'static str =
        "In-memory, Silo-style: OCC with epochs, B+tree with optimistic lock coupling.";
    const DURABLE: bool = true;
    const DB_IS_LOG: bool = true;

    fn place(g: &api::Given) -> Result<api::Place> {
        const WHY: &str = "the memory engine keeps its database in its log";
        Ok(api::Place {
            db_dir: None,
            log_dir: api::place::logged_dir(g, WHY, WHY)?,
        })
    }

    fn owns_dir(st: &dyn storage::Storage, dir: &Path) -> bool {
        api::place::any_exists(st, dir, storage::valuelog::identity::memory::OWNED)
    }

    fn db_files(
        st: &dyn storage::Storage,
        dir: &Path,
        log_dir: Option<&Path>,
    ) -> Result<Vec<PathBuf>> {
        api::place::log_db_files(
            st,
            dir,
            log_dir,
            "the memory engine",
            storage::valuelog::identity::memory::OWNED,
            &[checkpoint::CKPT_FILE, checkpoint::CKPT_TMP],
        )
    }

    fn remove_db(st: &dyn storage::Storage, dir: &Path, _files: &[PathBuf]) -> Result<()> {
        // Marker before log (as --reload does): a crash in between leaves a log that is
        // still recognised, never a marker alone.
        log::log_dir(dir)
            .remove_with(st, &[checkpoint::SIDE])
            .map_err(api::Error::Fatal)
    }

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        let workers = opts.threads.max(1);
        let own = opts.own::<MemoryOptions>()?;
        if let Some(b) = own.reserve_bytes {
            memindex::arena::reserve(b);
        }
        let mut catalog = Catalog::new(&schema, own.probe_min_bytes.unwrap_or(PROBE_MIN_BYTES))?;
        let (tail, log_dir, recovered, temp_log_dir) = open_log(&schema, opts, &mut catalog)?;
        // Epochs continue above every epoch the log holds (replayed or void), so new
        // TIDs are above every replayed one and void records stay void.
        let first_epoch = recovered
            .as_ref()
            .map_or(1, |r| r.max_epoch.max(r.durable) + 1);
        // Epochs are the high 32 bits of a TID; leave room for a long run.
        if first_epoch > u32::MAX as u64 - (1 << 24) {
            return Err(api::Error::fatal(format!(
                "the log in {} has used up its epochs (epoch {first_epoch} of 2^32): load a new database with --reload",
                opts.log_dir.as_deref().unwrap_or(std::path::Path::new("?")).display()
            )));
        }
        let epochs = epoch::Epochs::starting_at(first_epoch);
        let mut threads = Vec::new();
        // The logger first: if it cannot start, no thread is left running.
        let logger = match tail {
            None => None,
            Some(tail) => {
                let (lg, h) = log::start(tail, workers, epochs.clone())?;
                threads.push(h);
                if let (Some(ld), Some(_)) = (&log_dir, &recovered) {
                    // A recovered log's marker holds its mark: the logger advances it.
                    lg.io
                        .arm_mark(ld.mark_file(opts.storage.clone(), lg.database_id), false)
                        .map_err(api::Error::Fatal)?;
                }
                Some(lg)
            }
        };
        threads.push(epochs.start());
        let e = MemoryEngine {
            schema,
            catalog: Arc::new(catalog),
            epochs,
            logger,
            log_mode: opts.log,
            stats: (0..workers).map(|_| CachePadded::default()).collect(),
            threads: Mutex::new(threads),
            shut: false.into(),
            storage: opts.storage.clone(),
            log_dir,
            temp_log_dir,
            recovered,
            ckpt: checkpoint::Slot::default(),
            checkpoint_log_bytes: own.checkpoint_log_bytes,
            ignore_hints: own.ignore_hints,
        };
        if e.recovered.is_some() {
            // A recovered log's load is done: checkpoints from the start.
            e.start_checkpointer()?;
        }
        Ok(e)
    }

    fn has_data(&self) -> bool {
        self.recovered.is_some()
    }

    fn load_done(&self) -> Result<()> {
        let (Some(l), Some(ld)) = (&self.logger, &self.log_dir) else {
            return Ok(());
        };
        // Every load commit took an epoch at or below the current one: once it is
        // durable, the whole load is in the log.
        let e = self.epochs.current();
        l.wait_durable(e).map_err(api::Error::Fatal)?;
        // The load marker is the log's durable mark from now on.
        l.io.arm_mark(ld.mark_file(self.storage.clone(), l.database_id), true)
            .map_err(api::Error::Fatal)?;
        self.start_checkpointer()
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn worker(&self, worker_id: usize) -> MemoryWorker<'_> {
        assert!(
            worker_id < self.stats.len(),
            "worker id {worker_id} not below the {} threads the engine was opened for",
            self.stats.len()
        );
        MemoryWorker::new(self, worker_id)
    }

    fn shutdown(&self) -> Result<()> {
        if self.shut.swap(true, AcqRel) {
            return Ok(());
        }
        // The checkpointer first: it waits for the logger.
        self.ckpt.stop();
        if let Some(l) = &self.logger {
            l.stop();
        }
        self.epochs.stop();
        for h in self.threads.lock().drain(..) {
            let _ = h.join();
        }
        match self.logger.as_ref().and_then(|l| l.error()) {
            Some(msg) => Err(api::Error::Fatal(msg)),
            None => Ok(()),
        }
    }

    fn table_sizes(&self) -> Result<Vec<api::TableSize>> {
        let g = crossbeam_epoch::pin();
        Ok(self
            .catalog
            .tables
            .iter()
            .map(|t| memindex::index::table_size(&t.name, &t.primary, &t.secondary, &g))
            .collect())
    }

    fn stats(&self) -> serde_json::Value {
        let sum = |f: &dyn Fn(&WorkerStats) -> &AtomicU64| -> u64 {
            self.stats.iter().map(|s| f(s).load(Relaxed)).sum()
        };
        let mut aborts = serde_json::Map::new();
        for r in AbortReason::ALL {
            aborts.insert(r.name().into(), sum(&|s| &s.aborts[r as usize]).into());
        }
        let mut v = serde_json::json!({
            "engine": "memory",
            "commits": sum(&|s| &s.commits),
            "read_only_commits": sum(&|s| &s.read_only_commits),
            "aborts": aborts,
            "records_inserted": sum(&|s| &s.records_inserted),
            "records_deleted": sum(&|s| &s.records_deleted),
            "epoch": self.epochs.current(),
            "epoch_interval_ms": epoch::EPOCH_INTERVAL.as_millis() as u64,
        });
        if let Some(r) = &self.recovered {
            v["recovery"] = serde_json::json!({
                "blocks": r.blocks,
                "records_applied": r.applied,
                "records_discarded": r.discarded,
                "durable_epoch": r.durable,
                "rows": r.rows,
                "torn_tail_bytes": r.end.map_or(0, |e| e.torn_bytes),
                "checkpoint": r.checkpoint.as_ref().map(|c| checkpoint::FORMAT.end_json(c)),
            });
        }
        if let Some(l) = &self.logger {
            v["log"] = serde_json::json!({
                "path": l.path.display().to_string(),
                "durable_epoch": l.durable(),
                "bytes": l.io.bytes.load(Relaxed),
                "blocks": l.io.blocks.load(Relaxed),
                "fsyncs": l.io.fsyncs.load(Relaxed),
                "allocated_bytes": l.file.allocated().ok().flatten(),
                "checkpoints": 0,
            });
            self.ckpt.stats(&mut v["log"]);
        }
        v
    }
}

impl Drop for MemoryEngine {
    fn drop(&mut self) {
        let _ = self.shutdown();
        // A log nobody asked to keep (no --log-dir) would fill the temp directory run
        // after run: it goes with the engine (`temp_log_dir` removes it when dropped).
    }
}
