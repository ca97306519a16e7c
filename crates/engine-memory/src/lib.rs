//! The `memory` engine: a Silo-style in-memory design. Records live in memory with a TID
//! word each; transactions run optimistically and validate at commit (`occ`), reading the
//! global epoch (`epoch`) instead of any shared counter; indexes are a B+tree with
//! optimistic lock coupling (`btree`) or a hash table (`hash`); value logging with
//! epoch-based group commit (`log`); removed records and index entries are reclaimed with
//! crossbeam-epoch.
//!
//! Modules: `catalog` (tables and their indexes), `record`, `btree`, `hash`, `xct` (a
//! worker's transaction operations), `occ` (the commit protocol), `epoch`, `log`.
//! See docs/design/memory-engine.md. The engine never waits except through `rt`.

pub mod btree;
pub mod catalog;
pub mod epoch;
pub mod hash;
pub mod log;
mod occ;
pub mod record;
pub mod xct;

use api::{Engine, EngineOptions, LogMode, Result, Schema};
use catalog::Catalog;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use log::{read_log, LogContents, LogRecord};
pub use xct::MemoryWorker;

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
    pub(crate) catalog: Catalog,
    pub(crate) epochs: Arc<epoch::Epochs>,
    pub(crate) logger: Option<Arc<log::Logger>>,
    pub(crate) log_mode: LogMode,
    pub(crate) stats: Box<[CachePadded<WorkerStats>]>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    shut: std::sync::atomic::AtomicBool,
    /// The default log directory this engine created (removed on drop).
    temp_log_dir: Option<PathBuf>,
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
        self.logger.as_ref().map_or(0, |l| l.durable_epoch())
    }
}

fn default_log_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("oltpscope-memory-{}-{nanos}", std::process::id()))
}

impl Engine for MemoryEngine {
    type Worker<'e> = MemoryWorker<'e>;
    const NAME: &'static str = "memory";

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        let workers = opts.threads.max(1);
        let catalog = Catalog::new(&schema)?;
        let epochs = epoch::Epochs::new();
        let mut threads = Vec::new();
        let mut temp_log_dir = None;
        // The logger first: if its file cannot be created, no thread is left running.
        let logger = match opts.log {
            LogMode::Off => None,
            LogMode::Async | LogMode::Sync => {
                let dir = opts.log_dir.clone().unwrap_or_else(default_log_dir);
                if opts.log_dir.is_none() {
                    temp_log_dir = Some(dir.clone());
                }
                let (lg, h) = log::Logger::start(&dir, workers, epochs.clone())?;
                threads.push(h);
                Some(lg)
            }
        };
        threads.push(epochs.start());
        Ok(MemoryEngine {
            schema,
            catalog,
            epochs,
            logger,
            log_mode: opts.log,
            stats: (0..workers).map(|_| CachePadded::default()).collect(),
            threads: Mutex::new(threads),
            shut: false.into(),
            temp_log_dir,
        })
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
        if let Some(l) = &self.logger {
            v["log"] = serde_json::json!({
                "path": l.path.display().to_string(),
                "durable_epoch": l.durable_epoch(),
                "bytes": l.bytes.load(Relaxed),
                "blocks": l.blocks.load(Relaxed),
                "fsyncs": l.fsyncs.load(Relaxed),
            });
        }
        v
    }
}

impl Drop for MemoryEngine {
    fn drop(&mut self) {
        let _ = self.shutdown();
        // A log nobody asked to keep (no --log-dir) would fill the temp directory run
        // after run: it goes with the engine.
        if let Some(d) = &self.temp_log_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
