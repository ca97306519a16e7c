//! Q15: the suppliers with the largest amount of order lines delivered since
//! 2007-01-02 (a line's supplier: its stock row's, (ol_supply_w_id x ol_i_id) mod
//! 10,000).

use super::{i64c, since_2007, strc, u32c, Sql};
use crate::chbench::schema::{Supplier, SUPPLIER};
use crate::tpcc::schema::{OrderLine, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: su_suppkey, su_name, su_address, su_phone, total_revenue (cents), by key.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let since = since_2007();
    // revenue0: supplier -> amount. The plan takes the stock row from the line's keys
    // (TPC-C's load creates one per warehouse and item).
    let mut revenue: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        if i64c(r, offset_of!(OrderLine, ol_delivery_d)) < since {
            return;
        }
        let su = (u32c(r, offset_of!(OrderLine, ol_supply_w_id))
            * u32c(r, offset_of!(OrderLine, ol_i_id)))
            % 10_000;
        *revenue.entry(su).or_default() += i64c(r, offset_of!(OrderLine, ol_amount));
    })?;
    let Some(&max) = revenue.values().max() else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::new();
    // SUPPLIER's scan is in key order: the answer's order.
    exec::scan_each(s, SUPPLIER.primary(), Unbounded, Unbounded, |r| {
        let k = u32c(r, offset_of!(Supplier, su_suppkey));
        if revenue.get(&k) == Some(&max) {
            let text = |off, len| Datum::Str(strc(r, off, len).to_vec());
            rows.push(vec![
                Datum::Int(k),
                text(offset_of!(Supplier, su_name), 25),
                text(offset_of!(Supplier, su_address), 40),
                text(offset_of!(Supplier, su_phone), 15),
                Datum::Int(max),
            ]);
        }
    })?;
    Ok(rows)
}

pub fn sql(q: Sql) -> String {
    format!(
        "WITH revenue0 AS (SELECT (s_w_id * s_i_id) % 10000 AS supplier_no, {} AS total_revenue \
         FROM order_line, stock WHERE ol_i_id = s_i_id AND ol_supply_w_id = s_w_id \
         AND ol_delivery_d >= {} GROUP BY (s_w_id * s_i_id) % 10000) \
         SELECT su_suppkey, su_name, su_address, su_phone, total_revenue \
         FROM supplier, revenue0 WHERE su_suppkey = supplier_no \
         AND total_revenue = (SELECT max(total_revenue) FROM revenue0) ORDER BY su_suppkey",
        q.sum(&q.m("ol_amount")),
        since_2007()
    )
}
