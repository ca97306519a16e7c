//! The `mvcc` engine: a multi-version in-memory design in the style of Hekaton (the
//! "revisited" paper's DBMS M). Indexes (memindex's B+tree and hash index) map a
//! key to a per-key object whose chain of versions, newest first, carries commit
//! timestamps (`version`); a global timestamp counter gives each transaction its read
//! timestamp at begin and each committing writer its commit timestamp. Readers see the
//! newest version committed at or before their read timestamp (a snapshot); writers
//! install an uncommitted version at the head of a chain and lose at once against
//! another writer (first writer wins) (`xct`); commit validates reads and index nodes
//! against phantoms for serializability, read-only transactions need not (`validate`);
//! versions nobody can see any more, and deleted keys, are collected cooperatively
//! (`gc`). Committed versions are logged with group commit by a flusher thread (`log`)
//!
//! and replayed when the engine opens a directory that holds a log, from the newest
//! checkpoint (`checkpoint`, taken in the background) on (`recovery`).
//!
//! Modules: `catalog`, `version`, `xct`, `validate`, `gc`, `log`, `checkpoint`,
//! `recovery`. See
//! docs/design/mvcc-engine.md.

pub mod catalog;
pub mod checkpoint;
pub mod gc;
pub mod log;
pub mod recovery;
pub mod validate;
pub mod version;
pub mod xct;

use api::{Engine, EngineOptions, LogMode, Result, Schema};
use catalog::Catalog;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use recovery::Replayed;

pub use xct::MvccWorker;

/// Why a transaction aborted (index into the per-worker abort counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum AbortReason {
    /// An update, delete or insert found another writer's version (first writer wins).
    WriteConflict = 0,
    /// A version read was no longer the newest committed one at the commit timestamp.
    ReadValidation = 1,
    /// An index leaf or bucket a scan or an absent-key lookup saw changed (phantom).
    NodeValidation = 2,
    /// The transaction logic asked to roll back, or an operation failed.
    User = 3,
}

impl AbortReason {
    pub const ALL: [AbortReason; 4] = [
        AbortReason::WriteConflict,
        AbortReason::ReadValidation,
        AbortReason::NodeValidation,
        AbortReason::User,
    ];
    pub fn name(self) -> &'static str {
        match self {
            AbortReason::WriteConflict => "write_conflict",
            AbortReason::ReadValidation => "read_validation",
            AbortReason::NodeValidation => "node_validation",
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
    /// Versions unlinked by garbage collection (older ones and dead keys' chains).
    pub versions_freed: AtomicU64,
    /// Deleted keys whose objects left the indexes.
    pub objects_removed: AtomicU64,
}

impl WorkerStats {
    #[inline]
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.store(c.load(Relaxed) + n, Relaxed);
    }
}

/// The mvcc engine's own settings (`Engine::Options`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MvccOptions {
    /// With logging on: a checkpoint is taken when the log has grown by more than this
    /// since the last checkpoint's start in it (checked every 100 ms). `None`: the
    /// larger of 64 MiB and the last checkpoint's size (recovery then reads at most
    /// about twice the database). `Some(0)`: whenever the log grew at all (tests).
    pub checkpoint_log_bytes: Option<u64>,
}

/// No read timestamp: the worker runs no transaction.
pub(crate) const IDLE: u64 = u64::MAX;

pub struct MvccEngine {
    schema: Arc<Schema>,
    pub(crate) catalog: Arc<Catalog>,
    /// The last commit timestamp handed out. A read timestamp is its value at begin.
    /// (Shared with the log's flusher, which reads it to bound what it flushes.)
    pub(crate) clock: Arc<CachePadded<AtomicU64>>,
    /// Each worker's read timestamp while it runs a transaction ([`IDLE`] otherwise):
    /// garbage collection keeps what the smallest of them can see.
    pub(crate) active: Box<[CachePadded<AtomicU64>]>,
    pub(crate) stats: Box<[CachePadded<WorkerStats>]>,
    pub(crate) logger: Option<Arc<log::Logger>>,
    pub(crate) log_mode: LogMode,
    flusher: Mutex<Option<JoinHandle<()>>>,
    shut: AtomicBool,
    storage: Arc<dyn storage::Storage>,
    /// The database directory's files (logging on, or a recovered log).
    log_dir: Option<recovery::LogDir>,
    /// The directory made for a log nobody asked to keep (removed on drop).
    #[allow(dead_code)]
    temp_dir: Option<storage::temp::TempDir>,
    /// `open` replayed a log whose load had finished.
    recovered: Option<Replayed>,
    /// The checkpointer (logging on, once the load is done or a log was recovered).
    ckpt: checkpoint::Slot,
    /// `MvccOptions::checkpoint_log_bytes`.
    checkpoint_log_bytes: Option<u64>,
}

