//! The partitioned engine's own properties: rows land in their key's partition, scans
//! across partitions merge in key order, aborts roll back, out-of-order partition
//! requests abort and are retried owning the whole set, a concurrent bank across
//! partitions keeps its sum, and the options it refuses (logging: tests/all/recovery.rs).

use api::key::Key;
use api::{
    Dir, Engine, EngineOptions, Error, IndexKind, LogMode, Partitioning, Schema, Session, TableDef,
    TableId,
};
use engine_partitioned::{OrderedKind, PartitionedEngine, PartitionedOptions, PartitionedWorker};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const ACCTS: u32 = 64;

fn k(v: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(v);
    k
}

/// Accounts 0..ACCTS, partitioned by account number (contiguous ranges); a secondary
/// index on (account / 8, value's low byte) keeps the row's partition only when
/// `bad_secondary` is false.
fn schema(kind: IndexKind) -> (Schema, TableId) {
    let mut s = Schema::new();
    let t = s.add(
        TableDef::new("acct", 8, kind, ACCTS as u64).partitioned(Partitioning {
            values: ACCTS as u64,
            of_key: |_, k| (k.len() >= 4).then(|| api::key::read_u32(k, 0) as u64),
            of_row: None,
        }),
    );
    (s, t)
}

fn open(threads: usize, parts: usize, kind: IndexKind) -> (PartitionedEngine, TableId) {
    open_with(threads, parts, kind, OrderedKind::BTree)
}

fn open_with(
    threads: usize,
    parts: usize,
    kind: IndexKind,
    ordered: OrderedKind,
) -> (PartitionedEngine, TableId) {
    let (s, t) = schema(kind);
    let e = PartitionedEngine::open_with(
        Arc::new(s),
        &EngineOptions {
            threads,
            ..EngineOptions::default()
        },
        PartitionedOptions {
            partitions: Some(parts),
            ordered,
            ..Default::default()
        },
    )
    .unwrap();
    (e, t)
}

fn load(e: &PartitionedEngine, t: TableId, v: i64) {
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for i in 0..ACCTS {
            s.insert(t, &k(i), &v.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
}

type S<'e> = Session<PartitionedWorker<'e>>;

fn val(s: &mut S<'_>, t: TableId, i: u32) -> api::Result<Option<i64>> {
    let mut out = None;
    s.get(t, &k(i), |r| {
        out = Some(i64::from_le_bytes(r.try_into().unwrap()))
    })?;
    Ok(out)
}

fn add(s: &mut S<'_>, t: TableId, i: u32, d: i64) -> api::Result<bool> {
    s.update(t, &k(i), |r| {
        let v = i64::from_le_bytes((&*r).try_into().unwrap()) + d;
        r.copy_from_slice(&v.to_le_bytes())
    })
}

fn stat(e: &PartitionedEngine, name: &str) -> u64 {
    e.stats()[name].as_u64().unwrap()
}

#[test]
fn rows_land_in_their_keys_partition() {
    let (e, t) = open(1, 4, IndexKind::Hash);
    load(&e, t, 1);
    // 64 accounts in 4 ranges of 16.
    for p in 0..4 {
        assert_eq!(e.rows_in(t, p), 16, "partition {p}");
    }
    assert_eq!(stat(&e, "multi_partition_commits"), 1, "the load spans 4");
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| val(s, t, 5)).unwrap();
    assert_eq!(stat(&e, "single_partition_commits"), 1);
}

#[test]
fn scans_across_partitions_merge_in_key_order() {
    for ordered in [OrderedKind::BTree, OrderedKind::RbTree] {
        scans_merge(ordered);
    }
}

fn scans_merge(ordered: OrderedKind) {
    let (e, t) = open_with(1, 4, IndexKind::BTree, ordered);
    load(&e, t, 1);
    let mut s = Session::new(e.worker(0));
    let keys = |s: &mut S<'_>, lo: u32, hi: u32, dir: Dir, limit: usize| {
        let mut got = Vec::new();
        s.run(0, |s| {
            s.scan(
                t.primary(),
                Bound::Included(&k(lo)),
                Bound::Excluded(&k(hi)),
                dir,
                limit,
                |key, _| {
                    got.push(api::key::read_u32(key, 0));
                    true
                },
            )
        })
        .unwrap();
        got
    };
    assert_eq!(
        keys(&mut s, 14, 19, Dir::Forward, 100),
        vec![14, 15, 16, 17, 18]
    );
    assert_eq!(keys(&mut s, 14, 40, Dir::Backward, 3), vec![39, 38, 37]);
    assert_eq!(
        keys(&mut s, 0, 64, Dir::Forward, 64),
        (0..64).collect::<Vec<_>>()
    );
    assert_eq!(keys(&mut s, 20, 24, Dir::Forward, 2), vec![20, 21]);
}

