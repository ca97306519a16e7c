//! The `disk` engine: a Shore-MT-style storage manager (see docs/design/disk-engine.md).
//! Components, each a module (reports attribute time by module path): `bpool` (buffer
//! pool), `latch` (page latches), `heap` (slotted heap pages), `btree` (B+tree on pages),
//! `lock` (hierarchical lock manager), `log` (WAL segments), `recovery` (ARIES restart),
//! `checkpoint` (fuzzy checkpoints, the control file, log recycling), `xct`
//! (transactions), `catalog` (schema layout on page 0).
//! This file owns opening, creating, recovering, background daemons and shutdown; it must
//! never implement a transactional operation itself (those are in `xct`).

pub mod bpool;
pub mod btree;
pub mod catalog;
pub mod checkpoint;
pub mod db;
pub mod heap;
pub mod latch;
pub mod lock;
pub mod log;
pub mod page;
pub mod recovery;
pub mod xct;

use api::{Engine, EngineOptions, Error, LogMode, Result, Schema};
use bpool::doublewrite::{self, DoubleWrite};
use bpool::BufferPool;
use btree::Tree;
use checkpoint::{Control, State};
use heap::HeapFile;
use lock::{LockConfig, LockManager};
use log::{io_err, Log, LogReader, Segments};
use parking_lot::Mutex;
use recovery::StopAt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use storage::{Open, Storage};

pub use db::{Inner, TableRt};
pub use xct::DiskWorker;

const DATA_FILE: &str = "data.db";
const CLEANER_PERIOD: Duration = Duration::from_millis(100);
const DEFAULT_CHECKPOINT_MS: u64 = 5000;
/// The smallest default pool (64 MiB).
const MIN_DEFAULT_FRAMES: usize = 8192;

/// Recovery's redo and undo passes over `e` (built on the log `log`), stopped where a
/// test's `stop` says (an error then, after writing what was done).
fn redo_undo(
    e: &Inner,
    reader: &LogReader,
    an: &recovery::Analysis,
    log: &Log,
    stop: StopAt,
) -> Result<()> {
    recovery::redo(e, reader, an)?;
    if stop == StopAt::AfterRedo {
        e.pool.flush_all()?;
        return Err(Error::fatal("recovery stopped after redo (test hook)"));
    }
    let lim = match stop {
        StopAt::AfterUndo(n) => Some(n),
        _ => None,
    };
    let undone = recovery::undo(e, reader, an, lim)?;
    if lim.is_some_and(|n| undone >= n) {
        log.flush_once()?;
        e.pool.flush_all()?;
        return Err(Error::fatal("recovery stopped during undo (test hook)"));
    }
    Ok(())
}

/// Recovery's first checks of the data file at `path`: there, and at least as long as
/// the pages it had at the last checkpoint. Returns it open, and its length.
fn open_data_file(
    st: &dyn Storage,
    path: &Path,
    control: &Control,
) -> Result<(Arc<dyn storage::File>, u64)> {
    if !st.exists(path).map_err(io_err)? {
        return Err(Error::fatal(format!(
            "{} is missing: the database is damaged",
            path.display()
        )));
    }
    let file = st.open(path, Open::ReadWrite).map_err(io_err)?;
    let len = file.len().map_err(io_err)?;
    let page_bytes = page::PAGE_SIZE as u64;
    if len < page_bytes || len < control.data_pages * page_bytes {
        return Err(Error::fatal(format!(
            "{} holds {len} bytes, less than the {} pages it had at the last checkpoint: it was cut or damaged",
            path.display(),
            control.data_pages.max(1)
        )));
    }
    Ok((file, len))
}

/// The catalog of page 0 (from its double-write copy when the page is among the `torn`
/// ones), which must be the control file's database's.
fn read_catalog(
    file: &dyn storage::File,
    torn: &[(u64, Box<page::Page>)],
    schema: &Schema,
    path: &Path,
    control: &Control,
) -> Result<catalog::Catalog> {
    let cat = match torn.iter().find(|(pid, _)| *pid == 0) {
        Some((_, image)) => catalog::decode(image, schema)?,
        None => catalog::read(file, schema)?,
    }
    .ok_or_else(|| {
        Error::fatal(format!(
            "{}: page 0 holds no catalog (zeroed or damaged)",
            path.display()
        ))
    })?;
    if cat.db_id != control.db_id {
        return Err(Error::fatal(format!(
            "{} belongs to another database (id {:016x}, the control file says {:016x})",
            path.display(),
            cat.db_id,
            control.db_id
        )));
    }
    Ok(cat)
}

