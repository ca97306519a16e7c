//! `xct`: a worker's transaction operations (get, scan, insert, update, delete) in the
//! Silo style: reads record the TID they saw (read set), absent keys and scans record the
//! index versions they saw (node set), writes are buffered (write set) except inserts,
//! which put an absent record into the indexes at once. Commit is in `occ`.
//!
//! Per-transaction state lives in Vecs reused across transactions (no allocation per
//! operation, except the record an insert creates). This module must never write shared
//! memory on a read, and never make a write visible before commit.

use crate::catalog::TableData;
use crate::record::{row_words, Rec, ABSENT, UNLINKED};
use crate::{AbortReason, MemoryEngine, WorkerStats};
use api::key::{Key, MAX_KEY_LEN};
use api::{Dir, Error, IndexId, IndexKind, Result, TableId, Worker};
use crossbeam_epoch::Guard;
use std::ops::Bound;
use std::sync::atomic::Ordering::*;

/// Write sets up to this size are searched linearly; larger ones through a map. A
/// New-Order's 23 writes stay below it: its 11 updates compare about 120 entries in all,
/// 370 instructions fewer (`simulate`) than building the map at 16.
const LINEAR_WRITES: usize = 32;

#[derive(Clone, Copy)]
pub(crate) struct ReadEntry {
    pub rec: Rec,
    pub tid: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WKind {
    /// A new record, in the indexes as absent until commit. Its record holds the row as
    /// inserted (`TableData::new_record`), so commit need not store it again.
    Insert,
    /// An `Insert` this transaction changed since: commit stores the row.
    InsertChanged,
    Update,
    Delete,
    /// An insert deleted again by the same transaction (already unlinked).
    Dead,
}

impl WKind {
    pub(crate) fn is_insert(self) -> bool {
        matches!(self, WKind::Insert | WKind::InsertChanged)
    }

    /// The write stands for a read of the record: its entry's `locked_tid` is the TID
    /// read, checked like a read-set entry's (no read-set entry was made).
    pub(crate) fn was_read(self) -> bool {
        matches!(self, WKind::Update | WKind::Delete)
    }
}

/// A record read at TID `read` still holds that version when its TID is now `cur`
/// (a locked `cur` does not, unless the caller masked its own lock) and it was not
/// unlinked since: the one test of a read, at commit and before a miss.
#[inline]
pub(crate) fn still_as_read(cur: u64, read: u64) -> bool {
    cur == read && cur & UNLINKED == 0
}

#[derive(Clone, Copy)]
pub(crate) struct WriteEntry {
    pub rec: Rec,
    /// Before commit, an update's or a delete's: the TID of the version its data was read
    /// from (the write stands for that read: no read-set entry; commit compares it with
    /// the TID it finds as it locks). From commit's lock on: the TID the record had when
    /// commit locked it.
    pub locked_tid: u64,
    pub key_off: u32,
    /// Insert/Update: the new row; Delete: the old row (for its secondary keys).
    pub data_off: u32,
    /// The row's words the data holds, `[first, end)`: all of them but for an update
    /// made through `update_part`, which read only the words it changes. Others needing
    /// the whole row complete it first (`complete`).
    pub words: [u16; 2],
    pub table: u16,
    pub kind: WKind,
    pub key_len: u8,
}

// Scanned at every commit (and sorted when its locks are contended): kept to half a cache line.
const _: () = assert!(std::mem::size_of::<WriteEntry>() == 32);

/// The write set's index by record address, for write sets above `LINEAR_WRITES`: open
/// addressing with linear probing over a power-of-two table at most half full, keys and
/// entry numbers in two arrays. A general map (`hashbrown`) took about 60 instructions an
/// insert, 1.4 k per New-Order; this one about 15. It clears the slots it filled, not the
/// table: after a Delivery's 512 slots, zeroing all 4 KiB of keys at every New-Order
/// cost more than the map saved.
#[derive(Default)]
pub(crate) struct WMap {
    /// Record addresses; 0 marks a free slot.
    keys: Vec<u64>,
    /// The write-set entry of the address in the same slot.
    vals: Vec<u32>,
    /// The slots filled, in order.
    used: Vec<u32>,
    /// 64 - log2(slots): a slot is the top bits of the address's hash.
    shift: u32,
}

impl WMap {
    const MIN_SLOTS: usize = 64;
    /// A table grown past this (a load's batch of 500 rows) is dropped at `clear`, not
    /// zeroed: every later transaction with a map would zero that size. A Delivery's 130
    /// writes take 512 slots, kept.
    const KEEP_SLOTS: usize = 512;

