//! The traits an engine design implements. Workloads never call a [`Worker`] directly:
//! they go through [`crate::Session`], the one entry point per database operation.

use crate::error::{Error, Result};
use crate::key::Key;
use crate::schema::{IndexId, Schema, TableId};
use std::any::Any;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::place::LogMode;
use crate::place::{Given, Place};

/// One engine design's own settings (its [`Engine::Options`]), carried through the
/// shared [`EngineOptions`] without the shared struct knowing their type, so that adding
/// an engine never grows the shared one. Serialized (for reports) as given.
#[derive(Clone, Default)]
pub struct Own {
    value: Option<Arc<dyn Any + Send + Sync>>,
    json: serde_json::Value,
}

impl Own {
    pub fn new<T: Any + Send + Sync + serde::Serialize>(t: T) -> Own {
        Own {
            json: serde_json::to_value(&t).unwrap_or(serde_json::Value::Null),
            value: Some(Arc::new(t)),
        }
    }
}

impl std::fmt::Debug for Own {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.json)
    }
}

impl serde::Serialize for Own {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

/// Settings shared by every engine design; an engine's own settings travel in `own`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EngineOptions {
    /// Number of worker threads that will call [`Engine::worker`].
    pub threads: usize,
    pub log: LogMode,
    /// Where log files go (memory engine), or the log directory override (disk engine).
    pub log_dir: Option<PathBuf>,
    /// Database directory (disk engine). `None`: a fresh temporary directory.
    pub db_dir: Option<PathBuf>,
    /// The engine's own settings ([`Engine::Options`]); none given: its defaults.
    pub own: Own,
    /// Where files are read and written: the operating system's file system, or a
    /// simulated disk that injects faults (tests).
    #[serde(skip)]
    pub storage: Arc<dyn storage::Storage>,
    /// Create a database when the directory holds none (`run`); `false` refuses to
    /// (`check`: there must be something to check).
    pub create: bool,
    /// Discard the database (or log) the directory holds, if it is this engine's, and
    /// start empty (`--reload`). Without it an existing database is never overwritten.
    pub reload: bool,
    /// Open an existing database without writing anything (`check`): recovery runs in
    /// memory only, so a damaged database is refused exactly as it was found.
    pub read_only: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            threads: 1,
            log: LogMode::Off,
            log_dir: None,
            db_dir: None,
            own: Own::default(),
            storage: storage::os(),
            create: true,
            reload: false,
            read_only: false,
        }
    }
}

impl EngineOptions {
    /// These options with an engine's own settings.
    pub fn with_own<T: Any + Send + Sync + serde::Serialize>(mut self, t: T) -> Self {
        self.own = Own::new(t);
        self
    }

    /// The engine's own settings of type `T` (its [`Engine::Options`]): those given, or
    /// `T::default()` when none were. Another engine's settings are an error.
    pub fn own<T: Any + Clone + Default>(&self) -> Result<T> {
        match &self.own.value {
            None => Ok(T::default()),
            Some(v) => v.downcast_ref::<T>().cloned().ok_or_else(|| {
                Error::fatal(format!(
                    "options of another engine ({}) given to an engine that takes {}",
                    self.own.json,
                    std::any::type_name::<T>()
                ))
            }),
        }
    }
}

/// Which engine-dependent `--stats` counters an engine design produces. Records and
/// locks are counted by every engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counted {
    /// Heap and index page requests to a buffer pool.
    pub pages: bool,
    /// In-memory index nodes visited.
    pub index_nodes: bool,
    /// Lock escalation (an engine that can escalate; its count may be 0).
    pub escalations: bool,
}

/// One table's size as an engine stores it (A-to-E's Table 4, top rows). `None`: the
/// engine has no such thing (a memory engine has no pages).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableSize {
    pub name: String,
    pub records: u64,
    pub heap_pages: Option<u64>,
    /// Pages of all the table's indexes (primary and secondary).
    pub index_pages: Option<u64>,
    /// In-memory index nodes of all the table's indexes (B+tree nodes, hash buckets).
    pub index_nodes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Forward,
    Backward,
}

