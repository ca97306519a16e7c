//! Heap files: rows in slotted pages of fixed-size slots (every row of a table has the
//! same size), addressed by record id (page, slot). Owns the heap page layout, slot
//! allocation (per-worker insertion page plus a shared list of reusable slots), and the
//! redo of heap log records. It must never take locks; the caller (`xct`) has locked
//! the row before calling, and hands in the transaction's log context.
//!
//! Page layout after the common 32-byte header: `[32..36)` table, `[36..38)` slot size,
//! `[38..40)` capacity, `[40..42)` high-water slot count, `[42..44)` used slots,
//! `[48..48+cap)` one flag byte per slot (1 = used), then the slots from
//! `slot_base(cap)` (8-aligned), slot `i` at `slot_base + i * slot_size`.

use crate::bpool::{BufferPool, PageGuard};
use crate::latch::Mode;
use crate::log::{Kind, Log, Rec};
use crate::page::{self, get_u16, put_u16, put_u32, Page, PageType, NO_PAGE, PAGE_SIZE};
use crate::xct::txnlog::TxnLog;
use api::{Error, Result};
use parking_lot::Mutex;

const FLAGS: usize = 48;
/// The largest slot a heap page holds (one slot per page).
pub const MAX_SLOT: usize = PAGE_SIZE - FLAGS - 8 - 1;
// The heap header (table at 32 .. used slots ending at 44) lies between the page
// header and the flag bytes; slot counts and sizes are u16 fields.
const _: () = assert!(page::HEADER == 32 && 44 <= FLAGS && PAGE_SIZE <= u16::MAX as usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rid {
    pub page: u64,
    pub slot: u16,
}

impl Rid {
    /// Packed form stored in B-tree entries (page ids stay below 2^48).
    pub fn pack(self) -> u64 {
        assert!(self.page < 1 << 48, "page id beyond 2^48");
        self.page << 16 | self.slot as u64
    }
    pub fn unpack(v: u64) -> Rid {
        Rid {
            page: v >> 16,
            slot: v as u16,
        }
    }
}

/// `--stats`' census: the table and used slots of a heap page.
pub fn census_page(p: &Page) -> (u32, u64) {
    (page::get_u32(p, 32), get_u16(p, 42) as u64)
}

fn slot_base(cap: usize) -> usize {
    (FLAGS + cap + 7) & !7
}

pub fn capacity(slot_size: usize) -> usize {
    assert!(
        (1..=MAX_SLOT).contains(&slot_size),
        "heap slot size {slot_size}"
    );
    let mut c = (PAGE_SIZE - FLAGS) / (slot_size + 1);
    while slot_base(c) + c * slot_size > PAGE_SIZE {
        c -= 1;
    }
    c
}

fn cap(p: &Page) -> usize {
    get_u16(p, 38) as usize
}
fn ssize(p: &Page) -> usize {
    get_u16(p, 36) as usize
}
fn slot_range(p: &Page, slot: u16) -> std::ops::Range<usize> {
    let (c, s) = (cap(p), ssize(p));
    let at = slot_base(c) + slot as usize * s;
    at..at + s
}

fn check(p: &Page, pid: u64, slot: u16) -> Result<()> {
    if page::page_type(p) != PageType::Heap as u8 || slot as usize >= cap(p) {
        return Err(Error::fatal(format!(
            "record ({pid}, {slot}) does not name a heap slot (corrupt index entry?)"
        )));
    }
    Ok(())
}

pub fn format(p: &mut Page, pid: u64, table: u32, slot_size: usize) {
    page::format(p, pid, PageType::Heap);
    put_u32(p, 32, table);
    put_u16(p, 36, slot_size as u16);
    put_u16(p, 38, capacity(slot_size) as u16);
}

/// Redo a heap record on its page (the page LSN check is the caller's).
pub fn redo(p: &mut Page, r: &Rec<'_>) -> Result<()> {
    match r.kind {
        Kind::HeapFormat => format(p, r.page, r.table, r.a as usize),
        Kind::HeapInsert => put(p, r.page, r.slot, r.payload)?,
        Kind::HeapDelete => clear(p, r.page, r.slot)?,
        Kind::HeapUpdate => {
            check(p, r.page, r.slot)?;
            let n = r.payload.len() / 2;
            if r.a as usize + n > ssize(p) {
                return Err(Error::fatal(format!(
                    "log record {} overruns its slot",
                    r.lsn
                )));
            }
            let at = slot_range(p, r.slot).start + r.a as usize;
            p[at..at + n].copy_from_slice(&r.payload[n..]);
        }
        k => panic!("heap redo of a {k:?} record"),
    }
    Ok(())
}

fn put(p: &mut Page, pid: u64, slot: u16, bytes: &[u8]) -> Result<()> {
    check(p, pid, slot)?;
    let rg = slot_range(p, slot);
    if bytes.len() != rg.len() {
        return Err(Error::fatal(format!(
            "heap record of {} bytes",
            bytes.len()
        )));
    }
    p[rg].copy_from_slice(bytes);
    if p[FLAGS + slot as usize] == 0 {
        p[FLAGS + slot as usize] = 1;
        let used = get_u16(p, 42);
        put_u16(p, 42, used + 1);
    }
    if slot >= get_u16(p, 40) {
        put_u16(p, 40, slot + 1);
    }
    Ok(())
}

fn clear(p: &mut Page, pid: u64, slot: u16) -> Result<()> {
    check(p, pid, slot)?;
    if p[FLAGS + slot as usize] == 1 {
        p[FLAGS + slot as usize] = 0;
        let used = get_u16(p, 42);
        put_u16(p, 42, used - 1);
    }
    Ok(())
}

/// A table's heap: the shared list of reusable slots (freed by committed deletes and
/// rolled-back inserts). Each worker keeps its own insertion page.
pub struct HeapFile {
    pub table: u32,
    pub slot_size: usize,
    pub free: Mutex<Vec<Rid>>,
}

impl HeapFile {
    pub fn new(table: u32, slot_size: usize) -> HeapFile {
        assert!(
            slot_size <= MAX_SLOT,
            "row of {slot_size} bytes exceeds a heap page"
        );
        HeapFile {
            table,
            slot_size,
            free: Mutex::new(Vec::new()),
        }
    }

    /// Store `rec` in a free slot; `cur` is the calling worker's insertion page.
    pub fn insert(
        &self,
        pool: &BufferPool,
        log: &Log,
        tl: &mut TxnLog,
        cur: &mut u64,
        rec: &[u8],
    ) -> Result<Rid> {
        assert_eq!(rec.len(), self.slot_size, "heap record size");
        let reuse = crate::latch::lock(&self.free).pop();
        let (mut g, slot) = if let Some(rid) = reuse {
            let g = pool.fix(rid.page, Mode::X)?;
            check(g.page(), rid.page, rid.slot)?;
            assert_eq!(
                g.page()[FLAGS + rid.slot as usize],
                0,
                "reusable slot {rid:?} is in use"
            );
            (g, rid.slot)
        } else {
            let mut found = None;
            if *cur != NO_PAGE {
                let g = pool.fix(*cur, Mode::X)?;
                let high = get_u16(g.page(), 40);
                if (high as usize) < cap(g.page()) {
                    found = Some((g, high));
                }
            }
            match found {
                Some(x) => x,
                None => {
                    let pid = pool.alloc_page();
                    let mut g = pool.fix_new(pid)?;
                    txnstats::page(txnstats::PageKind::Heap, pid);
                    format(g.page_mut(), pid, self.table, self.slot_size);
                    let mut r = Rec::new(Kind::HeapFormat);
                    r.page = pid;
                    r.table = self.table;
                    r.a = self.slot_size as u16;
                    g.log(log, &r, None);
                    *cur = pid;
                    (g, 0)
                }
            }
        };
        let pid = g.pid();
        put(g.page_mut(), pid, slot, rec)?;
        let mut r = Rec::new(Kind::HeapInsert);
        r.page = pid;
        r.slot = slot;
        r.table = self.table;
        r.payload = rec;
        tl.log(log, &mut g, r);
        Ok(Rid { page: pid, slot })
    }
}

/// Read the record at `rid` under a shared latch.
pub fn read<R>(pool: &BufferPool, rid: Rid, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
    rt::point(rt::Point::Ctx(rt::Component::RecordRead));
    let g = pool.fix(rid.page, Mode::S)?;
    let p = g.page();
    check(p, rid.page, rid.slot)?;
    if p[FLAGS + rid.slot as usize] != 1 {
        return Err(Error::fatal(format!(
            "index entry points at empty heap slot {rid:?}"
        )));
    }
    Ok(f(&p[slot_range(p, rid.slot)]))
}

/// Latch the record's page exclusively and check the slot holds a record.
pub fn fix_record(pool: &BufferPool, rid: Rid) -> Result<PageGuard<'_>> {
    let g = pool.fix(rid.page, Mode::X)?;
    check(g.page(), rid.page, rid.slot)?;
    if g.page()[FLAGS + rid.slot as usize] != 1 {
        return Err(Error::fatal(format!(
            "index entry points at empty heap slot {rid:?}"
        )));
    }
    Ok(g)
}

