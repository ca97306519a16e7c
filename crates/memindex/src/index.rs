//! `index`: an index of either kind (OLC B+tree or hash) behind one type, the secondary
//! indexes built over rows, and the two whole-index walks both in-memory engines need:
//! recovery filling the secondary indexes from the primary, and a checkpoint's scan while
//! transactions run. Generic over where a hash index finds its values' keys (`Keys`):
//! each engine says what its values point to. Must never run transactional logic.

use crate::btree::{BTree, Hints, NodeChange};
use crate::hash::{HashIndex, Keys};
use api::key::Key;
use crossbeam_epoch::Guard;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Acquire};

/// Entries visited under one crossbeam-epoch pin by `scan_index`: a pin held longer
/// keeps freed memory from being reused.
const CHUNK: usize = 4096;

/// An index of either kind. `K`: where a hash index finds its values' keys (another
/// engine built on these indexes supplies its own).
pub enum Index<K: Keys> {
    BTree(BTree),
    Hash(HashIndex<K>),
}

impl<K: Keys> Index<K> {
    /// Whether lookups reach probe points ([`BTree::set_probes`], [`HashIndex::set_probes`]).
    pub fn set_probes(&mut self, on: bool) {
        match self {
            Index::BTree(t) => t.set_probes(on),
            Index::Hash(h) => h.set_probes(on),
        }
    }

    /// See [`Index::set_probes`].
    #[inline]
    pub fn probes(&self) -> bool {
        match self {
            Index::BTree(t) => t.probes(),
            Index::Hash(h) => h.probes(),
        }
    }

