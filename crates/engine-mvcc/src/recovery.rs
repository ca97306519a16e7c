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

use crate::catalog::{Catalog, Table};
use crate::log::{self, FileHeader, LogEnd, RecordRef};
use crate::version::{Obj, Version};
use api::key::Key;
use api::{Error, Result};
use std::path::Path;
use std::sync::atomic::Ordering::*;
pub use storage::logdir::LogDir;
use storage::valuelog::LogReader;
use storage::{File, Storage};

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
    /// The checkpoint recovery started from (its rows are applied before the log from
    /// its `tomb_from` on; `blocks` counts log blocks only).
    pub checkpoint: Option<crate::checkpoint::End>,
    /// Its file's length.
    pub checkpoint_bytes: u64,
}

fn fatal(msg: String) -> Error {
    Error::Fatal(msg)
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

/// Replay the checkpoint in `dir` (if there is one) and then the log `f` into the
/// (empty) catalog.
pub fn replay(
    catalog: &mut Catalog,
    st: &dyn Storage,
    dir: &Path,
    f: &dyn File,
    path: &Path,
    schema_fp: u32,
) -> Result<Replayed> {
    let header = log::read_header(f, path)?;
    if header.schema != schema_fp {
        return Err(fatal(format!(
            "log file {} was written for another schema (another workload, or other options such as --pad): refused",
            path.display()
        )));
    }
    let mut out = Replayed {
        header: Some(header),
        ..Replayed::default()
    };
    let max_row = catalog.tables.iter().map(|t| t.row_size).max().unwrap_or(0);
    let zeros = vec![0u8; max_row];
    let mut tombs: Vec<(u32, Key)> = Vec::new();
    // The checkpoint's rows first: all durable when it was made (its timestamp was).
    let ckpt = crate::checkpoint::read(st, dir, &header, |r| {
        let t = catalog
            .tables
            .get(r.table as usize)
            .ok_or_else(|| format!("a row of table {} not in the schema", r.table))?;
        if r.row.is_none_or(|row| row.len() != t.row_size) {
            return Err(format!("a row of table {} of the wrong size", r.table));
        }
        let g = crossbeam_epoch::pin();
        if t.primary.get(r.key, &g).0.is_some() {
            return Err(format!("a key of table {} twice", r.table));
        }
        apply(t, r.table, r, &zeros, &mut tombs);
        Ok(())
    })
    .map_err(fatal)?;
    let (mut from, mut log_from) = (log::FILE_HEADER_BYTES as u64, 0);
    if let Some((end, bytes)) = ckpt {
        (from, log_from) = after_checkpoint(end, bytes, f, path, dir, &mut out)?;
    }
    let mut reader = LogReader::new_at(f, path, &log::HEADER, &log::BLOCKS, from).map_err(fatal)?;
    // Records above the durable timestamp known when they were read.
    let mut pending: Vec<Pending> = Vec::new();
    let bad_record = |b: u64, r: &RecordRef<'_>, why: &str| {
        fatal(format!(
            "log file {} block at byte {b}: record of table {} {why} (a log of another database?): refused",
            path.display(),
            r.table
        ))
    };
    while let Some(b) = reader.next_block().map_err(fatal)? {
        out.blocks += 1;
        if b.offset < log_from && b.end() > log_from {
            return Err(fatal(format!(
                "log file {}: the checkpoint continues at byte {log_from}, inside the block at byte {}: the checkpoint is not this log's, refused, the files are left as they are",
                path.display(),
                b.offset
            )));
        }
        // Before `log_from` (after `tomb_from`) only tombstones are read: the
        // checkpoint holds every other write there or a newer one (see `checkpoint`).
        let tombs_only = b.offset < log_from;
        if b.kind == log::BLOCK_RESTART {
            out.discarded += pending.len() as u64;
            pending.clear();
            continue;
        }
        if b.durable > out.durable {
            out.durable = b.durable;
            out.applied += apply_durable(&mut pending, out.durable, catalog, &zeros, &mut tombs);
        }
        for r in log::records(&b) {
            let Some(t) = catalog.tables.get(r.table as usize) else {
                return Err(bad_record(b.offset, &r, "not in the schema"));
            };
            if r.row.is_some_and(|row| row.len() != t.row_size) {
                return Err(bad_record(b.offset, &r, "with a row of the wrong size"));
            }
            out.max_ts = out.max_ts.max(r.ts);
            if tombs_only && r.row.is_some() {
                continue;
            }
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
    let valid = out.end.expect("replay read to the end").valid;
    if valid < log_from {
        return Err(fatal(format!(
            "log file {}: its valid part ends at byte {valid}, before byte {log_from} where the checkpoint continues: the log was cut or damaged, refused, the files are left as they are",
            path.display()
        )));
    }

    drop_tombstones(catalog, tombs);
    out.rows = build_secondaries(catalog, path)?;
    Ok(out)
}

/// A log record above the durable timestamp known when it was read: (table, timestamp,
/// key, row; none for a tombstone).
type Pending = (u32, u64, Key, Option<Vec<u8>>);

/// Where the log's replay starts after the checkpoint `end` (`bytes` long): the
/// tombstones from its `tomb_from`, every record from its `log_from` (which the log must
/// reach); the checkpoint's durable timestamp is the replay's to start with.
fn after_checkpoint(
    end: crate::checkpoint::End,
    bytes: u64,
    f: &dyn File,
    path: &Path,
    dir: &Path,
    out: &mut Replayed,
) -> Result<(u64, u64)> {
    let from = end
        .replay_from(&dir.join(crate::checkpoint::CKPT_FILE), f, path)
        .map_err(fatal)?;
    out.durable = end.durable;
    out.max_ts = end.durable;
    out.checkpoint = Some(end);
    out.checkpoint_bytes = bytes;
    Ok(from)
}

/// Apply the pending records now durable (timestamp at most `durable`); returns how many.
fn apply_durable(
    pending: &mut Vec<Pending>,
    durable: u64,
    catalog: &Catalog,
    zeros: &[u8],
    tombs: &mut Vec<(u32, Key)>,
) -> u64 {
    let mut applied = 0;
    let mut i = 0;
    while i < pending.len() {
        if pending[i].1 <= durable {
            let (table, ts, key, row) = pending.swap_remove(i);
            let r = RecordRef {
                ts,
                table,
                key: key.as_bytes(),
                row: row.as_deref(),
            };
            apply(&catalog.tables[table as usize], table, &r, zeros, tombs);
            applied += 1;
        } else {
            i += 1;
        }
    }
    applied
}

/// Tombstones leave the primary index (a key deleted twice is listed twice) and their
/// objects are freed.
fn drop_tombstones(catalog: &Catalog, tombs: Vec<(u32, Key)>) {
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
}

/// Insert every object's secondary-index entries; returns the number of rows.
fn build_secondaries(catalog: &mut Catalog, path: &Path) -> Result<u64> {
    let mut rows = 0;
    for t in catalog.tables.iter_mut() {
        // SAFETY: single-threaded; the object and its one version are live.
        let read = |o: u64, row: &mut [u8]| {
            row.copy_from_slice(unsafe { (*Obj::from_u64(o).head.load(Relaxed)).row() })
        };
        rows += memindex::index::fill_secondaries(&mut t.primary, &t.secondary, t.row_size, &read)
            .map_err(|memindex::index::DuplicateKey| {
                fatal(storage::valuelog::duplicate_unique_key(path, &t.name))
            })?;
    }
    Ok(rows)
}

/// Recover from the existing log in `ld` into `catalog` (the file is only read).
/// `append`: also return where the flusher continues. A log that ends before its
/// durable mark is refused.
pub fn recover(
    ld: &LogDir,
    st: &dyn Storage,
    catalog: &mut Catalog,
    schema_fp: u32,
    append: bool,
) -> Result<(Replayed, Option<log::LogTail>)> {
    let replay = |f: &dyn File, path: &Path| replay(catalog, st, &ld.dir, f, path, schema_fp);
    ld.recover(st, append, fatal, replay, |r| {
        let end = r.end.expect("replay read to the end");
        (end, r.durable, r.checkpoint.map_or(0, |c| c.tomb_from))
    })
}
