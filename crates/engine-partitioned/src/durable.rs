//! `durable`: the database directory of a logging partitioned engine: which files it
//! holds (`partitioned.snap`, the newest snapshot, which also marks the load complete;
//! `partitioned.log`, the command log; `partitioned.mark`, its durable mark), creating,
//! recovering or removing them as the options say, writing the snapshot at the end of
//! the load, and starting the checkpointer (`checkpoint`). Recovery reads the snapshot
//! into the partitions here; the commands after its log position go to the caller,
//! which re-executes them through the workload (the engine does not know workloads).
//!
//! Must never: overwrite or remove a file that is not this engine's, or open a
//! snapshot without its log (their commands would be lost).

use crate::checkpoint::{self, Checkpointer};
use crate::log::{self, FileHeader, LogPosition, LogTail, Logger};
use crate::snapshot;
use api::{Command, EngineOptions, Error, LogMode, Result, Schema, Worker};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use storage::{Open, Storage};

/// Rows inserted per transaction while reading a snapshot back.
const ROWS_PER_LOAD_TXN: usize = 10_000;

/// The files of a database directory.
pub struct Dir {
    pub dir: PathBuf,
    pub snapshot: PathBuf,
    /// A snapshot being written (a checkpoint abandoned or cut by a crash leaves it).
    pub snapshot_tmp: PathBuf,
    pub log: PathBuf,
    pub mark: PathBuf,
}

impl Dir {
    pub fn new(dir: &Path) -> Dir {
        Dir {
            dir: dir.to_path_buf(),
            snapshot: dir.join(snapshot::SNAPSHOT_FILE),
            snapshot_tmp: dir.join(snapshot::SNAPSHOT_TMP),
            log: dir.join(log::LOG_FILE),
            mark: dir.join(log::MARK_FILE),
        }
    }

    /// The log's durable mark, as the flusher writes it.
    pub fn mark_file(&self, st: Arc<dyn Storage>, database_id: u64) -> storage::logfile::MarkFile {
        storage::logfile::MarkFile {
            st,
            dir: self.dir.clone(),
            name: log::MARK_FILE,
            format: &log::MARK,
            database_id,
            interval: storage::logfile::MARK_INTERVAL,
        }
    }

    /// The durable mark, checked against the log's database id: how long the log is
    /// known to be.
    fn read_mark(&self, st: &dyn Storage, header: &FileHeader) -> Result<u64> {
        if !Self::exists(st, &self.mark)? {
            return Err(Error::fatal(format!(
                "{} is missing: without the log's durable mark a cut log cannot be told from a whole one, refused (a database of an older build: rerun with --reload)",
                self.mark.display()
            )));
        }
        let b = st
            .read(&self.mark)
            .map_err(|e| Error::fatal(format!("{}: {e}", self.mark.display())))?;
        let m = log::MARK.decode(&b, &self.mark).map_err(Error::Fatal)?;
        if m.database_id != header.database_id {
            return Err(Error::fatal(format!(
                "{} belongs to another database (database id {:016x}, the log's is {:016x}): refused",
                self.mark.display(),
                m.database_id,
                header.database_id
            )));
        }
        Ok(m.log_bytes)
    }

    fn exists(st: &dyn Storage, p: &Path) -> Result<bool> {
        st.exists(p)
            .map_err(|e| Error::fatal(format!("{}: {e}", p.display())))
    }

    fn head(st: &dyn Storage, p: &Path) -> Result<Vec<u8>> {
        let f = st
            .open(p, Open::Read)
            .map_err(|e| Error::fatal(format!("{}: {e}", p.display())))?;
        let mut b = vec![0u8; 16];
        let n = f
            .read_full_at(&mut b, 0)
            .map_err(|e| Error::fatal(format!("{}: {e}", p.display())))?;
        b.truncate(n);
        Ok(b)
    }

