//! The micro-benchmark on the serial reference engine: loads every key, update runs keep
//! the check passing, and a damaged row is caught.

use api::{Engine, EngineOptions, IndexKind, Session, TableId};
use engine_serial::SerialEngine;
use std::sync::Arc;
use workloads::micro::{Columns, Distribution, LongRow, Micro, MicroConfig, Mode};
use workloads::{RunInfo, Workload};

fn micro(columns: Columns, distribution: Distribution) -> Micro {
    Micro::new(MicroConfig {
        keys: 5000,
        rows_per_txn: 10,
        mode: Mode::Update,
        columns,
        distribution,
        index: IndexKind::BTree,
    })
    .unwrap()
}

fn run_and_check(wl: &Micro) -> (SerialEngine, u64) {
    let e = SerialEngine::open(Arc::new(wl.schema()), &EngineOptions::default()).unwrap();
    wl.load(&e, 2, 1, &|_| {}).unwrap();
    let mut st = wl.worker_state(0, 1, 5);
    let mut s = Session::new(api::Database::worker(&e, 0));
    for _ in 0..500 {
        let (ty, input) = wl.next(&mut st);
        s.run(ty, |s| wl.execute(s, &mut st, &input)).unwrap();
    }
    drop(s);
    let checks = wl
        .check(
            &e,
            &RunInfo {
                committed: Some(vec![500]),
                acked: None,
            },
        )
        .unwrap();
    assert!(checks.iter().all(|c| c.passed), "{checks:?}");
    (e, 500)
}

#[test]
fn updates_keep_both_column_kinds_consistent() {
    run_and_check(&micro(Columns::String, Distribution::Uniform));
    let wl = micro(Columns::Long, Distribution::Zipf { theta: 0.99 });
    let (e, n) = run_and_check(&wl);
    // Damage: one row's columns no longer cancel.
    let mut s = Session::new(e.worker(0));
    let mut key = api::Key::new();
    key.push_u64(17);
    s.run(0, |s| {
        s.update_row(TableId(0), &key, |r: &mut LongRow| r.b += 3)
    })
    .unwrap();
    drop(s);
    let checks = wl
        .check(
            &e,
            &RunInfo {
                committed: Some(vec![n]),
                acked: None,
            },
        )
        .unwrap();
    assert!(
        !checks
            .iter()
            .find(|c| c.name == "columns consistent per row")
            .unwrap()
            .passed
    );
}

#[test]
fn bad_configurations_are_refused() {
    let base = MicroConfig {
        keys: 10,
        rows_per_txn: 1,
        mode: Mode::Read,
        columns: Columns::Long,
        distribution: Distribution::Uniform,
        index: IndexKind::Hash,
    };
    assert!(Micro::new(MicroConfig {
        keys: 0,
        ..base.clone()
    })
    .is_err());
    assert!(Micro::new(MicroConfig {
        rows_per_txn: 11,
        ..base.clone()
    })
    .is_err());
    assert!(Micro::new(MicroConfig {
        distribution: Distribution::Zipf { theta: 1.5 },
        ..base.clone()
    })
    .is_err());
    assert!(Micro::new(base).is_ok());
}

/// The check reads integer keys of a B+tree by range scans and a hash index's by point
/// reads: both find a deleted row missing and an update no transaction committed.
#[test]
fn checks_by_scan_and_by_point_reads_catch_damage() {
    for index in [IndexKind::BTree, IndexKind::Hash] {
        let wl = Micro::new(MicroConfig {
            keys: 9000,
            rows_per_txn: 1,
            mode: Mode::Update,
            columns: Columns::Long,
            distribution: Distribution::Uniform,
            index,
        })
        .unwrap();
        let e = SerialEngine::open(Arc::new(wl.schema()), &EngineOptions::default()).unwrap();
        wl.load(&e, 2, 1, &|_| {}).unwrap();
        let info = RunInfo {
            committed: Some(vec![0]),
            acked: None,
        };
        let failed = |e: &SerialEngine| -> Vec<String> {
            let checks = wl.check(e, &info).unwrap();
            checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| c.name.clone())
                .collect()
        };
        assert!(failed(&e).is_empty(), "{index:?}: {:?}", failed(&e));
        let mut s = Session::new(e.worker(0));
        // In the second chunk of 4,096 keys: both columns moved, as an update moves them.
        let mut key = api::Key::new();
        key.push_u64(5000);
        s.run(0, |s| {
            s.update_row(TableId(0), &key, |r: &mut LongRow| {
                r.a += 1;
                r.b -= 1;
            })
        })
        .unwrap();
        drop(s);
        assert_eq!(
            failed(&e),
            ["row updates equal committed updates"],
            "{index:?}"
        );
        let mut s = Session::new(e.worker(0));
        let mut gone = api::Key::new();
        gone.push_u64(8999);
        s.run(0, |s| s.delete(TableId(0), &gone).map(|_| ()))
            .unwrap();
        drop(s);
        let f = failed(&e);
        assert!(
            f.contains(&"all rows present".to_string()),
            "{index:?}: {f:?}"
        );
    }
}
