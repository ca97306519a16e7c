//! Q4: orders entered since 2007-01-02 with a line delivered at or after the order's
//! entry, counted by their line count.

use super::{far_future, i64c, since_2007, u32c, Sql};
use crate::tpcc::schema::{Order, OrderLine, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: o_ol_cnt, count, by o_ol_cnt.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let (lo, hi) = (since_2007(), far_future());
    // Qualifying orders: id -> (o_entry_d, o_ol_cnt).
    let mut orders: HashMap<i64, (i64, i64)> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        let e = i64c(r, offset_of!(Order, o_entry_d));
        if (lo..hi).contains(&e) {
            let id = super::order_of(r);
            orders.insert(id, (e, u32c(r, offset_of!(Order, o_ol_cnt))));
        }
    })?;
    // The EXISTS: orders with a line delivered at or after their entry.
    let mut late: HashSet<i64> = HashSet::new();
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let id = super::line_order(r);
        if let Some(&(e, _)) = orders.get(&id) {
            if i64c(r, offset_of!(OrderLine, ol_delivery_d)) >= e {
                late.insert(id);
            }
        }
    })?;
    let mut by_cnt: BTreeMap<i64, i64> = BTreeMap::new();
    for id in &late {
        *by_cnt.entry(orders[id].1).or_default() += 1;
    }
    Ok(by_cnt
        .into_iter()
        .map(|(c, n)| vec![Datum::Int(c), Datum::Int(n)])
        .collect())
}

pub fn sql(_q: Sql) -> String {
    format!(
        "SELECT o_ol_cnt, count(*) FROM \"order\" WHERE o_entry_d >= {} AND o_entry_d < {} \
         AND EXISTS (SELECT 1 FROM order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id \
         AND ol_o_id = o_id AND ol_delivery_d >= o_entry_d) \
         GROUP BY o_ol_cnt ORDER BY o_ol_cnt",
        since_2007(),
        far_future()
    )
}