    /// Remove the database: the snapshot first (so a crash in between leaves a log
    /// without a snapshot, a load not finished, never a snapshot without its log), then
    /// a snapshot being written, the mark, then the log. Files that are not this
    /// engine's are refused, and nothing is removed then.
    pub fn remove(&self, st: &dyn Storage) -> Result<()> {
        let mut gone = Vec::new();
        let mark = |h: &[u8]| log::MARK.looks_like(h);
        let snap = |h: &[u8]| snapshot::HEADER.looks_like(h);
        // A snapshot cut short while written may be any prefix of one, even empty.
        let tmp = |h: &[u8]| {
            snapshot::HEADER.looks_like(h)
                || (h.len() < 8 && snapshot::SNAPSHOT_MAGIC.starts_with(h))
        };
        let lg = |h: &[u8]| log::HEADER.looks_like(h);
        for (p, ours) in [
            (&self.snapshot, &snap as &dyn Fn(&[u8]) -> bool),
            (&self.snapshot_tmp, &tmp),
            (&self.mark, &mark),
            (&self.log, &lg),
        ] {
            if Self::exists(st, p)? {
                if !ours(&Self::head(st, p)?) {
                    return Err(Error::fatal(format!(
                        "{} is not a partitioned-engine file: refused, nothing removed",
                        p.display()
                    )));
                }
                gone.push(p);
            }
        }
        for p in gone {
            st.remove(p)
                .map_err(|e| Error::fatal(format!("cannot remove {}: {e}", p.display())))?;
            st.sync_dir(&self.dir)
                .map_err(|e| Error::fatal(format!("{}: {e}", self.dir.display())))?;
        }
        Ok(())
    }
}

/// A logging engine's files and its flusher.
pub struct Durability {
    pub files: Dir,
    st: Arc<dyn Storage>,
    pub header: FileHeader,
    pub mode: LogMode,
    /// Opened by `check` (or with `--log off`): recovery in memory, no command logged.
    pub read_only: bool,
    /// Started at `open` for a recovered database, at `load_done` for a new one.
    pub logger: OnceLock<Arc<Logger>>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    /// The newest durable snapshot's position and length (where checkpoints start).
    base: Mutex<(LogPosition, u64)>,
    /// What recovery costs here (measured by this open's recovery where it could):
    /// the checkpointer's default rule estimates with it.
    pub costs: Mutex<checkpoint::Costs>,
    /// This open's recovery, timed (statistics).
    pub recovery: Mutex<Option<Recovery>>,
    /// Started once commits are logged (`start_checkpoints`).
    pub checkpointer: OnceLock<Arc<Checkpointer>>,
    checkpoint_threads: Mutex<Vec<JoinHandle<()>>>,
    /// A directory made for a log nobody asked to keep (removed on drop).
    _temp: Option<storage::temp::TempDir>,
}

/// How long this open's recovery took (`--json` engine stats, `log.recovery`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Recovery {
    pub snapshot_bytes: u64,
    pub snapshot_ms: u64,
    pub commands: u64,
    /// From handing the commands to the caller to `replay_done`.
    pub replay_ms: u64,
}

/// What `open` found.
pub struct Opened {
    pub durability: Option<Durability>,
    /// Recovered: the commands logged after the snapshot, in log order.
    pub commands: Option<Vec<Command>>,
}

/// Find, create, recover or remove the database as the options say; a recovered
/// snapshot's rows go in through `worker` (the engine's own worker: this module is
/// below the engine and never names it).
/// Why `--db` and `--log-dir` name one directory.
pub const ONE_DIR: &str =
    "the partitioned engine keeps its snapshot and command log in one directory";

