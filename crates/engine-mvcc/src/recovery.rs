//! `recovery`: rebuild the database from its log when the engine opens a directory
//! that holds one, and the files around it (creating, removing on `--reload`, the load
//! marker).
//!
//! Replay streams the log block by block (`log::LogReader`) and applies only records
//! with a commit timestamp at or below the highest durable timestamp `D` a valid block
//! states (a record above it was never acknowledged by a `Sync` commit and may have
//! read a commit whose records never reached the file). A record above the `D` known
//! when it is read waits in `pending` until a later block's `D` covers it; a restart
//! block voids whatever is still waiting. The result is the state of replaying the
//! durable records in commit-timestamp order: for each key the record with the highest
//! timestamp wins whatever order records are met in (a tombstone stays in the primary
//! index, carrying its timestamp, until the end so an older row met later cannot bring
//! the key back). Each surviving key gets one committed version stamped with its
//! record's timestamp; tombstones then leave the index and the secondary indexes are
//! built from the surviving rows.
//!
//! Must never: change a log file it refuses, cut anything but a torn tail, or apply a
//! record above the durable timestamp.

use crate::catalog::{Catalog, Index, Table};
use crate::log::{self, FileHeader, LoadMarker, LogEnd, LogReader, RecordRef};
use crate::version::{Obj, Version};
use api::key::Key;
use api::{Error, Result};
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use storage::{File, Open, Storage};

/// What a replay found.
#[derive(Debug, Default, Clone)]
pub struct Replayed {
    pub header: Option<FileHeader>,
    pub end: Option<LogEnd>,
    /// Highest durable timestamp of the log.
    pub durable: u64,
    /// Highest commit timestamp of any record in the log (applied or not).
    pub max_ts: u64,
    pub blocks: u64,
    pub applied: u64,
    /// Records above the durable timestamp, or voided by a restart block.
    pub discarded: u64,
    /// Rows in the database after the replay.
    pub rows: u64,
}

fn fatal(msg: String) -> Error {
    Error::Fatal(msg)
}

fn io_err(what: &str, e: io::Error) -> Error {
    // Storage errors already name the file; keep one line.
    fatal(format!("{what}: {e}"))
}

/// Apply one durable record (exclusive access): the highest timestamp per key wins.
fn apply(t: &Table, table: u32, r: &RecordRef<'_>, zeros: &[u8], tombs: &mut Vec<(u32, Key)>) {
    let g = crossbeam_epoch::pin();
    let tomb = r.row.is_none();
    let row = r.row.unwrap_or(&zeros[..t.row_size]);
    let (hit, _, _) = t.primary.get(r.key, &g);
    match hit {
        Some(o) => {
            // SAFETY: replay is single-threaded; every indexed object has one version.
            let o = unsafe { Obj::from_u64(o) };
            let old = o.head.load(Relaxed);
            // SAFETY: as above.
            if r.ts <= unsafe { (*old).begin.load(Relaxed) } {
                return; // a newer write of this key was applied already
            }
            o.head.store(
                Version::alloc(r.ts, std::ptr::null_mut(), tomb, row),
                Relaxed,
            );
            // SAFETY: unlinked, and nothing else can reach it during replay.
            unsafe { Version::free(old) };
        }
        None => {
            let o = Obj::alloc(r.key, Version::alloc(r.ts, std::ptr::null_mut(), tomb, row));
            // Nothing refers to a committed object but its index entries.
            // SAFETY: just allocated.
            unsafe { (*o).refs.store(0, Relaxed) };
            if t.primary.insert(r.key, o as u64, &g).is_err() {
                unreachable!("replay is single-threaded: the key was absent");
            }
        }
    }
    if tomb {
        tombs.push((table, Key::from_bytes(r.key)));
    }
}

