//! TPC-E runs through the `Workload` interface on the serial engine, as the driver makes
//! them (threads calling next / execute / committed, retrying conflicts), then the
//! consistency checks; each check fails on a database damaged for it; each transaction
//! type runs; Trade-Cleanup cancels what a previous run left. Small settings: one load
//! unit, one trading hour, 20 daily-market days (test-only).

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use api::{Engine, EngineOptions, Error, Session};
use engine_serial::SerialEngine;
use std::sync::Arc;
use workloads::tpce::schema::*;
use workloads::tpce::txn::*;
use workloads::tpce::{Tpce, TpceConfig};
use workloads::{Check, RunInfo, Workload};

fn config() -> TpceConfig {
    TpceConfig {
        customers: 1000,
        trade_hours: 1,
        daily_market_days: 20,
        ..TpceConfig::default()
    }
}

fn loaded(t: &Tpce) -> SerialEngine {
    let e = SerialEngine::open(Arc::new(t.schema()), &EngineOptions::default()).unwrap();
    let rows = std::sync::atomic::AtomicU64::new(0);
    t.load(&e, 2, 5, &|n| {
        rows.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(
        rows.into_inner(),
        t.load_rows(),
        "load_rows counts the load"
    );
    e
}

/// Committed transactions per type and user aborts of `threads` x `per_thread` runs.
pub fn run<E: Engine>(
    t: &Tpce,
    e: &E,
    threads: usize,
    per_thread: usize,
    seed: u64,
) -> (Vec<u64>, u64) {
    let results: Vec<(Vec<u64>, u64)> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                sc.spawn(move || {
                    let mut s = Session::new(api::Database::worker(e, i));
                    let mut st = t.worker_state(i, threads, seed);
                    let (mut committed, mut aborts) = (vec![0u64; 12], 0u64);
                    for _ in 0..per_thread {
                        let (ty, input) = t.next(&mut st);
                        loop {
                            match s.run(ty, |s| t.execute(s, &mut st, &input)) {
                                Ok(()) => {
                                    committed[ty as usize] += 1;
                                    t.committed(&mut st, &input, true);
                                }
                                Err(Error::UserAbort) => aborts += 1,
                                Err(Error::Conflict(_)) => continue,
                                Err(e) => panic!("{} failed: {e}", TXN_NAMES[ty as usize]),
                            }
                            break;
                        }
                    }
                    (committed, aborts)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut total = (vec![0u64; 12], 0);
    for (c, a) in results {
        for (t, c) in total.0.iter_mut().zip(c) {
            *t += c;
        }
        total.1 += a;
    }
    total
}

fn checks(t: &Tpce, e: &SerialEngine, committed: Option<&[u64]>) -> Vec<Check> {
    let info = RunInfo {
        committed: committed.map(|c| c.to_vec()),
        acked: None,
    };
    t.check(e, &info).unwrap()
}

fn assert_all_pass(cs: &[Check]) {
    for c in cs {
        assert!(c.passed, "{}: {}", c.name, c.detail);
    }
}

#[test]
fn concurrent_run_stays_consistent_and_every_type_runs() {
    let t = Tpce::new(config()).unwrap();
    let e = loaded(&t);
    assert_all_pass(&checks(&t, &e, Some(&[0; 12])));
    let (committed, aborts) = run(&t, &e, 3, 1500, 7);
    for (i, n) in committed.iter().enumerate() {
        if i as u32 != DATA_MAINTENANCE {
            assert!(*n > 0, "{} never committed: {committed:?}", TXN_NAMES[i]);
        }
    }
    assert_eq!(committed[TRADE_CLEANUP as usize], 1);
    assert!(aborts > 0, "1% of Trade-Orders roll back");
    let cs = checks(&t, &e, Some(&committed));
    assert_eq!(cs.len(), 9);
    assert_all_pass(&cs);
}

#[test]
fn every_data_maintenance_table_keeps_the_database_consistent() {
    let t = Tpce::new(config()).unwrap();
    let e = loaded(&t);
    let mut s = Session::new(e.worker(0));
    for round in 0..2u64 {
        for table in 0..12 {
            s.run(DATA_MAINTENANCE, |s| {
                t.data_maintenance(s, table, 17 + round, 5 + round)
                    .map(drop)
            })
            .unwrap_or_else(|e| panic!("table {table}: {e}"));
        }
    }
    drop(s);
    assert_all_pass(&checks(&t, &e, None));
}

#[test]
fn trade_cleanup_cancels_what_a_previous_run_left() {
    let cfg = config();
    let first = Tpce::new(cfg.clone()).unwrap();
    let e = loaded(&first);
    // Orders only: limit orders stay pending, market orders submitted (their results
    // are never run: the "process" ends).
    let mut mix = [0; 12];
    mix[TRADE_ORDER as usize] = 1000;
    let orders = Tpce::new(TpceConfig { mix, ..cfg.clone() }).unwrap();
    let mut s = Session::new(api::Database::worker(&e, 0));
    let mut st = orders.worker_state(0, 1, 3);
    let (mut entered, mut cleanups) = (0, 0);
    for _ in 0..200 {
        let (ty, input) = orders.next(&mut st);
        match s.run(ty, |s| orders.execute(s, &mut st, &input)) {
            Ok(()) if ty == TRADE_ORDER => entered += 1,
            Ok(()) => cleanups += 1,
            Err(Error::UserAbort) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(cleanups, 1);
    assert_all_pass(&checks(&t_noop(&cfg), &e, None));
    // A new run (a new kit: a new process) cancels them all.
    let second = Tpce::new(cfg.clone()).unwrap();
    let cleanup = |s: &mut Session<_>| {
        let first = second.first_run_trade_id(s)?;
        second.trade_cleanup(s, first, workloads::tpce::txn::now())
    };
    let canceled = s.run(TRADE_CLEANUP, cleanup).unwrap();
    assert_eq!(canceled, entered);
    let again = s.run(TRADE_CLEANUP, cleanup).unwrap();
    assert_eq!(again, 0);
    drop(s);
    assert_all_pass(&checks(&second, &e, None));
}

fn t_noop(cfg: &TpceConfig) -> Tpce {
    Tpce::new(cfg.clone()).unwrap()
}

/// Each check fails on a database damaged for it.
#[test]
fn each_check_fails_on_a_damaged_database() {
    let t = Tpce::new(config()).unwrap();
    let e = loaded(&t);
    run(&t, &e, 1, 300, 11);
    assert_all_pass(&checks(&t, &e, None));
    let failing = |e: &SerialEngine| -> Vec<String> {
        checks(&t, e, None)
            .into_iter()
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect()
    };
    let mut s = Session::new(e.worker(0));
    let damage =
        |s: &mut Session<engine_serial::SerialWorker<'_>>,
         f: &dyn Fn(&mut Session<engine_serial::SerialWorker<'_>>) -> api::Result<()>,
         undo: &dyn Fn(&mut Session<engine_serial::SerialWorker<'_>>) -> api::Result<()>,
         want: &str| {
            s.run(0, f).unwrap();
            let bad = failing(&e);
            assert!(
                bad.iter().any(|n| n.contains(want)),
                "{want}: failing {bad:?}"
            );
            s.run(0, undo).unwrap();
            assert!(failing(&e).is_empty(), "undo of {want}");
        };
    let trade = |s: &mut Session<engine_serial::SerialWorker<'_>>, id: u64| -> Trade {
        s.run(0, |s| s.get_row(TRADE, &k_u64(id))).unwrap().unwrap()
    };
    // Broker totals.
    damage(
        &mut s,
        &|s| {
            s.update_row(BROKER, &k_u64(1), |b: &mut Broker| b.b_num_trades += 1)
                .map(drop)
        },
        &|s| {
            s.update_row(BROKER, &k_u64(1), |b: &mut Broker| b.b_num_trades -= 1)
                .map(drop)
        },
        "B_NUM_TRADES",
    );
    damage(
        &mut s,
        &|s| {
            s.update_row(BROKER, &k_u64(2), |b: &mut Broker| b.b_comm_total += 5)
                .map(drop)
        },
        &|s| {
            s.update_row(BROKER, &k_u64(2), |b: &mut Broker| b.b_comm_total -= 5)
                .map(drop)
        },
        "B_COMM_TOTAL",
    );
    // A holding's quantity (summary and trades disagree).
    let mut h_id = 0;
    s.run(0, |s| {
        s.scan(
            HOLDING.secondary(HOLDING_BY_ACCOUNT),
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            api::Dir::Forward,
            1,
            |_, r| {
                h_id = api::row::read::<Holding>(r).h_t_id;
                false
            },
        )
    })
    .unwrap();
    damage(
        &mut s,
        &|s| {
            s.update_row(HOLDING, &k_u64(h_id), |h: &mut Holding| h.h_qty += 100)
                .map(drop)
        },
        &|s| {
            s.update_row(HOLDING, &k_u64(h_id), |h: &mut Holding| h.h_qty -= 100)
                .map(drop)
        },
        "HS_QTY = sum(H_QTY)",
    );
    // A summary and the trades disagree (the holdings moved with it).
    damage(
        &mut s,
        &|s| {
            let h: Holding = s.get_row(HOLDING, &k_u64(h_id))?.unwrap();
            s.update_row(HOLDING, &k_u64(h_id), |x: &mut Holding| x.h_qty += 100)?;
            s.update_row(
                HOLDING_SUMMARY,
                &k_u64_symb(h.h_ca_id, &h.h_s_symb),
                |x: &mut HoldingSummary| x.hs_qty += 100,
            )
            .map(drop)
        },
        &|s| {
            let h: Holding = s.get_row(HOLDING, &k_u64(h_id))?.unwrap();
            s.update_row(HOLDING, &k_u64(h_id), |x: &mut Holding| x.h_qty -= 100)?;
            s.update_row(
                HOLDING_SUMMARY,
                &k_u64_symb(h.h_ca_id, &h.h_s_symb),
                |x: &mut HoldingSummary| x.hs_qty -= 100,
            )
            .map(drop)
        },
        "holdings follow trades",
    );
    // A trade's state without its history.
    let t1 = trade(&mut s, 1);
    damage(
        &mut s,
        &|s| {
            s.update_row(TRADE, &k_u64(1), |x: &mut Trade| x.t_st_id = *b"PNDG")
                .map(drop)
        },
        &|s| {
            s.update_row(TRADE, &k_u64(1), |x: &mut Trade| x.t_st_id = t1.t_st_id)
                .map(drop)
        },
        "trade state agrees",
    );
    // A settlement removed.
    let se: Settlement = s
        .run(0, |s| s.get_row(SETTLEMENT, &k_u64(2)))
        .unwrap()
        .unwrap();
    damage(
        &mut s,
        &|s| s.delete(SETTLEMENT, &k_u64(2)).map(drop),
        &|s| s.insert_row(SETTLEMENT, &k_u64(2), &se),
        "have a settlement",
    );
    // A balance off.
    let ca = t1.t_ca_id;
    damage(
        &mut s,
        &|s| {
            s.update_row(CUSTOMER_ACCOUNT, &k_u64(ca), |a: &mut CustomerAccount| {
                a.ca_bal += 1
            })
            .map(drop)
        },
        &|s| {
            s.update_row(CUSTOMER_ACCOUNT, &k_u64(ca), |a: &mut CustomerAccount| {
                a.ca_bal -= 1
            })
            .map(drop)
        },
        "CA_BAL",
    );
    drop(s);
    // Row counts against committed transactions that did not happen.
    let mut c = vec![0u64; 12];
    c[TRADE_ORDER as usize] = 1_000_000;
    c[TRADE_RESULT as usize] = 1_000_000;
    let bad: Vec<String> = checks(&t, &e, Some(&c))
        .into_iter()
        .filter(|c| !c.passed)
        .map(|c| c.name)
        .collect();
    assert_eq!(bad.len(), 2, "{bad:?}");
}

#[test]
fn the_load_makes_the_specified_row_counts() {
    let t = Tpce::new(config()).unwrap();
    let e = loaded(&t);
    let mut s = Session::new(e.worker(0));
    let count = |s: &mut Session<engine_serial::SerialWorker<'_>>, idx: api::IndexId| {
        s.run(0, |s| {
            s.scan(
                idx,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                api::Dir::Forward,
                usize::MAX,
                |_, _| true,
            )
        })
        .unwrap() as u64
    };
    assert_eq!(count(&mut s, TRADE.primary()), 7200);
    assert_eq!(count(&mut s, COMPANY.secondary(COMPANY_BY_NAME)), 500);
    assert_eq!(count(&mut s, SECURITY.secondary(SECURITY_BY_COMPANY)), 685);
    assert_eq!(count(&mut s, BROKER.secondary(BROKER_BY_NAME)), 10);
    assert_eq!(count(&mut s, CUSTOMER.secondary(CUSTOMER_BY_TAX_ID)), 1000);
    let accts = count(&mut s, CUSTOMER_ACCOUNT.secondary(ACCOUNT_BY_CUSTOMER));
    assert!((4_700..5_300).contains(&accts), "{accts}");
    assert_eq!(count(&mut s, DAILY_MARKET.primary()), 685 * 20);
    assert_eq!(count(&mut s, FINANCIAL.primary()), 500 * 20);
    assert_eq!(count(&mut s, COMMISSION_RATE.primary()), 240);
    assert_eq!(count(&mut s, INDUSTRY.secondary(INDUSTRY_BY_NAME)), 102);
    let wi = count(&mut s, WATCH_ITEM.primary());
    assert!((90_000..110_000).contains(&wi), "{wi}");
}
