//! `xct`: a worker's transaction operations. `begin` publishes the worker's read
//! timestamp; reads walk a key's chain to the newest version committed at or before it
//! (or the worker's own uncommitted one) and remember what they saw (read set); absent
//! keys and scans remember the index leaves or buckets they saw (node set); updates,
//! deletes and inserts over a deleted key put a new uncommitted version at the head of
//! the chain, but only if the head is the version this snapshot sees (first writer
//! wins: anything else is a conflict); inserts of a new key put a new object into the
//! indexes at once. Commit and abort are in `validate`, garbage collection in `gc`.
//!
//! This module must never change a committed version, and never let another worker
//! see an uncommitted one.

use crate::catalog::Table;
use crate::version::{
    committing_ts, is_committed, owner, Obj, Version, ABORTED, COMMITTING, PENDING,
};
use crate::{AbortReason, MvccEngine, WorkerStats};
use api::key::{Key, MAX_KEY_LEN};
use api::{Dir, Error, IndexId, Result, TableId, Worker};
use crossbeam_epoch::Guard;
use memindex::btree::NodeChange;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::Ordering::*;

/// A version this transaction read (null: none visible) in an object's chain.
#[derive(Clone, Copy)]
pub(crate) struct ReadEntry {
    pub obj: *const Obj,
    pub seen: *mut Version,
}

/// A version this transaction put at the head of an object's chain.
#[derive(Clone, Copy)]
pub(crate) struct WriteEntry {
    pub obj: *mut Obj,
    pub ver: *mut Version,
    pub table: u32,
    /// The object is new (an insert of an absent key): an abort takes it out of the
    /// indexes.
    pub created: bool,
}

/// A committed write, for garbage collection once every transaction can see it.
#[derive(Clone, Copy)]
pub(crate) struct GcEntry {
    pub obj: *mut Obj,
    pub table: u32,
    pub ts: u64,
}

pub struct MvccWorker<'e> {
    pub(crate) e: &'e MvccEngine,
    pub(crate) id: usize,
    /// The owner tag of this worker's uncommitted versions.
    pub(crate) me: u64,
    pub(crate) guard: Option<Guard>,
    pub(crate) epoch: crossbeam_epoch::LocalHandle,
    pub(crate) rts: u64,
    pub(crate) reads: Vec<ReadEntry>,
    pub(crate) nodes: memindex::NodeSet,
    pub(crate) writes: Vec<WriteEntry>,
    pub(crate) gcq: VecDeque<GcEntry>,
    pub(crate) commits_since_gc: u32,
    pub(crate) abort_reason: Option<AbortReason>,
}

/// The version of `o` a transaction with read timestamp `rts` run by worker `me` sees:
/// its own uncommitted one, else the newest committed at or before `rts` (null: none).
/// Waits (through `rt`) for a version whose transaction is taking a commit timestamp
/// that may be at or below `rts`: committers never wait for readers, so this ends.
pub(crate) fn visible(o: &Obj, rts: u64, me: u64) -> *mut Version {
    let mut v = o.head.load(Acquire);
    while !v.is_null() {
        // SAFETY: reached through a pinned object; versions are retired via the epoch.
        let ver = unsafe { &*v };
        loop {
            let b = ver.begin.load(Acquire);
            if is_committed(b) {
                if b <= rts {
                    return v;
                }
                break;
            }
            if b == ABORTED {
                break;
            }
            if b & COMMITTING == 0 {
                if owner(b) == me {
                    return v;
                }
                // Another's uncommitted version: its commit timestamp, taken after it is
                // marked committing, will be above every read timestamp taken so far.
                break;
            }
            let ts = committing_ts(b);
            if ts != 0 && ts > rts {
                break;
            }
            rt::wait_until(rt::WaitKind::Other, None, || ver.begin.load(Acquire) != b);
        }
        v = ver.next.load(Acquire);
    }
    std::ptr::null_mut()
}

#[inline]
fn is_mine(v: *mut Version, me: u64) -> bool {
    // SAFETY: callers pass versions reached while pinned.
    let b = unsafe { (*v).begin.load(Relaxed) };
    b & (PENDING | COMMITTING) == PENDING && owner(b) == me
}

#[inline]
fn is_tomb(v: *mut Version) -> bool {
    // SAFETY: as above.
    unsafe { (*v).tomb.load(Relaxed) }
}

