//! `btree`: the ordered index. A B+tree of fixed-size nodes with optimistic lock coupling
//! (Leis et al.): every node has a version word; readers never write shared memory, they
//! read a node's fields and then check that its version did not change. Writers lock the
//! nodes they modify (at most a node, its parent and a sibling it moves keys into), each
//! by a compare-and-swap at the version they read, never waiting for one.
//!
//! Keys are byte strings of at most `MAX_KEY_LEN` bytes, stored in fixed slots as
//! big-endian 64-bit words (so comparing words as integers is memcmp order); the first
//! word of every slot sits in a separate array so a binary search touches few cache lines.
//! Values are `u64` (record addresses). Where the values carry their keys (the caller
//! says how to read them), a point lookup of a long key compares it there instead of in
//! the node's key block (`BTree::get_hinted_keyed`).
//!
//! Exposes the version words of the leaves a lookup or scan observed, so OCC can validate
//! them (phantom protection). Deletes never merge nodes; a leaf emptied by a delete is
//! taken out of its parent (`prune`, version bumped) but kept allocated until the tree is
//! dropped, so a node, once allocated, lives as long as the tree: readers may follow any
//! pointer they read.
//!
//! This module must never block a reader on a writer other than by re-trying, and never
//! free a node while the tree is shared.

use crate::arena;
use api::key::MAX_KEY_LEN;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering::*,
};

/// Keys per node (leaf and inner). 32 keys of up to 64 bytes: nodes of 576 bytes for
/// short keys, plus 256 bytes per extra key word once a node holds longer keys. 64
/// and 128 build and pass the tests too; they saved a level at 10 M keys but
/// prefetch twice and four times the lines per node, which cost more than the level
/// under `--interleave` (docs/PERFORMANCE.md, "Wider B+tree nodes").
pub const FANOUT: usize = 32;
/// Words per key slot.
const KW: usize = MAX_KEY_LEN / 8;
const LOCKED: u64 = 0b10;

/// A key prepared for comparison: big-endian words, zero-padded.
#[derive(Clone, Copy)]
pub struct KeyWords {
    w: [u64; KW],
    len: u8,
}

impl KeyWords {
    pub fn new(k: &[u8]) -> Self {
        assert!(k.len() <= MAX_KEY_LEN, "key longer than MAX_KEY_LEN");
        let mut w = [0u64; KW];
        // Whole words as loads; the last bytes shifted in one by one (a padded copy of a
        // variable length was a `memcpy` call per key).
        let full = k.len() / 8;
        for (i, word) in w.iter_mut().enumerate().take(full) {
            *word = u64::from_be_bytes(k[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        }
        if full < KW {
            let mut x = 0u64;
            for (j, &b) in k[full * 8..].iter().enumerate() {
                x |= (b as u64) << (56 - 8 * j);
            }
            w[full] = x;
        }
        KeyWords {
            w,
            len: k.len() as u8,
        }
    }

    /// The key's bytes, written into `out`.
    pub fn bytes<'a>(&self, out: &'a mut [u8; MAX_KEY_LEN]) -> &'a [u8] {
        // The key's words only (a scan passes every key it visits through here).
        let n = (self.len as usize).div_ceil(8);
        for (i, w) in self.w[..n].iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_be_bytes());
        }
        &out[..self.len as usize]
    }

    fn cmp(&self, o: &KeyWords) -> Ordering {
        let n = (self.len.max(o.len) as usize).div_ceil(8);
        for i in 0..n {
            if self.w[i] != o.w[i] {
                return self.w[i].cmp(&o.w[i]);
            }
        }
        self.len.cmp(&o.len)
    }
}

/// How a version word changed when this tree modified a leaf: lets a transaction keep
/// its own inserts and removals from failing its own node-set validation.
#[derive(Clone, Copy, Debug)]
pub struct NodeChange {
    pub ver: *const AtomicU64,
    pub before: u64,
    pub after: u64,
    /// The insert split a full leaf first (at most one per insert).
    pub split: Option<Split>,
}

/// A full leaf relieved by an insert: its version went from `before` to `after`, and
/// some of its keys moved to `other`: the keys above a point into a new leaf (a split),
/// whose version was `other_v` when the split published it, or the keys at one end into
/// a sibling beside it (`relieve`; `other_before`: the sibling's version before the move,
/// `other_v` after it). A transaction that had read the leaf at `before` read exactly
/// what the two leaves hold between them for its range, so it may keep both in its node
/// set instead of failing its own phantom check; one that had read the sibling at
/// `other_before` may keep it at `other_v` (it lost no key, only gained the moved ones).
#[derive(Clone, Copy, Debug)]
pub struct Split {
    pub ver: *const AtomicU64,
    pub before: u64,
    pub after: u64,
    pub other: *const AtomicU64,
    pub other_v: u64,
    pub other_before: Option<u64>,
}

#[repr(C)]
struct Hdr {
    version: AtomicU64,
    count: AtomicU32,
    leaf: bool,
    /// The node was allocated with a one-word key block right after it (`new_node`).
    block: bool,
    /// The arena pool the node (and its adjacent key block) came from.
    pool: arena::Pool,
    /// Where the next insert goes if inserts into this node are sequential: one past the
    /// position of the last key (leaf) or separator (inner node) inserted; 0 for none.
    /// Written under the node lock; read only to choose a split point.
    next_at: AtomicU8,
}

impl Hdr {
    /// The version if the node is not locked.
    #[inline]
    fn read_lock(&self) -> Option<u64> {
        let v = self.version.load(Acquire);
        (v & LOCKED == 0).then_some(v)
    }
    /// True if nothing changed since `v` was read (the reads in between were consistent).
    #[inline]
    fn check(&self, v: u64) -> bool {
        fence(Acquire);
        self.version.load(Relaxed) == v
    }
    fn upgrade(&self, v: u64) -> bool {
        let ok = self
            .version
            .compare_exchange(v, v | LOCKED, AcqRel, Relaxed)
            .is_ok();
        if ok {
            fence(Release);
        }
        ok
    }
    /// Unlock after a modification: the version moves on.
    fn unlock(&self) -> u64 {
        self.version.fetch_add(LOCKED, Release) + LOCKED
    }
    fn wait_unlocked(&self) {
        rt::wait_until(rt::WaitKind::Latch, None, || {
            self.version.load(Relaxed) & LOCKED == 0
        });
    }
    fn count(&self) -> usize {
        // A torn (concurrently changing) count is caught by the version check; clamp it
        // so that reading with it can never index out of bounds.
        (self.count.load(Relaxed) as usize).min(FANOUT)
    }
}

/// Words 1.. of every slot's key: a block allocated only once a node holds a key longer
/// than one word, `width` words per slot, as wide as the node's longest key needs (a
/// node of 20-byte keys takes 528 bytes of them, not the 1.8 KB of room for 64-byte
/// keys). A longer key replaces the block by a wider copy; the old one stays allocated,
/// linked from the new one, for readers that may still hold it, and is freed with the
/// node. Header, then `FANOUT * width` atomic words.
#[repr(C)]
struct Rest {
    width: usize,
    prev: *mut Rest,
}

impl Rest {
    /// Bytes of a block `width` words per slot wide (an arena size: header and words are
    /// whole 8-byte words).
    const fn bytes(width: usize) -> usize {
        std::mem::size_of::<Rest>() + FANOUT * width * 8
    }
    /// A zeroed block of `width` words per slot, linked to `prev`.
    fn alloc(width: usize, prev: *mut Rest) -> *mut Rest {
        assert!((1..KW).contains(&width), "rest width {width}");
        let p = alloc_bytes(Self::bytes(width), arena::Pool::Blocks) as *mut Rest;
        // SAFETY: a fresh slot of the block's size, 8-byte aligned; zeroed atomics are
        // valid; the header is written before the block is shared.
        unsafe {
            std::ptr::write_bytes(p as *mut u8, 0, Self::bytes(width));
            p.write(Rest { width, prev });
        }
        p
    }
    /// Word `j` (0-based, < width) beyond the head of slot `i`.
    #[inline]
    fn word(&self, i: usize, j: usize) -> &AtomicU64 {
        debug_assert!(i < FANOUT && j < self.width);
        // SAFETY: the block holds FANOUT * width words after the header.
        unsafe { &*((self as *const Rest).add(1) as *const AtomicU64).add(i * self.width + j) }
    }
    /// Word `x` of the block, counted across slots (`i * width + j` is `word(i, j)`).
    #[inline]
    fn flat(&self, x: usize) -> &AtomicU64 {
        debug_assert!(x < FANOUT * self.width);
        // SAFETY: the block holds FANOUT * width words after the header.
        unsafe { &*((self as *const Rest).add(1) as *const AtomicU64).add(x) }
    }
    /// # Safety
    /// `p` and its predecessors came from `alloc` (all but `adjacent`, the block allocated
    /// with the node, which goes with it) and no one can reach them any more.
    unsafe fn free_chain(mut p: *mut Rest, adjacent: *const Rest) {
        while !p.is_null() {
            let prev = (*p).prev;
            if !std::ptr::eq(p, adjacent) {
                free_bytes(p as *mut u8, Self::bytes((*p).width), arena::Pool::Blocks);
            }
            p = prev;
        }
    }
}

/// Fixed key slots.
#[repr(C)]
struct Slots {
    head: [AtomicU64; FANOUT],
    len: [AtomicU8; FANOUT],
    /// Null: every slot's words 1.. are zero. Replaced (under the node lock) only by a
    /// wider block; freed only with the node.
    rest: AtomicPtr<Rest>,
}

/// `lo` plus the number of slots `i` in `lo..hi` for which `below(i)` holds, the slots
/// for which it holds coming first (a node's slots are sorted). A binary search whose
/// every step is the same few instructions and a conditional move, never a branch on
/// the data: `below` is asked only of slots in `lo..hi`, about log2(hi - lo) + 1 times.
#[inline(always)]
fn slots_below(lo: usize, hi: usize, below: impl Fn(usize) -> bool) -> usize {
    debug_assert!(lo <= hi && hi <= FANOUT);
    if lo == hi {
        return lo;
    }
    // The answer lies in `base..=base + len`.
    let (mut base, mut len) = (lo, hi - lo);
    while len > 1 {
        let half = len / 2;
        base = if below(base + half) {
            base + half
        } else {
            base
        };
        len -= half;
    }
    base + below(base) as usize
}

