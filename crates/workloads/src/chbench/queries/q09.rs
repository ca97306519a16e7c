//! Q9: the amount of the order lines of items whose I_DATA ends in `BB`, by the
//! supplier's nation and the year of the order's entry.

use super::{i64c, strc, u32c, year_of, Sql};
use crate::tpcc::schema::{Item, Order, OrderLine, ITEM, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row, SortKey};
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: n_name, l_year, sum_profit (cents); by nation, then year descending.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let nations = super::nation_names(s)?;
    let suppliers = super::suppliers_where(s, |_| true)?;
    let mut items: HashSet<i64> = HashSet::new();
    exec::scan_each(s, ITEM.primary(), Unbounded, Unbounded, |r| {
        if strc(r, offset_of!(Item, i_data), 50).ends_with(b"BB") {
            items.insert(u32c(r, offset_of!(Item, i_id)));
        }
    })?;
    // ORDER before ORDER_LINE, the order TPC-C's writers lock them in (a two-phase
    // locking engine's query reading ORDER_LINE first deadlocks with New-Order):
    // every order's year, then the lines of those items (about one in 3,844).
    let mut years: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        years.insert(
            super::order_of(r),
            year_of(i64c(r, offset_of!(Order, o_entry_d))),
        );
    })?;
    let aggs = [Agg::Sum(Expr::col(2))];
    let mut a = exec::Aggregator::new(2, &aggs);
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let i = u32c(r, offset_of!(OrderLine, ol_i_id));
        if !items.contains(&i) {
            return;
        }
        let su = super::supplier_of(u32c(r, offset_of!(OrderLine, ol_supply_w_id)), i);
        let Some(n) = suppliers.get(&su) else { return };
        let Some(&y) = years.get(&super::line_order(r)) else {
            return;
        };
        let row = vec![
            nations[n].clone(),
            Datum::Int(y),
            Datum::Int(i64c(r, offset_of!(OrderLine, ol_amount))),
        ];
        a.add(&row[..2], &row);
    })?;
    let mut rows = a.finish();
    exec::sort(
        &mut rows,
        &[
            SortKey { col: 0, asc: true },
            SortKey { col: 1, asc: false },
        ],
    );
    Ok(rows)
}

pub fn sql(q: Sql) -> String {
    format!(
        "SELECT n_name, {} AS l_year, {} AS sum_profit \
         FROM item, stock, supplier, order_line, \"order\", nation \
         WHERE ol_i_id = s_i_id AND ol_supply_w_id = s_w_id \
         AND (s_w_id * s_i_id) % 10000 = su_suppkey \
         AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
         AND ol_i_id = i_id AND su_nationkey = n_nationkey AND {} \
         GROUP BY n_name, {0} ORDER BY n_name, l_year DESC",
        q.year("o_entry_d"),
        q.sum(&q.m("ol_amount")),
        q.like("i_data", "%BB")
    )
}
