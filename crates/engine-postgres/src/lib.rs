//! `--engine postgres`: the kits on PostgreSQL through the typed schema ([`sqlmap`]):
//! real tables, primary keys and secondary indexes; one connection per worker;
//! statements prepared once per connection; serializable (default) or repeatable-read
//! transactions, read committed from a kit's `read_committed()` on. Serialization
//! failures (40001) and deadlocks (40P01) are retryable `Error::Conflict`s; a unique
//! violation (23505) is `Error::Duplicate`.
//!
//! `BEGIN` is sent with the transaction's first statement, not by `begin`: a kit's
//! `read_committed()` comes after `begin`, and PostgreSQL fixes a transaction's level
//! at its first statement. Partial reads (`get_part`, `update_part`, `scan_part`)
//! select only the columns holding the bytes asked for (and a partial update sets only
//! those). Every statement a worker runs is counted (`stats()["statements"]`).
//!
//! Round trips: after the load a transaction's inserts and its updates' writes are kept
//! and sent as one statement before the next statement on a table holding some, and at
//! commit (so a duplicate key is reported there); batches of keys (`get_batch`,
//! `update_batch`) are one select each. BEGIN shares the round trip of the first
//! statement and COMMIT that of the kept writes ([`conn`]: pipelined requests); every
//! statement, BEGIN and COMMIT too, is prepared once per connection
//! (docs/design/sql-adapters.md, "Round trips").
//!
//! The server is the one `--pg-url` names, or a private one started here
//! ([`pgserver`]) and stopped when the engine is dropped. Each run creates its tables
//! in a fresh schema of its own (`oltpscope_<pid>_<n>`), dropped at shutdown: a run
//! never reuses or overwrites tables it did not create.
//!
//! With `--db DIR` (the private server only) the server's cluster is kept in `DIR`
//! (`pgserver::PgServer::start_kept`): a load makes it and creates its tables in the
//! schema [`KEPT_SCHEMA`], kept at shutdown; a later `run --no-load` starts a server on
//! it, finds those tables (the marker's label, the tables' definitions, must match the
//! kit's; the driver then checks the rows' extent) and runs there. The marker says the
//! load finished only after a checkpoint made it durable (docs/design/postgres.md).
//!
//! The load is a bulk load: tables made without their keys, a worker's inserts buffered
//! per table and copied (COPY) at commit, its commits not waiting for the WAL flush,
//! and the keys built at `load_done` (docs/design/sql-adapters.md).
//!
//! This crate must never touch a schema it did not create.

use api::schema::Schema;
use api::typed::Value;
use api::{Dir, Engine, EngineOptions, Error, IndexId, Key, Result, TableId, TableSize};
use conn::Conn;
use conn::Statement;
use postgres_types::ToSql;
use sqlmap::{Dialect, Kind, ScanShape, TableMap};
use std::collections::HashMap;
use std::io::Write;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub mod conn;
pub mod conninfo;

const D: Dialect = Dialect::Postgres;

/// The schema of a kept cluster's tables (`--db`): one load's, kept across runs.
pub const KEPT_SCHEMA: &str = "oltpscope_kept";

/// Rows a worker buffers per table during the load before copying them.
const COPY_BATCH_ROWS: usize = 10_000;
/// Rows a transaction's buffered inserts (all tables) hold before they are sent anyway:
/// bounds the buffer and the statement (a TPC-C New-Order buffers at most 17).
const PENDING_ROWS: usize = 1_000;

/// The transaction isolation level (`--isolation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Serializable snapshot isolation: the kits' consistency conditions hold.
    #[default]
    Serializable,
    /// Snapshot isolation: write skew is possible (first-updater-wins only).
    RepeatableRead,
    /// PostgreSQL's default and pgbench's: each statement sees what committed before it.
    /// Every update's read is `SELECT ... FOR UPDATE`, so no update is lost and the
    /// kits' consistency conditions hold (a read-only transaction may see two states).
    ReadCommitted,
}

impl Isolation {
    fn begin(self, read_committed: bool) -> &'static str {
        match self {
            _ if read_committed => "BEGIN ISOLATION LEVEL READ COMMITTED",
            Isolation::ReadCommitted => "BEGIN ISOLATION LEVEL READ COMMITTED",
            Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        }
    }

    /// As the report names it.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Serializable => "serializable",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::ReadCommitted => "read committed",
        }
    }
}

/// The PostgreSQL engine's own settings (`Engine::Options`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PostgresOptions {
    pub isolation: Isolation,
    /// A server to use (`--pg-url`, a libpq connection string or URL). `None`: start a
    /// private server for the run.
    pub url: Option<String>,
    /// Until `load_done`, buffer inserts and COPY them (default). A duplicate key is
    /// then reported by the statement that copies it (the next operation, or commit),
    /// not by `insert` itself: loaders never insert one, but the conformance suite,
    /// which never calls `load_done`, checks `insert`'s own answer and turns it off.
    pub copy_load: bool,
    /// PostgreSQL's `synchronous_commit` for the workers' sessions (`--pg-sync on|off`):
    /// on (default) a commit waits for its WAL flush; off it returns first (a crash may
    /// lose the last commits, never corrupt: as the built-in engines' `--log async`).
    pub synchronous_commit: bool,
    /// After the load, buffer a transaction's inserts and send them as one statement
    /// (all tables, many rows) before the next statement on a table holding some, and
    /// at commit (default). A duplicate key is then reported by that statement (the
    /// next operation on that table, or commit), not by `insert` itself: no kit acts on
    /// `insert`'s `Duplicate` but by aborting, which then happens a little later. The
    /// conformance suite's comparison of each operation's answer turns it off.
    pub batch_inserts: bool,
    /// After the load, send an update's write (its read went out at once: the kit needs
    /// the row) with the buffered inserts, in the same statement (default). An error of
    /// the write (a serialization failure) is then reported by that statement.
    pub defer_updates: bool,
    /// On a kept cluster that holds data (`--db DIR --no-load`): read its tables and
    /// indexes into the server's buffers (`pg_prewarm`) before the first transaction
    /// (`run --prewarm`).
    pub prewarm: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            isolation: Isolation::default(),
            url: None,
            copy_load: true,
            synchronous_commit: true,
            batch_inserts: true,
            defer_updates: true,
            prewarm: false,
        }
    }
}