#[test]
fn an_abort_rolls_every_partition_back() {
    for (kind, ordered) in [
        (IndexKind::BTree, OrderedKind::BTree),
        (IndexKind::BTree, OrderedKind::RbTree),
        (IndexKind::Hash, OrderedKind::BTree),
    ] {
        let (e, t) = open_with(1, 4, kind, ordered);
        load(&e, t, 10);
        let mut s = Session::new(e.worker(0));
        let r: api::Result<()> = s.run(0, |s| {
            add(s, t, 1, 5)?;
            add(s, t, 40, -5)?;
            assert!(s.delete(t, &k(20))?);
            s.insert(t, &k(100), &7i64.to_le_bytes())?;
            assert_eq!(val(s, t, 20)?, None);
            Err(Error::UserAbort)
        });
        assert_eq!(r, Err(Error::UserAbort));
        s.run(0, |s| {
            for i in 0..ACCTS {
                assert_eq!(val(s, t, i)?, Some(10), "{kind:?} account {i}");
            }
            assert_eq!(val(s, t, 100)?, None);
            Ok(())
        })
        .unwrap();
        assert_eq!(stat(&e, "aborts"), 1);
    }
}

#[test]
fn an_out_of_order_request_aborts_and_the_retry_owns_the_whole_set() {
    let (e, t) = open(2, 4, IndexKind::Hash);
    load(&e, t, 10);
    let mut a = Session::new(e.worker(0));
    // A owns partition 0.
    a.begin(0).unwrap();
    add(&mut a, t, 0, 1).unwrap();
    let step = std::sync::Barrier::new(2);
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            let mut b = Session::new(e.worker(1));
            // B owns partition 1, then needs 0 (below it), which A has: out of order.
            b.begin(0).unwrap();
            add(&mut b, t, 20, 1).unwrap();
            assert!(matches!(add(&mut b, t, 3, -1), Err(Error::Conflict(_))));
            b.abort();
            step.wait();
            // The retry takes {0, 1} in order at begin: it waits for A.
            b.run(0, |s| {
                add(s, t, 20, 1)?;
                add(s, t, 3, -1)
            })
            .unwrap();
            assert!(done.load(Ordering::SeqCst), "B ran before A let go");
        });
        step.wait();
        assert_eq!(stat(&e, "out_of_order_aborts"), 1);
        assert_eq!(e.rows_in(t, 1), 16, "B no longer owns partition 1");
        std::thread::sleep(std::time::Duration::from_millis(50));
        done.store(true, Ordering::SeqCst);
        a.commit().unwrap();
        h.join().unwrap();
    });
    assert_eq!(stat(&e, "out_of_order_aborts"), 1, "the retry ran in order");
    assert_eq!(stat(&e, "multi_partition_commits"), 2, "load and B's retry");
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        assert_eq!(val(s, t, 0)?, Some(11));
        assert_eq!(val(s, t, 20)?, Some(11));
        assert_eq!(val(s, t, 3)?, Some(9));
        Ok(())
    })
    .unwrap();
}

/// Transfers between random accounts (so between partitions, in either order) on 4
/// threads, while the threads also sum all accounts (one transaction owning every
/// partition): every sum and the final one equal the start.
#[test]
fn concurrent_transfers_across_partitions_keep_the_sum() {
    for (threads, parts, kind, ordered) in [
        (2, 2, IndexKind::Hash, OrderedKind::BTree),
        (4, 4, IndexKind::BTree, OrderedKind::RbTree),
        (3, 4, IndexKind::BTree, OrderedKind::BTree),
    ] {
        let (e, t) = open_with(threads, parts, kind, ordered);
        load(&e, t, 1000);
        let total = 1000 * ACCTS as i64;
        std::thread::scope(|sc| {
            for w in 0..threads {
                let e = &e;
                sc.spawn(move || {
                    let mut s = Session::new(e.worker(w));
                    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ w as u64;
                    let mut next = || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    for i in 0..3000 {
                        if i % 100 == 0 {
                            let sum = s
                                .run_retry(1, 10_000, |s| {
                                    let mut sum = 0;
                                    for a in 0..ACCTS {
                                        sum += val(s, t, a)?.unwrap();
                                    }
                                    Ok(sum)
                                })
                                .unwrap();
                            assert_eq!(sum, total);
                        }
                        let from = (next() % ACCTS as u64) as u32;
                        let to = (next() % ACCTS as u64) as u32;
                        let amt = (next() % 50) as i64;
                        s.run_retry(0, 10_000, |s| {
                            assert!(add(s, t, from, -amt)?);
                            assert!(add(s, t, to, amt)?);
                            Ok(())
                        })
                        .unwrap();
                    }
                });
            }
        });
        let mut s = Session::new(e.worker(0));
        let sum = s
            .run(1, |s| {
                let mut sum = 0;
                for a in 0..ACCTS {
                    sum += val(s, t, a)?.unwrap();
                }
                Ok(sum)
            })
            .unwrap();
        assert_eq!(sum, total, "{threads} threads, {parts} partitions");
        assert!(stat(&e, "multi_partition_commits") > 0);
        assert!(stat(&e, "single_partition_commits") > 0);
    }
}

