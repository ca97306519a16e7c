//! `--engine sqlite`: the kits on SQLite (embedded, bundled with rusqlite), through the
//! typed schema ([`sqlmap`]): real tables, primary keys and secondary indexes; one
//! connection per worker; WAL mode; each worker's statements prepared once and kept
//! beside its connection.
//!
//! Transactions begin with `BEGIN IMMEDIATE`: SQLite has one writer at a time, and a
//! deferred transaction that read and then wants to write fails with SQLITE_BUSY
//! when another has written since it began, after doing all its work. Taking the
//! write lock at the start makes writers queue (waiting up to [`BUSY_TIMEOUT`])
//! instead of failing late; the kits' transactions almost all write, and the engine
//! cannot know which will not. A busy or locked error in a transaction (the wait ran
//! out) is a retryable `Error::Conflict`. Read-only opens (`check`) begin deferred.
//!
//! The workers of one engine take an in-process writer gate ([`gate`]) before `BEGIN
//! IMMEDIATE` and give it up when SQLite's write lock is free again, so that a waiting
//! writer takes over as soon as the one before it starts a WAL checkpoint.
//!
//! This crate must never write a file outside its database directory.

use api::schema::Schema;
use api::typed::Value;
use api::{Dir, Engine, EngineOptions, Error, IndexId, Key, Result, TableId, TableSize};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags};
use sqlmap::{Dialect, ScanShape, TableMap};
use std::collections::HashMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub mod gate;

/// The database file's name in its directory (`--db DIR`).
pub const DB_FILE: &str = "oltpscope.sqlite";

/// How long a transaction waits for the write lock (or a statement for a lock) before
/// giving up with a conflict abort: longer than any kit transaction takes, times the
/// writers queued before it.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Page cache per connection, in KiB (SQLite's default is 2 MiB).
const CACHE_KIB: i64 = 64 * 1024;

const D: Dialect = Dialect::Sqlite;

/// `PRAGMA synchronous` (`--sqlite-sync`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// No fsync: a crash of the machine may lose or corrupt committed transactions.
    Off,
    /// In WAL mode, fsync at checkpoints only: a machine crash may lose the last
    /// commits but never corrupts the database.
    #[default]
    Normal,
    /// fsync the WAL at every commit.
    Full,
}

impl SyncMode {
    fn pragma(self) -> &'static str {
        match self {
            SyncMode::Off => "OFF",
            SyncMode::Normal => "NORMAL",
            SyncMode::Full => "FULL",
        }
    }
}

/// The SQLite engine's own settings (`Engine::Options`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SqliteOptions {
    pub sync: SyncMode,
}

/// The files of a SQLite database in `dir` (`--reload` removes exactly these).
pub fn own_files(dir: &Path) -> Vec<PathBuf> {
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|s| dir.join(format!("{DB_FILE}{s}")))
        .filter(|p| p.exists())
        .collect()
}

fn sql_err(e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode as C;
    match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            C::DatabaseBusy => Error::Conflict("sqlite busy"),
            C::DatabaseLocked => Error::Conflict("sqlite locked"),
            // SQLITE_CONSTRAINT_PRIMARYKEY and SQLITE_CONSTRAINT_UNIQUE.
            C::ConstraintViolation if matches!(f.extended_code, 1555 | 2067) => Error::Duplicate,
            _ => Error::fatal(format!("sqlite: {e}")),
        },
        _ => Error::fatal(format!("sqlite: {e}")),
    }
}

/// A value bound as a parameter (strings as text bytes, unchecked: SQLite compares
/// them byte-wise and never needs them to be UTF-8).
struct P<'a>(&'a Value);

impl rusqlite::ToSql for P<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s)),
            Value::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

/// Bind `params` (then `limit`, if any) to `st` in place: no vector of parameters built
/// per statement.
fn bind(st: &mut rusqlite::Statement<'_>, params: &[Value], limit: Option<i64>) -> Result<()> {
    for (i, v) in params.iter().enumerate() {
        st.raw_bind_parameter(i + 1, P(v)).map_err(sql_err)?;
    }
    if let Some(l) = limit {
        st.raw_bind_parameter(params.len() + 1, l)
            .map_err(sql_err)?;
    }
    Ok(())
}

