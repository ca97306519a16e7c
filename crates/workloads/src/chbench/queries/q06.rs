//! Q6: the amount of the order lines delivered since 1999 (to [`super::FAR_FUTURE`])
//! with a quantity of 1 to 100,000.

use super::{at, far_future, i64c, u32c, Sql};
use crate::tpcc::schema::{OrderLine, ORDER_LINE};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row};
use std::mem::offset_of;
use std::ops::Bound;

/// One row: sum(ol_amount) in cents.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let (lo, hi) = (at(1999, 1, 1), far_future());
    exec::scan_aggregate(
        s,
        ORDER_LINE.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        |r| {
            let d = i64c(r, offset_of!(OrderLine, ol_delivery_d));
            let q = u32c(r, offset_of!(OrderLine, ol_quantity));
            (lo..hi).contains(&d) && (1..=100_000).contains(&q)
        },
        |r| vec![Datum::Int(i64c(r, offset_of!(OrderLine, ol_amount)))],
        0,
        &[Agg::Sum(Expr::col(0))],
    )
}

pub fn sql(q: Sql) -> String {
    format!(
        "SELECT {} FROM order_line WHERE ol_delivery_d >= {} AND ol_delivery_d < {} \
         AND ol_quantity BETWEEN 1 AND 100000",
        q.sum(&q.m("ol_amount")),
        at(1999, 1, 1),
        far_future()
    )
}