/// With `--log-dir`, a log there is another database's (or an orphan), never
/// overwritten: a new database is created only where none of the directories that exist
/// (`missing` lists those that do not) holds a file of its own (the log directory: a log
/// segment).
fn refuse_foreign_files(
    st: &dyn Storage,
    dir: &Path,
    log_dir: &Path,
    missing: &[PathBuf],
) -> Result<()> {
    let absent = |d: &Path| missing.iter().any(|m| m.as_path() == d);
    let mut found = Vec::new();
    if !absent(dir) {
        found.extend(st.list(dir).map_err(io_err)?.into_iter().map(|n| (dir, n)));
    }
    if log_dir != dir && !absent(log_dir) {
        found.extend(
            st.list(log_dir)
                .map_err(io_err)?
                .into_iter()
                .filter(|n| log::is_segment_name(n) || log::is_segment_tmp_name(n))
                .map(|n| (log_dir, n)),
        );
    }
    if let Some((d, f)) = found.first() {
        return Err(Error::fatal(format!(
            "{} is not empty and holds no disk-engine database (found {f}; no control file in {}): refusing to create one over it",
            d.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// The content checks of the page types that have one, registered with the buffer
/// pool (which knows no data structure): a B+tree node's cells, in full.
pub fn check_content(t: page::PageType, p: &page::Page, pid: u64) -> Result<()> {
    match t {
        page::PageType::BTree => btree::check_cells(p, pid),
        _ => Ok(()),
    }
}

pub struct DiskEngine {
    inner: Arc<Inner>,
    daemons: Mutex<Vec<JoinHandle<()>>>,
    has_data: bool,
    /// A new database loads unlogged (see `create`): the log mode its session resumes
    /// at `load_done`. None: the log already runs in the session's mode.
    resume_log: Mutex<Option<LogMode>>,
    closed: AtomicBool,
    _tmp: Option<storage::temp::TempDir>,
}

/// The disk engine's own settings (`Engine::Options`; `--bpool-size`, `--escalation`,
/// `--checkpoint-ms` on the command line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskOptions {
    /// Buffer-pool size in bytes. `None`: large enough for the data set.
    pub bpool_bytes: Option<u64>,
    /// Record locks per table before escalation to a table lock (default 25).
    pub escalation: Option<u32>,
    /// Checkpoint interval in milliseconds; 0 disables periodic ones.
    pub checkpoint_ms: Option<u64>,
    /// Opening an existing database, read its pages into the buffer pool first, in page
    /// order, up to the pool's size (`--prewarm`; see `BufferPool::prewarm`).
    pub prewarm: bool,
    /// Told the prewarm's progress (pages read, pages to read); none: silent.
    #[serde(skip)]
    pub prewarm_progress: PrewarmProgress,
}

/// Where the prewarm's progress goes: a function of (pages read, pages to read), the
/// command line's bar or lines (the engine prints nothing itself).
#[derive(Clone, Copy, Default)]
pub struct PrewarmProgress(pub Option<fn(u64, u64)>);

impl std::fmt::Debug for PrewarmProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "shown" } else { "none" })
    }
}

