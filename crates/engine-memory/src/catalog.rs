//! `catalog`: the engine's tables: row size and the primary and secondary indexes of each,
//! built from the schema at open. Owns the index objects (and frees the records still in
//! them when the engine is dropped); must never run transactional logic.

use crate::btree::{BTree, NodeChange};
use crate::hash::HashIndex;
use crate::record::{row_words, Rec};
use api::key::Key;
use api::{IndexKind, Result, Schema};
use crossbeam_epoch::Guard;
use std::ops::Bound;
use std::sync::atomic::AtomicU64;

pub enum Index {
    BTree(BTree),
    Hash(HashIndex),
}

impl Index {
    #[inline]
    pub fn get(&self, k: &[u8], g: &Guard) -> (Option<u64>, *const AtomicU64, u64) {
        match self {
            Index::BTree(t) => t.get(k),
            Index::Hash(h) => h.get(k, g),
        }
    }
    /// Hash: ask for the key's bucket line. B+tree: nothing (its upper levels are
    /// cached and each descent prefetches the next node anyway).
    #[inline]
    pub fn prefetch(&self, k: &[u8]) {
        if let Index::Hash(h) = self {
            h.prefetch(k);
        }
    }
    pub fn insert(&self, k: &[u8], v: u64, g: &Guard) -> std::result::Result<NodeChange, u64> {
        match self {
            Index::BTree(t) => t.insert(k, v),
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
}

pub struct SecIndex {
    pub index: Index,
    pub unique: bool,
    pub key_of: fn(&[u8], &mut Key),
}

impl SecIndex {
    /// The entry key of a row: `key_of(row)`, plus the primary key if non-unique.
    pub fn entry_key(&self, pk: &[u8], row: &[u8], out: &mut Key) {
        out.clear();
        (self.key_of)(row, out);
        if !self.unique {
            out.push_bytes(pk);
        }
    }
}

pub struct TableData {
    pub name: String,
    pub row_size: usize,
    pub words: usize,
    pub primary: Index,
    pub kind: IndexKind,
    /// Secondary indexes are always B+trees (they serve scans).
    pub secondary: Vec<SecIndex>,
    /// The highest TID of a committed delete in this table. A delete unlinks its record,
    /// so a later insert of the same key makes a new record that never saw the deleted
    /// one: its TID must still come after the delete's for the log's "highest TID wins"
    /// replay, so inserts commit above this. Written only by deletes.
    pub deleted_tid: crossbeam_utils::CachePadded<std::sync::atomic::AtomicU64>,
}

pub struct Catalog {
    pub tables: Vec<TableData>,
}

impl Catalog {
    pub fn new(schema: &Schema) -> Result<Self> {
        let tables = schema
            .tables
            .iter()
            .map(|t| TableData {
                name: t.name.clone(),
                row_size: t.row_size,
                words: row_words(t.row_size),
                primary: match t.primary {
                    IndexKind::BTree => Index::BTree(BTree::new()),
                    IndexKind::Hash => Index::Hash(HashIndex::new(t.expected_rows)),
                },
                kind: t.primary,
                secondary: t
                    .secondary
                    .iter()
                    .map(|s| SecIndex {
                        index: Index::BTree(BTree::new()),
                        unique: s.unique,
                        key_of: s.key_of,
                    })
                    .collect(),
                deleted_tid: Default::default(),
            })
            .collect();
        Ok(Catalog { tables })
    }
}

impl Drop for Catalog {
    fn drop(&mut self) {
        // Exclusive access: every record still linked is in exactly one primary index.
        for t in &mut self.tables {
            let mut recs = Vec::new();
            match &mut t.primary {
                Index::BTree(b) => b.scan(
                    Bound::Unbounded,
                    Bound::Unbounded,
                    true,
                    &mut |_, _| {},
                    &mut |_, v| {
                        recs.push(v);
                        true
                    },
                ),
                Index::Hash(h) => h.for_each(|v| recs.push(v)),
            }
            for r in recs {
                // SAFETY: no transaction runs any more; unlinked records are not in indexes.
                unsafe { Rec::from_u64(r).free(t.words) };
            }
        }
    }
}