pub fn open<W: Worker>(
    schema: &Schema,
    opts: &EngineOptions,
    worker: impl FnOnce() -> W,
) -> Result<Opened> {
    let st = &*opts.storage;
    let logging = opts.log != LogMode::Off;
    let fp = schema.fingerprint();
    let none = Opened {
        durability: None,
        commands: None,
    };
    let dir = api::place::one_dir(opts.db_dir.as_deref(), opts.log_dir.as_deref(), ONE_DIR)?;
    let new = |files: Dir, temp| Durability {
        files,
        st: opts.storage.clone(),
        header: FileHeader {
            database_id: storage::random_id(),
            schema: fp,
        },
        mode: opts.log,
        read_only: false,
        logger: OnceLock::new(),
        flusher: Mutex::new(None),
        base: Mutex::new((LogPosition::START, 0)),
        costs: Mutex::new(checkpoint::Costs::DEFAULT),
        recovery: Mutex::new(None),
        checkpointer: OnceLock::new(),
        checkpoint_threads: Mutex::new(Vec::new()),
        _temp: temp,
    };
    let Some(dir) = dir else {
        if !opts.create {
            return Err(Error::fatal(
                "the partitioned engine keeps a database only in --db: give the --db of a run with --log sync or --log async",
            ));
        }
        if !logging {
            return Ok(none);
        }
        let tmp = storage::temp::create("partitioned")
            .map_err(|e| Error::fatal(format!("cannot create a log directory: {e}")))?;
        let files = Dir::new(tmp.path());
        return Ok(Opened {
            durability: Some(new(files, Some(tmp))),
            commands: None,
        });
    };
    let files = Dir::new(&dir);
    if opts.reload {
        files.remove(st)?;
    }
    let has_snapshot = Dir::exists(st, &files.snapshot)?;
    let has_log = Dir::exists(st, &files.log)?;
    if has_snapshot {
        if !logging && opts.create {
            return Err(Error::fatal(format!(
                "{} holds a partitioned-engine database: with --log off this run's changes would not be logged; give --log sync or --log async (or --reload to start over)",
                dir.display()
            )));
        }
        if !has_log {
            return Err(Error::fatal(format!(
                "{} is there but {} is missing: the command log was removed or lost, refused (remove the directory or rerun with --reload)",
                files.snapshot.display(),
                files.log.display()
            )));
        }
        return recover(schema, opts, worker, files, fp);
    }
    if !opts.create {
        return Err(Error::fatal(format!(
            "no partitioned-engine database in {}: nothing to check",
            dir.display()
        )));
    }
    if !logging {
        return Err(Error::fatal(format!(
            "{}: the partitioned engine keeps a database only with its command log: give --log sync or --log async (with --log off nothing is kept)",
            dir.display()
        )));
    }
    if has_log {
        // A log without a snapshot: a load that did not finish. Start over.
        if !log::HEADER.looks_like(&Dir::head(st, &files.log)?) {
            return Err(Error::fatal(format!(
                "{} is not a partitioned-engine command log: refused, the file is left as it is",
                files.log.display()
            )));
        }
        // (`remove` also takes a mark left beside it, checking it is one.)
        files.remove(st)?;
    }
    st.create_dir_all(&dir)
        .map_err(|e| Error::fatal(format!("cannot create {}: {e}", dir.display())))?;
    Ok(Opened {
        durability: Some(new(files, None)),
        commands: None,
    })
}

/// Read the snapshot into `e`, read the log, and (unless read-only) cut its torn tail
/// and start the flusher after its last command.
fn recover<W: Worker>(
    schema: &Schema,
    opts: &EngineOptions,
    worker: impl FnOnce() -> W,
    files: Dir,
    fp: u32,
) -> Result<Opened> {
    let st = &*opts.storage;
    // The log's header first (whose and which format: a log of an earlier build is
    // refused before a snapshot of hundreds of MB is read into the partitions).
    {
        let f = st
            .open(&files.log, Open::Read)
            .map_err(|err| Error::fatal(format!("log file {}: {err}", files.log.display())))?;
        log::read_header(&*f, &files.log)?;
    }
    let t0 = std::time::Instant::now();
    let snap = load_snapshot(schema, st, worker, &files, fp)?;
    let snapshot_took = t0.elapsed();
    let header = snap.header;
    let pos = snap.position;
    // Only the commands after the snapshot's position are read: the bytes before it
    // may have been freed by the checkpoint that wrote it.
    let contents = read_log_after(st, &files, &header, pos)?;
    let marked = files.read_mark(st, &header)?;
    if contents.valid_bytes < marked {
        return Err(Error::fatal(format!(
            "log file {} ends at byte {} before byte {marked} that {} records as durable: the log was cut or damaged and lost acknowledged commits, refused, the file is left as it is",
            files.log.display(),
            contents.valid_bytes,
            log::MARK_FILE
        )));
    }
    let d = Durability {
        files,
        st: opts.storage.clone(),
        header,
        mode: opts.log,
        read_only: opts.read_only || opts.log == LogMode::Off,
        logger: OnceLock::new(),
        flusher: Mutex::new(None),
        base: Mutex::new((pos, snap.bytes)),
        costs: Mutex::new(checkpoint::Costs::DEFAULT.with_snapshot(snap.bytes, snapshot_took)),
        recovery: Mutex::new(Some(Recovery {
            snapshot_bytes: snap.bytes,
            snapshot_ms: snapshot_took.as_millis() as u64,
            commands: contents.commands.len() as u64,
            replay_ms: 0,
        })),
        checkpointer: OnceLock::new(),
        checkpoint_threads: Mutex::new(Vec::new()),
        _temp: None,
    };
    if !opts.read_only {
        // `check --recover`: the torn tail is cut, nothing else is written.
        let file = st
            .open(&d.files.log, Open::ReadWrite)
            .map_err(|err| Error::fatal(format!("log file {}: {err}", d.files.log.display())))?;
        // The commands after the mark made durable again and a torn tail (the normal
        // trace of a crash: a block written in part) cut, before anything new is built
        // on them (`Restart::prepare` says why). The snapshot's position was durable
        // before the snapshot was renamed into place, and the bytes before it may be
        // freed: neither is rewritten.
        let restart = storage::logfile::Restart {
            torn: contents.torn_bytes > 0,
            marked: marked.max(pos.offset),
        };
        if restart.torn || restart.marked < contents.valid_bytes {
            restart
                .prepare(&*file, contents.valid_bytes, &d.files.log)
                .and_then(|()| {
                    file.sync_data()
                        .map_err(|err| storage::logfile::io_failure("fsync", &d.files.log, &err))
                })
                .map_err(Error::Fatal)?;
        }
        if opts.log != LogMode::Off {
            d.start(LogTail {
                file,
                path: d.files.log.clone(),
                offset: contents.valid_bytes,
                commands: pos.commands + contents.commands.len() as u64,
            })?;
            // The mark holds a length already: the flusher advances it.
            d.arm_mark()?;
        }
    }
    Ok(Opened {
        durability: Some(d),
        commands: Some(contents.commands),
    })
}