/// Do `old` and `new` rows give the same secondary keys?
pub(crate) fn same_secondary_keys(t: &Table, key: &[u8], old: &[u8], new: &[u8]) -> bool {
    let (mut a, mut b) = (Key::new(), Key::new());
    t.secondary.iter().all(|s| {
        s.entry_key(key, old, &mut a);
        s.entry_key(key, new, &mut b);
        a == b
    })
}

/// Take object `o` (primary key `key`, a row `row` of it) out of the table's indexes.
/// `prune`: emptied B+tree leaves leave the tree (collected deletes, not undone inserts:
/// see memindex's `BTree::remove_and_prune`).
/// `on_change` gets each leaf or bucket change (a transaction forgives its own).
pub(crate) fn unindex(
    t: &Table,
    key: &[u8],
    row: &[u8],
    o: *mut Obj,
    prune: bool,
    g: &Guard,
    mut on_change: impl FnMut(NodeChange),
) {
    if let Some(c) = t.primary.remove(key, o as u64, prune, g) {
        on_change(c);
    }
    let mut sk = Key::new();
    for s in &t.secondary {
        s.entry_key(key, row, &mut sk);
        if let Some(c) = s.index.remove(&sk, o as u64, prune, g) {
            on_change(c);
        }
    }
}

impl<'e> MvccWorker<'e> {
    pub(crate) fn new(e: &'e MvccEngine, id: usize) -> Self {
        MvccWorker {
            e,
            id,
            me: id as u64,
            guard: None,
            epoch: crossbeam_epoch::default_collector().register(),
            rts: 0,
            reads: Vec::with_capacity(256),
            nodes: memindex::NodeSet::with_capacity(64),
            writes: Vec::with_capacity(64),
            gcq: VecDeque::with_capacity(1024),
            commits_since_gc: 0,
            abort_reason: None,
        }
    }

    pub(crate) fn stats(&self) -> &'e WorkerStats {
        &self.e.stats[self.id]
    }

    /// The B+tree a scan of `index` walks (a scanned table's primary index is one:
    /// `Session` checks; secondary indexes always are).
    fn scan_tree(&self, index: IndexId) -> &'e memindex::btree::BTree {
        let t = self.table(index.table);
        let ix = if index.index == 0 {
            &t.primary
        } else {
            &t.secondary[index.index as usize - 1].index
        };
        let crate::catalog::Index::BTree(tree) = ix else {
            unreachable!("secondary indexes are B+trees")
        };
        tree
    }

    fn table(&self, t: TableId) -> &'e Table {
        let e: &'e MvccEngine = self.e;
        e.catalog
            .tables
            .get(t.0 as usize)
            .unwrap_or_else(|| panic!("table id {} not in the schema", t.0))
    }

    pub(crate) fn conflict(&mut self, r: AbortReason, why: &'static str) -> Error {
        self.abort_reason = Some(r);
        Error::Conflict(why)
    }

    /// Remember that this transaction saw `seen` (null: nothing) as `o`'s visible
    /// version; its own versions need no check.
    #[inline]
    fn note_read(&mut self, o: &Obj, seen: *mut Version) {
        if seen.is_null() || !is_mine(seen, self.me) {
            self.reads.push(ReadEntry { obj: o, seen });
        }
    }

    /// Put a new uncommitted version of `o` over `head` (the version this snapshot
    /// sees, committed). Fails if another writer got there first.
    fn install(
        &mut self,
        o: &Obj,
        head: *mut Version,
        tomb: bool,
        row: &[u8],
        table: TableId,
    ) -> std::result::Result<*mut Version, ()> {
        let nv = Version::alloc(PENDING | self.me, head, tomb, row);
        if o.head.compare_exchange(head, nv, AcqRel, Acquire).is_err() {
            // SAFETY: never published.
            unsafe { Version::free(nv) };
            return Err(());
        }
        o.refs.fetch_add(1, AcqRel);
        self.writes.push(WriteEntry {
            obj: o as *const Obj as *mut Obj,
            ver: nv,
            table: table.0,
            created: false,
        });
        Ok(nv)
    }

    /// The version of `o` to write over, if this transaction may: the head, committed
    /// and visible to this snapshot. Anything else is another writer's (or a newer
    /// commit's): first writer wins.
    fn writable_head(&mut self, o: &Obj, visible: *mut Version) -> Result<*mut Version> {
        let h = o.head.load(Acquire);
        if h.is_null() || h != visible {
            return Err(self.conflict(
                AbortReason::WriteConflict,
                "write-write conflict: the key has a newer or uncommitted version",
            ));
        }
        Ok(h)
    }

    /// Insert found `existing` under the primary key.
    fn insert_over(
        &mut self,
        t: &Table,
        table: TableId,
        key: &[u8],
        row: &[u8],
        existing: u64,
    ) -> Result<()> {
        // SAFETY: found by a pinned lookup.
        let o = unsafe { Obj::from_u64(existing) };
        let v = visible(o, self.rts, self.me);
        if v.is_null() {
            // An uncommitted insert by another, a key being collected, or one inserted
            // after this snapshot.
            return Err(self.conflict(
                AbortReason::WriteConflict,
                "insert: key held by another writer",
            ));
        }
        if !is_tomb(v) {
            self.note_read(o, v);
            return Err(Error::Duplicate);
        }
        // SAFETY: visible, so committed or this worker's own.
        let old = unsafe { (*v).row() };
        if !same_secondary_keys(t, key, old, row) {
            return Err(Error::fatal(format!(
                "table {}: re-inserting a deleted key with different secondary keys is not supported by the mvcc engine",
                t.name
            )));
        }
        if is_mine(v, self.me) {
            // Re-insert of a key this transaction deleted: its version becomes the row.
            // SAFETY: this worker's own uncommitted version.
            unsafe { (*v).row_mut().copy_from_slice(row) };
            // SAFETY: as above.
            unsafe { (*v).tomb.store(false, Relaxed) };
            return Ok(());
        }
        let h = self.writable_head(o, v)?;
        self.install(o, h, false, row, table).map_err(|_| {
            self.conflict(
                AbortReason::WriteConflict,
                "insert: another writer got there first",
            )
        })?;
        Ok(())
    }
}

