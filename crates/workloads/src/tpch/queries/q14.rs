//! Q14, the promotion effect query (clause 2.4.14): the share of a month's revenue
//! from promotional parts.

use super::{scan_all, strc, u32c, Sql};
use crate::tpch::gen::days_from_civil;
use crate::tpch::schema::{Lineitem, Part, LINEITEM, PART};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// DATE: the first day of a month of 1993 to 1997.
    pub date: u32,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            date: super::add_months(days_from_civil(1993, 1, 1), r.gen_range(0..60)),
        }
    }

    pub fn validation() -> Params {
        Params {
            date: days_from_civil(1995, 9, 1),
        }
    }
}

/// Raw row: the promotional revenue and all revenue (10^-4).
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (lo, hi) = (i64::from(p.date), i64::from(super::add_months(p.date, 1)));
    // The promotional parts' keys (a fifth of PART), then the month's line items folded
    // into the two sums inside LINEITEM's scan.
    let promo = scan_all(
        s,
        PART,
        |r| strc(r, offset_of!(Part, p_type), 25).starts_with(b"PROMO"),
        |r| vec![Datum::Int(u32c(r, offset_of!(Part, p_partkey)))],
    )?;
    let promo = super::ids(&promo, 0);
    super::scan_agg(
        s,
        LINEITEM,
        |r| (lo..hi).contains(&u32c(r, offset_of!(Lineitem, l_shipdate))),
        |r| {
            let is = promo.contains(&u32c(r, offset_of!(Lineitem, l_partkey)));
            vec![Datum::Int(i64::from(is)), super::line_revenue(r)]
        },
        0,
        &[
            Agg::Sum(Expr::col(1) * Expr::col(0)),
            Agg::Sum(Expr::col(1)),
        ],
    )
}

pub fn sql(q: Sql, p: &Params) -> String {
    let rev = q.revenue();
    format!(
        "SELECT {}, {} FROM lineitem, part \
         WHERE l_partkey = p_partkey AND l_shipdate >= {} AND l_shipdate < {}",
        q.sum(&format!(
            "CASE WHEN substr(p_type, 1, 5) = 'PROMO' THEN {rev} ELSE 0 END"
        )),
        q.sum(&rev),
        p.date,
        super::add_months(p.date, 1),
    )
}

/// The reported row: promo_revenue, the percentage in hundredths (100 x promo / all,
/// rounded half away from zero; 0 when the month sold nothing).
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    raw.into_iter()
        .map(|r| {
            let (promo, all) = (i128::from(r[0].int()), i128::from(r[1].int()));
            let pct = if all == 0 {
                0
            } else {
                // 100 x 100 x promo / all, rounded half away from zero (promo >= 0).
                (2 * 10_000 * promo + all) / (2 * all)
            };
            vec![Datum::Int(pct as i64)]
        })
        .collect()
}
