//! `index`: one partition's indexes of one table, used by one transaction at a time (the
//! partition's owner), so they need no latches, versions or epochs: the standard
//! library's B-tree map for ordered indexes and a hash map (with a cheap hash) for hash
//! indexes. engine-memory's indexes are built for concurrent optimistic access; here
//! their node versions and epoch pins would be pure overhead.

use api::key::Key;
use api::{Error, IndexKind, Result, SecondaryDef};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::ops::Bound;

pub type Row = Box<[u8]>;

/// A primary index: key -> row, owning the rows.
pub enum Primary {
    BTree(BTreeMap<Key, Row>),
    Hash(FxHashMap<Key, Row>),
}

impl Primary {
    pub fn new(kind: IndexKind) -> Self {
        match kind {
            IndexKind::BTree => Primary::BTree(BTreeMap::new()),
            IndexKind::Hash => Primary::Hash(FxHashMap::default()),
        }
    }

    #[inline]
    pub fn get(&self, k: &Key) -> Option<&Row> {
        match self {
            Primary::BTree(m) => m.get(k),
            Primary::Hash(m) => m.get(k),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, k: &Key) -> Option<&mut Row> {
        match self {
            Primary::BTree(m) => m.get_mut(k),
            Primary::Hash(m) => m.get_mut(k),
        }
    }

    pub fn contains(&self, k: &Key) -> bool {
        self.get(k).is_some()
    }

    pub fn put(&mut self, k: Key, r: Row) {
        match self {
            Primary::BTree(m) => m.insert(k, r),
            Primary::Hash(m) => m.insert(k, r),
        };
    }

    pub fn remove(&mut self, k: &Key) -> Option<Row> {
        match self {
            Primary::BTree(m) => m.remove(k),
            Primary::Hash(m) => m.remove(k),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Primary::BTree(m) => m.len(),
            Primary::Hash(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A secondary index: secondary key (with the primary key appended when not unique) ->
/// primary key. Always ordered (secondary indexes serve scans).
pub struct Secondary {
    pub map: BTreeMap<Key, Key>,
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
