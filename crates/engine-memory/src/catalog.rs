//! `catalog`: the engine's tables: row size and the primary and secondary indexes of each,
//! built from the schema at open. Owns the index objects (and frees the records still in
//! them when the engine is dropped); must never run transactional logic.

use crate::record::{row_words, Rec};
use api::{IndexKind, Result, Schema};
use memindex::btree::BTree;
use memindex::hash::{HashIndex, Keys};
use probe::level::tree;
use std::ops::Bound;

/// The engine's indexes: hash indexes read their keys from the records.
pub type Index = memindex::Index<RecKeys>;
pub type SecIndex = memindex::SecIndex<RecKeys>;

/// A hash index's keys are in its table's records (`record`'s key area): the index's
/// values are record addresses, so a probe reads the key and the row from one allocation.
pub struct RecKeys {
    pub words: usize,
}

impl Keys for RecKeys {
    #[inline(always)]
    unsafe fn key<'a>(&self, v: u64) -> &'a [u8] {
        // SAFETY: a hash-indexed table's records are keyed (`TableData::new_record`), and
        // the caller keeps `v` allocated for `'a` (the `Keys::key` contract).
        unsafe { Rec::from_u64(v).key(self.words) }
    }
    #[inline(always)]
    fn prefetch(&self, v: u64, len: usize) {
        // SAFETY: a prefetch reads nothing; the record need not be alive.
        unsafe { Rec::from_u64(v) }.prefetch_keyed(self.words, len);
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
    /// Records carry their key (a hash primary index reads keys there; so does a B+tree
    /// primary index of declared keys over 16 bytes, `keyed_btree`).
    pub keyed: bool,
    /// A B+tree primary index whose records carry their keys: its lookups of keys over 16
    /// bytes compare the key in the record instead of the leaf's key block
    /// (`BTree::get_hinted_keyed`). `None` for every other table.
    pub keyed_btree: Option<RecKeys>,
    /// The row's columns (byte ranges) secondary keys are made of, from the schema's
    /// declared key parts (empty: no secondary index). `None`: undeclared, so an update
    /// of part of a row cannot tell whether it touches a secondary key (it reads the row).
    pub sec_cols: Option<Vec<std::ops::Range<usize>>>,
}

impl TableData {
    /// A new record of this table (keyed if the table's records are).
    pub(crate) fn new_record(&self, key: &[u8], tid: u64, row: &[u8]) -> Rec {
        Rec::alloc(self.words, self.keyed.then_some(key), tid, row)
    }

