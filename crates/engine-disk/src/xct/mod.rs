//! Transactions: the `api::Worker` of the disk engine. Owns begin/commit/abort, the one
//! place that takes locks (strict 2PL, next-key locking on index keys), the per-txn log
//! context (`TxnLog`: prev-LSN chain, in-memory undo copy, CLR mode) and rollback.
//! It must never hold a page latch while it waits for a lock: every lock call happens
//! between B-tree/heap calls, and scans re-validate the leaf (by its LSN) after locking.
//!
//! Locks (all `LockId::Key`, the lock manager adds IS/IX on table and database):
//! point read S on the key (an absent key's own lock blocks its insert), scan S on each
//! key returned plus the first key past the range (or the index's end-of-index lock),
//! insert X on the new key and an instant X on the next key, delete X on the key and on
//! the next key, update X on the key. Secondary entries: the same on the secondary key,
//! plus S (X) on the row's primary key for reads (writes).

pub mod txnlog;

use crate::btree::{self, From, TKey, Tree};
use crate::db::Inner;
use crate::heap::{self, Rid};
use crate::lock::{LockId, LockMode, TxnLocks};
use crate::log::{Kind, Rec};
use api::{Dir, Error, IndexId, Result, TableId};
use std::hash::Hasher;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;
pub use txnlog::{TxnLog, TxnSlot};

/// Undo one record (runtime rollback and restart undo); `tl` is in CLR mode.
pub fn undo_one(e: &Inner, tl: &mut TxnLog, r: &Rec<'_>) -> Result<()> {
    let (pool, log) = (&e.pool, &*e.log);
    match r.kind {
        Kind::HeapInsert => heap::undo_insert(pool, log, tl, r),
        Kind::HeapDelete => heap::undo_delete(pool, log, tl, r),
        Kind::HeapUpdate => heap::undo_update(pool, log, tl, r),
        Kind::BtInsert | Kind::BtDelete => {
            let t = e
                .tables
                .get(r.table as usize)
                .and_then(|t| t.trees.get(r.index as usize))
                .ok_or_else(|| Error::fatal(format!("log record {} names no index", r.lsn)))?;
            let n = r.payload.len() - 8;
            let (k, v) = (
                &r.payload[..n],
                u64::from_le_bytes(r.payload[n..].try_into().unwrap()),
            );
            let ok = if r.kind == Kind::BtInsert {
                btree::delete(pool, log, tl, t, k)?.is_some()
            } else {
                btree::insert(pool, log, tl, t, k, v)?
            };
            if !ok {
                return Err(Error::fatal(format!(
                    "undo of log record {} found the index in an unexpected state",
                    r.lsn
                )));
            }
            Ok(())
        }
        k => panic!("undo of a {k:?} record"),
    }
}

pub fn key_hash(k: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(k);
    h.write_usize(k.len());
    let v = h.finish();
    if v == END_HASH {
        v - 1
    } else {
        v
    }
}
/// The lock standing for "past the last key" of an index.
const END_HASH: u64 = u64::MAX;

pub struct DiskWorker<'e> {
    e: &'e Inner,
    tl: TxnLog,
    locks: TxnLocks,
    active: bool,
    wrote: bool,
    /// An analytical query's request (`Worker::read_only_committed`): read locks of
    /// short duration. (`Worker::read_committed`, TPC-C's Stock-Level hint, changes
    /// nothing here: its locks stay to the end, as the lock statistics count them.)
    short_reads: bool,
    cur_pages: Vec<u64>,
    freed: Vec<(u32, Rid)>,
    rec: Vec<u8>,
    old: Vec<u8>,
    scratch: Vec<u8>,
}

/// Where a row lives inside its heap record (tables with secondary indexes keep the
/// primary key in front of the row: length byte + `MAX_KEY_LEN` bytes).
pub const PK_PREFIX: usize = 1 + api::key::MAX_KEY_LEN;

