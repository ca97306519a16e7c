//! The `disk` engine: a Shore-MT-style storage manager (see docs/design/disk-engine.md).
//! Components, each a module (reports attribute time by module path): `bpool` (buffer
//! pool), `latch` (page latches), `heap` (slotted heap pages), `btree` (B+tree on pages),
//! `lock` (hierarchical lock manager), `log` (WAL), `recovery` (ARIES restart and
//! checkpoints), `xct` (transactions), `catalog` (schema layout on page 0).
//! This file owns opening, creating, recovering, background daemons and shutdown; it must
//! never implement a transactional operation itself (those are in `xct`).

pub mod bpool;
pub mod btree;
pub mod catalog;
pub mod heap;
pub mod latch;
pub mod lock;
pub mod log;
pub mod page;
pub mod recovery;
pub mod xct;

use api::{Engine, EngineOptions, Error, LogMode, Result, Schema};
use bpool::BufferPool;
use btree::Tree;
use heap::HeapFile;
use lock::{LockConfig, LockManager};
use log::{Kind, Log, LogImage, Rec};
use parking_lot::Mutex;
use recovery::StopAt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use xct::TxnSlot;

pub use xct::DiskWorker;

const DATA_FILE: &str = "data.db";
const CLEANER_PERIOD: Duration = Duration::from_millis(100);
const DEFAULT_CHECKPOINT_MS: u64 = 5000;
/// The smallest default pool (64 MiB).
const MIN_DEFAULT_FRAMES: usize = 8192;

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
    stop: AtomicBool,
    wake: rt::Event,
    dir: PathBuf,
    log_dir: PathBuf,
}

pub struct DiskEngine {
    inner: Arc<Inner>,
    daemons: Mutex<Vec<JoinHandle<()>>>,
    has_data: bool,
    closed: AtomicBool,
    _tmp: Option<tempfile::TempDir>,
}

fn frames_for(schema: &Schema, opts: &EngineOptions) -> usize {
    match opts.bpool_bytes {
        Some(b) => (b as usize / page::PAGE_SIZE).max(bpool::MIN_FRAMES),
        None => {
            // Enough for the data: rows with their slot, and index entries (an average
            // key, leaves about two thirds full), plus a quarter for inner pages and
            // growth; never more than 60% of the memory available now (a larger
            // database then runs with eviction).
            let per_entry = btree::entry_bytes_estimate();
            let data: u64 = schema
                .tables
                .iter()
                .map(|t| {
                    t.expected_rows
                        * (t.row_size as u64 + 8 + per_entry * (1 + t.secondary.len() as u64))
                })
                .sum();
            let want = data / 4 * 5;
            let cap = available_memory_bytes().map_or(u64::MAX, |m| m / 10 * 6);
            (want.min(cap) as usize / page::PAGE_SIZE).max(MIN_DEFAULT_FRAMES)
        }
    }
}

/// MemAvailable from /proc/meminfo, if readable.
fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kib| kib * 1024)
}

fn build_inner(
    schema: Arc<Schema>,
    opts: &EngineOptions,
    pool: BufferPool,
    log: Arc<Log>,
    roots: &[Vec<u64>],
    dir: &Path,
    log_dir: &Path,
) -> Result<Inner> {
    let mut tables = Vec::with_capacity(schema.tables.len());
    for (i, t) in schema.tables.iter().enumerate() {
        let row_off = if t.secondary.is_empty() {
            0
        } else {
            xct::PK_PREFIX
        };
        if t.row_size + row_off > heap::MAX_SLOT {
            return Err(Error::fatal(format!(
                "table {}: rows of {} bytes do not fit a {}-byte page",
                t.name,
                t.row_size,
                page::PAGE_SIZE
            )));
        }
        let mut trees = Vec::with_capacity(roots[i].len());
        for (j, &root) in roots[i].iter().enumerate() {
            trees.push(Tree::open(&pool, root, i as u32, j as u16)?);
        }
        tables.push(TableRt {
            heap: HeapFile::new(i as u32, t.row_size + row_off),
            trees,
            row_size: t.row_size,
            row_off,
        });
    }
    let cfg = LockConfig {
        escalation_threshold: opts.escalation.unwrap_or(25),
        ..LockConfig::default()
    };
    Ok(Inner {
        schema,
        pool,
        log,
        locks: LockManager::new(cfg),
        tables,
        slots: Mutex::new(Vec::new()),
        next_txn: AtomicU64::new(1),
        commits: AtomicU64::new(0),
        aborts: AtomicU64::new(0),
        checkpoints: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        wake: rt::Event::new(),
        dir: dir.to_path_buf(),
        log_dir: log_dir.to_path_buf(),
    })
}