/// A kept cluster's label ([`pgserver::Kept::label`]): the tables' definitions, which
/// a run on it must share.
fn kept_label(maps: &[TableMap]) -> String {
    maps.iter()
        .flat_map(|m| m.ddl(D))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A connection's error as the API's: serialization failures and deadlocks (SQLSTATE
/// 40001, 40P01) are conflicts the driver retries, a unique violation (23505) a
/// duplicate key, the rest fatal.
fn conn_err(e: conn::Error) -> Error {
    match e.code() {
        Some("40001") => Error::Conflict("postgres serialization failure"),
        Some("40P01") => Error::Conflict("postgres deadlock"),
        Some("23505") => Error::Duplicate,
        // Only the kept writes' check of an add divides (`chain_writes`).
        Some("22012") => Error::fatal("postgres: an add found no row to change"),
        Some(c) => Error::fatal(format!("postgres: {c}: {}", e.message())),
        None => Error::fatal(format!("postgres: {e}")),
    }
}

static NEXT_SCHEMA: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The server process serving the connection of the worker made last on this thread.
    static BACKEND_PID: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

/// `simulate --engine postgres` sets this variable (a FIFO path) for its child run: the
/// private server then starts under the oltpscope tracer following its forks, and each
/// worker made after the load starts tracing its backend (see `docs/design/tracer.md`,
/// "Forked processes").
pub const TRACE_ENV: &str = "OLTPSCOPE_PG_TRACE_OUT";
/// The server function a backend starts tracing at (the workers call it once, after the
/// load) and the one whose every call ends a transaction (commit or abort, once per
/// top-level transaction).
pub const TRACE_START_AT: &str = "pg_backend_pid";
pub const TXN_END_AT: &str = "ProcArrayEndTransaction";
/// Where a backend stops tracing: its exit (what runs after it, the libraries' exit
/// handlers, is no transaction's work).
pub const TRACE_STOP_AT: &str = "proc_exit";

/// The tracer's launcher for the postmaster, if this run is traced.
fn trace_launcher() -> Result<Option<pgserver::Launcher>> {
    let Some(out) = std::env::var_os(TRACE_ENV) else {
        return Ok(None);
    };
    let setup = tracer::prepare().map_err(|e| Error::fatal(format!("postgres: {e}")))?;
    let mut opts = tracer::TraceOptions::default();
    opts.valgrind_args.extend(
        [
            "--trace-children=yes".to_string(),
            "--follow-forks=yes".to_string(),
            format!("--trace-start-at={TRACE_START_AT}"),
            format!("--txn-end-at={TXN_END_AT}"),
            format!("--trace-stop-at={TRACE_STOP_AT}"),
        ]
        .map(Into::into),
    );
    let (program, args, env) = setup.prefix(std::path::Path::new(&out), &opts);
    Ok(Some(pgserver::Launcher { program, args, env }))
}

/// The pid of the backend process serving the connection of the last worker made on
/// this thread (`pg_backend_pid()`, asked once when it connects): what `profile` samples
/// and `simulate` traces for that worker. `None` before any worker, or if it could not
/// connect.
pub fn backend_pid_of_this_thread() -> Option<u32> {
    BACKEND_PID.with(|p| p.get())
}

/// The kits' database in a PostgreSQL schema of its own.
pub struct PostgresEngine {
    schema: Arc<Schema>,
    maps: Vec<TableMap>,
    sql: Vec<TableSql>,
    url: String,
    pg_schema: String,
    own: PostgresOptions,
    /// True until `load_done`: inserts go through COPY.
    loading: AtomicBool,
    /// A COPY load's primary keys and secondary indexes, built by `load_done` once the
    /// rows are in (`TableMap::pg_bulk_ddl`); empty otherwise.
    deferred_keys: Mutex<Vec<String>>,
    admin: Mutex<Conn>,
    dropped: AtomicBool,
    /// The private server, if this engine started one (stopped when dropped, after
    /// the connections).
    server: Mutex<Option<pgserver::PgServer>>,
    /// A traced run (`simulate`): the launcher the server restarts under after the
    /// load, which runs natively (under valgrind it would take hundreds of times longer).
    trace_after_load: Mutex<Option<pgserver::Launcher>>,
    /// The tables live in a kept cluster (`--db`): never dropped; `has_data` when the
    /// cluster held them already.
    kept: bool,
    has_data: bool,
    /// Opened read-only (a kept cluster checked): its sessions refuse writes.
    read_only: bool,
    /// Statements the workers ran (BEGIN, COMMIT and ROLLBACK included; the prepares,
    /// once per connection and statement text, not).
    statements: AtomicU64,
    /// Round trips the workers made to run them (several statements may share one:
    /// BEGIN goes with the first statement, COMMIT with the held writes).
    round_trips: AtomicU64,
}

struct TableSql {
    get: String,
    /// `get` with `FOR UPDATE`: the read of an update at read committed.
    get_lock: String,
    insert: String,
    update: Option<String>,
    delete: String,
    copy: String,
}

impl PostgresEngine {
    /// The schema holding this run's tables.
    pub fn pg_schema(&self) -> &str {
        &self.pg_schema
    }

    fn has_private_server(&self) -> bool {
        self.server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    fn drop_schema(&self) -> Result<()> {
        if self.dropped.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let mut c = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        c.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            sqlmap::ident(&self.pg_schema)
        ))
        .map_err(conn_err)
    }
}

impl Drop for PostgresEngine {
    fn drop(&mut self) {
        // Best effort: a server that is gone took the schema with it.
        let _ = self.drop_schema();
    }
}

/// A worker's connection; `read_only` (`oltpscope check` on a kept cluster): every
/// transaction of it is read-only, so the server refuses a write.
fn connect(url: &str, schema: &str, synchronous_commit: bool, read_only: bool) -> Result<Conn> {
    let on = |b: bool| if b { "on" } else { "off" };
    let mut c = Conn::connect(url).map_err(Error::fatal)?;
    c.batch_execute(&format!(
        "SET search_path TO {}; SET synchronous_commit TO {}; SET default_transaction_read_only TO {}",
        sqlmap::ident(schema),
        on(synchronous_commit),
        on(read_only)
    ))
    .map_err(conn_err)?;
    Ok(c)
}

impl Engine for PostgresEngine {
    type Worker<'e> = PostgresWorker<'e>;
    const NAME: &'static str = "postgres";
    type Options = PostgresOptions;
    const ABOUT: &'static str = "PostgreSQL (--pg-url, else a private server for the run, or one kept in a database directory): real tables from the kits' typed schemas, one connection per worker, serializable transactions.";
    const EXTERNAL: Option<&'static str> = Some("the PostgreSQL server");

    fn place(g: &api::Given) -> Result<api::Place> {
        if g.log_dir.is_some() {
            return Err(Error::fatal(
                "--log-dir: PostgreSQL keeps its write-ahead log in its cluster (kept in --db, or the server's)",
            ));
        }
        if let Some(l) = g.log.filter(|l| *l != api::LogMode::Off) {
            return Err(Error::fatal(format!(
                "--log {}: PostgreSQL keeps its own write-ahead log",
                l.as_str()
            )));
        }
        Ok(api::Place {
            db_dir: g.db.map(std::path::Path::to_path_buf),
            log_dir: None,
        })
    }

    fn owns_dir(_st: &dyn storage::Storage, dir: &std::path::Path) -> bool {
        pgserver::kept::has_marker(dir)
    }

    fn db_files(
        _st: &dyn storage::Storage,
        dir: &std::path::Path,
        log_dir: Option<&std::path::Path>,
    ) -> Result<Vec<std::path::PathBuf>> {
        if log_dir.is_some_and(|l| l != dir) {
            return Err(Error::fatal(
                "--log-dir: PostgreSQL keeps its write-ahead log in its cluster in --db",
            ));
        }
        use pgserver::kept::{DATA, LOG, MARKER};
        Ok([DATA, LOG, MARKER]
            .iter()
            .map(|n| dir.join(n))
            .filter(|p| p.exists())
            .collect())
    }

    fn remove_db(
        _st: &dyn storage::Storage,
        dir: &std::path::Path,
        _files: &[std::path::PathBuf],
    ) -> Result<()> {
        // The data directory first, the marker last (kept.rs).
        pgserver::kept::discard(dir).map_err(Error::fatal)
    }

    fn open(schema: Arc<Schema>, opts: &EngineOptions) -> Result<Self> {
        let own = opts.own::<PostgresOptions>()?;
        let kept_dir = opts.db_dir.as_deref();
        if kept_dir.is_none() && (opts.read_only || !opts.create) {
            return Err(Error::fatal(
                "the postgres engine's tables live for one run (a schema of their own, \
                 dropped at its end) unless kept with --db: there is no database to open again",
            ));
        }
        if kept_dir.is_some() && own.url.is_some() {
            return Err(Error::fatal(
                "--db keeps the private server's cluster: it cannot be given with --pg-url \
                 (that server keeps its own)",
            ));
        }
        let maps = schema
            .tables
            .iter()
            .map(TableMap::new)
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(|e| Error::fatal(format!("postgres: {e}")))?;
        let (server, url, has_data) = start_server(&own, kept_dir, &maps, opts)?;
        if opts.read_only && !has_data {
            return Err(Error::fatal(
                "postgres: the kept cluster holds no loaded tables: nothing to open read-only",
            ));
        }
        let launcher = trace_launcher()?;
        if launcher.is_some() && has_data {
            return Err(Error::fatal(
                "postgres: a traced run loads its own cluster (a kept one is not restarted under valgrind)",
            ));
        }
        if launcher.is_some() && server.is_none() {
            return Err(Error::fatal(
                "postgres: a traced run needs the private server (--pg-url names a server oltpscope cannot restart under valgrind)",
            ));
        }
        let kept = kept_dir.is_some();
        let pg_schema = if kept {
            KEPT_SCHEMA.to_string()
        } else {
            format!(
                "oltpscope_{}_{}",
                std::process::id(),
                NEXT_SCHEMA.fetch_add(1, Ordering::Relaxed)
            )
        };
        let mut admin = Conn::connect(&url).map_err(Error::fatal)?;
        if has_data {
            find_tables(&mut admin, &pg_schema, &maps)?;
            if own.prewarm {
                prewarm(&mut admin, &pg_schema, &maps)?;
            }
        }
        let copy_load = own.copy_load && !has_data;
        let mut deferred_keys = Vec::new();
        if !has_data {
            let mut ddl = format!(
                "CREATE SCHEMA {0}; SET search_path TO {0};",
                sqlmap::ident(&pg_schema)
            );
            for m in &maps {
                // A COPY load builds the keys after the rows are in, as pg_restore
                // does: an index insert (and its WAL) per row made the 1GB micro load
                // some 500 s of `reproduce revisited` (issue 41).
                let stmts = if copy_load {
                    let (create, keys) = m.pg_bulk_ddl();
                    deferred_keys.extend(keys);
                    vec![create]
                } else {
                    m.ddl(D)
                };
                for s in stmts {
                    ddl.push_str(&s);
                    ddl.push(';');
                }
            }
            admin
                .batch_execute(&format!("BEGIN; {ddl} COMMIT;"))
                .map_err(conn_err)?;
        }
        let sql = maps.iter().map(table_sql).collect();
        Ok(PostgresEngine {
            schema,
            maps,
            sql,
            url,
            pg_schema,
            own,
            loading: AtomicBool::new(copy_load),
            deferred_keys: Mutex::new(deferred_keys),
            admin: Mutex::new(admin),
            // A kept cluster's schema is never dropped.
            dropped: AtomicBool::new(kept),
            server: Mutex::new(server),
            trace_after_load: Mutex::new(launcher),
            kept,
            has_data,
            read_only: opts.read_only,
            statements: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
        })
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn worker(&self, _worker_id: usize) -> PostgresWorker<'_> {
        // A loader's commits do not wait for their WAL flush: the load is not done
        // until `load_done` (a kept cluster's checkpoint, before its marker says
        // loaded), and the run's first synchronous commit flushes the WAL before it,
        // the load's included. Each loader transaction (512 rows of the micro
        // benchmark) waited for an fsync of its own.
        let loading = self.loading.load(Ordering::Acquire);
        let conn = connect(
            &self.url,
            &self.pg_schema,
            self.own.synchronous_commit && !loading,
            self.read_only,
        )
        .map_err(|e| e.to_string());
        BACKEND_PID.with(|p| p.set(None));
        let mut w = PostgresWorker {
            conn,
            e: self,
            in_txn: false,
            began: false,
            begin_unsent: None,
            read_committed: false,
            parts: HashMap::new(),
            stmts: HashMap::new(),
            scans: HashMap::new(),
            copy: vec![Vec::new(); self.maps.len()],
            copy_rows: 0,
            pending: vec![Vec::new(); self.maps.len()],
            pending_rows: 0,
            pending_upd: (0..self.maps.len()).map(|_| None).collect(),
            pending_add: (0..self.maps.len()).map(|_| None).collect(),
            adds: HashMap::new(),
            writes: HashMap::new(),
            lock_next: false,
            batch: HashMap::new(),
            row: Vec::new(),
            pk: Key::new(),
        };
        // Transaction control prepared up front, before the pid question below: each
        // prepare outside a transaction block is an implicit transaction of its own, which
        // a traced run (tracing from that question on) would count as one of the run's.
        // An error here (no connection) comes back from the first operation.
        let iso = self.own.isolation;
        for sql in [iso.begin(false), iso.begin(true), "COMMIT", "ROLLBACK"] {
            if w.prepared(sql).is_err() {
                break;
            }
        }
        // Traced: only the run's workers ask (the question starts tracing the backend).
        let ask = std::env::var_os(TRACE_ENV).is_none() || !self.loading.load(Ordering::Acquire);
        if ask {
            if let Ok(c) = &mut w.conn {
                let err = |e: conn::Error| format!("postgres: pg_backend_pid(): {e}");
                let pid = c
                    .prepare("SELECT pg_backend_pid()")
                    .map_err(err)
                    .and_then(|st| c.run(&[], &st, &[], None).map_err(err))
                    .and_then(|sent| {
                        sent.first()
                            .ok_or_else(|| "postgres: pg_backend_pid(): no row".to_string())?
                            .try_get::<i32>(0)
                            .map_err(err)
                    });
                match pid {
                    Ok(pid) => BACKEND_PID.with(|p| p.set(u32::try_from(pid).ok())),
                    Err(e) => w.conn = Err(e),
                }
            }
        }
        w
    }

    fn load_done(&self) -> Result<()> {
        self.loading.store(false, Ordering::Release);
        let mut c = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        c.batch_execute(&format!(
            "SET search_path TO {}",
            sqlmap::ident(&self.pg_schema)
        ))
        .map_err(conn_err)?;
        let keys =
            std::mem::take(&mut *self.deferred_keys.lock().unwrap_or_else(|p| p.into_inner()));
        if !keys.is_empty() {
            build_keys(&mut c, &keys)?;
        }
        // Statistics for the planner, as a DBA would gather after a bulk load.
        c.batch_execute("ANALYZE").map_err(conn_err)?;
        if self.kept {
            // Every loaded page on disk before the marker says loaded (a commit's WAL
            // may not be flushed with --pg-sync off); the shutdown's checkpoint then has
            // little left to write.
            c.batch_execute("CHECKPOINT").map_err(conn_err)?;
            let server = self.server.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = server.as_ref() {
                s.mark_loaded()
                    .map_err(|e| Error::fatal(format!("postgres: {e}")))?;
            }
        }
        let launcher = self
            .trace_after_load
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(launcher) = launcher {
            // The loaders' connections are closed; the admin connection is cut by the
            // restart and opened again.
            let mut server = self.server.lock().unwrap_or_else(|p| p.into_inner());
            let server = server
                .as_mut()
                .expect("a traced run has its private server");
            // Under valgrind the server starts many times slower.
            server
                .restart_under(Some(launcher), std::time::Duration::from_secs(600))
                .map_err(|e| Error::fatal(format!("postgres: {e}")))?;
            // Its error names the server it could not reach.
            *c = Conn::connect(&self.url).map_err(Error::fatal)?;
        }
        Ok(())
    }

    fn has_data(&self) -> bool {
        self.has_data
    }

    fn shutdown(&self) -> Result<()> {
        self.drop_schema()?;
        if self.kept {
            // Stopped now, so that a shutdown that is not clean (the postmaster needed
            // SIGKILL) is the run's error, not a warning at drop. The admin connection
            // is cut by the fast shutdown.
            let server = self.server.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(s) = server {
                s.stop()
                    .map_err(|e| Error::fatal(format!("postgres: {e}")))?;
            }
        }
        Ok(())
    }

    fn table_sizes(&self) -> Result<Vec<TableSize>> {
        let mut c = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        c.batch_execute(&format!(
            "SET search_path TO {}",
            sqlmap::ident(&self.pg_schema)
        ))
        .map_err(conn_err)?;
        self.maps
            .iter()
            .map(|m| {
                let st = c.prepare(&m.count_sql()).map_err(conn_err)?;
                let sent = c.run(&[], &st, &[], None).map_err(conn_err)?;
                let n: i64 = sent
                    .first()
                    .ok_or_else(|| Error::fatal("postgres: a count returned no row"))?
                    .try_get(0)
                    .map_err(conn_err)?;
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
            "settings": format!(
                "isolation {}, synchronous_commit {}, {}",
                self.own.isolation.name(),
                if self.own.synchronous_commit { "on" } else { "off" },
                if self.has_private_server() { "private server" } else { "server of --pg-url" }
            ),
            "isolation": self.own.isolation,
            "private_server": self.has_private_server(),
            "schema": self.pg_schema,
            "statements": self.statements.load(Ordering::Relaxed),
            "round_trips": self.round_trips.load(Ordering::Relaxed),
        })
    }
}

/// The server of a run: `--pg-url`'s, a private one on a temporary cluster, or a
/// private one on the cluster kept in `--db`; its connection string, and whether the
/// kept cluster held a load already.
fn start_server(
    own: &PostgresOptions,
    kept_dir: Option<&std::path::Path>,
    maps: &[TableMap],
    opts: &EngineOptions,
) -> Result<(Option<pgserver::PgServer>, String, bool)> {
    let pg_opts = pgserver::PgOptions {
        max_connections: (opts.threads as u32 + 16).max(64),
        ..pgserver::PgOptions::default()
    };
    let pg_err = |e: String| Error::fatal(format!("postgres: {e}"));
    Ok(match (&own.url, kept_dir) {
        (Some(u), _) => (None, u.clone(), false),
        (None, None) => {
            let s = pgserver::PgServer::start(&pg_opts).map_err(pg_err)?;
            let u = s.url();
            (Some(s), u, false)
        }
        (None, Some(dir)) => {
            let label = kept_label(maps);
            let k = pgserver::Kept {
                dir,
                label: &label,
                create: opts.create,
                reload: opts.reload,
            };
            let (s, has_data) = pgserver::PgServer::start_kept(&pg_opts, &k).map_err(pg_err)?;
            let u = s.url();
            (Some(s), u, has_data)
        }
    })
}

/// Builds a COPY load's primary keys and indexes (`stmts`), each one sort of the loaded
/// rows. A duplicate key the load copied (the kits' loaders never make one) fails the
/// load here, naming the statement.
fn build_keys(c: &mut Conn, stmts: &[String]) -> Result<()> {
    // The sorts' memory for this session only (the server's default is 64 MB, which
    // spills the 1GB shape's sort to disk); the server's settings are left alone.
    c.batch_execute(&format!("SET maintenance_work_mem = '{BUILD_MEM_MB}MB'"))
        .map_err(conn_err)?;
    for s in stmts {
        c.batch_execute(s).map_err(|e| match e.code() {
            Some("23505") => Error::fatal(format!(
                "postgres: the load copied a duplicate key: {s}: {}",
                e.message()
            )),
            _ => conn_err(e),
        })?;
    }
    c.batch_execute("RESET maintenance_work_mem")
        .map_err(conn_err)
}

/// `maintenance_work_mem` while a COPY load's keys are built.
const BUILD_MEM_MB: u32 = 1024;

/// A table's statements, prepared once per connection.
fn table_sql(m: &TableMap) -> TableSql {
    TableSql {
        get: m.get_sql(D),
        get_lock: m.get_cols_sql(D, m.all_cols(), true),
        insert: m.insert_sql(D),
        update: m.update_sql(D),
        delete: m.delete_sql(D),
        copy: format!(
            "COPY {} ({}) FROM STDIN",
            sqlmap::ident(m.name()),
            m.cols
                .iter()
                .map(|c| sqlmap::ident(&c.name))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Checks that a kept cluster's schema holds every table of `maps` (the marker's label
/// said their definitions match; a table missing means the cluster is damaged).
fn find_tables(c: &mut Conn, schema: &str, maps: &[TableMap]) -> Result<()> {
    let literal = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let names: Vec<String> = maps.iter().map(|m| literal(m.name())).collect();
    let st = c
        .prepare(&format!(
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = {} AND tablename IN ({})",
            literal(schema),
            names.join(", ")
        ))
        .map_err(conn_err)?;
    let sent = c.run(&[], &st, &[], None).map_err(conn_err)?;
    let found: i64 = sent
        .first()
        .ok_or_else(|| Error::fatal("postgres: a count returned no row"))?
        .try_get(0)
        .map_err(conn_err)?;
    if found != maps.len() as i64 {
        return Err(Error::fatal(format!(
            "postgres: the kept cluster's schema {schema} holds {found} of the {} tables its marker names: damaged, load it again with --reload",
            maps.len()
        )));
    }
    Ok(())
}

/// Reads a kept cluster's tables and their indexes into the server's buffers
/// (`pg_prewarm`, shipped with the server's contrib modules), up to `shared_buffers`.
fn prewarm(c: &mut Conn, schema: &str, maps: &[TableMap]) -> Result<()> {
    c.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        .map_err(|e| {
            Error::fatal(format!(
                "postgres: --prewarm needs the pg_prewarm extension: {}",
                e.message()
            ))
        })?;
    for m in maps {
        let table = format!("{}.{}", sqlmap::ident(schema), sqlmap::ident(m.name()));
        // The table, then each of its indexes (the primary key's included).
        c.batch_execute(&format!(
            "SELECT pg_prewarm('{t}'::regclass); SELECT pg_prewarm(indexrelid) FROM pg_catalog.pg_index WHERE indrelid = '{t}'::regclass",
            t = table.replace('\'', "''")
        ))
        .map_err(conn_err)?;
    }
    Ok(())
}

/// A value as a parameter of the SQL type `kind` (the statement casts it to that).
fn param(kind: Kind, v: &Value) -> Result<Box<dyn ToSql + Sync>> {
    let range = |x: i64| Error::fatal(format!("postgres: {x} does not fit a {kind:?} column"));
    Ok(match (kind, v) {
        (Kind::I16, Value::Int(x)) => Box::new(i16::try_from(*x).map_err(|_| range(*x))?),
        (Kind::I32, Value::Int(x)) => Box::new(i32::try_from(*x).map_err(|_| range(*x))?),
        (Kind::I64 | Kind::Decimal { .. }, Value::Int(x)) => Box::new(*x),
        (Kind::Text, Value::Text(s)) => Box::new(text(s)?.to_string()),
        (Kind::Bytes, Value::Bytes(b)) => Box::new(b.clone()),
        (k, v) => {
            return Err(Error::fatal(format!(
                "postgres: a {k:?} column cannot hold {v:?}"
            )))
        }
    })
}

/// One statement running the writes `parts` (each an `UPDATE ... FROM unnest(..)` or
/// `INSERT ... SELECT ... FROM unnest(..)`) one after the other, in order. PostgreSQL
/// runs a statement's data-modifying `WITH`s in no order it promises (unreferenced ones
/// after the main query), so each one's rows wait on a scalar subquery over the one
/// before (an init plan, run before its first row), and the main query reads the last.
///
/// A part marked `true` (an add) must change a row: the condition over it divides by its
/// count, so that an absent row fails the statement (SQLSTATE 22012, [`conn_err`]) instead
/// of the add vanishing.
fn chain_writes(parts: &[(String, bool)]) -> String {
    let check = |i: usize| {
        if parts[i].1 {
            format!("(SELECT 1 / count(*) FROM w{i})")
        } else {
            format!("(SELECT count(*) FROM w{i})")
        }
    };
    if parts.len() == 1 && !parts[0].1 {
        return parts[0].0.clone();
    }
    let mut sql = String::from("WITH ");
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let p = if i == 0 {
            p.0.clone()
        } else {
            let p = &p.0;
            // Both statement forms end in a clause these conditions can extend: the
            // update's WHERE, the insert's FROM (given a WHERE here).
            let after = format!("{} >= 0", check(i - 1));
            if p.starts_with("UPDATE ") {
                format!("{p} AND {after}")
            } else {
                format!("{p} WHERE {after}")
            }
        };
        sql.push_str(&format!("w{i} AS ({p} RETURNING 1)"));
    }
    let last = parts.len() - 1;
    let one = if parts[last].1 { "1 / " } else { "" };
    sql.push_str(&format!(" SELECT {one}count(*) FROM w{last}"));
    sql
}

/// Values of a column of `kind` as one array parameter ([`sqlmap::array_placeholder`]).
fn array_param<'v>(
    kind: Kind,
    vals: impl Iterator<Item = &'v Value>,
) -> Result<Box<dyn ToSql + Sync>> {
    let bad = |v: &Value| Error::fatal(format!("postgres: a {kind:?} column cannot hold {v:?}"));
    let range = |x: i64| Error::fatal(format!("postgres: {x} does not fit a {kind:?} column"));
    Ok(match kind {
        Kind::I16 => Box::new(
            vals.map(|v| match v {
                Value::Int(x) => i16::try_from(*x).map_err(|_| range(*x)),
                v => Err(bad(v)),
            })
            .collect::<Result<Vec<i16>>>()?,
        ),
        Kind::I32 => Box::new(
            vals.map(|v| match v {
                Value::Int(x) => i32::try_from(*x).map_err(|_| range(*x)),
                v => Err(bad(v)),
            })
            .collect::<Result<Vec<i32>>>()?,
        ),
        Kind::I64 | Kind::Decimal { .. } => Box::new(
            vals.map(|v| match v {
                Value::Int(x) => Ok(*x),
                v => Err(bad(v)),
            })
            .collect::<Result<Vec<i64>>>()?,
        ),
        Kind::Text => Box::new(
            vals.map(|v| match v {
                Value::Text(t) => text(t).map(str::to_string),
                v => Err(bad(v)),
            })
            .collect::<Result<Vec<String>>>()?,
        ),
        Kind::Bytes => Box::new(
            vals.map(|v| match v {
                Value::Bytes(b) => Ok(b.clone()),
                v => Err(bad(v)),
            })
            .collect::<Result<Vec<Vec<u8>>>>()?,
        ),
    })
}

fn text(s: &[u8]) -> Result<&str> {
    std::str::from_utf8(s).map_err(|_| {
        Error::fatal(format!(
            "postgres: a string column's value is not UTF-8: {s:?}"
        ))
    })
}

/// Append `v` as a field of COPY's text format.
fn copy_field(out: &mut Vec<u8>, kind: Kind, v: &Value) -> Result<()> {
    match (kind, v) {
        (Kind::Decimal { scale, .. }, Value::Int(x)) if scale > 0 => {
            let p = 10u64.pow(scale as u32);
            let a = x.unsigned_abs();
            let sign = if *x < 0 { "-" } else { "" };
            write!(out, "{sign}{}.{:0w$}", a / p, a % p, w = scale as usize)?;
        }
        (_, Value::Int(x)) => write!(out, "{x}")?,
        (_, Value::Text(s)) => {
            text(s)?;
            for &b in s {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b => out.push(b),
                }
            }
        }
        (_, Value::Bytes(b)) => {
            out.extend_from_slice(b"\\\\x");
            for x in b {
                write!(out, "{x:02x}")?;
            }
        }
    }
    Ok(())
}

/// What a table's kept write is.
#[derive(Clone, PartialEq, Eq, Hash)]
enum WriteKind {
    /// An update setting these columns.
    Update(Vec<usize>),
    /// An add to this column (`add_i64_blind`).
    Add(usize),
    Insert,
}

/// The buffered writes' shape: per table (in order) its kept write and whether it is one
/// row.
type WritesSig = Vec<(usize, WriteKind, bool)>;

/// The kept writes as one statement and its parameters.
type Writes = (Statement, Vec<Box<dyn ToSql + Sync>>);

/// A scan statement's cache key: its table, shape, the bytes of the rows it reads
/// (`None`: whole rows) and its limit when written as a literal.
type ScanKey = (TableId, ScanShape, Option<(usize, usize)>, Option<usize>);

/// Limits up to this are written into a scan's text (a statement per limit: kits use a
/// few constant ones, Delivery's 1): PostgreSQL then plans the statement once.
const LITERAL_LIMIT: usize = 100;

/// A partial read's statements (`get_part`, `update_part`), per table and byte range.
struct PartSql {
    /// The columns selected, in order.
    cols: Vec<usize>,
    get: String,
    get_lock: String,
    /// The columns the update sets (those of `cols` outside the primary key) and its
    /// statement (`None`: the bytes are all in the primary key).
    set: Vec<usize>,
    update: Option<String>,
}

/// An add not yet sent (`add_i64_blind`): the column, the key's values, the delta.
struct PendingAdd {
    col: usize,
    key: Vec<Value>,
    delta: i64,
}

/// An update's write not yet sent: the columns it sets and, per column of those and
/// then of the primary key, the values of the rows it changes.
struct PendingUpdate {
    set: Vec<usize>,
    vals: Vec<Vec<Value>>,
}

/// A batch of lookups' or updates' statements (`get_batch`, `update_batch`).
struct BatchSql {
    /// The columns selected, in order (the key's position in the batch follows them).
    cols: Vec<usize>,
    get: String,
    get_lock: String,
    /// The columns the update sets and its statement (`None`: nothing to set).
    set: Vec<usize>,
    update: Option<String>,
}

/// A batch statement's cache key: its table and byte range (`None`: whole rows).
type BatchKey = (TableId, Option<(usize, usize)>);

/// One worker's connection, prepared statements and load buffers.
pub struct PostgresWorker<'e> {
    e: &'e PostgresEngine,
    conn: std::result::Result<Conn, String>,
    in_txn: bool,
    /// Whether this transaction's BEGIN was sent (with its first statement).
    began: bool,
    /// The BEGIN to send in the round trip of the next statement.
    begin_unsent: Option<Statement>,
    /// The kit asked for read committed before the first statement.
    read_committed: bool,
    stmts: HashMap<String, Statement>,
    scans: HashMap<ScanKey, Arc<(String, Vec<usize>)>>,
    parts: HashMap<(TableId, usize, usize), Arc<PartSql>>,
    /// Per table: rows in COPY text format not yet copied (loading only).
    copy: Vec<Vec<u8>>,
    copy_rows: usize,
    /// Per table: this transaction's inserts not yet sent (each row's column values),
    /// and their count over all tables (at most `PENDING_ROWS`).
    pending: Vec<Vec<Vec<Value>>>,
    pending_rows: usize,
    /// Per table: the write of its last update (or batch of updates) not yet sent. At
    /// most one per table: an update's read, a statement on its table, sends the one
    /// before it.
    pending_upd: Vec<Option<PendingUpdate>>,
    /// Per table: its add not yet sent (at most one: a second sends the first).
    pending_add: Vec<Option<PendingAdd>>,
    /// The statements of adds, per table, column and whether they return the new value.
    adds: HashMap<(TableId, usize, bool), Arc<String>>,
    /// The statement sending the buffered writes, per list of (table, columns an update
    /// sets, or `None` for inserts, whether it is one row).
    writes: HashMap<WritesSig, Statement>,
    /// The next statement is an update's locking read (read committed): it takes the
    /// kept writes ahead of it ([`Self::before`]).
    lock_next: bool,
    /// Batched lookups' and updates' statements, per table and byte range (`None`:
    /// whole rows).
    batch: HashMap<BatchKey, Arc<BatchSql>>,
    row: Vec<u8>,
    pk: Key,
}