    #[inline]
    pub fn get(&self, k: &[u8], g: &Guard) -> (Option<u64>, *const AtomicU64, u64) {
        match self {
            Index::BTree(t) => t.get(k),
            Index::Hash(h) => h.get(k, g),
        }
    }
    /// `get`, a B+tree looking first in the leaf `hint` remembers (`BTree::get_hinted`;
    /// `hint` belongs to this index). A B+tree lookup in a run of neighbouring keys
    /// hands `ahead` the value of the key after it (`LeafHint::ahead`: to ask for its
    /// lines, nothing more). `keyed`: the B+tree's values carry their keys where `keyed`
    /// finds them (as a hash index's do), so a long key is compared there, not in the
    /// leaf's key block (`BTree::get_hinted_keyed`); only for a primary index whose
    /// values were inserted with their own keys. The last field: the value's lines were
    /// asked for and waited for already (a hash probe's record, a keyed B+tree hit).
    /// Always inlined: a dispatch, whose instructions belong to the index it dispatches
    /// to (`simulate` charges code by its function's module; unoptimised builds, as the
    /// tests', would otherwise charge a B+tree probe's dispatch to `index`).
    #[inline(always)]
    pub fn get_hinted(
        &self,
        k: &[u8],
        g: &Guard,
        hints: &mut Hints,
        quiet: bool,
        keyed: Option<&K>,
        ahead: impl FnOnce(u64),
    ) -> (Option<u64>, *const AtomicU64, u64, bool) {
        match self {
            Index::BTree(t) => {
                let h = hints.for_key(k);
                let r = match keyed {
                    Some(keys) => t.get_hinted_keyed(
                        k,
                        h,
                        |v| keys.prefetch(v, k.len()),
                        // SAFETY: `get_hinted_keyed` passes a value its leaf held at a
                        // version checked after the read, while the caller stays pinned
                        // (`Guard`): still allocated (`Keys::key`'s contract).
                        |v, k| unsafe { keys.key(v) } == k,
                    ),
                    None => {
                        let (val, ver, v) = t.get_hinted(k, h);
                        (val, ver, v, false)
                    }
                };
                if h.ahead() != 0 {
                    ahead(h.ahead());
                }
                r
            }
            Index::Hash(h) => {
                let (val, ver, v) = h.get_quiet_if(k, g, quiet);
                (val, ver, v, true)
            }
        }
    }
    /// Hash: ask for the key's bucket line and return its hash (for `prefetch_rows`).
    /// B+tree: nothing (its upper levels are cached and each descent prefetches the next
    /// node anyway).
    #[inline]
    pub fn prefetch(&self, k: &[u8]) -> Option<u64> {
        match self {
            Index::Hash(h) => Some(h.prefetch(k)),
            Index::BTree(_) => None,
        }
    }
    pub fn insert(&self, k: &[u8], v: u64, g: &Guard) -> std::result::Result<NodeChange, u64> {
        match self {
            Index::BTree(t) => t.insert(k, v),
            Index::Hash(h) => h.insert(k, v, g),
        }
    }
    /// `insert`, a B+tree starting at the leaf `hint` remembers (`BTree::insert_hinted`;
    /// `hint` belongs to this index).
    pub fn insert_hinted(
        &self,
        k: &[u8],
        v: u64,
        g: &Guard,
        hints: &mut Hints,
    ) -> std::result::Result<NodeChange, u64> {
        match self {
            Index::BTree(t) => t.insert_hinted(k, v, hints.for_key(k)),
            Index::Hash(h) => h.insert(k, v, g),
        }
    }
    /// (entries, nodes: B+tree nodes or hash buckets), for `--stats`.
    pub fn census(&self, g: &Guard) -> (u64, u64) {
        match self {
            Index::BTree(t) => t.census(),
            Index::Hash(h) => h.census(g),
        }
    }
    /// `prune`: a committed delete (B+tree leaves it empties leave the tree).
    pub fn remove(&self, k: &[u8], v: u64, prune: bool, g: &Guard) -> Option<NodeChange> {
        match self {
            Index::BTree(t) if prune => t.remove_and_prune(k, v),
            Index::BTree(t) => t.remove(k, v),
            Index::Hash(h) => h.remove(k, v, g),
        }
    }
    /// `remove` of a committed delete, a B+tree trying first the leaf `hint` remembers
    /// (`BTree::remove_hinted`; `hint` belongs to this index).
    pub fn remove_hinted(
        &self,
        k: &[u8],
        v: u64,
        g: &Guard,
        hints: &mut Hints,
    ) -> Option<NodeChange> {
        match self {
            Index::BTree(t) => t.remove_hinted(k, v, hints.for_key(k)),
            Index::Hash(h) => h.remove(k, v, g),
        }
    }
}

pub struct SecIndex<K: Keys> {
    pub index: Index<K>,
    pub unique: bool,
    pub key_of: fn(&[u8], &mut Key),
}

impl<K: Keys> SecIndex<K> {
    /// The entry key of a row: `key_of(row)`, plus the primary key if non-unique.
    pub fn entry_key(&self, pk: &[u8], row: &[u8], out: &mut Key) {
        out.clear();
        (self.key_of)(row, out);
        if !self.unique {
            out.push_bytes(pk);
        }
    }
}

/// A table's size for `api::Engine::table_sizes`: its primary index's entries, and the
/// nodes of all its indexes (an engine over these indexes has no pages).
pub fn table_size<K: Keys>(
    name: &str,
    primary: &Index<K>,
    secondary: &[SecIndex<K>],
    g: &Guard,
) -> api::TableSize {
    let (records, mut nodes) = primary.census(g);
    for s in secondary {
        nodes += s.index.census(g).1;
    }
    api::TableSize {
        name: name.to_string(),
        records,
        heap_pages: None,
        index_pages: None,
        index_nodes: Some(nodes),
    }
}

