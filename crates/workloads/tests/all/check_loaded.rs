//! `Workload::check_loaded`: every kit refuses a database loaded with another size (the
//! driver asks before the first transaction of `run --no-load` and before `check`) and
//! accepts its own, reading only.

use api::{Engine, EngineOptions, IndexKind};
use engine_serial::SerialEngine;
use std::sync::Arc;
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::tpce::{Tpce, TpceConfig};
use workloads::Workload;

fn loaded<W: Workload>(wl: &W) -> SerialEngine {
    let e = SerialEngine::open(Arc::new(wl.schema()), &EngineOptions::default()).unwrap();
    wl.load(&e, 2, 3, &|_| {}).unwrap();
    e
}

/// `wl` refuses `e` with one line naming `setting` and `what`.
fn refused<W: Workload>(wl: &W, e: &SerialEngine, setting: &str, what: &str) {
    let err = wl.check_loaded(e).unwrap_err().to_string();
    assert!(
        err.contains(setting) && err.contains(what) && !err.contains('\n'),
        "{err}"
    );
}

fn micro(keys: u64) -> Micro {
    Micro::new(MicroConfig {
        keys,
        rows_per_txn: 1,
        mode: Mode::Update,
        columns: Columns::Long,
        distribution: Distribution::Uniform,
        index: IndexKind::BTree,
    })
    .unwrap()
}

fn tpcb(scale: u64) -> Tpcb {
    Tpcb::new(
        TpcbConfig {
            scale,
            pad: false,
            affinity: false,
        },
        1,
    )
    .unwrap()
}

#[test]
fn micro_refuses_another_key_count_both_ways() {
    let e = loaded(&micro(500));
    micro(500).check_loaded(&e).unwrap();
    refused(&micro(501), &e, "501 keys", "row 500 is missing");
    refused(&micro(499), &e, "499 keys", "row 499 is present");
}

#[test]
fn tpcb_refuses_another_scale_both_ways() {
    let e = loaded(&tpcb(2));
    tpcb(2).check_loaded(&e).unwrap();
    refused(&tpcb(3), &e, "--scale 3", "branch 3 is missing");
    refused(&tpcb(1), &e, "--scale 1", "branch 2 is present");
}

#[test]
fn tpcc_refuses_another_warehouse_count() {
    let w = |n| {
        Tpcc::new(TpccConfig {
            warehouses: n,
            ..TpccConfig::default()
        })
        .unwrap()
    };
    let e = loaded(&w(1));
    w(1).check_loaded(&e).unwrap();
    refused(&w(2), &e, "--warehouses 2", "warehouse 2 is missing");
}

#[test]
fn tpce_refuses_more_customers_or_trade_days_than_loaded() {
    let c = |customers, trade_hours| {
        Tpce::new(TpceConfig {
            customers,
            trade_hours,
            daily_market_days: 20,
            ..TpceConfig::default()
        })
        .unwrap()
    };
    let e = loaded(&c(1000, 1));
    c(1000, 1).check_loaded(&e).unwrap();
    refused(
        &c(2000, 1),
        &e,
        "--customers 2000",
        "customer 2000 is missing",
    );
    refused(&c(1000, 2), &e, "trade days", "is missing");
}
