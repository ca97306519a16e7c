//! `recovery`: rebuild the database from its value log when the engine opens a log
//! directory that holds one, and the files around it (opening, creating, removing on
//! `--reload`, the load marker).
//!
//! Replay streams the log block by block (`log::LogReader`). The rule (Silo's): only
//! records of *durable* epochs are applied, that is epochs at or below the highest
//! durable epoch `D` a valid block states; records of later epochs were never
//! acknowledged by a `Sync` commit and may depend on records that never reached the
//! file, so they are discarded. A record of an epoch above the `D` known when it is read
//! waits in `pending` until a later block's `D` covers it; a restart block (written when
//! a recovered log is reopened) voids whatever is still pending. For each key the record
//! with the highest TID wins, whatever the order records are applied in: a delete leaves
//! an absent record carrying its TID (a tombstone) until the end, so an older put read
//! later cannot bring the key back. At the end tombstones leave the primary index and
//! the secondary indexes are built from the surviving rows. An update record (the
//! changed bytes of a row) applies only on the version whose TID it names, waiting for
//! it when it is read first; one still waiting at the end whose version is missing (and
//! not overwritten since) is a damaged log.
//!
//! Must never: change a log file it refuses, cut anything but a torn tail, or apply a
//! record of an epoch above the durable epoch.

use crate::catalog::{Catalog, TableData};
use crate::log::{self, Body, FileHeader, LogEnd, OwnedBody, RecordRef};
use crate::record::{epoch_of, Rec, ABSENT, FLAGS};
use api::key::Key;
use api::{Error, Result};
use std::collections::HashMap;
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
    /// Highest durable epoch of the log.
    pub durable: u64,
    /// Highest epoch of any record in the log (applied or not).
    pub max_epoch: u64,
    pub blocks: u64,
    pub applied: u64,
    /// Records of epochs that never became durable, or voided by a restart.
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

/// Updates read before the version they change: (table, key, TID of that version) to
/// (the update's TID, its runs). Versions of one key reach the log in any order (two
/// workers' buffers, drained one after the other), so an update may come first.
type Waiting = HashMap<(u32, Vec<u8>, u64), (u64, Vec<u8>)>;

/// What replay keeps between records: the zero row of a tombstone, a row to apply an
/// update in, the tombstones, and the updates waiting for their version.
struct Apply {
    zeros: Vec<u8>,
    row: Vec<u8>,
    tombstones: Vec<(u32, Key)>,
    waiting: Waiting,
}

impl Apply {
    /// Nothing applied yet, its rows sized for the largest row of `catalog`.
    fn new(catalog: &Catalog) -> Apply {
        let max_row = catalog.tables.iter().map(|t| t.row_size).max().unwrap_or(0);
        Apply {
            zeros: vec![0u8; max_row],
            row: vec![0u8; max_row],
            tombstones: Vec::new(),
            waiting: Waiting::new(),
        }
    }

    /// Apply one record of a durable epoch to the primary index (exclusive access), then
    /// the updates that waited for the version it made. `Err`: a damaged update.
    fn record(
        &mut self,
        t: &TableData,
        table: u32,
        r: &RecordRef<'_>,
        g: &crossbeam_epoch::Guard,
    ) -> std::result::Result<(), String> {
        let mut made = self.one(t, table, r.key, r.tid, r.body, g)?;
        while let Some(v) = made.filter(|_| !self.waiting.is_empty()) {
            let Some((tid, runs)) = self.waiting.remove(&(table, r.key.to_vec(), v)) else {
                break;
            };
            let body = Body::Update {
                prev: v,
                runs: &runs,
            };
            made = self.one(t, table, r.key, tid, body, g)?;
            debug_assert_eq!(made, Some(tid), "an update on its own version applies");
        }
        Ok(())
    }

