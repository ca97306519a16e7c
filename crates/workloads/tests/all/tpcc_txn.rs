//! Each TPC-C transaction's effect on a small database (W=2, 1,000 items, everything
//! else at the specification's sizes), checked against hand-computed expectations.

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use api::row::{get_str, set_str};
use api::{Dir, Engine, EngineOptions, Error, Session};
use engine_serial::{SerialEngine, SerialWorker};
use std::ops::Bound;
use std::sync::Arc;
use workloads::tpcc::schema::*;
use workloads::tpcc::{
    gen, CustomerBy, DeliveryFloor, DeliveryIn, DistinctIds, NewOrderIn, OrderLineIn,
    OrderStatusIn, PaymentIn, StockLevelIn, Tpcc, TpccConfig, TpccInput,
};
use workloads::{RunInfo, Workload};

type S<'e> = Session<SerialWorker<'e>>;

fn small(w: u32) -> (Tpcc, SerialEngine) {
    let t = Tpcc::new(TpccConfig {
        warehouses: w,
        items: 1000,
        ..TpccConfig::default()
    })
    .unwrap();
    let e = SerialEngine::open(Arc::new(t.schema()), &EngineOptions::default()).unwrap();
    t.load(&e, 2, 11, &|_| {}).unwrap();
    (t, e)
}

fn get<T: api::row::Pod>(s: &mut S<'_>, t: api::TableId, k: &[u8]) -> Option<T> {
    s.run(9, |s| s.get_row::<T>(t, k)).unwrap()
}

fn stock(s: &mut S<'_>, w: u32, i: u32) -> Stock {
    get(s, STOCK, &stock_key(w, i)).expect("stock row")
}

fn set_quantity(s: &mut S<'_>, w: u32, i: u32, q: i32) {
    s.run(9, |s| {
        s.update_row(STOCK, &stock_key(w, i), |r: &mut Stock| r.s_quantity = q)
    })
    .unwrap();
}

fn line(i_id: u32, supply_w_id: u32, quantity: u32) -> OrderLineIn {
    OrderLineIn {
        i_id,
        supply_w_id,
        quantity,
    }
}

fn new_order_in(w: u32, d: u32, c: u32, lines: &[OrderLineIn]) -> NewOrderIn {
    let mut all = [line(0, 0, 0); MAX_OL_CNT];
    all[..lines.len()].copy_from_slice(lines);
    NewOrderIn {
        w_id: w,
        d_id: d,
        c_id: c,
        ol_cnt: lines.len() as u32,
        lines: all,
        entry_d: 123,
    }
}

fn check_all_pass(t: &Tpcc, e: &SerialEngine) {
    for c in t.check(e, &RunInfo::default()).unwrap() {
        assert!(c.passed, "{}: {}", c.name, c.detail);
    }
}

/// Rows of `index` under `prefix`, decoded as `T`.
fn rows<T: api::row::Pod>(s: &mut S<'_>, index: api::IndexId, prefix: &api::Key) -> Vec<T> {
    let end = prefix.prefix_end().unwrap();
    let mut out = Vec::new();
    s.run(9, |s| {
        s.scan(
            index,
            Bound::Included(&prefix[..]),
            Bound::Excluded(&end[..]),
            Dir::Forward,
            usize::MAX,
            |_, r| {
                out.push(api::row::read::<T>(r));
                true
            },
        )
    })
    .unwrap();
    out
}

