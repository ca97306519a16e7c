//! Memory-engine specifics: a transaction's own inserts never fail its own validation;
//! a conflicting concurrent insert does; statistics count commits and aborts by reason;
//! bad input is an error, not a panic.

use api::{Dir, Engine, EngineOptions, Error, IndexKind, Schema, Session, TableDef, TableId};
use engine_memory::MemoryEngine;
use std::ops::Bound;
use std::sync::Arc;

fn open(kind: IndexKind, threads: usize) -> (MemoryEngine, TableId) {
    let mut s = Schema::new();
    let t = s.add(TableDef::new("t", 8, kind, 64));
    let opts = EngineOptions {
        threads,
        ..EngineOptions::default()
    };
    (MemoryEngine::open(Arc::new(s), &opts).unwrap(), t)
}

#[test]
fn own_inserts_do_not_fail_own_validation() {
    for kind in [IndexKind::BTree, IndexKind::Hash] {
        let (e, t) = open(kind, 1);
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            assert!(!s.get(t, &[1], |_| {})?);
            s.insert(t, &[1], &[1; 8])?;
            assert!(s.get(t, &[1], |r| assert_eq!(r, [1; 8]))?);
            if kind == IndexKind::BTree {
                let n = s.scan(
                    t.primary(),
                    Bound::Unbounded,
                    Bound::Unbounded,
                    Dir::Forward,
                    10,
                    |_, _| true,
                )?;
                assert_eq!(n, 1);
                s.insert(t, &[2], &[2; 8])?;
            }
            // An insert changed by its own transaction commits changed (in whole and in
            // part); one only read commits as inserted.
            s.insert(t, &[4], &[4; 8])?;
            assert!(s.update(t, &[4], |r| r.copy_from_slice(&[5; 8]))?);
            s.insert(t, &[6], &[6; 8])?;
            assert!(s.update_part(t, &[6], 0..2, |r| r.copy_from_slice(&[7; 2]))?);
            // Insert then delete in one transaction leaves nothing behind.
            s.insert(t, &[3], &[3; 8])?;
            assert!(s.delete(t, &[3])?);
            assert!(!s.get(t, &[3], |_| {})?);
            Ok(())
        })
        .expect("own inserts must not abort the transaction");
        s.run(0, |s| {
            assert!(s.get(t, &[1], |r| assert_eq!(r, [1; 8]))?);
            assert!(!s.get(t, &[3], |_| {})?);
            assert!(s.get(t, &[4], |r| assert_eq!(r, [5; 8]))?);
            assert!(s.get(t, &[6], |r| assert_eq!(r, [7, 7, 6, 6, 6, 6, 6, 6]))?);
            Ok(())
        })
        .unwrap();
        drop(s);
        let st = e.stats();
        assert_eq!(st["commits"], 2, "{st}");
        assert_eq!(st["read_only_commits"], 1, "{st}");
        e.shutdown().unwrap();
    }
}

#[test]
fn concurrent_insert_into_an_observed_gap_aborts_the_reader() {
    for kind in [IndexKind::BTree, IndexKind::Hash] {
        let (e, t) = open(kind, 2);
        let mut a = Session::new(e.worker(0));
        let mut b = Session::new(e.worker(1));
        // Key 8 exists, so `a`'s update below hits (a miss through a stale view would be
        // reported at once as a conflict, before commit).
        b.run(0, |s| s.insert(t, &[8], &[8; 8])).unwrap();
        a.begin(0).unwrap();
        assert!(!a.get(t, &[7], |_| {}).unwrap());
        // Another transaction inserts the key `a` saw absent and commits.
        b.run(0, |s| s.insert(t, &[7], &[7; 8])).unwrap();
        assert!(a.update(t, &[8], |_| {}).unwrap());
        a.insert(t, &[9], &[9; 8]).unwrap();
        let err = a.commit().unwrap_err();
        assert!(err.is_conflict(), "{err}");
        // The aborted insert left nothing behind.
        b.run(0, |s| {
            assert!(!s.get(t, &[9], |_| {})?);
            Ok(())
        })
        .unwrap();
        drop((a, b));
        let st = e.stats();
        assert_eq!(st["aborts"]["node_validation"], 1, "{st}");
        e.shutdown().unwrap();
    }
}