impl MvccEngine {
    /// The last commit timestamp handed out.
    pub fn clock(&self) -> u64 {
        self.clock.load(SeqCst)
    }

    /// Path of the log file, when logging is on.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.logger.as_ref().map(|l| l.path.clone())
    }

    /// Every commit with a timestamp at or below this is durable (0 without logging).
    pub fn durable_ts(&self) -> u64 {
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
            let rows = checkpoint::Versions {
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
            .start_once("mvcc-ckpt", make)
            .map_err(api::Error::Fatal)
    }

    /// How many versions the chain of `key` in `table` holds (tests and diagnostics;
    /// 0: no object). Exact only when no transaction runs.
    pub fn chain_len(&self, table: api::TableId, key: &[u8]) -> usize {
        let t = &self.catalog.tables[table.0 as usize];
        let g = crossbeam_epoch::pin();
        let (hit, _, _) = t.primary.get(key, &g);
        let Some(o) = hit else { return 0 };
        // SAFETY: found by a pinned lookup.
        let mut v = unsafe { version::Obj::from_u64(o) }.head.load(Acquire);
        let mut n = 0;
        while !v.is_null() {
            n += 1;
            // SAFETY: pinned; versions are retired through the epoch.
            v = unsafe { (*v).next.load(Acquire) };
        }
        n
    }
}

/// Why `--db` and `--log-dir` name one directory.
const ONE_DIR: &str = "the mvcc engine keeps its database in its log";

impl Engine for MvccEngine {
    type Worker<'e> = MvccWorker<'e>;
    type Options = MvccOptions;
    const NAME: &'static str = "mvcc";
    const COUNTED: api::Counted = api::Counted {
        pages: false,
        index_nodes: true,
        escalations: false,
    };
    const ABOUT: &'static str = "In-memory, multi-version, Hekaton-style: version chains, a global timestamp counter, snapshot reads, validation at commit, a log of committed versions.";
    const DURABLE: bool = true;
    const DB_IS_LOG: bool = true;

    fn place(g: &api::Given) -> Result<api::Place> {
        Ok(api::Place {
            db_dir: api::place::logged_dir(g, ONE_DIR, ONE_DIR)?,
            log_dir: None,
        })
    }