#[test]
fn transactions_do_what_the_specification_says() {
    let (t, e) = small(2);
    let mut s = Session::new(e.worker(0));
    let mut ids = Vec::new();
    let mut distinct = DistinctIds::default();

    // ---- New-Order: quantities on both sides of the +10 rule, one remote line ----
    set_quantity(&mut s, 1, 10, 12);
    set_quantity(&mut s, 1, 20, 50);
    set_quantity(&mut s, 2, 30, 40);
    let dist_info = stock(&mut s, 1, 10).s_dist[2];
    let price = |s: &mut S<'_>, i: u32| get::<Item>(s, ITEM, &item_key(i)).unwrap().i_price;
    let (p10, p20, p30) = (price(&mut s, 10), price(&mut s, 20), price(&mut s, 30));
    let input = new_order_in(1, 3, 5, &[line(10, 1, 5), line(20, 1, 5), line(30, 2, 7)]);
    s.run(0, |s| t.new_order(s, &input)).unwrap();

    let di: District = get(&mut s, DISTRICT, &district_key(1, 3)).unwrap();
    assert_eq!(di.d_next_o_id, 3002);
    let o: Order = get(&mut s, ORDER, &order_key(1, 3, 3001)).expect("order inserted");
    assert_eq!(
        (o.o_c_id, o.o_ol_cnt, o.o_all_local, o.o_carrier_id),
        (5, 3, 0, 0)
    );
    assert_eq!(o.o_entry_d, 123);
    assert!(get::<NewOrder>(&mut s, NEW_ORDER, &new_order_key(1, 3, 3001)).is_some());
    let ls: Vec<OrderLine> = rows(&mut s, ORDER_LINE.primary(), &order_key(1, 3, 3001));
    assert_eq!(ls.len(), 3);
    assert_eq!(
        (ls[0].ol_i_id, ls[0].ol_amount, ls[0].ol_quantity),
        (10, 5 * p10, 5)
    );
    assert_eq!((ls[1].ol_i_id, ls[1].ol_amount), (20, 5 * p20));
    assert_eq!(
        (ls[2].ol_i_id, ls[2].ol_supply_w_id, ls[2].ol_amount),
        (30, 2, 7 * p30)
    );
    assert_eq!(ls[0].ol_dist_info, dist_info, "OL_DIST_INFO = S_DIST_03");
    assert!(ls.iter().all(|l| l.ol_delivery_d == 0));
    let s10 = stock(&mut s, 1, 10);
    assert_eq!(
        (s10.s_quantity, s10.s_ytd, s10.s_order_cnt),
        (12 - 5 + 91, 5, 1)
    );
    assert_eq!(s10.s_remote_cnt, 0);
    assert_eq!(stock(&mut s, 1, 20).s_quantity, 45);
    let s30 = stock(&mut s, 2, 30);
    assert_eq!((s30.s_quantity, s30.s_remote_cnt, s30.s_ytd), (33, 1, 7));

    // Order-Status by id finds that order as the customer's latest.
    let os = OrderStatusIn {
        w_id: 1,
        d_id: 3,
        customer: CustomerBy::Id(5),
    };
    assert_eq!(
        s.run(2, |s| t.order_status(s, &mut ids, &os)).unwrap(),
        (5, 3001, 3)
    );

    // ---- New-Order with an unused item rolls back completely ----
    let bad = new_order_in(1, 3, 6, &[line(10, 1, 1), line(t.cfg.items + 1, 1, 1)]);
    assert_eq!(s.run(0, |s| t.new_order(s, &bad)), Err(Error::UserAbort));
    let di: District = get(&mut s, DISTRICT, &district_key(1, 3)).unwrap();
    assert_eq!(di.d_next_o_id, 3002, "rolled back");
    assert_eq!(stock(&mut s, 1, 10).s_quantity, 98, "rolled back");
    assert!(get::<Order>(&mut s, ORDER, &order_key(1, 3, 3002)).is_none());

    // ---- Payment by last name picks the middle of the matches by first name ----
    let custs: Vec<Customer> = (1..=CUSTOMERS)
        .map(|c| get(&mut s, CUSTOMER, &customer_key(1, 2, c)).unwrap())
        .collect();
    let (num, mut group) = (0..1000)
        .map(|n| {
            let last = gen::last_name(n);
            let g: Vec<&Customer> = custs.iter().filter(|c| c.c_last == last).collect();
            (n, g)
        })
        .max_by_key(|(_, g)| g.len())
        .unwrap();
    assert!(group.len() >= 3, "some name is shared by three customers");
    group.sort_by_key(|c| (c.c_first, c.c_id));
    let want = group[(group.len() - 1) / 2];
    let wh0: Warehouse = get(&mut s, WAREHOUSE, &warehouse_key(1)).unwrap();
    let d0: District = get(&mut s, DISTRICT, &district_key(1, 1)).unwrap();
    let pay = PaymentIn {
        w_id: 1,
        d_id: 1,
        c_w_id: 1,
        c_d_id: 2,
        customer: CustomerBy::LastName(num),
        amount: 12_345,
        date: 77,
        h_nonce: 5,
        h_worker: 0,
        h_seq: 1,
    };
    assert_eq!(
        s.run(1, |s| t.payment(s, &mut ids, &pay)).unwrap(),
        want.c_id
    );
    let cu: Customer = get(&mut s, CUSTOMER, &customer_key(1, 2, want.c_id)).unwrap();
    assert_eq!(cu.c_balance, want.c_balance - 12_345);
    assert_eq!(cu.c_ytd_payment, want.c_ytd_payment + 12_345);
    assert_eq!(cu.c_payment_cnt, want.c_payment_cnt + 1);
    let wh: Warehouse = get(&mut s, WAREHOUSE, &warehouse_key(1)).unwrap();
    assert_eq!(wh.w_ytd, wh0.w_ytd + 12_345);
    let d1: District = get(&mut s, DISTRICT, &district_key(1, 1)).unwrap();
    assert_eq!(d1.d_ytd, d0.d_ytd + 12_345);
    let h: History = get(&mut s, HISTORY, &history_key(1, 1, 5, 0, 1)).expect("history");
    assert_eq!(
        (h.h_c_id, h.h_c_d_id, h.h_c_w_id, h.h_d_id, h.h_w_id),
        (want.c_id, 2, 1, 1, 1)
    );
    assert_eq!((h.h_amount, h.h_date), (12_345, 77));
    let h_data = [get_str(&wh.w_name), b"    ", get_str(&d1.d_name)].concat();
    assert_eq!(get_str(&h.h_data), &h_data[..]);

    // Order-Status by the same name reads the same customer and its latest order.
    let os = OrderStatusIn {
        w_id: 1,
        d_id: 2,
        customer: CustomerBy::LastName(num),
    };
    let (c, o_id, n) = s.run(2, |s| t.order_status(s, &mut ids, &os)).unwrap();
    let mine: Vec<Order> = rows::<Order>(&mut s, ORDER.primary(), &district_key(1, 2))
        .into_iter()
        .filter(|o| o.o_c_id == c)
        .collect();
    let latest = mine.iter().max_by_key(|o| o.o_id).unwrap();
    assert_eq!(
        (c, o_id, n as u32),
        (want.c_id, latest.o_id, latest.o_ol_cnt)
    );

    // ---- Payment of a bad-credit remote customer by id updates C_DATA ----
    s.run(9, |s| {
        s.update_row(CUSTOMER, &customer_key(2, 1, 7), |r: &mut Customer| {
            set_str(&mut r.c_credit, b"BC");
            set_str(&mut r.c_data, b"OLDDATA");
        })
    })
    .unwrap();
    let pay = PaymentIn {
        w_id: 1,
        d_id: 4,
        c_w_id: 2,
        c_d_id: 1,
        customer: CustomerBy::Id(7),
        amount: 250,
        date: 78,
        h_nonce: 5,
        h_worker: 0,
        h_seq: 2,
    };
    assert_eq!(s.run(1, |s| t.payment(s, &mut ids, &pay)).unwrap(), 7);
    let cu: Customer = get(&mut s, CUSTOMER, &customer_key(2, 1, 7)).unwrap();
    assert_eq!(get_str(&cu.c_data), b"7 1 2 4 1 2.50 OLDDATA");
    assert_eq!(cu.c_balance, -1000 - 250);

    // ---- Stock-Level counts distinct low-stock items of the last 20 orders ----
    let next = 3002;
    let recent: Vec<OrderLine> =
        rows::<OrderLine>(&mut s, ORDER_LINE.primary(), &district_key(1, 3))
            .into_iter()
            .filter(|l| l.ol_o_id >= next - 20)
            .collect();
    let mut items: Vec<u32> = recent.iter().map(|l| l.ol_i_id).collect();
    items.sort_unstable();
    items.dedup();
    for &i in items.iter().take(5) {
        set_quantity(&mut s, 1, i, 3);
    }
    for threshold in 10..=20 {
        let want = items
            .iter()
            .filter(|&&i| stock(&mut s, 1, i).s_quantity < threshold)
            .count() as u32;
        let input = StockLevelIn {
            w_id: 1,
            d_id: 3,
            threshold,
        };
        let got = s
            .run(4, |s| t.stock_level_count(s, &mut distinct, &input))
            .unwrap();
        assert_eq!(got, want, "threshold {threshold}");
        assert!(got >= 5);
    }

    // ---- Delivery delivers each district's oldest undelivered order ----
    let before: Vec<(Order, Customer, i64)> = (1..=DISTRICTS)
        .map(|d| {
            let o: Order = get(&mut s, ORDER, &order_key(1, d, FIRST_UNDELIVERED)).unwrap();
            let c: Customer = get(&mut s, CUSTOMER, &customer_key(1, d, o.o_c_id)).unwrap();
            let sum = rows::<OrderLine>(&mut s, ORDER_LINE.primary(), &order_key(1, d, o.o_id))
                .iter()
                .map(|l| l.ol_amount)
                .sum();
            (o, c, sum)
        })
        .collect();
    let del = DeliveryIn {
        w_id: 1,
        carrier_id: 7,
        date: 999,
    };
    let mut floor = DeliveryFloor::default();
    s.run(3, |s| t.delivery(s, &mut floor, &del).map(drop))
        .unwrap();
    for (d, (o, c, sum)) in (1..=DISTRICTS).zip(before) {
        let nos: Vec<NewOrder> = rows(&mut s, NEW_ORDER.primary(), &district_key(1, d));
        assert_eq!(nos[0].no_o_id, FIRST_UNDELIVERED + 1, "district {d}");
        let o2: Order = get(&mut s, ORDER, &order_key(1, d, o.o_id)).unwrap();
        assert_eq!(o2.o_carrier_id, 7);
        let ls: Vec<OrderLine> = rows(&mut s, ORDER_LINE.primary(), &order_key(1, d, o.o_id));
        assert!(ls.iter().all(|l| l.ol_delivery_d == 999));
        let c2: Customer = get(&mut s, CUSTOMER, &customer_key(1, d, o.o_c_id)).unwrap();
        assert_eq!(c2.c_balance, c.c_balance + sum);
        assert_eq!(c2.c_delivery_cnt, c.c_delivery_cnt + 1);
    }
    // The other warehouse is untouched.
    let nos: Vec<NewOrder> = rows(&mut s, NEW_ORDER.primary(), &district_key(2, 1));
    assert_eq!(nos[0].no_o_id, FIRST_UNDELIVERED);

    drop(s);
    check_all_pass(&t, &e);

    // ---- Delivery skips a district with nothing to deliver ----
    let mut s = Session::new(e.worker(0));
    let empty: Vec<NewOrder> = rows(&mut s, NEW_ORDER.primary(), &district_key(2, 5));
    s.run(9, |s| {
        for no in &empty {
            assert!(s.delete(NEW_ORDER, &new_order_key(2, 5, no.no_o_id))?);
        }
        Ok(())
    })
    .unwrap();
    let del = DeliveryIn {
        w_id: 2,
        carrier_id: 1,
        date: 1000,
    };
    let mut skipped = 0;
    s.run(3, |s| {
        skipped = t.delivery(s, &mut DeliveryFloor::default(), &del)?;
        Ok(())
    })
    .unwrap();
    assert_eq!(skipped, 1, "the emptied district is skipped and counted");
    let nos: Vec<NewOrder> = rows(&mut s, NEW_ORDER.primary(), &district_key(2, 6));
    assert_eq!(nos[0].no_o_id, FIRST_UNDELIVERED + 1);
}