#[test]
fn bad_input_is_an_error() {
    let (e, t) = open(IndexKind::Hash, 1);
    let mut s = Session::new(e.worker(0));
    let r = s.run(0, |s| s.insert(t, &[1], &[0; 3]));
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    let r = s.run(0, |s| s.get(t, &[0; 65], |_| {}));
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    let r = s.run(0, |s| {
        s.scan(
            t.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            1,
            |_, _| true,
        )
    });
    assert!(
        matches!(r, Err(Error::Fatal(_))),
        "scan over a hash index: {r:?}"
    );
    let r = s.run(0, |s| {
        s.insert(t, &[1], &[0; 8])?;
        s.insert(t, &[1], &[0; 8])
    });
    assert_eq!(r, Err(Error::Duplicate));
    drop(s);
    e.shutdown().unwrap();
}

#[test]
fn update_changing_a_secondary_key_is_fatal_and_undone() {
    let mut s = Schema::new();
    let t = s.add(TableDef::new("t", 8, IndexKind::BTree, 8).with_secondary(
        "by_first",
        false,
        |r, k| {
            k.push_u8(r[0]);
        },
    ));
    let e = MemoryEngine::open(Arc::new(s), &EngineOptions::default()).unwrap();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(t, &[1], &[5; 8])).unwrap();
    let r = s.run(0, |s| s.update(t, &[1], |r| r[0] = 6));
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    // Non-key columns may change; the secondary index still finds the row.
    s.run(0, |s| s.update(t, &[1], |r| r[7] = 9)).unwrap();
    let mut rows = Vec::new();
    s.run(0, |s| {
        s.scan(
            t.secondary(0),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Backward,
            9,
            |k, r| {
                rows.push((k.to_vec(), r.to_vec()));
                true
            },
        )
    })
    .unwrap();
    assert_eq!(rows, vec![(vec![5, 1], vec![5, 5, 5, 5, 5, 5, 5, 9])]);
    drop(s);
    e.shutdown().unwrap();
}

/// A miss can come through a record a concurrent delete has just unlinked; the key may
/// have a new record by the time the transaction inserts it. That is a conflict (the
/// view is stale), never a duplicate-key answer the workload would take for a logic
/// error. Two threads race insert-if-absent and delete-if-present on four keys.
#[test]
fn insert_after_a_miss_through_a_deleted_record_is_a_conflict() {
    for kind in [IndexKind::Hash, IndexKind::BTree] {
        let (e, t) = open(kind, 2);
        std::thread::scope(|sc| {
            for w in 0..2usize {
                let e = &e;
                sc.spawn(move || {
                    let mut s = Session::new(e.worker(w));
                    for i in 0..40_000u32 {
                        let k = [(i.wrapping_mul(2654435761) >> 30) as u8];
                        let r = s.run(0, |s| {
                            if s.get(t, &k, |_| {})? {
                                s.delete(t, &k)?;
                            } else {
                                s.insert(t, &k, &[k[0]; 8])?;
                            }
                            Ok(())
                        });
                        if let Err(err) = r {
                            assert!(err.is_conflict(), "{kind:?} key {k:?}: {err}");
                        }
                    }
                });
            }
        });
        e.shutdown().unwrap();
    }
}

/// A duplicate key met after a row this transaction updated (or deleted) was changed by
/// another commit is a conflict, not an answer: the view it comes from is already stale
/// (New-Order's order id read from a district another New-Order advanced). The update
/// leaves no read-set entry, so the check must look at the write set too.
#[test]
fn a_duplicate_after_a_stale_update_is_a_conflict() {
    for kind in [IndexKind::Hash, IndexKind::BTree] {
        for delete in [false, true] {
            let (e, t) = open(kind, 2);
            let mut a = Session::new(e.worker(0));
            let mut b = Session::new(e.worker(1));
            a.run(0, |s| {
                s.insert(t, &[1], &[1; 8])?;
                s.insert(t, &[2], &[2; 8])
            })
            .unwrap();
            a.begin(0).unwrap();
            if delete {
                assert!(a.delete(t, &[1]).unwrap());
            } else {
                assert!(a.update(t, &[1], |r| r[0] = 9).unwrap());
            }
            b.run(0, |s| s.update(t, &[1], |r| r[1] = 7).map(drop))
                .unwrap();
            let r = a.insert(t, &[2], &[0; 8]);
            assert!(
                matches!(r, Err(Error::Conflict(_))),
                "{kind:?} delete {delete}: {r:?}"
            );
            a.abort();
            // Without the other commit, the same duplicate is an answer.
            a.begin(0).unwrap();
            assert!(a.update(t, &[1], |r| r[0] = 9).unwrap());
            let r = a.insert(t, &[2], &[0; 8]);
            assert!(matches!(r, Err(Error::Duplicate)), "{kind:?}: {r:?}");
            a.abort();
            drop((a, b));
            e.shutdown().unwrap();
        }
    }
}