/// Where progress is shown is not a setting of the database: any two are equal.
impl PartialEq for PrewarmProgress {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for PrewarmProgress {}

fn frames_for(schema: &Schema, own: &DiskOptions) -> usize {
    match own.bpool_bytes {
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

/// `--prewarm`: an existing database's pages read into the pool before the daemons
/// and the first transaction. Page 0 is the catalog, read at the open and never held by
/// the pool.
fn prewarm(inner: &Inner, own: &DiskOptions) -> Result<()> {
    if !own.prewarm {
        return Ok(());
    }
    let show = own.prewarm_progress.0;
    inner
        .pool
        .prewarm(1, &mut |done, total| {
            if let Some(f) = show {
                f(done, total)
            }
        })
        .map_err(|e| match e {
            Error::Fatal(m) => Error::fatal(format!("prewarm of the buffer pool: {m}")),
            e => e,
        })?;
    Ok(())
}

/// What a database is opened with besides its options (crash tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct Hooks {
    /// Stop recovery early, leaving the files as a crash there would.
    pub stop: StopAt,
    /// Log segment size for a new database (small in tests, so segments recycle).
    pub seg_bytes: Option<u64>,
    /// Start no background thread (simulation tests): commits write the log themselves,
    /// pages are written only by eviction, `clean_now`, checkpoints and shutdown, and
    /// checkpoints are taken only by `checkpoint`. One worker then makes one
    /// deterministic sequence of storage calls.
    pub inline: bool,
    /// The id of a new database instead of a random one (deterministic tests).
    pub db_id: Option<u64>,
}

#[allow(clippy::too_many_arguments)]
fn build_inner(
    schema: Arc<Schema>,
    opts: &EngineOptions,
    pool: BufferPool,
    log: Arc<Log>,
    roots: &[Vec<u64>],
    dir: &Path,
    segs: Segments,
    control: Control,
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
        escalation_threshold: opts.own::<DiskOptions>()?.escalation.unwrap_or(25),
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
        segs,
        control: Mutex::new(control),
        checkpoint_lock: Mutex::new(()),
        read_only: opts.read_only,
        failure: Mutex::new(None),
        failed: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        wake: rt::Event::new(),
        dir: dir.to_path_buf(),
    })
}

/// The files of the database whose control file `control` is in `dir`, with its log in
/// `log_dir` (`--reload` and `oltpscope drop` remove exactly these, in this order), after
/// checking that both directories are this database's to remove from. A log directory
/// belongs to one database: every segment there (and in `dir`) must name this
/// database's id in its header, else nothing is to be removed (another database's log
/// is refused, not taken). While the data file is still there the log must be found
/// too: a database loaded with `--log-dir` keeps its log there (the control file does
/// not record where), and removing the rest would orphan it.
///
/// Order: the data file first (after it is gone, its log is no longer required, so a
/// removal cut short can finish), the control file last (until it goes, the directory
/// is still recognised as this engine's).
pub fn own_files(
    st: &dyn Storage,
    dir: &Path,
    log_dir: &Path,
    control: &Control,
) -> Result<Vec<PathBuf>> {
    let data = dir.join(DATA_FILE);
    let mut v = Vec::new();
    let mut log_found = false;
    let mut dirs = vec![dir];
    if log_dir != dir {
        dirs.push(log_dir);
    }
    for d in dirs {
        for n in st.list(d).map_err(io_err)? {
            let (seg, tmp) = (log::is_segment_name(&n), log::is_segment_tmp_name(&n));
            let p = d.join(&n);
            if seg || tmp {
                match log::segment_owner(st, &p, tmp)? {
                    log::SegOwner::Db(id) if id == control.db_id => {
                        log_found |= seg && d == log_dir;
                    }
                    log::SegOwner::Empty => {}
                    log::SegOwner::Db(id) => {
                        return Err(Error::fatal(format!(
                            "{} belongs to another database (id {id:016x}; the database in {} is {:016x}): nothing removed",
                            p.display(),
                            dir.display(),
                            control.db_id
                        )))
                    }
                    log::SegOwner::Unknown => {
                        return Err(Error::fatal(format!(
                            "{} has no log segment header, so it cannot be told to be the database's in {}: nothing removed",
                            p.display(),
                            dir.display()
                        )))
                    }
                }
                v.push(p);
            } else if d == dir && ["control.tmp", doublewrite::NAME].contains(&n.as_str()) {
                v.push(p);
            }
        }
    }
    let has_data = st.exists(&data).map_err(io_err)?;
    if has_data && control.checkpoint_lsn > 0 && !log_found {
        return Err(Error::fatal(format!(
            "{} holds no log segment of the database in {}: give the directory that holds its log with --log-dir (if its log is lost, remove the database by hand); nothing removed",
            log_dir.display(),
            dir.display()
        )));
    }
    if has_data {
        v.insert(0, data);
    }
    if st.exists(&dir.join(checkpoint::CONTROL)).map_err(io_err)? {
        v.push(dir.join(checkpoint::CONTROL));
    }
    Ok(v)
}

impl DiskEngine {
    /// Open (recovering if needed) or create the database; `stop` ends recovery early
    /// (crash tests) with an error after leaving the files as a crash there would.
    pub fn open_with(schema: Arc<Schema>, opts: &EngineOptions, stop: StopAt) -> Result<Self> {
        Self::open_hooked(
            schema,
            opts,
            Hooks {
                stop,
                ..Hooks::default()
            },
        )
    }