/// Delivery scans New-Order from its worker's floor: a rolled-back Delivery raises
/// nothing, a committed one raises it past the orders it took, deliveries go on in order
/// and still deliver an order below the floor if one were there; a new worker state (the
/// driver makes one per run, per replay, per database) starts at every district's first
/// key.
#[test]
fn delivery_scans_from_the_floor_its_commits_raise() {
    let (t, e) = small(1);
    let heads = |s: &mut S<'_>| -> Vec<u32> {
        (1..=DISTRICTS)
            .map(|d| rows::<NewOrder>(s, NEW_ORDER.primary(), &district_key(1, d))[0].no_o_id)
            .collect()
    };
    let del = DeliveryIn {
        w_id: 1,
        carrier_id: 3,
        date: 5,
    };
    let mut floor = DeliveryFloor::default();
    let mut s = Session::new(e.worker(0));
    let r = s.run(3, |s| {
        t.delivery(s, &mut floor, &del)?;
        Err::<(), _>(Error::UserAbort)
    });
    assert!(matches!(r, Err(Error::UserAbort)), "{r:?}");
    assert_eq!(heads(&mut s), vec![FIRST_UNDELIVERED; DISTRICTS as usize]);
    assert_eq!(
        floor.start(1, 4),
        0,
        "a rolled-back delivery raises no floor"
    );
    for n in 1..=3 {
        s.run(3, |s| t.delivery(s, &mut floor, &del).map(drop))
            .unwrap();
        floor.committed();
        assert_eq!(
            heads(&mut s),
            vec![FIRST_UNDELIVERED + n; DISTRICTS as usize],
            "after delivery {n}"
        );
        assert_eq!(floor.start(1, 4), FIRST_UNDELIVERED + n);
    }
    let o: Order = get(&mut s, ORDER, &order_key(1, 4, FIRST_UNDELIVERED)).unwrap();
    assert_eq!(
        o.o_carrier_id, 3,
        "the rolled-back delivery's order was delivered next"
    );
    drop(s);
    check_all_pass(&t, &e);
}

