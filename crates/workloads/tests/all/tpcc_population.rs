//! TPC-C population at the specification's sizes (100,000 items) on W=1 and W=2: row
//! counts, value ranges, the exact `load_rows` total, and the consistency conditions on
//! the fresh database.

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use api::key::Key;
use api::row::get_str;
use api::{Dir, Engine, EngineOptions, Session, TableId};
use engine_serial::SerialEngine;
use std::collections::HashSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use workloads::tpcc::gen;
use workloads::tpcc::schema::*;
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::{RunInfo, Workload};

fn load(w: u32) -> (Tpcc, SerialEngine) {
    let t = Tpcc::new(TpccConfig {
        warehouses: w,
        ..TpccConfig::default()
    })
    .unwrap();
    let e = SerialEngine::open(Arc::new(t.schema()), &EngineOptions::default()).unwrap();
    let rows = AtomicU64::new(0);
    t.load(&e, 2, 7, &|n| {
        rows.fetch_add(n, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(
        rows.into_inner(),
        t.load_rows(),
        "progress must add up to load_rows"
    );
    (t, e)
}

fn count(s: &mut Session<engine_serial::SerialWorker<'_>>, t: TableId, prefix: &Key) -> usize {
    let end = prefix.prefix_end();
    let hi = end
        .as_ref()
        .map_or(Bound::Unbounded, |k| Bound::Excluded(&k[..]));
    s.scan(
        t.primary(),
        Bound::Included(prefix),
        hi,
        Dir::Forward,
        usize::MAX,
        |_, _| true,
    )
    .unwrap()
}

fn check_population(w_count: u32) {
    let (t, e) = load(w_count);
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    let items = t.cfg.items;
    let mut originals = 0;
    for i in 1..=items {
        let it: Item = s.get_row(ITEM, &item_key(i)).unwrap().expect("item");
        assert_eq!(it.i_id, i);
        assert!((1..=10_000).contains(&it.i_im_id));
        assert!((100..=10_000).contains(&it.i_price));
        assert!((14..=24).contains(&get_str(&it.i_name).len()));
        assert!((26..=50).contains(&get_str(&it.i_data).len()));
        originals += gen::contains_original(&it.i_data) as u32;
    }
    assert!(s
        .get_row::<Item>(ITEM, &item_key(items + 1))
        .unwrap()
        .is_none());
    assert!(
        (9_000..11_000).contains(&originals),
        "{originals} ORIGINAL items"
    );

    let mut total_ol = 0usize;
    for w in 1..=w_count {
        let wh: Warehouse = s.get_row(WAREHOUSE, &warehouse_key(w)).unwrap().unwrap();
        assert_eq!((wh.w_id, wh.w_ytd), (w, 30_000_000));
        assert!(wh.w_tax <= 2000 && &wh.w_zip[4..] == b"11111");
        let mut q_sum = 0u64;
        for i in 1..=items {
            let st: Stock = s.get_row(STOCK, &stock_key(w, i)).unwrap().expect("stock");
            assert!((10..=100).contains(&st.s_quantity));
            assert_eq!((st.s_ytd, st.s_order_cnt, st.s_remote_cnt), (0, 0, 0));
            assert!(st.s_dist.iter().all(|d| get_str(d).len() == 24));
            q_sum += st.s_quantity as u64;
        }
        let mean = q_sum as f64 / items as f64;
        assert!((54.0..56.0).contains(&mean), "mean stock quantity {mean}");
        for d in 1..=DISTRICTS {
            let di: District = s.get_row(DISTRICT, &district_key(w, d)).unwrap().unwrap();
            assert_eq!((di.d_ytd, di.d_next_o_id), (3_000_000, 3001));
            assert!(di.d_tax <= 2000);
            let mut bc = 0;
            for c in 1..=CUSTOMERS {
                let cu: Customer = s
                    .get_row(CUSTOMER, &customer_key(w, d, c))
                    .unwrap()
                    .unwrap();
                assert_eq!((cu.c_id, cu.c_d_id, cu.c_w_id), (c, d, w));
                assert_eq!((cu.c_balance, cu.c_ytd_payment), (-1000, 1000));
                assert_eq!((cu.c_payment_cnt, cu.c_delivery_cnt), (1, 0));
                assert_eq!((cu.c_credit_lim, &cu.c_middle), (5_000_000, b"OE"));
                assert!(cu.c_discount <= 5000);
                assert!((300..=500).contains(&get_str(&cu.c_data).len()));
                assert!((8..=16).contains(&get_str(&cu.c_first).len()));
                if c <= 1000 {
                    assert_eq!(cu.c_last, gen::last_name(c - 1), "C_LAST of customer {c}");
                }
                bc += (&cu.c_credit == b"BC") as u32;
                assert!(&cu.c_credit == b"BC" || &cu.c_credit == b"GC");
            }
            assert!(
                (200..=420).contains(&bc),
                "{bc} bad-credit customers of 3000"
            );

            let dk = district_key(w, d);
            assert_eq!(count(&mut s, HISTORY, &dk), CUSTOMERS as usize);
            assert_eq!(count(&mut s, NEW_ORDER, &dk), 900);
            assert_eq!(count(&mut s, ORDER, &dk), INITIAL_ORDERS as usize);
            // Orders carry a permutation of the customers; delivered ones a carrier.
            let mut custs = HashSet::new();
            let lo = order_key(w, d, 1);
            let hi = order_key(w, d, INITIAL_ORDERS + 1);
            let mut ol_expected = 0;
            s.scan(
                ORDER.primary(),
                Bound::Included(&lo[..]),
                Bound::Excluded(&hi[..]),
                Dir::Forward,
                usize::MAX,
                |_, r| {
                    let o: Order = api::row::read(r);
                    custs.insert(o.o_c_id);
                    assert!((5..=15).contains(&o.o_ol_cnt));
                    assert_eq!(o.o_carrier_id == 0, o.o_id >= FIRST_UNDELIVERED);
                    assert!(o.o_carrier_id <= 10);
                    ol_expected += o.o_ol_cnt as usize;
                    true
                },
            )
            .unwrap();
            assert_eq!(custs.len(), CUSTOMERS as usize);
            let mut ol_n = 0;
            s.scan(
                ORDER_LINE.primary(),
                Bound::Included(&dk[..]),
                Bound::Excluded(&dk.prefix_end().unwrap()[..]),
                Dir::Forward,
                usize::MAX,
                |_, r| {
                    let l: OrderLine = api::row::read(r);
                    ol_n += 1;
                    let delivered = l.ol_o_id < FIRST_UNDELIVERED;
                    assert_eq!(l.ol_delivery_d != 0, delivered);
                    if delivered {
                        assert_eq!(l.ol_amount, 0);
                    } else {
                        assert!((1..=999_999).contains(&l.ol_amount));
                    }
                    assert!((1..=items).contains(&l.ol_i_id));
                    assert_eq!((l.ol_supply_w_id, l.ol_quantity), (w, 5));
                    true
                },
            )
            .unwrap();
            assert_eq!(ol_n, ol_expected);
            total_ol += ol_n;
        }
    }
    s.commit().unwrap();
    drop(s);
    // load_rows is exact: check it against the tables.
    let per_w = 1 + 10 + items as usize + 10 * (3000 * 3 + 900);
    assert_eq!(
        t.load_rows() as usize,
        items as usize + w_count as usize * per_w + total_ol
    );

    let checks = t.check(&e, &RunInfo::default()).unwrap();
    assert_eq!(checks.len(), 11);
    for c in &checks {
        assert!(c.passed, "{}: {}", c.name, c.detail);
    }
}

#[test]
fn population_w1() {
    check_population(1);
}

#[test]
fn population_w2() {
    check_population(2);
}
