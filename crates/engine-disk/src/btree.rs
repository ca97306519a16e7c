//! B+tree on pages: unique byte keys (up to `MAX_TREE_KEY` bytes) mapping to a u64 (a
//! packed record id in leaves, a child page in inner nodes). Readers descend with latch
//! coupling (S); writers descend with S and take the leaf X, and when the leaf is full
//! restart with X crabbing from the root, split, log the split as one redo-only record
//! of page images (a nested top action), and retry. Deletes are lazy: entries are removed
//! from leaves, nodes are never merged. The root page never moves (a root split copies
//! the root into two new children), so the catalog's root page id stays valid.
//! Scans do not walk sibling pointers: each leaf's fence keys (from the descent) tell
//! where the next leaf starts, and the next step re-descends.
//! This module must never take locks; `xct` locks keys between calls, with no latch held.
//!
//! Node layout (a slotted page) after the common 32-byte header: `[32]` level (0 = leaf),
//! `[34..36)` count, `[36..40)` table, `[40..42)` index, `[42..44)` cell-area start,
//! `[44..46)` hole bytes inside the cell area, `[48..56)` child 0 (inner nodes); from 64
//! a slot array of u16 cell offsets in key order growing up, cells
//! `[key len u8][key][value u64]` growing down from the page end. A delete leaves a hole
//! (counted, not listed); an insert that needs the holes' room compacts the page first.
//! In an inner node entry `i` = (separator `k_i`, child `i + 1`); child `j` holds keys
//! `k_{j-1} <= key < k_j`.
//! Nodes are validated in full (`check_cells`) when they enter the pool from disk or a
//! log image; every visit re-checks the header only (`check_node`), so a node in the pool
//! always has its slots and cells inside the page.

use crate::bpool::{BufferPool, PageGuard};
use crate::latch::Mode;
use crate::log::{Kind, Log, Rec};
use crate::page::{self, get_u16, get_u64, put_u16, put_u32, put_u64, Page, PageType, PAGE_SIZE};
use crate::xct::txnlog::TxnLog;
use api::{Error, Result};
use std::cmp::Ordering;

pub const MAX_TREE_KEY: usize = 2 * api::key::MAX_KEY_LEN;

// Node header fields (byte offsets).
const LEVEL: usize = 32;
const COUNT: usize = 34;
const TABLE: usize = 36;
const INDEX: usize = 40;
const CELLS: usize = 42;
const HOLES: usize = 44;
const CHILD0: usize = 48;
/// Start of the slot array.
const SLOTS: usize = 64;
/// A slot: the cell's offset (u16), then the key's head (`head_of`, u64), so that a
/// binary search reads the slot array only and touches a cell just to break ties.
const SLOT: usize = 10;
/// Where a slot's key head sits in it.
const SLOT_HEAD: usize = 2;
/// A cell's bytes besides its key: the length byte and the value.
const CELL_OVERHEAD: usize = 1 + 8;
/// The most bytes one entry takes (slot + cell of a longest key).
pub const MAX_ENTRY: usize = SLOT + CELL_OVERHEAD + MAX_TREE_KEY;
/// The most entries a node can hold (all keys empty).
pub const MAX_COUNT: usize = (PAGE_SIZE - SLOTS) / (SLOT + CELL_OVERHEAD);
/// The average index key assumed when sizing the buffer pool (the schema does not say
/// how long keys are; the workloads' keys are 8-30 bytes).
const AVG_KEY_ESTIMATE: usize = 16;
// The node header starts after the page header, its fields in order without overlap
// (child 0 is the last, before the slots); cell offsets fit a slot's u16; a node holds
// several longest entries (a split must leave room in both halves).
const _: () = assert!(LEVEL == page::HEADER && LEVEL + 2 == COUNT && COUNT + 2 == TABLE);
const _: () = assert!(TABLE + 4 == INDEX && INDEX + 2 == CELLS && CELLS + 2 == HOLES);
const _: () = assert!(HOLES + 2 <= CHILD0 && CHILD0 + 8 <= SLOTS);
const _: () = assert!(SLOT_HEAD + 8 == SLOT && PAGE_SIZE <= u16::MAX as usize + 1);
const _: () = assert!(SLOTS + 4 * MAX_ENTRY <= PAGE_SIZE && MAX_TREE_KEY <= u8::MAX as usize);

/// Bytes one index entry takes in the tree, for sizing the buffer pool: slot + cell of
/// an average key, times 3/2 for leaves about two thirds full (random inserts leave
/// them ~70% full, ascending ones 90%, descending ones half).
pub fn entry_bytes_estimate() -> u64 {
    ((SLOT + CELL_OVERHEAD + AVG_KEY_ESTIMATE) * 3).div_ceil(2) as u64
}

/// A key copied out of a node (on the stack).
#[derive(Clone, Copy)]
pub struct TKey {
    len: u8,
    buf: [u8; MAX_TREE_KEY],
}

impl TKey {
    pub fn new(k: &[u8]) -> TKey {
        assert!(k.len() <= MAX_TREE_KEY, "tree key of {} bytes", k.len());
        let mut t = TKey {
            len: k.len() as u8,
            buf: [0; MAX_TREE_KEY],
        };
        t.buf[..k.len()].copy_from_slice(k);
        t
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

impl std::fmt::Debug for TKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x?}", self.as_bytes())
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Tree {
    pub root: u64,
    pub table: u32,
    pub index: u16,
    /// The root's frame: roots stay resident (`BufferPool::pin_forever`).
    pub root_frame: u32,
}

impl Tree {
    /// The tree's name in `simulate --btree-levels`' markers.
    #[inline]
    fn trace_tree(&self) -> u32 {
        probe::level::tree(self.table as usize, self.index as usize)
    }

    pub fn open(pool: &BufferPool, root: u64, table: u32, index: u16) -> Result<Tree> {
        let root_frame = pool.pin_forever(root)?;
        let g = pool.fix_frame(root_frame, root, Mode::S);
        check_node(g.page(), root)?;
        check_cells(g.page(), root)?;
        Ok(Tree {
            root,
            table,
            index,
            root_frame,
        })
    }

    fn fix_root<'a>(&self, pool: &'a BufferPool, mode: Mode) -> PageGuard<'a> {
        pool.fix_frame(self.root_frame, self.root, mode)
    }
}

/// `--stats`' census: the table a B+tree page belongs to.
pub fn census_table(p: &Page) -> u32 {
    page::get_u32(p, TABLE)
}

// ---- node accessors ----

