//! Q11: the items whose stock rows supplied from Germany were ordered more than 0.5%
//! of all such stock's orders, with their order counts.

use super::{nation_keys_named, u32c, Sql};
use crate::tpcc::schema::{Stock, STOCK};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: s_i_id, ordercount, by ordercount descending (ties: item).
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let germany = nation_keys_named(s, "Germany")?;
    let suppliers = super::suppliers_where(s, |n| germany.contains(&n))?;
    let mut by_item: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, STOCK.primary(), Unbounded, Unbounded, |r| {
        let i = u32c(r, offset_of!(Stock, s_i_id));
        if suppliers.contains_key(&super::supplier_of(u32c(r, offset_of!(Stock, s_w_id)), i)) {
            *by_item.entry(i).or_default() += u32c(r, offset_of!(Stock, s_order_cnt));
        }
    })?;
    // HAVING sum > 0.005 x total, exactly: 200 x sum > total.
    let total: i64 = by_item.values().sum();
    Ok(super::pairs(
        by_item
            .into_iter()
            .filter(|&(_, c)| 200 * c > total)
            .map(|(i, c)| (Datum::Int(i), c)),
        true,
    ))
}

pub fn sql(q: Sql) -> String {
    let from = "FROM stock, supplier, nation WHERE (s_w_id * s_i_id) % 10000 = su_suppkey \
                AND su_nationkey = n_nationkey AND n_name = 'Germany'";
    format!(
        "SELECT s_i_id, {} AS ordercount {from} GROUP BY s_i_id \
         HAVING 200 * sum(s_order_cnt) > (SELECT coalesce(sum(s_order_cnt), 0) {from}) \
         ORDER BY ordercount DESC, s_i_id",
        q.sum("s_order_cnt")
    )
}
