//! The `partitioned` engine: an in-memory design in the style of H-Store/VoltDB (the
//! "revisited" paper's DBMS N). Tables with a partition key (`api::Partitioning`) are
//! split into partitions; a transaction owns each partition it touches for its whole
//! run and works on it with no latches, no record locks and no concurrency control,
//! rolling back from an undo log on abort. Partitions are taken in a fixed order
//! (H-Store's simple multi-partition scheme); a transaction that finds it needs one out
//! of order aborts and is retried owning the whole set from the start (`xct`). Tables
//! without a partition key are one shared copy (read under any partition, written under
//! all). No logging yet: the engine runs with `--log off` only.
//!
//! Modules: `catalog`, `index`, `partition`, `xct`. See docs/design/partitioned-engine.md.

pub mod catalog;
pub mod index;
pub mod partition;
pub mod rbtree;
pub mod xct;

use api::{Engine, EngineOptions, LogMode, Result, Schema};
use crossbeam_utils::CachePadded;
use partition::Partition;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

pub use index::OrderedKind;
pub use xct::PartitionedWorker;

/// This engine's own options (`Engine::Options`; `--partitions`, `--ordered-index`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PartitionedOptions {
    /// Number of partitions; `None`: one per worker thread.
    pub partitions: Option<usize>,
    /// The structure of ordered indexes (B+tree-kind primary and all secondary ones).
    pub ordered: index::OrderedKind,
}

/// The most partitions an engine may have.
pub const MAX_PARTITIONS: usize = 1024;

/// A worker's counters: written by its worker (relaxed), read by `stats`.
#[derive(Default)]
pub struct WorkerStats {
    pub single_partition_commits: AtomicU64,
    pub multi_partition_commits: AtomicU64,
    /// Aborts of any cause (out-of-order included).
    pub aborts: AtomicU64,
    /// Aborts because a partition was needed below one already owned and was taken.
    pub out_of_order_aborts: AtomicU64,
}

impl WorkerStats {
    #[inline]
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        // Workers with ids that collide modulo the slots share one: stay exact.
        c.fetch_add(n, Relaxed);
    }
}

pub struct PartitionedEngine {
    schema: Arc<Schema>,
    pub(crate) parts: Box<[Partition]>,
    /// The tables without a partition key, in one copy.
    pub(crate) shared: Partition,
    pub(crate) stats: Box<[CachePadded<WorkerStats>]>,
    ordered: index::OrderedKind,
}

impl PartitionedEngine {
    /// Open with these options (`Engine::open` takes them from `opts.own`).
    pub fn open_with(
        schema: Arc<Schema>,
        opts: &EngineOptions,
        p: PartitionedOptions,
    ) -> Result<Self> {
        if opts.log != LogMode::Off {
            return Err(api::Error::fatal(
                "the partitioned engine does not log yet: run it with --log off (nothing it holds survives the run)",
            ));
        }
        if opts.log_dir.is_some() || opts.db_dir.is_some() {
            return Err(api::Error::fatal(
                "the partitioned engine keeps nothing on storage yet: give no --db or --log-dir",
            ));
        }
        if !opts.create {
            return Err(api::Error::fatal(
                "the partitioned engine keeps nothing on storage yet: there is no database to open",
            ));
        }
        let n = p.partitions.unwrap_or(opts.threads.max(1));
        if n == 0 || n > MAX_PARTITIONS {
            return Err(api::Error::fatal(format!(
                "--partitions must be between 1 and {MAX_PARTITIONS}, got {n}"
            )));
        }
        Ok(PartitionedEngine {
            parts: (0..n)
                .map(|_| Partition::new(catalog::Tables::new(&schema, p.ordered)))
                .collect(),
            shared: Partition::new(catalog::Tables::new(&schema, p.ordered)),
            stats: (0..opts.threads.max(1))
                .map(|_| CachePadded::default())
                .collect(),
            ordered: p.ordered,
            schema,
        })
    }

    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// Rows of `table` in partition `p` (tests and diagnostics); waits to own it.
    pub fn rows_in(&self, table: api::TableId, p: usize) -> usize {
        let _own = self.parts[p].acquire();
        // SAFETY: owned.
        unsafe { self.parts[p].data() }.tables[table.0 as usize]
            .primary
            .len()
    }

    fn sum(&self, f: &dyn Fn(&WorkerStats) -> &AtomicU64) -> u64 {
        self.stats.iter().map(|s| f(s).load(Relaxed)).sum()
    }
}

impl Engine for PartitionedEngine {
    type Worker<'e> = PartitionedWorker<'e>;
    type Options = PartitionedOptions;
    const NAME: &'static str = "partitioned";

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        Self::open_with(schema, opts, opts.own::<PartitionedOptions>()?)
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn worker(&self, worker_id: usize) -> PartitionedWorker<'_> {
        PartitionedWorker::new(self, worker_id)
    }

    fn table_sizes(&self) -> Result<Vec<api::TableSize>> {
        // Own every partition (ascending, as transactions do): a consistent count.
        let owned: Vec<_> = self.parts.iter().map(|p| p.acquire()).collect();
        let mut records = vec![0u64; self.schema.tables.len()];
        for part in self.parts.iter().chain(std::iter::once(&self.shared)) {
            // SAFETY: every partition owned, so no transaction reads or writes any data.
            let d = unsafe { part.data() };
            for (r, t) in records.iter_mut().zip(&d.tables) {
                *r += t.primary.len() as u64;
            }
        }
        drop(owned);
        Ok(self
            .schema
            .tables
            .iter()
            .zip(records)
            .map(|(t, records)| api::TableSize {
                name: t.name.clone(),
                records,
                ..Default::default()
            })
            .collect())
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "engine": "partitioned",
            "partitions": self.parts.len(),
            "ordered_index": match self.ordered {
                index::OrderedKind::BTree => "btree",
                index::OrderedKind::RbTree => "rbtree",
            },
            "single_partition_commits": self.sum(&|s| &s.single_partition_commits),
            "multi_partition_commits": self.sum(&|s| &s.multi_partition_commits),
            "aborts": self.sum(&|s| &s.aborts),
            "out_of_order_aborts": self.sum(&|s| &s.out_of_order_aborts),
        })
    }
}