    /// Open or create: a database is created only in an empty or new directory; a
    /// directory holding anything else that is not a valid database is refused, and an
    /// existing database is never recreated unless `opts.reload` says so.
    pub fn open_hooked(schema: Arc<Schema>, opts: &EngineOptions, hooks: Hooks) -> Result<Self> {
        catalog::check_limits(&schema)?;
        let st = opts.storage.clone();
        let (dir, tmp) = match &opts.db_dir {
            Some(d) => (d.clone(), None),
            None => {
                // Named with our pid: a killed run's directory is removed by the next.
                let t = storage::temp::create("disk-db").map_err(io_err)?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let log_dir = opts.log_dir.clone().unwrap_or_else(|| dir.clone());
        // Directories are created only with the database, after every check: a refused
        // open leaves no trace.
        let mut missing = Vec::new();
        for d in [&dir, &log_dir] {
            if !st.exists(d).map_err(io_err)? {
                if !opts.create {
                    return Err(Error::fatal(format!(
                        "{} does not exist: there is no database to open",
                        d.display()
                    )));
                }
                missing.push(d.clone());
            }
        }
        let mut control = Control::read(&*st, &dir)?;
        if let (Some(_), Some(d)) = (&control, missing.first()) {
            return Err(Error::fatal(format!(
                "{} does not exist: the log of the database in {} is not there",
                d.display(),
                dir.display()
            )));
        }
        if opts.read_only && control.is_none() {
            return Err(Error::fatal(format!(
                "{} holds no disk-engine database (no control file)",
                dir.display()
            )));
        }
        if let (true, false, Some(c)) = (opts.reload, opts.read_only, &control) {
            // Only this database's files, checked before the first is removed.
            for f in own_files(&*st, &dir, &log_dir, c)? {
                st.remove(&f).map_err(io_err)?;
            }
            st.sync_dir(&dir).map_err(io_err)?;
            st.sync_dir(&log_dir).map_err(io_err)?;
            control = None;
        }
        let frames = frames_for(&schema, &opts.own::<DiskOptions>()?);
        let (inner, has_data) = match control {
            None => {
                if !opts.create {
                    return Err(Error::fatal(format!(
                        "{} holds no disk-engine database (no control file)",
                        dir.display()
                    )));
                }
                // Named by the directory it is in.
                refuse_foreign_files(&*st, &dir, &log_dir, &missing)?;
                for d in &missing {
                    st.create_dir_all(d).map_err(io_err)?;
                }
                let seg_bytes = hooks.seg_bytes.unwrap_or(log::DEFAULT_SEG_BYTES);
                assert!(
                    seg_bytes >= page::PAGE_SIZE as u64,
                    "log segments of {seg_bytes} bytes are too small"
                );
                let db_id = hooks.db_id.unwrap_or_else(storage::random_id);
                let c = Self::create(schema, opts, st, frames, &dir, &log_dir, seg_bytes, db_id)?;
                (c, false)
            }
            Some(c) if c.state == State::Loading => {
                return Err(Error::fatal(format!(
                    "the load did not finish: remove {} or rerun with --reload",
                    dir.display()
                )))
            }
            Some(c) if c.unlogged => {
                return Err(Error::fatal(format!(
                    "{} was open with --log off when its process stopped: changes since then cannot be recovered; remove it or rerun with --reload",
                    dir.display()
                )))
            }
            Some(c) => (
                Self::recover(schema, opts, st, frames, c, &dir, &log_dir, hooks.stop)?,
                true,
            ),
        };
        if has_data {
            prewarm(&inner, &opts.own::<DiskOptions>()?)?;
        }
        let resume_log = (!has_data && opts.log != LogMode::Off).then_some(opts.log);
        let e = DiskEngine {
            inner: Arc::new(inner),
            daemons: Mutex::new(Vec::new()),
            has_data,
            resume_log: Mutex::new(resume_log),
            closed: AtomicBool::new(false),
            _tmp: tmp,
        };
        if !opts.read_only && !hooks.inline {
            e.start_daemons(opts);
        }
        Ok(e)
    }

    #[allow(clippy::too_many_arguments)]
    fn create(
        schema: Arc<Schema>,
        opts: &EngineOptions,
        st: Arc<dyn Storage>,
        frames: usize,
        dir: &Path,
        log_dir: &Path,
        seg_bytes: u64,
        db_id: u64,
    ) -> Result<Inner> {
        // The control file first: from here on the directory is this database's, and
        // until the load is done it says so. So the load is not logged (the log runs
        // with `LogMode::Off` until `load_done`): a database whose load did not finish
        // is refused, never recovered, and `load_done` makes every page durable before
        // it marks the database ready. Logging every row cost a 1GB micro-benchmark
        // load about 13 GB of log writes (issue 41, session 70).
        let control = Control {
            db_id,
            state: State::Loading,
            unlogged: opts.log == LogMode::Off,
            checkpoint_lsn: 0,
            seg_bytes,
            data_pages: 0,
        };
        control.write(&*st, dir)?;
        let file = storage::create_durable(&*st, &dir.join(DATA_FILE)).map_err(io_err)?;
        let segs = Segments {
            st: st.clone(),
            dir: log_dir.to_path_buf(),
            db_id: control.db_id,
            seg_bytes,
        };
        let dw = DoubleWrite::create(&*st, dir, control.db_id)?;
        let log = Arc::new(Log::create(segs.clone(), LogMode::Off)?);
        let pool = BufferPool::new(file, Some(dw), frames, 1, log.clone())
            .with_content_check(check_content);
        // Nor does the load need torn-page protection, from its first page on (the
        // roots'): so the double-write ring never holds a copy older than a page's
        // unprotected write (`BufferPool::set_loading`).
        pool.set_loading(true);
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
            db_id: control.db_id,
            next_lsn: log.next_lsn(),
            next_page: pool.next_page(),
            roots: roots.clone(),
        };
        pool.write_through(0, &catalog::encode(&schema, &cat))?;
        let e = build_inner(schema, opts, pool, log, &roots, dir, segs, control)?;
        checkpoint::take(&e)?;
        Ok(e)
    }

    #[allow(clippy::too_many_arguments)]
    fn recover(
        schema: Arc<Schema>,
        opts: &EngineOptions,
        st: Arc<dyn Storage>,
        frames: usize,
        control: Control,
        dir: &Path,
        log_dir: &Path,
        stop: StopAt,
    ) -> Result<Inner> {
        // Every check first: a refused database is left exactly as it was found.
        let path = dir.join(DATA_FILE);
        let (file, len) = open_data_file(&*st, &path, &control)?;
        let page_bytes = page::PAGE_SIZE as u64;
        // A torn page (the catalog included) has an intact copy in the double-write file.
        let dw_how = if opts.read_only {
            Open::Read
        } else {
            Open::ReadWrite
        };
        let dw = DoubleWrite::open(&*st, dir, control.db_id, dw_how)?;
        let torn = dw.damaged_pages(&*file)?;
        let cat = read_catalog(&*file, &torn, &schema, &path, &control)?;
        let segs = Segments {
            st: st.clone(),
            dir: log_dir.to_path_buf(),
            db_id: control.db_id,
            seg_bytes: control.seg_bytes,
        };
        let reader = LogReader::open(segs.clone(), control.checkpoint_lsn)?;
        if reader.end_lsn() < cat.next_lsn {
            return Err(Error::fatal(format!(
                "the log in {} ends at LSN {}, before LSN {} the database reached: the log was lost, cut or replaced",
                log_dir.display(),
                reader.end_lsn(),
                cat.next_lsn
            )));
        }
        let an = recovery::analyze(&reader, control.checkpoint_lsn)?;
        // From here on, recovery writes: CLRs to the log, redone pages to the data file.
        // It runs with a synchronous log (its CLRs must be durable), then everything is
        // written back and the session's log continues after it. First the last flush
        // it builds on is made durable (it may be in the page cache only). A read-only
        // open keeps all of that in memory: the log and the pages on disk stay as found.
        let log = Arc::new(if opts.read_only {
            Log::memory_only_at(reader.end_lsn())
        } else {
            // The double-write copies go to the data file before this process reuses
            // the slots (the torn pages among them included).
            dw.replay(&*file)?;
            segs.rewrite(reader.last_flush_lsn(), reader.end_lsn())?;
            Log::open(segs.clone(), LogMode::Sync, reader.end_lsn())?
        });
        let pool = BufferPool::new(
            file.clone(),
            Some(dw),
            frames,
            cat.next_page.max(len / page_bytes),
            log.clone(),
        )
        .with_content_check(check_content);
        if opts.read_only {
            pool.set_read_only();
        }
        pool.reserve_pages(an.next_page);
        // Torn pages come back from their double-write copies (in memory only when
        // read-only; written back with the rest of recovery's pages otherwise).
        if opts.read_only {
            for (pid, image) in &torn {
                pool.install(*pid, image)?;
            }
        }
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
            segs.clone(),
            control,
        )?;
        redo_undo(&e, &reader, &an, &log, stop)?;
        if opts.read_only {
            return Ok(e);
        }
        log.flush_once()?;
        e.pool.flush_all()?;
        let next_lsn = log.next_lsn();
        let c = catalog::Catalog {
            db_id: control.db_id,
            next_lsn,
            next_page: e.pool.next_page(),
            roots: cat.roots.clone(),
        };
        e.pool.write_through(0, &catalog::encode(&schema, &c))?;
        log.stop();
        drop(e);
        drop(reader);
        let log = Arc::new(Log::open(segs.clone(), opts.log, next_lsn)?);
        let dw = DoubleWrite::open(&*st, dir, control.db_id, Open::ReadWrite)?;
        let pool = BufferPool::new(file, Some(dw), frames, c.next_page, log.clone())
            .with_content_check(check_content);
        let control = Control {
            unlogged: opts.log == LogMode::Off,
            ..control
        };
        let e = build_inner(schema, opts, pool, log, &cat.roots, dir, segs, control)?;
        // The session's first checkpoint: recovery starts here after a later crash.
        checkpoint::take(&e)?;
        Ok(e)
    }

