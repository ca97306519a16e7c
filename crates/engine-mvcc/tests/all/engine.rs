//! The mvcc engine's own properties: snapshots, first writer wins, garbage collection
//! (old versions freed, a long reader keeps its snapshot, deleted keys leave the
//! indexes), a concurrent bank with a sum invariant and snapshot readers, and the
//! storage options it refuses.

use api::key::Key;
use api::{Engine, EngineOptions, Error, IndexKind, LogMode, Schema, Session, TableDef, TableId};
use engine_mvcc::MvccEngine;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn k(v: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(v);
    k
}

fn open(threads: usize, kind: IndexKind) -> (MvccEngine, TableId) {
    let mut s = Schema::new();
    let t = s.add(TableDef::new("acct", 8, kind, 1000));
    let e = MvccEngine::open(
        Arc::new(s),
        &EngineOptions {
            threads,
            ..EngineOptions::default()
        },
    )
    .unwrap();
    (e, t)
}

fn load(e: &MvccEngine, t: TableId, n: u32, v: i64) {
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for i in 0..n {
            s.insert(t, &k(i), &v.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
}

fn val(s: &mut Session<engine_mvcc::MvccWorker<'_>>, t: TableId, i: u32) -> Option<i64> {
    let mut out = None;
    s.get(t, &k(i), |r| {
        out = Some(i64::from_le_bytes(r.try_into().unwrap()))
    })
    .unwrap();
    out
}

fn set(
    s: &mut Session<engine_mvcc::MvccWorker<'_>>,
    t: TableId,
    i: u32,
    v: i64,
) -> api::Result<bool> {
    s.update(t, &k(i), |r| r.copy_from_slice(&v.to_le_bytes()))
}

fn stat(e: &MvccEngine, name: &str) -> u64 {
    e.stats()[name].as_u64().unwrap()
}

#[test]
fn a_snapshot_ignores_later_commits_and_first_writer_wins() {
    let (e, t) = open(2, IndexKind::BTree);
    load(&e, t, 2, 10);
    let mut a = Session::new(e.worker(0));
    let mut b = Session::new(e.worker(1));
    a.begin(0).unwrap();
    assert_eq!(val(&mut a, t, 0), Some(10));
    b.run(0, |b| set(b, t, 0, 11)).unwrap();
    // `a` still sees its snapshot, and may not write over the newer version.
    assert_eq!(val(&mut a, t, 0), Some(10));
    assert!(matches!(set(&mut a, t, 0, 12), Err(Error::Conflict(_))));
    a.abort();
    // An uncommitted version blocks the second writer and is invisible to readers.
    a.begin(0).unwrap();
    assert!(set(&mut a, t, 1, 20).unwrap());
    assert_eq!(
        val(&mut a, t, 1),
        Some(20),
        "a transaction sees its own write"
    );
    b.begin(0).unwrap();
    assert_eq!(val(&mut b, t, 1), Some(10));
    assert!(matches!(set(&mut b, t, 1, 30), Err(Error::Conflict(_))));
    b.abort();
    a.commit().unwrap();
    b.begin(0).unwrap();
    assert_eq!(val(&mut b, t, 1), Some(20));
    assert_eq!(val(&mut b, t, 0), Some(11));
    b.commit().unwrap();
}

#[test]
fn a_read_that_changed_before_commit_fails_validation() {
    let (e, t) = open(2, IndexKind::Hash);
    load(&e, t, 2, 0);
    let mut a = Session::new(e.worker(0));
    let mut b = Session::new(e.worker(1));
    // Write skew: each reads one key and writes the other.
    a.begin(0).unwrap();
    assert_eq!(val(&mut a, t, 0), Some(0));
    set(&mut a, t, 1, 1).unwrap();
    b.begin(0).unwrap();
    assert_eq!(val(&mut b, t, 1), Some(0));
    set(&mut b, t, 0, 1).unwrap();
    b.commit().unwrap();
    assert!(matches!(a.commit(), Err(Error::Conflict(_))));
    // A read-only transaction over the same stale snapshot commits (it is one).
    a.begin(0).unwrap();
    b.run(0, |b| set(b, t, 1, 5)).unwrap();
    assert_eq!(val(&mut a, t, 1), Some(0));
    a.commit().unwrap();
}

#[test]
fn old_versions_are_freed_but_a_long_reader_keeps_its_snapshot() {
    let (e, t) = open(2, IndexKind::BTree);
    load(&e, t, 1, 0);
    let mut r = Session::new(e.worker(0));
    let mut w = Session::new(e.worker(1));
    r.begin(0).unwrap();
    assert_eq!(val(&mut r, t, 0), Some(0));
    for i in 1..=200 {
        w.run(0, |w| set(w, t, 0, i)).unwrap();
    }
    // The reader's version (and all newer ones) must stay.
    assert_eq!(val(&mut r, t, 0), Some(0));
    assert!(
        e.chain_len(t, &k(0)) > 100,
        "versions the reader may need were kept"
    );
    r.commit().unwrap();
    for i in 201..=240 {
        w.run(0, |w| set(w, t, 0, i)).unwrap();
    }
    let len = e.chain_len(t, &k(0));
    assert!(
        len <= engine_mvcc::gc::GC_EVERY as usize + 1,
        "with no reader left, old versions go: {len} in the chain"
    );
    assert!(stat(&e, "versions_freed") >= 200);
    r.begin(0).unwrap();
    assert_eq!(val(&mut r, t, 0), Some(240));
    r.commit().unwrap();
}

#[test]
fn deleted_keys_leave_the_indexes() {
    for kind in [IndexKind::BTree, IndexKind::Hash] {
        let (e, t) = open(1, kind);
        load(&e, t, 100, 1);
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            for i in 0..100 {
                assert!(s.delete(t, &k(i))?);
            }
            Ok(())
        })
        .unwrap();
        // Commits that let the worker collect.
        for _ in 0..engine_mvcc::gc::GC_EVERY {
            s.run(0, |s| {
                s.insert(t, &k(1000), &0i64.to_le_bytes())
                    .and_then(|_| s.delete(t, &k(1000)).map(|_| ()))
            })
            .unwrap();
        }
        // Only the filler key's last objects may still wait for a collection.
        assert!(e.table_sizes().unwrap()[0].records <= 1, "{kind:?}");
        for i in 0..100 {
            assert_eq!(e.chain_len(t, &k(i)), 0, "{kind:?}: key {i} still indexed");
        }
        assert!(stat(&e, "objects_removed") >= 100);
        // The keys can come back.
        s.run(0, |s| s.insert(t, &k(5), &7i64.to_le_bytes()))
            .unwrap();
        s.begin(0).unwrap();
        assert_eq!(val(&mut s, t, 5), Some(7));
        assert_eq!(val(&mut s, t, 6), None);
        s.commit().unwrap();
    }
}

