//! TPC-E on every engine: short runs through the driver whose consistency checks must
//! pass, and conformance: one seeded single-threaded stream of transactions leaves the
//! same database (everything but the clock's dates) on the memory and disk engines as
//! on the serial oracle. Small settings (one load unit, one trading hour, 20 daily
//! market days: test-only).

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use api::row;
use api::{Dir, Engine, EngineOptions, Error, LogMode, Session};
use driver::{RunConfig, Stop};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;
use workloads::tpce::schema::*;
use workloads::tpce::txn::TXN_NAMES;
use workloads::tpce::{gen, Tpce, TpceConfig};
use workloads::Workload;

fn small() -> Tpce {
    Tpce::new(TpceConfig {
        customers: 1000,
        trade_hours: 1,
        daily_market_days: 20,
        // No Data-Maintenance by the clock inside a test (the kit's tests run each).
        data_maintenance_s: 3600,
        ..TpceConfig::default()
    })
    .unwrap()
}

fn cfg(threads: usize, log: LogMode, dir: Option<&std::path::Path>) -> RunConfig {
    RunConfig {
        engine: EngineOptions {
            threads,
            log,
            db_dir: dir.map(|d| d.join("db")),
            log_dir: dir.map(|d| d.join("log")),
            ..EngineOptions::default()
        },
        threads,
        warmup_s: 0.05,
        stop: Stop::Seconds(0.5),
        seed: 3,
        pin: false,
        no_load: false,
        interactive: false,
        trace_measured: false,
        acked_file: None,
        check: true,
        progress_file: None,
        rate: None,
        coroutines: 1,
        coroutine_seed: None,
        interleave: false,
        interleave_group: 1,
        stats: false,
        timeseries: false,
        steps_team: None,
    }
}

fn run_ok<E: Engine>(log: LogMode, threads: usize) {
    let dir = tempfile::tempdir().unwrap();
    let wl = small();
    // The mvcc engine keeps nothing on storage (yet): it refuses a directory.
    let dir = (!matches!(E::NAME, "mvcc" | "partitioned")).then_some(dir.path());
    let r = driver::run::<E, Tpce>(&wl, &cfg(threads, log, dir))
        .unwrap_or_else(|e| panic!("tpce on {}: {e}", E::NAME));
    assert!(r.committed > 0, "tpce on {}: nothing committed", E::NAME);
    assert!(r.checks.passed, "tpce on {}: {:#?}", E::NAME, r.checks);
    // tpsE: the Trade-Results committed per second of the measurement.
    let tr = r.per_txn.iter().find(|t| t.name == "trade-result").unwrap();
    let tpse = r.tpse.expect("a TPC-E report states tpsE");
    assert!(
        (tpse - tr.committed as f64 / r.duration_s).abs() < 1e-6 * tpse.max(1.0),
        "{tpse} against {} trade-results in {} s",
        tr.committed,
        r.duration_s
    );
    assert!(r.tpmc.is_none());
}

#[test]
fn serial_engine_runs_tpce() {
    run_ok::<engine_serial::SerialEngine>(LogMode::Off, 2);
}

#[test]
fn memory_engine_runs_tpce() {
    run_ok::<engine_memory::MemoryEngine>(LogMode::Off, 2);
}

#[test]
fn memory_engine_runs_tpce_with_logging() {
    run_ok::<engine_memory::MemoryEngine>(LogMode::Sync, 2);
}

#[test]
fn mvcc_engine_runs_tpce() {
    run_ok::<engine_mvcc::MvccEngine>(LogMode::Off, 2);
}

#[test]
fn partitioned_engine_runs_tpce() {
    run_ok::<engine_partitioned::PartitionedEngine>(LogMode::Off, 2);
}

#[test]
fn disk_engine_runs_tpce() {
    run_ok::<engine_disk::DiskEngine>(LogMode::Async, 2);
}

