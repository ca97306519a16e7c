use crate::common;
use api::{Dir, Engine, Error, LogMode, Session, TableId};
use common::*;
use engine_disk::DiskEngine;
use std::collections::BTreeMap;
use std::ops::Bound;

const ACC: TableId = TableId(0);
const PLAIN: TableId = TableId(1);
const HASHED: TableId = TableId(2);

#[test]
fn crud_scan_and_abort_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(1000), &opts(dir.path(), LogMode::Sync, None)).unwrap();
    assert!(!e.has_data());
    let mut s = Session::new(e.worker(0));
    let mut model: BTreeMap<u64, [u8; 100]> = BTreeMap::new();
    let mut x = 12345u64;
    for round in 0..300 {
        let mut pending = model.clone();
        s.begin(0).unwrap();
        for _ in 0..10 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (x >> 33) % 2000;
            let mut r = [0u8; 100];
            r[..8].copy_from_slice(&x.to_le_bytes());
            match (x >> 20) % 4 {
                0 | 1 => match s.insert(PLAIN, &key(k), &r) {
                    Ok(()) => {
                        assert!(pending.insert(k, r).is_none());
                    }
                    Err(Error::Duplicate) => assert!(pending.contains_key(&k)),
                    Err(e) => panic!("{e}"),
                },
                2 => {
                    let found = s.delete(PLAIN, &key(k)).unwrap();
                    assert_eq!(found, pending.remove(&k).is_some());
                }
                _ => {
                    let found = s
                        .update(PLAIN, &key(k), |b| b[50] = b[50].wrapping_add(1))
                        .unwrap();
                    assert_eq!(found, pending.contains_key(&k));
                    if let Some(v) = pending.get_mut(&k) {
                        v[50] = v[50].wrapping_add(1);
                    }
                }
            }
        }
        if round % 5 == 4 {
            s.abort();
        } else {
            s.commit().unwrap();
            model = pending;
        }
        if round % 50 == 0 {
            // Full scans in both directions and a bounded one agree with the model.
            s.begin(1).unwrap();
            let mut got = vec![];
            s.scan(
                PLAIN.primary(),
                Bound::Unbounded,
                Bound::Unbounded,
                Dir::Forward,
                usize::MAX,
                |k, r| {
                    got.push((api::key::read_u64(k, 0), r[..8].to_vec()));
                    true
                },
            )
            .unwrap();
            let want: Vec<_> = model.iter().map(|(k, v)| (*k, v[..8].to_vec())).collect();
            assert_eq!(got, want);
            let mut back = vec![];
            let (lo, hi) = (key(500), key(1500));
            s.scan(
                PLAIN.primary(),
                Bound::Included(&lo),
                Bound::Excluded(&hi),
                Dir::Backward,
                7,
                |k, _| {
                    back.push(api::key::read_u64(k, 0));
                    true
                },
            )
            .unwrap();
            let want: Vec<u64> = model
                .range(500..1500)
                .rev()
                .take(7)
                .map(|(k, _)| *k)
                .collect();
            assert_eq!(back, want);
            s.commit().unwrap();
        }
    }
    // Point reads.
    s.begin(2).unwrap();
    for k in 0..2000 {
        let mut got = None;
        s.get(PLAIN, &key(k), |r| got = Some(r[..8].to_vec()))
            .unwrap();
        assert_eq!(got, model.get(&k).map(|v| v[..8].to_vec()));
    }
    s.commit().unwrap();
}