/// An engine design: owns the database, hands out per-thread workers.
pub trait Engine: Send + Sync + Sized + 'static {
    /// A thread's handle for running transactions (one transaction at a time).
    type Worker<'e>: Worker
    where
        Self: 'e;

    /// The name users select it by (`--engine NAME`).
    const NAME: &'static str;

    /// This design's own settings (`()` for none), given through
    /// [`EngineOptions::with_own`] and read in `open` by [`EngineOptions::own`].
    type Options: Default + Clone + std::fmt::Debug + serde::Serialize + Send + Sync + 'static;

    /// Which of `--stats`' counters exist in this design (the others are reported as
    /// not applicable, never as zero).
    const COUNTED: Counted = Counted {
        pages: false,
        index_nodes: false,
        escalations: false,
    };

    /// One line saying what the design is (`--engine`'s help).
    const ABOUT: &'static str;

    /// Whether it keeps a database on storage that a later run opens again (a crash
    /// test can kill it and check what recovery brings back).
    const DURABLE: bool = false;

    /// Whether its database is its log (and a snapshot beside it): kept only while it
    /// logs, so `run` on such a `--db` logs unless told otherwise.
    const DB_IS_LOG: bool = false;

    /// For an adapter to another database system: that system (its time is spent there,
    /// where oltpscope's simulator and profiler do not attribute it).
    const EXTERNAL: Option<&'static str> = None;

    /// Where this engine keeps its database from the storage flags a user gave, refusing
    /// (with a message naming the flag) those it cannot use. The default keeps nothing
    /// on storage and refuses them all.
    fn place(given: &Given) -> Result<Place> {
        match given.first_stored() {
            Some(f) => Err(Error::fatal(format!(
                "{f}: the {} engine keeps nothing on storage",
                Self::NAME
            ))),
            None => Ok(Place::default()),
        }
    }

    /// Whether `dir` holds a database of this engine, told by its own files (so a
    /// directory needs no extra file naming its engine). Never true for two engines.
    fn owns_dir(_st: &dyn storage::Storage, _dir: &Path) -> bool {
        false
    }

    /// The files of this engine's database in `dir` (and its log in `log_dir`, if it
    /// keeps one apart), all that `oltpscope drop` may remove; refuses a `log_dir` it
    /// does not use. Called only when [`Engine::owns_dir`] said yes.
    fn db_files(
        _st: &dyn storage::Storage,
        dir: &Path,
        _log_dir: Option<&Path>,
    ) -> Result<Vec<PathBuf>> {
        Err(Error::fatal(format!(
            "{}: the {} engine keeps no database in a directory",
            dir.display(),
            Self::NAME
        )))
    }

    /// Remove this engine's database, whose files are `files` ([`Engine::db_files`]),
    /// in an order that leaves a removal cut short still recognised (and finished by a
    /// second one). Files it leaves are removed by the caller afterwards.
    fn remove_db(_st: &dyn storage::Storage, _dir: &Path, files: &[PathBuf]) -> Result<()> {
        for f in files {
            std::fs::remove_file(f)
                .map_err(|e| Error::fatal(format!("cannot remove {}: {e}", f.display())))?;
        }
        Ok(())
    }

    /// Create (or, for a durable engine with an existing database, open and recover) a
    /// database with this schema.
    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self>;

    fn schema(&self) -> &Schema;

    /// A worker for thread `worker_id` (0-based, below `opts.threads`).
    fn worker(&self, worker_id: usize) -> Self::Worker<'_>;

    /// True when `open` found existing data (so loading must be skipped).
    fn has_data(&self) -> bool {
        false
    }

    /// The load has finished: make it durable and mark the database complete, so a
    /// database whose load was cut short is never taken for loaded data.
    fn load_done(&self) -> Result<()> {
        Ok(())
    }

    /// The commands a command-logging engine recovered (its log after its last
    /// snapshot), in log order: the caller, which knows the workload, re-executes each
    /// one (single-threaded, before any other transaction) and then calls
    /// [`Engine::replay_done`]. Empty for engines that log values, not commands.
    fn recovered_commands(&self) -> Result<Vec<Command>> {
        Ok(Vec::new())
    }

    /// The recovered commands have been re-executed: commits are logged again from now.
    fn replay_done(&self) -> Result<()> {
        Ok(())
    }

    /// Flush and stop background activity. Called once, after all workers are gone.
    fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    /// Each table's size as stored (`--stats`, after the load): records, and the pages
    /// or index nodes that hold them where the engine has such things. May walk the
    /// whole database; exact when no transaction runs. Empty: not reported.
    fn table_sizes(&self) -> Result<Vec<TableSize>> {
        Ok(Vec::new())
    }

    /// Engine-specific statistics for the report (JSON object), cheap to compute.
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// [`Engine::db_files`] as a value: the files of the database in a directory.
pub type DbFilesFn = fn(&dyn storage::Storage, &Path, Option<&Path>) -> Result<Vec<PathBuf>>;