    #[inline]
    fn slot(&self, rec: u64) -> usize {
        ((rec >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    pub(crate) fn get(&self, rec: u64) -> Option<u32> {
        if self.used.is_empty() {
            return None;
        }
        let mask = self.keys.len() - 1;
        let mut i = self.slot(rec);
        loop {
            match self.keys[i] {
                k if k == rec => return Some(self.vals[i]),
                0 => return None,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Map `rec` (not 0, not in the map) to entry `v`.
    pub(crate) fn insert(&mut self, rec: u64, v: u32) {
        assert!(rec != 0, "0 marks a free slot");
        if (self.used.len() + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let mask = self.keys.len() - 1;
        let mut i = self.slot(rec);
        while self.keys[i] != 0 {
            debug_assert!(self.keys[i] != rec, "record mapped twice");
            i = (i + 1) & mask;
        }
        self.keys[i] = rec;
        self.vals[i] = v;
        self.used.push(i as u32);
    }

    fn grow(&mut self) {
        let slots = (self.keys.len() * 2).max(Self::MIN_SLOTS);
        let keys = std::mem::replace(&mut self.keys, vec![0; slots]);
        let vals = std::mem::replace(&mut self.vals, vec![0; slots]);
        self.shift = 64 - slots.trailing_zeros();
        for i in std::mem::take(&mut self.used) {
            self.insert(keys[i as usize], vals[i as usize]);
        }
    }

    pub(crate) fn clear(&mut self) {
        if self.keys.len() > Self::KEEP_SLOTS {
            *self = Self::default();
            return;
        }
        for &i in &self.used {
            self.keys[i as usize] = 0;
        }
        self.used.clear();
    }
}

pub struct MemoryWorker<'e> {
    pub(crate) e: &'e MemoryEngine,
    pub(crate) id: usize,
    pub(crate) guard: Option<Guard>,
    /// This worker's own epoch participant. Not the thread's: transactions run as
    /// coroutines overlap on one thread, and a thread-wide participant would then stay
    /// pinned at the epoch of whichever began first (nested guards never repin), so
    /// nothing retired would ever be freed.
    pub(crate) epoch: crossbeam_epoch::LocalHandle,
    pub(crate) reads: Vec<ReadEntry>,
    pub(crate) nodes: memindex::NodeSet,
    pub(crate) writes: Vec<WriteEntry>,
    pub(crate) wmap: WMap,
    pub(crate) arena: Vec<u8>,
    /// A commit's log records before they go to the log buffer (`occ::commit`).
    pub(crate) log_stage: Vec<u8>,
    pub(crate) row: Vec<u8>,
    pub(crate) row2: Vec<u8>,
    /// Hinted hash lookups whose bucket lines were asked for (`prefetch`), in order.
    /// Lookups ask for their records, a few at a time from `hinted_done` on
    /// (`fetch_hinted`).
    pub(crate) hinted: Vec<Hinted>,
    pub(crate) hinted_done: usize,
    /// Hash lookups still to come that give an interleaving scheduler no chance to
    /// switch: one per hint of this transaction (its lines were asked for; the switches
    /// are taken once per burst in `fetch_hinted` instead).
    pub(crate) quiet: u32,
    /// Per table: where this worker's last inserts into its primary B+tree went.
    pub(crate) insert_hints: Vec<memindex::btree::Hints>,
    /// Per table: the B+tree leaves this worker's last point lookups ended in (fingers:
    /// the next lookup nearby starts there instead of at the root).
    pub(crate) look_hints: Vec<memindex::btree::Hints>,
    /// `Worker::read_committed` was called in this transaction: `get` and `scan` record
    /// neither the records nor the index nodes they read (nothing to validate: a stable
    /// read sees only committed rows, as installs happen under the record's lock).
    pub(crate) read_committed: bool,
    /// Commit sorted the write set by address (its locks were contended): `wmap` no
    /// longer names the entries.
    pub(crate) writes_sorted: bool,
    pub(crate) last_tid: u64,
    pub(crate) abort_reason: Option<AbortReason>,
}

/// A hinted lookup (`Worker::prefetch`) whose bucket line was asked for.
#[derive(Clone, Copy)]
pub(crate) struct Hinted {
    pub hash: u64,
    pub table: u32,
    /// The row words the lookup will read, `[first, end)` (all of them: `[0, row words]`).
    pub words: [u16; 2],
    pub key_len: u8,
}

/// Append `row` to the arena at an 8-byte-aligned offset (as `data_slot` places rows)
/// and return that offset; the row is copied once, not zeroed first.
fn push_row(arena: &mut Vec<u8>, row: &[u8]) -> usize {
    let off = arena.len().next_multiple_of(8);
    arena.resize(off, 0);
    arena.extend_from_slice(row);
    off
}

/// The row words that hold the bytes `part`: `[first, end)`.
#[inline]
fn words_of(part: &std::ops::Range<usize>) -> [u16; 2] {
    let first = part.start / 8;
    [first as u16, row_words(part.end).max(first) as u16]
}

/// The bytes of the row words `w` in a row of `rs` bytes.
#[inline]
fn bytes_of(w: [u16; 2], rs: usize) -> std::ops::Range<usize> {
    w[0] as usize * 8..(w[1] as usize * 8).min(rs)
}

/// `part` within a row of table `t`, else the error `_part` operations return.
fn check_part(t: &TableData, table: TableId, part: &std::ops::Range<usize>) -> Result<()> {
    if part.start > part.end || part.end > t.row_size {
        return Err(api::engine::part_out_of_row(table, part, t.row_size));
    }
    Ok(())
}

/// Why a transaction fails when it needs the rest of a row it updated in part.
const TORN: &str = "a row updated in part changed before the rest of it was read";

/// Make write `w` hold at least the row's words `want` (see `WriteEntry::words`): if it
/// does not, the whole row, reading the words it lacks from its record into `arena`
/// through `tmp` (a row's length). False when the record is no longer the version the
/// entry was read from.
fn widen(w: &mut WriteEntry, want: [u16; 2], arena: &mut [u8], tmp: &mut [u8]) -> bool {
    if w.words[0] <= want[0] && want[1] <= w.words[1] {
        return true;
    }
    let rs = tmp.len();
    if w.rec.stable_read(tmp) != w.locked_tid {
        return false;
    }
    let off = w.data_off as usize;
    let had = bytes_of(w.words, rs);
    arena[off..off + had.start].copy_from_slice(&tmp[..had.start]);
    arena[off + had.end..off + rs].copy_from_slice(&tmp[had.end..]);
    w.words = [0, row_words(rs) as u16];
    true
}

pub(crate) fn find_write(writes: &[WriteEntry], map: &WMap, rec: Rec) -> Option<usize> {
    if writes.len() <= LINEAR_WRITES {
        writes.iter().position(|w| w.rec == rec)
    } else {
        map.get(rec.as_u64()).map(|i| i as usize)
    }
}

/// Remove a record's entries (primary key `key`, row `row`) from the table's indexes.
/// Entries pointing elsewhere are left alone (a partial insert has only some).
/// `committed`: a committed delete, with the worker's lookup hints of the table (its
/// lookup left the leaf as one); emptied B+tree leaves are then pruned. `None`: undoing an
/// insert (never pruned).
pub(crate) fn unlink(
    t: &TableData,
    key: &[u8],
    row: &[u8],
    rec: Rec,
    committed: Option<&mut memindex::btree::Hints>,
    g: &Guard,
    mut on_change: impl FnMut(memindex::btree::NodeChange),
) {
    let committed_delete = committed.is_some();
    let c = match committed {
        Some(h) => t.primary.remove_hinted(key, rec.as_u64(), g, h),
        None => t.primary.remove(key, rec.as_u64(), false, g),
    };
    if let Some(c) = c {
        on_change(c);
    }
    let mut sk = Key::new();
    for s in &t.secondary {
        s.entry_key(key, row, &mut sk);
        if let Some(c) = s.index.remove(&sk, rec.as_u64(), committed_delete, g) {
            on_change(c);
        }
    }
}

/// Free a record once no pinned transaction can reach it.
pub(crate) fn retire(rec: Rec, t: &TableData, g: &Guard) {
    let p = rec.as_u64();
    let (words, keyed) = (t.words, t.keyed);
    // SAFETY: the record is unlinked from every index; transactions pinned now may still
    // hold it (and read its key, if a hash index gave it to them), and the collector runs
    // this only after they unpin.
    unsafe { g.defer_unchecked(move || Rec::from_u64(p).free(words, keyed)) };
}

impl<'e> MemoryWorker<'e> {
    pub(crate) fn new(e: &'e MemoryEngine, id: usize) -> Self {
        let max_row = e
            .catalog
            .tables
            .iter()
            .map(|t| t.row_size)
            .max()
            .unwrap_or(0);
        MemoryWorker {
            e,
            id,
            guard: None,
            epoch: crossbeam_epoch::default_collector().register(),
            reads: Vec::with_capacity(256),
            nodes: memindex::NodeSet::with_capacity(64),
            writes: Vec::with_capacity(64),
            wmap: WMap::default(),
            arena: Vec::with_capacity(1 << 14),
            log_stage: Vec::new(),
            row: vec![0; max_row],
            row2: vec![0; max_row],
            hinted: Vec::new(),
            quiet: 0,
            hinted_done: 0,
            insert_hints: e
                .catalog
                .tables
                .iter()
                .map(|_| Default::default())
                .collect(),
            read_committed: false,
            writes_sorted: false,
            look_hints: e
                .catalog
                .tables
                .iter()
                .map(|_| Default::default())
                .collect(),
            last_tid: 0,
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

    fn table(&self, t: TableId) -> &'e TableData {
        let e: &'e MemoryEngine = self.e;
        e.catalog
            .tables
            .get(t.0 as usize)
            .unwrap_or_else(|| panic!("table id {} not in the schema", t.0))
    }

    fn push_write(&mut self, w: WriteEntry) {
        self.writes.push(w);
        let n = self.writes.len();
        if n == LINEAR_WRITES + 1 {
            self.rebuild_wmap();
        } else if n > LINEAR_WRITES + 1 {
            self.wmap.insert(w.rec.as_u64(), n as u32 - 1);
        }
    }

    /// Make `wmap` name the write set's entries anew (after entries moved).
    pub(crate) fn rebuild_wmap(&mut self) {
        self.wmap.clear();
        if self.writes.len() > LINEAR_WRITES {
            for (i, w) in self.writes.iter().enumerate() {
                self.wmap.insert(w.rec.as_u64(), i as u32);
            }
        }
    }

    fn push_bytes(&mut self, b: &[u8]) -> u32 {
        let off = self.arena.len();
        self.arena.extend_from_slice(b);
        off as u32
    }

    /// Room for a row of `rs` bytes at the end of the arena, 8-byte aligned within it
    /// (so a row whose struct is at most 8-aligned can be used in place, when the
    /// arena's buffer is aligned too, instead of copied out and back). Returns its offset.
    fn data_slot(&mut self, rs: usize) -> usize {
        let off = self.arena.len().next_multiple_of(8);
        self.arena.resize(off + rs, 0);
        off
    }

    /// Abort with a conflict for `why`.
    fn conflict(&mut self, r: AbortReason, why: &'static str) -> Error {
        self.abort_reason = Some(r);
        Error::Conflict(why)
    }

    /// An operation is about to report an absent or duplicate key. Without opacity, that
    /// answer may come from a view a concurrent commit has already made stale (a row
    /// seen by a scan and deleted since; an order id read from a district someone else
    /// advanced), and the workload would take it for a logic error. So check the view
    /// first: if it is no longer consistent the transaction would fail validation
    /// anyway, and the answer is a conflict. Rare paths only: never on a hit.
    fn surprise(&mut self, answer: Result<bool>) -> Result<bool> {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        // Before commit this transaction holds no lock: a locked record it read is being
        // changed by a committer, which makes the view doubtful too. So does a read of an
        // unlinked record (a miss through a deleted one): its key may have a new record
        // now, and the unlinked one never changes again (`validate_reads` fails it).
        // Records updated or deleted were read at their write's `locked_tid`.
        let unchanged = |rec: Rec, tid: u64| still_as_read(rec.tid().load(Acquire), tid);
        let reads_unchanged = self.reads.iter().all(|r| unchanged(r.rec, r.tid))
            && self
                .writes
                .iter()
                .filter(|w| w.kind.was_read())
                .all(|w| unchanged(w.rec, w.locked_tid));
        if !reads_unchanged {
            Err(self.conflict(
                AbortReason::ReadValidation,
                "read set changed before a miss or duplicate",
            ))
        } else if !self.validate_nodes() {
            Err(self.conflict(
                AbortReason::NodeValidation,
                "index node changed (phantom) before a miss",
            ))
        } else {
            answer
        }
    }

    /// Check that `old` and `new` rows give the same secondary keys.
    fn same_secondary_keys(t: &TableData, key: &[u8], old: &[u8], new: &[u8]) -> bool {
        let (mut a, mut b) = (Key::new(), Key::new());
        t.secondary.iter().all(|s| {
            s.entry_key(key, old, &mut a);
            s.entry_key(key, new, &mut b);
            a == b
        })
    }

    /// Insert found `existing` under the primary key.
    fn insert_over(&mut self, t: &TableData, key: &[u8], row: &[u8], existing: Rec) -> Result<()> {
        if let Some(i) = find_write(&self.writes, &self.wmap, existing) {
            let w = self.writes[i];
            return match w.kind {
                WKind::Delete => {
                    // Re-insert of a key this transaction deleted: an update of the record.
                    let off = w.data_off as usize;
                    let old = &self.arena[off..off + t.row_size];
                    if !Self::same_secondary_keys(t, key, old, row) {
                        return Err(Error::fatal(format!(
                            "table {}: re-inserting a key deleted in the same transaction \
                             with different secondary keys is not supported",
                            t.name
                        )));
                    }
                    self.arena[off..off + t.row_size].copy_from_slice(row);
                    self.writes[i].kind = WKind::Update;
                    Ok(())
                }
                WKind::Insert | WKind::InsertChanged | WKind::Update => Err(Error::Duplicate),
                WKind::Dead => unreachable!("a dead insert is no longer in any index"),
            };
        }
        let tid = existing.stable_tid();
        if tid & ABSENT != 0 {
            return Err(self.conflict(
                AbortReason::InsertBusy,
                "insert: key held by an uncommitted insert or a committed delete",
            ));
        }
        // The transaction depends on the key being present.
        self.reads.push(ReadEntry { rec: existing, tid });
        self.surprise(Err(Error::Duplicate)).map(|_| ())
    }
}

/// A point lookup of `key` in `t`'s primary index (`Index::get_hinted` with the worker's
/// hints for `t`; a long key of a B+tree whose records carry their keys is compared in
/// its record). A B+tree hit in a run of neighbouring keys asks for the next key's record.
#[inline(always)]
fn look_up(
    t: &TableData,
    hints: &mut memindex::btree::Hints,
    g: &Guard,
    key: &[u8],
    quiet: bool,
) -> (Option<u64>, *const std::sync::atomic::AtomicU64, u64, bool) {
    t.primary
        .get_hinted(key, g, hints, quiet, t.keyed_btree.as_ref(), |a| {
            // SAFETY: a prefetch reads nothing; the record need not be alive.
            unsafe { Rec::from_u64(a) }.prefetch(t.words)
        })
}

/// Hints kept at most (a New-Order gives 30, a Stock-Level about 200); more are dropped.
const MAX_HINTED: usize = 256;
/// Hinted records asked for at the first lookup after the hints, and at each one after.
const HINT_BURST: usize = 16;
const HINT_STEP: usize = 3;

impl MemoryWorker<'_> {
    /// Second stage of the hints: ask for the records of hinted keys' buckets, in the
    /// order they were hinted, `HINT_BURST` at the first lookup after the hints and
    /// `HINT_STEP` at each one after: the records come ahead of their lookups without
    /// a Stock-Level's 200 records evicting each other from the first-level cache.
    #[cold]
    fn fetch_hinted(&mut self) {
        let step = if self.hinted_done == 0 {
            HINT_BURST
        } else {
            HINT_STEP
        };
        let end = (self.hinted_done + step).min(self.hinted.len());
        let first = self.hinted_done == 0;
        if first {
            // The bucket lines the hints asked for are read below: under --interleave,
            // another transaction runs while they come (once for the whole burst).
            rt::point(rt::Point::Probe);
        }
        for hn in &self.hinted[self.hinted_done..end] {
            let t = &self.e.catalog.tables[hn.table as usize];
            if let crate::catalog::Index::Hash(hx) = &t.primary {
                hx.prefetch_values(hn.hash, |v| {
                    // SAFETY: a prefetch reads nothing; the record need not be alive.
                    unsafe { Rec::from_u64(v) }.prefetch_part(
                        t.words,
                        hn.key_len as usize,
                        hn.words,
                    )
                });
            }
        }
        self.hinted_done = end;
        if first {
            // And while the burst's records come.
            rt::point(rt::Point::Probe);
        }
        if end == self.hinted.len() {
            self.clear_hints();
        }
    }

    /// Whether the next hash lookup in `table` is one a hint asked for (see `quiet`).
    #[inline]
    fn take_quiet(&mut self, table: TableId) -> bool {
        if self.quiet == 0 || self.table(table).kind != IndexKind::Hash {
            return false;
        }
        self.quiet -= 1;
        true
    }

    fn clear_hints(&mut self) {
        self.hinted.clear();
        self.hinted_done = 0;
    }
}

impl MemoryWorker<'_> {
    /// `update` of the bytes `part` (within the row). Reads, and at commit installs and
    /// logs, only the words that hold them, where that is safe: the table's secondary keys
    /// are declared (so a change to one is seen) and its rows are below 64 KiB (an update
    /// record's offsets). Otherwise the whole row.
    #[inline(always)]
    fn update_bytes(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool> {
        debug_assert!(key.len() <= MAX_KEY_LEN, "Session checks key lengths");
        if !self.hinted.is_empty() {
            self.fetch_hinted();
        }
        let quiet = self.take_quiet(table);
        let t = self.table(table);
        let rs = t.row_size;
        let all = row_words(rs) as u16;
        let words = match &t.sec_cols {
            Some(_) if rs <= u16::MAX as usize => words_of(&part),
            _ => [0, all],
        };
        let g = self.guard.as_ref().expect("update outside a transaction");
        let (hit, ver, v, _) = {
            let _d = api::session::descent();
            look_up(t, &mut self.look_hints[table.0 as usize], g, key, quiet)
        };
        let Some(r) = hit else {
            self.nodes.push(ver, v);
            return self.surprise(Ok(false));
        };
        // SAFETY: an indexed record read while pinned (freed only through the epoch).
        let rec = unsafe { Rec::from_u64(r) };
        let off = match find_write(&self.writes, &self.wmap, rec) {
            Some(i) => match self.writes[i].kind {
                WKind::Insert | WKind::InsertChanged | WKind::Update => {
                    self.cover(i, words)?;
                    // `f` changes the write set's row, no longer the record's.
                    if self.writes[i].kind == WKind::Insert {
                        self.writes[i].kind = WKind::InsertChanged;
                    }
                    self.writes[i].data_off as usize
                }
                WKind::Delete | WKind::Dead => return Ok(false),
            },
            None => {
                // Read straight into the write-set copy (one row copy less).
                let key_off = self.push_bytes(key);
                let off = self.data_slot(rs);
                let b = bytes_of(words, rs);
                let tid = rec.stable_read_at(
                    &mut self.arena[off + b.start..off + b.end],
                    words[0] as usize,
                );
                if tid & ABSENT != 0 {
                    // The transaction depends on the key being absent.
                    self.reads.push(ReadEntry { rec, tid });
                    self.arena.truncate(key_off as usize);
                    return self.surprise(Ok(false));
                }
                // No read-set entry: commit checks `locked_tid` as it locks the record.
                self.push_write(WriteEntry {
                    rec,
                    table: table.0 as u16,
                    kind: WKind::Update,
                    key_len: key.len() as u8,
                    key_off,
                    data_off: off as u32,
                    locked_tid: tid,
                    words,
                });
                off
            }
        };
        // A secondary key must not change: compare the bytes of `part` keys are made of
        // (declared), or the whole rows' keys (undeclared: the entry holds the whole row).
        let sec = match &t.sec_cols {
            None if !t.secondary.is_empty() => Some(0..rs),
            None => None,
            Some(cols) => {
                let lo = cols
                    .iter()
                    .filter(|c| c.start < part.end && part.start < c.end);
                let (a, b) = lo.fold((usize::MAX, 0), |(a, b), c| (a.min(c.start), b.max(c.end)));
                (a < b).then(|| a.max(part.start)..b.min(part.end))
            }
        };
        if let Some(r) = &sec {
            self.row[r.clone()].copy_from_slice(&self.arena[off + r.start..off + r.end]);
        }
        f(&mut self.arena[off + part.start..off + part.end]);
        if let Some(r) = sec {
            let changed = match &t.sec_cols {
                Some(cols) => cols.iter().any(|c| {
                    let (a, b) = (c.start.max(r.start), c.end.min(r.end));
                    a < b && self.row[a..b] != self.arena[off + a..off + b]
                }),
                None => {
                    !Self::same_secondary_keys(t, key, &self.row[..rs], &self.arena[off..off + rs])
                }
            };
            if changed {
                self.arena[off + r.start..off + r.end].copy_from_slice(&self.row[r]);
                return Err(Error::fatal(format!(
                    "table {}: update changed a secondary key",
                    t.name
                )));
            }
        }
        Ok(true)
    }

    /// Make write `i` hold at least the row's words `want` (an update of part of a row
    /// read only its own): the rest is read now, from the version the part was read
    /// from. A newer version means this transaction cannot commit: a conflict now.
    fn cover(&mut self, i: usize, want: [u16; 2]) -> Result<()> {
        let rs = self.e.catalog.tables[self.writes[i].table as usize].row_size;
        if widen(
            &mut self.writes[i],
            want,
            &mut self.arena,
            &mut self.row2[..rs],
        ) {
            Ok(())
        } else {
            Err(self.conflict(AbortReason::ReadValidation, TORN))
        }
    }

    /// `scan` passing `f` the bytes `part` of each row (all of it: `None`); only the
    /// words that hold them are copied out of the records.
    #[allow(clippy::too_many_arguments)]
    fn scan_bytes(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        part: Option<std::ops::Range<usize>>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        debug_assert!(api::session::scan_checked(&self.e.schema, index));
        let t = self.table(index.table);
        assert!(self.guard.is_some(), "scan outside a transaction");
        let tree = self.scan_tree(index);
        if limit == 0 {
            return Ok(0);
        }
        let rs = t.row_size;
        let part = part.unwrap_or(0..rs);
        // The words that hold `part`, copied to where they sit in the row.
        let words = words_of(&part);
        let held = bytes_of(words, rs);
        let mut n = 0usize;
        let rc = self.read_committed;
        let mut torn = false;
        let Self {
            reads,
            nodes,
            writes,
            wmap,
            arena,
            row,
            row2,
            ..
        } = self;
        tree.scan_hint(
            lo,
            hi,
            dir == Dir::Forward,
            limit,
            &mut |ver, v| {
                if !rc {
                    nodes.push(ver, v)
                }
            },
            &mut |k, val| {
                // SAFETY: an indexed record read while pinned (freed only through the epoch).
                let rec = unsafe { Rec::from_u64(val) };
                let data: &[u8] = match find_write(writes, wmap, rec) {
                    Some(i) => match writes[i].kind {
                        WKind::Insert | WKind::InsertChanged | WKind::Update => {
                            // As `get` does: the rest of a row updated in part only if
                            // `part` needs it.
                            if !widen(&mut writes[i], words, arena, &mut row2[..rs]) {
                                torn = true;
                                return false;
                            }
                            let off = writes[i].data_off as usize;
                            &arena[off + part.start..off + part.end]
                        }
                        WKind::Delete | WKind::Dead => return true,
                    },
                    None => {
                        let tid = rec.stable_read_at(&mut row[held.clone()], words[0] as usize);
                        if !rc {
                            reads.push(ReadEntry { rec, tid });
                        }
                        if tid & ABSENT != 0 {
                            return true;
                        }
                        &row[part.clone()]
                    }
                };
                n += 1;
                f(k, data) && n < limit
            },
        );
        if torn {
            return Err(self.conflict(AbortReason::ReadValidation, TORN));
        }
        Ok(n)
    }

    /// `get` of the bytes `part` (within the row): only the words that hold them are
    /// copied out of the record.
    #[inline(always)]
    fn get_bytes(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        debug_assert!(key.len() <= MAX_KEY_LEN, "Session checks key lengths");
        if !self.hinted.is_empty() {
            self.fetch_hinted();
        }
        let quiet = self.take_quiet(table);
        let t = self.table(table);
        let g = self.guard.as_ref().expect("get outside a transaction");
        let (hit, ver, v, fetched) =
            look_up(t, &mut self.look_hints[table.0 as usize], g, key, quiet);
        let Some(r) = hit else {
            if self.read_committed {
                return Ok(false);
            }
            self.nodes.push(ver, v);
            return self.surprise(Ok(false));
        };
        // SAFETY: an indexed record read while pinned (freed only through the epoch).
        let rec = unsafe { Rec::from_u64(r) };
        if !fetched {
            // A hash probe, or a B+tree comparing the key in the record, asked for the
            // record already (it holds the key); other B+tree lookups know it only now.
            // Under --interleave, another transaction runs meanwhile.
            rt::prefetch_for_probe(t.primary.probes(), || rec.prefetch(t.words));
        }
        if !self.writes.is_empty() {
            if let Some(i) = find_write(&self.writes, &self.wmap, rec) {
                let w = self.writes[i];
                return Ok(match w.kind {
                    WKind::Insert | WKind::InsertChanged | WKind::Update => {
                        self.cover(i, words_of(&part))?;
                        let off = w.data_off as usize;
                        f(&self.arena[off + part.start..off + part.end]);
                        true
                    }
                    WKind::Delete | WKind::Dead => false,
                });
            }
        }
        // The words that hold `part`, copied to where they sit in the row.
        let words = words_of(&part);
        let tid = rec.stable_read_at(
            &mut self.row[bytes_of(words, t.row_size)],
            words[0] as usize,
        );
        if self.read_committed {
            if tid & ABSENT != 0 {
                return Ok(false);
            }
        } else {
            self.reads.push(ReadEntry { rec, tid });
            if tid & ABSENT != 0 {
                return self.surprise(Ok(false));
            }
        }
        f(&self.row[part]);
        Ok(true)
    }
}

impl Worker for MemoryWorker<'_> {
    fn schema(&self) -> &api::Schema {
        &self.e.schema
    }

    fn begin(&mut self) -> Result<()> {
        assert!(self.guard.is_none(), "begin inside a transaction");
        debug_assert!(self.reads.is_empty() && self.writes.is_empty());
        self.guard = Some(self.epoch.pin());
        Ok(())
    }

    fn get(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let rs = self.table(table).row_size;
        self.get_bytes(table, key, 0..rs, f)
    }

    fn get_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        check_part(self.table(table), table, &part)?;
        self.get_bytes(table, key, part, f)
    }

    /// The first stage of a hint: the bucket line. The second (the record, once the
    /// bucket has come) is taken at the next lookup: a New-Order's 30 Item and Stock
    /// records then come in parallel instead of one miss at a time in its loop.
    fn prefetch(&mut self, table: TableId, key: &[u8], part: Option<std::ops::Range<usize>>) {
        if key.len() <= MAX_KEY_LEN && !self.e.ignore_hints {
            if let Some(t) = self.e.catalog.tables.get(table.0 as usize) {
                if let Some(hash) = t.primary.prefetch(key) {
                    if self.hinted.len() < MAX_HINTED {
                        self.quiet += 1;
                        // A part out of the row (an error at its lookup) asks for no
                        // row words here: a hint never fails.
                        let all = t.words as u16;
                        let words = match part {
                            Some(p) => words_of(&p).map(|w| w.min(all)),
                            None => [0, all],
                        };
                        self.hinted.push(Hinted {
                            hash,
                            table: table.0,
                            words,
                            key_len: key.len() as u8,
                        });
                    }
                }
            }
        }
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
        self.scan_bytes(index, lo, hi, dir, limit, None, f)
    }

    fn scan_part(
        &mut self,
        index: IndexId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        limit: usize,
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        check_part(self.table(index.table), index.table, &part)?;
        self.scan_bytes(index, lo, hi, dir, limit, Some(part), f)
    }

    /// On a thread per part, only where a serial scan would record nothing: read
    /// committed (no read set, no node versions to validate) and nothing written yet
    /// (no own writes to overlay). Each thread pins the epoch itself and reads each
    /// record stably, as `scan_bytes` does; otherwise `Ok(false)`.
    fn scan_parts(
        &mut self,
        index: IndexId,
        parts: &[api::engine::KeyRange<'_>],
        sinks: &mut [&mut api::engine::ScanSink<'_>],
    ) -> Result<bool> {
        assert!(self.guard.is_some(), "scan outside a transaction");
        if !self.read_committed || !self.writes.is_empty() {
            return Ok(false);
        }
        debug_assert!(api::session::scan_checked(&self.e.schema, index));
        let t = self.table(index.table);
        let tree = self.scan_tree(index);
        let rs = t.row_size;
        std::thread::scope(|sc| {
            for (&(lo, hi), f) in parts.iter().zip(sinks.iter_mut()) {
                sc.spawn(move || {
                    rt::unpin_current();
                    let _g = crossbeam_epoch::pin();
                    let mut row = vec![0u8; rs];
                    tree.scan_hint(lo, hi, true, usize::MAX, &mut |_, _| {}, &mut |k, val| {
                        // SAFETY: an indexed record read while pinned (freed only
                        // through the epoch).
                        let rec = unsafe { Rec::from_u64(val) };
                        if rec.stable_read_at(&mut row, 0) & ABSENT == 0 {
                            f(k, &row);
                        }
                        true
                    });
                });
            }
        });
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
        let rec = t.new_record(key, ABSENT, row);
        let hint = &mut self.insert_hints[table.0 as usize];
        match t.primary.insert_hinted(key, rec.as_u64(), g, hint) {
            Ok(c) => self.nodes.forgive(c),
            Err(existing) => {
                // SAFETY: never published.
                unsafe { t.free_record(rec) };
                // SAFETY: an indexed record read while pinned (freed only through the epoch).
                return self.insert_over(t, key, row, unsafe { Rec::from_u64(existing) });
            }
        }
        let mut sk = Key::new();
        for s in &t.secondary {
            s.entry_key(key, row, &mut sk);
            match s.index.insert(&sk, rec.as_u64(), g) {
                Ok(c) => self.nodes.forgive(c),
                Err(existing) => {
                    // Undo this insert's entries; readers may have seen the record.
                    let nodes = &mut self.nodes;
                    unlink(t, key, row, rec, None, g, |c| nodes.forgive(c));
                    rec.tid().store(ABSENT | UNLINKED, Release);
                    retire(rec, t, g);
                    // SAFETY: an indexed record read while pinned (freed only through the epoch).
                    let existing = unsafe { Rec::from_u64(existing) };
                    if find_write(&self.writes, &self.wmap, existing).is_some() {
                        return Err(Error::fatal(format!(
                            "table {}: insert collides in a unique secondary index with a row \
                             this transaction wrote (not supported)",
                            t.name
                        )));
                    }
                    let tid = existing.stable_tid();
                    if tid & ABSENT != 0 {
                        return Err(self.conflict(
                            AbortReason::InsertBusy,
                            "insert: secondary key held by an uncommitted or deleted record",
                        ));
                    }
                    self.reads.push(ReadEntry { rec: existing, tid });
                    return self.surprise(Err(Error::Duplicate)).map(|_| ());
                }
            }
        }
        let key_off = self.push_bytes(key);
        let data_off = push_row(&mut self.arena, row) as u32;
        self.push_write(WriteEntry {
            rec,
            table: table.0 as u16,
            kind: WKind::Insert,
            key_len: key.len() as u8,
            key_off,
            data_off,
            locked_tid: 0,
            words: [0, row_words(row.len()) as u16],
        });
        Ok(())
    }

    fn update(&mut self, table: TableId, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        let rs = self.table(table).row_size;
        self.update_bytes(table, key, 0..rs, f)
    }

    fn update_part(
        &mut self,
        table: TableId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool> {
        check_part(self.table(table), table, &part)?;
        self.update_bytes(table, key, part, f)
    }

    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        debug_assert!(key.len() <= MAX_KEY_LEN, "Session checks key lengths");
        let quiet = self.take_quiet(table);
        let t = self.table(table);
        let rs = t.row_size;
        let g = self.guard.as_ref().expect("delete outside a transaction");
        let (hit, ver, v, _) = {
            let _d = api::session::descent();
            look_up(t, &mut self.look_hints[table.0 as usize], g, key, quiet)
        };
        let Some(r) = hit else {
            self.nodes.push(ver, v);
            return self.surprise(Ok(false));
        };
        // SAFETY: an indexed record read while pinned (freed only through the epoch).
        let rec = unsafe { Rec::from_u64(r) };
        if let Some(i) = find_write(&self.writes, &self.wmap, rec) {
            let w = self.writes[i];
            return Ok(match w.kind {
                WKind::Insert | WKind::InsertChanged => {
                    // Our own uncommitted insert: take it out of the indexes now.
                    let off = w.data_off as usize;
                    self.row2[..rs].copy_from_slice(&self.arena[off..off + rs]);
                    let nodes = &mut self.nodes;
                    unlink(t, key, &self.row2[..rs], rec, None, g, |c| nodes.forgive(c));
                    rec.tid().store(ABSENT | UNLINKED, Release);
                    retire(rec, t, g);
                    self.writes[i].kind = WKind::Dead;
                    true
                }
                WKind::Update => {
                    // Secondary keys never change, so the new row serves to unlink.
                    self.cover(i, [0, row_words(rs) as u16])?;
                    self.writes[i].kind = WKind::Delete;
                    true
                }
                WKind::Delete | WKind::Dead => false,
            });
        }
        let tid = rec.stable_read(&mut self.row[..rs]);
        if tid & ABSENT != 0 {
            self.reads.push(ReadEntry { rec, tid });
            return self.surprise(Ok(false));
        }
        // No read-set entry: commit checks `locked_tid` as it locks the record.
        let key_off = self.push_bytes(key);
        let off = push_row(&mut self.arena, &self.row[..rs]);
        self.push_write(WriteEntry {
            rec,
            table: table.0 as u16,
            kind: WKind::Delete,
            key_len: key.len() as u8,
            key_off,
            data_off: off as u32,
            locked_tid: tid,
            words: [0, row_words(rs) as u16],
        });
        Ok(true)
    }

    fn read_committed(&mut self) {
        assert!(self.guard.is_some(), "read_committed outside a transaction");
        self.read_committed = true;
    }

    fn commit(&mut self) -> Result<()> {
        self.clear_hints();
        self.quiet = 0;
        self.commit_txn()
    }

    fn abort(&mut self) {
        self.clear_hints();
        self.quiet = 0;
        self.abort_txn()
    }
}

impl Drop for MemoryWorker<'_> {
    fn drop(&mut self) {
        if self.guard.is_some() {
            self.abort_txn();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WMap;

    /// Every address mapped is found with its entry, no other is, through growth, clears
    /// and a table dropped for its size; addresses as records have them (8-aligned,
    /// clustered).
    #[test]
    fn write_map_finds_what_it_holds() {
        let mut m = WMap::default();
        assert_eq!(m.get(0x1000), None);
        for n in [1usize, 17, 130, 600, 23, 0, 300] {
            // Runs of ten 64-byte records, runs 4 KiB apart.
            let addr =
                |i: usize| 0x7f00_0000_0000u64 + (i as u64 / 10) * 4096 + (i as u64 % 10) * 64;
            for i in 0..n {
                m.insert(addr(i), i as u32);
            }
            for i in 0..n {
                assert_eq!(m.get(addr(i)), Some(i as u32), "n {n} i {i}");
            }
            assert_eq!(m.get(addr(n)), None);
            assert_eq!(m.get(0x10), None);
            m.clear();
            assert_eq!(m.get(addr(0)), None);
            assert!(m.keys.len() <= WMap::KEEP_SLOTS, "a large table is dropped");
        }
    }
}
