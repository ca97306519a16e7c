//! Q1, the pricing summary report (clause 2.4.1): line items shipped up to DELTA days
//! before 1998-12-01, summed by return flag and line status.

use super::{i64c, revenue, strc, to_cents, u32c, Sql};
use crate::tpch::gen::days_from_civil;
use crate::tpch::schema::{Lineitem, LINEITEM};
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// DELTA: 60 to 120 days.
    pub delta: u32,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            delta: r.gen_range(60..=120),
        }
    }

    pub fn validation() -> Params {
        Params { delta: 90 }
    }

    fn cutoff(&self) -> u32 {
        days_from_civil(1998, 12, 1) - self.delta
    }
}

/// Raw rows: flag, status, sum(qty), sum(price), sum(disc_price) (10^-4),
/// sum(charge) (10^-6), sum(discount), count.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let cut = i64::from(p.cutoff());
    let mut g = super::scan_agg(
        s,
        LINEITEM,
        |r| u32c(r, offset_of!(Lineitem, l_shipdate)) <= cut,
        |r| {
            let ep = i64c(r, offset_of!(Lineitem, l_extendedprice));
            let disc = i64c(r, offset_of!(Lineitem, l_discount));
            let tax = i64c(r, offset_of!(Lineitem, l_tax));
            vec![
                Datum::Str(strc(r, offset_of!(Lineitem, l_returnflag), 1).to_vec()),
                Datum::Str(strc(r, offset_of!(Lineitem, l_linestatus), 1).to_vec()),
                Datum::Int(i64c(r, offset_of!(Lineitem, l_quantity))),
                Datum::Int(ep),
                Datum::Int(revenue(ep, disc)),
                Datum::Int(revenue(ep, disc) * (100 + tax)),
                Datum::Int(disc),
            ]
        },
        2,
        &[
            Agg::Sum(Expr::col(2)),
            Agg::Sum(Expr::col(3)),
            Agg::Sum(Expr::col(4)),
            Agg::Sum(Expr::col(5)),
            Agg::Sum(Expr::col(6)),
            Agg::Count,
        ],
    )?;
    sort(
        &mut g,
        &[SortKey { col: 0, asc: true }, SortKey { col: 1, asc: true }],
    );
    Ok(g)
}

pub fn sql(q: Sql, p: &Params) -> String {
    let rev = q.revenue();
    format!(
        "SELECT l_returnflag, l_linestatus, {}, {}, {}, {}, {}, count(*) \
         FROM lineitem WHERE l_shipdate <= {} \
         GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus",
        q.sum(&q.m("l_quantity")),
        q.sum(&q.m("l_extendedprice")),
        q.sum(&rev),
        q.sum(&format!("{rev} * (100 + {})", q.m("l_tax"))),
        q.sum(&q.m("l_discount")),
        p.cutoff(),
    )
}

/// The reported rows: flag, status, sum_qty, sum_base_price, sum_disc_price,
/// sum_charge, avg_qty, avg_price, avg_disc (all in cents), count_order.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    raw.into_iter()
        .map(|r| {
            let n = r[7].int();
            let avg = |c: usize| Datum::Int(exec::expr::div_round(r[c].int(), n));
            vec![
                r[0].clone(),
                r[1].clone(),
                r[2].clone(),
                r[3].clone(),
                to_cents(&r[4], 4),
                to_cents(&r[5], 6),
                avg(2),
                avg(3),
                avg(6),
                r[7].clone(),
            ]
        })
        .collect()
}
