//! Checkpoints and the control file. A fuzzy checkpoint logs the active transaction
//! table and the dirty page table, then records its LSN in the control file; log
//! segments that no recovery can need any more are then removed. The control file
//! (`control` in the database directory, replaced atomically) is the database's
//! identity card: which engine made it, its random id (also in the catalog page, the
//! double-write file and every log segment, so mismatched files are refused), whether
//! its load finished, where recovery starts, and how long the data file was.
//! It must never decide what recovery does with the records (that is `recovery`).

pub mod control;

use crate::db::Inner;
use crate::log::{Kind, Rec, REC_HEADER};
use crate::page::{get_u32, get_u64, PAGE_SIZE};
use api::{Error, Result};
pub use control::{Control, State, CONTROL};
use std::sync::atomic::Ordering;

/// Payload of a checkpoint record: analysis rescans from `begin`; `att` holds (txn,
/// last lsn, first lsn), `dpt` (page, recovery lsn).
pub fn encode(begin: u64, next_page: u64, att: &[(u64, u64, u64)], dpt: &[(u64, u64)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + 24 * att.len() + 16 * dpt.len());
    v.extend_from_slice(&begin.to_le_bytes());
    v.extend_from_slice(&next_page.to_le_bytes());
    v.extend_from_slice(&(att.len() as u32).to_le_bytes());
    v.extend_from_slice(&(dpt.len() as u32).to_le_bytes());
    for &(t, last, first) in att {
        for x in [t, last, first] {
            v.extend_from_slice(&x.to_le_bytes());
        }
    }
    for &(p, l) in dpt {
        v.extend_from_slice(&p.to_le_bytes());
        v.extend_from_slice(&l.to_le_bytes());
    }
    v
}

/// A checkpoint record's content.
pub struct Decoded {
    pub begin: u64,
    pub next_page: u64,
    pub att: Vec<(u64, u64, u64)>,
    pub dpt: Vec<(u64, u64)>,
}

pub fn decode(r: &Rec<'_>) -> Result<Decoded> {
    let p = r.payload;
    let bad = || {
        Error::fatal(format!(
            "checkpoint record {} is malformed (corrupt log)",
            r.lsn
        ))
    };
    if r.kind != Kind::Checkpoint || p.len() < 24 {
        return Err(bad());
    }
    let (na, nd) = (get_u32(p, 16) as usize, get_u32(p, 20) as usize);
    if p.len() != 24 + 24 * na + 16 * nd {
        return Err(bad());
    }
    let att = (0..na)
        .map(|i| {
            let at = 24 + 24 * i;
            (get_u64(p, at), get_u64(p, at + 8), get_u64(p, at + 16))
        })
        .collect();
    let base = 24 + 24 * na;
    let dpt = (0..nd)
        .map(|i| (get_u64(p, base + 16 * i), get_u64(p, base + 16 * i + 8)))
        .collect();
    Ok(Decoded {
        begin: get_u64(p, 0),
        next_page: get_u64(p, 8),
        att,
        dpt,
    })
}

/// Take a fuzzy checkpoint: the active transaction and dirty page tables as of
/// `begin` (records from `begin` on are re-scanned by analysis), the data file synced
/// (pages not listed as dirty must be durable), the record made durable, the control
/// file pointed at it, then the segments below everything recovery could read removed.
pub fn take(e: &Inner) -> Result<u64> {
    let _one = rt::lock(rt::WaitKind::Other, &e.checkpoint_lock);
    let begin = e.log.next_lsn();
    let mut att = Vec::new();
    let mut keep_from = begin;
    for s in crate::latch::lock(&e.slots).iter() {
        let txn = s.txn.load(Ordering::Acquire);
        let last = s.last.load(Ordering::Acquire);
        let first = s.first.load(Ordering::Acquire);
        if txn != 0 && last != 0 {
            // Read without stopping the transaction: if it ended meanwhile, `first` may
            // be a later one's (or 0); `last` still bounds what undo could need.
            let first = if first == 0 { last } else { first.min(last) };
            att.push((txn, last, first));
            keep_from = keep_from.min(first);
        }
    }
    let mut dpt = Vec::new();
    e.pool.dirty_pages(&mut dpt);
    // Pages dirty since before this checkpoint are written by the next one's time.
    e.pool.set_flush_target(begin);
    for &(_, rec) in &dpt {
        keep_from = keep_from.min(rec);
    }
    if let Err(err) = e.pool.sync() {
        // The pages written since the last good fsync may be lost (the kernel drops
        // them with the error) and a later fsync would succeed without them, so no
        // checkpoint may certify this file again: stop the engine (no more commits,
        // no checkpoint at shutdown). Restart recovery rewrites them from the log.
        e.log.fail(format!("the data file's fsync failed: {err}"));
        return Err(err);
    }
    let data_pages = e.pool.file().len().map_err(crate::log::io_err)? / PAGE_SIZE as u64;
    let payload = encode(begin, e.pool.next_page(), &att, &dpt);
    if payload.len() + REC_HEADER > crate::log::MAX_REC {
        return Err(Error::fatal(
            "checkpoint record would exceed the log record limit",
        ));
    }
    let mut r = Rec::new(Kind::Checkpoint);
    r.payload = &payload;
    let lsn = e.log.append_durable(&r)?;
    {
        let mut c = e.control.lock();
        c.checkpoint_lsn = lsn;
        c.data_pages = c.data_pages.max(data_pages);
        c.write(&*e.segs.st, &e.dir)?;
    }
    e.segs.remove_below(keep_from.min(lsn))?;
    e.checkpoints.fetch_add(1, Ordering::Relaxed);
    Ok(lsn)
}