/// Replay the log `f` into the (empty) catalog.
pub fn replay(
    catalog: &mut Catalog,
    f: &dyn File,
    path: &Path,
    schema_fp: u32,
) -> Result<Replayed> {
    let mut reader = LogReader::new(f, path)?;
    if reader.header.schema != schema_fp {
        return Err(fatal(format!(
            "log file {} was written for another schema (another workload, or other options such as --pad): refused",
            path.display()
        )));
    }
    let mut out = Replayed {
        header: Some(reader.header),
        ..Replayed::default()
    };
    let max_row = catalog.tables.iter().map(|t| t.row_size).max().unwrap_or(0);
    let zeros = vec![0u8; max_row];
    let mut tombs: Vec<(u32, Key)> = Vec::new();
    // Records above the durable timestamp known when they were read.
    let mut pending: Vec<(u32, u64, Key, Option<Vec<u8>>)> = Vec::new();
    let bad_record = |b: u64, r: &RecordRef<'_>, why: &str| {
        fatal(format!(
            "log file {} block at byte {b}: record of table {} {why} (a log of another database?): refused",
            path.display(),
            r.table
        ))
    };
    while let Some(b) = reader.next_block()? {
        out.blocks += 1;
        if b.kind == log::BLOCK_RESTART {
            out.discarded += pending.len() as u64;
            pending.clear();
            continue;
        }
        if b.durable > out.durable {
            out.durable = b.durable;
            let d = out.durable;
            let mut i = 0;
            while i < pending.len() {
                if pending[i].1 <= d {
                    let (table, ts, key, row) = pending.swap_remove(i);
                    let r = RecordRef {
                        ts,
                        table,
                        key: key.as_bytes(),
                        row: row.as_deref(),
                    };
                    apply(
                        &catalog.tables[table as usize],
                        table,
                        &r,
                        &zeros,
                        &mut tombs,
                    );
                    out.applied += 1;
                } else {
                    i += 1;
                }
            }
        }
        for r in b.records() {
            let Some(t) = catalog.tables.get(r.table as usize) else {
                return Err(bad_record(b.offset, &r, "not in the schema"));
            };
            if r.row.is_some_and(|row| row.len() != t.row_size) {
                return Err(bad_record(b.offset, &r, "with a row of the wrong size"));
            }
            out.max_ts = out.max_ts.max(r.ts);
            if r.ts <= out.durable {
                apply(t, r.table, &r, &zeros, &mut tombs);
                out.applied += 1;
            } else {
                pending.push((
                    r.table,
                    r.ts,
                    Key::from_bytes(r.key),
                    r.row.map(<[u8]>::to_vec),
                ));
            }
        }
    }
    out.discarded += pending.len() as u64;
    drop(pending);
    out.end = reader.end();

    // Tombstones leave the primary index (a key deleted twice is listed twice).
    let g = crossbeam_epoch::pin();
    for (table, key) in tombs {
        let t = &catalog.tables[table as usize];
        let (Some(o), _, _) = t.primary.get(key.as_bytes(), &g) else {
            continue;
        };
        // SAFETY: single-threaded replay; one version per object.
        let dead = unsafe { (*Obj::from_u64(o).head.load(Relaxed)).tomb.load(Relaxed) };
        if dead {
            t.primary.remove(key.as_bytes(), o, true, &g);
            // SAFETY: out of its only index, and no transaction runs yet.
            unsafe { Obj::free_all(o as *mut Obj) };
        }
    }
    drop(g);
    out.rows = build_secondaries(catalog, path)?;
    Ok(out)
}

/// Insert every object's secondary-index entries; returns the number of rows.
fn build_secondaries(catalog: &mut Catalog, path: &Path) -> Result<u64> {
    let g = crossbeam_epoch::pin();
    let mut rows = 0u64;
    for t in catalog.tables.iter_mut() {
        let Table {
            primary,
            secondary,
            name,
            ..
        } = t;
        let mut sk = Key::new();
        let mut dup = false;
        let mut visit = |k: &[u8], o: u64| {
            rows += 1;
            // SAFETY: single-threaded; the object and its one version are live.
            let row = unsafe { (*Obj::from_u64(o).head.load(Relaxed)).row() };
            for s in secondary.iter() {
                s.entry_key(k, row, &mut sk);
                dup |= s.index.insert(sk.as_bytes(), o, &g).is_err();
            }
        };
        match primary {
            Index::BTree(b) => b.scan(
                Bound::Unbounded,
                Bound::Unbounded,
                true,
                &mut |_, _| {},
                &mut |k, v| {
                    visit(k, v);
                    true
                },
            ),
            Index::Hash(h) => h.for_each_entry(|k, v| visit(k, v)),
        }
        if dup {
            return Err(fatal(format!(
                "log file {}: two rows of table {name} share a key of a unique secondary index (a damaged or foreign log): refused",
                path.display(),
            )));
        }
    }
    Ok(rows)
}

/// The files of a database directory.
pub struct LogDir {
    pub dir: PathBuf,
    pub log: PathBuf,
    pub marker: PathBuf,
}

impl LogDir {
    pub fn new(dir: &Path) -> Self {
        LogDir {
            dir: dir.to_path_buf(),
            log: dir.join(log::LOG_FILE),
            marker: dir.join(log::MARKER_FILE),
        }
    }

    fn exists(&self, st: &dyn Storage, p: &Path) -> Result<bool> {
        st.exists(p).map_err(|e| io_err("looking for the log", e))
    }

    pub fn has_log(&self, st: &dyn Storage) -> Result<bool> {
        self.exists(st, &self.log)
    }

    pub fn has_marker(&self, st: &dyn Storage) -> Result<bool> {
        self.exists(st, &self.marker)
    }