/// The lock on key `k` of index `index` of `table` (`None`: the index's end, which
/// next-key locking takes past the last key).
fn key_lock(table: u32, index: u16, k: Option<&[u8]>) -> LockId {
    LockId::Key {
        table,
        index,
        hash: k.map_or(END_HASH, key_hash),
    }
}

impl<'e> DiskWorker<'e> {
    pub fn new(e: &'e Inner) -> Self {
        let slot = Arc::new(TxnSlot::default());
        crate::latch::lock(&e.slots).push(slot.clone());
        DiskWorker {
            e,
            tl: TxnLog::new(slot),
            // The owner id names this worker's requests in the lock table for good (its
            // inherited locks outlive transactions): unique, so one taken from the
            // transaction-id counter.
            locks: TxnLocks::new(e.next_txn.fetch_add(1, Ordering::Relaxed)),
            active: false,
            wrote: false,
            short_reads: false,
            cur_pages: vec![crate::page::NO_PAGE; e.tables.len()],
            freed: Vec::new(),
            rec: Vec::new(),
            old: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn lock(&mut self, table: u32, index: u16, k: Option<&[u8]>, m: LockMode) -> Result<()> {
        self.e
            .locks
            .lock(&mut self.locks, key_lock(table, index, k), m)
    }

    /// An S lock for reading one row. With short reads, a lock this transaction did not
    /// hold before is returned, to be given back once the row is read (`read_done`): the
    /// row read is committed (a writer holds X on its key to its commit, and no writer
    /// gets X while we hold S), and nothing is held to the end, so writers do not wait
    /// for a long query. A lock held before (the transaction's own write's, or a read's
    /// before the request) stays.
    fn read_lock(&mut self, table: u32, index: u16, k: Option<&[u8]>) -> Result<Option<LockId>> {
        let id = key_lock(table, index, k);
        let short = self.short_reads && self.locks.held(id).is_none();
        self.e.locks.lock(&mut self.locks, id, LockMode::S)?;
        Ok(short.then_some(id))
    }

    /// Give back a short read lock (`read_lock`).
    fn read_done(&mut self, id: Option<LockId>) {
        if let Some(id) = id {
            self.e.locks.unlock(&mut self.locks, id);
        }
    }

    fn lock_instant(
        &mut self,
        table: u32,
        index: u16,
        k: Option<&[u8]>,
        m: LockMode,
    ) -> Result<()> {
        self.e
            .locks
            .lock_instant(&mut self.locks, key_lock(table, index, k), m)
    }

    fn check_active(&self) {
        assert!(self.active, "operation outside a transaction");
    }

    fn table(&self, t: TableId) -> Result<&'e crate::db::TableRt> {
        self.e
            .tables
            .get(t.0 as usize)
            .ok_or_else(|| Error::fatal(format!("no table {}", t.0)))
    }

    /// Secondary key `i` of a row (with the primary key appended if non-unique).
    fn sec_key(&self, t: TableId, i: usize, pk: &[u8], row: &[u8]) -> Result<TKey> {
        let def = &self.e.schema.table(t).secondary[i];
        let mut k = api::Key::new();
        (def.key_of)(row, &mut k);
        let mut buf = [0u8; btree::MAX_TREE_KEY];
        let n = k.len();
        buf[..n].copy_from_slice(&k);
        if def.unique {
            return Ok(TKey::new(&buf[..n]));
        }
        buf[n..n + pk.len()].copy_from_slice(pk);
        Ok(TKey::new(&buf[..n + pk.len()]))
    }

    /// S-lock the first key past the upper bound `hi` (or the end of the index).
    fn lock_past(&mut self, tr: &Tree, hi: Bound<&[u8]>) -> Result<()> {
        let from = match hi {
            Bound::Unbounded => return self.lock(tr.table, tr.index, None, LockMode::S),
            Bound::Included(k) => From::Excl(k),
            Bound::Excluded(k) => From::Incl(k),
        };
        self.lock_first(tr, from, LockMode::S, false)
    }

    /// Lock (mode `m`, instant or not) the key after `k` in index `tr`.
    fn lock_next(&mut self, tr: &Tree, k: &[u8], m: LockMode, instant: bool) -> Result<()> {
        self.lock_first(tr, From::Excl(k), m, instant)
    }

    /// Lock (mode `m`, instant or not) the first key at or after `from` in index `tr` (or
    /// the end-of-index lock), making sure it is still the first once locked. The lock
    /// may have waited for a transaction that removed that key (a rollback of its insert,
    /// a delete), or another may have committed a key into the gap before it: the gap
    /// then ends at another key, which must be locked instead, or an insert would slip
    /// past a scanner's lock on the far end of the gap (a phantom).
    fn lock_first(&mut self, tr: &Tree, from: From<'_>, m: LockMode, instant: bool) -> Result<()> {
        let pool = &self.e.pool;
        let (mut first, mut start) = btree::seek_with_start(pool, tr, from, true)?;
        loop {
            let fk = first.as_ref().map(|f| f.key);
            let fk = fk.as_ref().map(|k| k.as_bytes());
            if instant {
                self.lock_instant(tr.table, tr.index, fk, m)?;
            } else {
                self.lock(tr.table, tr.index, fk, m)?;
            }
            // Found (or the index's end met) in the leaf the seek began in, and that leaf
            // unchanged: nothing entered the gap.
            if btree::start_unchanged(pool, &start)? {
                return Ok(());
            }
            let again = btree::seek_with_start(pool, tr, from, true)?;
            if again.0.as_ref().map(|f| f.key.as_bytes()) == fk {
                return Ok(());
            }
            (first, start) = again;
        }
    }
}

/// Where a scan goes on: past the last key it returned, else from its start bound.
fn resume<'a>(last: &'a Option<TKey>, start: Bound<&'a [u8]>) -> From<'a> {
    match (last, start) {
        (Some(k), _) => From::Excl(k.as_bytes()),
        (None, Bound::Unbounded) => From::Start,
        (None, Bound::Included(k)) => From::Incl(k),
        (None, Bound::Excluded(k)) => From::Excl(k),
    }
}

fn in_range(k: &[u8], end: Bound<&[u8]>, forward: bool) -> bool {
    match (end, forward) {
        (Bound::Unbounded, _) => true,
        (Bound::Included(e), true) => k <= e,
        (Bound::Excluded(e), true) => k < e,
        (Bound::Included(e), false) => k >= e,
        (Bound::Excluded(e), false) => k > e,
    }
}

impl api::Worker for DiskWorker<'_> {
    fn schema(&self) -> &api::Schema {
        &self.e.schema
    }