/// Transfers between accounts under 4 threads while snapshot readers sum all accounts:
/// every committed snapshot sees the total, read-only snapshots never abort, and the
/// final total is the initial one.
#[test]
fn concurrent_transfers_keep_the_sum_in_every_snapshot() {
    const N: u32 = 16;
    for kind in [IndexKind::BTree, IndexKind::Hash] {
        let (e, t) = open(4, kind);
        load(&e, t, N, 100);
        let stop = AtomicBool::new(false);
        let transfers = AtomicU64::new(0);
        std::thread::scope(|sc| {
            for id in 0..3 {
                let (e, stop, transfers) = (&e, &stop, &transfers);
                sc.spawn(move || {
                    let mut s = Session::new(e.worker(id));
                    let mut x = id as u32 * 7 + 1;
                    for _ in 0..3000 {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        let (a, b) = ((x >> 8) % N, (x >> 16) % N);
                        if a == b {
                            continue;
                        }
                        let r = s.run(0, |s| {
                            let va = val(s, t, a).unwrap();
                            let vb = val(s, t, b).unwrap();
                            set(s, t, a, va - 1)?;
                            set(s, t, b, vb + 1)?;
                            Ok(())
                        });
                        match r {
                            Ok(()) => {
                                transfers.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(Error::Conflict(_)) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    stop.store(true, Ordering::Release);
                });
            }
            let (e, stop) = (&e, &stop);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(3));
                let mut seen = 0;
                while !stop.load(Ordering::Acquire) || seen == 0 {
                    let sum = s
                        .run(1, |s| {
                            Ok((0..N).map(|i| val(s, t, i).unwrap()).sum::<i64>())
                        })
                        .expect("a read-only snapshot never aborts");
                    assert_eq!(sum, 100 * N as i64, "a snapshot saw a partial transfer");
                    seen += 1;
                }
            });
        });
        assert!(transfers.load(Ordering::Relaxed) > 0);
        let mut s = Session::new(e.worker(0));
        let sum = s
            .run(1, |s| {
                Ok((0..N).map(|i| val(s, t, i).unwrap()).sum::<i64>())
            })
            .unwrap();
        assert_eq!(sum, 100 * N as i64);
    }
}

/// What the engine still refuses about storage: a database directory without a log to
/// keep it in, nothing to check, and two different places for one database.
#[test]
fn storage_without_a_log_is_refused() {
    let s = Arc::new(Schema::new());
    for o in [
        EngineOptions {
            db_dir: Some("/nonexistent".into()),
            ..EngineOptions::default()
        },
        EngineOptions {
            create: false,
            ..EngineOptions::default()
        },
        EngineOptions {
            db_dir: Some("/nonexistent/a".into()),
            log_dir: Some("/nonexistent/b".into()),
            log: LogMode::Sync,
            ..EngineOptions::default()
        },
    ] {
        let Err(Error::Fatal(msg)) = MvccEngine::open(s.clone(), &o) else {
            panic!("opened with {o:?}")
        };
        assert!(msg.contains("mvcc engine"), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }
    assert!(!std::path::Path::new("/nonexistent").exists());
}