/// Store `v` in `slot`, reusing the slot's buffer when it held bytes of the same
/// kind (a worker keeps its slots: no allocation per row once they have grown).
fn value_into(v: ValueRef<'_>, slot: &mut Value) -> Result<()> {
    match (v, &mut *slot) {
        (ValueRef::Integer(i), _) => *slot = Value::Int(i),
        (ValueRef::Text(s), Value::Text(buf)) | (ValueRef::Blob(s), Value::Bytes(buf)) => {
            buf.clear();
            buf.extend_from_slice(s);
        }
        (ValueRef::Text(s), _) => *slot = Value::Text(s.to_vec()),
        (ValueRef::Blob(b), _) => *slot = Value::Bytes(b.to_vec()),
        (v, _) => {
            return Err(Error::fatal(format!(
                "sqlite: a column holds {:?}, which no declared type has",
                v.data_type()
            )))
        }
    }
    Ok(())
}

/// The kits' database in a SQLite file.
pub struct SqliteEngine {
    schema: Arc<Schema>,
    maps: Vec<TableMap>,
    sql: Vec<TableSql>,
    path: PathBuf,
    own: SqliteOptions,
    has_data: bool,
    read_only: bool,
    /// The workers' writer gate (none for a read-only open, whose transactions begin
    /// deferred).
    gate: Option<Arc<gate::WriterGate>>,
    /// Held (not read) so that a temporary database is removed with the engine.
    _tmp: Option<storage::temp::TempDir>,
}

/// A table's statement texts.
struct TableSql {
    get: String,
    insert: String,
    delete: String,
}

/// The schema as SQL, stored in the database so that a database made for another
/// workload (or scale) is refused instead of used.
fn fingerprint(maps: &[TableMap]) -> String {
    maps.iter()
        .flat_map(|m| m.ddl(D))
        .collect::<Vec<_>>()
        .join(";\n")
}

impl SqliteEngine {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connect(&self) -> Result<Connection> {
        let flags = if self.read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX
        };
        connect(&self.path, flags, self.own.sync)
    }

    fn create(path: &Path, maps: &[TableMap], sync: SyncMode) -> Result<()> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut c = connect(path, flags, sync)?;
        let mode: String = c
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(sql_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::fatal(format!(
                "sqlite: {} cannot be put in WAL mode (got {mode})",
                path.display()
            )));
        }
        let t = c.transaction().map_err(sql_err)?;
        t.execute(
            "CREATE TABLE oltpscope_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)",
            [],
        )
        .map_err(sql_err)?;
        for m in maps {
            for s in m.ddl(D) {
                t.execute(&s, []).map_err(sql_err)?;
            }
        }
        t.execute(
            "INSERT INTO oltpscope_meta VALUES ('schema', ?1)",
            [fingerprint(maps)],
        )
        .map_err(sql_err)?;
        t.commit().map_err(sql_err)
    }

    /// Open's last phase for a database found on disk: it is oltpscope's, of this
    /// workload and scale (`fingerprint`), and its load finished.
    fn check_ours(&self) -> Result<()> {
        let c = self.connect()?;
        let not_ours = || {
            Error::fatal(format!(
                "{} is not a database oltpscope made: remove it or rerun with --reload",
                self.path.display()
            ))
        };
        let has_meta: bool = c
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'oltpscope_meta'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(|_| not_ours())?
            > 0;
        if !has_meta {
            return Err(not_ours());
        }
        if meta(&c, "schema")?.as_deref() != Some(fingerprint(&self.maps).as_str()) {
            return Err(Error::fatal(format!(
                "{} holds the tables of another workload or scale: remove it or rerun \
                 with --reload",
                self.path.display()
            )));
        }
        if meta(&c, "loaded")?.is_none() {
            return Err(Error::fatal(format!(
                "the load did not finish: remove {} or rerun with --reload",
                self.path.display()
            )));
        }
        Ok(())
    }
}

