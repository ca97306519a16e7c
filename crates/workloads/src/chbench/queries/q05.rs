//! Q5: the amount of order lines (of orders since 2007-01-02) whose customer and
//! supplier are of the same nation of region Europe, by nation.

use super::{i64c, nation_of_state, order_id, since_2007, strc, u32c, Sql};
use crate::chbench::schema::{Nation, Region, NATION, REGION};
use crate::tpcc::schema::{Customer, Order, OrderLine, CUSTOMER, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: n_name, revenue (cents), by revenue descending (ties: name).
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let since = since_2007();
    let europe = region_nations(s, "Europe")?;
    // Suppliers of those nations: key -> nation key.
    let supplier = super::suppliers_where(s, |n| europe.contains_key(&n))?;
    // Customers of those nations: (w, d, c) -> nation key.
    let mut customer: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, CUSTOMER.primary(), Unbounded, Unbounded, |r| {
        let n = nation_of_state(r, offset_of!(Customer, c_state));
        if europe.contains_key(&n) {
            let id = super::customer_of(r);
            customer.insert(id, n);
        }
    })?;
    // Their orders since 2007: order -> the customer's nation.
    let mut order: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        if i64c(r, offset_of!(Order, o_entry_d)) < since {
            return;
        }
        let (w, d) = (
            u32c(r, offset_of!(Order, o_w_id)),
            u32c(r, offset_of!(Order, o_d_id)),
        );
        if let Some(&n) = customer.get(&order_id(w, d, u32c(r, offset_of!(Order, o_c_id)))) {
            order.insert(order_id(w, d, u32c(r, offset_of!(Order, o_id))), n);
        }
    })?;
    // Lines: the stock row is (ol_w_id, ol_i_id), its supplier (w x i) mod 10,000.
    let mut revenue: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let w = u32c(r, offset_of!(OrderLine, ol_w_id));
        let id = order_id(
            w,
            u32c(r, offset_of!(OrderLine, ol_d_id)),
            u32c(r, offset_of!(OrderLine, ol_o_id)),
        );
        let Some(&n) = order.get(&id) else { return };
        let su = (w * u32c(r, offset_of!(OrderLine, ol_i_id))) % 10_000;
        if supplier.get(&su) == Some(&n) {
            *revenue.entry(n).or_default() += i64c(r, offset_of!(OrderLine, ol_amount));
        }
    })?;
    Ok(super::pairs(
        revenue.into_iter().map(|(n, v)| (europe[&n].clone(), v)),
        true,
    ))
}

/// The nations of region `name`: key -> N_NAME.
pub(super) fn region_nations(s: &mut dyn Reader, name: &str) -> Result<HashMap<i64, Datum>> {
    let mut regions: HashSet<i64> = HashSet::new();
    exec::scan_each(s, REGION.primary(), Unbounded, Unbounded, |r| {
        if strc(r, offset_of!(Region, r_name), 25) == name.as_bytes() {
            regions.insert(u32c(r, offset_of!(Region, r_regionkey)));
        }
    })?;
    let mut out = HashMap::new();
    exec::scan_each(s, NATION.primary(), Unbounded, Unbounded, |r| {
        if regions.contains(&u32c(r, offset_of!(Nation, n_regionkey))) {
            out.insert(
                u32c(r, offset_of!(Nation, n_nationkey)),
                Datum::Str(strc(r, offset_of!(Nation, n_name), 25).to_vec()),
            );
        }
    })?;
    Ok(out)
}

pub fn sql(q: Sql) -> String {
    format!(
        "SELECT n_name, {} AS revenue \
         FROM customer, \"order\", order_line, stock, supplier, nation, region \
         WHERE c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id \
         AND ol_o_id = o_id AND ol_w_id = o_w_id AND ol_d_id = o_d_id \
         AND ol_w_id = s_w_id AND ol_i_id = s_i_id \
         AND (s_w_id * s_i_id) % 10000 = su_suppkey \
         AND {} = su_nationkey AND su_nationkey = n_nationkey \
         AND n_regionkey = r_regionkey AND r_name = 'Europe' AND o_entry_d >= {} \
         GROUP BY n_name ORDER BY revenue DESC, n_name",
        q.sum(&q.m("ol_amount")),
        q.state_nation(),
        since_2007()
    )
}