/// Recovery's last step: insert every row of `primary` into the `secondary` indexes
/// (empty ones, built from the recovered rows), with `read_row` copying a value's row
/// into the buffer (`row_size` bytes). Returns the rows visited, or `DuplicateKey` if two
/// rows share a key of a unique secondary index (a damaged or foreign log). Single
/// threaded: no transaction runs yet. Also the mvcc engine's.
pub fn fill_secondaries<K: Keys>(
    primary: &mut Index<K>,
    secondary: &[SecIndex<K>],
    row_size: usize,
    read_row: &dyn Fn(u64, &mut [u8]),
) -> std::result::Result<u64, DuplicateKey> {
    let g = crossbeam_epoch::pin();
    let mut rows = 0u64;
    let mut row = vec![0u8; row_size];
    let mut sk = Key::new();
    let mut dup = false;
    let mut visit = |k: &[u8], v: u64| {
        rows += 1;
        if secondary.is_empty() {
            return;
        }
        read_row(v, &mut row);
        for s in secondary {
            s.entry_key(k, &row, &mut sk);
            dup |= s.index.insert(sk.as_bytes(), v, &g).is_err();
        }
    };
    match primary {
        Index::BTree(b) => b.scan(
            Bound::Unbounded,
            Bound::Unbounded,
            true,
            &mut |_, _| {},
            &mut |k, v| {
                visit(k, v);
                true
            },
        ),
        Index::Hash(h) => h.for_each_entry(|k, v| visit(k, v)),
    }
    if dup {
        Err(DuplicateKey)
    } else {
        Ok(rows)
    }
}

/// Two recovered rows share a key of a unique secondary index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DuplicateKey;

/// What `scan_index` passes each (key, value) to.
pub type EntryFn<'a> = dyn FnMut(&[u8], u64) -> Result<(), String> + 'a;

/// Pass every (key, value) of the index `ix` to `one` while transactions run, under a
/// crossbeam-epoch pin per `CHUNK` entries (so `one` may read what a value points to);
/// `key_of` gives a hash index's value's key (called pinned; the key is valid only
/// until `one` returns, the `'static` stands for a lifetime the pin cannot name). The B+tree through its
/// OLC `scan` in chunks, each from just after the last key of the chunk before; a hash
/// index bucket by bucket, each bucket's values read under its version
/// (`HashIndex::bucket_values`: a removal refills a slot from the chain, so a reader
/// that ignored the version could miss a value moved behind it). `Ok(false)`: `stop`
/// was set. Also the mvcc engine's checkpoint scan (its indexes are these).
pub fn scan_index<K: Keys>(
    ix: &Index<K>,
    key_of: &dyn Fn(u64) -> &'static [u8],
    stop: &AtomicBool,
    one: &mut EntryFn<'_>,
) -> Result<bool, String> {
    match ix {
        Index::BTree(b) => {
            let mut last: Option<Key> = None;
            loop {
                if stop.load(Acquire) {
                    return Ok(false);
                }
                let _g = crossbeam_epoch::pin();
                let lo = match &last {
                    Some(k) => Bound::Excluded(k.as_bytes()),
                    None => Bound::Unbounded,
                };
                let mut n = 0usize;
                let mut next: Option<Key> = None;
                let mut err = None;
                b.scan(lo, Bound::Unbounded, true, &mut |_, _| {}, &mut |k, v| {
                    if let Err(e) = one(k, v) {
                        err = Some(e);
                        return false;
                    }
                    n += 1;
                    if n == CHUNK {
                        next = Some(Key::from_bytes(k));
                        return false;
                    }
                    true
                });
                if let Some(e) = err {
                    return Err(e);
                }
                match next {
                    Some(k) => last = Some(k),
                    None => return Ok(true),
                }
            }
        }
        Index::Hash(h) => {
            let mut vals = Vec::new();
            let mut i = 0;
            while i < h.buckets() {
                if stop.load(Acquire) {
                    return Ok(false);
                }
                let g = crossbeam_epoch::pin();
                let end = (i + CHUNK).min(h.buckets());
                for b in i..end {
                    vals.clear();
                    h.bucket_values(b, &mut vals, &g);
                    for &v in &vals {
                        one(key_of(v), v)?;
                    }
                }
                i = end;
            }
            Ok(true)
        }
    }
}