pub fn record_mut<'g>(g: &'g mut PageGuard<'_>, slot: u16) -> &'g mut [u8] {
    let rg = slot_range(g.page(), slot);
    &mut g.page_mut()[rg]
}

/// Log an update of `rid` whose old bytes are `before` (the page already holds the new
/// bytes); only the changed byte range is logged.
pub fn log_update(
    log: &Log,
    tl: &mut TxnLog,
    g: &mut PageGuard<'_>,
    slot: u16,
    table: u32,
    before: &[u8],
    scratch: &mut Vec<u8>,
) {
    let rg = slot_range(g.page(), slot);
    let after = &g.page()[rg];
    let Some(first) = (0..before.len()).find(|&i| before[i] != after[i]) else {
        return; // nothing changed: nothing to log
    };
    let last = (0..before.len())
        .rev()
        .find(|&i| before[i] != after[i])
        .unwrap();
    scratch.clear();
    scratch.extend_from_slice(&after[first..=last]);
    let mut r = Rec::new(Kind::HeapUpdate);
    r.page = g.pid();
    r.slot = slot;
    r.table = table;
    r.a = first as u16;
    r.payload = &before[first..=last];
    r.payload2 = scratch;
    tl.log(log, g, r);
}

/// Remove the record at `rid` (logging its before-image); the slot becomes reusable only
/// once the caller's transaction ends.
pub fn delete(
    pool: &BufferPool,
    log: &Log,
    tl: &mut TxnLog,
    table: u32,
    rid: Rid,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let mut g = fix_record(pool, rid)?;
    let rg = slot_range(g.page(), rid.slot);
    scratch.clear();
    scratch.extend_from_slice(&g.page()[rg]);
    clear(g.page_mut(), rid.page, rid.slot)?;
    let mut r = Rec::new(Kind::HeapDelete);
    r.page = rid.page;
    r.slot = rid.slot;
    r.table = table;
    r.payload = scratch;
    tl.log(log, &mut g, r);
    Ok(())
}