/// The snapshot read into the partitions through `worker`'s transactions (of
/// `ROWS_PER_LOAD_TXN` rows each).
fn load_snapshot<W: Worker>(
    schema: &Schema,
    st: &dyn Storage,
    worker: impl FnOnce() -> W,
    files: &Dir,
    fp: u32,
) -> Result<snapshot::Snapshot> {
    let tables = schema.tables.len() as u32;
    let mut w = worker();
    let mut in_txn = 0usize;
    let h = snapshot::read(st, &files.snapshot, tables, fp, &mut |t, k, r| {
        if in_txn == 0 {
            w.begin()?;
        }
        w.insert(api::TableId(t), k, r).map_err(|err| {
            Error::fatal(format!(
                "snapshot {}: a row of table {} does not fit this workload ({err}): refused",
                files.snapshot.display(),
                schema.table(api::TableId(t)).name
            ))
        })?;
        in_txn += 1;
        if in_txn == ROWS_PER_LOAD_TXN {
            w.commit()?;
            in_txn = 0;
        }
        Ok(())
    });
    match h {
        Ok(h) => {
            if in_txn > 0 {
                w.commit()?;
            }
            Ok(h)
        }
        Err(err) => {
            w.abort();
            Err(err)
        }
    }
}

/// The log's commands after the snapshot's position `pos` (the bytes before it may have
/// been freed by the checkpoint that wrote it); the log must be the snapshot's
/// database's (`header`).
fn read_log_after(
    st: &dyn Storage,
    files: &Dir,
    header: &FileHeader,
    pos: LogPosition,
) -> Result<log::LogContents> {
    let f = st
        .open(&files.log, Open::Read)
        .map_err(|err| Error::fatal(format!("log file {}: {err}", files.log.display())))?;
    // Whose log it is, before any block is read.
    if log::read_header(&*f, &files.log)? != *header {
        return Err(Error::fatal(format!(
            "log file {} belongs to another database than the snapshot {} beside it: refused, the files are left as they are",
            files.log.display(),
            files.snapshot.display()
        )));
    }
    let contents = log::read_log_at(&*f, &files.log, pos)?;
    if contents.header != *header {
        return Err(Error::fatal(format!(
            "log file {} belongs to another database than the snapshot {} beside it: refused, the files are left as they are",
            files.log.display(),
            files.snapshot.display()
        )));
    }
    Ok(contents)
}

impl Durability {
    fn start(&self, tail: LogTail) -> Result<()> {
        let (lg, h) = Logger::start(tail)?;
        *self.flusher.lock() = Some(h);
        assert!(self.logger.set(lg).is_ok(), "the logger is started once");
        Ok(())
    }