/// A table of 24-byte rows whose secondary key is byte 0 (declared, so updates of part
/// of a row are taken as such).
fn open_parts(threads: usize) -> (MemoryEngine, TableId) {
    use api::typed::{KeyEnc, Part, SqlType};
    let u8t = SqlType::Int {
        bytes: 1,
        signed: false,
    };
    let mut s = Schema::new();
    let t = s.add(
        TableDef::new("t", 24, IndexKind::Hash, 8)
            .with_secondary("by_first", false, |r, k| {
                k.push_u8(r[0]);
            })
            .columns(&[("first", u8t, 0)])
            .primary_key(&[Part::key_only("id", KeyEnc::U8)])
            .secondary_key("by_first", &[Part::col("first", KeyEnc::U8)]),
    );
    let opts = EngineOptions {
        threads,
        ..EngineOptions::default()
    };
    (MemoryEngine::open(Arc::new(s), &opts).unwrap(), t)
}

#[test]
fn updates_of_part_of_a_row_keep_the_rest_and_check_secondary_keys() {
    let (e, t) = open_parts(1);
    let mut s = Session::new(e.worker(0));
    let row: Vec<u8> = (0..24).collect();
    s.run(0, |s| s.insert(t, &[1], &row)).unwrap();
    // Bytes 9..11 of word 1 only; then the whole row in the same transaction (the rest is
    // read then, from the same version).
    s.run(0, |s| {
        assert!(s.update_part(t, &[1], 9..11, |b| b.copy_from_slice(&[90, 91]))?);
        assert!(s.get(t, &[1], |r| {
            assert_eq!(&r[..9], &row[..9]);
            assert_eq!(&r[9..11], &[90, 91]);
            assert_eq!(&r[11..], &row[11..]);
        })?);
        assert!(s.update_part(t, &[1], 20..24, |b| b[3] = 99)?);
        Ok(())
    })
    .unwrap();
    let mut want = row.clone();
    want[9..11].copy_from_slice(&[90, 91]);
    want[23] = 99;
    s.run(0, |s| {
        assert!(s.get(t, &[1], |r| assert_eq!(r, want))?);
        assert!(s.get_part(t, &[1], 8..12, |r| assert_eq!(r, &want[8..12]))?);
        Ok(())
    })
    .unwrap();
    // A part that holds the secondary key's byte may not change it.
    let r = s.run(0, |s| s.update_part(t, &[1], 0..4, |b| b[0] = 7));
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    // ...but may change the bytes around it.
    s.run(0, |s| s.update_part(t, &[1], 0..4, |b| b[1] = 7))
        .unwrap();
    want[1] = 7;
    s.run(0, |s| s.get(t, &[1], |r| assert_eq!(r, want)))
        .unwrap();
    // A part out of the row is an error, not a panic.
    let r = s.run(0, |s| s.update_part(t, &[1], 20..25, |_| {}));
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    let r = s.run(0, |s| s.get_part(t, &[1], 25..26, |_| {}));
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    drop(s);
    e.shutdown().unwrap();
}