fn level(p: &Page) -> u8 {
    p[LEVEL]
}
fn count(p: &Page) -> usize {
    get_u16(p, COUNT) as usize
}
fn set_count(p: &mut Page, n: usize) {
    put_u16(p, COUNT, n as u16)
}
fn child0(p: &Page) -> u64 {
    get_u64(p, CHILD0)
}
/// Where the cell area starts (`PAGE_SIZE` when empty).
fn cells(p: &Page) -> usize {
    get_u16(p, CELLS) as usize
}
fn set_cells(p: &mut Page, at: usize) {
    put_u16(p, CELLS, at as u16)
}
fn holes(p: &Page) -> usize {
    get_u16(p, HOLES) as usize
}
fn set_holes(p: &mut Page, n: usize) {
    put_u16(p, HOLES, n as u16)
}
fn slot(i: usize) -> usize {
    SLOTS + i * SLOT
}
/// End of the slot array.
fn slots_end(p: &Page) -> usize {
    slot(count(p))
}
/// Offset of entry `i`'s cell.
#[inline]
fn cell(p: &Page, i: usize) -> usize {
    get_u16(p, slot(i)) as usize
}
fn cell_size(key_len: usize) -> usize {
    CELL_OVERHEAD + key_len
}
/// Bytes entry `i` takes (slot + cell).
fn entry_size(p: &Page, i: usize) -> usize {
    SLOT + cell_size(p[cell(p, i)] as usize)
}
#[inline]
pub fn key(p: &Page, i: usize) -> &[u8] {
    let at = cell(p, i);
    &p[at + 1..at + 1 + p[at] as usize]
}
pub fn val(p: &Page, i: usize) -> u64 {
    let at = cell(p, i);
    get_u64(p, at + 1 + p[at] as usize)
}
/// Free bytes between the slot array and the cell area.
fn gap(p: &Page) -> usize {
    cells(p) - slots_end(p)
}
/// Whether an entry with a key of `key_len` bytes fits (after compaction if need be).
fn fits(p: &Page, key_len: usize) -> bool {
    gap(p) + holes(p) >= SLOT + cell_size(key_len)
}
/// Whether any entry (up to a longest key) fits: a node a split below cannot overflow.
fn safe(p: &Page) -> bool {
    fits(p, MAX_TREE_KEY)
}

fn insert_at(p: &mut Page, i: usize, k: &[u8], v: u64) {
    let n = count(p);
    assert!(
        i <= n && k.len() <= MAX_TREE_KEY && fits(p, k.len()),
        "insert into a node without room (callers split first)"
    );
    let size = cell_size(k.len());
    if gap(p) < SLOT + size {
        compact(p);
    }
    let at = cells(p) - size;
    p[at] = k.len() as u8;
    p[at + 1..at + 1 + k.len()].copy_from_slice(k);
    put_u64(p, at + 1 + k.len(), v);
    set_cells(p, at);
    p.copy_within(slot(i)..slot(n), slot(i + 1));
    put_u16(p, slot(i), at as u16);
    put_u64(p, slot(i) + SLOT_HEAD, head_of(k));
    set_count(p, n + 1);
}
fn remove_at(p: &mut Page, i: usize) {
    let n = count(p);
    assert!(i < n, "remove of entry {i} from a node of {n}");
    let at = cell(p, i);
    let size = cell_size(p[at] as usize);
    if at == cells(p) {
        set_cells(p, at + size); // the lowest cell: no hole
    } else {
        set_holes(p, holes(p) + size);
    }
    p.copy_within(slot(i + 1)..slot(n), slot(i));
    set_count(p, n - 1);
}
/// Rewrite the cells of entries `0..count` contiguously at the page end (no holes).
fn compact(p: &mut Page) {
    let mut tmp = [0u8; PAGE_SIZE];
    let mut top = PAGE_SIZE;
    for i in 0..count(p) {
        let at = cell(p, i);
        let size = cell_size(p[at] as usize);
        top -= size;
        tmp[top..top + size].copy_from_slice(&p[at..at + size]);
        put_u16(p, slot(i), top as u16);
    }
    assert!(
        top >= slots_end(p),
        "cells overlap the slot array after compaction"
    );
    p[top..].copy_from_slice(&tmp[top..]);
    set_cells(p, top);
    set_holes(p, 0);
}
/// The first 8 bytes of a key as a big-endian word, zero-padded: words compare as the
/// keys' first 8 bytes do (ties say nothing).
#[inline(always)]
fn head_of(k: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = k.len().min(8);
    b[..n].copy_from_slice(&k[..n]);
    u64::from_be_bytes(b)
}
/// Entry `i`'s head, from its slot.
#[inline(always)]
fn head(p: &Page, i: usize) -> u64 {
    get_u64(p, slot(i) + SLOT_HEAD)
}
#[inline(always)]
fn prefetch(p: &Page, at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.as_ptr().wrapping_add(at) as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, at);
}
/// `lo` plus the number of entries in `lo..hi` whose head is < `x` (<= with `or_equal`).
/// Integer compares only, so the compiler can use conditional moves: a binary search's
/// branches are unpredictable, and mispredictions dominated the search.
#[inline(always)]
fn heads_below(p: &Page, mut lo: usize, hi: usize, x: u64, or_equal: bool) -> usize {
    let mut len = hi - lo;
    while len > 0 {
        let half = len / 2;
        // Without branches the next probe's address depends on this probe's load: ask
        // for both possible next probes now, so their misses overlap with this one.
        prefetch(p, slot(lo + half / 2));
        prefetch(p, slot(lo + half + 1 + (len - half - 1) / 2));
        let h = head(p, lo + half);
        if h < x || (or_equal && h == x) {
            lo += half + 1;
            len -= half + 1;
        } else {
            len = half;
        }
    }
    lo
}
/// Number of entries with key < `k` (<= `k` with `or_equal`): search the heads, then
/// compare whole keys only among the entries that share `k`'s head (at most one for
/// distinct integer keys; a run for composite keys with a common first 8 bytes).
fn rank(p: &Page, k: &[u8], or_equal: bool) -> usize {
    let n = count(p);
    let x = head_of(k);
    let mut lo = heads_below(p, 0, n, x, false);
    if lo == n || head(p, lo) != x {
        return lo;
    }
    let mut hi = if lo + 1 == n || head(p, lo + 1) != x {
        lo + 1
    } else {
        heads_below(p, lo + 1, n, x, true)
    };
    while lo < hi {
        let mid = (lo + hi) / 2;
        // Heads are equal here: only the bytes past them (or the lengths) can differ.
        let c = key(p, mid).cmp(k);
        if c == Ordering::Less || (or_equal && c == Ordering::Equal) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
/// First entry with key >= k.
fn lower_bound(p: &Page, k: &[u8]) -> usize {
    rank(p, k, false)
}
/// First entry with key > k.
fn upper_bound(p: &Page, k: &[u8]) -> usize {
    rank(p, k, true)
}

fn format_node(p: &mut Page, pid: u64, t: &Tree, lvl: u8) {
    page::format(p, pid, PageType::BTree);
    p[LEVEL] = lvl;
    put_u32(p, TABLE, t.table);
    put_u16(p, INDEX, t.index);
    set_cells(p, PAGE_SIZE);
}

fn corrupt(pid: u64, what: &str) -> Error {
    Error::fatal(format!(
        "B-tree node {pid} is damaged: {what} (corrupt page)"
    ))
}

/// The header checks done at every visit (O(1)): the page is a node whose slot array and
/// cell area fit the page without overlapping.
fn check_node(p: &Page, pid: u64) -> Result<()> {
    if page::page_type(p) != PageType::BTree as u8 {
        return Err(Error::fatal(format!(
            "page {pid} is not a B-tree node (corrupt)"
        )));
    }
    if count(p) > MAX_COUNT {
        return Err(corrupt(pid, "entry count out of range"));
    }
    if cells(p) < slots_end(p) || cells(p) > PAGE_SIZE {
        return Err(corrupt(pid, "cell area start out of range"));
    }
    if holes(p) > PAGE_SIZE - cells(p) {
        return Err(corrupt(pid, "hole bytes exceed the cell area"));
    }
    Ok(())
}

/// The full check, O(count), for a node entering the pool (read from disk, installed
/// from a log image) or about to be redone: every slot points at a cell inside the cell
/// area, keys are at most `MAX_TREE_KEY` bytes, and cells plus holes fill the cell area
/// exactly. Call after `check_node`. Key order is not checked (not needed for safety:
/// damage the checksum missed can give wrong answers, never an out-of-bounds access).
pub fn check_cells(p: &Page, pid: u64) -> Result<()> {
    check_node(p, pid)?;
    let start = cells(p);
    let mut used = 0;
    for i in 0..count(p) {
        let at = cell(p, i);
        if at < start || at + CELL_OVERHEAD > PAGE_SIZE {
            return Err(corrupt(pid, "slot points outside the cell area"));
        }
        let len = p[at] as usize;
        if len > MAX_TREE_KEY || at + cell_size(len) > PAGE_SIZE {
            return Err(corrupt(pid, "cell overruns the page"));
        }
        if head(p, i) != head_of(&p[at + 1..at + 1 + len]) {
            return Err(corrupt(
                pid,
                "a slot's key head differs from its cell's key",
            ));
        }
        used += cell_size(len);
    }
    if used + holes(p) != PAGE_SIZE - start {
        return Err(corrupt(pid, "cells and holes do not fill the cell area"));
    }
    Ok(())
}

/// Where a descent goes.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// The leftmost leaf.
    Min,
    /// The rightmost leaf.
    Max,
    /// The leaf that holds `key` (or, with `below`, the largest key < `key`).
    Key(&'a [u8], bool),
}

fn child_index(p: &Page, t: Target<'_>) -> usize {
    match t {
        Target::Min => 0,
        Target::Max => count(p),
        Target::Key(k, false) => upper_bound(p, k),
        Target::Key(k, true) => lower_bound(p, k),
    }
}
fn child_at(p: &Page, j: usize) -> u64 {
    if j == 0 {
        child0(p)
    } else {
        val(p, j - 1)
    }
}

/// `check_node` for a node reached from a parent at level `parent_level`: it must sit
/// one level lower (so a damaged child pointer cannot send a descent round in circles).
fn check_child(p: &Page, pid: u64, parent_level: u8) -> Result<()> {
    check_node(p, pid)?;
    if level(p) + 1 != parent_level {
        return Err(corrupt(pid, "its level does not match its parent's"));
    }
    Ok(())
}

pub struct Leaf<'a> {
    pub g: PageGuard<'a>,
    pub low: Option<TKey>,
    pub high: Option<TKey>,
}

/// Descend to the leaf for `t`, latching it in `leaf_mode` (inner nodes S, coupled).
/// With `fences`, also return the leaf's fence keys.
pub fn descend<'a>(
    pool: &'a BufferPool,
    tree: &Tree,
    t: Target<'_>,
    leaf_mode: Mode,
    fences: bool,
) -> Result<Leaf<'a>> {
    loop {
        let mut low: Option<TKey> = None;
        let mut high: Option<TKey> = None;
        let mut g = tree.fix_root(pool, Mode::S);
        // `simulate --btree-levels`: the root, then each child as it is fixed.
        let top = level(g.page());
        probe::btree_level(probe::level::at(tree.trace_tree(), 0, top as u32));
        if top == 0 && leaf_mode == Mode::X {
            drop(g);
            let g = tree.fix_root(pool, Mode::X);
            if level(g.page()) != 0 {
                continue; // the root split meanwhile
            }
            return Ok(Leaf { g, low, high });
        }
        loop {
            let p = g.page();
            let lvl = level(p);
            if lvl == 0 {
                return Ok(Leaf { g, low, high });
            }
            let j = child_index(p, t);
            if fences {
                if j > 0 {
                    low = Some(TKey::new(key(p, j - 1)));
                }
                if j < count(p) {
                    high = Some(TKey::new(key(p, j)));
                }
            }
            let c = child_at(p, j);
            let mode = if lvl == 1 { leaf_mode } else { Mode::S };
            probe::btree_level(probe::level::at(
                tree.trace_tree(),
                (top - lvl + 1) as u32,
                top as u32,
            ));
            let cg = pool.fix(c, mode)?;
            check_child(cg.page(), c, lvl)?;
            g = cg;
        }
    }
}