    /// # Safety
    /// `r` came from `new_record` of this table, and no one can reach it any more.
    pub(crate) unsafe fn free_record(&self, r: Rec) {
        // SAFETY: the caller's.
        unsafe { r.free(self.words, self.keyed) }
    }
}

pub struct Catalog {
    pub tables: Vec<TableData>,
}

impl Catalog {
    /// `probe_min`: the size below which a table's lookups reach no probe point
    /// ([`crate::MemoryOptions::probe_min_bytes`]).
    pub fn new(schema: &Schema, probe_min: u64) -> Result<Self> {
        // A write-set entry names its table in 16 bits.
        if schema.tables.len() > u16::MAX as usize {
            return Err(api::Error::fatal(format!(
                "{} tables: the memory engine holds at most {}",
                schema.tables.len(),
                u16::MAX
            )));
        }
        let tables = schema
            .tables
            .iter()
            .enumerate()
            .map(|(ti, t)| {
                let long = t.primary == IndexKind::BTree && long_keys(t);
                let probes = probes_pay(t, probe_min);
                let mut td = TableData {
                    name: t.name.clone(),
                    row_size: t.row_size,
                    words: row_words(t.row_size),
                    primary: match t.primary {
                        IndexKind::BTree => Index::BTree(BTree::named(tree(ti, 0))),
                        IndexKind::Hash => Index::Hash(HashIndex::new(
                            t.expected_rows,
                            RecKeys {
                                words: row_words(t.row_size),
                            },
                        )),
                    },
                    kind: t.primary,
                    secondary: (t.secondary.iter().enumerate())
                        .map(|(si, s)| SecIndex {
                            index: Index::BTree(BTree::named(tree(ti, si + 1))),
                            unique: s.unique,
                            key_of: s.key_of,
                        })
                        .collect(),
                    deleted_tid: Default::default(),
                    keyed: t.primary == IndexKind::Hash || long,
                    keyed_btree: long.then(|| RecKeys {
                        words: row_words(t.row_size),
                    }),
                    sec_cols: sec_cols(t),
                };
                td.primary.set_probes(probes);
                for s in &mut td.secondary {
                    s.index.set_probes(probes);
                }
                td
            })
            .collect();
        Ok(Catalog { tables })
    }
}

/// Whether lookups in `t` reach probe points (`Index::set_probes`): only when the
/// table's records and index entries are expected (`expected_rows`, the schema's
/// estimate) to take at least `min` bytes. A smaller table stays in cache while it is
/// probed often: under `--interleave` a switch there costs and hides nothing (TPC-E's
/// many small tables made 845 switches per transaction, TPC-B's branches and tellers
/// four of its six).
fn probes_pay(t: &api::schema::TableDef, min: u64) -> bool {
    // A record's row words, TID and link, and about 32 bytes of index per entry.
    let per_row = (row_words(t.row_size) as u64 + 2) * 8 + 32;
    t.expected_rows.saturating_mul(per_row) >= min
}

/// Keys longer than a B+tree node holds in its own lines: the declared primary key's
/// parts take more than 16 bytes (the first word sits in the node's first-word array and
/// a second in the block allocated with the node; further words in a key block of their
/// own, a miss per lookup that the key kept in the record, read anyway, avoids). An
/// undeclared key: no.
fn long_keys(t: &api::schema::TableDef) -> bool {
    t.primary_key.iter().map(|p| p.enc.width()).sum::<usize>() > 16
}

/// `TableData::sec_cols` of `t`.
fn sec_cols(t: &api::schema::TableDef) -> Option<Vec<std::ops::Range<usize>>> {
    let mut cols = Vec::new();
    for s in &t.secondary {
        if s.parts.is_empty() {
            return None;
        }
        for p in &s.parts {
            let Some(c) = p.column else { continue };
            let col = t.columns.get(c)?;
            cols.push(col.offset..(col.offset + col.ty.width()).min(t.row_size));
        }
    }
    Some(cols)
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
                unsafe { t.free_record(Rec::from_u64(r)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{SEQ_ONE, UNLINKED};
    use api::key::MAX_KEY_LEN;
    use api::TableDef;
    use std::sync::atomic::{AtomicBool, Ordering::*};

    /// A catalog of one hash-indexed table of `row_size`-byte rows in `buckets` buckets.
    fn hashed(row_size: usize) -> Catalog {
        let mut s = Schema::new();
        s.add(TableDef::new("h", row_size, IndexKind::Hash, 4));
        Catalog::new(&s, 0).unwrap()
    }

    /// B+tree tables keep keys in their records exactly when their declared primary
    /// keys exceed 16 bytes; hash tables always.
    #[test]
    fn long_declared_btree_keys_make_keyed_records() {
        use api::typed::{KeyEnc, Part};
        let table = |kind, parts: &[Part]| {
            let mut s = Schema::new();
            s.add(TableDef::new("t", 100, kind, 4).primary_key(parts));
            let c = Catalog::new(&s, 0).unwrap();
            let t = &c.tables[0];
            (t.keyed, t.keyed_btree.as_ref().map(|k| k.words))
        };
        let long = [Part::key_only("k", KeyEnc::Fixed(50))];
        let two = [
            Part::key_only("a", KeyEnc::U64),
            Part::key_only("b", KeyEnc::Fixed(9)),
        ];
        let sixteen = [
            Part::key_only("a", KeyEnc::U64),
            Part::key_only("b", KeyEnc::U64),
        ];
        assert_eq!(table(IndexKind::BTree, &long), (true, Some(13)));
        assert_eq!(table(IndexKind::BTree, &two), (true, Some(13)));
        assert_eq!(table(IndexKind::BTree, &sixteen), (false, None));
        assert_eq!(table(IndexKind::BTree, &[]), (false, None));
        assert_eq!(table(IndexKind::Hash, &long), (true, None));
        assert_eq!(table(IndexKind::Hash, &[]), (true, None));
    }

    fn row_of(n: u64, size: usize) -> Vec<u8> {
        let mut r = n.to_le_bytes().repeat(size.div_ceil(8));
        r.truncate(size);
        r
    }

    /// Keys of length 0, 1 and `MAX_KEY_LEN` (and lengths between) are found through the
    /// keys in their records, a removed key is gone, and the same key inserted again with
    /// a new record is found with that record's row.
    #[test]
    fn hash_finds_keys_kept_in_the_records() {
        for row_size in [8usize, 100] {
            let c = hashed(row_size);
            let t = &c.tables[0];
            assert!(t.keyed);
            let g = crossbeam_epoch::pin();
            let keys: Vec<Vec<u8>> = [0usize, 1, 2, 9, 50, MAX_KEY_LEN - 1, MAX_KEY_LEN]
                .iter()
                .map(|&n| (0..n as u8).map(|b| b.wrapping_mul(7) ^ n as u8).collect())
                .chain([vec![0u8], vec![0u8, 0]]) // differ from "" and each other by length
                .collect();
            let mut recs = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                let r = t.new_record(k, SEQ_ONE, &row_of(i as u64, row_size));
                assert!(t.primary.insert(k, r.as_u64(), &g).is_ok());
                recs.push(r);
            }
            let mut row = vec![0u8; row_size];
            for round in 0..2u64 {
                for (i, k) in keys.iter().enumerate() {
                    let (hit, _, _) = t.primary.get(k, &g);
                    assert_eq!(hit, Some(recs[i].as_u64()), "key of {} bytes", k.len());
                    // SAFETY: an indexed record read while pinned (freed only through the epoch).
                    unsafe { Rec::from_u64(hit.unwrap()) }.stable_read(&mut row);
                    assert_eq!(row, row_of(round * 100 + i as u64, row_size));
                }
                // Remove every key and insert it again with a new record.
                for (i, k) in keys.iter().enumerate() {
                    let old = recs[i];
                    assert!(t.primary.remove(k, old.as_u64(), true, &g).is_some());
                    assert_eq!(t.primary.get(k, &g).0, None);
                    assert!(t.primary.remove(k, old.as_u64(), true, &g).is_none());
                    old.tid().store(SEQ_ONE | UNLINKED, Relaxed);
                    crate::xct::retire(old, t, &g);
                    let r = t.new_record(k, SEQ_ONE, &row_of(100 + i as u64, row_size));
                    assert!(t.primary.insert(k, r.as_u64(), &g).is_ok());
                    assert_eq!(t.primary.insert(k, r.as_u64(), &g).err(), Some(r.as_u64()));
                    recs[i] = r;
                }
            }
        }
    }

    /// A reader pinned before a key's record is removed and retired still reads that
    /// record's key and row (the record is freed only after the reader unpins), while the
    /// key, inserted again, finds the new record. In debug builds a freed keyed record's
    /// key length is overwritten, so reading the key of a record freed too early fails.
    #[test]
    fn a_pinned_reader_keeps_the_removed_record_and_its_key() {
        let c = hashed(100);
        let t = &c.tables[0];
        let key = vec![b'k'; MAX_KEY_LEN];
        let g = crossbeam_epoch::pin();
        let first = t.new_record(&key, SEQ_ONE, &row_of(1, 100));
        t.primary.insert(&key, first.as_u64(), &g).unwrap();
        drop(g);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            // Readers: whatever record a probe finds holds the key, and its row is one of
            // the rows written with it (generation in every word).
            for _ in 0..2 {
                s.spawn(|| {
                    let mut row = vec![0u8; 100];
                    while !stop.load(Relaxed) {
                        let g = crossbeam_epoch::pin();
                        if let (Some(v), _, _) = t.primary.get(&key, &g) {
                            // SAFETY: an indexed record read while pinned (freed only through the epoch).
                            let r = unsafe { Rec::from_u64(v) };
                            for _ in 0..3 {
                                // SAFETY: keyed, and the reader is still pinned.
                                assert_eq!(unsafe { r.key(t.words) }, &key[..]);
                                r.stable_read(&mut row);
                                let n = u64::from_le_bytes(row[..8].try_into().unwrap());
                                assert_eq!(row, row_of(n, 100), "a torn or freed row");
                                std::hint::spin_loop();
                            }
                        }
                    }
                });
            }
            // One pinned reader across a whole remove, retire and re-insert.
            let g = crossbeam_epoch::pin();
            let (Some(seen), _, _) = t.primary.get(&key, &g) else {
                panic!("the first record")
            };
            let mut cur = seen;
            for n in 2..3000u64 {
                let w = crossbeam_epoch::pin();
                assert!(t.primary.remove(&key, cur, true, &w).is_some());
                // SAFETY: an indexed record read while pinned (freed only through the epoch).
                crate::xct::retire(unsafe { Rec::from_u64(cur) }, t, &w);
                let r = t.new_record(&key, SEQ_ONE, &row_of(n, 100));
                t.primary.insert(&key, r.as_u64(), &w).unwrap();
                cur = r.as_u64();
                w.flush();
            }
            // SAFETY: `g` has been pinned since `seen` was read from the index.
            assert_eq!(unsafe { Rec::from_u64(seen).key(t.words) }, &key[..]);
            let mut row = vec![0u8; 100];
            // SAFETY: an indexed record read while pinned (freed only through the epoch).
            unsafe { Rec::from_u64(seen) }.stable_read(&mut row);
            assert_eq!(
                row,
                row_of(1, 100),
                "the retired record was freed under a reader"
            );
            drop(g);
            stop.store(true, Relaxed);
        });
    }
}