impl Slots {
    #[inline]
    fn rest(&self) -> Option<&Rest> {
        // SAFETY: blocks are never freed while the tree is shared.
        unsafe { self.rest.load(Acquire).as_ref() }
    }
    /// Ask for the key block's header line and slot `i`'s words in it, for a block
    /// `width` words per slot wide (the caller's guess: its key's words past the first,
    /// which every slot has when a tree's keys are all one length). Reads no line of the
    /// block: its width sits in its header, and waiting for that line to learn where the
    /// slot lies was the very miss this is for. A wrong guess only asks for other lines.
    /// True if it asked (the node has a key block).
    #[inline]
    fn prefetch_rest(&self, i: usize, width: usize) -> bool {
        debug_assert!(i < FANOUT && width >= 1);
        let r = self.rest.load(Relaxed);
        if r.is_null() {
            return false;
        }
        rt::prefetch(r);
        let first = (r as *const u8).wrapping_add(Rest::bytes(0) + i * width * 8);
        rt::prefetch(first);
        // The slot's last byte may sit on the next line.
        rt::prefetch(first.wrapping_add(width * 8 - 1));
        true
    }
    #[inline]
    fn cmp(&self, i: usize, k: &KeyWords) -> Ordering {
        let h = self.head[i].load(Relaxed);
        if h != k.w[0] {
            return h.cmp(&k.w[0]);
        }
        let sl = self.len[i].load(Relaxed).min(MAX_KEY_LEN as u8);
        let n = (sl.max(k.len) as usize).div_ceil(8);
        if n > 1 {
            let rest = self.rest();
            for w in 1..n {
                let a = rest.map_or(0, |r| {
                    if w - 1 < r.width {
                        r.word(i, w - 1).load(Relaxed)
                    } else {
                        0
                    }
                });
                if a != k.w[w] {
                    return a.cmp(&k.w[w]);
                }
            }
        }
        sl.cmp(&k.len)
    }
    fn load(&self, i: usize) -> KeyWords {
        let mut w = [0u64; KW];
        w[0] = self.head[i].load(Relaxed);
        if let Some(rest) = self.rest() {
            for j in 0..rest.width {
                w[j + 1] = rest.word(i, j).load(Relaxed);
            }
        }
        KeyWords {
            w,
            len: self.len[i].load(Relaxed).min(MAX_KEY_LEN as u8),
        }
    }
    /// Caller holds the node's lock (or the node is not shared yet).
    fn store(&self, i: usize, k: &KeyWords) {
        self.head[i].store(k.w[0], Relaxed);
        self.len[i].store(k.len, Relaxed);
        let need = (k.len as usize).div_ceil(8).saturating_sub(1);
        let cur = self.rest();
        let rest = match cur {
            Some(r) if r.width >= need => r,
            None if need == 0 => return,
            _ => {
                // Wider block: copy every slot's words over, then publish it.
                let old = self.rest.load(Relaxed);
                let b = Rest::alloc(need, old);
                // SAFETY: just allocated, not shared yet.
                let nb = unsafe { &*b };
                if let Some(o) = cur {
                    for s in 0..FANOUT {
                        for j in 0..o.width {
                            nb.word(s, j).store(o.word(s, j).load(Relaxed), Relaxed);
                        }
                    }
                }
                self.rest.store(b, Release);
                nb
            }
        };
        for j in 0..rest.width {
            rest.word(i, j).store(k.w[j + 1], Relaxed);
        }
    }
    /// Free the key blocks but `adjacent` (the node's own, or null).
    fn free_rest(&mut self, adjacent: *const Rest) {
        // SAFETY: exclusive access (the node is being freed).
        unsafe { Rest::free_chain(*self.rest.get_mut(), adjacent) };
    }
    /// Move slots `i..n` one place right (slot `i` is then stale until stored). Caller
    /// holds the node's lock; `n < FANOUT`. Word by word, not through `load`/`store`:
    /// inserts shift about five slots on average in TPC-C, and a whole-key copy each
    /// was a sixth of New-Order's instructions.
    fn shift_right(&self, i: usize, n: usize) {
        debug_assert!(i <= n && n < FANOUT);
        for j in (i..n).rev() {
            self.head[j + 1].store(self.head[j].load(Relaxed), Relaxed);
            self.len[j + 1].store(self.len[j].load(Relaxed), Relaxed);
        }
        if let Some(r) = self.rest() {
            let w = r.width;
            for x in (i * w..n * w).rev() {
                r.flat(x + w).store(r.flat(x).load(Relaxed), Relaxed);
            }
        }
    }
    /// Move slots `i + 1..n` one place left (slot `i` is overwritten; slot `n - 1` is
    /// stale). Caller holds the node's lock.
    fn shift_left(&self, i: usize, n: usize) {
        debug_assert!(i < n && n <= FANOUT);
        for j in i..n - 1 {
            self.head[j].store(self.head[j + 1].load(Relaxed), Relaxed);
            self.len[j].store(self.len[j + 1].load(Relaxed), Relaxed);
        }
        if let Some(r) = self.rest() {
            let w = r.width;
            for x in i * w..(n - 1) * w {
                r.flat(x).store(r.flat(x + w).load(Relaxed), Relaxed);
            }
        }
    }
    /// Fill the slots `0..to - from` of this fresh (unshared, empty) node with `other`'s
    /// slots `from..to`, with a key block as wide as `other`'s (its own adjacent block
    /// when that is wide enough).
    fn take_from(&self, other: &Slots, from: usize, to: usize) {
        for j in from..to {
            self.head[j - from].store(other.head[j].load(Relaxed), Relaxed);
            self.len[j - from].store(other.len[j].load(Relaxed), Relaxed);
        }
        if let Some(o) = other.rest() {
            let w = o.width;
            let own = self.rest.load(Relaxed);
            // SAFETY: the fresh node's own (adjacent) block, if any.
            let b = match unsafe { own.as_ref() } {
                Some(r) if r.width == w => own,
                _ => Rest::alloc(w, own),
            };
            // SAFETY: just allocated, not shared yet.
            let nb = unsafe { &*b };
            for x in from * w..to * w {
                nb.flat(x - from * w)
                    .store(o.flat(x).load(Relaxed), Relaxed);
            }
            self.rest.store(b, Release);
        }
    }
    /// Number of slots in `lo..hi` whose first word is < `x` (or <= `x` with `or_equal`),
    /// plus `lo`. Integer compares only, written so the compiler can use conditional moves.
    /// (Not `slots_below`: its one fewer instruction per step measured no faster, and in
    /// one build, beside `rt::prefetch_lines`, string-key reads ran 0.8x; session 79.)
    #[inline(always)]
    fn heads_below(&self, mut lo: usize, hi: usize, x: u64, or_equal: bool) -> usize {
        let mut len = hi - lo;
        while len > 0 {
            let half = len / 2;
            let h = self.head[lo + half].load(Relaxed);
            if h < x || (or_equal && h == x) {
                lo += half + 1;
                len -= half + 1;
            } else {
                len = half;
            }
        }
        lo
    }

    /// `rank` where every key of the node and `k` fit in two words (TPC-C's composite
    /// keys): one branch-free binary search on (first word, second word), then the
    /// lengths of the slots equal to `k` in both.
    #[inline(always)]
    fn rank_two_words(&self, n: usize, rest: Option<&Rest>, k: &KeyWords, or_equal: bool) -> usize {
        let r = rest.expect("a node with two-word keys has a key block");
        debug_assert_eq!(r.width, 1);
        // The two words as one 128-bit number: one compare per step, and a conditional
        // move, not a branch (compared one by one, with `&&`, they compiled to three
        // branches per step, each a coin toss).
        let words = |i: usize| {
            (self.head[i].load(Relaxed) as u128) << 64 | r.word(i, 0).load(Relaxed) as u128
        };
        let x = (k.w[0] as u128) << 64 | k.w[1] as u128;
        let mut lo = slots_below(0, n, |i| words(i) < x);
        // The slots whose words are `k`'s (`k` itself, or keys differing from it in
        // trailing zero bytes only): the lengths decide.
        while lo < n && words(lo) == x {
            let l = self.len[lo].load(Relaxed);
            if l < k.len || (or_equal && l == k.len) {
                lo += 1;
            } else {
                break;
            }
        }
        lo
    }

    /// Word `w` of slot `i`'s key (0 beyond the node's key block).
    #[inline(always)]
    fn word_at(&self, rest: Option<&Rest>, i: usize, w: usize) -> u64 {
        if w == 0 {
            return self.head[i].load(Relaxed);
        }
        match rest {
            Some(r) if w - 1 < r.width => r.word(i, w - 1).load(Relaxed),
            _ => 0,
        }
    }

    /// `heads_below` for word `w >= 1`: slots `lo..hi` agree on words `0..w` and are sorted
    /// by word `w`.
    #[inline(always)]
    fn words_below(
        &self,
        rest: Option<&Rest>,
        w: usize,
        lo: usize,
        hi: usize,
        x: u64,
        or_equal: bool,
    ) -> usize {
        slots_below(lo, hi, |i| {
            let h = self.word_at(rest, i, w);
            h < x || (or_equal && h == x)
        })
    }

    /// Number of slots in `0..n` whose key is < `k` (or <= `k` with `or_equal`).
    /// Slots are sorted by (word 0, word 1, ..., length), so the search narrows word by
    /// word: a binary search on the first words gives the run of slots that share `k`'s,
    /// the next word's search narrows that run, and so on; the length decides last. Integer
    /// keys stop after the first word; composite keys whose first word a whole node shares
    /// (TPC-C's order lines) search their second word the same branch-free way instead
    /// of comparing whole keys.
    #[inline(always)]
    fn rank(&self, n: usize, k: &KeyWords, or_equal: bool) -> usize {
        let rest = self.rest();
        if k.len > 8 && k.len <= 16 && rest.is_some_and(|r| r.width == 1) {
            return self.rank_two_words(n, rest, k, or_equal);
        }
        let x = k.w[0];
        let lo = self.heads_below(0, n, x, false);
        if lo == n || self.head[lo].load(Relaxed) != x {
            return lo;
        }
        if k.len <= 8 && rest.is_none() && (lo + 1 == n || self.head[lo + 1].load(Relaxed) != x) {
            // Keys of one word, and one slot has `k`'s (a point lookup's usual end): the
            // lengths decide.
            let l = self.len[lo].load(Relaxed).min(MAX_KEY_LEN as u8);
            return lo + (l < k.len || (or_equal && l == k.len)) as usize;
        }
        self.rank_in_run(n, k, or_equal, rest, lo)
    }

    /// `rank` past slot `lo`, the first whose first word is `k`'s: the rest of the run of
    /// slots sharing it decides (out of line: the common search above stays small enough
    /// to inline at every caller).
    #[inline(never)]
    fn rank_in_run(
        &self,
        n: usize,
        k: &KeyWords,
        or_equal: bool,
        rest: Option<&Rest>,
        mut lo: usize,
    ) -> usize {
        let x = k.w[0];
        let mut hi = if lo + 1 == n || self.head[lo + 1].load(Relaxed) != x {
            lo + 1
        } else {
            self.heads_below(lo + 1, n, x, true)
        };
        // Words past both `k`'s and the key block's are zero in every key.
        let words = (k.len as usize)
            .div_ceil(8)
            .max(1 + rest.map_or(0, |r| r.width))
            .min(KW);
        for w in 1..words {
            let x = k.w[w];
            let a = self.words_below(rest, w, lo, hi, x, false);
            if a == hi || self.word_at(rest, a, w) != x {
                return a;
            }
            hi = if a + 1 == hi || self.word_at(rest, a + 1, w) != x {
                a + 1
            } else {
                self.words_below(rest, w, a + 1, hi, x, true)
            };
            lo = a;
        }
        // Equal words: shorter keys (trailing zero bytes fewer) come first.
        while lo < hi {
            let l = self.len[lo].load(Relaxed).min(MAX_KEY_LEN as u8);
            if l < k.len || (or_equal && l == k.len) {
                lo += 1;
            } else {
                break;
            }
        }
        lo
    }
}

// Cache-line aligned so a node spans the fewest lines (`prefetch` fetches them all).
#[repr(C, align(64))]
struct Leaf {
    hdr: Hdr,
    keys: Slots,
    vals: [AtomicU64; FANOUT],
}

/// Inner node: child `i` holds the keys `k` with `key[i-1] <= k < key[i]`.
#[repr(C, align(64))]
struct Inner {
    hdr: Hdr,
    keys: Slots,
    children: [AtomicPtr<Hdr>; FANOUT + 1],
}

// `next_at` and the key lengths are bytes; the header is two words.
const _: () = assert!(FANOUT < u8::MAX as usize && std::mem::size_of::<Hdr>() == 16);
// At the width in use every node and key block comes from the arena (so that
// `arena::reserve` covers a growing tree); only wider experimental widths fall back to
// the global allocator (`alloc_bytes`).
const _: () = assert!(
    FANOUT != 32
        || (arena::fits(std::mem::size_of::<Leaf>(), std::mem::align_of::<Leaf>())
            && arena::fits(std::mem::size_of::<Inner>(), std::mem::align_of::<Inner>())
            && arena::fits(Rest::bytes(KW - 1), std::mem::align_of::<Rest>()))
);

/// Memory for a node or key block of `bytes` (a multiple of 8), line-aligned when a
/// multiple of 64 (nodes are): from the arena (no allocator header between nodes, and
/// the memory of a growing tree can be reserved before a run, `arena::reserve`) when it
/// has a class that size, else from the global allocator (wide key blocks of wide nodes).
/// `pool`: the arena pool (see `new_node`).
fn alloc_bytes(bytes: usize, pool: arena::Pool) -> *mut u8 {
    if in_arena(bytes) {
        arena::alloc_in(pool, bytes)
    } else {
        let l = std::alloc::Layout::from_size_align(bytes, 64).expect("node layout");
        // SAFETY: a non-zero size.
        let p = unsafe { std::alloc::alloc(l) };
        if p.is_null() {
            std::alloc::handle_alloc_error(l);
        }
        p
    }
}

/// `alloc_bytes` takes `bytes` from the arena: a slot as aligned as the line for sizes of
/// whole lines, 8-byte aligned else (`arena::fits`).
fn in_arena(bytes: usize) -> bool {
    arena::fits(bytes, if bytes.is_multiple_of(64) { 64 } else { 8 })
}

/// Give back what `alloc_bytes(bytes, pool)` returned.
///
/// # Safety
/// As `arena::free_in`.
unsafe fn free_bytes(p: *mut u8, bytes: usize, pool: arena::Pool) {
    if in_arena(bytes) {
        // SAFETY: caller; it came from `arena::alloc_in(pool, bytes)`.
        unsafe { arena::free_in(pool, p, bytes) }
    } else {
        let l = std::alloc::Layout::from_size_align(bytes, 64).expect("node layout");
        // SAFETY: caller; it came from `std::alloc::alloc(l)`.
        unsafe { std::alloc::dealloc(p, l) }
    }
}

/// Bytes of a node (leaf or inner), with a one-word key block after it or not: whole
/// lines, so that nodes stay line-aligned.
const fn node_bytes(leaf: bool, block: bool) -> usize {
    let base = if leaf {
        std::mem::size_of::<Leaf>()
    } else {
        std::mem::size_of::<Inner>()
    };
    if block {
        (base + Rest::bytes(1)).next_multiple_of(64)
    } else {
        base
    }
}
/// Lines a descent prefetches of a node: the largest node.
const NODE_LINES: usize = {
    let (a, b) = (node_bytes(true, true), node_bytes(false, true));
    (if a > b { a } else { b }) / 64
};
/// Lines of the largest node without a key block: all a tree of keys of at most 8 bytes
/// has (9, against `NODE_LINES`' 14).
const SHORT_LINES: usize = {
    let (a, b) = (node_bytes(true, false), node_bytes(false, false));
    (if a > b { a } else { b }) / 64
};
// The prefetch counts measured at the width in use (docs/PERFORMANCE.md, issue 40).
const _: () = assert!(
    FANOUT != 32
        || (SHORT_LINES == 9
            && NODE_LINES == 14
            && arena::fits(node_bytes(true, true), 64)
            && arena::fits(node_bytes(false, true), 64))
);

/// Lines at the start of a node without a key block that its search reads: the header
/// (version, count), the first words and the lengths (through the key-block pointer).
/// A lookup's leaf under `--interleave` is asked for in two steps: these lines, then the
/// one line of the value its search chose (`BTree::descend`'s `split_leaf`).
const SEARCH_LINES: usize = {
    let a = std::mem::offset_of!(Leaf, keys) + std::mem::offset_of!(Slots, rest) + 8;
    let b = std::mem::offset_of!(Inner, keys) + std::mem::offset_of!(Slots, rest) + 8;
    (if a > b { a } else { b }).div_ceil(64)
};
// At the width in use: 5 of the leaf's 9 lines, then 1 (docs/PERFORMANCE.md, issue 40,
// session 67).
const _: () = assert!(FANOUT != 32 || SEARCH_LINES == 5);

