//! Q10: each customer's amount of order lines (of orders since 2007-01-02) delivered
//! at or after the order's entry, with the customer's name, city, phone and nation, by
//! amount descending.

use super::{i64c, nation_of_state, order_id, since_2007, strc, u32c, Sql};
use crate::tpcc::schema::{Customer, Order, OrderLine, CUSTOMER, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row, SortKey};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: c_id, c_last, revenue (cents), c_city, c_phone, n_name; by revenue descending,
/// ties by the other columns in that order.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let since = since_2007();
    let nations = super::nation_names(s)?;
    // Customers with a nation: (w, d, c) -> the group's columns.
    let mut customers: HashMap<i64, [Datum; 5]> = HashMap::new();
    exec::scan_each(s, CUSTOMER.primary(), Unbounded, Unbounded, |r| {
        let Some(n) = nations.get(&nation_of_state(r, offset_of!(Customer, c_state))) else {
            return;
        };
        let c = u32c(r, offset_of!(Customer, c_id));
        let id = order_id(
            u32c(r, offset_of!(Customer, c_w_id)),
            u32c(r, offset_of!(Customer, c_d_id)),
            c,
        );
        let text = |off, len| Datum::Str(strc(r, off, len).to_vec());
        customers.insert(
            id,
            [
                Datum::Int(c),
                text(offset_of!(Customer, c_last), 16),
                text(offset_of!(Customer, c_city), 20),
                text(offset_of!(Customer, c_phone), 16),
                n.clone(),
            ],
        );
    })?;
    // Orders since 2007: order -> (customer, entry).
    let mut orders: HashMap<i64, (i64, i64)> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        let e = i64c(r, offset_of!(Order, o_entry_d));
        if e < since {
            return;
        }
        let (w, d) = (
            u32c(r, offset_of!(Order, o_w_id)),
            u32c(r, offset_of!(Order, o_d_id)),
        );
        let c = order_id(w, d, u32c(r, offset_of!(Order, o_c_id)));
        if customers.contains_key(&c) {
            orders.insert(order_id(w, d, u32c(r, offset_of!(Order, o_id))), (c, e));
        }
    })?;
    let aggs = [Agg::Sum(Expr::col(5))];
    let mut a = exec::Aggregator::new(5, &aggs);
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let id = super::line_order(r);
        let Some(&(c, e)) = orders.get(&id) else {
            return;
        };
        if e <= i64c(r, offset_of!(OrderLine, ol_delivery_d)) {
            let g = &customers[&c];
            let mut row: Row = g.to_vec();
            row.push(Datum::Int(i64c(r, offset_of!(OrderLine, ol_amount))));
            a.add(&row[..5], &row);
        }
    })?;
    // Group columns then the sum: as the answer's columns, c_id, c_last, revenue, ...
    let mut rows: Vec<Row> = a
        .finish()
        .into_iter()
        .map(|g| {
            vec![
                g[0].clone(),
                g[1].clone(),
                g[5].clone(),
                g[2].clone(),
                g[3].clone(),
                g[4].clone(),
            ]
        })
        .collect();
    let asc = |col| SortKey { col, asc: true };
    exec::sort(
        &mut rows,
        &[
            SortKey { col: 2, asc: false },
            asc(0),
            asc(1),
            asc(3),
            asc(4),
            asc(5),
        ],
    );
    Ok(rows)
}

pub fn sql(q: Sql) -> String {
    format!(
        "SELECT c_id, c_last, {} AS revenue, c_city, c_phone, n_name \
         FROM customer, \"order\", order_line, nation \
         WHERE c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id \
         AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
         AND o_entry_d >= {} AND o_entry_d <= ol_delivery_d AND n_nationkey = {} \
         GROUP BY c_id, c_last, c_city, c_phone, n_name \
         ORDER BY revenue DESC, c_id, c_last, c_city, c_phone, n_name",
        q.sum(&q.m("ol_amount")),
        since_2007(),
        q.state_nation()
    )
}
