//! `db`: the engine's shared state (`Inner`: the schema, the buffer pool, the log, the
//! lock manager, the tables, the active transaction table, the control file) that the
//! transaction layer, checkpoints and recovery work on. It sits below all three, so
//! none of them imports the crate root that builds it (`lib.rs`).

use crate::bpool::BufferPool;
use crate::btree::Tree;
use crate::checkpoint::control::Control;
use crate::heap::HeapFile;
use crate::lock::LockManager;
use crate::log::{Log, Segments};
use crate::xct::txnlog::TxnSlot;
use api::Schema;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A table at run time: its heap and its indexes (primary first).
pub struct TableRt {
    pub heap: HeapFile,
    pub trees: Vec<Tree>,
    pub row_size: usize,
    /// Offset of the row in its heap record (primary key stored in front when the
    /// table has secondary indexes).
    pub row_off: usize,
}

pub struct Inner {
    pub schema: Arc<Schema>,
    pub pool: BufferPool,
    pub log: Arc<Log>,
    pub locks: LockManager,
    pub tables: Vec<TableRt>,
    pub slots: Mutex<Vec<Arc<TxnSlot>>>,
    pub next_txn: AtomicU64,
    pub commits: AtomicU64,
    pub aborts: AtomicU64,
    pub checkpoints: AtomicU64,
    /// The log's files (storage, directory, database id, segment size).
    pub segs: Segments,
    /// The control file's content as last written (checkpoints update it).
    pub control: Mutex<Control>,
    /// One checkpoint at a time (the daemon, load_done and close may race).
    pub checkpoint_lock: Mutex<()>,
    /// Opened read-only: nothing is ever written (see `EngineOptions::read_only`).
    pub read_only: bool,
    /// A background thread's failure (see `fail`).
    pub(crate) failure: Mutex<Option<String>>,
    pub(crate) failed: AtomicBool,
    pub(crate) stop: AtomicBool,
    pub(crate) wake: rt::Event,
    pub(crate) dir: PathBuf,
}

impl Inner {
    /// Record a background thread's failure (the first one): commits report it.
    pub(crate) fn fail(&self, why: String) {
        if self.log.is_detached() {
            return; // the crash hook, not a failure
        }
        let mut f = self.failure.lock();
        if f.is_none() {
            *f = Some(why);
            self.failed.store(true, Ordering::Release);
        }
    }

    /// Whether any write failed: the log's, the pool's or a background thread's.
    #[inline]
    pub fn failed(&self) -> bool {
        self.log.failed() || self.pool.failed() || self.failed.load(Ordering::Acquire)
    }

    /// The first failure, as the one line a user sees.
    pub fn failure(&self) -> Option<String> {
        self.log
            .failure()
            .or_else(|| self.pool.failure())
            .or_else(|| self.failure.lock().clone())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
