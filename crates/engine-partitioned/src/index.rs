//! `index`: one partition's indexes of one table, used by one transaction at a time (the
//! partition's owner), so they need no latches, versions or epochs: the standard
//! library's B-tree map (or, `--ordered-index rbtree`, a red-black tree) for ordered
//! indexes and a hash map (with a cheap hash) for hash indexes. engine-memory's indexes are built for concurrent optimistic access; here
//! their node versions and epoch pins would be pure overhead.

use crate::rbtree::RbTree;
use api::key::Key;
use api::{Dir, Error, IndexKind, Result, SecondaryDef};
use rustc_hash::FxHashMap;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::Bound;

pub type Row = Box<[u8]>;

/// Which structure the ordered indexes are (`--ordered-index`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OrderedKind {
    /// The standard library's B-tree map.
    #[default]
    BTree,
    /// A red-black tree (`rbtree`), as the paper's DBMS N.
    RbTree,
}

/// An ordered index: key -> `V`.
pub enum Ordered<V> {
    BTree(BTreeMap<Key, V>),
    Rb(RbTree<V>),
}

impl<V> Ordered<V> {
    pub fn new(kind: OrderedKind) -> Self {
        match kind {
            OrderedKind::BTree => Ordered::BTree(BTreeMap::new()),
            OrderedKind::RbTree => Ordered::Rb(RbTree::new()),
        }
    }

    #[inline]
    pub fn get(&self, k: &Key) -> Option<&V> {
        match self {
            Ordered::BTree(m) => m.get(k),
            Ordered::Rb(t) => t.get(k),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, k: &Key) -> Option<&mut V> {
        match self {
            Ordered::BTree(m) => m.get_mut(k),
            Ordered::Rb(t) => t.get_mut(k),
        }
    }

    /// Insert a key known to be absent.
    pub fn put(&mut self, k: Key, v: V) {
        match self {
            Ordered::BTree(m) => {
                m.insert(k, v);
            }
            Ordered::Rb(t) => {
                if t.insert(k, v).is_err() {
                    panic!("index: put of a present key");
                }
            }
        }
    }

    /// Insert `k -> v` if `k` is absent, in one search of the tree (a `get` then a
    /// `put` search it twice, which was half of the load's time); `Err(v)`, and no
    /// change, if `k` is present.
    pub fn try_put(&mut self, k: Key, v: V) -> std::result::Result<(), V> {
        match self {
            Ordered::BTree(m) => match m.entry(k) {
                Entry::Vacant(e) => {
                    e.insert(v);
                    Ok(())
                }
                Entry::Occupied(_) => Err(v),
            },
            Ordered::Rb(t) => t.insert(k, v),
        }
    }

    pub fn remove(&mut self, k: &Key) -> Option<V> {
        match self {
            Ordered::BTree(m) => m.remove(k),
            Ordered::Rb(t) => t.remove(k),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Ordered::BTree(m) => m.len(),
            Ordered::Rb(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries in `[lo, hi]` (a non-empty range, see [`empty_range`]) in `dir` order;
    /// `f` returns false to stop.
    pub fn range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Dir,
        f: &mut dyn FnMut(&Key, &V) -> bool,
    ) -> Result<()> {
        match self {
            Ordered::BTree(m) => {
                let range = (key_bound(lo)?, key_bound(hi)?);
                let mut go = |(k, v): (&Key, &V)| f(k, v).then_some(());
                match dir {
                    Dir::Forward => m.range(range).try_for_each(&mut go),
                    Dir::Backward => m.range(range).rev().try_for_each(&mut go),
                };
            }
            Ordered::Rb(t) => t.range(lo, hi, dir == Dir::Forward, f),
        }
        Ok(())
    }
}

/// A primary index: key -> row, owning the rows.
pub enum Primary {
    Ordered(Ordered<Row>),
    Hash(FxHashMap<Key, Row>),
}

impl Primary {
    pub fn new(kind: IndexKind, ordered: OrderedKind) -> Self {
        match kind {
            IndexKind::BTree => Primary::Ordered(Ordered::new(ordered)),
            IndexKind::Hash => Primary::Hash(FxHashMap::default()),
        }
    }

    #[inline]
    pub fn get(&self, k: &Key) -> Option<&Row> {
        match self {
            Primary::Ordered(m) => m.get(k),
            Primary::Hash(m) => m.get(k),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, k: &Key) -> Option<&mut Row> {
        match self {
            Primary::Ordered(m) => m.get_mut(k),
            Primary::Hash(m) => m.get_mut(k),
        }
    }

    pub fn contains(&self, k: &Key) -> bool {
        self.get(k).is_some()
    }

    /// Insert a key known to be absent.
    pub fn put(&mut self, k: Key, r: Row) {
        match self {
            Primary::Ordered(m) => m.put(k, r),
            Primary::Hash(m) => {
                m.insert(k, r);
            }
        }
    }

    /// Insert `k -> r` if `k` is absent, in one search; `Err(r)`, and no change, if
    /// `k` is present.
    pub fn try_put(&mut self, k: Key, r: Row) -> std::result::Result<(), Row> {
        match self {
            Primary::Ordered(m) => m.try_put(k, r),
            Primary::Hash(m) => match m.entry(k) {
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(r);
                    Ok(())
                }
                std::collections::hash_map::Entry::Occupied(_) => Err(r),
            },
        }
    }

    pub fn remove(&mut self, k: &Key) -> Option<Row> {
        match self {
            Primary::Ordered(m) => m.remove(k),
            Primary::Hash(m) => m.remove(k),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Primary::Ordered(m) => m.len(),
            Primary::Hash(m) => m.len(),
        }
    }

    /// Every row, in key order for an ordered index and in no order for a hash one
    /// (the snapshot).
    pub fn for_each(&self, f: &mut dyn FnMut(&Key, &Row)) {
        match self {
            Primary::Ordered(m) => m
                .range(
                    Bound::Unbounded,
                    Bound::Unbounded,
                    Dir::Forward,
                    &mut |k, r| {
                        f(k, r);
                        true
                    },
                )
                .expect("unbounded ranges have no key to refuse"),
            Primary::Hash(m) => m.iter().for_each(|(k, r)| f(k, r)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A secondary index: secondary key (with the primary key appended when not unique) ->
/// primary key. Always ordered (secondary indexes serve scans).
pub struct Secondary {
    pub map: Ordered<Key>,
    pub def: SecondaryDef,
}

impl Secondary {
    /// The entry key of a row with primary key `pk`.
    pub fn entry_key(&self, pk: &[u8], row: &[u8]) -> Key {
        let mut k = Key::new();
        (self.def.key_of)(row, &mut k);
        if !self.def.unique {
            k.push_bytes(pk);
        }
        k
    }
}

/// True when `(lo, hi)` holds no key (`BTreeMap::range` panics on such ranges).
pub fn empty_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b))
        | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
        _ => false,
    }
}

/// A scan bound as a [`Key`]; a bound longer than any key is refused.
pub fn key_bound(b: Bound<&[u8]>) -> Result<Bound<Key>> {
    let conv = |k: &[u8]| {
        if k.len() > api::key::MAX_KEY_LEN {
            Err(Error::fatal("scan bound longer than the longest key"))
        } else {
            Ok(Key::from_bytes(k))
        }
    };
    Ok(match b {
        Bound::Included(k) => Bound::Included(conv(k)?),
        Bound::Excluded(k) => Bound::Excluded(conv(k)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}