/// An engine design's descriptor: what a registry of engines (`cli/src/engines.rs`)
/// needs to list, detect, place and drop it without naming its type again.
#[derive(Clone, Copy)]
pub struct Descriptor {
    pub name: &'static str,
    pub about: &'static str,
    pub durable: bool,
    pub db_is_log: bool,
    pub external: Option<&'static str>,
    pub place: fn(&Given) -> Result<Place>,
    pub owns_dir: fn(&dyn storage::Storage, &Path) -> bool,
    pub db_files: DbFilesFn,
    pub remove_db: fn(&dyn storage::Storage, &Path, &[PathBuf]) -> Result<()>,
    /// [`Engine::open`], giving the engine as a [`crate::Database`].
    pub open: crate::database::OpenFn,
}

impl Descriptor {
    pub const fn of<E: Engine>() -> Descriptor {
        Descriptor {
            name: E::NAME,
            about: E::ABOUT,
            durable: E::DURABLE,
            db_is_log: E::DB_IS_LOG,
            external: E::EXTERNAL,
            place: E::place,
            owns_dir: E::owns_dir,
            db_files: E::db_files,
            remove_db: E::remove_db,
            open: crate::database::open::<E>,
        }
    }
}

impl std::fmt::Debug for Descriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Descriptor({})", self.name)
    }
}

/// One logged command: a transaction's type and its encoded inputs (the workload's
/// `encode_input`), enough to re-execute it on the same database state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub txn_type: u32,
    pub input: Vec<u8>,
}

/// A dialect of SQL text ([`Worker::query`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlDialect {
    Sqlite,
    Postgres,
}

/// A key range of a scan: its low and high bounds (`Worker::scan_parts`' parts).
pub type KeyRange<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);
/// Where one part of a scan on several threads hands its rows (key, row), on the
/// part's thread (`Worker::scan_parts`).
pub type ScanSink<'a> = dyn FnMut(&[u8], &[u8]) + Send + 'a;