/// Open's first phase: the database's directory (`--db`, or a temporary one), made if
/// the run may create a database.
fn place(opts: &EngineOptions) -> Result<(PathBuf, Option<storage::temp::TempDir>)> {
    let (dir, tmp) = match &opts.db_dir {
        Some(d) => (d.clone(), None),
        None => {
            // storage::temp's naming: an interrupted run's driver removes it, and
            // the next run removes one a killed process left.
            let t = storage::temp::create("sqlite")?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    if !dir.exists() {
        if !opts.create {
            return Err(Error::fatal(format!(
                "{} does not exist: there is no database to open",
                dir.display()
            )));
        }
        std::fs::create_dir_all(&dir)?;
    }
    Ok((dir, tmp))
}

/// Open's second phase: the database file in `dir`, removed first on `--reload`, created
/// (with `maps`' tables) when there is none and the run may create one, never over
/// other files. Returns its path and whether it held a database already.
fn database_file(
    dir: &Path,
    opts: &EngineOptions,
    maps: &[TableMap],
    sync: SyncMode,
) -> Result<(PathBuf, bool)> {
    let path = dir.join(DB_FILE);
    let mut exists = path.exists();
    if opts.reload && !opts.read_only && exists {
        for f in own_files(dir) {
            std::fs::remove_file(&f)?;
        }
        exists = false;
    }
    if !exists {
        if !opts.create || opts.read_only {
            return Err(Error::fatal(format!(
                "{} holds no SQLite database (no {DB_FILE})",
                dir.display()
            )));
        }
        if let Some(f) = std::fs::read_dir(dir)?.next() {
            return Err(Error::fatal(format!(
                "{} is not empty and holds no SQLite database (found {}): refusing to \
                 create one over it",
                dir.display(),
                f?.file_name().to_string_lossy()
            )));
        }
        SqliteEngine::create(&path, maps, sync)?;
    }
    Ok((path, exists))
}

fn connect(path: &Path, flags: OpenFlags, sync: SyncMode) -> Result<Connection> {
    let c = Connection::open_with_flags(path, flags)
        .map_err(|e| Error::fatal(format!("sqlite: cannot open {}: {e}", path.display())))?;
    c.busy_timeout(BUSY_TIMEOUT).map_err(sql_err)?;
    c.execute_batch(&format!(
        "PRAGMA synchronous={}; PRAGMA cache_size=-{CACHE_KIB};",
        sync.pragma()
    ))
    .map_err(sql_err)?;
    Ok(c)
}

fn meta(c: &Connection, k: &str) -> Result<Option<String>> {
    use rusqlite::OptionalExtension;
    c.query_row("SELECT v FROM oltpscope_meta WHERE k = ?1", [k], |r| {
        r.get(0)
    })
    .optional()
    .map_err(sql_err)
}

impl Engine for SqliteEngine {
    type Worker<'e> = SqliteWorker<'e>;
    const NAME: &'static str = "sqlite";
    type Options = SqliteOptions;
    const ABOUT: &'static str = "SQLite (embedded, bundled): real tables from the kits' typed schemas, WAL mode, one connection per worker, one writer at a time (BEGIN IMMEDIATE).";
    const DURABLE: bool = true;
    const EXTERNAL: Option<&'static str> = Some("the SQLite library");

    fn place(g: &api::Given) -> Result<api::Place> {
        if g.log_dir.is_some() {
            return Err(Error::fatal(
                "--log-dir: SQLite keeps its write-ahead log beside its database file in --db",
            ));
        }
        if let Some(l) = g.log.filter(|l| *l != api::LogMode::Off) {
            return Err(Error::fatal(format!(
                "--log {}: SQLite keeps its own write-ahead log; choose its durability with --sqlite-sync",
                l.as_str()
            )));
        }
        Ok(api::Place {
            db_dir: g.db.map(Path::to_path_buf),
            log_dir: None,
        })
    }

    fn owns_dir(st: &dyn storage::Storage, dir: &Path) -> bool {
        api::place::any_exists(st, dir, &[DB_FILE])
    }

    fn db_files(
        _st: &dyn storage::Storage,
        dir: &Path,
        log_dir: Option<&Path>,
    ) -> Result<Vec<PathBuf>> {
        api::place::log_in_db(
            dir,
            log_dir,
            "SQLite keeps its log beside its database in --db",
        )?;
        Ok(own_files(dir))
    }

    fn remove_db(_st: &dyn storage::Storage, dir: &Path, files: &[PathBuf]) -> Result<()> {
        // The database file last: until it goes, the directory is still recognised.
        let db = dir.join(DB_FILE);
        for f in files.iter().filter(|f| **f != db).chain([&db]) {
            std::fs::remove_file(f)
                .map_err(|e| Error::fatal(format!("cannot remove {}: {e}", f.display())))?;
        }
        Ok(())
    }

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        let own = opts.own::<SqliteOptions>()?;
        let maps = schema
            .tables
            .iter()
            .map(TableMap::new)
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(|e| Error::fatal(format!("sqlite: {e}")))?;
        let (dir, tmp) = place(opts)?;
        let (path, exists) = database_file(&dir, opts, &maps, own.sync)?;
        let sql = maps
            .iter()
            .map(|m| TableSql {
                get: m.get_sql(D),
                insert: m.insert_sql(D),
                delete: m.delete_sql(D),
            })
            .collect();
        let e = SqliteEngine {
            schema,
            sql,
            path,
            own,
            has_data: exists,
            read_only: opts.read_only,
            gate: (!opts.read_only).then(Arc::default),
            _tmp: tmp,
            maps,
        };
        if exists {
            e.check_ours()?;
        }
        Ok(e)
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn worker(&self, _worker_id: usize) -> SqliteWorker<'_> {
        let fixed = FIXED_SLOTS + TABLE_SLOTS * self.maps.len();
        SqliteWorker {
            conn: self
                .connect()
                .and_then(|c| {
                    Conn::try_new(c, |c| {
                        let writer = match &self.gate {
                            Some(g) => Some(gate::Writer::install(c, g.clone()).map_err(sql_err)?),
                            None => None,
                        };
                        Ok(Stmts {
                            st: (0..fixed).map(|_| None).collect(),
                            writer,
                        })
                    })
                })
                .map_err(|e: Error| e.to_string()),
            e: self,
            row: Vec::new(),
            pk: Key::new(),
            key: Key::new(),
            scans: HashMap::new(),
            vals: Vec::new(),
            updates: vec![Vec::new(); self.maps.len()],
            changed: Vec::new(),
            old_new: (Vec::new(), Vec::new()),
            adds: Vec::new(),
        }
    }

    fn has_data(&self) -> bool {
        self.has_data
    }

    fn load_done(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let c = self.connect()?;
        // The marker commits after every loaded row (each load transaction committed),
        // durably: FULL for this commit whatever the run's setting.
        c.execute_batch("PRAGMA synchronous=FULL")
            .map_err(sql_err)?;
        c.execute(
            "INSERT OR REPLACE INTO oltpscope_meta VALUES ('loaded', '1')",
            [],
        )
        .map_err(sql_err)?;
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        // Fold the WAL into the database file, so the directory holds one file at rest.
        let c = self.connect()?;
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(sql_err)
    }

    fn table_sizes(&self) -> Result<Vec<TableSize>> {
        let c = self.connect()?;
        self.maps
            .iter()
            .map(|m| {
                let n: i64 = c
                    .query_row(&m.count_sql(), [], |r| r.get(0))
                    .map_err(sql_err)?;
                Ok(TableSize {
                    name: m.name().to_string(),
                    records: n as u64,
                    ..TableSize::default()
                })
            })
            .collect()
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "sqlite_version": rusqlite::version(),
            "sync": self.own.sync,
            "file": self.path.display().to_string(),
        })
    }
}

