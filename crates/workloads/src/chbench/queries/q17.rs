//! Q17: half the amount of the order lines of items whose I_DATA ends in `b` that
//! ordered fewer units than the item's average line.

use super::{i64c, strc, u32c, Sql};
use crate::tpcc::schema::{Item, OrderLine, ITEM, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// One row: sum(ol_amount) in cents (`finish` halves it).
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    // The items: id -> (sum of quantities, lines) of their order lines.
    let mut items: HashMap<i64, (i64, i64)> = HashMap::new();
    exec::scan_each(s, ITEM.primary(), Unbounded, Unbounded, |r| {
        if strc(r, offset_of!(Item, i_data), 50).last() == Some(&b'b') {
            items.insert(u32c(r, offset_of!(Item, i_id)), (0, 0));
        }
    })?;
    let item = |r: &[u8]| u32c(r, offset_of!(OrderLine, ol_i_id));
    let qty = |r: &[u8]| u32c(r, offset_of!(OrderLine, ol_quantity));
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        if let Some(a) = items.get_mut(&item(r)) {
            a.0 += qty(r);
            a.1 += 1;
        }
    })?;
    // ol_quantity < avg, exactly: quantity x count < sum.
    let mut sum = 0i64;
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        if let Some(&(total, n)) = items.get(&item(r)) {
            if qty(r) * n < total {
                sum += i64c(r, offset_of!(OrderLine, ol_amount));
            }
        }
    })?;
    Ok(vec![vec![Datum::Int(sum)]])
}

pub fn sql(q: Sql) -> String {
    let ends_b = q.like("i_data", "%b");
    format!(
        "SELECT {} FROM order_line, (SELECT i_id, sum(ol_quantity) AS s, count(*) AS c \
         FROM item, order_line WHERE {ends_b} AND ol_i_id = i_id GROUP BY i_id) t \
         WHERE ol_i_id = t.i_id AND ol_quantity * t.c < t.s",
        q.sum(&q.m("ol_amount"))
    )
}

/// The answer: avg_yearly = sum / 2.0, in cents rounded half away from zero.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    vec![vec![Datum::Int(exec::expr::div_round(raw[0][0].int(), 2))]]
}
