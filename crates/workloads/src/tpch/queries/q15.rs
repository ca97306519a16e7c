//! Q15, the top supplier query (clause 2.4.15): the suppliers whose line items shipped
//! in a quarter brought the most revenue. The specification's view `revenue0` is a CTE
//! in the SQL text (clause 2.1.3.3's variant) and a hash map in the plan.

use super::sets::sum_by;
use super::HashMap;
use super::{i64c, revenue, scan_all, text, u32c, Sql};
use crate::tpch::gen::days_from_civil;
use crate::tpch::schema::{Lineitem, Supplier, LINEITEM, SUPPLIER};
use api::{Reader, Result};
use exec::{sort, Datum, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// DATE: the first day of a month from January 1993 to October 1997.
    pub date: u32,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            date: super::add_months(days_from_civil(1993, 1, 1), r.gen_range(0..58)),
        }
    }

    pub fn validation() -> Params {
        Params {
            date: days_from_civil(1996, 1, 1),
        }
    }
}

/// Raw rows: s_suppkey, s_name, s_address, s_phone, total_revenue (10^-4); by key.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (lo, hi) = (i64::from(p.date), i64::from(super::add_months(p.date, 3)));
    // revenue0: l_suppkey -> total revenue (on several query threads a map per part,
    // added up).
    let rev: HashMap<i64, i64> = sum_by(s, LINEITEM, |r| {
        (lo..hi)
            .contains(&u32c(r, offset_of!(Lineitem, l_shipdate)))
            .then(|| {
                (
                    u32c(r, offset_of!(Lineitem, l_suppkey)),
                    revenue(
                        i64c(r, offset_of!(Lineitem, l_extendedprice)),
                        i64c(r, offset_of!(Lineitem, l_discount)),
                    ),
                )
            })
    })?;
    let Some(&max) = rev.values().max() else {
        return Ok(Vec::new());
    };
    let mut rows = scan_all(
        s,
        SUPPLIER,
        |r| rev.get(&u32c(r, offset_of!(Supplier, s_suppkey))) == Some(&max),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Supplier, s_suppkey))),
                text(r, offset_of!(Supplier, s_name), 25),
                text(r, offset_of!(Supplier, s_address), 40),
                text(r, offset_of!(Supplier, s_phone), 15),
                Datum::Int(max),
            ]
        },
    )?;
    sort(&mut rows, &[SortKey { col: 0, asc: true }]);
    Ok(rows)
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "WITH revenue0 AS (SELECT l_suppkey AS supplier_no, {} AS total_revenue \
         FROM lineitem WHERE l_shipdate >= {} AND l_shipdate < {} GROUP BY l_suppkey) \
         SELECT s_suppkey, s_name, s_address, s_phone, total_revenue \
         FROM supplier, revenue0 WHERE s_suppkey = supplier_no \
         AND total_revenue = (SELECT max(total_revenue) FROM revenue0) \
         ORDER BY s_suppkey",
        q.sum(&q.revenue()),
        p.date,
        super::add_months(p.date, 3),
    )
}

/// The reported rows: total_revenue in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[4])
}
