//! Q5, the local supplier volume query (clause 2.4.5): a region's revenue by nation
//! over a year, from line items whose customer and supplier share the nation.

use super::ids;
use super::{i64c, jan1, lit, pick, scan_all, u32c, Sql};
use crate::tpch::gen::REGIONS;
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{hash_aggregate, hash_join, sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// REGION: one of the five R_NAMEs.
    pub region: String,
    /// DATE: January 1st of a year in 1993..=1997.
    pub date: u32,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            region: pick(r, &REGIONS).to_string(),
            date: jan1(r.gen_range(1993..=1997)),
        }
    }

    pub fn validation() -> Params {
        Params {
            region: "ASIA".into(),
            date: jan1(1994),
        }
    }
}

/// Raw rows: n_name, revenue (10^-4); revenue descending (ties by name).
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (lo, hi) = (i64::from(p.date), i64::from(super::add_months(p.date, 12)));
    // (n_nationkey, n_name)
    let nations = super::region_nations(s, &p.region)?;
    let nk = ids(&nations, 0);
    // (c_custkey, c_nationkey)
    let custs = scan_all(
        s,
        CUSTOMER,
        |r| nk.contains(&u32c(r, offset_of!(Customer, c_nationkey))),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Customer, c_custkey))),
                Datum::Int(u32c(r, offset_of!(Customer, c_nationkey))),
            ]
        },
    )?;
    let ck = ids(&custs, 0);
    // (o_orderkey, o_custkey)
    let orders = scan_all(
        s,
        ORDERS,
        |r| {
            (lo..hi).contains(&u32c(r, offset_of!(Orders, o_orderdate)))
                && ck.contains(&u32c(r, offset_of!(Orders, o_custkey)))
        },
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Orders, o_orderkey))),
                Datum::Int(u32c(r, offset_of!(Orders, o_custkey))),
            ]
        },
    )?;
    // (o_orderkey, o_custkey, c_custkey, c_nationkey)
    let oc = hash_join(&custs, &[0], &orders, &[1]);
    let ok = ids(&oc, 0);
    // (s_suppkey, s_nationkey)
    let supps = scan_all(
        s,
        SUPPLIER,
        |r| nk.contains(&u32c(r, offset_of!(Supplier, s_nationkey))),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Supplier, s_suppkey))),
                Datum::Int(u32c(r, offset_of!(Supplier, s_nationkey))),
            ]
        },
    )?;
    let sk = ids(&supps, 0);
    // (l_orderkey, l_suppkey, revenue)
    let lines = scan_all(
        s,
        LINEITEM,
        |r| {
            ok.contains(&i64c(r, offset_of!(Lineitem, l_orderkey)))
                && sk.contains(&u32c(r, offset_of!(Lineitem, l_suppkey)))
        },
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Lineitem, l_orderkey))),
                Datum::Int(u32c(r, offset_of!(Lineitem, l_suppkey))),
                super::line_revenue(r),
            ]
        },
    )?;
    // (l_orderkey, l_suppkey, revenue, o_orderkey, o_custkey, c_custkey, c_nationkey)
    let lo_ = hash_join(&oc, &[0], &lines, &[0]);
    // ... + (s_suppkey, s_nationkey): the supplier of the customer's nation only.
    let los = hash_join(&supps, &[0, 1], &lo_, &[1, 6]);
    // ... + (n_nationkey, n_name) at 9, 10.
    let named = hash_join(&nations, &[0], &los, &[6]);
    let mut g = hash_aggregate(&named, &[10], &[Agg::Sum(Expr::col(2))]);
    sort(
        &mut g,
        &[
            SortKey { col: 1, asc: false },
            SortKey { col: 0, asc: true },
        ],
    );
    Ok(g)
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "SELECT n_name, {} AS revenue \
         FROM customer, orders, lineitem, supplier, nation, region \
         WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey \
         AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey \
         AND n_regionkey = r_regionkey AND r_name = {} \
         AND o_orderdate >= {} AND o_orderdate < {} \
         GROUP BY n_name ORDER BY revenue DESC, n_name",
        q.sum(&q.revenue()),
        lit(&p.region),
        p.date,
        super::add_months(p.date, 12),
    )
}

/// The reported rows: revenue in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[1])
}