/// A scan statement's key: its table and shape.
type ScanKey = (TableId, ScanShape);

/// A worker's prepared statements by slot: `BEGIN`, `COMMIT` and `ROLLBACK`, then each
/// table's get, insert and delete (prepared on first use), then the updates, adds and
/// scans the worker needed (prepared when first needed). Kept beside the connection
/// instead of in rusqlite's statement cache, which looks a statement up by its SQL text
/// and returns it to the cache (clearing its bindings) after every execution: 1.3 us of
/// a TPC-B transaction's 75 (docs/PERFORMANCE.md, session 57).
/// With them, the connection's side of the writer gate (dropped before the connection).
struct Stmts<'c> {
    st: Vec<Option<rusqlite::Statement<'c>>>,
    writer: Option<gate::Writer<'c>>,
}

self_cell::self_cell!(
    /// A worker's connection and its statements (which borrow it).
    struct Conn {
        owner: Connection,
        #[not_covariant]
        dependent: Stmts,
    }
);

const BEGIN: usize = 0;
const COMMIT: usize = 1;
const ROLLBACK: usize = 2;
const FIXED_SLOTS: usize = 3;
const TABLE_SLOTS: usize = 3;
const GET: usize = 0;
const INSERT: usize = 1;
const DELETE: usize = 2;