    /// Apply one record; `Some(tid)`: the key's version is now `tid` (present), so
    /// updates of it may follow.
    fn one(
        &mut self,
        t: &TableData,
        table: u32,
        key: &[u8],
        tid: u64,
        body: Body<'_>,
        g: &crossbeam_epoch::Guard,
    ) -> std::result::Result<Option<u64>, String> {
        let (hit, _, _) = t.primary.get(key, g);
        let Some(v) = hit else {
            let (flagged, row) = match body {
                Body::Put(row) => (tid, row),
                Body::Delete => {
                    self.tombstones.push((table, Key::from_bytes(key)));
                    (tid | ABSENT, &self.zeros[..t.row_size])
                }
                Body::Update { prev, runs } => {
                    self.waiting
                        .insert((table, key.to_vec(), prev), (tid, runs.to_vec()));
                    return Ok(None);
                }
            };
            let rec = t.new_record(key, flagged, row);
            if t.primary.insert(key, rec.as_u64(), g).is_err() {
                unreachable!("replay is single-threaded: the key was absent");
            }
            return Ok((flagged == tid).then_some(tid));
        };
        // SAFETY: an indexed record read while pinned (freed only through the epoch).
        let rec = unsafe { Rec::from_u64(v) };
        let cur = rec.tid().load(Relaxed);
        if tid <= cur & !FLAGS {
            return Ok(None); // a newer write of this key was applied already
        }
        match body {
            Body::Put(row) => {
                rec.store_row(row);
                rec.tid().store(tid, Relaxed);
                Ok(Some(tid))
            }
            Body::Delete => {
                rec.tid().store(tid | ABSENT, Relaxed);
                self.tombstones.push((table, Key::from_bytes(key)));
                Ok(None)
            }
            Body::Update { prev, runs } if prev == cur => {
                // `cur` has no flag set: the version is present.
                let row = &mut self.row[..t.row_size];
                rec.stable_read(row);
                log::apply_runs(row, runs)?;
                rec.store_row(row);
                rec.tid().store(tid, Relaxed);
                Ok(Some(tid))
            }
            Body::Update { prev, runs } => {
                self.waiting
                    .insert((table, key.to_vec(), prev), (tid, runs.to_vec()));
                Ok(None)
            }
        }
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
    let mut ap = Apply::new(catalog);
    let g = crossbeam_epoch::pin();
    // The checkpoint's rows first: all durable when it was made (its `epoch` was).
    let ckpt = crate::checkpoint::read(st, dir, &header, |r| {
        let t = catalog
            .tables
            .get(r.table as usize)
            .ok_or_else(|| format!("a row of table {} not in the schema", r.table))?;
        if !matches!(r.body, Body::Put(row) if row.len() == t.row_size) {
            return Err(format!("a row of table {} of the wrong size", r.table));
        }
        let (hit, _, _) = t.primary.get(r.key, &g);
        if hit.is_some() {
            return Err(format!("a key of table {} twice", r.table));
        }
        ap.record(t, r.table, r, &g)
    })
    .map_err(fatal)?;
    let (mut from, mut log_from) = (log::FILE_HEADER_BYTES as u64, 0);
    if let Some((end, ckpt_bytes)) = ckpt {
        (from, log_from) = after_checkpoint(end, ckpt_bytes, f, path, dir, &mut out)?;
    }
    let mut reader = LogReader::new_at(f, path, &log::HEADER, &log::BLOCKS, from).map_err(fatal)?;
    // Records of epochs above the durable epoch known when they were read.
    let mut pending: Vec<Pending> = Vec::new();
    let bad_record = |b: u64, table: u32, why: &str| foreign_record(path, b, table, why);
    while let Some(b) = reader.next_block().map_err(fatal)? {
        out.blocks += 1;
        let b_end = b.end();
        if b.offset < log_from && b_end > log_from {
            return Err(fatal(format!(
                "log file {}: the checkpoint continues at byte {log_from}, inside the block at byte {}: the checkpoint is not this log's, refused, the files are left as they are",
                path.display(),
                b.offset
            )));
        }
        // Before `log_from` (after `tomb_from`) only deletes are read: the checkpoint
        // holds every other write there or a newer one (see `checkpoint`).
        let deletes_only = b.offset < log_from;
        if b.kind == log::BLOCK_RESTART {
            out.discarded += pending.len() as u64;
            pending.clear();
            continue;
        }
        if b.durable > out.durable {
            out.durable = b.durable;
            out.applied += apply_durable(&mut pending, out.durable, &mut ap, catalog, &g)
                .map_err(|(table, why)| bad_record(b.offset, table, &why))?;
        }
        for r in log::records(&b) {
            let Some(t) = catalog.tables.get(r.table as usize) else {
                return Err(bad_record(b.offset, r.table, "not in the schema"));
            };
            if matches!(r.body, Body::Put(row) if row.len() != t.row_size) {
                return Err(bad_record(
                    b.offset,
                    r.table,
                    "with a row of the wrong size",
                ));
            }
            out.max_epoch = out.max_epoch.max(epoch_of(r.tid));
            if deletes_only && !matches!(r.body, Body::Delete) {
                continue;
            }
            if epoch_of(r.tid) <= out.durable {
                ap.record(t, r.table, &r, &g)
                    .map_err(|why| bad_record(b.offset, r.table, &why))?;
                out.applied += 1;
            } else {
                pending.push((r.table, r.tid, Key::from_bytes(r.key), r.body.to_owned()));
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

    check_waiting(catalog, &ap.waiting, path, &g)?;
    drop_tombstones(catalog, ap.tombstones, &g);
    drop(g);
    out.rows = build_secondaries(catalog, path)?;
    Ok(out)
}

/// Where the log's replay starts after the checkpoint `end` (`ckpt_bytes` long): the
/// deletes from its `tomb_from`, every record from its `log_from` (which the log must
/// reach); the checkpoint's durable epoch is the replay's to start with.
fn after_checkpoint(
    end: crate::checkpoint::End,
    ckpt_bytes: u64,
    f: &dyn File,
    path: &Path,
    dir: &Path,
    out: &mut Replayed,
) -> Result<(u64, u64)> {
    let from = end
        .replay_from(&dir.join(crate::checkpoint::CKPT_FILE), f, path)
        .map_err(fatal)?;
    out.durable = end.durable;
    out.max_epoch = end.durable;
    out.checkpoint = Some(end);
    out.checkpoint_bytes = ckpt_bytes;
    Ok(from)
}

/// A log record of an epoch not yet known durable when it was read: (table, TID, key,
/// body).
type Pending = (u32, u64, Key, OwnedBody);

/// A record of a log block at byte `b` that cannot be this database's.
fn foreign_record(path: &Path, b: u64, table: u32, why: &str) -> Error {
    fatal(format!(
        "log file {} block at byte {b}: record of table {table} {why} (a log of another database?): refused",
        path.display(),
    ))
}

/// Apply the pending records whose epoch is now durable (at most `durable`); returns how
/// many, or the table and reason of a record that cannot be applied.
fn apply_durable(
    pending: &mut Vec<Pending>,
    durable: u64,
    ap: &mut Apply,
    catalog: &Catalog,
    g: &crossbeam_epoch::Guard,
) -> std::result::Result<u64, (u32, String)> {
    let mut applied = 0;
    let mut i = 0;
    while i < pending.len() {
        if epoch_of(pending[i].1) <= durable {
            let (table, tid, key, body) = pending.swap_remove(i);
            let r = RecordRef {
                tid,
                table,
                key: key.as_bytes(),
                body: body.as_body(),
            };
            ap.record(&catalog.tables[table as usize], table, &r, g)
                .map_err(|why| (table, why))?;
            applied += 1;
        } else {
            i += 1;
        }
    }
    Ok(applied)
}

/// An update still waiting is harmless if a later write of its key was applied (it
/// would have been overwritten); otherwise the version it changes is not in the log,
/// which a whole log never lacks: refused, rather than recover a row without it.
fn check_waiting(
    catalog: &Catalog,
    waiting: &Waiting,
    path: &Path,
    g: &crossbeam_epoch::Guard,
) -> Result<()> {
    for ((table, key, prev), (tid, _)) in waiting {
        let t = &catalog.tables[*table as usize];
        let cur = match t.primary.get(key, g) {
            // SAFETY: an indexed record read while pinned (freed only through the epoch).
            (Some(v), _, _) => unsafe { Rec::from_u64(v) }.tid().load(Relaxed) & !FLAGS,
            _ => 0,
        };
        if cur < *tid {
            return Err(fatal(format!(
                "log file {}: an update of a record of table {table} (TID {tid:#x}) changes a version (TID {prev:#x}) that is not in the log: damaged, refused",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Tombstones leave the primary index (a key deleted twice is listed twice) and their
/// records are freed.
fn drop_tombstones(catalog: &Catalog, tombstones: Vec<(u32, Key)>, g: &crossbeam_epoch::Guard) {
    for (table, key) in tombstones {
        let t = &catalog.tables[table as usize];
        let (Some(v), _, _) = t.primary.get(key.as_bytes(), g) else {
            continue;
        };
        // SAFETY: an indexed record read while pinned (freed only through the epoch).
        let rec = unsafe { Rec::from_u64(v) };
        let tid = rec.tid().load(Relaxed);
        if tid & ABSENT != 0 {
            t.primary.remove(key.as_bytes(), v, true, g);
            t.deleted_tid.fetch_max(tid & !FLAGS, Relaxed);
            // SAFETY: no transaction runs yet and the record left its only index.
            unsafe { t.free_record(rec) };
        }
    }
}

/// Insert every row's secondary-index entries; returns the number of rows.
fn build_secondaries(catalog: &mut Catalog, path: &Path) -> Result<u64> {
    let mut rows = 0;
    for t in catalog.tables.iter_mut() {
        let read = |v: u64, row: &mut [u8]| {
            // SAFETY: an indexed record read while pinned (freed only through the epoch).
            unsafe { Rec::from_u64(v) }.stable_read(row);
        };
        rows += memindex::index::fill_secondaries(&mut t.primary, &t.secondary, t.row_size, &read)
            .map_err(|memindex::index::DuplicateKey| {
                fatal(storage::valuelog::duplicate_unique_key(path, &t.name))
            })?;
    }
    Ok(rows)
}

/// Recover from the existing log in `ld` into `catalog` (the file is only read).
/// `append`: also return where the logger continues. A log that ends before its
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
