//! Q7, the volume shipping query (clause 2.4.7): the revenue of goods shipped in 1995
//! and 1996 between two nations, each way, by year.

use super::HashMap;
use super::{i64c, lit, scan_all, u32c, Sql};
use crate::tpch::gen::{days_from_civil, NATIONS};
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// NATION1, NATION2: two different N_NAMEs.
    pub nations: [String; 2],
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let a = r.gen_range(0..NATIONS.len());
        // The second of the other 24.
        let b = (a + r.gen_range(1..NATIONS.len())) % NATIONS.len();
        Params {
            nations: [NATIONS[a].0.to_string(), NATIONS[b].0.to_string()],
        }
    }

    pub fn validation() -> Params {
        Params {
            nations: ["FRANCE".into(), "GERMANY".into()],
        }
    }
}

/// 1995-01-01 and 1996-12-31, the shipping dates' bounds.
const FROM: u32 = days_from_civil(1995, 1, 1);
const TO: u32 = days_from_civil(1996, 12, 31);

/// Raw rows: supp_nation, cust_nation, l_year, revenue (10^-4); by the first three.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let nations = super::nations_named(s, &p.nations)?;
    let key_to =
        |k: usize, n: usize| move |r: &[u8]| vec![Datum::Int(u32c(r, k)), Datum::Int(u32c(r, n))];
    let as_map = |rows: Vec<Row>| -> HashMap<i64, i64> {
        rows.into_iter().map(|r| (r[0].int(), r[1].int())).collect()
    };
    // s_suppkey -> s_nationkey, c_custkey -> c_nationkey, of the two nations.
    let (sk, sn) = (
        offset_of!(Supplier, s_suppkey),
        offset_of!(Supplier, s_nationkey),
    );
    let supps = as_map(scan_all(
        s,
        SUPPLIER,
        |r| nations.contains_key(&u32c(r, sn)),
        key_to(sk, sn),
    )?);
    let (ck, cn) = (
        offset_of!(Customer, c_custkey),
        offset_of!(Customer, c_nationkey),
    );
    let custs = as_map(scan_all(
        s,
        CUSTOMER,
        |r| nations.contains_key(&u32c(r, cn)),
        key_to(ck, cn),
    )?);
    // o_orderkey -> the customer's nation.
    let orders: HashMap<i64, i64> = scan_all(
        s,
        ORDERS,
        |r| custs.contains_key(&u32c(r, offset_of!(Orders, o_custkey))),
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Orders, o_orderkey))),
                Datum::Int(custs[&u32c(r, offset_of!(Orders, o_custkey))]),
            ]
        },
    )?
    .into_iter()
    .map(|r| (r[0].int(), r[1].int()))
    .collect();
    // The nations of a line item's supplier and customer, when they are the two.
    let ends = |r: &[u8]| -> Option<(i64, i64)> {
        let sup = *supps.get(&u32c(r, offset_of!(Lineitem, l_suppkey)))?;
        let cus = *orders.get(&i64c(r, offset_of!(Lineitem, l_orderkey)))?;
        (sup != cus).then_some((sup, cus))
    };
    let (lo, hi) = (i64::from(FROM), i64::from(TO));
    let mut g = super::scan_agg(
        s,
        LINEITEM,
        |r| (lo..=hi).contains(&u32c(r, offset_of!(Lineitem, l_shipdate))) && ends(r).is_some(),
        |r| {
            let (sup, cus) = ends(r).expect("kept lines have both ends");
            vec![
                nations[&sup].clone(),
                nations[&cus].clone(),
                Datum::Int(super::year_of(u32c(r, offset_of!(Lineitem, l_shipdate)))),
                super::line_revenue(r),
            ]
        },
        3,
        &[Agg::Sum(Expr::col(3))],
    )?;
    let by = |col| SortKey { col, asc: true };
    sort(&mut g, &[by(0), by(1), by(2)]);
    Ok(g)
}

pub fn sql(q: Sql, p: &Params) -> String {
    let (a, b) = (lit(&p.nations[0]), lit(&p.nations[1]));
    format!(
        "SELECT n1.n_name, n2.n_name, {}, {} \
         FROM supplier, lineitem, orders, customer, nation n1, nation n2 \
         WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey \
         AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey \
         AND ((n1.n_name = {a} AND n2.n_name = {b}) OR (n1.n_name = {b} AND n2.n_name = {a})) \
         AND l_shipdate BETWEEN {FROM} AND {TO} \
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        q.year("l_shipdate"),
        q.sum(&q.revenue()),
    )
}

/// The reported rows: revenue in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[3])
}
