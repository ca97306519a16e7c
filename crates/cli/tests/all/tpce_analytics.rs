//! TPC-E's analytical mix (`run tpce --analytics N`): its four queries answer alike on
//! every built-in engine (the plans) and on SQLite (the SQL text) at TPC-E's smallest
//! test scale after TPC-E transactions added trades, and through the command line a
//! one-second hybrid run reports both sides, bad input refused with one line and exit
//! 2. (PostgreSQL: engine_postgres's `tpce_analytics` test.)

use crate::common::{assert_bad_input, oltpscope};
use api::{Engine, EngineOptions, Session};
use exec::Row;
use std::sync::Arc;
use workloads::tpce::analytics::{answer, IMPLEMENTED};
use workloads::tpce::{Tpce, TpceConfig};
use workloads::Workload;

/// TPC-E transactions run before the queries.
const TXNS: usize = 300;

/// One load unit, one trading hour, 20 daily-market days (test-only): seconds to load.
pub fn small() -> TpceConfig {
    TpceConfig {
        customers: 1000,
        trade_hours: 1,
        daily_market_days: 20,
        ..TpceConfig::default()
    }
}

/// Every query's answer on engine `E`, loaded at [`small`] and after [`TXNS`] of
/// TPC-E's transactions, and the trades the transactions added.
fn answers<E: Engine>() -> (Vec<Vec<Row>>, u64) {
    let t = Tpce::new(small()).unwrap();
    let opts = EngineOptions {
        threads: 2,
        ..EngineOptions::default()
    };
    let e = E::open(Arc::new(t.schema()), &opts).unwrap();
    t.load(&e, 2, 7, &|_| {}).unwrap();
    let mut s = Session::new(e.worker(0));
    workloads::htap::run_txns(&t, &mut s, TXNS, 3)
        .unwrap_or_else(|err| panic!("TPC-E on {}: {err}", E::NAME));
    let out = IMPLEMENTED
        .iter()
        .map(|&n| {
            s.run(11 + n, |s| {
                s.read_committed();
                answer(n, &t.cfg, s)
            })
            .unwrap_or_else(|err| panic!("A{n} on {}: {err}", E::NAME))
        })
        .collect();
    let mut trades = 0u64;
    s.run(0, |s| {
        s.scan(
            workloads::tpce::schema::TRADE.primary(),
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            api::Dir::Forward,
            usize::MAX,
            |_, _| {
                trades += 1;
                true
            },
        )
    })
    .unwrap();
    drop(s);
    e.shutdown().unwrap();
    (out, trades - t.initial_max_trade_id())
}

fn compare(engine: &str, got: &(Vec<Vec<Row>>, u64), want: &(Vec<Vec<Row>>, u64)) {
    assert_eq!(
        got.1, want.1,
        "{engine}: the transactions added other trades"
    );
    for ((n, g), w) in IMPLEMENTED.iter().zip(&got.0).zip(&want.0) {
        assert_eq!(g.len(), w.len(), "{engine}: A{n}: row counts differ");
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            assert_eq!(a, b, "{engine}: A{n}: row {i} differs");
        }
    }
}

#[test]
fn the_four_queries_answer_alike_on_every_engine() {
    let want = answers::<engine_serial::SerialEngine>();
    assert!(want.1 > 0, "the transactions added no trade");
    for (n, rows) in IMPLEMENTED.iter().zip(&want.0) {
        assert!(!rows.is_empty(), "A{n}: no rows");
        assert!(
            rows.iter().all(|r| r[1] != exec::Datum::Int(0)),
            "A{n}: a group of nothing: {rows:?}"
        );
    }
    assert!(want.0[2].len() <= 10, "A3 is a top ten");
    compare("sqlite", &answers::<engine_sqlite::SqliteEngine>(), &want);
    compare("memory", &answers::<engine_memory::MemoryEngine>(), &want);
    compare("mvcc", &answers::<engine_mvcc::MvccEngine>(), &want);
    compare(
        "partitioned",
        &answers::<engine_partitioned::PartitionedEngine>(),
        &want,
    );
    compare("disk", &answers::<engine_disk::DiskEngine>(), &want);
}

#[test]
fn a_hybrid_run_reports_both_sides_and_bad_input_is_refused() {
    let (code, out, err) = oltpscope(&[
        "run",
        "tpce",
        "--engine",
        "mvcc",
        "--threads",
        "1",
        "--analytics",
        "1",
        "--queries",
        "4,1",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--report-interval",
        "0",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("tpce: TPC-E "), "{out}");
    assert!(out.contains("tpsE"), "{out}");
    assert!(out.contains("queries/h on 1 stream(s)"), "{out}");
    assert!(out.contains("staleness: "), "{out}");
    assert!(out.contains("consistency checks: all passed"), "{out}");
    for bad in [
        &["--analytics", "65"][..],
        &["--analytics", "1", "--queries", "5"],
        &["--analytics", "1", "--queries", "1,1"],
        &["--queries", "1"],
        &["--analytics", "1", "--txns", "10"],
    ] {
        assert_bad_input(&[&["run", "tpce", "--duration", "1"][..], bad].concat());
    }
}
