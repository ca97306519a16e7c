//! The `partitioned` engine: an in-memory design in the style of H-Store/VoltDB (the
//! "revisited" paper's DBMS N). Tables with a partition key (`api::Partitioning`) are
//! split into partitions; a transaction owns each partition it touches for its whole
//! run and works on it with no latches, no record locks and no concurrency control,
//! rolling back from an undo log on abort. Partitions are taken in a fixed order
//! (H-Store's simple multi-partition scheme); a transaction that finds it needs one out
//! of order aborts and is retried owning the whole set from the start (`xct`). Tables
//! without a partition key are one shared copy (read under any partition, written under
//! all). Durability is by command logging, as in H-Store: with `--log async|sync` the
//! whole database is written to a snapshot after the load, and each committed writing
//! transaction's command (its type and encoded inputs, handed over by the driver) is
//! logged; recovery reads the snapshot and hands the commands after its log position
//! back to the driver, which re-executes them through the workload. Checkpoints write
//! a new snapshot whenever the log has grown enough, and free the log before it.
//!
//! Modules: `catalog`, `index`, `partition`, `xct`, `log`, `snapshot`, `checkpoint`,
//! `durable`. See docs/design/partitioned-engine.md.

pub mod catalog;
pub mod checkpoint;
pub mod durable;
pub mod index;
pub mod log;
pub mod partition;
pub mod rbtree;
pub mod snapshot;
pub mod xct;

use api::{Command, Engine, EngineOptions, LogMode, Result, Schema};
use crossbeam_utils::CachePadded;
use partition::Partition;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;

pub use index::OrderedKind;
pub use xct::PartitionedWorker;

/// This engine's own options (`Engine::Options`; `--partitions`, `--ordered-index`,
/// `--checkpoint-log`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PartitionedOptions {
    /// Number of partitions; `None`: one per worker thread.
    pub partitions: Option<usize>,
    /// The structure of ordered indexes (B+tree-kind primary and all secondary ones).
    pub ordered: index::OrderedKind,
    /// With logging on, take a checkpoint when the log has grown by more than this
    /// since the newest snapshot's position (`Some(0)`: whenever it grew); `None`: when
    /// replaying the log since the snapshot would cost more than reading the snapshot
    /// back (`checkpoint::due`).
    pub checkpoint_log_bytes: Option<u64>,
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
    /// Shared with the checkpointer's threads.
    pub(crate) parts: Arc<[Partition]>,
    /// The tables without a partition key, in one copy.
    pub(crate) shared: Arc<Partition>,
    pub(crate) stats: Box<[CachePadded<WorkerStats>]>,
    ordered: index::OrderedKind,
    checkpoint_log_bytes: Option<u64>,
    /// The snapshot, the command log and its flusher (None: nothing kept).
    pub(crate) durable: Option<durable::Durability>,
    /// Commits are logged: from the end of the load, or of the replay of a recovered
    /// log (never while loading or replaying).
    pub(crate) logging: AtomicBool,
    /// `--log sync`: a commit waits until its command is durable.
    pub(crate) sync: bool,
    /// Recovered commands not yet taken by `recovered_commands`.
    recovered: parking_lot::Mutex<Option<Vec<Command>>>,
    /// When `recovered_commands` handed them over: `replay_done` measures the replay.
    replay_started: parking_lot::Mutex<Option<std::time::Instant>>,
    has_data: bool,
    shut: AtomicBool,
}