impl PostgresWorker<'_> {
    fn client(&mut self) -> Result<&mut Conn> {
        self.conn.as_mut().map_err(|e| Error::fatal(e.clone()))
    }

    fn map(&self, t: TableId) -> Result<&TableMap> {
        self.e
            .maps
            .get(t.0 as usize)
            .ok_or_else(|| Error::fatal(format!("no table {}", t.0)))
    }

    fn prepared(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        // A prepare outside a transaction block would be an implicit transaction of its
        // own (a snapshot, a commit; one more transaction in a traced run): the pending
        // BEGIN goes first, on a statement's first use only.
        self.begin_alone()?;
        let s = self.client()?.prepare(sql).map_err(conn_err)?;
        self.stmts.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    fn count(&self) {
        self.e.statements.fetch_add(1, Ordering::Relaxed);
    }

    /// Fix the transaction's BEGIN, at the level known now, before its first statement,
    /// which carries it in its round trip ([`Self::send`]).
    fn ensure_begun(&mut self) -> Result<()> {
        if !self.in_txn || self.began {
            return Ok(());
        }
        let begin = self.e.own.isolation.begin(self.read_committed);
        self.begin_unsent = Some(self.prepared(begin)?);
        self.began = true;
        Ok(())
    }

    /// Run the prepared statement `st` in one round trip with the transaction's unsent
    /// BEGIN ahead of it and, if `commit`, COMMIT behind it. Statements are prepared
    /// once per connection (transaction control too): PostgreSQL neither parses nor
    /// analyzes them again, as it would a simple query's text.
    /// `writes` (kept writes, [`Self::before`]) go between BEGIN and `st`.
    fn send(
        &mut self,
        st: &Statement,
        params: &[&(dyn ToSql + Sync)],
        commit: bool,
        writes: Option<&Writes>,
    ) -> Result<conn::Sent> {
        let after = if commit {
            Some(self.prepared("COMMIT")?)
        } else {
            None
        };
        let begin = self.begin_unsent.take();
        let mut before: Vec<(&Statement, &[&(dyn ToSql + Sync)])> = Vec::with_capacity(2);
        if let Some(b) = &begin {
            before.push((b, &[]));
        }
        let wrefs: Vec<&(dyn ToSql + Sync)>;
        if let Some((ws, wp)) = writes {
            wrefs = wp.iter().map(|b| b.as_ref()).collect();
            before.push((ws, &wrefs));
        }
        let n = 1 + before.len() as u64 + after.is_some() as u64;
        self.e.statements.fetch_add(n, Ordering::Relaxed);
        self.e.round_trips.fetch_add(1, Ordering::Relaxed);
        self.client()?
            .run(&before, st, params, after.as_ref())
            .map_err(conn_err)
    }

    /// Send the transaction's pending BEGIN, if any, in a round trip of its own (where
    /// the next request cannot carry it).
    fn begin_alone(&mut self) -> Result<()> {
        if let Some(st) = self.begin_unsent.take() {
            self.e.statements.fetch_add(1, Ordering::Relaxed);
            self.e.round_trips.fetch_add(1, Ordering::Relaxed);
            self.client()?.run(&[], &st, &[], None).map_err(conn_err)?;
        }
        Ok(())
    }

    /// Run a transaction control statement (COMMIT, ROLLBACK) alone.
    fn control(&mut self, sql: &'static str) -> Result<()> {
        let st = self.prepared(sql)?;
        self.send(&st, &[], false, None)?;
        Ok(())
    }

    /// A statement other than a COPY load's inserts needs the keys, which that load
    /// builds at its end: the kits' loaders only insert, and without a key every read
    /// would scan its table (the conformance suite, which reads while it loads, turns
    /// the COPY load off).
    fn keys_built(&self) -> Result<()> {
        if self.e.loading.load(Ordering::Acquire)
            && !self
                .e
                .deferred_keys
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
        {
            return Err(Error::fatal(
                "postgres: a read or update during a COPY load (its keys are built when it ends)",
            ));
        }
        Ok(())
    }

    /// Copy the buffered load rows (before any other statement, so the transaction
    /// reads its own inserts, and at commit).
    fn flush(&mut self) -> Result<()> {
        if self.copy_rows == 0 {
            return Ok(());
        }
        self.ensure_begun()?;
        self.copy_rows = 0;
        let e = self.e;
        let bufs = std::mem::take(&mut self.copy);
        self.copy = vec![Vec::new(); bufs.len()];
        for (t, buf) in bufs.into_iter().enumerate() {
            if buf.is_empty() {
                continue;
            }
            // COPY cannot share a round trip.
            self.begin_alone()?;
            self.count();
            self.e.round_trips.fetch_add(1, Ordering::Relaxed);
            self.client()?
                .copy_in(e.sql[t].copy.as_str(), buf)
                .map_err(conn_err)?;
        }
        Ok(())
    }

    /// Before a statement on table `t`: BEGIN, the load's copies, and this transaction's
    /// buffered writes (all tables' at once: one statement either way), returned to go
    /// ahead of the statement in its round trip, if `t` has some (so the statement sees
    /// the transaction's own writes) or if the statement is a locking read (an
    /// update's read at read committed: the writes held so far then do not wait for
    /// commit while this transaction holds that row's lock, which on TPC-B's one
    /// branch row made every transaction wait for the others' whole write statement).
    fn before(&mut self, t: TableId) -> Result<Option<Writes>> {
        self.keys_built()?;
        self.ensure_begun()?;
        self.flush()?;
        let locks = std::mem::take(&mut self.lock_next);
        let t = t.0 as usize;
        if locks
            || self.pending.get(t).is_some_and(|p| !p.is_empty())
            || self.pending_upd.get(t).is_some_and(Option::is_some)
            || self.pending_add.get(t).is_some_and(Option::is_some)
        {
            return self.take_writes();
        }
        Ok(None)
    }

    /// Hold the write of an update of `t` until the next statement on `t` or commit.
    fn defer_update(&mut self, t: TableId, set: &[usize], vals: Vec<Vec<Value>>) {
        let slot = &mut self.pending_upd[t.0 as usize];
        assert!(
            slot.is_none(),
            "an update's read sends the write before it (table {})",
            t.0
        );
        *slot = Some(PendingUpdate {
            set: set.to_vec(),
            vals,
        });
    }

    /// Send the buffered writes of every table as one statement (a chain of
    /// data-modifying `WITH`s: per table one update of many rows, one insert of many).
    /// No row is written twice: an update's read sent the writes of its table before.
    ///
    /// With `commit`, COMMIT goes in the same round trip; returns whether it went (not
    /// when there was nothing to write). The transaction is then over on the server
    /// whatever the answer: a COMMIT after a failed statement rolls back.
    fn flush_writes(&mut self, commit: bool) -> Result<bool> {
        let Some((st, params)) = self.take_writes()? else {
            return Ok(false);
        };
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        let sent = self.send(&st, &refs, commit, None);
        if commit {
            self.began = false;
        }
        sent?;
        Ok(commit)
    }

    /// The statement of the buffered writes and its parameters, the buffers emptied
    /// (`None`: nothing kept).
    fn take_writes(&mut self) -> Result<Option<Writes>> {
        if self.pending_rows == 0
            && self.pending_upd.iter().all(Option::is_none)
            && self.pending_add.iter().all(Option::is_none)
        {
            return Ok(None);
        }
        self.ensure_begun()?;
        let e = self.e;
        // Updates before inserts: an insert may depend on a value an update's read saw
        // (New-Order's order id, from the district), so a concurrent writer of that row
        // must fail the update (a conflict), not the insert (a duplicate key).
        // A table's one row is written with scalar parameters: PostgreSQL plans that
        // once per connection; the arrays of many rows it plans again each time (its
        // generic plan assumes 10 rows, so it keeps to custom plans).
        let mut sig: WritesSig = Vec::new();
        for (t, u) in self.pending_upd.iter().enumerate() {
            if let Some(u) = u {
                sig.push((t, WriteKind::Update(u.set.clone()), u.vals[0].len() == 1));
            }
        }
        // Adds after updates (a table with both had its update sent by the add: a
        // statement changes a row once), before inserts (TPC-B's branch, then History,
        // as pgbench).
        for (t, a) in self.pending_add.iter().enumerate() {
            if let Some(a) = a {
                sig.push((t, WriteKind::Add(a.col), true));
            }
        }
        for (t, rows) in self.pending.iter().enumerate() {
            if !rows.is_empty() {
                sig.push((t, WriteKind::Insert, rows.len() == 1));
            }
        }
        // The statement itself is kept per signature: its text is long (New-Order's is
        // 3 kB), and copying and hashing it at every flush was client CPU for nothing.
        let st = match self.writes.get(&sig) {
            Some(s) => s.clone(),
            None => {
                let mut first = 1;
                let mut parts = Vec::new();
                for (t, kind, one) in &sig {
                    let m = &e.maps[*t];
                    match kind {
                        WriteKind::Update(set) => {
                            parts.push((
                                if *one {
                                    m.update_some_sql_from(D, set, first)
                                } else {
                                    m.update_many_sql(set, first)
                                }
                                .expect("columns to set"),
                                false,
                            ));
                            first += set.len() + m.pk_cols().len();
                        }
                        WriteKind::Add(col) => {
                            // Must change its row: an absent one fails the statement.
                            parts.push((m.add_sql(D, *col, first, false), true));
                            first += 1 + m.pk_cols().len();
                        }
                        WriteKind::Insert => {
                            parts.push((
                                if *one {
                                    m.insert_one_sql(first)
                                } else {
                                    m.insert_many_sql(first)
                                },
                                false,
                            ));
                            first += m.cols.len();
                        }
                    }
                }
                let st = self.prepared(&chain_writes(&parts))?;
                self.writes.insert(sig.clone(), st.clone());
                st
            }
        };
        let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
        for (t, kind, one) in &sig {
            let map = &e.maps[*t];
            match kind {
                WriteKind::Update(_) => {
                    let u = self.pending_upd[*t].take().expect("in the signature");
                    for (&c, vals) in u.set.iter().chain(map.pk_cols()).zip(&u.vals) {
                        params.push(if *one {
                            param(map.cols[c].kind, &vals[0])?
                        } else {
                            array_param(map.cols[c].kind, vals.iter())?
                        });
                    }
                }
                WriteKind::Add(_) => {
                    let a = self.pending_add[*t].take().expect("in the signature");
                    params.push(param(map.cols[a.col].kind, &Value::Int(a.delta))?);
                    params.extend(Self::params(map, map.pk_cols().iter().copied(), &a.key)?);
                }
                WriteKind::Insert => {
                    let rows = std::mem::take(&mut self.pending[*t]);
                    for (c, col) in map.cols.iter().enumerate() {
                        params.push(if *one {
                            param(col.kind, &rows[0][c])?
                        } else {
                            array_param(col.kind, rows.iter().map(|r| &r[c]))?
                        });
                    }
                }
            }
        }
        self.pending_rows = 0;
        Ok(Some((st, params)))
    }

    /// The statement of an add to column `col` of `table`.
    fn add_sql(&mut self, table: TableId, col: usize, returning: bool) -> Arc<String> {
        let k = (table, col, returning);
        if let Some(s) = self.adds.get(&k) {
            return s.clone();
        }
        let s = Arc::new(self.e.maps[table.0 as usize].add_sql(D, col, 1, returning));
        self.adds.insert(k, s.clone());
        s
    }

    /// Whether this transaction runs at read committed (`--isolation` or the kit's
    /// hint): an update's read must then lock the row.
    fn rc(&self) -> bool {
        self.read_committed || self.e.own.isolation == Isolation::ReadCommitted
    }

    /// The statements of batched lookups and updates of `table` (of bytes `part`).
    fn batch_sql(
        &mut self,
        table: TableId,
        part: Option<&std::ops::Range<usize>>,
    ) -> Result<Arc<BatchSql>> {
        let k = (table, part.map(|p| (p.start, p.end)));
        if let Some(b) = self.batch.get(&k) {
            return Ok(b.clone());
        }
        let map = self.map(table)?;
        let cols = match part {
            Some(p) => map.part_cols(table, p)?,
            None => map.all_cols().to_vec(),
        };
        let set = map.set_cols_of(&cols);
        let b = Arc::new(BatchSql {
            get: map.get_many_sql(&cols, false),
            get_lock: map.get_many_sql(&cols, true),
            update: map.update_many_sql(&set, 1),
            set,
            cols,
        });
        self.batch.insert(k, b.clone());
        Ok(b)
    }

    /// The rows (columns `cols`, the others' bytes zero) of `keys`, by position: a
    /// batched lookup's select.
    fn select_many(
        &mut self,
        table: TableId,
        sql: &str,
        keys: &[Key],
        cols: &[usize],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let e = self.e;
        let map = &e.maps[table.0 as usize];
        let mut per_col: Vec<Vec<Value>> =
            vec![Vec::with_capacity(keys.len()); map.pk_cols().len()];
        for k in keys {
            for (i, v) in map.key_params(k)?.into_iter().enumerate() {
                per_col[i].push(v);
            }
        }
        let params = map
            .pk_cols()
            .iter()
            .zip(&per_col)
            .map(|(&c, vals)| array_param(map.cols[c].kind, vals.iter()))
            .collect::<Result<Vec<_>>>()?;
        let mut rows = vec![None; keys.len()];
        let mut bad = None;
        self.select(table, sql, params, cols, false, |_, row, _, r| {
            let at = r
                .try_get::<i64>(cols.len())
                .ok()
                .and_then(|o| usize::try_from(o - 1).ok().filter(|&o| o < keys.len()));
            match at {
                Some(o) => rows[o] = Some(row.to_vec()),
                None => bad = Some(()),
            }
            bad.is_none()
        })?;
        if bad.is_some() {
            return Err(Error::fatal(
                "postgres: a batched lookup returned no valid position",
            ));
        }
        Ok(rows)
    }

    fn params<'v>(
        map: &TableMap,
        cols: impl Iterator<Item = usize>,
        vals: impl IntoIterator<Item = &'v Value>,
    ) -> Result<Vec<Box<dyn ToSql + Sync>>> {
        cols.zip(vals)
            .map(|(c, v)| param(map.cols[c].kind, v))
            .collect()
    }

    /// Run a select of SQL columns `cols` (in that order), decode each row (the bytes of
    /// other columns zero; the primary key too when `with_pk`, then `cols` hold its
    /// columns) and pass it to `f` (false: stop). Returns the rows passed.
    fn select(
        &mut self,
        t: TableId,
        sql: &str,
        params: Vec<Box<dyn ToSql + Sync>>,
        cols: &[usize],
        with_pk: bool,
        mut f: impl FnMut(&TableMap, &[u8], &Key, &conn::RowRef<'_>) -> bool,
    ) -> Result<usize> {
        let writes = self.before(t)?;
        let st = self.prepared(sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        let sent = self.send(&st, &refs, false, writes.as_ref())?;
        let map = &self.e.maps[t.0 as usize];
        let mut n = 0;
        let mut vals = Vec::with_capacity(cols.len());
        for r in sent.rows() {
            vals.clear();
            for (i, &c) in cols.iter().enumerate() {
                let c = &map.cols[c];
                let get =
                    |e: conn::Error| Error::fatal(format!("postgres: column {}: {e}", c.name));
                vals.push(match c.kind {
                    Kind::I16 => Value::Int(r.try_get::<i16>(i).map_err(get)? as i64),
                    Kind::I32 => Value::Int(r.try_get::<i32>(i).map_err(get)? as i64),
                    Kind::I64 | Kind::Decimal { .. } => {
                        Value::Int(r.try_get::<i64>(i).map_err(get)?)
                    }
                    Kind::Text => {
                        Value::Text(r.try_get::<&str>(i).map_err(get)?.as_bytes().to_vec())
                    }
                    Kind::Bytes => Value::Bytes(r.try_get::<&[u8]>(i).map_err(get)?.to_vec()),
                });
            }
            let pk = if with_pk { Some(&mut self.pk) } else { None };
            map.decode_cols(cols, &vals, &mut self.row, pk)?;
            n += 1;
            if !f(map, &self.row, &self.pk, &r) {
                break;
            }
        }
        Ok(n)
    }

    fn execute(
        &mut self,
        t: TableId,
        sql: &str,
        params: Vec<Box<dyn ToSql + Sync>>,
    ) -> Result<u64> {
        let writes = self.before(t)?;
        let st = self.prepared(sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        Ok(self.send(&st, &refs, false, writes.as_ref())?.count)
    }

    fn key_params(&self, t: TableId, key: &[u8]) -> Result<Vec<Box<dyn ToSql + Sync>>> {
        let map = self.map(t)?;
        let vals = map.key_params(key)?;
        Self::params(map, map.pk_cols().iter().copied(), &vals)
    }

    /// The statements of a partial read of bytes `part` of `table`'s rows.
    fn part_sql(&mut self, table: TableId, part: &std::ops::Range<usize>) -> Result<Arc<PartSql>> {
        let k = (table, part.start, part.end);
        if let Some(p) = self.parts.get(&k) {
            return Ok(p.clone());
        }
        let map = self.map(table)?;
        let cols = map.part_cols(table, part)?;
        let set = map.set_cols_of(&cols);
        let p = Arc::new(PartSql {
            get: map.get_cols_sql(D, &cols, false),
            get_lock: map.get_cols_sql(D, &cols, true),
            update: map.update_some_sql(D, &set),
            set,
            cols,
        });
        self.parts.insert(k, p.clone());
        Ok(p)
    }

    /// Read-modify-write of the row under `key` through the columns `cols` (all of them,
    /// or a partial update's), `f` seeing the row with the other columns' bytes zero.
    #[allow(clippy::too_many_arguments)]
    fn update_cols(
        &mut self,
        table: TableId,
        key: &[u8],
        cols: &[usize],
        get: &str,
        get_lock: &str,
        set: &[usize],
        update: Option<&str>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool> {
        let e = self.e;
        let params = self.key_params(table, key)?;
        // At read committed the read must lock the row, or a concurrent update between
        // it and ours would be lost; the other levels detect that conflict themselves.
        let get = if self.rc() { get_lock } else { get };
        self.lock_next = self.rc();
        let mut old = Vec::new();
        let found = self.select(table, get, params, cols, false, |_, row, _, _| {
            old.extend_from_slice(row);
            false
        })? > 0;
        if !found {
            return Ok(false);
        }
        let mut row = old.clone();
        f(&mut row);
        let map = &e.maps[table.0 as usize];
        map.check_update(&old, &row)?;
        if let Some(sql) = update {
            let vals = map.update_some_params(set, key, &row)?;
            if e.own.defer_updates {
                self.defer_update(table, set, vals.into_iter().map(|v| vec![v]).collect());
                return Ok(true);
            }
            let params = Self::params(map, set.iter().chain(map.pk_cols()).copied(), &vals)?;
            self.execute(table, sql, params)?;
        }
        Ok(true)
    }

    /// A scan of `index`, of whole rows or (`part`) of the columns holding those bytes.
    #[allow(clippy::too_many_arguments)]
    fn scan_cols(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        part: Option<std::ops::Range<usize>>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let e = self.e;
        let map = self.map(index.table)?;
        let Some(plan) = map.plan_scan(D, index.index, lo, hi, dir == Dir::Forward, limit)? else {
            return Ok(0);
        };
        let map = &e.maps[index.table.0 as usize];
        let literal = (plan.limited && limit <= LITERAL_LIMIT).then_some(limit);
        let k = (
            index.table,
            plan.shape,
            part.as_ref().map(|p| (p.start, p.end)),
            literal,
        );
        let stmt = match self.scans.get(&k) {
            Some(s) => s.clone(),
            None => {
                let cols = map.scan_cols(index.table, index.index, part.as_ref())?;
                let sql = map.scan_sql_limit(D, index.index, &plan, &cols, dir, literal);
                let s = Arc::new((sql, cols));
                self.scans.insert(k, s.clone());
                s
            }
        };
        let icols = map.index_cols(index.index);
        let pv = plan.params();
        let mut params = Self::params(
            map,
            pv.iter().map(|(i, _)| icols[*i]),
            pv.iter().map(|(_, v)| *v),
        )?;
        if plan.limited && literal.is_none() {
            params.push(Box::new(limit as i64));
        }
        let (sql, cols) = &*stmt;
        let mut key = Key::new();
        self.select(index.table, sql, params, cols, true, |map, row, pk, _| {
            map.index_key(index.index, row, pk, &mut key);
            match &part {
                Some(p) => f(&key, &row[p.clone()]),
                None => f(&key, row),
            }
        })
    }
}

impl api::Worker for PostgresWorker<'_> {
    fn schema(&self) -> &Schema {
        &self.e.schema
    }

    fn begin(&mut self) -> Result<()> {
        if self.in_txn {
            return Err(Error::fatal("postgres: begin inside a transaction"));
        }
        self.client()?;
        self.in_txn = true;
        self.began = false;
        self.read_committed = false;
        Ok(())
    }

    fn read_committed(&mut self) {
        // Once a statement ran the level is fixed: the transaction keeps the stronger
        // one, which the hint allows.
        if self.in_txn && !self.began {
            self.read_committed = true;
        }
    }

    fn sql_dialect(&self) -> Option<api::SqlDialect> {
        Some(api::SqlDialect::Postgres)
    }

    /// The query prepared once per connection and text (a kit's few queries), sent with
    /// the transaction's pending BEGIN; its columns must be integers or text.
    fn query(&mut self, sql: &str, f: &mut dyn FnMut(&[Value])) -> Result<()> {
        self.keys_built()?;
        // The transaction's own writes so far go first, so the query sees them.
        self.flush()?;
        let writes = self.take_writes()?;
        self.ensure_begun()?;
        let st = self.prepared(sql)?;
        let sent = self.send(&st, &[], false, writes.as_ref())?;
        let mut vals = Vec::with_capacity(sent.width());
        for r in sent.rows() {
            vals.clear();
            for i in 0..sent.width() {
                let get = |e: conn::Error| Error::fatal(format!("postgres: query column {i}: {e}"));
                vals.push(if let Ok(v) = r.try_get::<i64>(i) {
                    Value::Int(v)
                } else if let Ok(v) = r.try_get::<i32>(i) {
                    Value::Int(v.into())
                } else if let Ok(v) = r.try_get::<i16>(i) {
                    Value::Int(v.into())
                } else {
                    Value::Text(r.try_get::<&str>(i).map_err(get)?.as_bytes().to_vec())
                });
            }
            f(&vals);
        }
        Ok(())
    }

    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let params = self.key_params(table, key)?;
        let e = self.e;
        let map = &e.maps[table.0 as usize];
        let n = self.select(
            table,
            &e.sql[table.0 as usize].get,
            params,
            map.all_cols(),
            false,
            |_, row, _, _| {
                f(row);
                false
            },
        )?;
        Ok(n > 0)
    }

    fn get_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        let ps = self.part_sql(table, &part)?;
        let params = self.key_params(table, key)?;
        let n = self.select(table, &ps.get, params, &ps.cols, false, |_, row, _, _| {
            f(&row[part.clone()]);
            false
        })?;
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
        self.scan_cols(index, lo, hi, dir, limit, None, f)
    }

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
        self.map(index.table)?.part_cols(index.table, &part)?;
        self.scan_cols(index, lo, hi, dir, limit, Some(part), f)
    }

    fn batches(&self) -> bool {
        true
    }

    fn get_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: &dyn Fn(usize) -> Key,
        part: Option<std::ops::Range<usize>>,
        f: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<usize> {
        if n == 0 {
            return Ok(0);
        }
        let b = self.batch_sql(table, part.as_ref())?;
        let keys: Vec<Key> = (0..n).map(key).collect();
        let rows = self.select_many(table, &b.get, &keys, &b.cols)?;
        let mut found = 0;
        for (i, r) in rows.iter().enumerate() {
            if let Some(r) = r {
                match &part {
                    Some(p) => f(i, &r[p.clone()]),
                    None => f(i, r),
                }
                found += 1;
            }
        }
        Ok(found)
    }

    /// One select of the distinct keys' rows (locking them at read committed), the
    /// changes applied in the order of the batch, one update of the rows found.
    fn update_batch(
        &mut self,
        table: TableId,
        n: usize,
        key: &dyn Fn(usize) -> Key,
        part: Option<std::ops::Range<usize>>,
        f: &mut dyn FnMut(usize, &mut [u8]),
    ) -> Result<usize> {
        if n == 0 {
            return Ok(0);
        }
        let e = self.e;
        let b = self.batch_sql(table, part.as_ref())?;
        // Each key once: PostgreSQL updates a row at most once per statement.
        let mut distinct: Vec<Key> = Vec::with_capacity(n);
        let mut slot = Vec::with_capacity(n);
        let mut seen: HashMap<Key, usize> = HashMap::with_capacity(n);
        for i in 0..n {
            let k = key(i);
            let at = *seen.entry(k).or_insert_with(|| {
                distinct.push(k);
                distinct.len() - 1
            });
            slot.push(at);
        }
        let get = if self.rc() { &b.get_lock } else { &b.get };
        self.lock_next = self.rc();
        let old = self.select_many(table, get, &distinct, &b.cols)?;
        let mut rows = old.clone();
        let mut found = 0;
        for (i, &at) in slot.iter().enumerate() {
            if let Some(r) = &mut rows[at] {
                match &part {
                    Some(p) => f(i, &mut r[p.clone()]),
                    None => f(i, r),
                }
                found += 1;
            }
        }
        let map = &e.maps[table.0 as usize];
        let Some(sql) = &b.update else {
            return Ok(found);
        };
        let mut per_col: Vec<Vec<Value>> = vec![Vec::new(); b.set.len() + map.pk_cols().len()];
        for ((k, old), new) in distinct.iter().zip(&old).zip(&rows) {
            let (Some(old), Some(new)) = (old, new) else {
                continue;
            };
            map.check_update(old, new)?;
            for (i, v) in map
                .update_some_params(&b.set, k, new)?
                .into_iter()
                .enumerate()
            {
                per_col[i].push(v);
            }
        }
        if per_col[0].is_empty() {
            return Ok(found);
        }
        if e.own.defer_updates {
            self.defer_update(table, &b.set, per_col);
            return Ok(found);
        }
        let params = b
            .set
            .iter()
            .chain(map.pk_cols())
            .zip(&per_col)
            .map(|(&c, vals)| array_param(map.cols[c].kind, vals.iter()))
            .collect::<Result<Vec<_>>>()?;
        self.execute(table, sql, params)?;
        Ok(found)
    }

    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        let e = self.e;
        let map = e
            .maps
            .get(table.0 as usize)
            .ok_or_else(|| Error::fatal(format!("no table {}", table.0)))?;
        let vals = map.row_params(key, row)?;
        if e.loading.load(Ordering::Acquire) {
            let buf = &mut self.copy[table.0 as usize];
            for (i, (c, v)) in map.cols.iter().zip(&vals).enumerate() {
                if i > 0 {
                    buf.push(b'\t');
                }
                copy_field(buf, c.kind, v)?;
            }
            buf.push(b'\n');
            self.copy_rows += 1;
            if self.copy_rows >= COPY_BATCH_ROWS {
                self.flush()?;
            }
            return Ok(());
        }
        if e.own.batch_inserts {
            self.pending[table.0 as usize].push(vals);
            self.pending_rows += 1;
            if self.pending_rows >= PENDING_ROWS {
                self.flush_writes(false)?;
            }
            return Ok(());
        }
        let params = Self::params(map, 0..map.cols.len(), &vals)?;
        self.execute(table, &e.sql[table.0 as usize].insert, params)?;
        Ok(())
    }

    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        let e = self.e;
        self.map(table)?;
        let (map, sql) = (&e.maps[table.0 as usize], &e.sql[table.0 as usize]);
        self.update_cols(
            table,
            key,
            map.all_cols(),
            &sql.get,
            &sql.get_lock,
            map.set_cols(),
            sql.update.as_deref(),
            f,
        )
    }

    fn update_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool> {
        let ps = self.part_sql(table, &part)?;
        self.update_cols(
            table,
            key,
            &ps.cols,
            &ps.get,
            &ps.get_lock,
            &ps.set,
            ps.update.as_deref(),
            &mut |r: &mut [u8]| f(&mut r[part.clone()]),
        )
    }

    fn add_i64(
        &mut self,
        table: TableId,
        key: &[u8],
        at: usize,
        delta: i64,
    ) -> Result<Option<i64>> {
        let e = self.e;
        self.map(table)?;
        let map = &e.maps[table.0 as usize];
        let Some(col) = map.add_col(at) else {
            return api::engine::add_i64_by_update(self, table, key, at, delta);
        };
        let mut params = vec![param(map.cols[col].kind, &Value::Int(delta))?];
        params.extend(self.key_params(table, key)?);
        let sql = self.add_sql(table, col, true);
        // The update locks the row to commit: at read committed the kept writes go
        // ahead of it, as ahead of an update's locking read (`Self::before`).
        self.lock_next = self.rc();
        let writes = self.before(table)?;
        let st = self.prepared(&sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        let sent = self.send(&st, &refs, false, writes.as_ref())?;
        let new = sent.first().map(|r| r.try_get::<i64>(0)).transpose();
        new.map_err(conn_err)
    }

    fn add_i64_blind(&mut self, table: TableId, key: &[u8], at: usize, delta: i64) -> Result<()> {
        let e = self.e;
        self.map(table)?;
        let map = &e.maps[table.0 as usize];
        let Some(col) = map.add_col(at) else {
            return api::engine::add_i64_blind_by_add(self, table, key, at, delta);
        };
        let t = table.0 as usize;
        let key = map.key_params(key)?;
        if !e.own.defer_updates {
            let mut params = vec![param(map.cols[col].kind, &Value::Int(delta))?];
            params.extend(Self::params(map, map.pk_cols().iter().copied(), &key)?);
            let sql = self.add_sql(table, col, false);
            return match self.execute(table, &sql, params)? {
                1 => Ok(()),
                _ => Err(api::engine::absent_row(table)),
            };
        }
        // A statement changes a row once: a kept update or add of this table goes first.
        if self.pending_add[t].is_some() || self.pending_upd[t].is_some() {
            self.flush_writes(false)?;
        }
        self.pending_add[t] = Some(PendingAdd { col, key, delta });
        Ok(())
    }

    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        let e = self.e;
        let params = self.key_params(table, key)?;
        Ok(self.execute(table, &e.sql[table.0 as usize].delete, params)? > 0)
    }

    fn commit(&mut self) -> Result<()> {
        self.flush()?;
        // The held writes and COMMIT in one round trip (or COMMIT alone).
        if !self.flush_writes(true)? && self.began {
            self.began = false;
            self.control("COMMIT")?;
        }
        self.in_txn = false;
        self.began = false;
        Ok(())
    }

    fn abort(&mut self) {
        self.lock_next = false;
        for b in &mut self.copy {
            b.clear();
        }
        self.copy_rows = 0;
        for p in &mut self.pending {
            p.clear();
        }
        self.pending_rows = 0;
        for u in &mut self.pending_upd {
            *u = None;
        }
        for a in &mut self.pending_add {
            *a = None;
        }
        if self.in_txn {
            self.in_txn = false;
            // A BEGIN never sent opened nothing.
            if self.began && self.begin_unsent.take().is_none() {
                self.began = false;
                // A failed rollback (a broken connection) leaves nothing to undo.
                let _ = self.control("ROLLBACK");
            }
        }
    }
}