/// Hints (`prefetch`, whole rows and parts of them, parts out of the row, absent keys,
/// more hints than kept) change nothing: the lookups after them see what they would
/// without them, and a part out of the row fails at its lookup, not at its hint.
#[test]
fn hints_of_parts_change_no_answer() {
    let (e, t) = open_parts(1);
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for k in 0..200u8 {
            let row: Vec<u8> = (0..24).map(|b| b ^ k).collect();
            s.insert(t, &[k], &row)?;
        }
        Ok(())
    })
    .unwrap();
    s.run(0, |s| {
        for k in 0..=255u8 {
            match k % 4 {
                0 => s.prefetch(t, &[k]),
                1 => s.prefetch_part(t, &[k], 8..12),
                2 => s.prefetch_part(t, &[k], 20..40),
                _ => s.prefetch_part(t, &[k], 30..31),
            }
        }
        // More hints than the engine keeps, and keys that are absent or too long.
        s.prefetch_part(t, &[0; 300], 0..1);
        for k in 0..=255u8 {
            let want: Vec<u8> = (0..24).map(|b| b ^ k).collect();
            let found = s.get_part(t, &[k], 8..12, |r| assert_eq!(r, &want[8..12]))?;
            assert_eq!(found, k < 200, "key {k}");
            if k < 200 && k % 3 == 0 {
                assert!(s.update_part(t, &[k], 20..24, |b| b[0] = b[0].wrapping_add(1))?);
            }
        }
        Ok(())
    })
    .unwrap();
    let r = s.run(0, |s| {
        s.prefetch_part(t, &[1], 25..26);
        s.get_part(t, &[1], 25..26, |_| {})
    });
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    s.run(0, |s| {
        for k in 0..200u8 {
            let mut want: Vec<u8> = (0..24).map(|b| b ^ k).collect();
            if k % 3 == 0 {
                want[20] = want[20].wrapping_add(1);
            }
            assert!(s.get(t, &[k], |r| assert_eq!(r, want))?);
        }
        Ok(())
    })
    .unwrap();
    drop(s);
    e.shutdown().unwrap();
}

/// An update of part of a row read only those words; when the transaction later needs
/// the rest and the record has a newer version by then, it cannot commit: a conflict at
/// once (the rest is never taken from another version).
#[test]
fn the_rest_of_a_partly_read_row_from_a_newer_version_is_a_conflict() {
    let (e, t) = open_parts(2);
    let mut a = Session::new(e.worker(0));
    let mut b = Session::new(e.worker(1));
    a.run(0, |s| s.insert(t, &[1], &[1; 24])).unwrap();
    for then_read in 0..3 {
        a.begin(0).unwrap();
        assert!(a.update_part(t, &[1], 8..16, |r| r[0] = 2).unwrap());
        b.run(0, |s| s.update(t, &[1], |r| r[20] = r[20].wrapping_add(1)))
            .unwrap();
        let r = match then_read {
            0 => a.get(t, &[1], |_| {}),
            1 => a.update(t, &[1], |_| {}),
            _ => a.delete(t, &[1]),
        };
        let err = r.unwrap_err();
        assert!(err.is_conflict(), "{err}");
        a.abort();
    }
    // Nothing of `a`'s reached the row: byte 8 as inserted, byte 20 bumped three times.
    a.run(0, |s| {
        s.get(t, &[1], |r| {
            assert_eq!(r[8], 1);
            assert_eq!(r[20], 4);
        })
    })
    .unwrap();
    drop((a, b));
    e.shutdown().unwrap();
}

/// After `read_committed`, a transaction's reads are not validated: a row it read that
/// changes before it commits does not abort it (a serializable one would).
#[test]
fn read_committed_reads_are_not_validated() {
    for rc in [false, true] {
        let (e, t) = open(IndexKind::BTree, 2);
        let mut a = Session::new(e.worker(0));
        let mut b = Session::new(e.worker(1));
        a.run(0, |s| s.insert(t, &[1], &[1; 8])).unwrap();
        a.begin(0).unwrap();
        if rc {
            a.read_committed();
        }
        assert!(a.get(t, &[1], |r| assert_eq!(r, [1; 8])).unwrap());
        let n = a
            .scan(
                t.primary(),
                Bound::Unbounded,
                Bound::Unbounded,
                Dir::Forward,
                9,
                |_, _| true,
            )
            .unwrap();
        assert_eq!(n, 1);
        b.run(0, |s| s.update(t, &[1], |r| r[0] = 2)).unwrap();
        b.run(0, |s| s.insert(t, &[2], &[2; 8])).unwrap();
        a.insert(t, &[3], &[3; 8]).unwrap();
        let r = a.commit();
        assert_eq!(r.is_ok(), rc, "{r:?}");
        drop((a, b));
        e.shutdown().unwrap();
    }
}

/// Key `i` of the long-key table: 50 bytes, a first word of its own (i % 3 == 0) or
/// shared by a third of the keys, or 16 bytes shared by a third.
fn long_key(i: u64) -> Vec<u8> {
    let mut k = match i % 3 {
        0 => (i + 1)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .to_be_bytes()
            .to_vec(),
        1 => b"sharedk:".to_vec(),
        _ => b"shared sixteen b".to_vec(),
    };
    k.extend_from_slice(&i.to_be_bytes());
    k.resize(50, b'k');
    k
}