pub fn create(pool: &BufferPool, log: &Log, table: u32, index: u16) -> Result<u64> {
    let pid = pool.alloc_page();
    let t = Tree {
        root: pid,
        table,
        index,
        root_frame: u32::MAX,
    };
    let mut g = pool.fix_new(pid)?;
    txnstats::page(txnstats::PageKind::Index, pid);
    format_node(g.page_mut(), pid, &t, 0);
    log_images(log, &mut [&mut g]);
    Ok(pid)
}

/// Log pages as one redo-only record of page images and stamp them with its LSN. A
/// node's image is its two used ranges, the header with the slot array and the cell
/// area: the gap between them is zero after redo (never read).
fn log_images(log: &Log, gs: &mut [&mut PageGuard<'_>]) {
    let mut buf = Vec::with_capacity(4 + gs.len() * (12 + PAGE_SIZE));
    buf.extend_from_slice(&(gs.len() as u32).to_le_bytes());
    for g in gs.iter() {
        push_image(&mut buf, g.pid(), g.page());
    }
    let mut r = Rec::new(Kind::PageImages);
    r.payload = &buf;
    for g in gs.iter() {
        g.mark_dirty(log);
    }
    let lsn = log.append(&r, None);
    // The images carry the pre-stamp LSN; redo stamps them with the record's LSN.
    for g in gs.iter_mut() {
        page::set_lsn(g.page_mut(), lsn);
    }
}

/// Append page `pid`'s image: id u64, head length u16, tail length u16, head, tail.
fn push_image(buf: &mut Vec<u8>, pid: u64, p: &Page) {
    let (head, tail) = (slots_end(p), cells(p));
    buf.extend_from_slice(&pid.to_le_bytes());
    buf.extend_from_slice(&(head as u16).to_le_bytes());
    buf.extend_from_slice(&((PAGE_SIZE - tail) as u16).to_le_bytes());
    buf.extend_from_slice(&p[..head]);
    buf.extend_from_slice(&p[tail..]);
}

/// One page's image in a page-images record: `head` goes to the page's start, `tail`
/// to its end, zeros between.
#[derive(Debug, Clone, Copy)]
pub struct Image<'a> {
    pub pid: u64,
    pub head: &'a [u8],
    pub tail: &'a [u8],
}