/// Table `t`'s statement `which` (`GET`, `INSERT`, `DELETE`).
fn table_slot(t: TableId, which: usize) -> usize {
    FIXED_SLOTS + TABLE_SLOTS * t.0 as usize + which
}

/// The connection, or why it could not be opened (reported by `begin`).
type ConnOrWhy = std::result::Result<Conn, String>;

fn conn_of(c: &mut ConnOrWhy) -> Result<&mut Conn> {
    c.as_mut().map_err(|e| Error::fatal(e.clone()))
}

/// Run `f` on the statement in `slot`, prepared from `sql` if the slot holds none yet
/// (`None`: a slot filled when its statement was made, [`new_slot`]).
fn with_stmt<R>(
    conn: &mut ConnOrWhy,
    slot: usize,
    sql: Option<&str>,
    f: impl FnOnce(&mut rusqlite::Statement<'_>) -> Result<R>,
) -> Result<R> {
    conn_of(conn)?.with_dependent_mut(|db, st| {
        if st.st.len() <= slot {
            st.st.resize_with(slot + 1, || None);
        }
        let s = &mut st.st[slot];
        if s.is_none() {
            let sql = sql.ok_or_else(|| Error::fatal("sqlite: a statement was never prepared"))?;
            *s = Some(db.prepare(sql).map_err(sql_err)?);
        }
        match s {
            Some(s) => f(s),
            None => Err(Error::fatal("sqlite: a statement was never prepared")),
        }
    })
}

/// Prepare `sql` into a new slot after the others; returns the slot.
fn new_slot(conn: &mut ConnOrWhy, sql: &str) -> Result<usize> {
    conn_of(conn)?.with_dependent_mut(|db, st| {
        st.st.push(Some(db.prepare(sql).map_err(sql_err)?));
        Ok(st.st.len() - 1)
    })
}

/// Run the statement in `slot` without rows (its parameters bound by `params`); returns
/// the rows it changed.
fn run_execute(
    conn: &mut ConnOrWhy,
    slot: usize,
    sql: Option<&str>,
    params: &[Value],
) -> Result<usize> {
    with_stmt(conn, slot, sql, |st| {
        bind(st, params, None)?;
        st.raw_execute().map_err(sql_err)
    })
}

/// One worker's connection and buffers.
pub struct SqliteWorker<'e> {
    e: &'e SqliteEngine,
    conn: ConnOrWhy,
    row: Vec<u8>,
    pk: Key,
    key: Key,
    /// The slots of the scans' statements.
    scans: HashMap<ScanKey, usize>,
    /// A select's column values, kept between rows and statements.
    vals: Vec<Value>,
    /// Per table, the slots of the updates of the column lists updates changed (a few
    /// each).
    updates: Vec<Vec<(Vec<usize>, usize)>>,
    changed: Vec<usize>,
    /// An update's row before and after the kit's change.
    old_new: (Vec<u8>, Vec<u8>),
    /// The slots of adds' statements (`add_i64`): per table and column, the add
    /// (`false`) and the read of the new value after it (`true`).
    adds: Vec<((TableId, usize, bool), usize)>,
}