/// Per table: rows and a hash of the columns a transaction sets (dates excluded: they
/// come from the clock).
fn digest<E: Engine>(e: &E, t: &Tpce) -> Vec<(&'static str, u64, u64)> {
    let mut s = Session::new(e.worker(0));
    let mut out = Vec::new();
    let mut scan =
        |name: &'static str, idx: api::IndexId, f: &dyn Fn(&[u8], &mut DefaultHasher)| {
            let (mut n, mut h) = (0u64, DefaultHasher::new());
            s.run(0, |s| {
                s.scan(
                    idx,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    Dir::Forward,
                    usize::MAX,
                    |_, r| {
                        n += 1;
                        f(r, &mut h);
                        true
                    },
                )
            })
            .unwrap();
            out.push((name, n, h.finish()));
        };
    scan("trade", TRADE.primary(), &|r, h| {
        let x = row::read::<Trade>(r);
        (
            x.t_id,
            x.t_st_id,
            x.t_tt_id,
            x.t_qty,
            x.t_trade_price,
            x.t_comm,
            x.t_tax,
        )
            .hash(h);
        (
            x.t_chrg,
            x.t_bid_price,
            x.t_exec_name,
            x.t_ca_id,
            x.t_s_symb,
        )
            .hash(h);
    });
    scan("trade_history", TRADE_HISTORY.primary(), &|r, h| {
        let x = row::read::<TradeHistory>(r);
        (x.th_t_id, x.th_st_id).hash(h);
    });
    scan("trade_request", TRADE_REQUEST.primary(), &|r, h| {
        row::read::<TradeRequest>(r).tr_bid_price.hash(h)
    });
    scan("holding", HOLDING.secondary(HOLDING_BY_ACCOUNT), &|r, h| {
        let x = row::read::<Holding>(r);
        (x.h_t_id, x.h_qty, x.h_price, x.h_ca_id).hash(h);
    });
    scan("holding_history", HOLDING_HISTORY.primary(), &|r, h| {
        let x = row::read::<HoldingHistory>(r);
        (x.hh_h_t_id, x.hh_t_id, x.hh_before_qty, x.hh_after_qty).hash(h);
    });
    scan("holding_summary", HOLDING_SUMMARY.primary(), &|r, h| {
        let x = row::read::<HoldingSummary>(r);
        (x.hs_ca_id, x.hs_s_symb, x.hs_qty).hash(h);
    });
    scan(
        "customer_account",
        CUSTOMER_ACCOUNT.secondary(ACCOUNT_BY_CUSTOMER),
        &|r, h| {
            let x = row::read::<CustomerAccount>(r);
            (x.ca_id, x.ca_bal).hash(h);
        },
    );
    scan("broker", BROKER.secondary(BROKER_BY_NAME), &|r, h| {
        let x = row::read::<Broker>(r);
        (x.b_id, x.b_num_trades, x.b_comm_total).hash(h);
    });
    // Hash-only tables, by their keys.
    let ids: Vec<u64> = {
        let mut v = Vec::new();
        s.run(0, |s| {
            s.scan(
                TRADE.primary(),
                Bound::Unbounded,
                Bound::Unbounded,
                Dir::Forward,
                usize::MAX,
                |_, r| {
                    v.push(row::read::<Trade>(r).t_id);
                    true
                },
            )
        })
        .unwrap();
        v
    };
    let (mut n, mut h) = (0u64, DefaultHasher::new());
    s.run(0, |s| {
        for id in &ids {
            if let Some(x) = s.get_row::<Settlement>(SETTLEMENT, &k_u64(*id))? {
                (x.se_amt, x.se_cash_type).hash(&mut h);
                n += 1;
            }
            if let Some(x) = s.get_row::<CashTransaction>(CASH_TRANSACTION, &k_u64(*id))? {
                (x.ct_amt, x.ct_name).hash(&mut h);
                n += 1;
            }
        }
        for sec in 0..t.securities() {
            let x: LastTrade = s.get_row(LAST_TRADE, &k_symb(&gen::symbol(sec)))?.unwrap();
            (x.lt_price, x.lt_vol).hash(&mut h);
        }
        Ok(())
    })
    .unwrap();
    out.push(("settlement, cash_transaction, last_trade", n, h.finish()));
    out
}

/// One worker's stream, transaction by transaction, as the driver runs it.
fn stream<E: Engine>(e: &E, t: &Tpce, txns: usize) -> Vec<u64> {
    let mut s = Session::new(api::Database::worker(e, 0));
    let mut st = t.worker_state(0, 1, 21);
    let mut committed = vec![0u64; 12];
    for _ in 0..txns {
        let (ty, input) = t.next(&mut st);
        loop {
            match s.run(ty, |s| t.execute(s, &mut st, &input)) {
                Ok(()) => {
                    committed[ty as usize] += 1;
                    t.committed(&mut st, &input, true);
                }
                Err(Error::UserAbort) => {}
                Err(Error::Conflict(_)) => continue,
                Err(e) => panic!("{} on {}: {e}", TXN_NAMES[ty as usize], E::NAME),
            }
            break;
        }
    }
    committed
}

fn conformance<E: Engine>(log: LogMode) -> (Vec<u64>, Vec<(&'static str, u64, u64)>) {
    let dir = tempfile::tempdir().unwrap();
    let t = small();
    let opts = EngineOptions {
        threads: 2,
        log,
        db_dir: Some(dir.path().join("db")),
        log_dir: Some(dir.path().join("log")),
        ..EngineOptions::default()
    };
    let opts = if matches!(E::NAME, "serial" | "mvcc" | "partitioned") {
        EngineOptions {
            threads: 2,
            ..EngineOptions::default()
        }
    } else {
        opts
    };
    let e = E::open(Arc::new(t.schema()), &opts).unwrap();
    t.load(&e, 2, 1, &|_| {}).unwrap();
    let committed = stream(&e, &t, 2_000);
    (committed, digest(&e, &t))
}

#[test]
fn memory_disk_and_mvcc_leave_the_serial_engines_database() {
    let (c_serial, d_serial) = conformance::<engine_serial::SerialEngine>(LogMode::Off);
    assert!(
        c_serial[workloads::tpce::txn::TRADE_RESULT as usize] > 0,
        "{c_serial:?}"
    );
    let (c_mem, d_mem) = conformance::<engine_memory::MemoryEngine>(LogMode::Off);
    assert_eq!(c_mem, c_serial);
    assert_eq!(d_mem, d_serial, "memory engine differs from serial");
    let (c_disk, d_disk) = conformance::<engine_disk::DiskEngine>(LogMode::Async);
    assert_eq!(c_disk, c_serial);
    assert_eq!(d_disk, d_serial, "disk engine differs from serial");
    let (c_mvcc, d_mvcc) = conformance::<engine_mvcc::MvccEngine>(LogMode::Off);
    assert_eq!(c_mvcc, c_serial);
    assert_eq!(d_mvcc, d_serial, "mvcc engine differs from serial");
    let (c_part, d_part) = conformance::<engine_partitioned::PartitionedEngine>(LogMode::Off);
    assert_eq!(c_part, c_serial);
    assert_eq!(d_part, d_serial, "partitioned engine differs from serial");
}