fn open_data(dir: &Path) -> Result<File> {
    let path = dir.join(DATA_FILE);
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::fatal(format!("opening {}: {e}", path.display())))
}

impl DiskEngine {
    /// Open (recovering if needed) or create the database; `stop` ends recovery early
    /// (crash tests) with an error after leaving the files as a crash there would.
    pub fn open_with(schema: Arc<Schema>, opts: &EngineOptions, stop: StopAt) -> Result<Self> {
        catalog::check_limits(&schema)?;
        let (dir, tmp) = match &opts.db_dir {
            Some(d) => (d.clone(), None),
            None => {
                let t = tempfile::tempdir()?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::fatal(format!("creating {}: {e}", dir.display())))?;
        let log_dir = opts.log_dir.clone().unwrap_or_else(|| dir.clone());
        std::fs::create_dir_all(&log_dir)?;
        let file = open_data(&dir)?;
        let frames = frames_for(&schema, opts);
        let (inner, has_data) = match catalog::read(&file, &schema)? {
            None => (
                Self::create(schema, opts, file, frames, &dir, &log_dir)?,
                false,
            ),
            Some(cat) => (
                Self::recover(schema, opts, file, frames, cat, &dir, &log_dir, stop)?,
                true,
            ),
        };
        let e = DiskEngine {
            inner: Arc::new(inner),
            daemons: Mutex::new(Vec::new()),
            has_data,
            closed: AtomicBool::new(false),
            _tmp: tmp,
        };
        e.start_daemons(opts);
        Ok(e)
    }

    fn create(
        schema: Arc<Schema>,
        opts: &EngineOptions,
        file: File,
        frames: usize,
        dir: &Path,
        log_dir: &Path,
    ) -> Result<Inner> {
        file.set_len(0)?;
        let _ = std::fs::remove_file(recovery::master_path(log_dir));
        let first = log::FILE_HEADER as u64;
        let start = Log::create_empty(log_dir, first)?;
        let log = Arc::new(Log::open(log_dir, opts.log, start, first)?);
        let pool = BufferPool::new(file, frames, 1, log.clone());
        let mut roots = Vec::new();
        for (i, t) in schema.tables.iter().enumerate() {
            let mut r = Vec::new();
            for j in 0..=t.secondary.len() {
                r.push(btree::create(&pool, &log, i as u32, j as u16)?);
            }
            roots.push(r);
        }
        log.flush_once()?;
        pool.flush_all()?;
        let cat = catalog::Catalog {
            next_lsn: log.next_lsn(),
            next_page: pool.next_page(),
            roots: roots.clone(),
        };
        catalog::write(pool.file(), &schema, &cat)?;
        build_inner(schema, opts, pool, log, &roots, dir, log_dir)
    }

    #[allow(clippy::too_many_arguments)]
    fn recover(
        schema: Arc<Schema>,
        opts: &EngineOptions,
        file: File,
        frames: usize,
        cat: catalog::Catalog,
        dir: &Path,
        log_dir: &Path,
        stop: StopAt,
    ) -> Result<Inner> {
        let file_pages = file.metadata()?.len().div_ceil(page::PAGE_SIZE as u64);
        let img = match LogImage::read(log_dir)? {
            Some(i) => i,
            None => {
                let start = Log::create_empty(log_dir, cat.next_lsn.max(log::FILE_HEADER as u64))?;
                LogImage {
                    start_lsn: start,
                    bytes: vec![0; log::FILE_HEADER],
                }
            }
        };
        let needs_recovery = img.bytes.len() > log::FILE_HEADER;
        if needs_recovery {
            // Recovery runs with a synchronous log (its CLRs must be durable), then
            // everything is written back and the log restarts empty.
            let log = Arc::new(Log::open(
                log_dir,
                LogMode::Sync,
                img.start_lsn,
                img.end_lsn(),
            )?);
            let pool = BufferPool::new(
                file.try_clone()?,
                frames,
                cat.next_page.max(file_pages),
                log.clone(),
            );
            let an = recovery::analyze(log_dir, &img)?;
            pool.reserve_pages(an.next_page);
            let rec_opts = EngineOptions {
                log: LogMode::Sync,
                ..opts.clone()
            };
            let e = build_inner(
                schema.clone(),
                &rec_opts,
                pool,
                log.clone(),
                &cat.roots,
                dir,
                log_dir,
            )?;
            recovery::redo(&e, &img, &an)?;
            if stop == StopAt::AfterRedo {
                e.pool.flush_all()?;
                return Err(Error::fatal("recovery stopped after redo (test hook)"));
            }
            let lim = match stop {
                StopAt::AfterUndo(n) => Some(n),
                _ => None,
            };
            let undone = recovery::undo(&e, &img, &an, lim)?;
            if lim.is_some_and(|n| undone >= n) {
                log.flush_once()?;
                e.pool.flush_all()?;
                return Err(Error::fatal("recovery stopped during undo (test hook)"));
            }
            log.flush_once()?;
            e.pool.flush_all()?;
            let next_lsn = log.next_lsn().max(cat.next_lsn);
            let c = catalog::Catalog {
                next_lsn,
                next_page: e.pool.next_page(),
                roots: cat.roots.clone(),
            };
            catalog::write(e.pool.file(), &schema, &c)?;
            log.stop();
            drop(e);
            let _ = std::fs::remove_file(recovery::master_path(log_dir));
            let start = Log::create_empty(log_dir, next_lsn)?;
            let log = Arc::new(Log::open(log_dir, opts.log, start, next_lsn)?);
            let pool = BufferPool::new(file, frames, c.next_page, log.clone());
            return build_inner(schema, opts, pool, log, &cat.roots, dir, log_dir);
        }
        let next_lsn = img.end_lsn().max(cat.next_lsn);
        let start = Log::create_empty(log_dir, next_lsn)?;
        let log = Arc::new(Log::open(log_dir, opts.log, start, next_lsn)?);
        let pool = BufferPool::new(file, frames, cat.next_page.max(file_pages), log.clone());
        build_inner(schema, opts, pool, log, &cat.roots, dir, log_dir)
    }

    fn start_daemons(&self, opts: &EngineOptions) {
        let mut d = self.daemons.lock();
        if opts.log != LogMode::Off {
            let i = self.inner.clone();
            d.push(std::thread::spawn(move || i.log.daemon()));
        }
        let i = self.inner.clone();
        d.push(std::thread::spawn(move || {
            while !i.stop.load(Ordering::Acquire) {
                if let Err(e) = i.pool.clean() {
                    if i.log.is_detached() {
                        return;
                    }
                    eprintln!("oltpscope disk engine: page cleaner: {e}");
                    return;
                }
                i.wake.wait(rt::WaitKind::Other, Some(CLEANER_PERIOD), || {
                    i.stop.load(Ordering::Acquire)
                });
            }
        }));
        let ms = opts.checkpoint_ms.unwrap_or(DEFAULT_CHECKPOINT_MS);
        if ms > 0 && opts.log != LogMode::Off {
            let i = self.inner.clone();
            d.push(std::thread::spawn(move || loop {
                i.wake
                    .wait(rt::WaitKind::Other, Some(Duration::from_millis(ms)), || {
                        i.stop.load(Ordering::Acquire)
                    });
                if i.stop.load(Ordering::Acquire) {
                    return;
                }
                if let Err(e) = i.checkpoint() {
                    if i.log.is_detached() {
                        return;
                    }
                    eprintln!("oltpscope disk engine: checkpoint: {e}");
                    return;
                }
            }));
        }
    }

    fn stop_daemons(&self) {
        self.inner.stop.store(true, Ordering::Release);
        self.inner.wake.notify_all();
        self.inner.log.stop();
        for h in self.daemons.lock().drain(..) {
            let _ = h.join();
        }
    }

    /// Take a fuzzy checkpoint now.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint()
    }

