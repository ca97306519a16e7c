//! The kits' typed declarations (`api::typed`) agree with the rows and keys they really
//! write: every table is declared, its declaration is well formed, and every row of a
//! loaded and briefly run database reads back through its column values, with primary
//! and secondary keys that the declared parts reproduce.

use api::typed::{column_value, SqlType};
use api::{Dir, Engine, EngineOptions, IndexKind, Session, TableDef, Worker};
use engine_serial::SerialEngine;
use std::ops::Bound;
use std::sync::Arc;
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::tpce::{Tpce, TpceConfig};
use workloads::Workload;

/// Load `wl`, run `txns` transactions on one worker, then check every row of every table.
/// Returns the number of committed transactions per type.
fn check_kit<W: Workload>(wl: &W, txns: u64) -> Vec<u64> {
    let mut schema = wl.schema();
    for t in &mut schema.tables {
        assert!(t.is_typed(), "{}: not fully declared", t.name);
        t.check_declaration().unwrap();
        // Ordered primaries everywhere, so that every table can be walked.
        t.primary = IndexKind::BTree;
    }
    let e = SerialEngine::open(Arc::new(schema), &EngineOptions::default()).unwrap();
    wl.load(&e, 1, 3, &|_| {}).unwrap();
    let mut st = wl.worker_state(0, 1, 5);
    let mut s = Session::new(api::Database::worker(&e, 0));
    let mut committed = vec![0u64; wl.txn_types().len()];
    for _ in 0..txns {
        let (ty, input) = wl.next(&mut st);
        if s.run_retry(ty, 100, |s| wl.execute(s, &mut st, &input))
            .is_ok()
        {
            committed[ty as usize] += 1;
            // As the driver does: TPC-E's market learns of submitted trades here.
            wl.committed(&mut st, &input, true);
        }
    }
    let mut w = e.worker(0);
    w.begin().unwrap();
    for id in e.schema().table_ids() {
        let t = e.schema().table(id).clone();
        let mut rows = 0u64;
        let mut bad = None;
        w.scan(
            id.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            usize::MAX,
            &mut |k, r| {
                rows += 1;
                if let Err(e) = t.check_row(k, r).and_then(|()| fits_precision(&t, r)) {
                    bad = Some(e);
                    return false;
                }
                true
            },
        )
        .unwrap();
        if let Some(e) = bad {
            panic!("{e}");
        }
        assert!(rows > 0, "{}: no rows to check", t.name);
    }
    w.commit().unwrap();
    committed
}

/// Every decimal column's value has at most its declared precision in digits, as a
/// database system's NUMERIC(precision, scale) column would require.
fn fits_precision(t: &TableDef, row: &[u8]) -> Result<(), String> {
    for c in &t.columns {
        if let SqlType::Decimal { precision, .. } = c.ty {
            let v = column_value(c, row).as_int().unwrap();
            if v.unsigned_abs() >= 10u64.pow(precision as u32) {
                return Err(format!(
                    "{}.{}: {v} has more than {precision} digits",
                    t.name, c.name
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn tpcb_declaration_matches_its_rows() {
    for pad in [false, true] {
        let wl = Tpcb::new(
            TpcbConfig {
                scale: 1,
                pad,
                affinity: false,
            },
            1,
        )
        .unwrap();
        check_kit(&wl, 200);
    }
}

#[test]
fn tpcc_declaration_matches_its_rows() {
    let wl = Tpcc::new(TpccConfig {
        warehouses: 1,
        items: 1000,
        ..TpccConfig::default()
    })
    .unwrap();
    let committed = check_kit(&wl, 400);
    // The full mix ran: run-time History rows (Payment) and orders delivered by the run
    // (Delivery) were checked along with the loaded ones.
    let of = |name: &str| committed[wl.txn_types().iter().position(|t| *t == name).unwrap()];
    assert!(
        of("payment") > 0 && of("delivery") > 0 && of("new-order") > 0,
        "{committed:?}"
    );
}

#[test]
fn micro_declaration_matches_its_rows() {
    for columns in [Columns::Long, Columns::String] {
        for index in [IndexKind::BTree, IndexKind::Hash] {
            let wl = Micro::new(MicroConfig {
                keys: 2000,
                rows_per_txn: 10,
                mode: Mode::Update,
                columns,
                distribution: Distribution::Uniform,
                index,
            })
            .unwrap();
            // The declaration does not depend on the index kind (check_kit walks the
            // table through an ordered primary), but the schema is built per kind.
            assert_eq!(wl.schema().tables[0].primary, index);
            let committed = check_kit(&wl, 100);
            assert_eq!(committed, vec![100], "{columns:?} {index:?}");
        }
    }
}

#[test]
fn tpce_declaration_matches_its_rows() {
    // The smallest database: one load unit, one trading hour, 20 daily-market days.
    let wl = Tpce::new(TpceConfig {
        customers: 1000,
        trade_hours: 1,
        daily_market_days: 20,
        ..TpceConfig::default()
    })
    .unwrap();
    let committed = check_kit(&wl, 400);
    // Trades were submitted and completed by the run, so its TRADE, TRADE_HISTORY,
    // SETTLEMENT and HOLDING rows were checked along with the loaded ones.
    let of = |name: &str| committed[wl.txn_types().iter().position(|t| *t == name).unwrap()];
    assert!(
        of("trade-order") > 0 && of("trade-result") > 0,
        "{committed:?}"
    );
}

#[test]
fn tpch_declaration_matches_its_rows() {
    let wl = workloads::tpch::Tpch::new(workloads::tpch::TpchConfig::default()).unwrap();
    // One power test: RF1 (one batch at SF 0.01), the 22 queries, RF2; the refresh
    // functions' rows are checked against the declaration with the loaded ones.
    let n = wl.cfg.queries.len() as u64 + 2;
    let committed = check_kit(&wl, n);
    assert_eq!(committed.len(), 24);
    assert_eq!(committed.iter().sum::<u64>(), n, "{committed:?}");
    assert_eq!(committed[22..], [1, 1], "{committed:?}");
}
