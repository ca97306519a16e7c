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
//! Node layout after the common 32-byte header: `[32]` level (0 = leaf), `[34..36)`
//! count, `[36..40)` table, `[40..42)` index, `[48..56)` child 0 (inner nodes), entries
//! from 64: `ENTRY` bytes each = key length (1) + key (`MAX_TREE_KEY`) + value (8).
//! In an inner node entry `i` = (separator `k_i`, child `i + 1`); child `j` holds keys
//! `k_{j-1} <= key < k_j`.

use crate::bpool::{BufferPool, PageGuard};
use crate::latch::Mode;
use crate::log::{Kind, Log, Rec};
use crate::page::{self, get_u16, get_u64, put_u16, put_u32, put_u64, Page, PageType, PAGE_SIZE};
use crate::xct::TxnLog;
use api::{Error, Result};
use std::cmp::Ordering;

pub const MAX_TREE_KEY: usize = 2 * api::key::MAX_KEY_LEN;
pub(crate) const ENTRY: usize = 1 + MAX_TREE_KEY + 8;
const ENTRIES: usize = 64;
pub const CAP: usize = (PAGE_SIZE - ENTRIES) / ENTRY;

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
    pub fn open(pool: &BufferPool, root: u64, table: u32, index: u16) -> Result<Tree> {
        let root_frame = pool.pin_forever(root)?;
        let g = pool.fix_frame(root_frame, root, Mode::S);
        check_node(g.page(), root)?;
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

// ---- node accessors ----

fn level(p: &Page) -> u8 {
    p[32]
}
fn count(p: &Page) -> usize {
    get_u16(p, 34) as usize
}
fn set_count(p: &mut Page, n: usize) {
    put_u16(p, 34, n as u16)
}
fn child0(p: &Page) -> u64 {
    get_u64(p, 48)
}
fn ent(i: usize) -> usize {
    ENTRIES + i * ENTRY
}
pub fn key(p: &Page, i: usize) -> &[u8] {
    let at = ent(i);
    &p[at + 1..at + 1 + p[at] as usize]
}
pub fn val(p: &Page, i: usize) -> u64 {
    get_u64(p, ent(i) + 1 + MAX_TREE_KEY)
}
fn set_entry(p: &mut Page, i: usize, k: &[u8], v: u64) {
    let at = ent(i);
    p[at] = k.len() as u8;
    p[at + 1..at + 1 + k.len()].copy_from_slice(k);
    put_u64(p, at + 1 + MAX_TREE_KEY, v);
}
fn insert_at(p: &mut Page, i: usize, k: &[u8], v: u64) {
    let n = count(p);
    assert!(n < CAP, "insert into a full node");
    p.copy_within(ent(i)..ent(n), ent(i + 1));
    set_entry(p, i, k, v);
    set_count(p, n + 1);
}
fn remove_at(p: &mut Page, i: usize) {
    let n = count(p);
    p.copy_within(ent(i + 1)..ent(n), ent(i));
    set_count(p, n - 1);
}
/// Byte-wise key order with a fast path on the first 8 bytes (most keys differ there;
/// saves a libc memcmp call per comparison in the binary searches).
#[inline]
fn cmp(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() >= 8 && b.len() >= 8 {
        let x = u64::from_be_bytes(a[..8].try_into().unwrap());
        let y = u64::from_be_bytes(b[..8].try_into().unwrap());
        if x != y {
            return x.cmp(&y);
        }
    }
    a.cmp(b)
}

/// First entry with key >= k.
fn lower_bound(p: &Page, k: &[u8]) -> usize {
    let (mut lo, mut hi) = (0, count(p));
    while lo < hi {
        let mid = (lo + hi) / 2;
        if cmp(key(p, mid), k) == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
/// First entry with key > k.
fn upper_bound(p: &Page, k: &[u8]) -> usize {
    let (mut lo, mut hi) = (0, count(p));
    while lo < hi {
        let mid = (lo + hi) / 2;
        if cmp(key(p, mid), k) != Ordering::Greater {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn format_node(p: &mut Page, pid: u64, t: &Tree, lvl: u8) {
    page::format(p, pid, PageType::BTree);
    p[32] = lvl;
    put_u32(p, 36, t.table);
    put_u16(p, 40, t.index);
}

fn check_node(p: &Page, pid: u64) -> Result<()> {
    if page::page_type(p) != PageType::BTree as u8 || count(p) > CAP {
        return Err(Error::fatal(format!(
            "page {pid} is not a B-tree node (corrupt)"
        )));
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
        if level(g.page()) == 0 && leaf_mode == Mode::X {
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
            let cg = pool.fix(c, mode)?;
            check_node(cg.page(), c)?;
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
    format_node(g.page_mut(), pid, &t, 0);
    log_images(log, &mut [&mut g]);
    Ok(pid)
}

/// Log pages as one redo-only record of full images and stamp them with its LSN.
fn log_images(log: &Log, gs: &mut [&mut PageGuard<'_>]) {
    let mut buf = Vec::with_capacity(4 + gs.len() * (12 + PAGE_SIZE));
    buf.extend_from_slice(&(gs.len() as u32).to_le_bytes());
    for g in gs.iter() {
        // Only the used part of a node: the rest is zero after redo (never read).
        let used = ent(count(g.page()));
        buf.extend_from_slice(&g.pid().to_le_bytes());
        buf.extend_from_slice(&(used as u32).to_le_bytes());
        buf.extend_from_slice(&g.page()[..used]);
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

/// The (page, image prefix) pairs of a page-images record; `None` if malformed.
pub fn images<'a>(r: &Rec<'a>) -> Option<Vec<(u64, &'a [u8])>> {
    let p = r.payload;
    let n = u32::from_le_bytes(p.get(..4)?.try_into().ok()?) as usize;
    let mut at = 4;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = u64::from_le_bytes(p.get(at..at + 8)?.try_into().ok()?);
        let len = u32::from_le_bytes(p.get(at + 8..at + 12)?.try_into().ok()?) as usize;
        if len > PAGE_SIZE {
            return None;
        }
        out.push((id, p.get(at + 12..at + 12 + len)?));
        at += 12 + len;
    }
    (at == p.len()).then_some(out)
}

/// Redo of a leaf insert/delete record on its page.
pub fn redo(p: &mut Page, r: &Rec<'_>) -> Result<()> {
    check_node(p, r.page)?;
    let (k, v) = split_kv(r.payload);
    let i = lower_bound(p, k);
    let present = i < count(p) && key(p, i) == k;
    match r.kind {
        Kind::BtInsert if !present && count(p) < CAP => insert_at(p, i, k, v),
        Kind::BtDelete if present => remove_at(p, i),
        _ => {
            return Err(Error::fatal(format!(
                "log record {} does not apply to page {} (corrupt log or page)",
                r.lsn, r.page
            )))
        }
    }
    Ok(())
}

fn split_kv(payload: &[u8]) -> (&[u8], u64) {
    let n = payload.len() - 8;
    (
        &payload[..n],
        u64::from_le_bytes(payload[n..].try_into().unwrap()),
    )
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
        if count(p) < CAP {
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

/// Make room in the leaf for `k`: X-crab from the root keeping unsafe ancestors, split
/// bottom-up, log all changed pages as one page-images record.
fn split_for(pool: &BufferPool, log: &Log, t: &Tree, k: &[u8]) -> Result<()> {
    let mut path: Vec<PageGuard<'_>> = Vec::with_capacity(8);
    let g = t.fix_root(pool, Mode::X);
    path.push(g);
    loop {
        let p = path.last().unwrap().page();
        if level(p) == 0 {
            break;
        }
        let c = child_at(p, child_index(p, Target::Key(k, false)));
        let cg = pool.fix(c, Mode::X)?;
        check_node(cg.page(), c)?;
        if count(cg.page()) < CAP {
            path.clear(); // a safe node: the split stops below its ancestors
        }
        path.push(cg);
    }
    if count(path.last().unwrap().page()) < CAP {
        return Ok(()); // someone else split it meanwhile
    }
    let mut changed: Vec<PageGuard<'_>> = Vec::new();
    // Split from the leaf up; `carry` is the (separator, new right page) for the parent.
    let mut carry: Option<(TKey, u64)> = None;
    while let Some(mut g) = path.pop() {
        let full = count(g.page()) >= CAP;
        if !full {
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
            lg.page_mut().copy_from_slice(g.page());
            page::put_u64(lg.page_mut(), 8, lp);
            let (rg, sep) = split_node(pool, t, &mut lg)?;
            let lvl = level(g.page()) + 1;
            let root = g.pid();
            format_node(g.page_mut(), root, t, lvl);
            put_u64(g.page_mut(), 48, lp);
            insert_at(g.page_mut(), 0, sep.as_bytes(), rg.pid());
            changed.push(g);
            (lg, rg, sep)
        } else {
            let (rg, sep) = split_node(pool, t, &mut g)?;
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

/// Move the upper half of `g` to a new right sibling; returns it and the separator.
fn split_node<'a>(
    pool: &'a BufferPool,
    t: &Tree,
    g: &mut PageGuard<'_>,
) -> Result<(PageGuard<'a>, TKey)> {
    let rp = pool.alloc_page();
    let mut rg = pool.fix_new(rp)?;
    let lvl = level(g.page());
    format_node(rg.page_mut(), rp, t, lvl);
    let n = count(g.page());
    let mid = n / 2;
    let sep = TKey::new(key(g.page(), mid));
    let from = if lvl == 0 { mid } else { mid + 1 };
    if lvl > 0 {
        put_u64(rg.page_mut(), 48, val(g.page(), mid));
    }
    let moved = n - from;
    rg.page_mut()[ent(0)..ent(moved)].copy_from_slice(&g.page()[ent(from)..ent(n)]);
    set_count(rg.page_mut(), moved);
    set_count(g.page_mut(), mid);
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

pub enum From<'a> {
    Start,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

/// The first entry at or after (forward) / at or before (backward) `from`.
pub fn seek(pool: &BufferPool, t: &Tree, from: From<'_>, forward: bool) -> Result<Option<Found>> {
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
            return Ok(Some(Found {
                key: TKey::new(key(p, i)),
                val: val(p, i),
                leaf: leaf.g.pid(),
                lsn: leaf.g.lsn(),
                idx: i as u16,
            }));
        }
        // Nothing here: continue in the neighbouring leaf, found by its fence key.
        let next = if forward { leaf.high } else { leaf.low };
        match next {
            None => return Ok(None),
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
    use crate::xct::{TxnLog, TxnSlot};
    use api::LogMode;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn setup(dir: &std::path::Path, frames: usize) -> (BufferPool, Arc<Log>) {
        let start = Log::create_empty(dir, 64).unwrap();
        let log = Arc::new(Log::open(dir, LogMode::Off, start, 64).unwrap());
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("data"))
            .unwrap();
        (BufferPool::new(f, frames, 1, log.clone()), log)
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn behaves_like_a_btreemap(ops in prop::collection::vec((0u8..3, 0u16..3000, 1usize..40), 1..1500)) {
            let dir = tempfile::tempdir().unwrap();
            let (pool, log) = setup(dir.path(), 256);
            let root = create(&pool, &log, 0, 0).unwrap();
            let t = Tree::open(&pool, root, 0, 0).unwrap();
            let mut m = BTreeMap::new();
            let mut tl = tl();
            for (op, k, len) in ops {
                // Variable-length keys sharing prefixes.
                let mut key = k.to_be_bytes().to_vec();
                key.resize(len.max(2), (k % 7) as u8);
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
    fn concurrent_inserts_deletes_and_readers() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, log) = setup(dir.path(), 128);
        let root = create(&pool, &log, 0, 0).unwrap();
        let t = Tree::open(&pool, root, 0, 0).unwrap();
        let per = 3000u64;
        std::thread::scope(|s| {
            for w in 0..3u64 {
                let (pool, log) = (&pool, &log);
                s.spawn(move || {
                    let mut tl = tl();
                    for i in 0..per {
                        let k = (i * 3 + w).to_be_bytes();
                        assert!(insert(pool, log, &mut tl, &t, &k, i * 3 + w).unwrap());
                        if i % 4 == 0 {
                            assert_eq!(
                                delete(pool, log, &mut tl, &t, &k).unwrap(),
                                Some(i * 3 + w)
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
                        assert_eq!(u64::from_be_bytes(k.try_into().unwrap()), val);
                    }
                }
            });
        });
        let v = all(&pool, &t, true);
        assert_eq!(v.len() as u64, 3 * per - 3 * per.div_ceil(4));
        for (k, val) in v {
            let x = u64::from_be_bytes(k.try_into().unwrap());
            assert_eq!(x, val);
            assert_ne!((x / 3) % 4, 0);
        }
    }
}