    fn start_daemons(&self, opts: &EngineOptions) {
        let mut d = self.daemons.lock();
        if opts.log != LogMode::Off {
            let i = self.inner.clone();
            d.push(std::thread::spawn(move || {
                probe::thread_role(probe::Role::LogFlusher);
                i.log.daemon()
            }));
        }
        let i = self.inner.clone();
        d.push(std::thread::spawn(move || {
            probe::thread_role(probe::Role::PageCleaner);
            while !i.stop.load(Ordering::Acquire) {
                match i.pool.clean_step(CLEANER_PERIOD) {
                    Ok(pause) if pause.is_zero() => {}
                    Ok(pause) => i
                        .pool
                        .cleaner_pause(pause, || i.stop.load(Ordering::Acquire)),
                    Err(e) => {
                        i.fail(format!("page cleaner: {e}"));
                        return;
                    }
                }
            }
        }));
        let ms = opts
            .own::<DiskOptions>()
            .ok()
            .and_then(|o| o.checkpoint_ms)
            .unwrap_or(DEFAULT_CHECKPOINT_MS);
        if ms > 0 && opts.log != LogMode::Off {
            let i = self.inner.clone();
            d.push(std::thread::spawn(move || {
                probe::thread_role(probe::Role::Checkpointer);
                loop {
                    i.wake
                        .wait(rt::WaitKind::Other, Some(Duration::from_millis(ms)), || {
                            i.stop.load(Ordering::Acquire)
                        });
                    if i.stop.load(Ordering::Acquire) {
                        return;
                    }
                    if let Err(e) = checkpoint::take(&i) {
                        i.fail(format!("checkpoint: {e}"));
                        return;
                    }
                }
            }));
        }
    }