/// The page images of a page-images record; `None` if malformed.
pub fn images<'a>(r: &Rec<'a>) -> Option<Vec<Image<'a>>> {
    let p = r.payload;
    let n = u32::from_le_bytes(p.get(..4)?.try_into().ok()?) as usize;
    let mut at = 4;
    let mut out = Vec::with_capacity(n.min(p.len() / 12));
    for _ in 0..n {
        let pid = u64::from_le_bytes(p.get(at..at + 8)?.try_into().ok()?);
        let head = u16::from_le_bytes(p.get(at + 8..at + 10)?.try_into().ok()?) as usize;
        let tail = u16::from_le_bytes(p.get(at + 10..at + 12)?.try_into().ok()?) as usize;
        if head < SLOTS || head + tail > PAGE_SIZE {
            return None;
        }
        at += 12;
        let h = p.get(at..at + head)?;
        let t = p.get(at + head..at + head + tail)?;
        out.push(Image {
            pid,
            head: h,
            tail: t,
        });
        at += head + tail;
    }
    (at == p.len()).then_some(out)
}

/// Redo of a page image: overwrite the page with it and check the node it holds.
pub fn install_image(p: &mut Page, img: &Image<'_>) -> Result<()> {
    let (head, tail) = (img.head.len(), img.tail.len());
    p[..head].copy_from_slice(img.head);
    p[head..PAGE_SIZE - tail].fill(0);
    p[PAGE_SIZE - tail..].copy_from_slice(img.tail);
    if page::page_id(p) != img.pid {
        return Err(corrupt(img.pid, "its logged image names another page"));
    }
    check_cells(p, img.pid)?;
    if slots_end(p) > head || cells(p) < PAGE_SIZE - tail {
        return Err(corrupt(
            img.pid,
            "its logged image is shorter than its content",
        ));
    }
    Ok(())
}

/// Redo of a leaf insert/delete record on its page.
pub fn redo(p: &mut Page, r: &Rec<'_>) -> Result<()> {
    check_cells(p, r.page)?;
    let bad = || {
        Error::fatal(format!(
            "log record {} does not apply to page {} (corrupt log or page)",
            r.lsn, r.page
        ))
    };
    let (k, v) = split_kv(r.payload).ok_or_else(bad)?;
    if level(p) != 0 {
        return Err(bad());
    }
    let i = lower_bound(p, k);
    let present = i < count(p) && key(p, i) == k;
    match r.kind {
        // The same entries take the same bytes, so an insert that fit before the crash
        // fits now; one that does not is a damaged log or page.
        Kind::BtInsert if !present && fits(p, k.len()) => insert_at(p, i, k, v),
        Kind::BtDelete if present => remove_at(p, i),
        _ => return Err(bad()),
    }
    Ok(())
}

fn split_kv(payload: &[u8]) -> Option<(&[u8], u64)> {
    let n = payload.len().checked_sub(8)?;
    if n > MAX_TREE_KEY {
        return None;
    }
    Some((
        &payload[..n],
        u64::from_le_bytes(payload[n..].try_into().unwrap()),
    ))
}

fn log_leaf_op(
    log: &Log,
    tl: &mut TxnLog,
    g: &mut PageGuard<'_>,
    t: &Tree,
    kind: Kind,
    k: &[u8],
    v: u64,
) {
    let mut r = Rec::new(kind);
    r.page = g.pid();
    r.table = t.table;
    r.index = t.index;
    let vb = v.to_le_bytes();
    r.payload = k;
    r.payload2 = &vb;
    tl.log(log, g, r);
}

/// Point lookup.
pub fn lookup(pool: &BufferPool, t: &Tree, k: &[u8]) -> Result<Option<u64>> {
    let leaf = descend(pool, t, Target::Key(k, false), Mode::S, false)?;
    let p = leaf.g.page();
    let i = lower_bound(p, k);
    Ok((i < count(p) && key(p, i) == k).then(|| val(p, i)))
}

/// Insert `k -> v`. Returns false (and changes nothing) if `k` is present.
pub fn insert(
    pool: &BufferPool,
    log: &Log,
    tl: &mut TxnLog,
    t: &Tree,
    k: &[u8],
    v: u64,
) -> Result<bool> {
    if k.len() > MAX_TREE_KEY {
        return Err(Error::fatal(format!(
            "index key of {} bytes (limit {MAX_TREE_KEY})",
            k.len()
        )));
    }
    loop {
        let mut leaf = descend(pool, t, Target::Key(k, false), Mode::X, false)?;
        let p = leaf.g.page();
        let i = lower_bound(p, k);
        if i < count(p) && key(p, i) == k {
            return Ok(false);
        }
        if fits(p, k.len()) {
            insert_at(leaf.g.page_mut(), i, k, v);
            log_leaf_op(log, tl, &mut leaf.g, t, Kind::BtInsert, k, v);
            return Ok(true);
        }
        drop(leaf);
        split_for(pool, log, t, k)?;
    }
}

/// Delete `k`; returns its value if it was present.
pub fn delete(
    pool: &BufferPool,
    log: &Log,
    tl: &mut TxnLog,
    t: &Tree,
    k: &[u8],
) -> Result<Option<u64>> {
    let mut leaf = descend(pool, t, Target::Key(k, false), Mode::X, false)?;
    let p = leaf.g.page();
    let i = lower_bound(p, k);
    if i >= count(p) || key(p, i) != k {
        return Ok(None);
    }
    let v = val(p, i);
    remove_at(leaf.g.page_mut(), i);
    log_leaf_op(log, tl, &mut leaf.g, t, Kind::BtDelete, k, v);
    Ok(Some(v))
}