impl Worker for MvccWorker<'_> {
    fn schema(&self) -> &api::Schema {
        &self.e.schema
    }

    fn begin(&mut self) -> Result<()> {
        assert!(self.guard.is_none(), "begin inside a transaction");
        self.guard = Some(self.epoch.pin());
        let (clock, slot) = (&self.e.clock, &self.e.active[self.id]);
        // Publish the read timestamp before using it: a collector that read the clock
        // before this slot was set read a value no larger (the clock is read again
        // after publishing), so it keeps everything this snapshot can see.
        loop {
            let c = clock.load(SeqCst);
            slot.store(c, SeqCst);
            if clock.load(SeqCst) == c {
                self.rts = c;
                break;
            }
        }
        Ok(())
    }

    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        debug_assert!(key.len() <= MAX_KEY_LEN, "Session checks key lengths");
        let t = self.table(table);
        let g = self.guard.as_ref().expect("get outside a transaction");
        let (hit, ver, nv) = t.primary.get(key, g);
        let Some(o) = hit else {
            self.nodes.push(ver, nv);
            return Ok(false);
        };
        // SAFETY: found by a pinned lookup.
        let o = unsafe { Obj::from_u64(o) };
        let v = visible(o, self.rts, self.me);
        self.note_read(o, v);
        if v.is_null() || is_tomb(v) {
            // The key may also leave the index (collected) and come back as a new object.
            self.nodes.push(ver, nv);
            return Ok(false);
        }
        // SAFETY: visible: committed (immutable) or this worker's own.
        f(unsafe { (*v).row() });
        Ok(true)
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
        debug_assert!(api::session::scan_checked(&self.e.schema, index));
        assert!(self.guard.is_some(), "scan outside a transaction");
        let tree = self.scan_tree(index);
        if limit == 0 {
            return Ok(0);
        }
        let (rts, me) = (self.rts, self.me);
        let mut n = 0usize;
        let Self { reads, nodes, .. } = self;
        tree.scan_hint(
            lo,
            hi,
            dir == Dir::Forward,
            limit,
            &mut |ver, v| nodes.push(ver, v),
            &mut |k, val| {
                // SAFETY: an entry of a pinned scan.
                let o = unsafe { Obj::from_u64(val) };
                let v = visible(o, rts, me);
                if v.is_null() || !is_mine(v, me) {
                    reads.push(ReadEntry { obj: o, seen: v });
                }
                if v.is_null() || is_tomb(v) {
                    return true;
                }
                n += 1;
                // SAFETY: visible: committed or own.
                f(k, unsafe { (*v).row() }) && n < limit
            },
        );
        Ok(n)
    }

    /// On a thread per part while the transaction has written nothing (every version
    /// it sees is committed at or before its read timestamp: the same snapshot on every
    /// thread). Each thread pins the epoch itself and keeps what a serial scan records
    /// (index node versions, objects read); they join the transaction's sets after the
    /// threads end, so validation at commit is the serial scan's.
    fn scan_parts(
        &mut self,
        index: IndexId,
        parts: &[api::engine::KeyRange<'_>],
        sinks: &mut [&mut api::engine::ScanSink<'_>],
    ) -> Result<bool> {
        assert!(self.guard.is_some(), "scan outside a transaction");
        if !self.writes.is_empty() {
            return Ok(false);
        }
        debug_assert!(api::session::scan_checked(&self.e.schema, index));
        let tree = self.scan_tree(index);
        let (rts, me) = (self.rts, self.me);
        // Addresses as integers to cross the threads' ends (the objects and node words
        // stay alive: this transaction's guard is pinned throughout).
        type Seen = (Vec<(usize, u64)>, Vec<(usize, usize)>);
        let seen: Vec<Seen> = std::thread::scope(|sc| {
            let handles: Vec<_> = parts
                .iter()
                .zip(sinks.iter_mut())
                .map(|(&(lo, hi), f)| {
                    sc.spawn(move || {
                        rt::unpin_current();
                        let _g = crossbeam_epoch::pin();
                        let (mut nodes, mut reads) = (Vec::new(), Vec::new());
                        tree.scan_hint(
                            lo,
                            hi,
                            true,
                            usize::MAX,
                            &mut |ver, v| nodes.push((ver as usize, v)),
                            &mut |k, val| {
                                // SAFETY: an entry of a pinned scan.
                                let o = unsafe { Obj::from_u64(val) };
                                let v = visible(o, rts, me);
                                reads.push((o as *const Obj as usize, v as usize));
                                if !v.is_null() && !is_tomb(v) {
                                    // SAFETY: visible: committed.
                                    f(k, unsafe { (*v).row() });
                                }
                                true
                            },
                        );
                        (nodes, reads)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a scan thread panicked"))
                .collect()
        });
        for (nodes, reads) in seen {
            for (ver, v) in nodes {
                self.nodes
                    .push(ver as *const std::sync::atomic::AtomicU64, v);
            }
            self.reads.extend(reads.into_iter().map(|(o, v)| ReadEntry {
                obj: o as *const Obj,
                seen: v as *mut Version,
            }));
        }
        Ok(true)
    }

    fn insert(&mut self, table: TableId, key: &[u8], row: &[u8]) -> Result<()> {
        debug_assert!(key.len() <= MAX_KEY_LEN, "Session checks key lengths");
        let t = self.table(table);
        if row.len() != t.row_size {
            return Err(Error::fatal(format!(
                "table {}: row of {} bytes, want {}",
                t.name,
                row.len(),
                t.row_size
            )));
        }
        let g = self.guard.as_ref().expect("insert outside a transaction");
        let nv = Version::alloc(PENDING | self.me, std::ptr::null_mut(), false, row);
        let no = Obj::alloc(key, nv);
        match t.primary.insert(key, no as u64, g) {
            Ok(c) => self.nodes.forgive(c),
            Err(existing) => {
                // SAFETY: never published.
                unsafe {
                    Version::free(nv);
                    Obj::free(no);
                }
                return self.insert_over(t, table, key, row, existing);
            }
        }
        let mut sk = Key::new();
        for s in &t.secondary {
            s.entry_key(key, row, &mut sk);
            let existing = match s.index.insert(&sk, no as u64, g) {
                Ok(c) => {
                    self.nodes.forgive(c);
                    continue;
                }
                Err(existing) => existing,
            };
            // A unique secondary key is taken: undo this object (readers may have
            // found it, so it goes through the epoch).
            // (The transaction may go on after a duplicate: its own removals must not
            // fail its phantom check.)
            let nodes = &mut self.nodes;
            unindex(t, key, row, no, false, g, |c| nodes.forgive(c));
            // SAFETY: `no` is ours; readers see a dead object, then an aborted version.
            unsafe {
                (*no).head.store(std::ptr::null_mut(), Release);
                (*nv).begin.store(ABORTED, Release);
            }
            crate::version::retire(nv, g);
            Obj::retire(no, g);
            // SAFETY: found by a pinned lookup.
            let ex = unsafe { Obj::from_u64(existing) };
            let v = visible(ex, self.rts, self.me);
            if !v.is_null() && !is_tomb(v) {
                self.note_read(ex, v);
                return Err(Error::Duplicate);
            }
            return Err(self.conflict(
                AbortReason::WriteConflict,
                "insert: unique secondary key held by another writer or a deleted row",
            ));
        }
        self.writes.push(WriteEntry {
            obj: no,
            ver: nv,
            table: table.0,
            created: true,
        });
        Ok(())
    }

    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        debug_assert!(key.len() <= MAX_KEY_LEN, "Session checks key lengths");
        let t = self.table(table);
        let g = self.guard.as_ref().expect("update outside a transaction");
        let (hit, ver, nv) = {
            let _d = api::session::descent();
            t.primary.get(key, g)
        };
        let Some(o) = hit else {
            self.nodes.push(ver, nv);
            return Ok(false);
        };
        // SAFETY: found by a pinned lookup.
        let o = unsafe { Obj::from_u64(o) };
        let v = visible(o, self.rts, self.me);
        if v.is_null() || is_tomb(v) {
            self.note_read(o, v);
            self.nodes.push(ver, nv);
            return Ok(false);
        }
        if is_mine(v, self.me) {
            // SAFETY: this worker's own uncommitted version.
            let row = unsafe { (*v).row_mut() };
            if t.secondary.is_empty() {
                f(row);
                return Ok(true);
            }
            let old = row.to_vec();
            f(row);
            if !same_secondary_keys(t, key, &old, row) {
                row.copy_from_slice(&old);
                return Err(Error::fatal(format!(
                    "table {}: update changed a secondary key",
                    t.name
                )));
            }
            return Ok(true);
        }
        let h = self.writable_head(o, v)?;
        // SAFETY: committed, immutable.
        let old = unsafe { (*h).row() };
        let nv = Version::alloc(PENDING | self.me, h, false, old);
        // SAFETY: not published yet.
        let row = unsafe { (*nv).row_mut() };
        f(row);
        if !t.secondary.is_empty() && !same_secondary_keys(t, key, old, row) {
            // SAFETY: never published.
            unsafe { Version::free(nv) };
            return Err(Error::fatal(format!(
                "table {}: update changed a secondary key",
                t.name
            )));
        }
        if o.head.compare_exchange(h, nv, AcqRel, Acquire).is_err() {
            // SAFETY: never published.
            unsafe { Version::free(nv) };
            return Err(self.conflict(
                AbortReason::WriteConflict,
                "update: another writer got there first",
            ));
        }
        o.refs.fetch_add(1, AcqRel);
        self.writes.push(WriteEntry {
            obj: o as *const Obj as *mut Obj,
            ver: nv,
            table: table.0,
            created: false,
        });
        Ok(true)
    }

    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        debug_assert!(key.len() <= MAX_KEY_LEN, "Session checks key lengths");
        let t = self.table(table);
        let g = self.guard.as_ref().expect("delete outside a transaction");
        let (hit, ver, nv) = {
            let _d = api::session::descent();
            t.primary.get(key, g)
        };
        let Some(o) = hit else {
            self.nodes.push(ver, nv);
            return Ok(false);
        };
        // SAFETY: found by a pinned lookup.
        let o = unsafe { Obj::from_u64(o) };
        let v = visible(o, self.rts, self.me);
        if v.is_null() || is_tomb(v) {
            self.note_read(o, v);
            self.nodes.push(ver, nv);
            return Ok(false);
        }
        if is_mine(v, self.me) {
            // SAFETY: this worker's own uncommitted version (it keeps the row, whose
            // secondary keys garbage collection needs).
            unsafe { (*v).tomb.store(true, Relaxed) };
            return Ok(true);
        }
        let h = self.writable_head(o, v)?;
        // SAFETY: committed, immutable.
        let old = unsafe { (*h).row() };
        self.install(o, h, true, old, table).map_err(|_| {
            self.conflict(
                AbortReason::WriteConflict,
                "delete: another writer got there first",
            )
        })?;
        Ok(true)
    }

    fn commit(&mut self) -> Result<()> {
        self.commit_txn()
    }

    fn abort(&mut self) {
        self.abort_txn()
    }
}

impl Drop for MvccWorker<'_> {
    fn drop(&mut self) {
        if self.guard.is_some() {
            self.abort_txn();
        }
        self.release_gc_queue();
    }
}
