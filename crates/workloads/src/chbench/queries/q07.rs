//! Q7: the amount of order lines delivered since 2007-01-02 whose supplier is of
//! Germany and customer of Cambodia or the reverse, by supplier nation, customer
//! nation (C_STATE's first letter) and year of the order's entry.

use super::{far_future, i64c, nation_keys_named, since_2007, u32c, year_of, Sql};
use crate::tpcc::schema::{Customer, Order, OrderLine, CUSTOMER, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row, SortKey};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// The two nations, each way.
const PAIR: [&str; 2] = ["Germany", "Cambodia"];

/// Rows: supp_nation (key), cust_nation (one character), l_year, revenue (cents); by
/// the first three.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let (lo, hi) = (since_2007(), far_future());
    // Nation key -> its place in PAIR.
    let mut side: HashMap<i64, usize> = HashMap::new();
    for (k, name) in PAIR.iter().enumerate() {
        side.extend(nation_keys_named(s, name)?.into_iter().map(|n| (n, k)));
    }
    let suppliers = super::suppliers_where(s, |n| side.contains_key(&n))?;
    // Customers of the two: (w, d, c) -> C_STATE's first character.
    let mut customers: HashMap<i64, u8> = HashMap::new();
    exec::scan_each(s, CUSTOMER.primary(), Unbounded, Unbounded, |r| {
        let c = r[offset_of!(Customer, c_state)];
        if side.contains_key(&i64::from(c)) {
            let id = super::customer_of(r);
            customers.insert(id, c);
        }
    })?;
    // Their orders: id -> (the customer's character, year).
    let mut orders: HashMap<i64, (u8, i64)> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        if let Some(&c) = customers.get(&super::order_customer(r)) {
            let y = year_of(i64c(r, offset_of!(Order, o_entry_d)));
            orders.insert(super::order_of(r), (c, y));
        }
    })?;
    let aggs = [Agg::Sum(Expr::col(3))];
    let mut a = exec::Aggregator::new(3, &aggs);
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        if !(lo..=hi).contains(&i64c(r, offset_of!(OrderLine, ol_delivery_d))) {
            return;
        }
        let id = super::line_order(r);
        let Some(&(c, y)) = orders.get(&id) else {
            return;
        };
        let su = super::supplier_of(
            u32c(r, offset_of!(OrderLine, ol_supply_w_id)),
            u32c(r, offset_of!(OrderLine, ol_i_id)),
        );
        let Some(&n) = suppliers.get(&su) else {
            return;
        };
        // One side each: the supplier's nation is not the customer's.
        if side[&n] != side[&i64::from(c)] {
            let row = vec![
                Datum::Int(n),
                Datum::Str(vec![c]),
                Datum::Int(y),
                Datum::Int(i64c(r, offset_of!(OrderLine, ol_amount))),
            ];
            a.add(&row[..3], &row);
        }
    })?;
    let mut rows = a.finish();
    let asc = |col| SortKey { col, asc: true };
    exec::sort(&mut rows, &[asc(0), asc(1), asc(2)]);
    Ok(rows)
}

/// With one condition the joins imply, the line's supplier among the two nations'
/// (`(ol_supply_w_id * ol_i_id) % 10000 IN ...`): SQLite tests it as it scans
/// ORDER_LINE, before looking up the order, customer and stock of every line (0.16 s
/// at one warehouse against 2.0 s).
pub fn sql(q: Sql) -> String {
    let [a, b] = PAIR;
    format!(
        "SELECT su_nationkey AS supp_nation, substr(c_state, 1, 1) AS cust_nation, \
         {} AS l_year, {} AS revenue \
         FROM supplier, stock, order_line, \"order\", customer, nation n1, nation n2 \
         WHERE ol_supply_w_id = s_w_id AND ol_i_id = s_i_id \
         AND (s_w_id * s_i_id) % 10000 = su_suppkey \
         AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
         AND c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id \
         AND su_nationkey = n1.n_nationkey AND {} = n2.n_nationkey \
         AND ((n1.n_name = '{a}' AND n2.n_name = '{b}') \
         OR (n1.n_name = '{b}' AND n2.n_name = '{a}')) \
         AND (ol_supply_w_id * ol_i_id) % 10000 IN (SELECT su_suppkey FROM supplier, nation \
         WHERE su_nationkey = n_nationkey AND n_name IN ('{a}', '{b}')) \
         AND ol_delivery_d BETWEEN {} AND {} \
         GROUP BY su_nationkey, substr(c_state, 1, 1), {0} \
         ORDER BY su_nationkey, cust_nation, l_year",
        q.year("o_entry_d"),
        q.sum(&q.m("ol_amount")),
        q.state_nation(),
        since_2007(),
        far_future()
    )
}