    fn owns_dir(st: &dyn storage::Storage, dir: &Path) -> bool {
        api::place::any_exists(st, dir, &[log::LOG_FILE, log::MARKER_FILE])
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
            "the mvcc engine",
            &[log::LOG_FILE, log::MARKER_FILE],
            &[checkpoint::CKPT_FILE, checkpoint::CKPT_TMP],
        )
    }

    fn remove_db(st: &dyn storage::Storage, dir: &Path, _files: &[PathBuf]) -> Result<()> {
        // Marker before log, as --reload does.
        log::log_dir(dir)
            .remove_with(st, &[checkpoint::SIDE])
            .map_err(api::Error::Fatal)
    }

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        let workers = opts.threads.max(1);
        if workers as u64 > version::WORKER_MASK {
            return Err(api::Error::fatal(format!(
                "the mvcc engine supports at most {} worker threads",
                version::WORKER_MASK
            )));
        }
        let own = opts.own::<MvccOptions>()?;
        let mut catalog = Catalog::new(&schema);
        let (tail, log_dir, recovered, temp_dir) = open_log(&schema, opts, &mut catalog)?;
        // The clock continues above every timestamp the log holds (applied or void), so
        // new commits come after every replayed version and void records stay void.
        let start = recovered
            .as_ref()
            .map_or(1, |r| r.max_ts.max(r.durable).max(1));
        if start >= version::MAX_TS - (1 << 40) {
            return Err(api::Error::fatal(format!(
                "the log in {} has used up its timestamps ({start} of 2^45): load a new database with --reload",
                log_dir.as_ref().map_or(Path::new("?"), |d| &d.dir).display()
            )));
        }
        let clock = Arc::new(CachePadded::new(AtomicU64::new(start)));
        let (logger, flusher) = match tail {
            None => (None, None),
            Some(tail) => {
                let (lg, h) = log::start(tail, workers, clock.clone())?;
                if let (Some(ld), Some(_)) = (&log_dir, &recovered) {
                    // A recovered log's marker holds its mark: the flusher advances it.
                    lg.io
                        .arm_mark(ld.mark_file(opts.storage.clone(), lg.database_id), false)
                        .map_err(api::Error::Fatal)?;
                }
                (Some(lg), Some(h))
            }
        };
        let logging = logger.is_some();
        let e = MvccEngine {
            catalog: Arc::new(catalog),
            schema,
            clock,
            active: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(IDLE)))
                .collect(),
            stats: (0..workers).map(|_| CachePadded::default()).collect(),
            logger,
            log_mode: opts.log,
            flusher: Mutex::new(flusher),
            shut: AtomicBool::new(false),
            storage: opts.storage.clone(),
            log_dir,
            temp_dir,
            recovered,
            ckpt: checkpoint::Slot::default(),
            checkpoint_log_bytes: own.checkpoint_log_bytes,
        };
        if logging && e.recovered.is_some() {
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
        // Every load commit took a timestamp at or below the clock: once it is durable,
        // the whole load is in the log.
        l.wait_durable(self.clock()).map_err(api::Error::Fatal)?;
        // The load marker is the log's durable mark from now on.
        l.io.arm_mark(ld.mark_file(self.storage.clone(), l.database_id), true)
            .map_err(api::Error::Fatal)?;
        self.start_checkpointer()
    }

    fn shutdown(&self) -> Result<()> {
        if self.shut.swap(true, AcqRel) {
            return Ok(());
        }
        // The checkpointer first: it waits for the flusher.
        self.ckpt.stop();
        let Some(l) = &self.logger else {
            return Ok(());
        };
        l.stop();
        if let Some(h) = self.flusher.lock().take() {
            let _ = h.join();
        }
        match l.error() {
            Some(msg) => Err(api::Error::Fatal(msg)),
            None => Ok(()),
        }
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn worker(&self, worker_id: usize) -> MvccWorker<'_> {
        assert!(
            worker_id < self.stats.len(),
            "worker id {worker_id} not below the {} threads the engine was opened for",
            self.stats.len()
        );
        MvccWorker::new(self, worker_id)
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
            "engine": "mvcc",
            "commits": sum(&|s| &s.commits),
            "read_only_commits": sum(&|s| &s.read_only_commits),
            "aborts": aborts,
            "versions_freed": sum(&|s| &s.versions_freed),
            "objects_removed": sum(&|s| &s.objects_removed),
            "clock": self.clock(),
        });
        if let Some(r) = &self.recovered {
            v["recovery"] = serde_json::json!({
                "blocks": r.blocks,
                "records_applied": r.applied,
                "records_discarded": r.discarded,
                "durable_ts": r.durable,
                "rows": r.rows,
                "torn_tail_bytes": r.end.map_or(0, |e| e.torn_bytes),
                "checkpoint": r.checkpoint.as_ref().map(|c| checkpoint::FORMAT.end_json(c)),
            });
        }
        if let Some(l) = &self.logger {
            v["log"] = serde_json::json!({
                "path": l.path.display().to_string(),
                "durable_ts": l.durable(),
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

impl Drop for MvccEngine {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Find, create, replay or remove the log as the options say. Returns where the
/// flusher appends (None: no logging), the directory's files, what was replayed, and
/// the temporary directory made for a log nobody asked to keep.
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
    // The same fingerprint as the memory engine's: table names, row sizes, indexes.
    let fp = schema.fingerprint();
    let logging = opts.log != LogMode::Off;
    // The database is the log: --db and --log-dir name one place.
    let dir = api::place::one_dir(opts.db_dir.as_deref(), opts.log_dir.as_deref(), ONE_DIR)?;
    let Some(dir) = dir else {
        if !opts.create {
            return Err(api::Error::fatal(
                "the mvcc engine keeps its data only in its log: give the --db of a run with --log sync or --log async",
            ));
        }
        if !logging {
            return Ok((None, None, None, None));
        }
        let tmp = storage::temp::create("mvcc")
            .map_err(|e| api::Error::fatal(format!("cannot create a log directory: {e}")))?;
        let ld = log::log_dir(tmp.path());
        let tail = ld.create_tail(st, fp).map_err(api::Error::Fatal)?;
        return Ok((Some(tail), Some(ld), None, Some(tmp)));
    };
    let ld = log::log_dir(&dir);
    // The memory engine's own list (`MemoryEngine::owns_dir` asks the same), kept in
    // `storage` so that this engine need not depend on that one.
    if api::place::any_exists(st, &dir, storage::valuelog::identity::memory::OWNED) {
        return Err(api::Error::fatal(format!(
            "{} holds a memory-engine log: the mvcc engine does not open it, refused",
            dir.display()
        )));
    }
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
                "{} holds an mvcc-engine log: with --log off this run's changes would not be logged; give --log sync or --log async (or --reload to start over)",
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
            "no mvcc-engine log in {}: nothing to check",
            dir.display()
        )));
    }
    if !logging {
        return Err(api::Error::fatal(format!(
            "{}: the mvcc engine keeps its database in its log: give --log sync or --log async (with --log off nothing is kept)",
            dir.display()
        )));
    }
    let tail = ld.create_tail(st, fp).map_err(api::Error::Fatal)?;
    Ok((Some(tail), Some(ld), None, None))
}
