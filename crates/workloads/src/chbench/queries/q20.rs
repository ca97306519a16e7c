//! Q20: the German suppliers of stock rows of items whose I_DATA begins with `co` that
//! hold more than half the units their item's lines delivered since 2010-05-23 12:00
//! ordered.

use super::{at, i32c, i64c, nation_keys_named, strc, supplier_of, u32c, Sql};
use crate::chbench::schema::{Supplier, SUPPLIER};
use crate::tpcc::schema::{Item, OrderLine, Stock, ITEM, ORDER_LINE, STOCK};
use api::{Reader, Result};
use exec::{Datum, Row, SortKey};
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// '2010-05-23 12:00:00', microseconds.
fn since() -> i64 {
    at(2010, 5, 23) + 12 * 3_600_000_000
}

/// Rows: su_name, su_address; by name.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let since = since();
    // ITEM, STOCK, ORDER_LINE: STOCK before ORDER_LINE, the order New-Order locks them
    // in (a two-phase locking engine's query reading them the other way deadlocks
    // with it). The `co` items' stock rows: (warehouse, item, units).
    let mut units: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, ITEM.primary(), Unbounded, Unbounded, |r| {
        if strc(r, offset_of!(Item, i_data), 50).starts_with(b"co") {
            units.insert(u32c(r, offset_of!(Item, i_id)), 0);
        }
    })?;
    let mut stock: Vec<(i64, i64, i64)> = Vec::new();
    exec::scan_each(s, STOCK.primary(), Unbounded, Unbounded, |r| {
        let i = u32c(r, offset_of!(Stock, s_i_id));
        if units.contains_key(&i) {
            let w = u32c(r, offset_of!(Stock, s_w_id));
            stock.push((w, i, i32c(r, offset_of!(Stock, s_quantity))));
        }
    })?;
    // The IN's subquery decorrelated: the items' delivered units, grouped once. Lines
    // join stock by item alone (the benchmark's text): every warehouse's.
    let mut lined: HashSet<i64> = HashSet::new();
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        if i64c(r, offset_of!(OrderLine, ol_delivery_d)) <= since {
            return;
        }
        let i = u32c(r, offset_of!(OrderLine, ol_i_id));
        if let Some(u) = units.get_mut(&i) {
            *u += u32c(r, offset_of!(OrderLine, ol_quantity));
            lined.insert(i);
        }
    })?;
    let chosen: HashSet<i64> = stock
        .into_iter()
        .filter(|&(_, i, q)| lined.contains(&i) && 2 * q > units[&i])
        .map(|(w, i, _)| supplier_of(w, i))
        .collect();
    let germany = nation_keys_named(s, "Germany")?;
    let mut rows: Vec<Row> = Vec::new();
    exec::scan_each(s, SUPPLIER.primary(), Unbounded, Unbounded, |r| {
        if chosen.contains(&u32c(r, offset_of!(Supplier, su_suppkey)))
            && germany.contains(&u32c(r, offset_of!(Supplier, su_nationkey)))
        {
            rows.push(vec![
                Datum::Str(strc(r, offset_of!(Supplier, su_name), 25).to_vec()),
                Datum::Str(strc(r, offset_of!(Supplier, su_address), 40).to_vec()),
            ]);
        }
    })?;
    exec::sort(&mut rows, &[SortKey { col: 0, asc: true }]);
    Ok(rows)
}

/// The IN's subquery decorrelated as the plan runs it: the lines' units summed per
/// item once (`GROUP BY ol_i_id`), then joined with STOCK, the same rows as grouping
/// the join by stock row. SQLite otherwise scanned ORDER_LINE once per matching stock
/// row (0.12 s at one warehouse against 0.90 s).
pub fn sql(q: Sql) -> String {
    format!(
        "SELECT su_name, su_address FROM supplier, nation \
         WHERE su_suppkey IN (SELECT (s_i_id * s_w_id) % 10000 FROM stock, \
         (SELECT ol_i_id, sum(ol_quantity) AS q FROM order_line \
         WHERE ol_i_id IN (SELECT i_id FROM item WHERE {}) AND ol_delivery_d > {} \
         GROUP BY ol_i_id) t WHERE s_i_id = t.ol_i_id AND 2 * s_quantity > t.q) \
         AND su_nationkey = n_nationkey AND n_name = 'Germany' ORDER BY su_name",
        q.like("i_data", "co%"),
        since()
    )
}
