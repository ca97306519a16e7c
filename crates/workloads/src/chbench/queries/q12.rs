//! Q12: order lines delivered (before [`super::FAR_FUTURE`]) at or after their order's
//! entry, counted by the order's line count, split by carrier 1 or 2 against the
//! others.

use super::{far_future, i64c, u32c, Sql};
use crate::tpcc::schema::{Order, OrderLine, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row, SortKey};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: o_ol_cnt, high_line_count, low_line_count, by o_ol_cnt.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let hi = far_future();
    // Every order: id -> (o_entry_d, o_ol_cnt, o_carrier_id).
    let mut orders: HashMap<i64, (i64, i64, i64)> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        let id = super::order_of(r);
        orders.insert(
            id,
            (
                i64c(r, offset_of!(Order, o_entry_d)),
                u32c(r, offset_of!(Order, o_ol_cnt)),
                u32c(r, offset_of!(Order, o_carrier_id)),
            ),
        );
    })?;
    let aggs = [Agg::Sum(Expr::col(1)), Agg::Sum(Expr::col(2))];
    let mut a = exec::Aggregator::new(1, &aggs);
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let d = i64c(r, offset_of!(OrderLine, ol_delivery_d));
        if d >= hi {
            return;
        }
        let id = super::line_order(r);
        if let Some(&(e, cnt, carrier)) = orders.get(&id) {
            if e <= d {
                let high = i64::from(carrier == 1 || carrier == 2);
                let row = [Datum::Int(cnt), Datum::Int(high), Datum::Int(1 - high)];
                a.add(&row[..1], &row);
            }
        }
    })?;
    let mut g = a.finish();
    exec::sort(&mut g, &[SortKey { col: 0, asc: true }]);
    Ok(g)
}

pub fn sql(q: Sql) -> String {
    format!(
        "SELECT o_ol_cnt, {}, {} FROM \"order\", order_line \
         WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
         AND o_entry_d <= ol_delivery_d AND ol_delivery_d < {} \
         GROUP BY o_ol_cnt ORDER BY o_ol_cnt",
        q.sum("CASE WHEN o_carrier_id = 1 OR o_carrier_id = 2 THEN 1 ELSE 0 END"),
        q.sum("CASE WHEN o_carrier_id <> 1 AND o_carrier_id <> 2 THEN 1 ELSE 0 END"),
        far_future()
    )
}
