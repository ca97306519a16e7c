//! Restart recovery, ARIES style: analysis (from the last checkpoint: active transaction
//! and dirty page tables), redo (repeat history from the oldest recovery LSN, skipping
//! pages whose LSN shows the change), undo (roll back loser transactions, writing CLRs so
//! a crash during undo never undoes twice). Also owns the checkpoint record and the
//! master file that points at the last checkpoint.
//! It must never run while workers are active.

use crate::btree;
use crate::heap;
use crate::latch::Mode;
use crate::log::{Kind, LogImage, Rec};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64};
use crate::xct::{self, TxnLog, TxnSlot};
use crate::Inner;
use api::{Error, Result};
use rustc_hash::FxHashMap;
use std::path::Path;
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

pub fn master_path(dir: &Path) -> std::path::PathBuf {
    dir.join("ckpt")
}

pub fn write_master(dir: &Path, lsn: u64) -> Result<()> {
    let mut b = [0u8; 12];
    put_u64(&mut b, 0, lsn);
    let c = crc32fast::hash(&b[..8]);
    put_u32(&mut b, 8, c);
    let tmp = dir.join("ckpt.new");
    std::fs::write(&tmp, b)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, master_path(dir))?;
    Ok(())
}

fn read_master(dir: &Path) -> Option<u64> {
    let b = std::fs::read(master_path(dir)).ok()?;
    (b.len() == 12 && crc32fast::hash(&b[..8]) == get_u32(&b, 8)).then(|| get_u64(&b, 0))
}

/// Payload of a checkpoint record.
pub fn encode_checkpoint(
    begin: u64,
    next_page: u64,
    att: &[(u64, u64)],
    dpt: &[(u64, u64)],
) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + 16 * (att.len() + dpt.len()));
    v.extend_from_slice(&begin.to_le_bytes());
    v.extend_from_slice(&next_page.to_le_bytes());
    v.extend_from_slice(&(att.len() as u32).to_le_bytes());
    v.extend_from_slice(&(dpt.len() as u32).to_le_bytes());
    for &(a, b) in att.iter().chain(dpt) {
        v.extend_from_slice(&a.to_le_bytes());
        v.extend_from_slice(&b.to_le_bytes());
    }
    v
}

pub struct Analysis {
    /// Loser transactions: txn -> last lsn.
    pub att: FxHashMap<u64, u64>,
    /// Dirty pages: page -> recovery lsn.
    pub dpt: FxHashMap<u64, u64>,
    pub redo_from: u64,
    pub next_page: u64,
}

pub fn analyze(dir: &Path, img: &LogImage) -> Result<Analysis> {
    let mut att = FxHashMap::default();
    let mut dpt = FxHashMap::default();
    let mut next_page = 0u64;
    let mut scan_from = img.first_lsn();
    if let Some(ck) = read_master(dir).and_then(|l| img.get(l)) {
        if ck.kind == Kind::Checkpoint && ck.payload.len() >= 24 {
            let p = ck.payload;
            scan_from = get_u64(p, 0);
            next_page = get_u64(p, 8);
            let (na, nd) = (get_u32(p, 16) as usize, get_u32(p, 20) as usize);
            if p.len() != 24 + 16 * (na + nd) {
                return Err(Error::fatal(
                    "checkpoint record of the wrong size (corrupt log)",
                ));
            }
            for i in 0..na + nd {
                let (a, b) = (get_u64(p, 24 + 16 * i), get_u64(p, 32 + 16 * i));
                if i < na {
                    att.insert(a, b);
                } else {
                    dpt.insert(a, b);
                }
            }
        }
    }
    for r in img.iter_from(scan_from) {
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
    att.retain(|_, last| {
        !img.get(*last)
            .is_some_and(|r| matches!(r.kind, Kind::Commit | Kind::End))
    });
    let redo_from = dpt.values().copied().min().unwrap_or(img.end_lsn());
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
pub fn redo(e: &Inner, img: &LogImage, an: &Analysis) -> Result<u64> {
    let mut applied = 0;
    for r in img.iter_from(an.redo_from) {
        for pid in pages_of(&r)? {
            if an.dpt.get(&pid).is_none_or(|&rec| r.lsn < rec) {
                continue;
            }
            let mut g = e.pool.fix(pid, Mode::X)?;
            if g.lsn() >= r.lsn && page::page_type(g.page()) != 0 {
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
pub fn undo(e: &Inner, img: &LogImage, an: &Analysis, stop: Option<usize>) -> Result<usize> {
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
            let r = img.get(lsn).ok_or_else(|| {
                Error::fatal(format!("log record {lsn} needed by undo is missing"))
            })?;
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
