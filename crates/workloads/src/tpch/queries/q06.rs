//! Q6, the forecasting revenue change (clause 2.4.6): the revenue a discount band of a
//! year's small line items brought.

use super::{i64c, jan1, u32c, Sql};
use crate::tpch::schema::{Lineitem, LINEITEM};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// DATE: January 1st of a year in 1993..=1997 (day number).
    pub date: u32,
    /// DISCOUNT: 0.02 to 0.09, in cents.
    pub discount: i64,
    /// QUANTITY: 24 or 25.
    pub quantity: i64,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            date: jan1(r.gen_range(1993..=1997)),
            discount: r.gen_range(2..=9),
            quantity: r.gen_range(24..=25),
        }
    }

    pub fn validation() -> Params {
        Params {
            date: jan1(1994),
            discount: 6,
            quantity: 24,
        }
    }

    fn end(&self) -> u32 {
        super::add_months(self.date, 12)
    }
}

/// Raw rows: one, sum(l_extendedprice x l_discount) in 10^-4 units.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (lo, hi) = (i64::from(p.date), i64::from(p.end()));
    let (dlo, dhi, qty) = (p.discount - 1, p.discount + 1, p.quantity * 100);
    super::scan_agg(
        s,
        LINEITEM,
        |r| {
            let d = u32c(r, offset_of!(Lineitem, l_shipdate));
            let disc = i64c(r, offset_of!(Lineitem, l_discount));
            (lo..hi).contains(&d)
                && (dlo..=dhi).contains(&disc)
                && i64c(r, offset_of!(Lineitem, l_quantity)) < qty
        },
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Lineitem, l_extendedprice))),
                Datum::Int(i64c(r, offset_of!(Lineitem, l_discount))),
            ]
        },
        0,
        &[Agg::Sum(Expr::col(0) * Expr::col(1))],
    )
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "SELECT {} FROM lineitem WHERE l_shipdate >= {} AND l_shipdate < {} \
         AND {} BETWEEN {} AND {} AND {} < {}",
        q.sum(&format!(
            "{} * {}",
            q.m("l_extendedprice"),
            q.m("l_discount")
        )),
        p.date,
        p.end(),
        q.m("l_discount"),
        p.discount - 1,
        p.discount + 1,
        q.m("l_quantity"),
        p.quantity * 100,
    )
}

/// The reported row: revenue in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[0])
}