impl PartitionedEngine {
    /// Open with these options (`Engine::open` takes them from `opts.own`).
    pub fn open_with(
        schema: Arc<Schema>,
        opts: &EngineOptions,
        p: PartitionedOptions,
    ) -> Result<Self> {
        let n = p.partitions.unwrap_or(opts.threads.max(1));
        if n == 0 || n > MAX_PARTITIONS {
            return Err(api::Error::fatal(format!(
                "--partitions must be between 1 and {MAX_PARTITIONS}, got {n}"
            )));
        }
        let mut e = PartitionedEngine {
            parts: (0..n)
                .map(|_| Partition::new(catalog::Tables::new(&schema, p.ordered)))
                .collect(),
            shared: Arc::new(Partition::new(catalog::Tables::new(&schema, p.ordered))),
            stats: (0..opts.threads.max(1))
                .map(|_| CachePadded::default())
                .collect(),
            ordered: p.ordered,
            checkpoint_log_bytes: p.checkpoint_log_bytes,
            schema,
            durable: None,
            logging: AtomicBool::new(false),
            sync: opts.log == LogMode::Sync,
            recovered: parking_lot::Mutex::new(None),
            replay_started: parking_lot::Mutex::new(None),
            has_data: false,
            shut: AtomicBool::new(false),
        };
        let opened = durable::open(&e.schema, opts, || e.worker(0))?;
        e.durable = opened.durability;
        e.has_data = opened.commands.is_some();
        *e.recovered.get_mut() = opened.commands;
        Ok(e)
    }

    /// The logger, when commits are logged now.
    #[inline]
    pub(crate) fn active_logger(&self) -> Option<&Arc<log::Logger>> {
        if !self.logging.load(Acquire) {
            return None;
        }
        self.durable.as_ref()?.logger.get()
    }

    /// Whether workers take commands (a database kept in a directory, not read-only).
    pub(crate) fn logs_commands(&self) -> bool {
        self.durable.as_ref().is_some_and(|d| !d.read_only)
    }

    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// The checkpointer, once commits are logged (a database kept with logging on).
    pub fn checkpointer(&self) -> Option<&Arc<checkpoint::Checkpointer>> {
        self.durable.as_ref()?.checkpointer.get()
    }

    /// Commits are logged now: start taking checkpoints.
    fn start_checkpoints(&self) -> Result<()> {
        match &self.durable {
            Some(d) => d.start_checkpoints(
                self.parts.clone(),
                self.shared.clone(),
                self.schema.tables.len() as u32,
                self.checkpoint_log_bytes,
            ),
            None => Ok(()),
        }
    }

    /// Rows of `table` in partition `p` (tests and diagnostics); waits to own it.
    pub fn rows_in(&self, table: api::TableId, p: usize) -> usize {
        let _own = self.parts[p].acquire();
        // SAFETY: owned.
        unsafe { self.parts[p].data() }.tables[table.0 as usize]
            .primary
            .len()
    }

    /// A digest of every row of every table, independent of partitioning and order
    /// (tests: a recovered database equals the one that crashed). Waits to own every
    /// partition.
    pub fn digest(&self) -> u64 {
        let owned: Vec<_> = self.parts.iter().map(|p| p.acquire()).collect();
        let mut sum = 0u64;
        for part in self.parts.iter().chain(std::iter::once(&*self.shared)) {
            // SAFETY: every partition owned, so no transaction reads or writes any data.
            let data = unsafe { part.data() };
            for (t, table) in data.tables.iter().enumerate() {
                table.primary.for_each(&mut |k, r| {
                    let c = log::crc(&[&(t as u32).to_le_bytes(), k, &[0xA5], r]) as u64;
                    let c2 = log::crc(&[r, k]) as u64;
                    sum = sum.wrapping_add(c << 32 | c2);
                });
            }
        }
        drop(owned);
        sum
    }

    fn sum(&self, f: &dyn Fn(&WorkerStats) -> &AtomicU64) -> u64 {
        self.stats.iter().map(|s| f(s).load(Relaxed)).sum()
    }
}