    /// The crash hook: stop as a killed process would. Nothing more reaches the data
    /// file or the log; records not yet flushed are lost, dirty pages are not written.
    pub fn crash(self) {
        self.closed.store(true, Ordering::Release);
        self.inner.pool.detach();
        self.inner.log.detach();
        self.stop_daemons();
    }

    /// The crash hook for a running engine (workers may still be active): from now on
    /// nothing reaches the data file or the log, as if the process had been killed here.
    /// Later commits fail. Drop the engine afterwards (it does not shut down cleanly).
    pub fn crash_now(&self) {
        self.closed.store(true, Ordering::Release);
        self.inner.pool.detach();
        self.inner.log.detach();
        self.inner.log.stop();
    }

    pub fn inner(&self) -> &Inner {
        &self.inner
    }

    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stop_daemons();
        let i = &self.inner;
        i.log.flush_once()?;
        i.pool.flush_all()?;
        let next_lsn = i.log.next_lsn();
        let roots: Vec<Vec<u64>> = i
            .tables
            .iter()
            .map(|t| t.trees.iter().map(|t| t.root).collect())
            .collect();
        let c = catalog::Catalog {
            next_lsn,
            next_page: i.pool.next_page(),
            roots,
        };
        catalog::write(i.pool.file(), &i.schema, &c)?;
        let _ = std::fs::remove_file(recovery::master_path(&i.log_dir));
        Log::create_empty(&i.log_dir, next_lsn)?;
        Ok(())
    }
}