/// A zeroed node. With `block`, a one-word key block (`Rest` of width 1) follows it in the
/// same allocation and is its key block from the start: a node of keys of 9-16 bytes
/// (TPC-C's composite keys) then has its second words next to its first, fetched by the
/// same prefetch, instead of in a block of its own that cost a dependent miss per node
/// visited (40% of `Slots::rank`'s samples were that block's first load).
///
/// Inner nodes come from arena chunks apart from the leaves' (`arena::Pool::Inner`): a
/// tree has about 20-30 leaves per inner node, and inner nodes carved from the same chunks
/// as the leaves (both 576 bytes) lay the lowest inner level, itself too large for the
/// caches at 10 M keys, one node in every few pages of the leaves, so a read's visit to it
/// cost a page walk of its own on this project's VM (nested paging), as the leaf's does.
/// A leaf comes from `pool`: the common one, beside the records allocated next, when
/// keys are appended to it (the records it will point to follow it, so a read's record
/// lies in its leaf's page), `Nodes` when it splits off in no order (`split_locked`).
fn new_node(leaf: bool, block: bool, pool: arena::Pool) -> *mut Hdr {
    debug_assert_eq!(leaf, pool != arena::Pool::Inner);
    let bytes = node_bytes(leaf, block);
    let p = alloc_bytes(bytes, pool);
    // SAFETY: a fresh slot of `bytes`, line-aligned; every field of a node and of a key
    // block is an atomic integer/pointer, a bool or the pool (zero: `Common`), for which
    // all-zero is valid; the block's header is written before the node is shared.
    unsafe {
        std::ptr::write_bytes(p, 0, bytes);
        let h = p as *mut Hdr;
        (*h).leaf = leaf;
        (*h).block = block;
        (*h).pool = pool;
        if block {
            let r = p.add(node_bytes(leaf, false)) as *mut Rest;
            r.write(Rest {
                width: 1,
                prev: std::ptr::null_mut(),
            });
            let keys = if leaf {
                &(*(p as *const Leaf)).keys
            } else {
                &(*(p as *const Inner)).keys
            };
            keys.rest.store(r, Relaxed);
        }
        h
    }
}

fn new_leaf(block: bool, pool: arena::Pool) -> *mut Hdr {
    new_node(true, block, pool)
}

fn new_inner(block: bool) -> *mut Inner {
    new_node(false, block, arena::Pool::Inner) as *mut Inner
}

/// Whether a node split off `keys` (or above it) gets an adjacent key block: when its
/// keys need exactly one word more than the first.
fn wants_block(keys: &Slots) -> bool {
    keys.rest().is_some_and(|r| r.width == 1)
}

/// Give a node (and its key blocks) back to the arena.
///
/// # Safety
/// `p` came from `new_leaf`/`new_inner`, is freed once, and no one can reach it any more.
unsafe fn free_node(p: *mut Hdr) {
    // SAFETY: caller.
    unsafe {
        let (leaf, block, pool) = ((*p).leaf, (*p).block, (*p).pool);
        let adjacent = if block {
            (p as *const u8).add(node_bytes(leaf, false)) as *const Rest
        } else {
            std::ptr::null()
        };
        if leaf {
            (*(p as *mut Leaf)).keys.free_rest(adjacent);
        } else {
            (*(p as *mut Inner)).keys.free_rest(adjacent);
        }
        free_bytes(p as *mut u8, node_bytes(leaf, block), pool);
    }
}

/// Ask for a whole node at once (its first `lines` lines, `BTree::node_lines`): header,
/// first-word array and the value or child array. The binary search and the value (or
/// child pointer) it selects then hit in cache, instead of each missing in turn (one
/// memory latency per node instead of two or three).
#[inline(always)]
fn prefetch(p: *const Hdr, lines: usize) {
    debug_assert!(lines <= NODE_LINES);
    // The counts a descent asks for as constants, so each request unrolls into that many
    // prefetch instructions with no loop around them.
    match lines {
        SHORT_LINES => rt::prefetch_lines(p as *const u8, SHORT_LINES),
        SEARCH_LINES => rt::prefetch_lines(p as *const u8, SEARCH_LINES),
        _ => rt::prefetch_lines(p as *const u8, lines),
    }
}

#[inline]
fn as_leaf(h: &Hdr) -> &Leaf {
    debug_assert!(h.leaf);
    // SAFETY: a Hdr with `leaf` set is the first field of a repr(C) Leaf.
    unsafe { &*(h as *const Hdr as *const Leaf) }
}
#[inline]
fn as_inner(h: &Hdr) -> &Inner {
    debug_assert!(!h.leaf);
    // SAFETY: a Hdr without `leaf` is the first field of a repr(C) Inner.
    unsafe { &*(h as *const Hdr as *const Inner) }
}

pub struct BTree {
    root: AtomicPtr<Hdr>,
    /// Set (for good) before the first key of 9-16 bytes goes in: until then no node has
    /// a key block allocated with it (`new_node`'s `block`: only nodes whose keys need
    /// exactly one word more than the first get one) and a descent prefetches
    /// `SHORT_LINES` of each node, not `NODE_LINES`. Longer keys' words live in blocks of
    /// their own, which the node's prefetch does not reach either way. Under `--interleave` the five lines beyond a short node (the next
    /// node in its arena chunk) took memory-system slots from the other coroutines'
    /// misses. Only a prefetch hint: a stale `false` costs a miss, never a wrong read.
    wide: AtomicBool,
    /// The depth of the leaves (root: 0) as the last descent found it: where a lookup's
    /// descent asks for the leaf in two steps under `--interleave` (`descend`). All leaves
    /// are at one depth; a root split moves it by one, seen at the next descent. Only a
    /// prefetch hint: a stale value makes one descent ask for a whole node, or for an
    /// inner node's search lines only (its child line then misses), never a wrong read.
    leaf_depth: AtomicU32,
    /// Nodes taken out of the tree (emptied leaves, and the single-child inner nodes above
    /// them): readers may still hold them, so they are freed only with the tree.
    pruned: parking_lot::Mutex<Vec<usize>>,
    /// Lookups reach probe points (`BTree::set_probes`): false for a tree expected to
    /// stay in cache, whose lookups then only prefetch.
    probes: bool,
    /// The tree's name in `simulate --btree-levels`' markers (`BTree::named`).
    tree: u32,
}

// SAFETY: all shared state is atomics; nodes are freed only in Drop (exclusive access).
unsafe impl Send for BTree {}
unsafe impl Sync for BTree {}

impl Default for BTree {
    fn default() -> Self {
        Self::new()
    }
}

/// A leaf a worker last used in one tree: the leaf, its version then, and its high fence
/// then (`None`: the rightmost leaf). Where its last insert went ([`BTree::insert_hinted`])
/// or its last lookup ([`BTree::get_hinted`]). Belongs to one tree; never dereferenced
/// after it.
pub struct LeafHint {
    leaf: *const Leaf,
    v: u64,
    hi: Option<KeyWords>,
    /// Not null: `hi` is not read yet; it is separator `fence_i` of this inner node,
    /// which the descent passed at version `fence_v` (`LeafHint::defer`). Read when the
    /// hint is next used, if ever: a lookup of long keys then touches no key block of that
    /// node (the separator's words past the first live there, a miss of its own).
    fence: *const Inner,
    fence_v: u64,
    fence_i: usize,
    /// Where in the leaf the last hinted lookup found its key: the next lookup tries the
    /// slot after it first (Delivery reads an order's lines in key order).
    pos: usize,
    /// The value in the slot after the key the last hinted lookup found, when it found
    /// it in the slot after the one before (a run of neighbouring keys, whose next key is
    /// likely next): its caller may ask for that value's lines. 0: none. Read under no
    /// version check, so only ever a hint.
    ahead: u64,
}

impl LeafHint {
    /// See the `ahead` field.
    #[inline]
    pub fn ahead(&self) -> u64 {
        self.ahead
    }
}

impl Default for LeafHint {
    fn default() -> Self {
        LeafHint {
            leaf: std::ptr::null(),
            v: 0,
            hi: None,
            fence: std::ptr::null(),
            fence_v: 0,
            fence_i: 0,
            pos: 0,
            ahead: 0,
        }
    }
}

impl Leaf {
    /// The slot of key `k` among the leaf's first `n` keys (read under a version the
    /// caller checks after), trying slot `guess` first (a hint's; out of range: none),
    /// then a search.
    #[inline]
    fn slot_of(&self, n: usize, k: &KeyWords, guess: usize) -> Option<usize> {
        if guess < n && self.keys.cmp(guess, k) == Ordering::Equal {
            return Some(guess);
        }
        let i = self.keys.rank(n, k, false);
        (i < n && self.keys.cmp(i, k) == Ordering::Equal).then_some(i)
    }
}

impl LeafHint {
    /// Remember `leaf` at version `v`, with the high fence read from `hi_at` if that node
    /// is still at the version the descent saw (else no hint).
    fn take(&mut self, leaf: &Leaf, v: u64, hi_at: Option<(&Inner, u64, usize)>) {
        self.leaf = std::ptr::null();
        self.fence = std::ptr::null();
        self.hi = match hi_at {
            None => None,
            Some((x, xv, i)) => {
                let hi = x.keys.load(i);
                if !x.hdr.check(xv) {
                    return;
                }
                Some(hi)
            }
        };
        self.leaf = leaf;
        self.v = v;
    }

    /// `take`, leaving the high fence in its node until the hint is used (`fence`).
    fn defer(&mut self, leaf: &Leaf, v: u64, hi_at: Option<(&Inner, u64, usize)>) {
        self.hi = None;
        self.fence = std::ptr::null();
        if let Some((x, xv, i)) = hi_at {
            self.fence = x;
            self.fence_v = xv;
            self.fence_i = i;
        }
        self.leaf = leaf;
        self.v = v;
    }

    /// Read a deferred high fence (`defer`), if its node is still at the version the
    /// descent saw: the separator is then the one the leaf's range ended at. False (and
    /// the hint forgotten) if that node changed.
    fn resolve_fence(&mut self) -> bool {
        // SAFETY: a node of this hint's tree (the caller's contract); nodes are never
        // freed while the tree is shared.
        let Some(x) = (unsafe { self.fence.as_ref() }) else {
            return true;
        };
        let hi = x.keys.load(self.fence_i);
        self.fence = std::ptr::null();
        if !x.hdr.check(self.fence_v) {
            self.leaf = std::ptr::null();
            return false;
        }
        self.hi = Some(hi);
        true
    }
}

/// One table's B+tree leaf hints (`LeafHint`), several so that interleaved runs of keys
/// keep one each: TPC-C appends orders, order lines and history in ten districts, and a
/// worker's consecutive transactions go to different ones. A key's first eight bytes (its
/// prefix: the district, in TPC-C) choose between two slots; the slot that served that
/// prefix last is taken, else the one used longer ago, which then forgets its leaf (the
/// other prefix's). A wrong hint only costs the check.
///
/// Two choices with tags, not one hashed slot: ten districts hashed into 32 slots share
/// slots (a multiplicative hash of the prefix word gave them 2-4 slots, as the district
/// byte sits in the middle of the word), and two districts in one slot undo each other's
/// hint at every change of district. 64 slots keep the 20 districts of two warehouses
/// apart (`tests/index.rs`).
pub struct Hints(Box<HintSet>);

const HINTS: usize = 64;
const _: () = assert!(HINTS == 1 << (64 - 58));

struct HintSet {
    hints: [LeafHint; HINTS],
    /// The prefix word each slot last served.
    tags: [u64; HINTS],
    /// When each slot was last taken (`clock` then).
    used: [u64; HINTS],
    clock: u64,
}

impl Default for Hints {
    fn default() -> Self {
        Hints(Box::new(HintSet {
            hints: std::array::from_fn(|_| Default::default()),
            tags: [u64::MAX; HINTS],
            used: [0; HINTS],
            clock: 0,
        }))
    }
}

