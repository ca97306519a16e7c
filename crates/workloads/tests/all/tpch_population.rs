//! TPC-H population at SF 0.01: the progress adds up to `load_rows`, the checks pass on
//! the fresh database, the data does not depend on the number of loading threads, a
//! damaged row fails the check that covers it, and value distributions stay in the
//! specification's ranges.

use api::row::{self, get_str};
use api::{Dir, Engine, EngineOptions, Session, TableId};
use engine_serial::SerialEngine;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use workloads::tpch::gen::CURRENT_DATE;
use workloads::tpch::schema::*;
use workloads::tpch::{Tpch, TpchConfig};
use workloads::{RunInfo, Workload};

fn load(threads: usize) -> (Tpch, SerialEngine) {
    let t = Tpch::new(TpchConfig::default()).unwrap();
    let e = SerialEngine::open(Arc::new(t.schema()), &EngineOptions::default()).unwrap();
    let rows = AtomicU64::new(0);
    t.load(&e, threads, 7, &|n| {
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

/// A hash of every table's keys and rows, in key order.
fn digest(e: &SerialEngine) -> u64 {
    let mut h = DefaultHasher::new();
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    for t in e.schema().table_ids() {
        s.scan(
            t.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Forward,
            usize::MAX,
            |k, r| {
                k.hash(&mut h);
                r.hash(&mut h);
                true
            },
        )
        .unwrap();
    }
    s.commit().unwrap();
    h.finish()
}

fn rows<T: row::Pod>(e: &SerialEngine, t: TableId) -> Vec<T> {
    let mut s = Session::new(e.worker(0));
    let mut v = Vec::new();
    s.begin(0).unwrap();
    s.scan(
        t.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        Dir::Forward,
        usize::MAX,
        |_, r| {
            v.push(row::read::<T>(r));
            true
        },
    )
    .unwrap();
    s.commit().unwrap();
    v
}

#[test]
fn tpch_loads_deterministically_and_its_checks_pass_then_catch_damage() {
    let (t, e) = load(2);
    let checks = t.check(&e, &RunInfo::default()).unwrap();
    for c in &checks {
        assert!(c.passed, "{c:?}");
    }
    assert!(checks.len() >= 14, "{checks:?}");
    let (_, e1) = load(1);
    assert_eq!(
        digest(&e),
        digest(&e1),
        "the data depends on the thread count"
    );

    // Damage one order's total price: exactly the total-price check fails.
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    let k = orders_key(1);
    assert!(s
        .update_row::<Orders>(ORDERS, &k, |o| o.o_totalprice += 1)
        .unwrap());
    s.commit().unwrap();
    let failed: Vec<String> = t
        .check(&e, &RunInfo::default())
        .unwrap()
        .into_iter()
        .filter(|c| !c.passed)
        .map(|c| c.name)
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].starts_with("O_TOTALPRICE"), "{failed:?}");

    // A line item without its order fails the line-item check.
    let mut l = rows::<Lineitem>(&e, LINEITEM)[0];
    l.l_orderkey = 9; // the 9th key of each 32 is never an order's
    s.begin(0).unwrap();
    s.insert_row(LINEITEM, &lineitem_key(9, 1), &l).unwrap();
    s.commit().unwrap();
    let checks = t.check(&e, &RunInfo::default()).unwrap();
    let bad: Vec<&str> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name.as_str())
        .collect();
    assert!(
        bad.iter().any(|n| n.starts_with("cardinalities")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|n| n.starts_with("1 to 7 line items")),
        "{bad:?}"
    );
}

#[test]
fn tpch_values_follow_the_specification_s_distributions() {
    let (_, e) = load(2);
    let orders = rows::<Orders>(&e, ORDERS);
    let lines = rows::<Lineitem>(&e, LINEITEM);
    let customers = rows::<Customer>(&e, CUSTOMER);
    let suppliers = rows::<Supplier>(&e, SUPPLIER);
    // One customer in three has no order; the others mostly do.
    let with: std::collections::HashSet<u32> = orders.iter().map(|o| o.o_custkey).collect();
    assert!(with.iter().all(|c| c % 3 != 0));
    assert!(with.len() > customers.len() / 2, "{}", with.len());
    // All three order statuses, about half the lines shipped before CURRENTDATE.
    for st in [b'F', b'O', b'P'] {
        assert!(orders.iter().any(|o| o.o_orderstatus[0] == st));
    }
    let shipped = lines
        .iter()
        .filter(|l| l.l_shipdate <= CURRENT_DATE)
        .count();
    let share = shipped as f64 / lines.len() as f64;
    assert!((0.4..0.6).contains(&share), "{share}");
    // Discounts 0.00..0.10, taxes 0.00..0.08, quantities 1..50, every mode used.
    assert!(lines.iter().all(|l| l.l_discount <= 10 && l.l_tax <= 8));
    assert!(lines.iter().all(|l| (100..=5000).contains(&l.l_quantity)));
    let modes: std::collections::HashSet<&[u8]> =
        lines.iter().map(|l| get_str(&l.l_shipmode)).collect();
    assert_eq!(modes.len(), 7);
    // Phones carry the nation's country code; names are numbered.
    for c in &customers {
        let phone = std::str::from_utf8(get_str(&c.c_phone)).unwrap();
        assert_eq!(phone.len(), 15, "{phone}");
        assert_eq!(phone[..2].parse::<u32>().unwrap(), c.c_nationkey + 10);
    }
    assert_eq!(get_str(&suppliers[0].s_name), b"Supplier#000000001");
    // Comments hold the words Q13 looks for.
    let special = orders
        .iter()
        .filter(|o| {
            let c = std::str::from_utf8(get_str(&o.o_comment)).unwrap();
            c.find("special")
                .is_some_and(|i| c[i..].contains("requests"))
        })
        .count();
    assert!(special > 0);
}