/// Raw operations of one transaction at a time. After any operation returns an error
/// the caller must `abort`. Callers go through [`crate::Session`].
///
/// [`crate::Session`] has already refused what no engine can do (keys longer than
/// [`crate::key::MAX_KEY_LEN`], a scan over a hash index or a missing index): a worker
/// `debug_assert!`s these preconditions instead of checking them again.
pub trait Worker {
    /// The schema of the engine this worker runs on (read by [`crate::Session`] to
    /// check operations before they reach the engine).
    fn schema(&self) -> &Schema;
    fn begin(&mut self) -> Result<()>;
    /// Point lookup by primary key; `f` sees the row if present.
    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool>;
    /// A hint: `key` of `table` will be looked up soon (by `get` or `update`). An engine
    /// may start bringing the memory it will touch into the cache, so that the misses of
    /// several lookups overlap instead of coming one after the other. Reads nothing the
    /// transaction depends on, changes nothing, never fails; the default does nothing.
    /// `part`: the bytes of the row the lookup will read (`get_part`, `update_part`), so
    /// an engine need not bring in the rest; `None`: the whole row.
    fn prefetch(&mut self, _table: TableId, _key: &[u8], _part: Option<std::ops::Range<usize>>) {}
    /// From here to its end, this transaction needs only isolation level 1: its `get`s and
    /// `scan`s must see committed rows only (no dirty reads), but need not be repeatable
    /// nor protected from phantoms. TPC-C asks no more of Stock-Level (clause 3.4.1);
    /// `update`s and `delete`s keep their full guarantees. An engine may ignore this and
    /// stay serializable (the default).
    fn read_committed(&mut self) {}
    /// From here to its end, this transaction is an analytical query's: it only reads,
    /// and each read needs to see committed rows only, as they are when it reads them (no
    /// dirty reads; neither repeatable nor free of phantoms; no snapshot asked for). Unlike
    /// [`Worker::read_committed`], the hint an OLTP transaction gives (TPC-C's
    /// Stock-Level), it lets a locking engine keep a read lock only while it reads the
    /// row (short read locks), so a long query makes a writer wait for one row's read at
    /// most instead of to the query's end. The default is [`Worker::read_committed`].
    fn read_only_committed(&mut self) {
        self.read_committed()
    }
    /// The dialect of SQL text this worker runs with [`Worker::query`] (the adapters to
    /// real database systems); `None` for the built-in engines, which run no SQL: a
    /// caller with a query runs its own plan over the other operations instead.
    fn sql_dialect(&self) -> Option<SqlDialect> {
        None
    }
    /// Run one read-only SQL query (text in [`Worker::sql_dialect`]'s dialect) inside
    /// the transaction in progress; `f` sees each result row's values in order
    /// (integers as `Value::Int`, strings as `Value::Text`). Only for workers with a
    /// dialect; the default refuses.
    fn query(&mut self, _sql: &str, _f: &mut dyn FnMut(&[crate::typed::Value])) -> Result<()> {
        Err(Error::fatal("this engine runs no SQL text"))
    }
    /// [`Worker::update`] passing `f` only the bytes `part` of the row: an engine may read,
    /// install and log no more of the row than those (Payment's counters at the head of
    /// a 680-byte Customer row). Out of the row: an error.
    fn update_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool> {
        let mut bad = None;
        let hit = self.update(table, key, &mut |r| {
            let len = r.len();
            match r.get_mut(part.clone()) {
                Some(b) => f(b),
                None => bad = Some(len),
            }
        })?;
        match bad {
            Some(len) => Err(crate::engine::part_out_of_row(table, &part, len)),
            None => Ok(hit),
        }
    }
    /// [`Worker::get`] passing `f` only the bytes `part` of the row: an engine may read no
    /// more of the row than those (one counter of a 316-byte Stock row). Out of the row:
    /// an error.
    fn get_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        let mut bad = None;
        let hit = self.get(table, key, &mut |r| match r.get(part.clone()) {
            Some(b) => f(b),
            None => bad = Some(r.len()),
        })?;
        match bad {
            Some(len) => Err(crate::engine::part_out_of_row(table, &part, len)),
            None => Ok(hit),
        }
    }
    /// Adds `delta` to the signed 8-byte integer (or 8-byte decimal's units) at byte `at`
    /// of the row under `key` and returns its new value; `None` if the row is absent.
    /// An engine may do it without bringing the row to the caller (`UPDATE .. SET c = c +
    /// $d RETURNING c`: one statement where a read-modify-write takes two). The default
    /// is [`Worker::update_part`] of those 8 bytes (wrapping on overflow, as the kits'
    /// own `+=` on rows would panic instead: the kits' sums stay far from it).
    fn add_i64(
        &mut self,
        table: TableId,
        key: &[u8],
        at: usize,
        delta: i64,
    ) -> Result<Option<i64>> {
        add_i64_by_update(self, table, key, at, delta)
    }
    /// [`Worker::add_i64`] whose new value the caller does not need: an engine may keep
    /// it and send it with a later statement or at commit (one round trip for several),
    /// and then reports an absent row there, as an `Error::Fatal`. An absent row is an
    /// error either way (the default reports it at once).
    fn add_i64_blind(&mut self, table: TableId, key: &[u8], at: usize, delta: i64) -> Result<()> {
        add_i64_blind_by_add(self, table, key, at, delta)
    }
    /// Whether [`Worker::get_batch`] and [`Worker::update_batch`] do better than a loop
    /// of single operations (one round trip for the whole set: the SQL adapters). When
    /// false (the default) [`crate::Session`] loops over single operations itself, so an
    /// engine's operations, marks and statistics are exactly those of the loop.
    fn batches(&self) -> bool {
        false
    }
    /// Point lookups of `n` keys (`key(i)` for `i` in `0..n`), all of the row or of the
    /// bytes `part` only: `f(i, bytes)` for each key present, in the order of `i` (a key
    /// given twice is seen twice). Returns how many were present. The default loops over
    /// [`Worker::get`] / [`Worker::get_part`].
    fn get_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: &dyn Fn(usize) -> Key,
        part: Option<std::ops::Range<usize>>,
        f: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<usize> {
        let mut found = 0;
        for i in 0..n {
            let k = key(i);
            let hit = match &part {
                Some(p) => self.get_part(table, &k, p.clone(), &mut |b| f(i, b))?,
                None => self.get(table, &k, &mut |b| f(i, b))?,
            };
            found += hit as usize;
        }
        Ok(found)
    }
    /// Read-modify-writes of `n` keys' rows (or of their bytes `part`), in the order of
    /// `i`, each as [`Worker::update`] would do it (a key given twice is changed twice,
    /// the second seeing the first's result). Returns how many were present. The default
    /// loops over [`Worker::update`] / [`Worker::update_part`].
    fn update_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: &dyn Fn(usize) -> Key,
        part: Option<std::ops::Range<usize>>,
        f: &mut dyn FnMut(usize, &mut [u8]),
    ) -> Result<usize> {
        let mut found = 0;
        for i in 0..n {
            let k = key(i);
            let hit = match &part {
                Some(p) => self.update_part(table, &k, p.clone(), &mut |b| f(i, b))?,
                None => self.update(table, &k, &mut |b| f(i, b))?,
            };
            found += hit as usize;
        }
        Ok(found)
    }
    /// Range scan over an index in `dir` order, at most `limit` rows; `f` returns false to
    /// stop early. Returns the number of rows passed to `f`.
    fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize>;
    /// Scan `index`'s key ranges `parts` (disjoint, in key order) on one thread each,
    /// inside this transaction: part `i`'s rows go to `sinks[i]` in key order (a query's
    /// scan on several threads, `exec`'s `--query-threads`). `Ok(false)`: this engine
    /// cannot read on several threads within this transaction (the default); nothing was
    /// scanned, and the caller scans serially instead.
    fn scan_parts(
        &mut self,
        index: IndexId,
        parts: &[KeyRange<'_>],
        sinks: &mut [&mut ScanSink<'_>],
    ) -> Result<bool> {
        let _ = (index, parts, sinks);
        Ok(false)
    }
    /// [`Worker::scan`] passing `f` only the bytes `part` of each row (an engine may read
    /// no more of the rows than those: Payment finds a customer by name from the ids of
    /// 680-byte rows). Out of the row: an error.
    #[allow(clippy::too_many_arguments)]
    fn scan_part(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let mut bad = None;
        let n = self.scan(
            index,
            lo,
            hi,
            dir,
            limit,
            &mut |k, r| match r.get(part.clone()) {
                Some(b) => f(k, b),
                None => {
                    bad = Some(r.len());
                    false
                }
            },
        )?;
        match bad {
            Some(len) => Err(crate::engine::part_out_of_row(index.table, &part, len)),
            None => Ok(n),
        }
    }
    /// Insert a row under a new primary key (`Error::Duplicate` if present).
    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()>;
    /// Read-modify-write of the row under `key`; `false` if absent.
    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool>;
    /// Delete the row under `key`; `false` if absent.
    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool>;
    fn commit(&mut self) -> Result<()>;
    fn abort(&mut self);

    /// Whether this worker logs commands (so the caller encodes each transaction's
    /// inputs and passes them to [`Worker::command`]). The default: no.
    fn wants_commands(&self) -> bool {
        false
    }

    /// The command of the transaction in progress (its type and encoded inputs), given
    /// before `commit`; a command-logging engine logs it if the transaction commits.
    /// The default ignores it.
    fn command(&mut self, _txn_type: u32, _input: &[u8]) {}
}

// Keep serde_json reachable for `Engine::stats` without making every crate name it.
pub use serde_json;

/// [`Worker::add_i64`]'s default, for an engine's own `add_i64` to fall back on: an
/// [`Worker::update_part`] of the 8 bytes.
pub fn add_i64_by_update<W: Worker + ?Sized>(
    w: &mut W,
    table: TableId,
    key: &[u8],
    at: usize,
    delta: i64,
) -> Result<Option<i64>> {
    let mut new = 0i64;
    let hit = w.update_part(table, key, at..at + 8, &mut |b| {
        let v = i64::from_le_bytes(b.try_into().expect("8 bytes")).wrapping_add(delta);
        b.copy_from_slice(&v.to_le_bytes());
        new = v;
    })?;
    Ok(hit.then_some(new))
}

/// [`Worker::add_i64_blind`]'s default: [`Worker::add_i64`], an absent row an error at once.
pub fn add_i64_blind_by_add<W: Worker + ?Sized>(
    w: &mut W,
    table: TableId,
    key: &[u8],
    at: usize,
    delta: i64,
) -> Result<()> {
    match w.add_i64(table, key, at, delta)? {
        Some(_) => Ok(()),
        None => Err(absent_row(table)),
    }
}

/// The error of [`Worker::add_i64_blind`] on an absent row.
pub fn absent_row(table: TableId) -> Error {
    Error::fatal(format!("table {}: add to a row that is not there", table.0))
}

/// The error of a `get_part` whose bytes are not within the row.
pub fn part_out_of_row(table: TableId, part: &std::ops::Range<usize>, row_len: usize) -> Error {
    Error::fatal(format!(
        "table {}: bytes {}..{} are not within its {row_len}-byte rows",
        table.0, part.start, part.end
    ))
}