    fn stop_daemons(&self) {
        self.inner.stop.store(true, Ordering::Release);
        self.inner.wake.notify_all();
        self.inner.pool.wake_cleaner();
        self.inner.log.stop();
        for h in self.daemons.lock().drain(..) {
            let _ = h.join();
        }
    }

    /// Take a fuzzy checkpoint now.
    pub fn checkpoint(&self) -> Result<()> {
        checkpoint::take(&self.inner).map(|_| ())
    }

    /// One page cleaner pass now (the cleaner thread's step; for `Hooks::inline`).
    pub fn clean_now(&self) -> Result<usize> {
        self.inner.pool.clean()
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
        if i.read_only {
            return Ok(());
        }
        i.log.flush_once()?;
        i.pool.flush_all()?;
        let roots: Vec<Vec<u64>> = i
            .tables
            .iter()
            .map(|t| t.trees.iter().map(|t| t.root).collect())
            .collect();
        let c = catalog::Catalog {
            db_id: i.control.lock().db_id,
            next_lsn: i.log.next_lsn(),
            next_page: i.pool.next_page(),
            roots,
        };
        i.pool.write_through(0, &catalog::encode(&i.schema, &c))?;
        // Every page is durable now, so even a session with the log off ends safe.
        i.control.lock().unlogged = false;
        checkpoint::take(i)?;
        Ok(())
    }
}