    fn begin(&mut self) -> Result<()> {
        assert!(!self.active, "begin inside a transaction");
        let txn = self.e.next_txn.fetch_add(1, Ordering::Relaxed);
        self.tl.txn = txn;
        self.tl.slot.last.store(0, Ordering::Relaxed);
        self.tl.slot.first.store(0, Ordering::Relaxed);
        self.tl.slot.txn.store(txn, Ordering::Release);
        self.tl.undo.clear();
        self.tl.offs.clear();
        self.tl.clr = None;
        self.locks.reset(txn);
        self.active = true;
        self.wrote = false;
        self.short_reads = false;
        Ok(())
    }

    fn read_only_committed(&mut self) {
        self.short_reads = true;
    }

    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        self.check_active();
        let t = self.table(table)?;
        let l = self.read_lock(table.0, 0, Some(key))?;
        let found = match btree::lookup(&self.e.pool, &t.trees[0], key)? {
            None => false,
            Some(v) => {
                let off = t.row_off;
                heap::read(&self.e.pool, Rid::unpack(v), |r| f(&r[off..]))?;
                true
            }
        };
        self.read_done(l);
        Ok(found)
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
        self.check_active();
        let t = self.table(index.table)?;
        debug_assert!(api::session::scan_checked(&self.e.schema, index));
        let tr = t.trees[index.index as usize];
        let forward = dir == Dir::Forward;
        let (start, end) = if forward { (lo, hi) } else { (hi, lo) };
        if !forward && !self.short_reads {
            // Next-key locking protects a gap by the key above it: a backward scan must
            // also lock the first key at or past its upper end. (Short reads leave
            // phantoms unprotected.)
            self.lock_past(&tr, hi)?;
        }
        let mut last: Option<TKey> = None;
        let mut n = 0;
        let pool = &self.e.pool;
        // The next entry read from the current leaf (saves a descent per entry).
        let mut cand: Option<btree::Found> = None;
        while n < limit {
            let from = resume(&last, start);
            let (e, crossed) = match cand.take() {
                Some(e) => (e, false),
                None => match btree::seek_with_start(pool, &tr, from, forward)? {
                    (Some(e), start) => (e, start.crossed),
                    (None, _) if self.short_reads => break, // no phantom protection to take
                    (None, _) => {
                        // Past the last key: lock the end of the index, then make sure
                        // nothing appeared meanwhile.
                        self.lock(tr.table, tr.index, None, LockMode::S)?;
                        let from = resume(&last, start);
                        if btree::seek(pool, &tr, from, forward)?.is_none() {
                            break;
                        }
                        continue;
                    }
                },
            };
            let k = e.key.as_bytes();
            let kl = self.read_lock(tr.table, tr.index, Some(k))?;
            let Some(next) = btree::revalidate(pool, &e, forward)? else {
                self.read_done(kl);
                continue; // the leaf changed while we waited: look again
            };
            // The lock on `e` guards the gap before it only if `e` still follows the last
            // key: an unchanged leaf proves it unless the seek that found `e` began in
            // another leaf, where a key may have been inserted and committed between the
            // seek and the lock. Look again then.
            if crossed && !self.short_reads {
                let from = resume(&last, start);
                let again = btree::seek(pool, &tr, from, forward)?;
                if again.as_ref().map(|f| f.key.as_bytes()) != Some(k) {
                    continue; // a key appeared in the gap: look again (and lock it)
                }
            }
            if !in_range(k, end, forward) {
                self.read_done(kl);
                break; // the key past the range is locked: no phantoms
            }
            let rid = Rid::unpack(e.val);
            let mut pl = None;
            if index.index != 0 {
                let mut pk = [0u8; api::key::MAX_KEY_LEN];
                let pkn = heap::read(pool, rid, |r| {
                    let n = r[0] as usize;
                    pk[..n].copy_from_slice(&r[1..1 + n]);
                    n
                })?;
                pl = self.read_lock(tr.table, 0, Some(&pk[..pkn]))?;
            }
            let off = t.row_off;
            let go = heap::read(pool, rid, |r| f(k, &r[off..]))?;
            self.read_done(pl);
            self.read_done(kl);
            n += 1;
            last = Some(e.key);
            cand = next;
            if !go {
                break;
            }
        }
        Ok(n)
    }

    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        self.check_active();
        let t = self.table(table)?;
        if row.len() != t.row_size {
            return Err(Error::fatal(format!(
                "row of {} bytes, table wants {}",
                row.len(),
                t.row_size
            )));
        }
        if key.len() > api::key::MAX_KEY_LEN {
            return Err(Error::fatal(format!("key of {} bytes", key.len())));
        }
        let pool = &self.e.pool;
        let log = &*self.e.log;
        self.lock(table.0, 0, Some(key), LockMode::X)?;
        if {
            let _d = api::session::descent();
            btree::lookup(pool, &t.trees[0], key)?
        }
        .is_some()
        {
            return Err(Error::Duplicate);
        }
        let nsec = t.trees.len() - 1;
        let mut seck = [TKey::new(&[]); crate::catalog::MAX_INDEXES];
        #[allow(clippy::needless_range_loop)] // i is also the index number
        for i in 0..nsec {
            seck[i] = self.sec_key(table, i, key, row)?;
            self.lock(table.0, i as u16 + 1, Some(seck[i].as_bytes()), LockMode::X)?;
            let _d = api::session::descent();
            if btree::lookup(pool, &t.trees[i + 1], seck[i].as_bytes())?.is_some() {
                return Err(Error::Duplicate);
            }
        }
        self.rec.clear();
        if t.row_off > 0 {
            self.rec.push(key.len() as u8);
            self.rec.extend_from_slice(key);
            self.rec.resize(PK_PREFIX, 0);
        }
        self.rec.extend_from_slice(row);
        self.wrote = true;
        let rid = t.heap.insert(
            pool,
            log,
            &mut self.tl,
            &mut self.cur_pages[table.0 as usize],
            &self.rec,
        )?;
        for i in 0..=nsec {
            let tr = &t.trees[i];
            let k = if i == 0 { key } else { seck[i - 1].as_bytes() };
            if !btree::insert(pool, log, &mut self.tl, tr, k, rid.pack())? {
                panic!(
                    "index {i} of table {} gained key {k:02x?} under our X lock",
                    table.0
                );
            }
            self.lock_next(tr, k, LockMode::X, true)?;
        }
        Ok(())
    }

    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        self.check_active();
        let t = self.table(table)?;
        self.lock(table.0, 0, Some(key), LockMode::X)?;
        let found = {
            let _d = api::session::descent();
            btree::lookup(&self.e.pool, &t.trees[0], key)?
        };
        let Some(v) = found else {
            return Ok(false);
        };
        let rid = Rid::unpack(v);
        let mut g = heap::fix_record(&self.e.pool, rid)?;
        let off = t.row_off;
        self.old.clear();
        self.old
            .extend_from_slice(heap::record_mut(&mut g, rid.slot));
        f(&mut heap::record_mut(&mut g, rid.slot)[off..]);
        for i in 0..t.trees.len() - 1 {
            let new = &heap::record_mut(&mut g, rid.slot)[off..];
            let a = self.sec_key(table, i, key, &self.old[off..])?;
            let b = self.sec_key(table, i, key, new)?;
            if a.as_bytes() != b.as_bytes() {
                heap::record_mut(&mut g, rid.slot).copy_from_slice(&self.old);
                return Err(Error::fatal("update changed a secondary key"));
            }
        }
        self.wrote = true;
        heap::log_update(
            &self.e.log,
            &mut self.tl,
            &mut g,
            rid.slot,
            table.0,
            &self.old,
            &mut self.scratch,
        );
        Ok(true)
    }

    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        self.check_active();
        let t = self.table(table)?;
        let pool = &self.e.pool;
        let log = &*self.e.log;
        self.lock(table.0, 0, Some(key), LockMode::X)?;
        let found = {
            let _d = api::session::descent();
            btree::lookup(pool, &t.trees[0], key)?
        };
        let Some(v) = found else {
            return Ok(false);
        };
        let rid = Rid::unpack(v);
        let mut old = std::mem::take(&mut self.old);
        old.clear();
        heap::read(pool, rid, |r| old.extend_from_slice(r))?;
        let nsec = t.trees.len() - 1;
        let mut seck = [TKey::new(&[]); crate::catalog::MAX_INDEXES];
        #[allow(clippy::needless_range_loop)] // i is also the index number
        for i in 0..nsec {
            seck[i] = self.sec_key(table, i, key, &old[t.row_off..])?;
            self.lock(table.0, i as u16 + 1, Some(seck[i].as_bytes()), LockMode::X)?;
        }
        self.old = old;
        self.wrote = true;
        for i in 0..=nsec {
            let tr = &t.trees[i];
            let k = if i == 0 { key } else { seck[i - 1].as_bytes() };
            self.lock_next(tr, k, LockMode::X, false)?;
            if btree::delete(pool, log, &mut self.tl, tr, k)?.is_none() {
                panic!(
                    "index {i} of table {} lost key {k:02x?} under our X lock",
                    table.0
                );
            }
        }
        heap::delete(pool, log, &mut self.tl, table.0, rid, &mut self.scratch)?;
        self.freed.push((table.0, rid));
        Ok(true)
    }

    fn commit(&mut self) -> Result<()> {
        assert!(self.active, "commit outside a transaction");
        // A log or page write failed (full disk, failed fsync): nothing more may be
        // acknowledged, whatever the log mode.
        if self.e.failed() {
            let why = self.e.failure().unwrap_or_else(|| "a write failed".into());
            return Err(api::Error::fatal(why));
        }
        if self.wrote {
            let lsn = self.tl.log_txn_end(&self.e.log, Kind::Commit);
            if self.e.log.mode() == api::LogMode::Sync {
                self.e.log.flush_to(lsn + 1)?;
            }
        }
        self.finish();
        for (t, rid) in self.freed.drain(..) {
            crate::latch::lock(&self.e.tables[t as usize].heap.free).push(rid);
        }
        self.e.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn abort(&mut self) {
        if !self.active {
            return;
        }
        if let Err(e) = self.rollback() {
            if self.e.log.is_detached() {
                // The engine was crashed on purpose (test hook): restart recovery will
                // roll this transaction back.
                self.freed.clear();
                self.finish();
                return;
            }
            // A write or read failed under the rollback (full disk, I/O error): the
            // engine stops acknowledging anything (every later commit reports this), and
            // restart recovery rolls the transaction back from the log.
            self.e.fail(format!(
                "rollback failed: {e}; reopen the database to recover"
            ));
            self.freed.clear();
            self.finish();
            return;
        }
        self.freed.clear();
        self.finish();
        self.e.aborts.fetch_add(1, Ordering::Relaxed);
    }
}

