//! TPC-E's analytical mix on PostgreSQL: TPC-E loaded at its smallest test scale
//! through the adapter, the same TPC-E transactions run on it and on the serial
//! engine, then the four analytical queries' answers (PostgreSQL running the SQL text)
//! equal row by row to the serial engine's (the plans). Where PostgreSQL is not
//! installed, one `SKIPPED` line (the `postgres` module's test installs it).

use api::{Engine, EngineOptions, Session};
use engine_postgres::PostgresEngine;
use workloads::tpce::analytics::{answer, IMPLEMENTED};
use workloads::tpce::{Tpce, TpceConfig};
use workloads::Workload;

#[test]
fn tpce_analytics_answer_alike_on_postgres() {
    if pgserver::find_bindir().is_none() {
        skipped!("no PostgreSQL installed (the postgres module's test installs it)");
        return;
    }
    let t = Tpce::new(TpceConfig::smallest_test()).unwrap();
    let pg =
        PostgresEngine::open(std::sync::Arc::new(t.schema()), &crate::quick_commits()).unwrap();
    t.load(&pg, 2, 7, &|_| {}).unwrap();
    pg.load_done().unwrap();
    let serial = engine_serial::SerialEngine::open(
        std::sync::Arc::new(t.schema()),
        &EngineOptions::default(),
    )
    .unwrap();
    let ts = Tpce::new(t.cfg.clone()).unwrap();
    ts.load(&serial, 1, 7, &|_| {}).unwrap();
    let (mut a, mut b) = (
        Session::new(api::Database::worker(&pg, 0)),
        Session::new(api::Database::worker(&serial, 0)),
    );
    workloads::htap::run_txns(&t, &mut a, 300, 3).unwrap();
    workloads::htap::run_txns(&ts, &mut b, 300, 3).unwrap();
    for &n in &IMPLEMENTED {
        let got = a.run(11 + n, |s| answer(n, &t.cfg, s)).unwrap();
        let want = b.run(11 + n, |s| answer(n, &ts.cfg, s)).unwrap();
        assert!(!want.is_empty(), "A{n}: no rows");
        assert_eq!(
            got, want,
            "A{n}: PostgreSQL's answer differs from the plan's"
        );
    }
}
