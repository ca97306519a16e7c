//! Q3, the shipping priority query (clause 2.4.3): the ten unshipped orders of a
//! market segment with the most revenue, as of a date.

use super::{i64c, lit, pick, scan_all, strc, u32c, Sql};
use crate::tpch::gen::{days_from_civil, SEGMENTS};
use crate::tpch::schema::{Customer, Lineitem, Orders, CUSTOMER, ORDERS};
use api::{Reader, Result};
use exec::{hash_aggregate, hash_join, top_n, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// SEGMENT: one of the five market segments.
    pub segment: String,
    /// DATE: a day of March 1995.
    pub date: u32,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            segment: pick(r, &SEGMENTS).to_string(),
            date: days_from_civil(1995, 3, r.gen_range(1..=31)),
        }
    }

    pub fn validation() -> Params {
        Params {
            segment: "BUILDING".into(),
            date: days_from_civil(1995, 3, 15),
        }
    }
}

/// Raw rows: l_orderkey, revenue (10^-4), o_orderdate, o_shippriority; revenue
/// descending, then order date and (for ties) order key; ten.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let date = i64::from(p.date);
    let seg = p.segment.as_bytes();
    let custs = super::ids(
        &scan_all(
            s,
            CUSTOMER,
            |r| strc(r, offset_of!(Customer, c_mktsegment), 10) == seg,
            |r| vec![Datum::Int(u32c(r, offset_of!(Customer, c_custkey)))],
        )?,
        0,
    );
    // (o_orderkey, o_orderdate, o_shippriority)
    let orders = scan_all(
        s,
        ORDERS,
        |r| {
            u32c(r, offset_of!(Orders, o_orderdate)) < date
                && custs.contains(&u32c(r, offset_of!(Orders, o_custkey)))
        },
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Orders, o_orderkey))),
                Datum::Int(u32c(r, offset_of!(Orders, o_orderdate))),
                Datum::Int(u32c(r, offset_of!(Orders, o_shippriority))),
            ]
        },
    )?;
    // (l_orderkey, revenue)
    let lines = super::order_revenue(s, &super::ids(&orders, 0), |r| {
        u32c(r, offset_of!(Lineitem, l_shipdate)) > date
    })?;
    // (l_orderkey, revenue, o_orderkey, o_orderdate, o_shippriority)
    let joined = hash_join(&orders, &[0], &lines, &[0]);
    // (l_orderkey, o_orderdate, o_shippriority, revenue)
    let g = hash_aggregate(&joined, &[0, 3, 4], &[Agg::Sum(Expr::col(1))]);
    let top = top_n(
        g,
        &[
            SortKey { col: 3, asc: false },
            SortKey { col: 1, asc: true },
            SortKey { col: 0, asc: true },
        ],
        10,
    );
    Ok(top
        .into_iter()
        .map(|r| vec![r[0].clone(), r[3].clone(), r[1].clone(), r[2].clone()])
        .collect())
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "SELECT l_orderkey, {} AS revenue, o_orderdate, o_shippriority \
         FROM customer, orders, lineitem \
         WHERE c_mktsegment = {} AND c_custkey = o_custkey AND l_orderkey = o_orderkey \
         AND o_orderdate < {d} AND l_shipdate > {d} \
         GROUP BY l_orderkey, o_orderdate, o_shippriority \
         ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 10",
        q.sum(&q.revenue()),
        lit(&p.segment),
        d = p.date,
    )
}

/// The reported rows: revenue in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[1])
}