#[test]
fn secondary_index_and_hash_rules() {
    let dir = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(100), &opts(dir.path(), LogMode::Off, None)).unwrap();
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    for i in 0..300u64 {
        s.insert(ACC, &key(i), &row(i as i64, (i % 7) as u32))
            .unwrap();
        s.insert(HASHED, &key(i), &[1u8; 16]).unwrap();
    }
    s.commit().unwrap();
    s.begin(0).unwrap();
    assert!(s.delete(ACC, &key(14)).unwrap());
    let mut p = api::Key::new();
    p.push_u32(0);
    let end = p.prefix_end().unwrap();
    let mut ids = vec![];
    s.scan(
        ACC.secondary(0),
        Bound::Included(&p),
        Bound::Excluded(&end),
        Dir::Forward,
        1000,
        |k, r| {
            assert_eq!(
                k.len(),
                12,
                "non-unique secondary key carries the primary key"
            );
            ids.push(bal(r));
            true
        },
    )
    .unwrap();
    let want: Vec<i64> = (0..300).filter(|i| i % 7 == 0 && *i != 14).collect();
    assert_eq!(ids, want);
    let err = s.scan(
        HASHED.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        Dir::Forward,
        10,
        |_, _| true,
    );
    assert!(matches!(err, Err(Error::Fatal(_))));
    s.abort();
    s.begin(0).unwrap();
    let r = s.update(ACC, &key(3), |b| b[8] ^= 1);
    assert!(
        matches!(r, Err(Error::Fatal(_))),
        "changing a secondary key is refused"
    );
    s.abort();
    s.begin(0).unwrap();
    assert!(
        s.get(ACC, &key(14), |_| ()).unwrap(),
        "aborted delete is undone"
    );
    assert_eq!(s.insert(ACC, &key(14), &row(0, 0)), Err(Error::Duplicate));
    s.abort();
}

#[test]
fn clean_reopen_keeps_data_in_every_log_mode() {
    for mode in [LogMode::Off, LogMode::Sync] {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..3u64 {
            let e = DiskEngine::open(schema(100), &opts(dir.path(), mode, Some(100))).unwrap();
            assert_eq!(e.has_data(), round > 0);
            let mut s = Session::new(e.worker(0));
            s.run(0, |s| {
                for i in 0..500u64 {
                    s.insert(PLAIN, &key(round * 1000 + i), &[round as u8; 100])?;
                }
                Ok(())
            })
            .unwrap();
            if round == 0 {
                e.load_done().unwrap();
            }
            let n = s
                .run(1, |s| {
                    s.scan(
                        PLAIN.primary(),
                        Bound::Unbounded,
                        Bound::Unbounded,
                        Dir::Forward,
                        usize::MAX,
                        |k, r| {
                            assert_eq!(r[0] as u64, api::key::read_u64(k, 0) / 1000);
                            true
                        },
                    )
                })
                .unwrap();
            assert_eq!(n as u64, 500 * (round + 1), "{mode:?} round {round}");
        }
    }
}

#[test]
fn clean_reopen_keeps_data_and_checks_schema() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = DiskEngine::open(schema(100), &opts(dir.path(), LogMode::Async, None)).unwrap();
        let mut s = Session::new(e.worker(0));
        s.begin(0).unwrap();
        for i in 0..2000u64 {
            s.insert(ACC, &key(i), &row(i as i64, 1)).unwrap();
        }
        s.commit().unwrap();
        drop(s);
        e.load_done().unwrap();
        e.shutdown().unwrap();
    }
    let e = DiskEngine::open(schema(100), &opts(dir.path(), LogMode::Async, None)).unwrap();
    assert!(e.has_data());
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    let n = s
        .scan(
            ACC.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            usize::MAX,
            |_, _| true,
        )
        .unwrap();
    assert_eq!(n, 2000);
    s.commit().unwrap();
    drop(s);
    drop(e);
    let mut other = api::Schema::new();
    other.add(api::TableDef::new(
        "accounts",
        32,
        api::IndexKind::BTree,
        10,
    ));
    match DiskEngine::open(
        std::sync::Arc::new(other),
        &opts(dir.path(), LogMode::Async, None),
    ) {
        Err(Error::Fatal(m)) => assert!(m.contains("schema"), "{m}"),
        _ => panic!("schema mismatch accepted"),
    }
}