impl Engine for PartitionedEngine {
    type Worker<'e> = PartitionedWorker<'e>;
    type Options = PartitionedOptions;
    const NAME: &'static str = "partitioned";
    const ABOUT: &'static str = "In-memory, partitioned, H-Store-style: a transaction owns the partitions it touches (taken in a fixed order) and runs on them with no concurrency control; durable by command logging (a snapshot after the load, then each committed transaction's type and inputs; recovery replays them).";
    const DURABLE: bool = true;
    const DB_IS_LOG: bool = true;

    fn place(g: &api::Given) -> Result<api::Place> {
        Ok(api::Place {
            db_dir: api::place::logged_dir(
                g,
                durable::ONE_DIR,
                "the partitioned engine keeps a database only with its command log",
            )?,
            log_dir: None,
        })
    }

    fn owns_dir(st: &dyn storage::Storage, dir: &Path) -> bool {
        api::place::any_exists(st, dir, &[log::LOG_FILE, snapshot::SNAPSHOT_FILE])
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
            "the partitioned engine",
            &[log::LOG_FILE, snapshot::SNAPSHOT_FILE, log::MARK_FILE],
            &[],
        )
    }

    fn remove_db(st: &dyn storage::Storage, dir: &Path, _files: &[PathBuf]) -> Result<()> {
        // Snapshot before log, as --reload does.
        durable::Dir::new(dir).remove(st)
    }

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        Self::open_with(schema, opts, opts.own::<PartitionedOptions>()?)
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn worker(&self, worker_id: usize) -> PartitionedWorker<'_> {
        PartitionedWorker::new(self, worker_id)
    }

    fn has_data(&self) -> bool {
        self.has_data
    }

    fn load_done(&self) -> Result<()> {
        let Some(d) = &self.durable else {
            return Ok(());
        };
        // Own every partition (ascending, as transactions do) while writing them out.
        let owned: Vec<_> = self.parts.iter().map(|p| p.acquire()).collect();
        let tables = self.schema.tables.len() as u32;
        d.load_done(tables, &mut |w| {
            for part in self.parts.iter().chain(std::iter::once(&*self.shared)) {
                // SAFETY: every partition owned, so no transaction reads or writes any data.
                let data = unsafe { part.data() };
                for (t, table) in data.tables.iter().enumerate() {
                    let mut res = Ok(());
                    table.primary.for_each(&mut |k, r| {
                        if res.is_ok() {
                            res = w.row(t as u32, k, r);
                        }
                    });
                    res?;
                }
            }
            Ok(())
        })?;
        drop(owned);
        self.logging.store(true, Release);
        self.start_checkpoints()
    }

    fn recovered_commands(&self) -> Result<Vec<Command>> {
        let cmds = self.recovered.lock().take();
        if cmds.is_some() {
            *self.replay_started.lock() = Some(std::time::Instant::now());
        }
        Ok(cmds.unwrap_or_default())
    }

    fn replay_done(&self) -> Result<()> {
        if let (Some(t0), Some(d)) = (self.replay_started.lock().take(), &self.durable) {
            d.replayed(t0.elapsed());
        }
        // A read-only recovery (`check`) has no logger: nothing is logged then.
        if self
            .durable
            .as_ref()
            .is_some_and(|d| d.logger.get().is_some())
        {
            self.logging.store(true, Release);
            self.start_checkpoints()?;
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if self.shut.swap(true, AcqRel) {
            return Ok(());
        }
        match &self.durable {
            Some(d) => d.shutdown(),
            None => Ok(()),
        }
    }

    fn table_sizes(&self) -> Result<Vec<api::TableSize>> {
        // Own every partition (ascending, as transactions do): a consistent count.
        let owned: Vec<_> = self.parts.iter().map(|p| p.acquire()).collect();
        let mut records = vec![0u64; self.schema.tables.len()];
        for part in self.parts.iter().chain(std::iter::once(&*self.shared)) {
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
            "log": self.durable.as_ref().and_then(|d| d.logger.get()).map(|l| {
                let mut v = serde_json::json!({
                    "commands_durable": l.durable(),
                    "bytes": l.io.bytes.load(Relaxed),
                    "blocks": l.io.blocks.load(Relaxed),
                    "fsyncs": l.io.fsyncs.load(Relaxed),
                });
                // The disk the log takes (its freed prefix excluded), where known.
                if let Ok(Some(a)) = l.file.allocated() {
                    v["allocated_bytes"] = a.into();
                }
                if let Some(c) = self.checkpointer() {
                    c.stats(&mut v);
                }
                if let Some(r) = self.durable.as_ref().and_then(|d| *d.recovery.lock()) {
                    v["recovery"] = serde_json::to_value(r).unwrap_or_default();
                }
                v
            }),
        })
    }
}

impl Drop for PartitionedEngine {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
