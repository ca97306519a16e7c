//! Q4, the order priority checking query (clause 2.4.4): the orders of a quarter with
//! at least one line item received after its commit date, counted by priority.

use super::HashSet;
use super::{i64c, scan_all, text, u32c, Sql};
use crate::tpch::gen::days_from_civil;
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Row, SortKey};
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
            date: days_from_civil(1993, 7, 1),
        }
    }
}

/// Raw rows: o_orderpriority, order_count; by priority.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (lo, hi) = (i64::from(p.date), i64::from(super::add_months(p.date, 3)));
    // (o_orderkey, o_orderpriority)
    let orders = scan_all(
        s,
        ORDERS,
        |r| (lo..hi).contains(&u32c(r, offset_of!(Orders, o_orderdate))),
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Orders, o_orderkey))),
                text(r, offset_of!(Orders, o_orderpriority), 15),
            ]
        },
    )?;
    let ok = super::ids(&orders, 0);
    // The EXISTS: the quarter's orders with a late line item, gathered in LINEITEM's
    // scan (on several query threads a set per part, joined).
    let late = super::fold(
        s,
        LINEITEM,
        |late: &mut HashSet<i64>, r| {
            let o = i64c(r, offset_of!(Lineitem, l_orderkey));
            if u32c(r, offset_of!(Lineitem, l_commitdate))
                < u32c(r, offset_of!(Lineitem, l_receiptdate))
                && ok.contains(&o)
            {
                late.insert(o);
            }
        },
        |late, part| late.extend(part),
    )?;
    let mut a = exec::Aggregator::new(1, &[Agg::Count]);
    for o in orders.iter().filter(|o| late.contains(&o[0].int())) {
        a.add(&o[1..], o);
    }
    let mut g = a.finish();
    sort(&mut g, &[SortKey { col: 0, asc: true }]);
    Ok(g)
}

pub fn sql(_q: Sql, p: &Params) -> String {
    format!(
        "SELECT o_orderpriority, count(*) FROM orders \
         WHERE o_orderdate >= {} AND o_orderdate < {} AND EXISTS (SELECT * FROM lineitem \
         WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) \
         GROUP BY o_orderpriority ORDER BY o_orderpriority",
        p.date,
        super::add_months(p.date, 3),
    )
}