impl Hints {
    #[inline]
    pub fn for_key(&mut self, key: &[u8]) -> &mut LeafHint {
        let w = match key.first_chunk::<8>() {
            Some(w) => u64::from_le_bytes(*w),
            None => key.iter().fold(0u64, |h, &b| (h << 8) | b as u64),
        };
        // Fold the high half down before the multiply, which carries bits upwards only;
        // the two choices are two ranges of the product's high bits.
        let h = (w ^ (w >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let (a, b) = ((h >> 58) as usize, (h >> 40) as usize % HINTS);
        let s = &mut *self.0;
        s.clock += 1;
        let i = if s.tags[a] == w {
            a
        } else if s.tags[b] == w {
            b
        } else {
            let i = if s.used[a] <= s.used[b] { a } else { b };
            s.tags[i] = w;
            // The slot's leaf is another prefix's: checking it would cost a miss (and,
            // in a large tree, a page walk) at the start of nearly every lookup of random
            // keys, for a leaf that almost never holds the key.
            s.hints[i].leaf = std::ptr::null();
            i
        };
        s.used[i] = s.clock;
        &mut s.hints[i]
    }
}

/// Where a read-only descent should go.
#[derive(Clone, Copy)]
enum Seek<'a> {
    /// The leaf that holds `k` (if present).
    At(&'a KeyWords),
    /// The leaf that holds the greatest keys below `k`.
    Below(&'a KeyWords),
    First,
    Last,
}

/// A leaf found by a read-only descent, with the bounds of its key range.
struct Found<'t> {
    leaf: &'t Leaf,
    v: u64,
    /// The leaf's parent, its version when the child pointer was read, and the leaf's
    /// index among its children (None: the leaf is the root).
    parent: Option<(&'t Inner, u64, usize)>,
    /// The lowest inner node on the path whose child taken is not its last, its version
    /// then and that child's index: its separator after the child is the leaf's high
    /// fence (`LeafHint::take`). Kept even without `fences`, so a lookup can load that one
    /// key at the end instead of two keys per level (each a line of a separate key block
    /// for keys longer than 16 bytes, not prefetched with the node).
    hi_at: Option<(&'t Inner, u64, usize)>,
    /// The leaf was asked for in two steps (`descend`'s `split_leaf`): only its
    /// `SEARCH_LINES` so far; the caller asks for the line of the slot its search chooses,
    /// and reaches a probe point, before reading that slot's value.
    partial: bool,
    /// The tree's lookups reach probe points (`BTree::set_probes`).
    probes: bool,
}

/// The separators around the leaf a descent reached (its low and high fences), for a
/// scan that goes on into the next leaf. Apart from `Found`, and filled only when asked
/// for: a point lookup's descent no longer copies two keys per level, nor returns them.
#[derive(Default)]
struct Fences {
    lo: Option<KeyWords>,
    hi: Option<KeyWords>,
}

impl Found<'_> {
    /// Second step of a leaf asked for in two (`partial`): the line of slot `i`'s value,
    /// then a probe point while it comes.
    #[inline]
    fn ask_slot(&self, i: usize) {
        debug_assert!(self.partial && i < FANOUT);
        rt::prefetch_point(&self.leaf.vals[i] as *const AtomicU64);
    }
}

impl BTree {
    pub fn new() -> Self {
        BTree {
            root: AtomicPtr::new(new_leaf(false, arena::Pool::Common)),
            wide: AtomicBool::new(false),
            leaf_depth: AtomicU32::new(0),
            pruned: parking_lot::Mutex::new(Vec::new()),
            probes: true,
            tree: probe::level::NO_TREE,
        }
    }

    /// A tree named `tree` in the level markers of `simulate --btree-levels`
    /// (`probe::level::tree`: its table and index).
    pub fn named(tree: u32) -> Self {
        let mut t = BTree::new();
        t.tree = tree;
        t
    }

    /// Whether lookups reach probe points below the top two levels (default: yes). An
    /// owner that expects the tree and what its values lead to to stay in cache turns
    /// them off: under `--interleave` a switch there would only cost. Lookups still
    /// prefetch; without an interleaving scheduler nothing changes.
    pub fn set_probes(&mut self, on: bool) {
        self.probes = on;
    }

    /// See [`BTree::set_probes`].
    #[inline]
    pub fn probes(&self) -> bool {
        self.probes
    }

    /// Lines of a node a descent prefetches (see `wide`).
    #[inline]
    fn node_lines(&self) -> usize {
        if self.wide.load(Relaxed) {
            NODE_LINES
        } else {
            SHORT_LINES
        }
    }

    /// Before a key goes in: a key of 9-16 bytes makes the tree `wide` for good.
    #[inline]
    fn note_key(&self, key: &[u8]) {
        if (9..=16).contains(&key.len()) && !self.wide.load(Relaxed) {
            self.wide.store(true, Relaxed);
        }
    }

    fn root(&self) -> &Hdr {
        // SAFETY: the root is always a valid node (nodes are never freed while shared).
        unsafe { &*self.root.load(Acquire) }
    }

    /// Descend to a leaf for `seek`, optimistically; fences only when asked.
    ///
    /// `split_leaf` (point lookups, whose callers read one value of the leaf): when a
    /// scheduler switches at probe points (`--interleave`) and the leaves lie below the
    /// top two levels, ask for the leaf's `SEARCH_LINES` only and leave the line of the
    /// value its search chooses to the caller (`Found::partial`), instead of the whole
    /// node: 5 + 1 lines instead of 9, at the cost of a second switch. On the Xeon kind
    /// that made 10 M-key reads at `--interleave 8` about 6% faster (3-9% in four rounds;
    /// docs/PERFORMANCE.md, issue 40, session 67); inner nodes split the same way were
    /// not faster (their lower level is mostly in the last-level cache, where a switch
    /// costs about what the lines saved do).
    /// Without such a scheduler the second line would be a stall of its own: whole nodes.
    fn descend(&self, seek: Seek, mut fences: Option<&mut Fences>, split_leaf: bool) -> Found<'_> {
        'restart: loop {
            if let Some(f) = fences.as_deref_mut() {
                *f = Fences::default();
            }
            let leaf_depth = self.leaf_depth.load(Relaxed);
            // `simulate --btree-levels`: what follows reads the root.
            probe::btree_level(probe::level::at(self.tree, 0, leaf_depth));
            let mut node = self.root();
            let Some(mut v) = node.read_lock() else {
                node.wait_unlocked();
                continue;
            };
            if !std::ptr::eq(node, self.root()) {
                continue;
            }
            let mut parent = None;
            let mut hi_at = None;
            let mut depth = 0u32;
            let lines = self.node_lines();
            // Trees of keys of 9-16 bytes keep second words after the node (`wide`): their
            // search reads lines past `SEARCH_LINES`.
            let split = split_leaf && lines == SHORT_LINES && self.probes && rt::probes_switch();
            let mut partial = false;
            while !node.leaf {
                // A STEPS CTX point (optimistic: a switch costs at most a restart).
                rt::point(rt::Point::Ctx(rt::Component::BtreeLevel));
                let inner = as_inner(node);
                let n = node.count();
                let i = match seek {
                    Seek::At(k) => inner.keys.rank(n, k, true),
                    Seek::Below(k) => inner.keys.rank(n, k, false),
                    Seek::First => 0,
                    Seek::Last => n,
                };
                if let Some(f) = fences.as_deref_mut() {
                    if i > 0 {
                        f.lo = Some(inner.keys.load(i - 1));
                    }
                    if i < n {
                        f.hi = Some(inner.keys.load(i));
                    }
                }
                let child = inner.children[i].load(Acquire);
                if !node.check(v) || child.is_null() {
                    continue 'restart;
                }
                depth += 1;
                // `simulate --btree-levels`: what follows reads the child.
                probe::btree_level(probe::level::at(self.tree, depth, leaf_depth));
                partial = split && depth > 2 && depth == leaf_depth;
                // Below the top two levels (1 + 32 nodes, which stay in cache) a node is
                // likely a miss: an interleaving scheduler runs another transaction while
                // it comes.
                rt::prefetch_for_probe(depth > 2 && self.probes, || {
                    prefetch(child, if partial { SEARCH_LINES } else { lines })
                });
                // SAFETY: validated child pointer of a live node; nodes are never freed.
                let c = unsafe { &*child };
                let Some(cv) = c.read_lock() else {
                    c.wait_unlocked();
                    continue 'restart;
                };
                // Coupling: the parent unchanged after the child's version was read means
                // the child still covers the key at version `cv`.
                if !node.check(v) {
                    continue 'restart;
                }
                parent = Some((inner, v, i));
                if i < n {
                    hi_at = parent;
                }
                node = c;
                v = cv;
            }
            if depth != leaf_depth {
                self.leaf_depth.store(depth, Relaxed);
            }
            // `--stats`: the nodes of this (last, successful) descent.
            txnstats::add(txnstats::Counter::IndexNodes, depth as u64 + 1);
            return Found {
                leaf: as_leaf(node),
                v,
                parent,
                hi_at,
                partial,
                probes: self.probes,
            };
        }
    }

    /// (entries, nodes) of the tree, for `--stats`' database sizes. Exact when no
    /// transaction runs (the driver asks after the load); never unsafe, as nodes are
    /// never freed while the tree is shared.
    pub fn census(&self) -> (u64, u64) {
        let (mut entries, mut nodes) = (0u64, 0u64);
        let mut stack = vec![self.root.load(Acquire) as *const Hdr];
        while let Some(p) = stack.pop() {
            // SAFETY: a child pointer read from a live node (see above).
            let h = unsafe { &*p };
            nodes += 1;
            let n = h.count();
            if h.leaf {
                entries += n as u64;
            } else {
                let inner = as_inner(h);
                for c in &inner.children[..=n] {
                    let c = c.load(Acquire);
                    if !c.is_null() {
                        stack.push(c);
                    }
                }
            }
        }
        (entries, nodes)
    }

    /// Point lookup. Returns the value (if present) and the leaf version observed.
    pub fn get(&self, key: &[u8]) -> (Option<u64>, *const AtomicU64, u64) {
        self.get_from_root(&KeyWords::new(key), None)
    }

    /// [`BTree::get`] looking first in the leaf `hint` remembers (where the caller's last
    /// hinted lookup in this tree ended), and remembering where this one ends. Delivery's
    /// ten order lines of one order, and any run of nearby keys one worker reads or
    /// updates, then descend once, not once per key.
    pub fn get_hinted(
        &self,
        key: &[u8],
        hint: &mut LeafHint,
    ) -> (Option<u64>, *const AtomicU64, u64) {
        let k = KeyWords::new(key);
        if let Some(r) = self.get_at_hint(&k, hint) {
            return r;
        }
        self.get_from_root(&k, Some(hint))
    }

    /// [`BTree::get_hinted`] for a tree whose values carry their keys (the memory
    /// engine's records of long keys): a key over 16 bytes is not compared in the leaf's
    /// key block (its words past the first, a random line of its own, one more page walk
    /// per read on a large tree) but in the value's own copy, which the caller reads next
    /// anyway. The leaf gives the candidate: the one slot whose first word and length are
    /// the key's. `ask(v)` asks for the lines `holds(v, key)` and the caller will read;
    /// `holds(v, key)` tells whether value `v` was inserted with `key`, and is called only
    /// with a value the leaf held at a version checked after it was read (so, for a
    /// caller pinned before the lookup whose values are freed only once unlinked and the
    /// pinned readers gone, a value still allocated). Slots sharing their first word
    /// (rare for random strings, the rule for structured keys) are compared in the key
    /// block, in the leaf already reached (`get_in_leaf`); keys of at most 16 bytes
    /// (whose words the node holds) take [`BTree::get_hinted`]'s path.
    ///
    /// Exact: at the checked version the candidate is the only slot that can hold the
    /// key, so a value that does not hold it means the key is absent. The last field is
    /// true when the value returned was asked for (`ask`) and waited for.
    pub fn get_hinted_keyed(
        &self,
        key: &[u8],
        hint: &mut LeafHint,
        ask: impl FnOnce(u64),
        holds: impl FnOnce(u64, &[u8]) -> bool,
    ) -> (Option<u64>, *const AtomicU64, u64, bool) {
        let k = KeyWords::new(key);
        if let Some((val, ver, v)) = self.get_at_hint(&k, hint) {
            return (val, ver, v, false);
        }
        if k.len <= 16 {
            let (val, ver, v) = self.get_from_root(&k, Some(hint));
            return (val, ver, v, false);
        }
        let x = k.w[0];
        loop {
            let f = self.descend(Seek::At(&k), None, true);
            let leaf = f.leaf;
            let keys = &leaf.keys;
            let n = leaf.hdr.count();
            let i = keys.heads_below(0, n, x, false);
            let head = i < n && keys.head[i].load(Relaxed) == x;
            if head && i + 1 < n && keys.head[i + 1].load(Relaxed) == x {
                // Several slots share the first word: the key block decides, in this leaf.
                match Self::get_in_leaf(&f, &k, Some(hint)) {
                    Some((val, ver, v)) => return (val, ver, v, false),
                    None => continue,
                }
            }
            if f.partial && head {
                f.ask_slot(i);
            }
            let cand =
                (head && keys.len[i].load(Relaxed) == k.len).then(|| leaf.vals[i].load(Relaxed));
            if !leaf.hdr.check(f.v) {
                continue;
            }
            let found = cand.filter(|&val| {
                // Under --interleave, another transaction runs while the value comes.
                rt::prefetch_for_probe(self.probes, || ask(val));
                holds(val, key)
            });
            hint.defer(leaf, f.v, f.hi_at);
            hint.pos = if found.is_some() { i } else { 0 };
            hint.ahead = 0;
            let asked = found.is_some();
            return (found, &leaf.hdr.version, f.v, asked);
        }
    }

    /// The lookup down from the root; with a `hint`, remembering the leaf it ends in.
    fn get_from_root(
        &self,
        k: &KeyWords,
        mut hint: Option<&mut LeafHint>,
    ) -> (Option<u64>, *const AtomicU64, u64) {
        // No fences on the way down (two keys copied per level): the hint's one fence,
        // the leaf's high one, is read at the leaf (`Found::hi_at`, `get_in_leaf`).
        loop {
            let f = self.descend(Seek::At(k), None, true);
            if let Some(r) = Self::get_in_leaf(&f, k, hint.as_deref_mut()) {
                return r;
            }
        }
    }

    /// [`BTree::get_from_root`]'s step in the leaf `f` it descended to (found without the
    /// fences). `None`: the leaf changed meanwhile; descend again.
    #[inline]
    fn get_in_leaf(
        f: &Found<'_>,
        k: &KeyWords,
        hint: Option<&mut LeafHint>,
    ) -> Option<(Option<u64>, *const AtomicU64, u64)> {
        let leaf = f.leaf;
        let n = leaf.hdr.count();
        let i = leaf.keys.rank(n, k, false);
        if f.partial && i < n {
            f.ask_slot(i);
        }
        // Keys longer than 16 bytes: the words past the first live in a key block of
        // their own, which the node's prefetch does not cover. The compare below reads
        // slot `i`'s, and the hint the high fence's: ask for both lines at once, and
        // let another transaction run while they come.
        if k.len > 16 {
            let width = (k.len as usize).div_ceil(8) - 1;
            let mut asked = false;
            if f.probes {
                rt::probe_ahead();
            }
            if i < n && leaf.keys.head[i].load(Relaxed) == k.w[0] {
                asked |= leaf.keys.prefetch_rest(i, width);
                // The value is the caller's record address (see the module doc): its
                // first line comes with the key's, not one latency after it.
                rt::prefetch(leaf.vals[i].load(Relaxed) as *const u8);
            }
            if let (Some((x, _, j)), true) = (f.hi_at, hint.is_some()) {
                asked |= x.keys.prefetch_rest(j, width);
            }
            if asked && f.probes {
                rt::point(rt::Point::Probe);
            } else if f.probes {
                rt::probe_ahead_off();
            }
        }
        let found = (i < n && leaf.keys.cmp(i, k) == Ordering::Equal).then_some(i);
        let val = found.map(|i| leaf.vals[i].load(Relaxed));
        if leaf.hdr.check(f.v) {
            if let Some(h) = hint {
                // The one fence the hint keeps, read once here, after the leaf's check
                // (for keys over 16 bytes its words past the first were asked for above,
                // with the key's): `take` keeps no hint if that fence's node changed
                // since the descent.
                h.take(leaf, f.v, f.hi_at);
                h.pos = found.unwrap_or(0);
                h.ahead = 0;
            }
            return Some((val, &leaf.hdr.version, f.v));
        }
        None
    }

    /// The lookup in the hinted leaf (`hinted_leaf`). `None`: take the full path.
    fn get_at_hint(
        &self,
        k: &KeyWords,
        hint: &mut LeafHint,
    ) -> Option<(Option<u64>, *const AtomicU64, u64)> {
        let (leaf, v, n) = self.hinted_leaf(k, hint)?;
        txnstats::add(txnstats::Counter::IndexNodes, 1);
        // The slot after the last one found first. Only a guess (an insert since may
        // have moved keys): the compare decides.
        let next = hint.pos + 1;
        let found = leaf.slot_of(n, k, next);
        hint.ahead = 0;
        if let Some(i) = found {
            hint.pos = i;
            if i == next && i + 1 < n {
                hint.ahead = leaf.vals[i + 1].load(Relaxed);
            }
        }
        let val = found.map(|i| leaf.vals[i].load(Relaxed));
        leaf.hdr
            .check(v)
            .then_some((val, &leaf.hdr.version as *const AtomicU64, v))
    }

    /// The leaf `hint` holds, its version and key count, if it is unchanged since the hint
    /// was taken (so it is still in the tree and covers at least the range it covered
    /// then: a pruned neighbour's range may have joined it, nothing else changes a range
    /// without changing the leaf's version) and `k` lies in it (from its first key to the
    /// high fence seen then). A changed leaf also clears the hint.
    fn hinted_leaf<'t>(&self, k: &KeyWords, hint: &mut LeafHint) -> Option<(&'t Leaf, u64, usize)> {
        // SAFETY: a hint holds a leaf of this tree (the caller's contract), and nodes are
        // never freed while the tree is shared (`'t` is the tree's).
        let leaf = unsafe { hint.leaf.as_ref()? };
        probe::btree_level(probe::level::hint(self.tree));
        let v = hint.v;
        if leaf.hdr.version.load(Acquire) != v {
            hint.leaf = std::ptr::null();
            return None;
        }
        if !hint.resolve_fence() {
            return None;
        }
        let n = leaf.hdr.count();
        if n == 0 || leaf.keys.cmp(0, k) == Ordering::Greater {
            return None;
        }
        if hint
            .hi
            .as_ref()
            .is_some_and(|hi| k.cmp(hi) != Ordering::Less)
        {
            return None;
        }
        Some((leaf, v, n))
    }