/// `k` with its last byte changed: same first word and length, never a key of the table.
fn long_twin(mut k: Vec<u8>) -> Vec<u8> {
    k[49] ^= 1;
    k
}

fn long_row(i: u64, gen: u8) -> Vec<u8> {
    let mut r = vec![gen; 100];
    r[..8].copy_from_slice(&i.to_le_bytes());
    r
}

/// Open (or reopen) the long-key table's engine logging into `dir`.
fn open_long(dir: &std::path::Path) -> (MemoryEngine, TableId) {
    use api::typed::{KeyEnc, Part};
    let mut s = Schema::new();
    let t = s.add(
        TableDef::new("long", 100, IndexKind::BTree, 4_000)
            .primary_key(&[Part::key_only("k", KeyEnc::Fixed(50))]),
    );
    let opts = EngineOptions {
        threads: 1,
        log: api::LogMode::Async,
        log_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    };
    (MemoryEngine::open(Arc::new(s), &opts).unwrap(), t)
}

/// Every key of the long-key table (and its twin) read as the model says.
fn check_long(e: &MemoryEngine, t: TableId, model: &std::collections::BTreeMap<u64, Vec<u8>>) {
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for i in 0..3_000u64 {
            let k = long_key(i);
            let mut got = None;
            let hit = s.get(t, &k, |r| got = Some(r.to_vec()))?;
            assert_eq!(hit, model.contains_key(&i), "key {i}");
            assert_eq!(got.as_ref(), model.get(&i), "key {i}");
            assert!(!s.get(t, &long_twin(k.clone()), |_| {})?, "twin of {i}");
            let mut part = None;
            s.get_part(t, &k, 90..100, |r| part = Some(r.to_vec()))?;
            assert_eq!(part, model.get(&i).map(|r| r[90..].to_vec()), "key {i}");
        }
        Ok(())
    })
    .unwrap();
}

/// A B+tree table of declared 50-byte keys keeps each key in its record and finds it
/// there (not in the leaf's key block): rows read back through `get`, `get_part`,
/// `update` and `delete` agree with a model for present keys, for absent keys that share
/// a present key's first word and length, and for keys sharing their first 8 or 16 bytes
/// (found through the key block); the same after the log is replayed (records made by
/// recovery).
#[test]
fn long_btree_keys_are_compared_in_their_records() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = open_long(dir.path());
    let mut model = std::collections::BTreeMap::new();
    let mut s = Session::new(e.worker(0));
    for chunk in (0..3_000u64).collect::<Vec<_>>().chunks(100) {
        s.run(0, |s| {
            for &i in chunk.iter().filter(|&&i| i % 5 != 4) {
                s.insert(t, &long_key(i), &long_row(i, 1))?;
            }
            Ok(())
        })
        .unwrap();
    }
    for i in (0..3_000u64).filter(|i| i % 5 != 4) {
        model.insert(i, long_row(i, 1));
    }
    e.load_done().unwrap();
    // Updates, deletes and re-inserts (the twin of a present key is never present).
    s.run(0, |s| {
        for i in (0..3_000u64).step_by(7) {
            let k = long_key(i);
            let hit = s.update(t, &k, |r| r[50..].fill(2))?;
            assert_eq!(hit, model.contains_key(&i));
            if let Some(r) = model.get_mut(&i) {
                r[50..].fill(2);
            }
            assert!(!s.update(t, &long_twin(k), |_| {})?);
        }
        for i in (3..3_000u64).step_by(11) {
            let hit = s.delete(t, &long_key(i))?;
            assert_eq!(hit, model.remove(&i).is_some());
        }
        Ok(())
    })
    .unwrap();
    s.run(0, |s| {
        for i in (3..3_000u64).step_by(22) {
            s.insert(t, &long_key(i), &long_row(i, 3))?;
            model.insert(i, long_row(i, 3));
        }
        Ok(())
    })
    .unwrap();
    drop(s);
    check_long(&e, t, &model);
    e.shutdown().unwrap();
    drop(e);
    let (e, t) = open_long(dir.path());
    assert!(e.has_data());
    check_long(&e, t, &model);
    e.shutdown().unwrap();
}