impl Inner {
    /// Fuzzy checkpoint: the active transaction and dirty page tables as of `begin`
    /// (records from `begin` on are re-scanned by analysis), then the master file.
    pub fn checkpoint(&self) -> Result<()> {
        let begin = self.log.next_lsn();
        let mut att = Vec::new();
        for s in self.slots.lock().iter() {
            let txn = s.txn.load(Ordering::Acquire);
            let last = s.last.load(Ordering::Acquire);
            if txn != 0 && last != 0 {
                att.push((txn, last));
            }
        }
        let mut dpt = Vec::new();
        self.pool.dirty_pages(&mut dpt);
        self.pool.sync()?;
        let payload = recovery::encode_checkpoint(begin, self.pool.next_page(), &att, &dpt);
        if payload.len() + log::REC_HEADER > log::MAX_REC {
            return Err(Error::fatal(
                "checkpoint record would exceed the log record limit",
            ));
        }
        let mut r = Rec::new(Kind::Checkpoint);
        r.payload = &payload;
        let lsn = self.log.append(&r, None);
        self.log.flush_to(lsn + 1)?;
        recovery::write_master(&self.log_dir, lsn)?;
        self.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Engine for DiskEngine {
    type Worker<'e> = DiskWorker<'e>;
    const NAME: &'static str = "disk";

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        Self::open_with(schema, opts, StopAt::Never)
    }

    fn schema(&self) -> &Schema {
        &self.inner.schema
    }

    fn worker(&self, _worker_id: usize) -> DiskWorker<'_> {
        DiskWorker::new(&self.inner)
    }

    fn has_data(&self) -> bool {
        self.has_data
    }

    fn shutdown(&self) -> Result<()> {
        self.close()
    }

    fn stats(&self) -> serde_json::Value {
        let i = &self.inner;
        let p = &i.pool.stats;
        let l = i.locks.stats();
        serde_json::json!({
            "pool_frames": i.pool.frames(),
            "pages_read": p.reads.load(Ordering::Relaxed),
            "pages_written": p.writes.load(Ordering::Relaxed),
            "page_hits": i.pool.hits(),
            "evictions": p.evictions.load(Ordering::Relaxed),
            "log_bytes": i.log.bytes.load(Ordering::Relaxed),
            "log_flushes": i.log.flushes.load(Ordering::Relaxed),
            "checkpoints": i.checkpoints.load(Ordering::Relaxed),
            "commits": i.commits.load(Ordering::Relaxed),
            "aborts": i.aborts.load(Ordering::Relaxed),
            "lock": {
                "requests": l.requests,
                "acquired": l.acquired,
                "waits": l.waits,
                "wait_ns": l.wait_ns,
                "latch_contended": l.latch_contended,
                "deadlocks": l.deadlocks,
                "timeouts": l.timeouts,
                "escalations": l.escalations,
            },
        })
    }
}

impl Drop for DiskEngine {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            eprintln!("oltpscope disk engine: shutdown: {e}");
        }
    }
}
