//! `catalog`: the engine's tables, each a primary index (B+tree or hash, from
//! `memindex`) and secondary B+trees, all mapping keys to per-key objects
//! (`version::Obj`). Owns the objects still indexed when the engine is dropped; never
//! runs transactional logic.

use crate::version::{Obj, ObjKeys};

/// The shared in-memory indexes over per-key objects.
pub type Index = memindex::Index<ObjKeys>;
pub type SecIndex = memindex::SecIndex<ObjKeys>;
use api::{IndexKind, Schema};
use memindex::{btree::BTree, hash::HashIndex};
use probe::level::tree;
use std::ops::Bound;

pub struct Table {
    pub name: String,
    pub row_size: usize,
    pub kind: IndexKind,
    pub primary: Index,
    /// Always B+trees (they serve scans). Every version of an object has the same
    /// secondary keys (updates may not change them, a re-insert must keep them), so an
    /// object has exactly one entry in each.
    pub secondary: Vec<SecIndex>,
}

pub struct Catalog {
    pub tables: Vec<Table>,
}

impl Catalog {
    pub fn new(schema: &Schema) -> Self {
        Catalog {
            tables: schema
                .tables
                .iter()
                .enumerate()
                .map(|(ti, t)| Table {
                    name: t.name.clone(),
                    row_size: t.row_size,
                    kind: t.primary,
                    primary: match t.primary {
                        IndexKind::BTree => Index::BTree(BTree::named(tree(ti, 0))),
                        IndexKind::Hash => Index::Hash(HashIndex::new(t.expected_rows, ObjKeys)),
                    },
                    secondary: (t.secondary.iter().enumerate())
                        .map(|(si, s)| SecIndex {
                            index: Index::BTree(BTree::named(tree(ti, si + 1))),
                            unique: s.unique,
                            key_of: s.key_of,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

impl Drop for Catalog {
    fn drop(&mut self) {
        // Exclusive access: every live object is in exactly one primary index; dead ones
        // were freed by their last reference.
        for t in &mut self.tables {
            let mut objs = Vec::new();
            match &mut t.primary {
                Index::BTree(b) => b.scan(
                    Bound::Unbounded,
                    Bound::Unbounded,
                    true,
                    &mut |_, _| {},
                    &mut |_, v| {
                        objs.push(v);
                        true
                    },
                ),
                Index::Hash(h) => h.for_each(|v| objs.push(v)),
            }
            for o in objs {
                // SAFETY: no worker remains; an indexed object is referenced only here.
                unsafe { Obj::free_all(o as *mut Obj) };
            }
        }
    }
}