    /// Insert `key -> val`. `Err(existing)` if the key is present.
    pub fn insert(&self, key: &[u8], val: u64) -> Result<NodeChange, u64> {
        self.note_key(key);
        self.insert_impl(&KeyWords::new(key), val, None)
    }

    /// [`BTree::insert`] trying first the leaf `hint` remembers (where the caller's last
    /// insert into this tree went), and remembering where this one goes. A New-Order's
    /// ten order lines, and any run of keys one worker appends, then descend once, not
    /// once per key (a descent of this tree's 4-5 levels was most of an insert's cost).
    pub fn insert_hinted(
        &self,
        key: &[u8],
        val: u64,
        hint: &mut LeafHint,
    ) -> Result<NodeChange, u64> {
        self.note_key(key);
        let k = KeyWords::new(key);
        if let Some(r) = self.insert_at_hint(&k, val, hint) {
            return r;
        }
        self.insert_impl(&k, val, Some(hint))
    }

    /// The insert into the hinted leaf (`hinted_leaf`), if it has room. `None`: take the
    /// full path.
    fn insert_at_hint(
        &self,
        k: &KeyWords,
        val: u64,
        hint: &mut LeafHint,
    ) -> Option<Result<NodeChange, u64>> {
        let (leaf, v, n) = self.hinted_leaf(k, hint)?;
        if n == FANOUT {
            return None;
        }
        // Appends (TPC-C's orders, order lines and history, each district's at the end of
        // its range) go after the last key: one compare instead of a search.
        let i = if leaf.keys.cmp(n - 1, k) == Ordering::Less {
            n
        } else {
            leaf.keys.rank(n, k, false)
        };
        if i < n && leaf.keys.cmp(i, k) == Ordering::Equal {
            let existing = leaf.vals[i].load(Relaxed);
            return leaf.hdr.check(v).then_some(Err(existing));
        }
        // Locked at the version every read above was made at: they all still hold.
        if !leaf.hdr.upgrade(v) {
            return None;
        }
        txnstats::add(txnstats::Counter::IndexNodes, 1);
        leaf_insert(leaf, i, n, k, val);
        let after = leaf.hdr.unlock();
        hint.v = after;
        Some(Ok(NodeChange {
            ver: &leaf.hdr.version,
            before: v,
            after,
            split: None,
        }))
    }