impl DiskWorker<'_> {
    fn rollback(&mut self) -> Result<()> {
        self.freed.clear(); // rows this transaction deleted come back: not free
        let undo = std::mem::take(&mut self.tl.undo);
        let offs = std::mem::take(&mut self.tl.offs);
        for &off in offs.iter().rev() {
            let off = off as usize;
            let lsn = crate::page::get_u64(&undo, off + 8);
            let r = Rec::decode(&undo[off..], lsn).expect("undo copy of a log record is intact");
            self.tl.clr = Some(r.prev);
            undo_one(self.e, &mut self.tl, &r)?;
            if r.kind == Kind::HeapInsert {
                self.freed.push((
                    r.table,
                    Rid {
                        page: r.page,
                        slot: r.slot,
                    },
                ));
            }
        }
        self.tl.clr = None;
        if !offs.is_empty() {
            self.tl.log_txn_end(&self.e.log, Kind::End);
        }
        for (t, rid) in self.freed.drain(..) {
            crate::latch::lock(&self.e.tables[t as usize].heap.free).push(rid);
        }
        self.tl.undo = undo;
        self.tl.offs = offs;
        Ok(())
    }

    fn finish(&mut self) {
        if txnstats::armed() {
            let c = self.locks.counts();
            txnstats::add(txnstats::Counter::RowLocks, c.fine);
            txnstats::add(txnstats::Counter::HigherLocks, c.coarse);
            txnstats::add(txnstats::Counter::Escalations, c.escalations);
        }
        self.e.locks.release_all(&mut self.locks);
        self.tl.slot.txn.store(0, Ordering::Release);
        self.tl.undo.clear();
        self.tl.offs.clear();
        self.active = false;
    }
}

impl Drop for DiskWorker<'_> {
    fn drop(&mut self) {
        api::Worker::abort(self);
        self.e.locks.release_kept(&mut self.locks);
        crate::latch::lock(&self.e.slots).retain(|s| !Arc::ptr_eq(s, &self.tl.slot));
    }
}
