//! Q12, the shipping modes and order priority query (clause 2.4.12): for two ship
//! modes, a year's late-received line items counted by high and low order priority.

use super::{i64c, jan1, lit, scan_all, strc, text, u32c, Sql};
use crate::tpch::gen::MODES;
use crate::tpch::schema::{Lineitem, Orders, LINEITEM, ORDERS};
use api::{Reader, Result};
use exec::{hash_aggregate, hash_join, sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// SHIPMODE1 and SHIPMODE2: two different modes.
    pub modes: [String; 2],
    /// DATE: January 1st of a year in 1993..=1997.
    pub date: u32,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let a = r.gen_range(0..MODES.len());
        // The second among the six others.
        let b = (a + r.gen_range(1..MODES.len())) % MODES.len();
        Params {
            modes: [MODES[a].to_string(), MODES[b].to_string()],
            date: jan1(r.gen_range(1993..=1997)),
        }
    }

    pub fn validation() -> Params {
        Params {
            modes: ["MAIL".into(), "SHIP".into()],
            date: jan1(1994),
        }
    }
}

/// Raw (and reported) rows: l_shipmode, high_line_count, low_line_count, by mode.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (lo, hi) = (i64::from(p.date), i64::from(super::add_months(p.date, 12)));
    let modes = [p.modes[0].as_bytes(), p.modes[1].as_bytes()];
    // (l_orderkey, l_shipmode)
    let lines = scan_all(
        s,
        LINEITEM,
        |r| {
            let ship = u32c(r, offset_of!(Lineitem, l_shipdate));
            let commit = u32c(r, offset_of!(Lineitem, l_commitdate));
            let receipt = u32c(r, offset_of!(Lineitem, l_receiptdate));
            commit < receipt
                && ship < commit
                && (lo..hi).contains(&receipt)
                && modes.contains(&strc(r, offset_of!(Lineitem, l_shipmode), 10))
        },
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Lineitem, l_orderkey))),
                text(r, offset_of!(Lineitem, l_shipmode), 10),
            ]
        },
    )?;
    let ok = super::ids(&lines, 0);
    // (o_orderkey, o_orderpriority)
    let orders = scan_all(
        s,
        ORDERS,
        |r| ok.contains(&i64c(r, offset_of!(Orders, o_orderkey))),
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Orders, o_orderkey))),
                text(r, offset_of!(Orders, o_orderpriority), 15),
            ]
        },
    )?;
    // (l_orderkey, l_shipmode, o_orderkey, o_orderpriority)
    let joined = hash_join(&orders, &[0], &lines, &[0]);
    let high = Expr::In(
        Box::new(Expr::col(3)),
        vec![
            Datum::Str(b"1-URGENT".to_vec()),
            Datum::Str(b"2-HIGH".to_vec()),
        ],
    );
    let count_if = |c: Expr| {
        Agg::Sum(Expr::If(
            Box::new(c),
            Box::new(Expr::Int(1)),
            Box::new(Expr::Int(0)),
        ))
    };
    let mut g = hash_aggregate(
        &joined,
        &[1],
        &[count_if(high.clone()), count_if(Expr::Not(Box::new(high)))],
    );
    sort(&mut g, &[SortKey { col: 0, asc: true }]);
    Ok(g)
}

pub fn sql(q: Sql, p: &Params) -> String {
    let high = "o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH'";
    format!(
        "SELECT l_shipmode, {}, {} FROM orders, lineitem \
         WHERE o_orderkey = l_orderkey AND l_shipmode IN ({}, {}) \
         AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate \
         AND l_receiptdate >= {} AND l_receiptdate < {} \
         GROUP BY l_shipmode ORDER BY l_shipmode",
        q.sum(&format!("CASE WHEN {high} THEN 1 ELSE 0 END")),
        q.sum(&format!("CASE WHEN NOT ({high}) THEN 1 ELSE 0 END")),
        lit(&p.modes[0]),
        lit(&p.modes[1]),
        p.date,
        super::add_months(p.date, 12),
    )
}
