//! Q1: order lines delivered since 2007-01-02, summed by line number (quantity,
//! amount, their averages and the count).

use super::{i64c, since_2007, u32c, Sql};
use crate::tpcc::schema::{OrderLine, ORDER_LINE};
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;
use std::ops::Bound;

/// Raw rows: ol_number, sum(ol_quantity), sum(ol_amount) (cents), count.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let since = since_2007();
    let mut g = exec::scan_aggregate(
        s,
        ORDER_LINE.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        |r| i64c(r, offset_of!(OrderLine, ol_delivery_d)) > since,
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(OrderLine, ol_number))),
                Datum::Int(u32c(r, offset_of!(OrderLine, ol_quantity))),
                Datum::Int(i64c(r, offset_of!(OrderLine, ol_amount))),
            ]
        },
        1,
        &[Agg::Sum(Expr::col(1)), Agg::Sum(Expr::col(2)), Agg::Count],
    )?;
    sort(&mut g, &[SortKey { col: 0, asc: true }]);
    Ok(g)
}

pub fn sql(q: Sql) -> String {
    format!(
        "SELECT ol_number, {}, {}, count(*) FROM order_line WHERE ol_delivery_d > {} \
         GROUP BY ol_number ORDER BY ol_number",
        q.sum("ol_quantity"),
        q.sum(&q.m("ol_amount")),
        since_2007()
    )
}

/// The answer: ol_number, sum_qty, sum_amount (cents), avg_qty (hundredths),
/// avg_amount (cents), count_order; averages rounded half away from zero.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    raw.into_iter()
        .map(|r| {
            let n = r[3].int();
            vec![
                r[0].clone(),
                r[1].clone(),
                r[2].clone(),
                Datum::Int(exec::expr::div_round(r[1].int() * 100, n)),
                Datum::Int(exec::expr::div_round(r[2].int(), n)),
                r[3].clone(),
            ]
        })
        .collect()
}