    /// The load is done: a new log (its header only), then the snapshot of every row
    /// `rows` hands over, renamed into place (from then on the database is loaded);
    /// then the flusher starts.
    pub fn load_done(
        &self,
        tables: u32,
        rows: &mut dyn FnMut(&mut snapshot::Writer<'_>) -> Result<()>,
    ) -> Result<()> {
        let st = &*self.st;
        let dir = &self.files.dir;
        let fail = |p: &Path, err: std::io::Error| {
            if storage::is_no_space(&err) {
                Error::fatal(format!(
                    "no space left on the device holding {}: writing it failed",
                    p.display()
                ))
            } else {
                Error::fatal(format!("{}: {err}", p.display()))
            }
        };
        // The log first, whole (atomically), and its mark: a snapshot never exists
        // without them.
        storage::write_atomic(st, dir, log::LOG_FILE, &log::HEADER.encode(&self.header))
            .map_err(|err| fail(&self.files.log, err))?;
        self.files
            .mark_file(self.st.clone(), self.header.database_id)
            .write(log::FILE_HEADER_BYTES as u64)
            .map_err(Error::Fatal)?;
        let mut w = snapshot::Writer::create(st, dir, &self.header, tables)?;
        rows(&mut w)?;
        let written = w.finish(LogPosition::START)?;
        *self.base.lock() = (LogPosition::START, written.bytes);
        let file = st
            .open(&self.files.log, Open::ReadWrite)
            .map_err(|err| fail(&self.files.log, err))?;
        self.start(LogTail {
            file,
            path: self.files.log.clone(),
            offset: log::FILE_HEADER_BYTES as u64,
            commands: 0,
        })?;
        self.arm_mark()
    }

    /// From now on the flusher advances the durable mark (which holds a length).
    fn arm_mark(&self) -> Result<()> {
        let l = self.logger.get().expect("the flusher is started");
        l.io.arm_mark(
            self.files
                .mark_file(self.st.clone(), self.header.database_id),
            false,
        )
        .map_err(Error::Fatal)
    }

    /// The recovered commands were replayed in `took`: measure the cost of one.
    pub fn replayed(&self, took: std::time::Duration) {
        let mut r = self.recovery.lock();
        if let Some(r) = r.as_mut() {
            r.replay_ms = took.as_millis() as u64;
            let mut c = self.costs.lock();
            *c = c.with_replay(r.commands, took);
        }
    }

    /// Start the checkpointer (once; not for a read-only database): commits are
    /// logged from now on, so the partitions' state follows the log.
    pub fn start_checkpoints(
        &self,
        parts: Arc<[crate::partition::Partition]>,
        shared: Arc<crate::partition::Partition>,
        tables: u32,
        log_bytes: Option<u64>,
    ) -> Result<()> {
        let Some(lg) = self.logger.get() else {
            return Ok(());
        };
        if self.read_only || self.checkpointer.get().is_some() {
            return Ok(());
        }
        let c = Checkpointer::new(
            parts,
            shared,
            lg.clone(),
            checkpoint::Files {
                st: self.st.clone(),
                dir: self.files.dir.clone(),
                header: self.header,
                tables,
            },
            log_bytes,
            *self.costs.lock(),
            *self.base.lock(),
        );
        *self.checkpoint_threads.lock() = c.start()?;
        assert!(
            self.checkpointer.set(c).is_ok(),
            "the checkpointer is started once"
        );
        Ok(())
    }

    /// Stop the checkpointer (abandoning one being written), then write what is
    /// appended and stop the flusher; its error, if it failed.
    pub fn shutdown(&self) -> Result<()> {
        if let Some(c) = self.checkpointer.get() {
            c.stop();
        }
        for h in std::mem::take(&mut *self.checkpoint_threads.lock()) {
            let _ = h.join();
        }
        let Some(l) = self.logger.get() else {
            return Ok(());
        };
        l.stop();
        if let Some(h) = self.flusher.lock().take() {
            let _ = h.join();
        }
        match l.error() {
            Some(msg) => Err(Error::Fatal(msg)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::{IndexKind, TableDef};

    /// A schema with both primary kinds and secondary indexes of both uniquenesses.
    pub(crate) fn sample() -> Schema {
        let mut s = Schema::new();
        s.add(TableDef::new("acct", 100, IndexKind::Hash, 10));
        s.add(
            TableDef::new("orders", 24, IndexKind::BTree, 10)
                .with_secondary("by_cust", false, |_, _| {})
                .with_secondary("by_id", true, |_, _| {}),
        );
        s
    }

    /// The fingerprint is the one the in-memory engines share (`Schema::fingerprint`)
    /// and keeps the value it had when each engine computed its own (snapshots of
    /// earlier builds carry it).
    #[test]
    fn the_schema_fingerprint_keeps_its_value() {
        assert_eq!(sample().fingerprint(), 0x2901_568f);
        assert_eq!(Schema::new().fingerprint(), 0);
    }
}
