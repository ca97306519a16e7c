//! Q14: the share of promotional items (I_DATA beginning `PR`) in the amount of the
//! order lines delivered since 2007-01-02 (to [`super::FAR_FUTURE`]).

use super::{far_future, i64c, since_2007, strc, u32c, Sql};
use crate::tpcc::schema::{Item, OrderLine, ITEM, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// One row: sum(promotional ol_amount), sum(ol_amount), cents.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let (lo, hi) = (since_2007(), far_future());
    // Every item: id -> promotional.
    let mut promo: HashMap<i64, bool> = HashMap::new();
    exec::scan_each(s, ITEM.primary(), Unbounded, Unbounded, |r| {
        let data = strc(r, offset_of!(Item, i_data), 50);
        promo.insert(u32c(r, offset_of!(Item, i_id)), data.starts_with(b"PR"));
    })?;
    let (mut p, mut all) = (0i64, 0i64);
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        let d = i64c(r, offset_of!(OrderLine, ol_delivery_d));
        if !(lo..hi).contains(&d) {
            return;
        }
        if let Some(&is) = promo.get(&u32c(r, offset_of!(OrderLine, ol_i_id))) {
            let amount = i64c(r, offset_of!(OrderLine, ol_amount));
            all += amount;
            if is {
                p += amount;
            }
        }
    })?;
    Ok(vec![vec![Datum::Int(p), Datum::Int(all)]])
}

pub fn sql(q: Sql) -> String {
    let amount = q.m("ol_amount");
    format!(
        "SELECT {}, {} FROM order_line, item WHERE ol_i_id = i_id \
         AND ol_delivery_d >= {} AND ol_delivery_d < {}",
        q.sum(&format!(
            "CASE WHEN substr(i_data, 1, 2) = 'PR' THEN {amount} ELSE 0 END"
        )),
        q.sum(&amount),
        since_2007(),
        far_future()
    )
}

/// The answer: promo_revenue = 100 x promo / (1 + all) with amounts in currency units,
/// i.e. 100 x p / (100 + a) in cents, reported in hundredths of a percent (rounded
/// half away from zero).
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    let (p, a) = (raw[0][0].int(), raw[0][1].int());
    vec![vec![Datum::Int(exec::expr::div_round(10_000 * p, 100 + a))]]
}
