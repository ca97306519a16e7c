//! Q8: by year of the order's entry (2007-01-02 on), the share of German suppliers in
//! the amount European customers ordered of the items below 1,000 whose I_DATA ends in
//! `b`.

use super::{
    far_future, i64c, nation_keys_named, nation_of_state, since_2007, strc, u32c, year_of, Sql,
};
use crate::tpcc::schema::{Customer, Item, Order, OrderLine, CUSTOMER, ITEM, ORDER, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::{Excluded, Unbounded};

/// Raw rows: l_year, the German suppliers' amount, the whole amount (cents); by year.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let (lo, hi) = (since_2007(), far_future());
    let europe = super::q05::region_nations(s, "Europe")?;
    let germany = nation_keys_named(s, "Germany")?;
    let suppliers = super::suppliers_where(s, |_| true)?;
    // ITEM's keys begin with the id: the scan stops at item 1,000.
    let mut items: HashSet<i64> = HashSet::new();
    let end = crate::tpcc::schema::item_key(1000);
    exec::scan_each(s, ITEM.primary(), Unbounded, Excluded(&end), |r| {
        let i = u32c(r, offset_of!(Item, i_id));
        if i < 1000 && strc(r, offset_of!(Item, i_data), 50).last() == Some(&b'b') {
            items.insert(i);
        }
    })?;
    let mut customers: HashSet<i64> = HashSet::new();
    exec::scan_each(s, CUSTOMER.primary(), Unbounded, Unbounded, |r| {
        if europe.contains_key(&nation_of_state(r, offset_of!(Customer, c_state))) {
            customers.insert(super::customer_of(r));
        }
    })?;
    // Their orders in the dates: id -> year.
    let mut orders: HashMap<i64, i64> = HashMap::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        let e = i64c(r, offset_of!(Order, o_entry_d));
        if (lo..=hi).contains(&e) && customers.contains(&super::order_customer(r)) {
            orders.insert(super::order_of(r), year_of(e));
        }
    })?;
    let mut by_year: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let i = u32c(r, offset_of!(OrderLine, ol_i_id));
        if !items.contains(&i) {
            return;
        }
        let id = super::line_order(r);
        let Some(&y) = orders.get(&id) else { return };
        let su = super::supplier_of(u32c(r, offset_of!(OrderLine, ol_supply_w_id)), i);
        let Some(n) = suppliers.get(&su) else { return };
        let amount = i64c(r, offset_of!(OrderLine, ol_amount));
        let e = by_year.entry(y).or_default();
        if germany.contains(n) {
            e.0 += amount;
        }
        e.1 += amount;
    })?;
    Ok(by_year
        .into_iter()
        .map(|(y, (g, all))| vec![Datum::Int(y), Datum::Int(g), Datum::Int(all)])
        .collect())
}

pub fn sql(q: Sql) -> String {
    let amount = q.m("ol_amount");
    format!(
        "SELECT {} AS l_year, {}, {} \
         FROM item, supplier, stock, order_line, \"order\", customer, nation n1, nation n2, \
         region \
         WHERE i_id = s_i_id AND ol_i_id = s_i_id AND ol_supply_w_id = s_w_id \
         AND (s_w_id * s_i_id) % 10000 = su_suppkey \
         AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
         AND c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id \
         AND n1.n_nationkey = {} AND n1.n_regionkey = r_regionkey \
         AND ol_i_id < 1000 AND r_name = 'Europe' AND su_nationkey = n2.n_nationkey \
         AND o_entry_d BETWEEN {} AND {} AND {} AND i_id = ol_i_id \
         GROUP BY {0} ORDER BY l_year",
        q.year("o_entry_d"),
        q.sum(&format!(
            "CASE WHEN n2.n_name = 'Germany' THEN {amount} ELSE 0 END"
        )),
        q.sum(&amount),
        q.state_nation(),
        since_2007(),
        far_future(),
        q.like("i_data", "%b")
    )
}

/// The answer: l_year, mkt_share = German / all in ten-thousandths, rounded half away
/// from zero (0 where the lines' amounts are all 0: the benchmark's division is
/// undefined there).
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    raw.into_iter()
        .map(|r| {
            let (g, all) = (r[1].int(), r[2].int());
            let share = if all == 0 {
                0
            } else {
                exec::expr::div_round(10_000 * g, all)
            };
            vec![r[0].clone(), Datum::Int(share)]
        })
        .collect()
}
