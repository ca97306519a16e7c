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