/// An add's column, statement slot and parameters ([`SqliteWorker::add_statement`]).
type AddStatement = (usize, usize, Vec<Value>);

impl SqliteWorker<'_> {
    fn conn(&self) -> Result<&Connection> {
        self.conn
            .as_ref()
            .map(Conn::borrow_owner)
            .map_err(|e| Error::fatal(e.clone()))
    }

    fn map(&self, t: TableId) -> Result<&TableMap> {
        self.e
            .maps
            .get(t.0 as usize)
            .ok_or_else(|| Error::fatal(format!("no table {}", t.0)))
    }

    /// Run the statement in `slot` (prepared from `sql` on first use) with `params`,
    /// decode each row into `self.row`/`self.pk` and pass it to `f` (which returns false
    /// to stop). Returns the rows passed.
    fn select(
        &mut self,
        t: TableId,
        slot: usize,
        sql: Option<&str>,
        params: &[Value],
        limit: Option<i64>,
        mut f: impl FnMut(&TableMap, &[u8], &Key) -> bool,
    ) -> Result<usize> {
        let map = &self.e.maps[t.0 as usize];
        let (vals, row, pk) = (&mut self.vals, &mut self.row, &mut self.pk);
        with_stmt(&mut self.conn, slot, sql, |st| {
            bind(st, params, limit)?;
            let mut rows = st.raw_query();
            let mut n = 0;
            vals.resize(map.cols.len(), Value::Int(0));
            while let Some(r) = rows.next().map_err(sql_err)? {
                for (i, slot) in vals.iter_mut().enumerate() {
                    value_into(r.get_ref(i).map_err(sql_err)?, slot)?;
                }
                map.decode(&vals[..map.cols.len()], row, pk)?;
                n += 1;
                if !f(map, row, pk) {
                    break;
                }
            }
            Ok(n)
        })
    }

    /// Write the columns `changed` of `row` (nothing when none changed).
    fn update_changed(
        &mut self,
        table: TableId,
        key: &[u8],
        row: &[u8],
        changed: &[usize],
    ) -> Result<()> {
        let map = &self.e.maps[table.0 as usize];
        let known = &self.updates[table.0 as usize];
        let slot = match known.iter().find(|(c, _)| c == changed) {
            Some((_, slot)) => *slot,
            None => {
                let Some(sql) = map.update_some_sql(D, changed) else {
                    return Ok(());
                };
                let slot = new_slot(&mut self.conn, &sql)?;
                self.updates[table.0 as usize].push((changed.to_vec(), slot));
                slot
            }
        };
        let params = map.update_some_params(changed, key, row)?;
        run_execute(&mut self.conn, slot, None, &params)?;
        Ok(())
    }

    /// An update's write: the columns the kit's change touched (TPC-B's balance of a
    /// 100-byte row), so SQLite binds and compares no more than those.
    fn write_changed(&mut self, table: TableId, key: &[u8], old: &[u8], row: &[u8]) -> Result<()> {
        let e = self.e;
        let map = &e.maps[table.0 as usize];
        map.check_update(old, row)?;
        let mut changed = std::mem::take(&mut self.changed);
        map.changed_cols(old, row, &mut changed);
        let r = self.update_changed(table, key, row, &changed);
        self.changed = changed;
        r
    }

    /// An add's column, statement slot and parameters (the delta, then the key); `None`
    /// when no column takes adds there ([`TableMap::add_col`]).
    fn add_statement(
        &mut self,
        table: TableId,
        key: &[u8],
        at: usize,
        delta: i64,
    ) -> Result<Option<AddStatement>> {
        let map = self.map(table)?;
        let Some(col) = map.add_col(at) else {
            return Ok(None);
        };
        let mut params = vec![Value::Int(delta)];
        params.extend(map.key_params(key)?);
        Ok(Some((col, self.add_slot(table, col, false)?, params)))
    }

    /// The slot of an add to column `col` of `table` (`read`: the read of the column's
    /// value after it), kept per worker: a few.
    fn add_slot(&mut self, table: TableId, col: usize, read: bool) -> Result<usize> {
        let k = (table, col, read);
        if let Some((_, s)) = self.adds.iter().find(|(a, _)| *a == k) {
            return Ok(*s);
        }
        let map = &self.e.maps[table.0 as usize];
        let sql = if read {
            map.get_cols_sql(D, &[col], false)
        } else {
            map.add_sql(D, col, 1, false)
        };
        let slot = new_slot(&mut self.conn, &sql)?;
        self.adds.push((k, slot));
        Ok(slot)
    }

    /// Run table `t`'s statement `which` (`INSERT`, `DELETE`) with `params`.
    fn table_execute(&mut self, t: TableId, which: usize, params: &[Value]) -> Result<usize> {
        let e = self.e;
        let sql = &e.sql[t.0 as usize];
        let text = if which == INSERT {
            &sql.insert
        } else {
            &sql.delete
        };
        run_execute(&mut self.conn, table_slot(t, which), Some(text), params)
    }

    /// Run `BEGIN`, `COMMIT` or `ROLLBACK` (`slot`).
    fn control(&mut self, slot: usize, sql: &str) -> Result<()> {
        run_execute(&mut self.conn, slot, Some(sql), &[]).map(drop)
    }

    /// `f` on the connection's side of the writer gate, if it has one.
    fn writer<R>(&self, f: impl FnOnce(&gate::Writer<'_>) -> R) -> Option<R> {
        let c = self.conn.as_ref().ok()?;
        c.with_dependent(|_, d| d.writer.as_ref().map(f))
    }
}

