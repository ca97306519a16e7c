//! Q19: the amount of order lines of 1 to 10 units of items priced 1 to 400,000 whose
//! I_DATA ends in `a`, `b` or `c`, each letter with its three warehouses.

use super::{i64c, strc, u32c, Sql};
use crate::tpcc::schema::{Item, OrderLine, ITEM, ORDER_LINE};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// The three disjuncts: I_DATA's last letter and the warehouses.
const ARMS: [(u8, [i64; 3]); 3] = [(b'a', [1, 2, 3]), (b'b', [1, 2, 4]), (b'c', [1, 5, 3])];

/// One row: sum(ol_amount), cents.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    // Items priced 1.00 to 400,000.00 whose data ends in a, b or c: id -> that letter.
    let mut items: HashMap<i64, u8> = HashMap::new();
    exec::scan_each(s, ITEM.primary(), Unbounded, Unbounded, |r| {
        let price = i64c(r, offset_of!(Item, i_price));
        let last = strc(r, offset_of!(Item, i_data), 50).last().copied();
        if let (true, Some(c @ b'a'..=b'c')) = ((100..=40_000_000).contains(&price), last) {
            items.insert(u32c(r, offset_of!(Item, i_id)), c);
        }
    })?;
    let mut sum = 0i64;
    exec::scan_each(s, ORDER_LINE.primary(), Unbounded, Unbounded, |r| {
        if !(1..=10).contains(&u32c(r, offset_of!(OrderLine, ol_quantity))) {
            return;
        }
        let Some(&c) = items.get(&u32c(r, offset_of!(OrderLine, ol_i_id))) else {
            return;
        };
        let w = u32c(r, offset_of!(OrderLine, ol_w_id));
        if ARMS.iter().any(|(l, ws)| *l == c && ws.contains(&w)) {
            sum += i64c(r, offset_of!(OrderLine, ol_amount));
        }
    })?;
    Ok(vec![vec![Datum::Int(sum)]])
}

pub fn sql(q: Sql) -> String {
    let arms: Vec<String> = ARMS
        .iter()
        .map(|(l, ws)| {
            let ends = q.like("i_data", &format!("%{}", *l as char));
            format!(
                "(ol_i_id = i_id AND {ends} AND ol_quantity >= 1 AND ol_quantity <= 10 \
                 AND {} BETWEEN 100 AND 40000000 AND ol_w_id IN ({}, {}, {}))",
                q.m("i_price"),
                ws[0],
                ws[1],
                ws[2]
            )
        })
        .collect();
    format!(
        "SELECT {} FROM order_line, item WHERE {}",
        q.sum(&q.m("ol_amount")),
        arms.join(" OR ")
    )
}