impl Engine for DiskEngine {
    type Worker<'e> = DiskWorker<'e>;
    type Options = DiskOptions;
    const NAME: &'static str = "disk";
    const COUNTED: api::Counted = api::Counted {
        pages: true,
        index_nodes: false,
        escalations: true,
    };
    const ABOUT: &'static str =
        "Disk-based, Shore-MT-style: buffer pool, latches, page B+tree, 2PL, ARIES log.";
    const DURABLE: bool = true;

    fn place(g: &api::Given) -> Result<api::Place> {
        // Pages in --db, the log there too or apart in --log-dir.
        Ok(api::Place {
            db_dir: g.db.map(Path::to_path_buf),
            log_dir: g.log_dir.map(Path::to_path_buf),
        })
    }

    fn owns_dir(st: &dyn Storage, dir: &Path) -> bool {
        api::place::any_exists(st, dir, &[checkpoint::CONTROL])
    }

    fn db_files(st: &dyn Storage, dir: &Path, log_dir: Option<&Path>) -> Result<Vec<PathBuf>> {
        // A control file that is not the engine's (or is damaged) is refused here, and a
        // log directory holding another database's log (or none of this one's) by
        // `own_files`.
        let control = Control::read(st, dir)
            .map_err(|e| Error::fatal(e.to_string()))?
            .ok_or_else(|| {
                Error::fatal(format!(
                    "{} holds no disk-engine control file",
                    dir.display()
                ))
            })?;
        own_files(st, dir, log_dir.unwrap_or(dir), &control)
    }
    // `remove_db`: the default, in `own_files`' order (the data file first, then its log
    // is no longer required; the control file last, so a second drop can finish).

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

    fn load_done(&self) -> Result<()> {
        let i = &self.inner;
        i.log.flush_once()?;
        i.pool.flush_all()?;
        i.pool.set_loading(false);
        // The checkpoint is durable at the log's end (its record written directly, as
        // every record before it was dropped), with no page dirty: recovery starts
        // there. Then the session logs in its own mode.
        checkpoint::take(i)?;
        if let Some(mode) = self.resume_log.lock().take() {
            // No checkpoint of the daemon's between the switch's two halves.
            let _one = rt::lock(rt::WaitKind::Other, &i.checkpoint_lock);
            i.log.resume_logging(mode);
        }
        let mut c = i.control.lock();
        c.state = State::Ready;
        c.write(&*i.segs.st, &i.dir)
    }

    fn shutdown(&self) -> Result<()> {
        self.close()
    }

    fn table_sizes(&self) -> Result<Vec<api::TableSize>> {
        let i = &self.inner;
        let mut sizes: Vec<api::TableSize> = i
            .schema
            .tables
            .iter()
            .map(|t| api::TableSize {
                name: t.name.to_string(),
                heap_pages: Some(0),
                index_pages: Some(0),
                ..Default::default()
            })
            .collect();
        // Every page ever allocated, by the type and table its header names.
        for pid in 1..i.pool.next_page() {
            let g = i.pool.fix(pid, latch::Mode::S)?;
            let p = g.page();
            let t = page::page_type(p);
            if t == page::PageType::Heap as u8 {
                let (table, used) = heap::census_page(p);
                if let Some(s) = sizes.get_mut(table as usize) {
                    s.records += used;
                    *s.heap_pages.as_mut().expect("set above") += 1;
                }
            } else if t == page::PageType::BTree as u8 {
                if let Some(s) = sizes.get_mut(btree::census_table(p) as usize) {
                    *s.index_pages.as_mut().expect("set above") += 1;
                }
            }
        }
        Ok(sizes)
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
            "log_bytes": i.log.bytes(),
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
                "latch_wait_ns": l.latch_wait_ns,
                "deadlocks": l.deadlocks,
                "timeouts": l.timeouts,
                "escalations": l.escalations,
                "inherited": l.inherited,
                "revoked": l.revoked,
            },
        })
    }
}

impl Drop for DiskEngine {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            // A failed write was already reported by the commit that found it.
            if self.inner.failure().is_none() {
                eprintln!("oltpscope disk engine: shutdown: {e}");
            }
        }
    }
}
