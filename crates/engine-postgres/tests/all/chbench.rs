//! CH-benCHmark on PostgreSQL: one warehouse loaded and checked through the adapter,
//! the same TPC-C transactions run on it and on the serial engine, then every
//! implemented query's answer (PostgreSQL running the SQL text) equal row by row to
//! the serial engine's (the plan). Where PostgreSQL is not installed, one `SKIPPED`
//! line (the `postgres` module's test installs it).

use api::{Engine, EngineOptions, Session};
use engine_postgres::PostgresEngine;
use workloads::chbench::queries::{answer, edge, without_clock, IMPLEMENTED};
use workloads::chbench::{run_tpcc_txns, Chbench};
use workloads::Workload;

#[test]
fn chbench_loads_checks_and_answers_alike_on_postgres() {
    if pgserver::find_bindir().is_none() {
        skipped!("no PostgreSQL installed (the postgres module's test installs it)");
        return;
    }
    let ch = Chbench::new(edge::test_config()).unwrap();
    let pg =
        PostgresEngine::open(std::sync::Arc::new(ch.schema()), &crate::quick_commits()).unwrap();
    ch.load(&pg, 2, 7, &|_| {}).unwrap();
    // The planner's statistics, as the driver has them gathered after a load (without
    // them PostgreSQL took 47 s for Q5 at one warehouse).
    pg.load_done().unwrap();
    ch.check_loaded(&pg).unwrap();
    let serial = engine_serial::SerialEngine::open(
        std::sync::Arc::new(ch.schema()),
        &EngineOptions::default(),
    )
    .unwrap();
    ch.load(&serial, 1, 7, &|_| {}).unwrap();
    let (mut a, mut b) = (
        Session::new(api::Database::worker(&pg, 0)),
        Session::new(api::Database::worker(&serial, 0)),
    );
    run_tpcc_txns(&ch, &mut a, 1000, 3).unwrap();
    run_tpcc_txns(&ch, &mut b, 1000, 3).unwrap();
    // Customers without orders (Q22) and German-supplied `co` items (Q20).
    a.run(4 + 22, |s| edge::add_edge_rows(s, edge::TEST_ITEMS))
        .unwrap();
    b.run(4 + 22, |s| edge::add_edge_rows(s, edge::TEST_ITEMS))
        .unwrap();
    for &n in &IMPLEMENTED {
        let got = without_clock(n, a.run(4 + n, |s| answer(n, s)).unwrap());
        let want = without_clock(n, b.run(4 + n, |s| answer(n, s)).unwrap());
        assert!(!want.is_empty(), "Q{n}: no rows");
        assert_eq!(
            got, want,
            "Q{n}: PostgreSQL's answer differs from the plan's"
        );
    }
    drop(a);
    for c in ch.check(&pg, &workloads::RunInfo::default()).unwrap() {
        assert!(c.passed, "{c:?}");
    }
}