    /// `--reload`: remove this engine's log and marker (the marker first: a crash in
    /// between leaves a log whose load is unfinished, never a marker without its log).
    /// A file that is not this engine's is refused, not removed.
    pub fn remove(&self, st: &dyn Storage) -> Result<()> {
        let log_here = self.has_log(st)?;
        if log_here {
            let f = st
                .open(&self.log, Open::Read)
                .map_err(|e| io_err("opening the log", e))?;
            let mut head = [0u8; 16];
            let n = f
                .read_full_at(&mut head, 0)
                .map_err(|e| io_err("reading the log", e))?;
            if !log::HEADER.looks_like(&head[..n]) {
                return Err(fatal(format!(
                    "{} is not an mvcc-engine log: --reload refuses to remove it",
                    self.log.display()
                )));
            }
        }
        let marker_here = self.has_marker(st)?;
        if marker_here {
            let b = st
                .read(&self.marker)
                .map_err(|e| io_err("reading the load marker", e))?;
            if !log::MARKER.looks_like(&b) {
                return Err(fatal(format!(
                    "{} is not an mvcc-engine load marker: --reload refuses to remove it",
                    self.marker.display()
                )));
            }
            st.remove(&self.marker)
                .map_err(|e| io_err("removing the load marker", e))?;
        }
        if log_here {
            st.remove(&self.log)
                .map_err(|e| io_err("removing the log", e))?;
        }
        if log_here || marker_here {
            st.sync_dir(&self.dir)
                .map_err(|e| io_err("syncing the database directory", e))?;
        }
        Ok(())
    }

    /// Create a new, empty log (header only) atomically, and open it for appending.
    pub fn create(&self, st: &dyn Storage, schema_fp: u32) -> Result<log::LogTail> {
        st.create_dir_all(&self.dir)
            .map_err(|e| io_err("creating the database directory", e))?;
        let header = FileHeader {
            database_id: storage::random_id(),
            schema: schema_fp,
        };
        storage::write_atomic(st, &self.dir, log::LOG_FILE, &log::HEADER.encode(&header))
            .map_err(|e| io_err("creating the log", e))?;
        let file = st
            .open(&self.log, Open::ReadWrite)
            .map_err(|e| io_err("opening the log", e))?;
        Ok(log::LogTail {
            file,
            path: self.log.clone(),
            database_id: header.database_id,
            offset: log::FILE_HEADER_BYTES as u64,
            durable: 0,
            restart: None,
        })
    }

    /// The load marker, checked against the log's database id.
    pub fn read_marker(&self, st: &dyn Storage, header: &FileHeader) -> Result<LoadMarker> {
        if !self.has_marker(st)? {
            return Err(fatal(format!(
                "the load did not finish in {} (no {}): remove {} or rerun with --reload",
                self.dir.display(),
                log::MARKER_FILE,
                self.dir.display()
            )));
        }
        let b = st
            .read(&self.marker)
            .map_err(|e| io_err("reading the load marker", e))?;
        let m = log::MARKER.decode(&b, &self.marker).map_err(fatal)?;
        if m.database_id != header.database_id {
            return Err(fatal(format!(
                "{} belongs to another log (database id {:016x}, the log's is {:016x}): refused",
                self.marker.display(),
                m.database_id,
                header.database_id
            )));
        }
        Ok(m)
    }

    /// Write the load marker (after the load is durable).
    pub fn write_marker(&self, st: &dyn Storage, m: &LoadMarker) -> Result<()> {
        let bytes = log::MARKER.encode(m);
        storage::write_atomic(st, &self.dir, log::MARKER_FILE, &bytes).map_err(|e| {
            if storage::is_no_space(&e) {
                fatal(format!(
                    "no space left on the device holding {}: cannot mark the load complete",
                    self.dir.display()
                ))
            } else {
                io_err("writing the load marker", e)
            }
        })
    }

    /// Recover from the existing log into `catalog` (the file is only read). `append`:
    /// also return where the flusher continues.
    pub fn recover(
        &self,
        st: &dyn Storage,
        catalog: &mut Catalog,
        schema_fp: u32,
        append: bool,
    ) -> Result<(Replayed, Option<log::LogTail>)> {
        let how = if append { Open::ReadWrite } else { Open::Read };
        let file: Arc<dyn File> = st
            .open(&self.log, how)
            .map_err(|e| io_err("opening the log", e))?;
        let header = log::read_header(&*file, &self.log)?;
        let marker = self.read_marker(st, &header)?;
        let r = replay(catalog, &*file, &self.log, schema_fp)?;
        let end = r.end.expect("replay read to the end");
        if end.valid < marker.log_bytes {
            return Err(fatal(format!(
                "log file {} ends at byte {} before the end of its load (byte {} recorded in {}): the log lost data, refused",
                self.log.display(),
                end.valid,
                marker.log_bytes,
                log::MARKER_FILE
            )));
        }
        if !append {
            return Ok((r, None));
        }
        // Nothing is written here: the flusher cuts a torn tail and writes the restart
        // block before its first block (see `log::LogTail::restart`).
        let tail = log::LogTail {
            file,
            path: self.log.clone(),
            database_id: header.database_id,
            offset: end.valid,
            durable: r.durable,
            restart: Some(log::Restart {
                torn: end.torn_bytes > 0,
            }),
        };
        Ok((r, Some(tail)))
    }
}
