//! Q18: the orders whose lines amount to more than 200.00, with their customer's last
//! name, by amount descending.

use super::{i64c, strc, u32c, Sql};
use crate::tpcc::schema::{Customer, Order, OrderLine, CUSTOMER, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row, SortKey};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// HAVING sum(ol_amount) > 200, in cents.
const MORE_THAN: i64 = 20_000;

/// Rows: c_last, c_id, o_id, o_entry_d, o_ol_cnt, amount_sum (cents); by amount_sum
/// descending, then entry, ties by the order's warehouse, district and id.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    // ORDER, ORDER_LINE, CUSTOMER: the order TPC-C's writers lock them in (a two-phase
    // locking engine's query reading ORDER_LINE before ORDER deadlocks with
    // New-Order). Every order: id -> its customer (w, d, c) and its row without c_last
    // and the amount, with the order's warehouse and district for the ties.
    let mut orders: HashMap<i64, (i64, Row)> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        let (w, d) = (
            u32c(r, offset_of!(Order, o_w_id)),
            u32c(r, offset_of!(Order, o_d_id)),
        );
        let row = vec![
            Datum::Int(u32c(r, offset_of!(Order, o_c_id))),
            Datum::Int(u32c(r, offset_of!(Order, o_id))),
            Datum::Int(i64c(r, offset_of!(Order, o_entry_d))),
            Datum::Int(u32c(r, offset_of!(Order, o_ol_cnt))),
            Datum::Int(w),
            Datum::Int(d),
        ];
        orders.insert(super::order_of(r), (super::order_customer(r), row));
    })?;
    // The grouped lines: order -> amount.
    let mut amount: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let id = super::line_order(r);
        *amount.entry(id).or_default() += i64c(r, offset_of!(OrderLine, ol_amount));
    })?;
    // HAVING, and the orders kept by customer.
    let mut by_customer: HashMap<i64, Vec<Row>> = HashMap::new();
    for (id, sum) in amount {
        if sum <= MORE_THAN {
            continue;
        }
        if let Some((c, row)) = orders.remove(&id) {
            let mut row = row;
            row.insert(4, Datum::Int(sum));
            by_customer.entry(c).or_default().push(row);
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    exec::scan_each(s, CUSTOMER.primary(), Unbounded, Unbounded, |r| {
        let id = super::customer_of(r);
        if let Some(orders) = by_customer.remove(&id) {
            let last = Datum::Str(strc(r, offset_of!(Customer, c_last), 16).to_vec());
            for o in orders {
                let mut row = vec![last.clone()];
                row.extend(o);
                rows.push(row);
            }
        }
    })?;
    let asc = |col| SortKey { col, asc: true };
    exec::sort(
        &mut rows,
        &[
            SortKey { col: 5, asc: false },
            asc(3),
            asc(6),
            asc(7),
            asc(2),
        ],
    );
    for r in &mut rows {
        r.truncate(6);
    }
    Ok(rows)
}

pub fn sql(q: Sql) -> String {
    let amount = q.sum(&q.m("ol_amount"));
    format!(
        "SELECT c_last, c_id, o_id, o_entry_d, o_ol_cnt, {amount} AS amount_sum \
         FROM customer, \"order\", order_line \
         WHERE c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id \
         AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
         GROUP BY o_id, o_w_id, o_d_id, c_id, c_last, o_entry_d, o_ol_cnt \
         HAVING {amount} > {MORE_THAN} \
         ORDER BY amount_sum DESC, o_entry_d, o_w_id, o_d_id, o_id"
    )
}
