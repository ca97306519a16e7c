//! Restart recovery, ARIES style: analysis (from the last checkpoint: active transaction
//! and dirty page tables), redo (repeat history from the oldest recovery LSN, skipping
//! pages whose LSN shows the change), undo (roll back loser transactions, writing CLRs so
//! a crash during undo never undoes twice). Reads the log through `LogReader`, record by
//! record, so its memory does not grow with the log's length.
//! It must never run while workers are active.

use crate::btree;
use crate::checkpoint;
use crate::db::Inner;
use crate::heap;
use crate::latch::Mode;
use crate::log::{Kind, LogReader, Rec};
use crate::page;
use crate::xct::{self, TxnLog, TxnSlot};
use api::{Error, Result};
use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Where to stop recovery early (crash tests: "the process died during recovery").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopAt {
    #[default]
    Never,
    /// After redo, with redone pages written to the data file.
    AfterRedo,
    /// After undoing this many records (CLRs durable, pages written).
    AfterUndo(usize),
}

pub struct Analysis {
    /// Loser transactions: txn -> last lsn.
    pub att: FxHashMap<u64, u64>,
    /// Dirty pages: page -> recovery lsn.
    pub dpt: FxHashMap<u64, u64>,
    pub redo_from: u64,
    pub next_page: u64,
}

/// Rebuild the transaction and dirty page tables from the checkpoint at `ckpt` and
/// the records after its `begin`.
pub fn analyze(log: &LogReader, ckpt: u64) -> Result<Analysis> {
    let ck = log.need(ckpt, "the last checkpoint")?;
    let d = checkpoint::decode(&ck.rec())?;
    let mut att: FxHashMap<u64, u64> = d.att.iter().map(|&(t, last, _)| (t, last)).collect();
    let mut dpt: FxHashMap<u64, u64> = d.dpt.iter().copied().collect();
    let mut next_page = d.next_page;
    let mut it = log.iter_from(d.begin);
    while let Some(o) = it.next()? {
        let r = o.rec();
        if r.txn != 0 {
            let e = att.entry(r.txn).or_insert(0);
            *e = (*e).max(r.lsn);
            if matches!(r.kind, Kind::Commit | Kind::End) {
                att.remove(&r.txn);
            }
        }
        for pid in pages_of(&r)? {
            dpt.entry(pid).or_insert(r.lsn);
            next_page = next_page.max(pid + 1);
        }
    }
    // A checkpoint may list a transaction whose commit it did not see yet.
    let mut done = Vec::new();
    for (&t, &last) in &att {
        let r = log.need(last, "analysis")?;
        if matches!(r.rec().kind, Kind::Commit | Kind::End) {
            done.push(t);
        }
    }
    for t in done {
        att.remove(&t);
    }
    let redo_from = dpt.values().copied().min().unwrap_or(log.end_lsn());
    Ok(Analysis {
        att,
        dpt,
        redo_from,
        next_page,
    })
}

fn pages_of(r: &Rec<'_>) -> Result<Vec<u64>> {
    Ok(match r.kind {
        Kind::PageImages => btree::images(r)
            .ok_or_else(|| Error::fatal(format!("malformed log record {} (corrupt log)", r.lsn)))?
            .into_iter()
            .map(|img| img.pid)
            .collect(),
        Kind::HeapFormat
        | Kind::HeapInsert
        | Kind::HeapDelete
        | Kind::HeapUpdate
        | Kind::BtInsert
        | Kind::BtDelete => vec![r.page],
        Kind::Commit | Kind::End | Kind::Checkpoint => vec![],
    })
}

/// Repeat history. Returns the number of records applied.
pub fn redo(e: &Inner, log: &LogReader, an: &Analysis) -> Result<u64> {
    let mut applied = 0;
    let mut it = log.iter_from(an.redo_from);
    while let Some(o) = it.next()? {
        let r = o.rec();
        for pid in pages_of(&r)? {
            if an.dpt.get(&pid).is_none_or(|&rec| r.lsn < rec) {
                continue;
            }
            let mut g = e.pool.fix(pid, Mode::X)?;
            if g.lsn() >= r.lsn && page::page_type(g.page()) != 0 {
                // It shows the change, but maybe only in the page cache: a killed
                // process's data-file fsync may have failed, and the kernel then drops
                // the dirty state, so the medium may still hold an older or torn page
                // that a later power loss would reveal. Every page written since the
                // last checkpoint's sync is in the dirty page table, so writing each
                // one back (end of recovery) makes the file durable again.
                g.mark_dirty(&e.log);
                continue;
            }
            match r.kind {
                Kind::PageImages => {
                    let imgs = btree::images(&r).expect("checked by analysis");
                    let img = imgs.iter().find(|i| i.pid == pid).expect("listed");
                    btree::install_image(g.page_mut(), img)?;
                }
                Kind::BtInsert | Kind::BtDelete => btree::redo(g.page_mut(), &r)?,
                _ => heap::redo(g.page_mut(), &r)?,
            }
            g.mark_dirty(&e.log);
            page::set_lsn(g.page_mut(), r.lsn);
            applied += 1;
        }
    }
    Ok(applied)
}

/// Roll back the losers. Returns the number of records undone (stops early at `stop`).
pub fn undo(e: &Inner, log: &LogReader, an: &Analysis, stop: Option<usize>) -> Result<usize> {
    let mut next: FxHashMap<u64, (u64, TxnLog)> = FxHashMap::default();
    for (&txn, &last) in &an.att {
        let slot = Arc::new(TxnSlot::default());
        slot.txn.store(txn, Ordering::Relaxed);
        slot.last.store(last, Ordering::Relaxed);
        let mut tl = TxnLog::new(slot);
        tl.txn = txn;
        next.insert(txn, (last, tl));
    }
    let mut done = 0;
    while let Some((&txn, _)) = next.iter().max_by_key(|(_, (l, _))| *l) {
        if stop.is_some_and(|s| done >= s) {
            return Ok(done);
        }
        let (lsn, mut tl) = next.remove(&txn).unwrap();
        let up = if lsn == 0 {
            0
        } else {
            let o = log.need(lsn, "undo")?;
            let r = o.rec();
            if r.clr {
                r.undo_next
            } else if matches!(
                r.kind,
                Kind::HeapInsert
                    | Kind::HeapDelete
                    | Kind::HeapUpdate
                    | Kind::BtInsert
                    | Kind::BtDelete
            ) {
                tl.clr = Some(r.prev);
                xct::undo_one(e, &mut tl, &r)?;
                done += 1;
                r.prev
            } else {
                r.prev
            }
        };
        if up == 0 {
            tl.clr = None;
            tl.log_txn_end(&e.log, Kind::End);
        } else {
            next.insert(txn, (up, tl));
        }
    }
    Ok(done)
}