/// The floor is the worker state's, not the kit's: one kit runs on a database (through
/// `Workload`, as the driver does, Deliveries raising its workers' floors), then on a
/// freshly loaded second one with new worker states, whose first Delivery takes every
/// district's oldest order (a floor carried over would skip them, and the consistency
/// conditions would then fail on the second database).
#[test]
fn a_floor_does_not_carry_from_one_database_to_the_next() {
    let t = Tpcc::new(TpccConfig {
        warehouses: 1,
        items: 1000,
        mix: [30, 30, 0, 40, 0],
        ..TpccConfig::default()
    })
    .unwrap();
    let run = |e: &SerialEngine, n: usize| -> u32 {
        let mut st = t.worker_state(0, 1, 5);
        let mut s = Session::new(api::Database::worker(e, 0));
        let mut delivered = 0;
        for _ in 0..n {
            let (ty, input) = t.next(&mut st);
            match s.run(ty, |s| t.execute(s, &mut st, &input)) {
                Ok(()) => {
                    delivered += u32::from(matches!(input, TpccInput::Delivery(_)));
                    t.committed(&mut st, &input, true);
                }
                Err(Error::UserAbort) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(st.floor.start(1, 1) > FIRST_UNDELIVERED, delivered > 0);
        delivered
    };
    let open = || {
        let e = SerialEngine::open(Arc::new(t.schema()), &EngineOptions::default()).unwrap();
        t.load(&e, 2, 11, &|_| {}).unwrap();
        e
    };
    let e1 = open();
    assert!(run(&e1, 200) > 40, "the mix delivers");
    check_all_pass(&t, &e1);
    drop(e1);
    let e2 = open();
    // One Delivery, whatever the mix deals first.
    let mut st = t.worker_state(0, 1, 5);
    assert_eq!(st.floor.start(1, 1), 0);
    let mut s = Session::new(api::Database::worker(&e2, 0));
    let del = TpccInput::Delivery(DeliveryIn {
        w_id: 1,
        carrier_id: 2,
        date: 9,
    });
    s.run(3, |s| t.execute(s, &mut st, &del)).unwrap();
    t.committed(&mut st, &del, true);
    for d in 1..=DISTRICTS {
        let o: Order = s
            .run(9, |s| {
                s.get_row::<Order>(ORDER, &order_key(1, d, FIRST_UNDELIVERED))
            })
            .unwrap()
            .unwrap();
        assert_eq!(o.o_carrier_id, 2, "district {d}'s oldest order delivered");
    }
    drop(s);
    assert!(run(&e2, 200) > 40);
    check_all_pass(&t, &e2);
}

/// Stock-Level's distinct ids: each id once, in the order first seen, across reuses (the
/// bitmap is cleared for the next transaction), ids beyond the items' range included.
#[test]
fn distinct_ids_keep_each_id_once() {
    let mut d = DistinctIds::default();
    for round in 0..3u32 {
        d.clear();
        let input = [
            5,
            64,
            5,
            63,
            100_000,
            64,
            u32::MAX,
            7 + round,
            u32::MAX,
            100_001,
            63,
        ];
        for id in input {
            d.add(id);
        }
        assert_eq!(d.ids, [5, 64, 63, 100_000, u32::MAX, 7 + round, 100_001]);
    }
    d.clear();
    d.add(5);
    assert_eq!(d.ids, [5]);
}