    fn insert_impl(
        &self,
        k: &KeyWords,
        val: u64,
        mut hint: Option<&mut LeafHint>,
    ) -> Result<NodeChange, u64> {
        let k = *k;
        let mut split = None;
        // Relieve every full inner node on the way down, not only those above a full
        // node: after a descent found a full node below a full parent (filled since it
        // looked).
        let mut eager = false;
        'restart: loop {
            let leaf_depth = self.leaf_depth.load(Relaxed);
            probe::btree_level(probe::level::at(self.tree, 0, leaf_depth));
            let mut node = self.root();
            let Some(mut v) = node.read_lock() else {
                node.wait_unlocked();
                continue;
            };
            if !std::ptr::eq(node, self.root()) {
                continue;
            }
            let mut parent: Option<(&Inner, u64, usize)> = None;
            // The lowest inner node whose child taken is not its last: its separator after
            // that child is the leaf's high fence (for the hint).
            let mut hi_at: Option<(&Inner, u64, usize)> = None;
            let mut depth = 0;
            loop {
                txnstats::add(txnstats::Counter::IndexNodes, 1);
                // An inner node's child for `k` (validated below, before it is taken).
                let down = (!node.leaf).then(|| {
                    let inner = as_inner(node);
                    let n = node.count();
                    let i = inner.keys.rank(n, &k, true);
                    (inner, n, i, inner.children[i].load(Acquire))
                });
                // A full inner node is relieved (moved into or split) only where the
                // child the key goes to is full too, so may need room here for a
                // separator: relieved whenever an insert passed, inner nodes stayed
                // about three fifths full (`shape_tests`). The child's count is a guess
                // read without its version: it only decides whether to relieve first.
                let full = node.count() == FANOUT
                    && (node.leaf
                        || eager
                        || down.is_some_and(|(.., c)| {
                            // SAFETY: nodes are never freed while the tree is shared (a
                            // torn read gives an older or newer child, never a dangling
                            // pointer).
                            unsafe { c.as_ref() }.is_some_and(|c| c.count() == FANOUT)
                        }));
                if node.leaf {
                    if depth != leaf_depth {
                        // As `descend` does: a tree only inserted into marks its height too.
                        self.leaf_depth.store(depth, Relaxed);
                    }
                    let leaf = as_leaf(node);
                    let n = node.count();
                    let i = leaf.keys.rank(n, &k, false);
                    if i < n && leaf.keys.cmp(i, &k) == Ordering::Equal {
                        let existing = leaf.vals[i].load(Relaxed);
                        if node.check(v) {
                            return Err(existing);
                        }
                        continue 'restart;
                    }
                    if !full {
                        if !node.upgrade(v) {
                            continue 'restart;
                        }
                        // Parent check not needed: the leaf's version is unchanged since
                        // we reached it through a valid path, so it still covers `k`.
                        leaf_insert(leaf, i, n, &k, val);
                        let after = node.unlock();
                        if let Some(h) = hint.as_deref_mut() {
                            h.take(leaf, after, hi_at);
                        }
                        return Ok(NodeChange {
                            ver: &node.version,
                            before: v,
                            after,
                            split,
                        });
                    }
                }
                if full {
                    // Relieve the full node (an inner node on the way down, or the leaf),
                    // whose parent then has room for a separator, or else relieve the
                    // parent first.
                    if let Some((p, pv, _)) = parent {
                        if !p.hdr.upgrade(pv) {
                            continue 'restart;
                        }
                        if p.hdr.count() == FANOUT {
                            p.hdr.unlock();
                            eager = true;
                            continue 'restart;
                        }
                    }
                    if !node.upgrade(v) {
                        if let Some((p, _, _)) = parent {
                            p.hdr.unlock();
                        }
                        continue 'restart;
                    }
                    if parent.is_none() && !std::ptr::eq(node, self.root()) {
                        node.unlock();
                        continue 'restart;
                    }
                    // A leaf relieved twice by one insert (others filled it again in
                    // between) splits for good the second time and is not forgiven:
                    // at worst the transaction fails its own check once.
                    let shift = !(node.leaf && split.is_some());
                    let leaf_split = self.split_locked(node, v, parent, &k, shift);
                    if node.leaf && split.is_none() {
                        split = leaf_split;
                    }
                    continue 'restart;
                }
                // Inner node, not full: go down.
                let (inner, n, i, child) = down.expect("an inner node");
                if let Some((p, pv, _)) = parent {
                    if !p.hdr.check(pv) {
                        continue 'restart;
                    }
                }
                if !node.check(v) || child.is_null() {
                    continue 'restart;
                }
                if i < n {
                    hi_at = Some((inner, v, i));
                }
                parent = Some((inner, v, i));
                depth += 1;
                probe::btree_level(probe::level::at(self.tree, depth, leaf_depth));
                // As in `descend`: the whole child at once, one latency per level.
                prefetch(child, self.node_lines());
                // SAFETY: validated child pointer; nodes are never freed while shared.
                let c = unsafe { &*child };
                let Some(cv) = c.read_lock() else {
                    c.wait_unlocked();
                    continue 'restart;
                };
                if !node.check(v) {
                    continue 'restart;
                }
                node = c;
                v = cv;
            }
        }
    }

    /// Relieve the full `node` (read at version `v`), write-locked with its `parent` (also
    /// locked, `node` its child at the index given; none for the root): split it at the
    /// point where the key `k` going in decides, the separator going up (into a new root
    /// above the root), or, for an insert in no order (`shift` allowing), move a share of
    /// its keys into a sibling with room (`relieve`). Unlocks both.
    /// Returns what happened as a leaf's (read only when `node` is a leaf).
    fn split_locked(
        &self,
        node: &Hdr,
        v: u64,
        parent: Option<(&Inner, u64, usize)>,
        k: &KeyWords,
        shift: bool,
    ) -> Option<Split> {
        // Appending past the node's last key (loads, increasing ids): split
        // unevenly so that nodes stay nearly full instead of half full.
        // Inserting in sequence inside the node (the key goes where the last
        // insert's successor would: TPC-C's orders and order lines, appended
        // at the end of each district's range, in front of the next
        // district's first keys): split where the key goes, so the run being
        // appended to ends its node and goes on filling it; a middle split
        // there left every node of those tables half full.
        let n = node.count();
        let (append, at) = if node.leaf {
            let keys = &as_leaf(node).keys;
            (keys.cmp(n - 1, k) == Ordering::Less, keys.rank(n, k, false))
        } else {
            let keys = &as_inner(node).keys;
            (
                keys.cmp(n - 1, k) != Ordering::Greater,
                keys.rank(n, k, true),
            )
        };
        let in_sequence = at > 0 && at < n && node.next_at.load(Relaxed) as usize == at;
        if let (false, false, true, Some((p, _, i))) = (append, in_sequence, shift, parent) {
            if let Some((sib, other_before, other_v)) = relieve(node, p, i) {
                let after = node.unlock();
                p.hdr.unlock();
                return node.leaf.then_some(Split {
                    ver: &node.version,
                    before: v,
                    after,
                    other: &sib.version,
                    other_v,
                    other_before: Some(other_before),
                });
            }
        }
        let mid = if append {
            n - 1
        } else if in_sequence {
            at
        } else {
            n / 2
        };
        let (sep, right) = if node.leaf {
            // Appended to: the records inserted next go into the new leaf, so it lies
            // beside them; else apart from records inserted in no order.
            let pool = if append || in_sequence {
                arena::Pool::Common
            } else {
                arena::Pool::Nodes
            };
            split_leaf(as_leaf(node), mid, pool)
        } else {
            split_inner(as_inner(node), mid)
        };
        match parent {
            Some((p, _, _)) => inner_insert(p, &sep, right),
            None => {
                let r = new_inner(sep.len > 8 && sep.len <= 16);
                // SAFETY: fresh node, not yet shared.
                let ri = unsafe { &*r };
                ri.keys.store(0, &sep);
                ri.children[0].store(node as *const Hdr as *mut Hdr, Relaxed);
                ri.children[1].store(right, Relaxed);
                ri.hdr.count.store(1, Relaxed);
                self.root.store(r as *mut Hdr, Release);
            }
        }
        // The new leaf is reachable only through the locked nodes yet: its
        // version read here is the one it was published with.
        // SAFETY: `right` was just made by the split and is never freed
        // while the tree lives.
        let other_v = unsafe { (*right).version.load(Relaxed) };
        let after = node.unlock();
        let s = node.leaf.then(|| Split {
            ver: &node.version,
            before: v,
            after,
            // SAFETY: as above.
            other: unsafe { &(*right).version },
            other_v,
            other_before: None,
        });
        if let Some((p, _, _)) = parent {
            p.hdr.unlock();
        }
        s
    }

    /// Remove `key` if it maps to `expect`. Returns how the leaf version changed.
    /// An emptied leaf stays in the tree (see [`BTree::remove_and_prune`]).
    pub fn remove(&self, key: &[u8], expect: u64) -> Option<NodeChange> {
        self.remove_impl(&KeyWords::new(key), expect, false)
    }

    /// [`BTree::remove`], also taking the leaf out of the tree if this empties it. For
    /// committed deletes only: undoing an aborted insert must not prune, or a retried
    /// insert could split the same full leaf again, abort on its own split again (splits
    /// are not forgiven in the node set), and so on forever.
    pub fn remove_and_prune(&self, key: &[u8], expect: u64) -> Option<NodeChange> {
        self.remove_impl(&KeyWords::new(key), expect, true)
    }

    /// [`BTree::remove_and_prune`] (a committed delete) trying first the leaf `hint`
    /// remembers, at the slot it found last: Delivery's delete of the New-Order row its
    /// lookup just found then does not descend again at commit. A removal that would
    /// empty the hinted leaf takes the full path (pruning needs the leaf's parent).
    pub fn remove_hinted(
        &self,
        key: &[u8],
        expect: u64,
        hint: &mut LeafHint,
    ) -> Option<NodeChange> {
        let k = KeyWords::new(key);
        if let Some((leaf, v, n)) = self.hinted_leaf(&k, hint) {
            if n > 1 {
                let i = leaf
                    .slot_of(n, &k, hint.pos)
                    .filter(|&i| leaf.vals[i].load(Relaxed) == expect);
                if i.is_none() && leaf.hdr.check(v) {
                    // The leaf covers `k` at `v`: it is not in the tree with `expect`.
                    return None;
                }
                // Locked at the version every read above was made at: they all still hold.
                if let Some(i) = i.filter(|_| leaf.hdr.upgrade(v)) {
                    txnstats::add(txnstats::Counter::IndexNodes, 1);
                    leaf_remove(leaf, i, n);
                    let after = leaf.hdr.unlock();
                    hint.v = after;
                    return Some(NodeChange {
                        ver: &leaf.hdr.version,
                        before: v,
                        after,
                        split: None,
                    });
                }
            }
        }
        self.remove_impl(&k, expect, true)
    }

    fn remove_impl(&self, k: &KeyWords, expect: u64, prune: bool) -> Option<NodeChange> {
        loop {
            let f = self.descend(Seek::At(k), None, false);
            let leaf = f.leaf;
            let n = leaf.hdr.count();
            let hit = leaf
                .slot_of(n, k, usize::MAX)
                .filter(|&i| leaf.vals[i].load(Relaxed) == expect);
            let Some(i) = hit else {
                if leaf.hdr.check(f.v) {
                    return None;
                }
                continue;
            };
            if !leaf.hdr.upgrade(f.v) {
                continue;
            }
            leaf_remove(leaf, i, n);
            if n == 1 && prune {
                self.prune(leaf, k, f.parent);
            }
            let after = leaf.hdr.unlock();
            return Some(NodeChange {
                ver: &leaf.hdr.version,
                before: f.v,
                after,
                split: None,
            });
        }
    }

    /// Take the empty, locked `leaf` out of the tree, if its parent is unchanged since the
    /// descent and keeps another child; if the parent has no other child, take out the
    /// whole chain of single-child nodes above the leaf, up to the first ancestor that
    /// has another child (`prune_chain`). Without this, keys deleted from the front of a
    /// range (TPC-C's New-Order queue) leave a growing run of empty leaves that every scan
    /// from the range's start walks through: with leaves alone pruned, each inner node at
    /// the front kept its last, empty leaf, and Delivery's scans visited 760 nodes per
    /// transaction after 2 s and 2,000 after 30 s. Best effort: ancestors are only
    /// try-locked (a child-then-parent order that never waits cannot deadlock), and a leaf
    /// left in place is merely empty. The leaf's version moves on when the caller unlocks
    /// it, so every reader or writer that reached it fails its version check and
    /// re-descends; the ancestor's version moves on too, so no new descent reaches it.
    fn prune(&self, leaf: &Leaf, key: &KeyWords, parent: Option<(&Inner, u64, usize)>) {
        let Some((p, pv, i)) = parent else { return };
        if p.hdr.count() == 0 {
            self.prune_chain(leaf, key);
            return;
        }
        if !p.hdr.upgrade(pv) {
            return;
        }
        assert!(
            std::ptr::eq(p.children[i].load(Relaxed), &leaf.hdr),
            "btree: a parent unchanged since the descent lost the child it led to"
        );
        cut_child(p, i);
        p.hdr.unlock();
        rt::lock(rt::WaitKind::Latch, &self.pruned).push(&leaf.hdr as *const Hdr as usize);
    }

    /// The empty, locked `leaf` (holding `key`'s range) is the only child of its parent:
    /// find the path down to it again, and if every node on it from the lowest ancestor
    /// with another child down to the leaf's parent can be locked at the version read, cut
    /// that ancestor's pointer to the chain. The chain's nodes become unreachable (kept
    /// until the tree is dropped, like pruned leaves).
    fn prune_chain(&self, leaf: &Leaf, key: &KeyWords) {
        const MAX_DEPTH: usize = 32;
        let mut path: [(*const Inner, u64, usize); MAX_DEPTH] =
            [(std::ptr::null(), 0, 0); MAX_DEPTH];
        let mut depth = 0;
        // An optimistic descent that never waits (the caller holds the leaf lock) and
        // never reads the leaf; the versions read are checked when the nodes are locked.
        let mut node = self.root();
        loop {
            if node.leaf || depth == MAX_DEPTH {
                return; // not on a path to `leaf` any more (the tree changed)
            }
            let Some(v) = node.read_lock() else { return };
            let inner = as_inner(node);
            let i = inner.keys.rank(node.count(), key, true);
            let child = inner.children[i].load(Acquire);
            if !node.check(v) || child.is_null() {
                return;
            }
            path[depth] = (inner as *const Inner, v, i);
            depth += 1;
            if std::ptr::eq(child, &leaf.hdr) {
                break;
            }
            // SAFETY: a validated child pointer of a live node; nodes are never freed
            // while the tree is shared.
            node = unsafe { &*child };
        }
        // The lowest ancestor with another child; the nodes below it each have only one.
        let Some(top) = (0..depth).rev().find(|&d| {
            // SAFETY: nodes on the path are live (never freed while shared).
            unsafe { (*path[d].0).hdr.count() > 0 }
        }) else {
            return; // a single-child chain from the root: leave it
        };
        let mut locked = 0;
        for &(n, v, _) in &path[top..depth] {
            // SAFETY: as above.
            if !unsafe { (*n).hdr.upgrade(v) } {
                break;
            }
            locked += 1;
        }
        let all = locked == depth - top;
        if all {
            let (a, _, i) = path[top];
            // SAFETY: as above; locked at the version whose child `i` leads to the chain.
            cut_child(unsafe { &*a }, i);
        }
        for &(n, _, _) in &path[top..top + locked] {
            // SAFETY: locked above by this thread.
            unsafe { (*n).hdr.unlock() };
        }
        if all {
            let mut pruned = rt::lock(rt::WaitKind::Latch, &self.pruned);
            for &(n, _, _) in &path[top + 1..depth] {
                pruned.push(n as usize);
            }
            pruned.push(&leaf.hdr as *const Hdr as usize);
        }
    }

    /// How many nodes were taken out of the tree (diagnostics and tests).
    pub fn pruned_nodes(&self) -> usize {
        rt::lock(rt::WaitKind::Latch, &self.pruned).len()
    }

    /// Range scan in `dir` order between `lo` and `hi`. For every leaf visited, `node`
    /// gets its version word and the version observed (before any entry of the leaf is
    /// passed on); `f` gets each entry and returns false to stop.
    pub fn scan(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        node: &mut dyn FnMut(*const AtomicU64, u64),
        f: &mut dyn FnMut(&[u8], u64) -> bool,
    ) {
        self.scan_hint(lo, hi, forward, FANOUT, node, f)
    }

    /// [`BTree::scan`] expecting `f` to take about `want` entries: the first leaf visit
    /// copies out at most `want` entries (a limit-1 scan loads one key, not a whole
    /// leaf); if `f` wants more, the scan goes on from the last entry passed.
    pub fn scan_hint(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        want: usize,
        node: &mut dyn FnMut(*const AtomicU64, u64),
        f: &mut dyn FnMut(&[u8], u64) -> bool,
    ) {
        let mut cap = want.clamp(1, FANOUT);
        let conv = |b: Bound<&[u8]>| match b {
            Bound::Included(k) => Bound::Included(KeyWords::new(k)),
            Bound::Excluded(k) => Bound::Excluded(KeyWords::new(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let (lo, hi) = (conv(lo), conv(hi));
        // Where the next leaf starts (forward: its lowest key; backward: its highest).
        let mut start = if forward { lo } else { hi };
        let mut keys = [KeyWords::new(&[]); FANOUT];
        let mut vals = [0u64; FANOUT];
        let mut kb = [0u8; MAX_KEY_LEN];
        let mut fences = Fences::default();
        loop {
            let (fl, m, capped) = loop {
                let seek = match (&start, forward) {
                    (Bound::Unbounded, true) => Seek::First,
                    (Bound::Unbounded, false) => Seek::Last,
                    (Bound::Included(k), _) | (Bound::Excluded(k), true) => Seek::At(k),
                    (Bound::Excluded(k), false) => Seek::Below(k),
                };
                let f = self.descend(seek, Some(&mut fences), false);
                let n = f.leaf.hdr.count();
                // The entries from `start` on, found by binary search (not by loading and
                // comparing every key before it): forward `first..n`, backward `0..end`
                // downwards.
                let ks = &f.leaf.keys;
                let (first, end) = match (&start, forward) {
                    (Bound::Unbounded, true) => (0, n),
                    (Bound::Included(k), true) => (ks.rank(n, k, false), n),
                    (Bound::Excluded(k), true) => (ks.rank(n, k, true), n),
                    (Bound::Unbounded, false) => (0, n),
                    (Bound::Included(k), false) => (0, ks.rank(n, k, true)),
                    (Bound::Excluded(k), false) => (0, ks.rank(n, k, false)),
                };
                let mut m = 0;
                let mut capped = false;
                for step in 0..end.saturating_sub(first) {
                    let i = if forward {
                        first + step
                    } else {
                        end - 1 - step
                    };
                    if m == cap {
                        capped = true;
                        break;
                    }
                    let k = ks.load(i);
                    let past_end = if forward {
                        after(&k, &hi)
                    } else {
                        before(&k, &lo)
                    };
                    if past_end {
                        break;
                    }
                    keys[m] = k;
                    vals[m] = f.leaf.vals[i].load(Relaxed);
                    m += 1;
                }
                if f.leaf.hdr.check(f.v) {
                    break (f, m, capped);
                }
            };
            node(&fl.leaf.hdr.version, fl.v);
            for i in 0..m {
                if !f(keys[i].bytes(&mut kb), vals[i]) {
                    return;
                }
            }
            if capped {
                // More entries in this leaf: go on after the last one passed, at full pace.
                start = Bound::Excluded(keys[m - 1]);
                cap = FANOUT;
                continue;
            }
            // Next leaf, unless the range ends inside this one.
            let next = if forward { fences.hi } else { fences.lo };
            let Some(next) = next else { return };
            // Forward: later leaves hold keys >= next. Backward: earlier leaves hold keys
            // < next, all out of range once next <= the lower bound.
            let done = if forward {
                after(&next, &hi)
            } else {
                match &lo {
                    Bound::Unbounded => false,
                    Bound::Included(x) | Bound::Excluded(x) => next.cmp(x) != Ordering::Greater,
                }
            };
            if done {
                return;
            }
            start = if forward {
                Bound::Included(next)
            } else {
                Bound::Excluded(next)
            };
        }
    }
}

/// `k` lies before the lower bound `b` (excluded by it).
fn before(k: &KeyWords, b: &Bound<KeyWords>) -> bool {
    match b {
        Bound::Unbounded => false,
        Bound::Included(x) => k.cmp(x) == Ordering::Less,
        Bound::Excluded(x) => k.cmp(x) != Ordering::Greater,
    }
}
/// `k` lies after the upper bound `b` (excluded by it).
fn after(k: &KeyWords, b: &Bound<KeyWords>) -> bool {
    match b {
        Bound::Unbounded => false,
        Bound::Included(x) => k.cmp(x) == Ordering::Greater,
        Bound::Excluded(x) => k.cmp(x) != Ordering::Less,
    }
}
fn leaf_insert(leaf: &Leaf, i: usize, n: usize, k: &KeyWords, val: u64) {
    debug_assert!(n < FANOUT);
    leaf.keys.shift_right(i, n);
    for j in (i..n).rev() {
        leaf.vals[j + 1].store(leaf.vals[j].load(Relaxed), Relaxed);
    }
    leaf.keys.store(i, k);
    leaf.vals[i].store(val, Relaxed);
    leaf.hdr.count.store(n as u32 + 1, Relaxed);
    leaf.hdr.next_at.store(i as u8 + 1, Relaxed);
}

/// Take slot `i` out of the leaf's `n` (caller holds the leaf's lock).
fn leaf_remove(leaf: &Leaf, i: usize, n: usize) {
    debug_assert!(i < n);
    leaf.keys.shift_left(i, n);
    for j in i..n - 1 {
        leaf.vals[j].store(leaf.vals[j + 1].load(Relaxed), Relaxed);
    }
    leaf.hdr.count.store(n as u32 - 1, Relaxed);
}

fn inner_insert(inner: &Inner, sep: &KeyWords, right: *mut Hdr) {
    let n = inner.hdr.count();
    assert!(
        n < FANOUT,
        "btree: parent of a split is full (eager split broken)"
    );
    let i = inner.keys.rank(n, sep, true);
    inner.keys.shift_right(i, n);
    for j in (i..n).rev() {
        inner.children[j + 2].store(inner.children[j + 1].load(Relaxed), Relaxed);
    }
    inner.keys.store(i, sep);
    inner.children[i + 1].store(right, Release);
    inner.hdr.count.store(n as u32 + 1, Relaxed);
    inner.hdr.next_at.store(i as u8 + 1, Relaxed);
}

/// Remove child `i` of the locked inner node `p` (which keeps at least one other): drop
/// the separator below it (above it, for the first child), so the neighbour whose range
/// borders the child's takes that range over.
fn cut_child(p: &Inner, i: usize) {
    let n = p.hdr.count();
    assert!(
        n > 0 && i <= n,
        "btree: cutting child {i} of an inner node of {n} keys"
    );
    let k = i.saturating_sub(1);
    p.keys.shift_left(k, n);
    for j in i..n {
        p.children[j].store(p.children[j + 1].load(Relaxed), Relaxed);
    }
    p.hdr.count.store(n as u32 - 1, Relaxed);
}

/// Keys a full node moves into a sibling at the least (`relieve`): a node whose siblings
/// have less room than twice this splits instead, so that a node relieved by a move
/// takes a few inserts before it is full again, not one.
const SHIFT_MIN: usize = FANOUT / 8;

/// Relieve the full `node` (locked; child `i` of the locked inner node `p`) by moving
/// keys (and children) into the sibling beside it under `p` with the more room, if that
/// has room for at least `SHIFT_MIN` of them, so that the two end about equally full:
/// its last keys to the front of its right sibling, or its first to the end of its left.
/// Inserts in no order then leave nodes fuller than the two thirds splits alone leave
/// (B*-trees' redistribution, without their two-to-three splits): fewer nodes, each a
/// page walk per read of a large tree on a VM. Returns the sibling, its version before
/// the move and after it (unlocked again); `None` (nothing changed) when neither sibling
/// has the room or the one chosen is locked by another writer: the caller splits.
fn relieve<'a>(node: &Hdr, p: &'a Inner, i: usize) -> Option<(&'a Hdr, u64, u64)> {
    let pn = p.hdr.count();
    let n = node.count();
    debug_assert_eq!(n, FANOUT, "only a full node is relieved");
    // (sibling, its version, its count, right of `node`)
    let mut best: Option<(&Hdr, u64, usize, bool)> = None;
    for (j, right) in [(i + 1, true), (i.wrapping_sub(1), false)] {
        if j > pn {
            continue;
        }
        // SAFETY: a child pointer of the locked parent; nodes are never freed while
        // shared.
        let Some(sib) = (unsafe { p.children[j].load(Relaxed).as_ref() }) else {
            continue;
        };
        debug_assert_eq!(sib.leaf, node.leaf, "siblings on one level");
        let Some(v) = sib.read_lock() else { continue };
        let c = sib.count();
        if c + 2 * SHIFT_MIN <= n && best.is_none_or(|b| c < b.2) {
            best = Some((sib, v, c, right));
        }
    }
    let (sib, before, c, right) = best?;
    // The count read above is the sibling's at `before` if the lock is taken at it.
    if !sib.upgrade(before) {
        return None;
    }
    let m = (n - c) / 2;
    if right {
        let sep = if node.leaf {
            leaf_move_right(as_leaf(node), as_leaf(sib), m)
        } else {
            inner_move_right(as_inner(node), as_inner(sib), &p.keys.load(i), m)
        };
        p.keys.store(i, &sep);
    } else {
        let sep = if node.leaf {
            leaf_move_left(as_leaf(node), as_leaf(sib), m)
        } else {
            inner_move_left(as_inner(node), as_inner(sib), &p.keys.load(i - 1), m)
        };
        p.keys.store(i - 1, &sep);
    }
    let after = sib.unlock();
    Some((sib, before, after))
}

/// The key counts of `x` and its sibling `to` before `m` keys (children) move from `x`
/// to `to` (checked: `x` keeps some, `to` has room).
fn move_counts(x: &Hdr, to: &Hdr, m: usize) -> (usize, usize) {
    let (n, s) = (x.count(), to.count());
    assert!(
        m > 0 && m < n && s + m <= FANOUT,
        "btree: moving {m} of {n} keys to a sibling of {s}"
    );
    (n, s)
}

/// Copy `m` slots (key and value) of leaf `src` from `from` on to leaf `dst` from `to`
/// on; within one leaf in the order that never overwrites a slot before it is copied.
fn copy_slots(src: &Leaf, from: usize, dst: &Leaf, to: usize, m: usize) {
    let one = |j: usize| {
        dst.keys.store(to + j, &src.keys.load(from + j));
        dst.vals[to + j].store(src.vals[from + j].load(Relaxed), Relaxed);
    };
    if std::ptr::eq(src, dst) && to > from {
        (0..m).rev().for_each(one);
    } else {
        (0..m).for_each(one);
    }
}

/// Move the last `m` keys (and values) of the locked leaf `x` to the front of its locked
/// right sibling `y`. Returns the new separator between them: `y`'s first key.
fn leaf_move_right(x: &Leaf, y: &Leaf, m: usize) -> KeyWords {
    let (n, s) = move_counts(&x.hdr, &y.hdr, m);
    copy_slots(y, 0, y, m, s);
    copy_slots(x, n - m, y, 0, m);
    moved(&x.hdr, &y.hdr, m, m as isize);
    y.keys.load(0)
}

/// Move the first `m` keys (and values) of the locked leaf `x` to the end of its locked
/// left sibling `w`. Returns the new separator between them: `x`'s first key.
fn leaf_move_left(x: &Leaf, w: &Leaf, m: usize) -> KeyWords {
    let (n, s) = move_counts(&x.hdr, &w.hdr, m);
    copy_slots(x, 0, w, s, m);
    copy_slots(x, m, x, 0, n - m);
    moved(&x.hdr, &w.hdr, m, 0);
    x.keys.load(0)
}

/// Move the last `m` children of the locked inner node `x` to the front of its locked
/// right sibling `y`, whose separator in their parent is `sep`: it comes down in front of
/// `y`'s old first child, and `x`'s key before the moved children goes up. Returns that
/// new separator.
fn inner_move_right(x: &Inner, y: &Inner, sep: &KeyWords, m: usize) -> KeyWords {
    let (n, s) = move_counts(&x.hdr, &y.hdr, m);
    for j in (0..s).rev() {
        y.keys.store(j + m, &y.keys.load(j));
    }
    for j in (0..=s).rev() {
        y.children[j + m].store(y.children[j].load(Relaxed), Relaxed);
    }
    // x's children n-m+1..=n and the m-1 keys between them, then the old separator.
    for j in 0..m {
        y.children[j].store(x.children[n - m + 1 + j].load(Relaxed), Relaxed);
    }
    for j in 0..m - 1 {
        y.keys.store(j, &x.keys.load(n - m + 1 + j));
    }
    y.keys.store(m - 1, sep);
    let up = x.keys.load(n - m);
    moved(&x.hdr, &y.hdr, m, m as isize);
    up
}

/// Move the first `m` children of the locked inner node `x` to the end of its locked
/// left sibling `w`, whose separator from `x` in their parent is `sep`: it comes down
/// after `w`'s old last child, and `x`'s key after the moved children goes up. Returns
/// that new separator.
fn inner_move_left(x: &Inner, w: &Inner, sep: &KeyWords, m: usize) -> KeyWords {
    let (n, s) = move_counts(&x.hdr, &w.hdr, m);
    // The old separator, then x's children 0..m and the m-1 keys between them.
    w.keys.store(s, sep);
    for j in 0..m {
        w.children[s + 1 + j].store(x.children[j].load(Relaxed), Relaxed);
    }
    for j in 0..m - 1 {
        w.keys.store(s + 1 + j, &x.keys.load(j));
    }
    let up = x.keys.load(m - 1);
    for j in m..n {
        x.keys.store(j - m, &x.keys.load(j));
    }
    for j in m..=n {
        x.children[j - m].store(x.children[j].load(Relaxed), Relaxed);
    }
    moved(&x.hdr, &w.hdr, m, 0);
    up
}

/// After `m` keys (children) moved from `x` into its sibling `to`, whose own keys moved
/// `by` places: the counts, and `next_at` (`x` saw no run of inserts, else it would have
/// split; a run in `to` moved with its keys).
fn moved(x: &Hdr, to: &Hdr, m: usize, by: isize) {
    to.count.store((to.count() + m) as u32, Relaxed);
    x.count.store((x.count() - m) as u32, Relaxed);
    x.next_at.store(0, Relaxed);
    let at = to.next_at.load(Relaxed);
    if at != 0 {
        to.next_at.store((at as isize + by) as u8, Relaxed);
    }
}

/// Move the keys from `mid` on into a new right sibling; the separator is the right
/// sibling's first key.
fn split_leaf(leaf: &Leaf, mid: usize, pool: arena::Pool) -> (KeyWords, *mut Hdr) {
    let n = leaf.hdr.count();
    assert!(mid > 0 && mid < n, "btree: leaf split point {mid} of {n}");
    let r = new_leaf(wants_block(&leaf.keys), pool);
    let rl = as_leaf(unsafe { &*r });
    rl.keys.take_from(&leaf.keys, mid, n);
    for j in mid..n {
        rl.vals[j - mid].store(leaf.vals[j].load(Relaxed), Relaxed);
    }
    rl.hdr.count.store((n - mid) as u32, Relaxed);
    leaf.hdr.count.store(mid as u32, Relaxed);
    (rl.keys.load(0), r)
}

/// Split a full inner node at `mid`: that key moves up, the ones after it move right.
fn split_inner(inner: &Inner, mid: usize) -> (KeyWords, *mut Hdr) {
    let n = inner.hdr.count();
    assert!(mid > 0 && mid < n, "btree: inner split point {mid} of {n}");
    let r = new_inner(wants_block(&inner.keys));
    // SAFETY: fresh node, not yet shared.
    let ri = unsafe { &*r };
    ri.keys.take_from(&inner.keys, mid + 1, n);
    for j in mid + 1..=n {
        ri.children[j - mid - 1].store(inner.children[j].load(Relaxed), Relaxed);
    }
    ri.hdr.count.store((n - mid - 1) as u32, Relaxed);
    let sep = inner.keys.load(mid);
    inner.hdr.count.store(mid as u32, Relaxed);
    (sep, r as *mut Hdr)
}

impl Drop for BTree {
    fn drop(&mut self) {
        fn free(p: *mut Hdr) {
            // SAFETY: exclusive access in Drop; every node is reachable exactly once.
            let h = unsafe { &*p };
            if !h.leaf {
                let inner = as_inner(h);
                for i in 0..=h.count() {
                    free(inner.children[i].load(Relaxed));
                }
            }
            // SAFETY: as above; its children are freed already.
            unsafe { free_node(p) };
        }
        free(self.root.load(Relaxed));
        for &p in self.pruned.get_mut().iter() {
            // SAFETY: pruned leaves are unreachable from the root and listed once.
            unsafe { free_node(p as *mut Hdr) };
        }
    }
}

#[cfg(test)]
mod search_tests {
    use super::{slots_below, FANOUT};
    use std::cell::Cell;

    /// Every range of slots and every point in it where the slots stop being below: the
    /// search finds that point, asking only of slots in the range, at most
    /// log2(len) + 2 times.
    #[test]
    fn slots_below_finds_the_first_slot_not_below() {
        for lo in 0..=FANOUT {
            for hi in lo..=FANOUT {
                for p in lo..=hi {
                    let asked = Cell::new(0u32);
                    let got = slots_below(lo, hi, |i| {
                        assert!((lo..hi).contains(&i), "slot {i} asked, outside {lo}..{hi}");
                        asked.set(asked.get() + 1);
                        i < p
                    });
                    assert_eq!(got, p, "range {lo}..{hi}");
                    let len = (hi - lo) as u32;
                    assert!(
                        asked.get() <= len.max(1).ilog2() + 2,
                        "{} asks",
                        asked.get()
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod key_word_tests {
    use super::{KeyWords, KW};

    /// Every length from 0 to the longest key gives the key's bytes, big-endian, in
    /// whole words padded with zeros, and its length.
    #[test]
    fn key_words_hold_the_key_padded_with_zeros() {
        let bytes: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8 | 1).collect();
        for n in 0..=64 {
            let k = &bytes[..n];
            let kw = KeyWords::new(k);
            let mut want = [0u64; KW];
            for (j, &b) in k.iter().enumerate() {
                want[j / 8] |= (b as u64) << (56 - 8 * (j % 8));
            }
            assert_eq!(kw.w, want, "length {n}");
            assert_eq!(kw.len as usize, n);
            let mut out = [0u8; 64];
            assert_eq!(kw.bytes(&mut out), k, "length {n}");
        }
    }
}

#[cfg(test)]
mod prefetch_tests {
    use super::*;

    /// Every node reachable from the root: (whether it has a key block, its key count).
    fn nodes(t: &BTree) -> Vec<(bool, usize)> {
        let mut out = Vec::new();
        let mut stack = vec![t.root.load(Acquire) as *const Hdr];
        while let Some(p) = stack.pop() {
            // SAFETY: nodes of a live tree, no writer running.
            let h = unsafe { &*p };
            let keys = if h.leaf {
                &as_leaf(h).keys
            } else {
                &as_inner(h).keys
            };
            out.push((h.block || keys.rest().is_some(), h.count()));
            if !h.leaf {
                for c in &as_inner(h).children[..=h.count()] {
                    stack.push(c.load(Acquire));
                }
            }
        }
        out
    }

    /// Inner nodes come from the arena's inner pool, leaves split in no order from the
    /// nodes pool (apart from records), in trees of short, two-word and long keys, after
    /// splits at every level and removals.
    #[test]
    fn inner_nodes_lie_apart_from_the_leaves() {
        for len in [8usize, 12, 50] {
            let t = BTree::new();
            let key = |i: u64| {
                let mut k = vec![0u8; len];
                let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes();
                for (j, b) in k.iter_mut().enumerate() {
                    *b = x[j % 8] ^ (j as u8);
                }
                k
            };
            for i in 0..30_000u64 {
                t.insert(&key(i), i + 1).expect("distinct keys");
            }
            for i in (0..30_000u64).step_by(3) {
                assert!(t.remove(&key(i), i + 1).is_some());
            }
            let (mut leaves, mut inners, mut apart) = (0, 0, 0);
            let mut stack = vec![t.root.load(Acquire) as *const Hdr];
            while let Some(p) = stack.pop() {
                // SAFETY: nodes of a live tree, no writer running.
                let h = unsafe { &*p };
                let bytes = node_bytes(h.leaf, h.block);
                assert_eq!(
                    arena::pool_of(p as *const u8, bytes) == Some(arena::Pool::Inner),
                    !h.leaf,
                    "a {} of {len}-byte keys in the wrong chunks",
                    if h.leaf { "leaf" } else { "inner node" }
                );
                if h.leaf {
                    leaves += 1;
                    apart += usize::from(
                        arena::pool_of(p as *const u8, bytes) == Some(arena::Pool::Nodes),
                    );
                } else {
                    inners += 1;
                    for c in &as_inner(h).children[..=h.count()] {
                        stack.push(c.load(Acquire));
                    }
                }
            }
            assert!(
                inners > 30 && leaves > 900,
                "{inners} inner nodes, {leaves} leaves"
            );
            // Keys in no order: a split is an append (or in sequence) only when the key
            // happens to go after the node's last key (or its last insert), about one
            // in sixteen.
            assert!(
                apart * 10 > leaves * 8,
                "{apart} of {leaves} leaves of {len}-byte keys in the nodes pool"
            );
            for i in 0..30_000u64 {
                let want = (i % 3 != 0).then_some(i + 1);
                assert_eq!(t.get(&key(i)).0, want, "key {i} of {len} bytes");
            }
        }
    }

    /// A table loaded in key order by one thread (each record allocated, then inserted)
    /// has most of its records in the same 4 KiB page as the leaf that points to them:
    /// the arena carves what a thread asks for in order, whatever the sizes, and an
    /// appended leaf is carved just before the records that fill it.
    #[test]
    fn records_loaded_in_order_share_their_leaf_page() {
        // A record size no other test of this crate allocates, in a thread of its own.
        const REC: usize = 56;
        let (shared, all) = std::thread::spawn(|| {
            let t = BTree::new();
            for i in 0..20_000u64 {
                let r = arena::alloc(REC) as u64;
                t.insert(&i.to_be_bytes(), r).expect("distinct keys");
            }
            let (mut shared, mut all) = (0usize, 0usize);
            let mut stack = vec![t.root.load(Acquire) as *const Hdr];
            while let Some(p) = stack.pop() {
                // SAFETY: nodes of a live tree, no writer running.
                let h = unsafe { &*p };
                if h.leaf {
                    for v in &as_leaf(h).vals[..h.count()] {
                        all += 1;
                        shared += usize::from(v.load(Relaxed) >> 12 == p as u64 >> 12);
                    }
                } else {
                    for c in &as_inner(h).children[..=h.count()] {
                        stack.push(c.load(Acquire));
                    }
                }
            }
            for i in 0..20_000u64 {
                let v = t.get(&i.to_be_bytes()).0.expect("loaded");
                // SAFETY: allocated above with this size, freed once (the tree is dropped
                // without reading them).
                unsafe { arena::free(v as *mut u8, REC) };
            }
            (shared, all)
        })
        .join()
        .unwrap();
        assert_eq!(all, 20_000);
        // A leaf (576 bytes) and its 31 records (1,736 bytes) straddle a page boundary in
        // about half the leaves, and then only the records past it are elsewhere: about
        // three records in four share the page. Fewer when other tests' trees freed
        // leaves meanwhile (a freed slot is reused before a new one is carved); none
        // when leaves and records come from chunks of their own.
        assert!(
            shared * 10 > all * 4,
            "{shared} of {all} records in their leaf's page"
        );
    }

    /// A tree of keys of at most 8 bytes has no key block in any node, so the
    /// `SHORT_LINES` its descents prefetch cover every node; its first longer key (by
    /// either insert) makes it wide, and its descents then fetch `NODE_LINES`.
    #[test]
    fn short_key_trees_prefetch_only_the_lines_their_nodes_have() {
        for hinted in [false, true] {
            let t = BTree::new();
            let mut h = LeafHint::default();
            for i in 0..20_000u64 {
                let k = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 3 * 8)).to_be_bytes();
                let k = &k[..1 + (i % 8) as usize];
                let r = if hinted {
                    t.insert_hinted(k, i, &mut h)
                } else {
                    t.insert(k, i)
                };
                let _ = r;
            }
            let all = nodes(&t);
            assert!(all.len() > 100, "a tree of several levels");
            assert!(
                all.iter().all(|&(block, _)| !block),
                "a short-key node with a key block"
            );
            assert_eq!(t.node_lines(), SHORT_LINES);
            assert!(node_bytes(true, false) <= SHORT_LINES * 64);
            assert!(node_bytes(false, false) <= SHORT_LINES * 64);
            let long = [7u8; 9];
            if hinted {
                t.insert_hinted(&long, 1, &mut h).expect("new key");
            } else {
                t.insert(&long, 1).expect("new key");
            }
            assert_eq!(t.node_lines(), NODE_LINES);
            assert!(nodes(&t).iter().any(|&(block, _)| block));
            assert_eq!(t.get(&long).0, Some(1));
        }
    }

    /// A hint slot taken over by another key prefix forgets the leaf it held (the old
    /// prefix's), so the lookup does not read that leaf; a slot that keeps its prefix
    /// keeps its leaf.
    #[test]
    fn a_hint_slot_taken_by_another_prefix_forgets_its_leaf() {
        let t = BTree::new();
        for i in 0..5_000u64 {
            t.insert(&i.to_be_bytes(), i).expect("new key");
        }
        let mut hints = Hints::default();
        let first = 42u64.to_be_bytes();
        let h = hints.for_key(&first);
        assert_eq!(t.get_hinted(&first, h).0, Some(42));
        let slot = h as *const LeafHint;
        assert!(!h.leaf.is_null());
        // Same prefix again: same slot, leaf kept, found at the hint.
        let h = hints.for_key(&first);
        assert_eq!(h as *const LeafHint, slot);
        assert!(!h.leaf.is_null());
        // Other prefixes until one takes the slot over.
        let mut taken = false;
        for i in 1_000..200_000u64 {
            let k = i.to_be_bytes();
            let h = hints.for_key(&k);
            if std::ptr::eq(h, slot) {
                assert!(
                    h.leaf.is_null(),
                    "slot taken by prefix {i} kept the old leaf"
                );
                assert_eq!(t.get_hinted(&k, h).0, (i < 5_000).then_some(i));
                taken = true;
                break;
            }
            // Every other slot touched is fresh or forgotten too.
            assert!(h.leaf.is_null());
        }
        assert!(taken, "the slot was never taken over");
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;

    /// The shape of a tree with no writer running: (depth of every leaf, leaves and their
    /// keys, inner nodes and their keys). Checks on the way that every node's keys are
    /// sorted and lie within the fences its parents give it.
    fn shape(t: &BTree) -> (usize, [(u64, u64); 2]) {
        fn walk(
            h: &Hdr,
            lo: Option<KeyWords>,
            hi: Option<KeyWords>,
            depth: usize,
            leaf_depth: &mut Option<usize>,
            acc: &mut [(u64, u64); 2],
        ) {
            let n = h.count();
            let keys = if h.leaf {
                &as_leaf(h).keys
            } else {
                &as_inner(h).keys
            };
            let ks: Vec<KeyWords> = (0..n).map(|i| keys.load(i)).collect();
            for w in ks.windows(2) {
                assert_eq!(w[0].cmp(&w[1]), Ordering::Less, "keys in order");
            }
            if let (Some(l), Some(f)) = (&lo, ks.first()) {
                assert_ne!(f.cmp(l), Ordering::Less, "a key below its node's low fence");
            }
            if let (Some(u), Some(k)) = (&hi, ks.last()) {
                assert_eq!(k.cmp(u), Ordering::Less, "a key at or above its high fence");
            }
            let a = &mut acc[usize::from(!h.leaf)];
            a.0 += 1;
            a.1 += n as u64;
            if h.leaf {
                assert_eq!(
                    *leaf_depth.get_or_insert(depth),
                    depth,
                    "leaves at one depth"
                );
                return;
            }
            for i in 0..=n {
                // SAFETY: a child of a live tree's node, no writer running.
                let c = unsafe { &*as_inner(h).children[i].load(Acquire) };
                let clo = if i == 0 { lo } else { Some(ks[i - 1]) };
                let chi = if i == n { hi } else { Some(ks[i]) };
                walk(c, clo, chi, depth + 1, leaf_depth, acc);
            }
        }
        let mut acc = [(0, 0); 2];
        let mut leaf_depth = None;
        walk(t.root(), None, None, 0, &mut leaf_depth, &mut acc);
        (leaf_depth.expect("a leaf"), acc)
    }

    /// Keys inserted in no order fill leaves and inner nodes to about four fifths, since
    /// a full node moves keys into a right sibling with room before it splits; the tree
    /// keeps its order and fences, and every key is found. Keys appended in order still
    /// fill nodes nearly full (their splits are uneven, no moves).
    #[test]
    fn random_inserts_fill_nodes_to_four_fifths() {
        let mix = |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(23);
        for (name, len) in [("8-byte", 8usize), ("12-byte", 12), ("50-byte", 50)] {
            let key = |i: u64| {
                let mut k = mix(i).to_be_bytes().to_vec();
                k.resize(len, (i % 251) as u8);
                k
            };
            let t = BTree::new();
            let count = 200_000u64;
            for i in 0..count {
                t.insert(&key(i), i).expect("distinct keys");
            }
            let (depth, [(leaves, lkeys), (inners, ikeys)]) = shape(&t);
            assert_eq!(lkeys, count, "{name}");
            let leaf_fill = lkeys as f64 / (leaves * FANOUT as u64) as f64;
            let inner_fill = (ikeys + inners) as f64 / (inners * (FANOUT as u64 + 1)) as f64;
            // Splits alone: 0.69 and 0.59 (9,065 leaves, 489 inner nodes).
            assert!(
                leaf_fill > 0.78 && inner_fill > 0.75,
                "{name}: depth {depth}, {leaves} leaves {leaf_fill:.3} full, \
                 {inners} inner nodes {inner_fill:.3} full"
            );
            for i in (0..count).step_by(13) {
                assert_eq!(t.get(&key(i)).0, Some(i), "{name}");
            }
        }
        let t = BTree::new();
        for i in 0..100_000u64 {
            t.insert(&i.to_be_bytes(), i).expect("distinct keys");
        }
        let (_, [(leaves, lkeys), (inners, ikeys)]) = shape(&t);
        assert!(
            lkeys as f64 / (leaves * FANOUT as u64) as f64 > 0.95,
            "appends: {leaves} leaves"
        );
        assert!(
            (ikeys + inners) as f64 / (inners * (FANOUT as u64 + 1)) as f64 > 0.9,
            "appends: {inners} inner nodes"
        );
    }
}
