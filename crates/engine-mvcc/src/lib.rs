//! The `mvcc` engine: a multi-version in-memory design in the style of Hekaton (the
//! "revisited" paper's DBMS M). Indexes (engine-memory's B+tree and hash index) map a
//! key to a per-key object whose chain of versions, newest first, carries commit
//! timestamps (`version`); a global timestamp counter gives each transaction its read
//! timestamp at begin and each committing writer its commit timestamp. Readers see the
//! newest version committed at or before their read timestamp (a snapshot); writers
//! install an uncommitted version at the head of a chain and lose at once against
//! another writer (first writer wins) (`xct`); commit validates reads and index nodes
//! against phantoms for serializability, read-only transactions need not (`validate`);
//! versions nobody can see any more, and deleted keys, are collected cooperatively
//! (`gc`). No logging yet: the engine runs with `--log off` only.
//!
//! Modules: `catalog`, `version`, `xct`, `validate`, `gc`. See docs/design/mvcc-engine.md.

pub mod catalog;
pub mod gc;
pub mod validate;
pub mod version;
pub mod xct;

use api::{Engine, EngineOptions, LogMode, Result, Schema};
use catalog::Catalog;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

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

/// No read timestamp: the worker runs no transaction.
pub(crate) const IDLE: u64 = u64::MAX;

pub struct MvccEngine {
    schema: Arc<Schema>,
    pub(crate) catalog: Catalog,
    /// The last commit timestamp handed out. A read timestamp is its value at begin.
    pub(crate) clock: CachePadded<AtomicU64>,
    /// Each worker's read timestamp while it runs a transaction ([`IDLE`] otherwise):
    /// garbage collection keeps what the smallest of them can see.
    pub(crate) active: Box<[CachePadded<AtomicU64>]>,
    pub(crate) stats: Box<[CachePadded<WorkerStats>]>,
}

impl MvccEngine {
    /// The last commit timestamp handed out.
    pub fn clock(&self) -> u64 {
        self.clock.load(SeqCst)
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

impl Engine for MvccEngine {
    type Worker<'e> = MvccWorker<'e>;
    const NAME: &'static str = "mvcc";
    const COUNTED: api::Counted = api::Counted {
        pages: false,
        index_nodes: true,
        escalations: false,
    };

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        if opts.log != LogMode::Off {
            return Err(api::Error::fatal(
                "the mvcc engine does not log yet: run it with --log off (nothing it holds survives the run)",
            ));
        }
        if opts.log_dir.is_some() || opts.db_dir.is_some() {
            return Err(api::Error::fatal(
                "the mvcc engine keeps nothing on storage yet: give no --db or --log-dir",
            ));
        }
        if !opts.create {
            return Err(api::Error::fatal(
                "the mvcc engine keeps nothing on storage yet: there is no database to open",
            ));
        }
        let workers = opts.threads.max(1);
        if workers as u64 > version::WORKER_MASK {
            return Err(api::Error::fatal(format!(
                "the mvcc engine supports at most {} worker threads",
                version::WORKER_MASK
            )));
        }
        Ok(MvccEngine {
            catalog: Catalog::new(&schema),
            schema,
            clock: CachePadded::new(AtomicU64::new(1)),
            active: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(IDLE)))
                .collect(),
            stats: (0..workers).map(|_| CachePadded::default()).collect(),
        })
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
            .map(|t| {
                let (records, mut nodes) = t.primary.census(&g);
                for s in &t.secondary {
                    nodes += s.index.census(&g).1;
                }
                api::TableSize {
                    name: t.name.clone(),
                    records,
                    heap_pages: None,
                    index_pages: None,
                    index_nodes: Some(nodes),
                }
            })
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
        serde_json::json!({
            "engine": "mvcc",
            "commits": sum(&|s| &s.commits),
            "read_only_commits": sum(&|s| &s.read_only_commits),
            "aborts": aborts,
            "versions_freed": sum(&|s| &s.versions_freed),
            "objects_removed": sum(&|s| &s.objects_removed),
            "clock": self.clock(),
        })
    }
}