impl api::Worker for SqliteWorker<'_> {
    fn schema(&self) -> &Schema {
        &self.e.schema
    }

    fn begin(&mut self) -> Result<()> {
        if !self.conn()?.is_autocommit() {
            return Err(Error::fatal("sqlite: begin inside a transaction"));
        }
        let sql = if self.e.read_only {
            "BEGIN DEFERRED"
        } else {
            "BEGIN IMMEDIATE"
        };
        if self.writer(|w| w.enter(BUSY_TIMEOUT)) == Some(false) {
            return Err(Error::Conflict("sqlite busy (the writer gate)"));
        }
        let r = self.control(BEGIN, sql);
        if r.is_err() {
            self.writer(|w| w.leave());
        }
        r
    }

    fn sql_dialect(&self) -> Option<api::SqlDialect> {
        Some(api::SqlDialect::Sqlite)
    }

    fn query(&mut self, sql: &str, f: &mut dyn FnMut(&[Value])) -> Result<()> {
        let conn = self.conn()?;
        // Not kept: a query's text carries its parameters, each one new.
        let mut st = conn.prepare(sql).map_err(sql_err)?;
        let n = st.column_count();
        let mut rows = st.raw_query();
        let mut vals = vec![Value::Int(0); n];
        while let Some(r) = rows.next().map_err(sql_err)? {
            for (i, slot) in vals.iter_mut().enumerate() {
                value_into(r.get_ref(i).map_err(sql_err)?, slot)?;
            }
            f(&vals);
        }
        Ok(())
    }

    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let params = self.map(table)?.key_params(key)?;
        let e = self.e;
        let sql = e.sql[table.0 as usize].get.as_str();
        let n = self.select(
            table,
            table_slot(table, GET),
            Some(sql),
            &params,
            None,
            |_, row, _| {
                f(row);
                false
            },
        )?;
        Ok(n > 0)
    }

    fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let e = self.e;
        let map = e
            .maps
            .get(index.table.0 as usize)
            .ok_or_else(|| Error::fatal(format!("no table {}", index.table.0)))?;
        let Some(plan) = map.plan_scan(D, index.index, lo, hi, dir == Dir::Forward, limit)? else {
            return Ok(0);
        };
        let sh = (index.table, plan.shape);
        let slot = match self.scans.get(&sh) {
            Some(s) => *s,
            None => {
                let sql = map.scan_sql(D, index.index, &plan, map.all_cols(), dir);
                let s = new_slot(&mut self.conn, &sql)?;
                self.scans.insert(sh, s);
                s
            }
        };
        let params: Vec<Value> = plan.params().into_iter().map(|(_, v)| v.clone()).collect();
        let (limited, limit) = (plan.limited, limit);
        let mut key = self.key;
        let n = self.select(
            index.table,
            slot,
            None,
            &params,
            limited.then_some(limit as i64),
            |map, row, pk| {
                map.index_key(index.index, row, pk, &mut key);
                f(&key, row)
            },
        )?;
        Ok(n)
    }

    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        let params = self.map(table)?.row_params(key, row)?;
        self.table_execute(table, INSERT, &params)?;
        Ok(())
    }

    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        let params = self.map(table)?.key_params(key)?;
        let e = self.e;
        let sql = e.sql[table.0 as usize].get.as_str();
        // The row before and after the kit's change, in buffers the worker keeps.
        let (mut old, mut row) = std::mem::take(&mut self.old_new);
        old.clear();
        let found = self.select(
            table,
            table_slot(table, GET),
            Some(sql),
            &params,
            None,
            |_, r, _| {
                old.extend_from_slice(r);
                false
            },
        );
        let r = match found {
            Ok(0) => Ok(false),
            Ok(_) => {
                row.clear();
                row.extend_from_slice(&old);
                f(&mut row);
                self.write_changed(table, key, &old, &row).map(|()| true)
            }
            Err(e) => Err(e),
        };
        self.old_new = (old, row);
        r
    }

    fn add_i64(
        &mut self,
        table: TableId,
        key: &[u8],
        at: usize,
        delta: i64,
    ) -> Result<Option<i64>> {
        let Some((col, slot, params)) = self.add_statement(table, key, at, delta)? else {
            return api::engine::add_i64_by_update(self, table, key, at, delta);
        };
        // The add, then the new value read in the same transaction (as pgbench reads the
        // balance it changed), not `UPDATE .. RETURNING`: SQLite collects a RETURNING
        // statement's rows in an ephemeral table it opens and drops on every execution,
        // which cost a C loop of TPC-B 5-10% of its rate (issue 38).
        if run_execute(&mut self.conn, slot, None, &params)? == 0 {
            return Ok(None);
        }
        let read = self.add_slot(table, col, true)?;
        with_stmt(&mut self.conn, read, None, |st| {
            bind(st, &params[1..], None)?;
            let mut rows = st.raw_query();
            match rows.next().map_err(sql_err)? {
                Some(r) => Ok(Some(r.get::<_, i64>(0).map_err(sql_err)?)),
                None => Err(Error::fatal(
                    "sqlite: a row added to was not found by the read after it",
                )),
            }
        })
    }

    fn add_i64_blind(&mut self, table: TableId, key: &[u8], at: usize, delta: i64) -> Result<()> {
        let Some((_, slot, params)) = self.add_statement(table, key, at, delta)? else {
            return api::engine::add_i64_blind_by_add(self, table, key, at, delta);
        };
        match run_execute(&mut self.conn, slot, None, &params)? {
            1 => Ok(()),
            _ => Err(api::engine::absent_row(table)),
        }
    }

    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        let params = self.map(table)?.key_params(key)?;
        Ok(self.table_execute(table, DELETE, &params)? > 0)
    }

    fn commit(&mut self) -> Result<()> {
        let r = self.control(COMMIT, "COMMIT");
        match r {
            // The WAL hook gave the gate up already if the transaction wrote.
            Ok(()) => self.writer(|w| w.committed()),
            // A failed commit still in its transaction keeps the gate until `abort`.
            Err(_) if matches!(self.conn(), Ok(c) if !c.is_autocommit()) => None,
            Err(_) => self.writer(|w| w.leave()),
        };
        r
    }

    fn abort(&mut self) {
        if matches!(self.conn(), Ok(c) if !c.is_autocommit()) {
            // A failed rollback leaves nothing to undo: SQLite rolls back itself when
            // it cannot (and reports the cause on the next statement).
            let _ = self.control(ROLLBACK, "ROLLBACK");
        }
        self.writer(|w| w.leave());
    }
}
