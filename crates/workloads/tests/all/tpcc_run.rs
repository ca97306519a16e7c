//! TPC-C runs through the `Workload` interface, as the driver makes them: several
//! threads calling next / execute inside `Session::run`, retrying conflicts; then the
//! consistency conditions. Also: each condition fails on a database damaged for it, and
//! each transaction type runs alone via the mix. Small item count (test-only setting).

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use api::{Engine, EngineOptions, Error, Result, Session};
use engine_serial::{SerialEngine, SerialWorker};
use std::sync::Arc;
use workloads::tpcc::schema::*;
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::{Check, RunInfo, Workload};

type S<'e> = Session<SerialWorker<'e>>;

fn config(w: u32) -> TpccConfig {
    TpccConfig {
        warehouses: w,
        items: 1000,
        ..TpccConfig::default()
    }
}

fn loaded(t: &Tpcc) -> SerialEngine {
    let e = SerialEngine::open(Arc::new(t.schema()), &EngineOptions::default()).unwrap();
    t.load(&e, 2, 5, &|_| {}).unwrap();
    e
}

/// Committed transactions per type and user aborts of `threads` x `per_thread` runs.
fn run(
    t: &Tpcc,
    e: &SerialEngine,
    threads: usize,
    per_thread: usize,
    seed: u64,
) -> ([u64; 5], u64) {
    let results: Vec<([u64; 5], u64)> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                sc.spawn(move || {
                    let mut s = Session::new(api::Database::worker(e, i));
                    let mut st = t.worker_state(i, threads, seed);
                    let (mut committed, mut aborts) = ([0u64; 5], 0u64);
                    for _ in 0..per_thread {
                        let (ty, input) = t.next(&mut st);
                        loop {
                            match s.run(ty, |s| t.execute(s, &mut st, &input)) {
                                Ok(()) => committed[ty as usize] += 1,
                                Err(Error::UserAbort) => aborts += 1,
                                Err(Error::Conflict(_)) => continue,
                                Err(e) => panic!("transaction type {ty} failed: {e}"),
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
    let mut total = ([0u64; 5], 0);
    for (c, a) in results {
        for (t, c) in total.0.iter_mut().zip(c) {
            *t += c;
        }
        total.1 += a;
    }
    total
}

fn checks(t: &Tpcc, e: &SerialEngine, committed: Option<[u64; 5]>) -> Vec<Check> {
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

fn concurrent_run_stays_consistent(w: u32, affinity: bool) {
    let t = Tpcc::new(TpccConfig {
        affinity,
        ..config(w)
    })
    .unwrap();
    let e = loaded(&t);
    let (committed, aborts) = run(&t, &e, 4, 400, 99);
    let total: u64 = committed.iter().sum::<u64>() + aborts;
    assert_eq!(total, 1600);
    assert!(
        committed.iter().all(|&c| c > 0),
        "every type ran: {committed:?}"
    );
    assert!(
        aborts > 0 || committed[0] < 300,
        "1% of New-Orders roll back"
    );
    let cs = checks(&t, &e, Some(committed));
    assert_eq!(cs.len(), 13);
    assert_all_pass(&cs);
}

#[test]
fn four_threads_w1_consistent() {
    concurrent_run_stays_consistent(1, true);
}

#[test]
fn four_threads_w2_consistent_without_affinity() {
    concurrent_run_stays_consistent(2, false);
}

/// Longer stress: `cargo test -p workloads --test all tpcc_run:: -- --ignored`.
#[test]
#[ignore]
fn stress_eight_threads_w4() {
    let t = Tpcc::new(config(4)).unwrap();
    let e = loaded(&t);
    for round in 0..3 {
        let (c1, _) = run(&t, &e, 8, 5_000, round);
        assert!(c1[0] > 0);
        assert_all_pass(&checks(&t, &e, None));
    }
}

#[test]
fn load_is_deterministic_whatever_the_thread_count() {
    let t = Tpcc::new(config(2)).unwrap();
    let load = |threads: usize| {
        let e = SerialEngine::open(Arc::new(t.schema()), &EngineOptions::default()).unwrap();
        t.load(&e, threads, 5, &|_| {}).unwrap();
        e
    };
    let (a, b) = (load(1), load(3));
    let (mut sa, mut sb) = (Session::new(a.worker(0)), Session::new(b.worker(0)));
    fn bytes(s: &mut S<'_>, table: api::TableId, k: &api::Key) -> Option<Vec<u8>> {
        let mut v = None;
        // The first 8 bytes of Customer, Order and Order-Line rows hold the load's clock.
        s.run(9, |s| s.get(table, k, |r| v = Some(r[8..].to_vec())))
            .unwrap();
        v
    }
    let mut same = |table: api::TableId, k: api::Key| {
        let ra = bytes(&mut sa, table, &k);
        assert!(
            ra.is_some() && ra == bytes(&mut sb, table, &k),
            "{table:?} {k:?}"
        );
    };
    for w in 1..=2 {
        for i in [1, 500, 1000] {
            same(STOCK, stock_key(w, i));
            same(ITEM, item_key(i));
        }
        for c in [1, 1500, 3000] {
            same(CUSTOMER, customer_key(w, 7, c));
            same(ORDER, order_key(w, 7, c));
            same(ORDER_LINE, order_line_key(w, 7, c, 5));
        }
    }
}

#[test]
fn each_transaction_type_alone_via_the_mix() {
    let base = Tpcc::new(config(1)).unwrap();
    let e = loaded(&base);
    let mut all = [0u64; 5];
    for (k, name) in workloads::tpcc::TXN_NAMES.iter().enumerate() {
        let mix = workloads::tpcc::parse_mix(&format!("{name}=100")).unwrap();
        let t = Tpcc::new(TpccConfig { mix, ..config(1) }).unwrap();
        let (committed, aborts) = run(&t, &e, 2, 60, k as u64);
        for (j, &c) in committed.iter().enumerate() {
            if j != k {
                assert_eq!(c, 0, "{name} alone ran type {j}");
            }
            all[j] += c;
        }
        assert_eq!(committed[k] + aborts, 120, "{name}");
        let cs = checks(&t, &e, Some(all));
        assert_all_pass(&cs);
        // Condition 11 is evaluated until the first Delivery (type 3) has committed.
        let has_11 = cs.iter().any(|c| c.name.starts_with("11:"));
        assert_eq!(has_11, k < 3, "{name}: {} checks", cs.len());
    }
}

fn upd<T: api::row::Pod>(s: &mut S<'_>, table: api::TableId, k: &[u8], f: impl Fn(&mut T)) {
    let found = s
        .run(9, |s| s.update_row(table, k, |r: &mut T| f(r)))
        .unwrap();
    assert!(found, "row to damage exists");
}

fn find<'a>(cs: &'a [Check], prefix: &str) -> &'a Check {
    cs.iter()
        .find(|c| c.name.starts_with(prefix))
        .expect("condition exists")
}

/// Damage the database, expect condition `cond` to fail (naming a mismatch), repair.
fn expect_failure(
    t: &Tpcc,
    e: &SerialEngine,
    cond: &str,
    damage: impl FnOnce(&mut S<'_>),
    repair: impl FnOnce(&mut S<'_>),
) -> Vec<Check> {
    let mut s = Session::new(e.worker(0));
    damage(&mut s);
    drop(s);
    let cs = checks(t, e, None);
    let c = find(&cs, cond);
    assert!(
        !c.passed,
        "condition {cond} passed on a damaged database: {}",
        c.detail
    );
    assert!(c.detail.contains("first mismatch"), "{}", c.detail);
    let mut s = Session::new(e.worker(0));
    repair(&mut s);
    cs
}

#[test]
fn each_condition_fails_on_a_damaged_database() {
    let t = Tpcc::new(config(1)).unwrap();
    let e = loaded(&t);
    let (committed, _) = run(&t, &e, 2, 300, 3);
    assert_all_pass(&checks(&t, &e, Some(committed)));

    let wk = warehouse_key(1);
    expect_failure(
        &t,
        &e,
        "1:",
        |s| upd(s, WAREHOUSE, &wk, |r: &mut Warehouse| r.w_ytd += 1),
        |s| upd(s, WAREHOUSE, &wk, |r: &mut Warehouse| r.w_ytd -= 1),
    );
    let dk = district_key(1, 2);
    expect_failure(
        &t,
        &e,
        "2:",
        |s| upd(s, DISTRICT, &dk, |r: &mut District| r.d_next_o_id += 1),
        |s| upd(s, DISTRICT, &dk, |r: &mut District| r.d_next_o_id -= 1),
    );
    // 3: a hole in the middle of a district's New-Order ids.
    let mut s = Session::new(e.worker(0));
    let d3 = district_key(1, 3);
    let mut first = None;
    s.run(9, |s| {
        s.scan(
            NEW_ORDER.primary(),
            std::ops::Bound::Included(&d3[..]),
            std::ops::Bound::Excluded(&d3.prefix_end().unwrap()[..]),
            api::Dir::Forward,
            1,
            |k, _| {
                first = Some(order_id_of_key(k));
                false
            },
        )
    })
    .unwrap();
    drop(s);
    let hole = first.unwrap() + 1;
    let nk = new_order_key(1, 3, hole);
    let cs = expect_failure(
        &t,
        &e,
        "3:",
        |s| assert!(s.run(9, |s| s.delete(NEW_ORDER, &nk)).unwrap()),
        |s| {
            let no = NewOrder {
                no_o_id: hole,
                no_d_id: 3,
                no_w_id: 1,
            };
            s.run(9, |s| s.insert_row(NEW_ORDER, &nk, &no)).unwrap()
        },
    );
    assert!(find(&cs, "3:").detail.contains("count="));
    let ok = |o: u32| order_key(1, 4, o);
    expect_failure(
        &t,
        &e,
        "4:",
        |s| upd(s, ORDER, &ok(5), |r: &mut Order| r.o_ol_cnt += 1),
        |s| upd(s, ORDER, &ok(5), |r: &mut Order| r.o_ol_cnt -= 1),
    );
    let o5 = order_key(1, 5, 2999);
    expect_failure(
        &t,
        &e,
        "5:",
        |s| upd(s, ORDER, &o5, |r: &mut Order| r.o_carrier_id = 3),
        |s| upd(s, ORDER, &o5, |r: &mut Order| r.o_carrier_id = 0),
    );
    // 6 without 4: one order claims a line more, another a line less.
    let cs = expect_failure(
        &t,
        &e,
        "6:",
        |s| {
            upd(s, ORDER, &ok(6), |r: &mut Order| r.o_ol_cnt += 1);
            upd(s, ORDER, &ok(7), |r: &mut Order| r.o_ol_cnt -= 1);
        },
        |s| {
            upd(s, ORDER, &ok(6), |r: &mut Order| r.o_ol_cnt -= 1);
            upd(s, ORDER, &ok(7), |r: &mut Order| r.o_ol_cnt += 1);
        },
    );
    assert!(find(&cs, "4:").passed, "sum of O_OL_CNT unchanged");
    let lk = order_line_key(1, 7, 1, 1);
    let mut saved = 0;
    expect_failure(
        &t,
        &e,
        "7:",
        |s| {
            upd(s, ORDER_LINE, &lk, |r: &mut OrderLine| {
                assert_ne!(r.ol_delivery_d, 0, "order 1 is delivered");
                r.ol_delivery_d = 0
            });
            saved = s
                .run(9, |s| s.get_row::<OrderLine>(ORDER_LINE, &lk))
                .unwrap()
                .unwrap()
                .ol_amount;
        },
        |s| upd(s, ORDER_LINE, &lk, |r: &mut OrderLine| r.ol_delivery_d = 1),
    );
    assert_eq!(saved, 0);
    let hk = history_key(1, 8, 0, 0, 1);
    let cs = expect_failure(
        &t,
        &e,
        "8:",
        |s| upd(s, HISTORY, &hk, |r: &mut History| r.h_amount += 1),
        |s| upd(s, HISTORY, &hk, |r: &mut History| r.h_amount -= 1),
    );
    assert!(!find(&cs, "9:").passed && !find(&cs, "10:").passed);
    let d9 = district_key(1, 9);
    expect_failure(
        &t,
        &e,
        "9:",
        |s| upd(s, DISTRICT, &d9, |r: &mut District| r.d_ytd -= 5),
        |s| upd(s, DISTRICT, &d9, |r: &mut District| r.d_ytd += 5),
    );
    let ck = |c: u32| customer_key(1, 10, c);
    expect_failure(
        &t,
        &e,
        "10:",
        |s| upd(s, CUSTOMER, &ck(1), |r: &mut Customer| r.c_balance += 1),
        |s| upd(s, CUSTOMER, &ck(1), |r: &mut Customer| r.c_balance -= 1),
    );
    let cs = expect_failure(
        &t,
        &e,
        "12:",
        |s| upd(s, CUSTOMER, &ck(2), |r: &mut Customer| r.c_ytd_payment += 1),
        |s| upd(s, CUSTOMER, &ck(2), |r: &mut Customer| r.c_ytd_payment -= 1),
    );
    assert!(find(&cs, "10:").passed, "C_BALANCE itself is untouched");

    // The row counts against the committed transactions.
    let mut wrong = committed;
    wrong[0] += 1;
    wrong[1] += 1;
    let cs = checks(&t, &e, Some(wrong));
    assert!(!find(&cs, "orders =").passed && !find(&cs, "history =").passed);

    // Repaired: everything passes again.
    assert_all_pass(&checks(&t, &e, Some(committed)));
}

#[test]
fn condition_11_fails_when_an_order_leaves_new_order_without_delivery() {
    let t = Tpcc::new(config(1)).unwrap();
    let e = loaded(&t);
    let none = Some([0u64; 5]);
    assert_all_pass(&checks(&t, &e, none));
    let nk = new_order_key(1, 6, FIRST_UNDELIVERED);
    let mut s = Session::new(e.worker(0));
    assert!(s.run(9, |s| s.delete(NEW_ORDER, &nk)).unwrap());
    drop(s);
    let cs = checks(&t, &e, none);
    let c = find(&cs, "11:");
    assert!(
        !c.passed && c.detail.contains("count(New-Order)=899"),
        "{}",
        c.detail
    );
    // After a Delivery, 11 no longer applies and is not reported.
    let cs = checks(&t, &e, Some([0, 0, 0, 1, 0]));
    assert!(cs.iter().all(|c| !c.name.starts_with("11:")));
}

#[test]
fn check_reports_missing_rows_as_errors() {
    let t = Tpcc::new(config(1)).unwrap();
    let e = loaded(&t);
    let mut s = Session::new(e.worker(0));
    let r: Result<bool> = s.run(9, |s| s.delete(DISTRICT, &district_key(1, 4)));
    assert!(r.unwrap());
    drop(s);
    let err = t.check(&e, &RunInfo::default()).unwrap_err();
    assert!(err.to_string().contains("district (1, 4) missing"), "{err}");
    // Transactions on the damaged database fail with an error, never a panic.
    let mut s = Session::new(api::Database::worker(&e, 0));
    let mut st = t.worker_state(0, 1, 1);
    let input = workloads::tpcc::TpccInput::StockLevel(workloads::tpcc::StockLevelIn {
        w_id: 1,
        d_id: 4,
        threshold: 15,
    });
    let r = s.run(4, |s| t.execute(s, &mut st, &input));
    assert!(matches!(r, Err(Error::Fatal(m)) if m.contains("district 4 not found")));
}