#[test]
fn a_secondary_key_in_another_partition_is_refused() {
    let mut s = Schema::new();
    let t = s.add(
        TableDef::new("t", 8, IndexKind::BTree, 10)
            // The secondary key is the row's first 4 bytes: any partition.
            .with_secondary("by_row", true, |r, out| {
                out.push_bytes(&r[..4]);
            })
            .partitioned(Partitioning {
                values: 100,
                of_key: |_, k| (k.len() >= 4).then(|| api::key::read_u32(k, 0) as u64),
                of_row: None,
            }),
    );
    let e = PartitionedEngine::open_with(
        Arc::new(s),
        &EngineOptions::default(),
        PartitionedOptions {
            partitions: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    let mut ses = Session::new(e.worker(0));
    // Key 10 (partition 0) with a secondary key of 90 (partition 1).
    let mut row = [0u8; 8];
    row[..4].copy_from_slice(&90u32.to_be_bytes());
    let r = ses.run(0, |s| s.insert(t, &k(10), &row));
    assert!(matches!(r, Err(Error::Fatal(_))), "{r:?}");
    row[..4].copy_from_slice(&20u32.to_be_bytes());
    ses.run(0, |s| s.insert(t, &k(10), &row)).unwrap();
}

#[test]
fn a_directory_without_a_log_and_bad_partition_counts_are_refused() {
    let (s, _) = schema(IndexKind::Hash);
    let s = Arc::new(s);
    let p = PartitionedOptions::default();
    // Logging without a directory logs to a temporary one (as the mvcc engine).
    for log in [LogMode::Async, LogMode::Sync] {
        let o = EngineOptions {
            log,
            ..EngineOptions::default()
        };
        let e = PartitionedEngine::open_with(s.clone(), &o, p).unwrap();
        e.load_done().unwrap();
        e.shutdown().unwrap();
    }
    // A directory with --log off would keep nothing: refused.
    let o = EngineOptions {
        db_dir: Some("/nonexistent".into()),
        ..EngineOptions::default()
    };
    let e = PartitionedEngine::open_with(s.clone(), &o, p)
        .err()
        .unwrap();
    assert!(e.to_string().contains("--log sync or --log async"), "{e}");
    for n in [0, engine_partitioned::MAX_PARTITIONS + 1] {
        let p = PartitionedOptions {
            partitions: Some(n),
            ..Default::default()
        };
        assert!(PartitionedEngine::open_with(s.clone(), &EngineOptions::default(), p).is_err());
    }
    let e = PartitionedEngine::open_with(
        s,
        &EngineOptions {
            threads: 3,
            ..Default::default()
        },
        p,
    )
    .unwrap();
    assert_eq!(e.partitions(), 3, "default: one partition per thread");
}

/// Inserts test and place a row in one search of the index (`Primary::try_put`): rows
/// inserted in any order each land in their key's partition with their own bytes, a
/// present key is refused with the row left as it was, and an aborted insert is gone.
#[test]
fn inserts_keep_every_row_in_place_and_refuse_a_present_key() {
    for (kind, ordered) in [
        (IndexKind::BTree, OrderedKind::BTree),
        (IndexKind::BTree, OrderedKind::RbTree),
        (IndexKind::Hash, OrderedKind::BTree),
    ] {
        let (e, t) = open_with(1, 4, kind, ordered);
        let mut s = Session::new(e.worker(0));
        // Ascending in one transaction (as a load), then a scrambled order.
        s.run(0, |s| {
            for i in 0..ACCTS / 2 {
                s.insert(t, &k(i), &(i as i64 * 3).to_le_bytes())?;
            }
            Ok(())
        })
        .unwrap();
        s.run(0, |s| {
            for j in 0..ACCTS / 2 {
                let i = ACCTS / 2 + (j * 7) % (ACCTS / 2);
                s.insert(t, &k(i), &(i as i64 * 3).to_le_bytes())?;
            }
            Ok(())
        })
        .unwrap();
        for p in 0..4 {
            assert_eq!(e.rows_in(t, p), 16, "{kind:?}/{ordered:?}: partition {p}");
        }
        for i in 0..ACCTS {
            let got = s.run(0, |s| val(s, t, i)).unwrap();
            assert_eq!(got, Some(i as i64 * 3), "{kind:?}/{ordered:?}: key {i}");
        }
        // A present key: refused, the row unchanged.
        s.begin(0).unwrap();
        assert!(matches!(
            s.insert(t, &k(9), &99i64.to_le_bytes()),
            Err(Error::Duplicate)
        ));
        s.abort();
        assert_eq!(s.run(0, |s| val(s, t, 9)).unwrap(), Some(27));
        // An aborted insert of a new key leaves nothing behind.
        let (e2, t2) = open_with(1, 4, kind, ordered);
        let mut s2 = Session::new(e2.worker(0));
        s2.begin(0).unwrap();
        s2.insert(t2, &k(3), &1i64.to_le_bytes()).unwrap();
        s2.abort();
        assert_eq!(s2.run(0, |s| val(s, t2, 3)).unwrap(), None);
        assert_eq!(e2.rows_in(t2, 0), 0);
    }
}