/// Make room in the leaf for `k`: X-crab from the root keeping unsafe ancestors (those a
/// longest separator might not fit), split bottom-up, log all changed pages as one
/// page-images record.
fn split_for(pool: &BufferPool, log: &Log, t: &Tree, k: &[u8]) -> Result<()> {
    let mut path: Vec<PageGuard<'_>> = Vec::with_capacity(8);
    let g = t.fix_root(pool, Mode::X);
    path.push(g);
    loop {
        let p = path.last().unwrap().page();
        let lvl = level(p);
        if lvl == 0 {
            break;
        }
        let c = child_at(p, child_index(p, Target::Key(k, false)));
        let cg = pool.fix(c, Mode::X)?;
        check_child(cg.page(), c, lvl)?;
        if safe(cg.page()) {
            path.clear(); // a safe node: the split stops below its ancestors
        }
        path.push(cg);
    }
    if fits(path.last().unwrap().page(), k.len()) {
        return Ok(()); // someone else split it (or deleted from it) meanwhile
    }
    let mut changed: Vec<PageGuard<'_>> = Vec::new();
    // Split from the leaf up; `carry` is the (separator, new right page) for the parent.
    let mut carry: Option<(TKey, u64)> = None;
    while let Some(mut g) = path.pop() {
        // The entry this node must take: the key itself (leaf) or the separator.
        let pending = carry.as_ref().map_or_else(|| TKey::new(k), |(sep, _)| *sep);
        if fits(g.page(), pending.as_bytes().len()) {
            if let Some((sep, r)) = carry.take() {
                let i = upper_bound(g.page(), sep.as_bytes());
                insert_at(g.page_mut(), i, sep.as_bytes(), r);
            }
            changed.push(g);
            break;
        }
        let is_root = g.pid() == t.root;
        let (mut left, mut right, sep) = if is_root {
            // Copy the root into a new left child, split that, make the root their parent.
            let lp = pool.alloc_page();
            let mut lg = pool.fix_new(lp)?;
            txnstats::page(txnstats::PageKind::Index, lp);
            lg.page_mut().copy_from_slice(g.page());
            page::put_u64(lg.page_mut(), 8, lp);
            let (rg, sep) = split_node(pool, t, &mut lg, pending.as_bytes())?;
            let lvl = level(g.page()) + 1;
            let root = g.pid();
            format_node(g.page_mut(), root, t, lvl);
            put_u64(g.page_mut(), CHILD0, lp);
            insert_at(g.page_mut(), 0, sep.as_bytes(), rg.pid());
            changed.push(g);
            (lg, rg, sep)
        } else {
            let (rg, sep) = split_node(pool, t, &mut g, pending.as_bytes())?;
            (g, rg, sep)
        };
        if let Some((csep, r)) = carry.take() {
            let dst = if csep.as_bytes() < sep.as_bytes() {
                &mut left
            } else {
                &mut right
            };
            let i = upper_bound(dst.page(), csep.as_bytes());
            insert_at(dst.page_mut(), i, csep.as_bytes(), r);
        }
        if !is_root {
            carry = Some((sep, right.pid()));
        }
        changed.push(left);
        changed.push(right);
        if is_root {
            break;
        }
    }
    assert!(carry.is_none(), "split separator left without a parent");
    let mut refs: Vec<&mut PageGuard<'_>> = changed.iter_mut().collect();
    log_images(log, &mut refs);
    Ok(())
}

/// Move the upper part of `g` to a new right sibling; returns it and the separator. The
/// left keeps about half of the entry bytes, or 90% when `pending` (the key about to go
/// into the node) sorts after every entry: ascending inserts (loads, new orders) then
/// leave nodes 90% full instead of half. Both halves end up compact, each with room for
/// any entry.
fn split_node<'a>(
    pool: &'a BufferPool,
    t: &Tree,
    g: &mut PageGuard<'_>,
    pending: &[u8],
) -> Result<(PageGuard<'a>, TKey)> {
    let rp = pool.alloc_page();
    let mut rg = pool.fix_new(rp)?;
    txnstats::page(txnstats::PageKind::Index, rp);
    let lvl = level(g.page());
    format_node(rg.page_mut(), rp, t, lvl);
    let p = g.page();
    let n = count(p);
    assert!(
        n >= 2,
        "split of a node with {n} entries (entries are at most MAX_ENTRY)"
    );
    // `mid`: the first entry past the left's share of the bytes. A leaf keeps `0..mid`
    // and moves `mid..`; an inner node keeps `0..mid`, moves `mid + 1..` and `mid`'s
    // child becomes the right node's child 0 (its key goes up).
    let total: usize = (0..n).map(|i| entry_size(p, i)).sum();
    let appending = upper_bound(p, pending) == n;
    let share = if appending { total / 10 * 9 } else { total / 2 };
    let (mut mid, mut acc) = (0, 0);
    while mid < n && acc + entry_size(p, mid) <= share {
        acc += entry_size(p, mid);
        mid += 1;
    }
    let mid = if lvl == 0 {
        mid.clamp(1, n - 1)
    } else {
        mid.min(n - 1)
    };
    let sep = TKey::new(key(p, mid));
    let from = if lvl == 0 { mid } else { mid + 1 };
    let r = rg.page_mut();
    if lvl > 0 {
        put_u64(r, CHILD0, val(p, mid));
    }
    for i in from..n {
        insert_at(r, i - from, key(p, i), val(p, i));
    }
    let l = g.page_mut();
    set_count(l, mid);
    compact(l);
    assert!(
        safe(g.page()) && safe(rg.page()),
        "a split half without room for a longest entry"
    );
    Ok((rg, sep))
}

/// One step of a scan: the first entry after `from` in direction `forward`.
#[derive(Clone, Copy)]
pub struct Found {
    pub key: TKey,
    pub val: u64,
    pub leaf: u64,
    pub lsn: u64,
    /// Position of the entry in its leaf (valid while the leaf stays at `lsn`).
    pub idx: u16,
}

#[derive(Clone, Copy)]
pub enum From<'a> {
    Start,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

/// The first entry at or after (forward) / at or before (backward) `from`.
pub fn seek(pool: &BufferPool, t: &Tree, from: From<'_>, forward: bool) -> Result<Option<Found>> {
    Ok(seek_with_start(pool, t, from, forward)?.0)
}

/// The leaf a seek began in, as it was then: while it stays at `lsn` and the seek found
/// its entry there (or ran off the index's end there), no key entered the gap between
/// the seek's start and that entry (`xct`'s next-key locking checks it once locked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    pub leaf: u64,
    pub lsn: u64,
    /// The seek went on into other leaves: the gap spans more than this leaf.
    pub crossed: bool,
}

/// Whether the leaf a seek began in is still as it was (`Start`), and the seek stayed in
/// it.
pub fn start_unchanged(pool: &BufferPool, s: &Start) -> Result<bool> {
    Ok(!s.crossed && unchanged(pool, s.leaf, s.lsn)?)
}

/// `seek`, with the leaf it began in (`Start`).
pub fn seek_with_start(
    pool: &BufferPool,
    t: &Tree,
    from: From<'_>,
    forward: bool,
) -> Result<(Option<Found>, Start)> {
    let mut start: Option<Start> = None;
    let mut fence: Option<TKey> = None;
    let mut first = true;
    loop {
        let target = match (first, &from, forward) {
            (true, From::Start, true) => Target::Min,
            (true, From::Start, false) => Target::Max,
            (true, From::Incl(k), true) | (true, From::Excl(k), true) => Target::Key(k, false),
            (true, From::Incl(k), false) => Target::Key(k, false),
            (true, From::Excl(k), false) => Target::Key(k, true),
            (false, _, true) => Target::Key(fence.as_ref().unwrap().buf_slice(), false),
            (false, _, false) => Target::Key(fence.as_ref().unwrap().buf_slice(), true),
        };
        let leaf = descend(pool, t, target, Mode::S, true)?;
        if first {
            start = Some(Start {
                leaf: leaf.g.pid(),
                lsn: leaf.g.lsn(),
                crossed: false,
            });
        }
        let began = Start {
            crossed: !first,
            ..start.expect("set in the first leaf")
        };
        let p = leaf.g.page();
        let n = count(p);
        let pos: Option<usize> = if forward {
            let i = match (first, &from) {
                (true, From::Start) => 0,
                (false, _) => lower_bound(p, fence.as_ref().unwrap().as_bytes()),
                (true, From::Incl(k)) => lower_bound(p, k),
                (true, From::Excl(k)) => upper_bound(p, k),
            };
            (i < n).then_some(i)
        } else {
            let i = match (first, &from) {
                (true, From::Start) => n,
                (false, _) => lower_bound(p, fence.as_ref().unwrap().as_bytes()),
                (true, From::Incl(k)) => upper_bound(p, k),
                (true, From::Excl(k)) => lower_bound(p, k),
            };
            i.checked_sub(1)
        };
        if let Some(i) = pos {
            let f = Found {
                key: TKey::new(key(p, i)),
                val: val(p, i),
                leaf: leaf.g.pid(),
                lsn: leaf.g.lsn(),
                idx: i as u16,
            };
            return Ok((Some(f), began));
        }
        // Nothing here: continue in the neighbouring leaf, found by its fence key.
        let next = if forward { leaf.high } else { leaf.low };
        match next {
            None => return Ok((None, began)),
            Some(f) => fence = Some(f),
        }
        first = false;
    }
}