/// Undo helpers (logged as CLRs by the caller's TxnLog mode).
pub fn undo_insert(pool: &BufferPool, log: &Log, tl: &mut TxnLog, r: &Rec<'_>) -> Result<()> {
    let mut g = pool.fix(r.page, Mode::X)?;
    clear(g.page_mut(), r.page, r.slot)?;
    let mut c = Rec::new(Kind::HeapDelete);
    c.page = r.page;
    c.slot = r.slot;
    c.table = r.table;
    tl.log(log, &mut g, c);
    Ok(())
}

pub fn undo_delete(pool: &BufferPool, log: &Log, tl: &mut TxnLog, r: &Rec<'_>) -> Result<()> {
    let mut g = pool.fix(r.page, Mode::X)?;
    put(g.page_mut(), r.page, r.slot, r.payload)?;
    let mut c = Rec::new(Kind::HeapInsert);
    c.page = r.page;
    c.slot = r.slot;
    c.table = r.table;
    c.payload = r.payload;
    tl.log(log, &mut g, c);
    Ok(())
}

pub fn undo_update(pool: &BufferPool, log: &Log, tl: &mut TxnLog, r: &Rec<'_>) -> Result<()> {
    let mut g = pool.fix(r.page, Mode::X)?;
    check(g.page(), r.page, r.slot)?;
    let n = r.payload.len() / 2;
    let at = slot_range(g.page(), r.slot).start + r.a as usize;
    g.page_mut()[at..at + n].copy_from_slice(&r.payload[..n]);
    let mut c = Rec::new(Kind::HeapUpdate);
    c.page = r.page;
    c.slot = r.slot;
    c.table = r.table;
    c.a = r.a;
    // Redo of the CLR writes the second half: the before-image.
    c.payload = &r.payload[n..];
    c.payload2 = &r.payload[..n];
    tl.log(log, &mut g, c);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xct::txnlog::TxnSlot;
    use std::sync::Arc;

    #[test]
    fn capacity_fills_the_page() {
        for s in [1, 7, 24, 100, 165, 1000, 4000, MAX_SLOT] {
            let c = capacity(s);
            assert!(c >= 1);
            assert!(slot_base(c) + c * s <= PAGE_SIZE);
            assert!(slot_base(c + 1) + (c + 1) * s > PAGE_SIZE, "slot size {s}");
        }
    }

    #[test]
    fn insert_read_delete_and_redo_rebuild_the_pages() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, log) = crate::bpool::for_tests(dir.path(), 64);
        let hf = HeapFile::new(3, 300);
        let mut tl = TxnLog::new(Arc::new(TxnSlot::default()));
        tl.txn = 9;
        let mut cur = NO_PAGE;
        let mut rids = vec![];
        for i in 0..200u32 {
            let mut rec = [0u8; 300];
            rec[..4].copy_from_slice(&i.to_le_bytes());
            rids.push(hf.insert(&pool, &log, &mut tl, &mut cur, &rec).unwrap());
        }
        let pages: std::collections::BTreeSet<u64> = rids.iter().map(|r| r.page).collect();
        assert_eq!(pages.len(), 200usize.div_ceil(capacity(300)));
        let mut scratch = vec![];
        for (i, rid) in rids.iter().enumerate() {
            let v = read(&pool, *rid, |r| {
                u32::from_le_bytes(r[..4].try_into().unwrap())
            })
            .unwrap();
            assert_eq!(v, i as u32);
            if i % 3 == 0 {
                delete(&pool, &log, &mut tl, 3, *rid, &mut scratch).unwrap();
                assert!(
                    read(&pool, *rid, |_| ()).is_err(),
                    "deleted slot reads as an error"
                );
            }
        }
        {
            let mut g = fix_record(&pool, rids[1]).unwrap();
            let before = record_mut(&mut g, rids[1].slot).to_vec();
            record_mut(&mut g, rids[1].slot)[10..14].copy_from_slice(b"abcd");
            log_update(
                &log,
                &mut tl,
                &mut g,
                rids[1].slot,
                3,
                &before,
                &mut scratch,
            );
        }
        // Replaying the transaction's records (plus each page's format) on blank pages
        // yields the same bytes as the pool holds.
        for &pid in &pages {
            let mut p: Box<Page> = Box::new([0; PAGE_SIZE]);
            let mut f = Rec::new(Kind::HeapFormat);
            f.page = pid;
            f.table = 3;
            f.a = 300;
            redo(&mut p, &f).unwrap();
            for &off in &tl.offs {
                let lsn = page::get_u64(&tl.undo, off as usize + 8);
                let r = Rec::decode(&tl.undo[off as usize..], lsn).unwrap();
                if r.page == pid {
                    redo(&mut p, &r).unwrap();
                    page::set_lsn(&mut p, lsn);
                }
            }
            let g = pool.fix(pid, Mode::S).unwrap();
            assert_eq!(&p[HEADER_END..], &g.page()[HEADER_END..], "page {pid}");
        }
    }

    const HEADER_END: usize = page::HEADER;
}