impl TKey {
    fn buf_slice(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// Re-check entry `f` after the caller locked it: `None` if its leaf changed since (the
/// caller seeks again); otherwise `Some(next)`, the neighbouring entry in the same leaf
/// in scan direction (`None` at the leaf's end), so a scan need not re-descend.
pub fn revalidate(pool: &BufferPool, f: &Found, forward: bool) -> Result<Option<Option<Found>>> {
    let g = pool.fix(f.leaf, Mode::S)?;
    if g.lsn() != f.lsn {
        return Ok(None);
    }
    let p = g.page();
    let i = f.idx as usize;
    let next = if forward {
        (i + 1 < count(p)).then_some(i + 1)
    } else {
        i.checked_sub(1)
    };
    Ok(Some(next.map(|j| Found {
        key: TKey::new(key(p, j)),
        val: val(p, j),
        leaf: f.leaf,
        lsn: f.lsn,
        idx: j as u16,
    })))
}

/// Whether leaf `pid` is unchanged since a seek saw it at `lsn`.
pub fn unchanged(pool: &BufferPool, pid: u64, lsn: u64) -> Result<bool> {
    let g = pool.fix(pid, Mode::S)?;
    Ok(g.lsn() == lsn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Log;
    use crate::xct::txnlog::{TxnLog, TxnSlot};
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// A pool that checks nodes read from disk, as the engine registers it.
    fn setup(dir: &std::path::Path, frames: usize) -> (BufferPool, Arc<Log>) {
        let (pool, log) = crate::bpool::for_tests(dir, frames);
        (pool.with_content_check(crate::check_content), log)
    }

    fn tl() -> TxnLog {
        let mut t = TxnLog::new(Arc::new(TxnSlot::default()));
        t.txn = 1;
        t
    }

    fn all(pool: &BufferPool, t: &Tree, forward: bool) -> Vec<(Vec<u8>, u64)> {
        let mut out = vec![];
        let mut last: Option<TKey> = None;
        loop {
            let from = match &last {
                None => From::Start,
                Some(k) => From::Excl(k.as_bytes()),
            };
            match seek(pool, t, from, forward).unwrap() {
                None => return out,
                Some(f) => {
                    out.push((f.key.as_bytes().to_vec(), f.val));
                    last = Some(f.key);
                }
            }
        }
    }

    /// Walk the whole tree checking every node (cells, key order, keys inside the fences
    /// from the parent, levels); returns the root's level.
    fn verify_tree(pool: &BufferPool, t: &Tree) -> u8 {
        fn walk(pool: &BufferPool, pid: u64, low: Option<&[u8]>, high: Option<&[u8]>) -> u8 {
            let g = pool.fix(pid, Mode::S).unwrap();
            let p = g.page();
            check_cells(p, pid).unwrap();
            let n = count(p);
            for i in 0..n {
                let k = key(p, i);
                assert!(i == 0 || key(p, i - 1) < k, "node {pid}: keys out of order");
                assert!(
                    low.is_none_or(|l| l <= k),
                    "node {pid}: key below its fence"
                );
                assert!(
                    high.is_none_or(|h| k < h),
                    "node {pid}: key above its fence"
                );
            }
            let lvl = level(p);
            for j in 0..=n {
                if lvl == 0 {
                    break;
                }
                let lo = if j == 0 { low } else { Some(key(p, j - 1)) };
                let hi = if j == n { high } else { Some(key(p, j)) };
                assert_eq!(walk(pool, child_at(p, j), lo, hi) + 1, lvl, "uneven depth");
            }
            lvl
        }
        walk(pool, t.root, None, None)
    }

    /// A key of 1..=128 bytes determined by `x` (lengths vary a lot, prefixes are shared).
    fn mixed_key(x: u64) -> Vec<u8> {
        let len = 1 + (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 57) as usize; // 1..=128
        let mut k = x.to_be_bytes().to_vec();
        k.resize(len.max(8), (x % 251) as u8);
        k.truncate(len.max(8));
        k
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn behaves_like_a_btreemap(ops in prop::collection::vec((0u8..3, 0u16..3000, 1usize..=128), 1..1500)) {
            let dir = tempfile::tempdir().unwrap();
            let (pool, log) = setup(dir.path(), 256);
            let root = create(&pool, &log, 0, 0).unwrap();
            let t = Tree::open(&pool, root, 0, 0).unwrap();
            let mut m = BTreeMap::new();
            let mut tl = tl();
            for (op, k, len) in ops {
                // Keys of 1..=128 bytes sharing prefixes: nodes hold very different
                // numbers of entries, deletes leave holes that later inserts compact.
                let mut key = k.to_be_bytes().to_vec();
                key.resize(len, (k % 7) as u8);
                match op {
                    0 | 1 => {
                        let fresh = insert(&pool, &log, &mut tl, &t, &key, k as u64).unwrap();
                        prop_assert_eq!(fresh, !m.contains_key(&key));
                        m.entry(key).or_insert(k as u64);
                    }
                    _ => {
                        let got = delete(&pool, &log, &mut tl, &t, &key).unwrap();
                        prop_assert_eq!(got, m.remove(&key));
                    }
                }
            }
            verify_tree(&pool, &t);
            let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(all(&pool, &t, true), want.clone());
            let mut rev = want.clone();
            rev.reverse();
            prop_assert_eq!(all(&pool, &t, false), rev);
            for (k, v) in &want {
                prop_assert_eq!(lookup(&pool, &t, k).unwrap(), Some(*v));
            }
            // Range seeks from arbitrary bounds.
            for probe in [0u16, 1, 500, 2999, 3000] {
                let pk = probe.to_be_bytes();
                let f = seek(&pool, &t, From::Incl(&pk), true).unwrap().map(|f| f.key.as_bytes().to_vec());
                prop_assert_eq!(f, m.range(pk.to_vec()..).next().map(|(k, _)| k.clone()));
                let b = seek(&pool, &t, From::Excl(&pk), false).unwrap().map(|f| f.key.as_bytes().to_vec());
                prop_assert_eq!(b, m.range(..pk.to_vec()).next_back().map(|(k, _)| k.clone()));
            }
        }
    }

    #[test]
    fn long_keys_make_a_deep_tree_and_short_keys_a_shallow_one() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, log) = setup(dir.path(), 4096);
        let mut tl = tl();
        // Long keys (100..=128 bytes, random order): about 60 per full node, so inner
        // nodes split too and the root moves up twice.
        let long = Tree::open(&pool, create(&pool, &log, 0, 0).unwrap(), 0, 0).unwrap();
        let mut m = BTreeMap::new();
        let mut x = 1u64;
        for i in 0..25_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut k = (x >> 16).to_be_bytes().to_vec();
            k.resize(100 + (x % 29) as usize, (x >> 8) as u8);
            let fresh = insert(&pool, &log, &mut tl, &long, &k, i).unwrap();
            assert_eq!(fresh, m.insert(k, i).is_none());
        }
        assert!(
            verify_tree(&pool, &long) >= 2,
            "25k long keys must give >= 3 levels"
        );
        let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(all(&pool, &long, true), want);
        // Short ascending keys (the micro-benchmark's): hundreds per leaf.
        let short = Tree::open(&pool, create(&pool, &log, 0, 1).unwrap(), 0, 1).unwrap();
        for i in 0..25_000u64 {
            assert!(insert(&pool, &log, &mut tl, &short, &i.to_be_bytes(), i).unwrap());
        }
        assert_eq!(
            verify_tree(&pool, &short),
            1,
            "25k 8-byte keys fit under one inner node"
        );
        let g = pool.fix(short.root, Mode::S).unwrap();
        // 27 bytes per entry, 301 per full leaf; ascending inserts split at 90%: ~270.
        let leaves = count(g.page()) + 1;
        assert!(leaves <= 25_000 / 260, "{leaves} leaves: under 90% full");
        drop(g);
        // Descending inserts split in the middle (the new key goes first): half full.
        let down = Tree::open(&pool, create(&pool, &log, 0, 2).unwrap(), 0, 2).unwrap();
        for i in (0..25_000u64).rev() {
            assert!(insert(&pool, &log, &mut tl, &down, &i.to_be_bytes(), i).unwrap());
        }
        verify_tree(&pool, &down);
        let got = all(&pool, &down, true);
        assert_eq!(got.len(), 25_000);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, (k, v))| *v == i as u64 && k[..] == v.to_be_bytes()));
        let g = pool.fix(down.root, Mode::S).unwrap();
        let leaves = count(g.page()) + 1;
        assert!(
            (25_000 / 165..=25_000 / 135).contains(&leaves),
            "{leaves} leaves"
        );
    }

    #[test]
    fn deletes_leave_holes_that_an_insert_compacts_without_a_split() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, log) = setup(dir.path(), 64);
        let t = Tree::open(&pool, create(&pool, &log, 0, 0).unwrap(), 0, 0).unwrap();
        let mut tl = tl();
        // Fill the root leaf with 40-byte keys until the next one would not fit.
        let k40 = |i: u64| {
            let mut k = i.to_be_bytes().to_vec();
            k.resize(40, 7);
            k
        };
        let mut n = 0;
        loop {
            let g = pool.fix(t.root, Mode::S).unwrap();
            if !fits(g.page(), 40) {
                break;
            }
            drop(g);
            assert!(insert(&pool, &log, &mut tl, &t, &k40(2 * n), n).unwrap());
            n += 1;
        }
        // Delete every other key from the middle: holes, not contiguous free space.
        for i in (1..n - 1).step_by(2) {
            assert_eq!(
                delete(&pool, &log, &mut tl, &t, &k40(2 * i)).unwrap(),
                Some(i)
            );
        }
        let deleted = (1..n - 1).step_by(2).count() as u64;
        {
            let g = pool.fix(t.root, Mode::S).unwrap();
            let p = g.page();
            assert!(holes(p) > 0, "deletes from the middle leave holes");
            assert!(
                gap(p) < deleted as usize * (SLOT + cell_size(40)),
                "the re-inserts must need the holes' room"
            );
        }
        // Odd keys go between the survivors: they need the holes' room.
        for i in 0..deleted {
            assert!(insert(&pool, &log, &mut tl, &t, &k40(2 * i + 1), 1000 + i).unwrap());
        }
        let g = pool.fix(t.root, Mode::S).unwrap();
        let p = g.page();
        assert_eq!(level(p), 0, "the inserts must fit without a split");
        assert_eq!(count(p) as u64, n);
        assert_eq!(holes(p), 0, "an insert compacted the node");
        check_cells(p, t.root).unwrap();
        drop(g);
        verify_tree(&pool, &t);
        assert_eq!(lookup(&pool, &t, &k40(1)).unwrap(), Some(1000));
        assert_eq!(lookup(&pool, &t, &k40(2)).unwrap(), None);
        assert_eq!(lookup(&pool, &t, &k40(0)).unwrap(), Some(0));
    }

    /// A leaf page built in memory: `n` entries with keys of 1..=128 bytes, then every
    /// third deleted (so it has holes).
    fn sample_leaf(n: u64) -> (Page, Vec<(Vec<u8>, u64)>) {
        let t = Tree {
            root: 5,
            table: 1,
            index: 0,
            root_frame: u32::MAX,
        };
        let mut p: Page = [0; PAGE_SIZE];
        format_node(&mut p, 5, &t, 0);
        let mut m = BTreeMap::new();
        for x in 0..n {
            let k = mixed_key(x);
            if m.contains_key(&k) || !fits(&p, k.len()) {
                continue;
            }
            let i = lower_bound(&p, &k);
            insert_at(&mut p, i, &k, x);
            m.insert(k, x);
        }
        for x in (0..n).step_by(3) {
            let k = mixed_key(x);
            if m.remove(&k).is_some() {
                let i = lower_bound(&p, &k);
                remove_at(&mut p, i);
            }
        }
        (p, m.into_iter().collect())
    }

    fn entries(p: &Page) -> Vec<(Vec<u8>, u64)> {
        (0..count(p))
            .map(|i| (key(p, i).to_vec(), val(p, i)))
            .collect()
    }

    #[test]
    fn damaged_node_fields_are_refused_with_an_error() {
        let (good, want) = sample_leaf(200);
        check_cells(&good, 5).unwrap();
        assert_eq!(entries(&good), want);
        assert!(holes(&good) > 0);
        let n = count(&good);
        type Damage<'a> = (&'a str, &'a dyn Fn(&mut Page));
        let damage: [Damage<'_>; 9] = [
            ("count", &|p| set_count(p, MAX_COUNT + 1)),
            ("count into the cells", &|p| {
                set_count(p, (cells(p) - SLOTS) / SLOT + 1)
            }),
            ("cell start past the page", &|p| set_cells(p, PAGE_SIZE + 1)),
            ("cell start below the slots", &|p| set_cells(p, SLOTS)),
            ("holes", &|p| set_holes(p, PAGE_SIZE)),
            ("slot past the page", &|p| {
                put_u16(p, slot(n / 2), PAGE_SIZE as u16 - 3)
            }),
            ("slot below the cells", &|p| {
                put_u16(p, slot(0), SLOTS as u16)
            }),
            ("key length", &|p| {
                let at = cell(p, 1);
                p[at] = MAX_TREE_KEY as u8 + 1;
            }),
            ("key head", &|p| {
                let h = head(p, 2);
                put_u64(p, slot(2) + SLOT_HEAD, h ^ 1);
            }),
        ];
        for (what, f) in damage {
            let mut p = good;
            f(&mut p);
            let e = check_node(&p, 5).and_then(|_| check_cells(&p, 5));
            assert!(e.is_err(), "damaged {what} accepted");
            let r = Rec::new(Kind::BtDelete);
            assert!(redo(&mut p, &r).is_err(), "redo on a damaged {what}");
        }
        // A hole count that disagrees with the cells.
        let mut p = good;
        let h = holes(&p);
        set_holes(&mut p, h - 1);
        assert!(check_cells(&p, 5).is_err());
    }

    #[test]
    fn a_damaged_node_on_disk_is_an_error_when_read() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let (mut p, _) = sample_leaf(100);
        put_u16(&mut p, slot(3), (PAGE_SIZE - 2) as u16);
        page::seal(&mut p); // checksum fine: only the node check can catch it
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.path().join("data"))
            .unwrap();
        f.write_at(&p, 5 * PAGE_SIZE as u64).unwrap();
        let (pool, _log) = setup(dir.path(), 64);
        let e = pool
            .fix(5, Mode::S)
            .err()
            .expect("a damaged node must be refused");
        assert!(format!("{e}").contains("B-tree node 5 is damaged"), "{e}");
        assert!(Tree::open(&pool, 5, 1, 0).is_err());
    }

    #[test]
    fn redo_applies_inserts_and_deletes_and_refuses_what_does_not_fit() {
        let (mut p, mut want) = sample_leaf(400);
        let rec = |kind, payload: &'static [u8]| {
            let mut r = Rec::new(kind);
            r.page = 5;
            r.payload = payload;
            r
        };
        // Fill the leaf by redo until a longest key no longer fits; then that is refused.
        let mut x = 10_000u64;
        let big = |x: u64| {
            let mut v = x.to_be_bytes().to_vec();
            v.resize(MAX_TREE_KEY, 1);
            v.extend_from_slice(&x.to_le_bytes());
            &*Vec::leak(v)
        };
        while fits(&p, MAX_TREE_KEY) {
            redo(&mut p, &rec(Kind::BtInsert, big(x))).unwrap();
            let b = big(x);
            want.push((b[..MAX_TREE_KEY].to_vec(), x));
            x += 1;
        }
        want.sort();
        check_cells(&p, 5).unwrap();
        assert_eq!(entries(&p), want);
        assert!(
            redo(&mut p, &rec(Kind::BtInsert, big(x))).is_err(),
            "no room"
        );
        // Present key inserted again, absent key deleted, short payload: all refused.
        assert!(redo(&mut p, &rec(Kind::BtInsert, big(10_000))).is_err());
        assert!(redo(&mut p, &rec(Kind::BtDelete, big(x))).is_err());
        assert!(redo(&mut p, &rec(Kind::BtDelete, &[1, 2, 3])).is_err());
        redo(&mut p, &rec(Kind::BtDelete, big(10_000))).unwrap();
        want.retain(|(_, v)| *v != 10_000);
        assert_eq!(entries(&p), want);
    }

    #[test]
    fn page_images_round_trip_and_damaged_images_are_refused() {
        let (p, want) = sample_leaf(300);
        let mut buf = 2u32.to_le_bytes().to_vec();
        push_image(&mut buf, 5, &p);
        let (empty, _) = sample_leaf(0);
        push_image(&mut buf, 5, &empty);
        // Only the used ranges are logged (holes inside the cell area included).
        assert_eq!(
            buf.len(),
            4 + 2 * 12 + slots_end(&p) + (PAGE_SIZE - cells(&p)) + SLOTS
        );
        let mut r = Rec::new(Kind::PageImages);
        r.payload = &buf;
        let imgs = images(&r).unwrap();
        assert_eq!(imgs.len(), 2);
        let mut q: Page = [0xee; PAGE_SIZE];
        install_image(&mut q, &imgs[0]).unwrap();
        assert_eq!(entries(&q), want);
        assert_eq!(
            q[..],
            p[..slots_end(&p)]
                .iter()
                .chain(&vec![0; gap(&p)])
                .chain(&p[cells(&p)..])
                .copied()
                .collect::<Vec<_>>()[..]
        );
        install_image(&mut q, &imgs[1]).unwrap();
        assert_eq!(count(&q), 0);
        // Damage: wrong page id, truncated payload, a slot pointing into the zeroed gap.
        let img = Image { pid: 6, ..imgs[0] };
        assert!(install_image(&mut q, &img).is_err());
        let mut r2 = r;
        r2.payload = &buf[..buf.len() - 1];
        assert!(images(&r2).is_none());
        let mut bad = p;
        put_u16(&mut bad, slot(0), (slots_end(&p) + 1) as u16);
        let mut b2 = 1u32.to_le_bytes().to_vec();
        push_image(&mut b2, 5, &bad);
        let mut r3 = Rec::new(Kind::PageImages);
        r3.payload = &b2;
        assert!(install_image(&mut q, &images(&r3).unwrap()[0]).is_err());
    }

    #[test]
    fn concurrent_inserts_deletes_and_readers() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, log) = setup(dir.path(), 256);
        let root = create(&pool, &log, 0, 0).unwrap();
        let t = Tree::open(&pool, root, 0, 0).unwrap();
        let per = 3000u64;
        std::thread::scope(|s| {
            for w in 0..3u64 {
                let (pool, log) = (&pool, &log);
                s.spawn(move || {
                    let mut tl = tl();
                    for i in 0..per {
                        let x = i * 3 + w;
                        assert!(insert(pool, log, &mut tl, &t, &mixed_key(x), x).unwrap());
                        if i % 4 == 0 {
                            assert_eq!(
                                delete(pool, log, &mut tl, &t, &mixed_key(x)).unwrap(),
                                Some(x)
                            );
                        }
                    }
                });
            }
            let pool = &pool;
            s.spawn(move || {
                for _ in 0..20 {
                    // Ordered, no duplicates, every value matches its key.
                    let v = all(pool, &t, true);
                    for w in v.windows(2) {
                        assert!(w[0].0 < w[1].0);
                    }
                    for (k, val) in v {
                        assert_eq!(k, mixed_key(val));
                    }
                }
            });
        });
        verify_tree(&pool, &t);
        let v = all(&pool, &t, true);
        assert_eq!(v.len() as u64, 3 * per - 3 * per.div_ceil(4));
        for (k, x) in v {
            assert_eq!(k, mixed_key(x));
            assert_ne!((x / 3) % 4, 0);
        }
    }
}
