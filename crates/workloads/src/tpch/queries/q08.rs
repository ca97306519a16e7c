//! Q8, the national market share query (clause 2.4.8): a nation's share of a region's
//! revenue from one part type in 1995 and 1996.

use super::HashMap;
use super::{i64c, lit, scan_all, strc, u32c, Sql};
use crate::tpch::gen::{days_from_civil, NATIONS, REGIONS, TYPE_S1, TYPE_S2, TYPE_S3};
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// NATION: an N_NAME.
    pub nation: String,
    /// REGION: NATION's region.
    pub region: String,
    /// TYPE: a P_TYPE of three syllables.
    pub type_: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let (nation, region) = NATIONS[r.gen_range(0..NATIONS.len())];
        let type_ = format!(
            "{} {} {}",
            super::pick(r, &TYPE_S1),
            super::pick(r, &TYPE_S2),
            super::pick(r, &TYPE_S3)
        );
        Params {
            nation: nation.to_string(),
            region: REGIONS[region as usize].to_string(),
            type_,
        }
    }

    pub fn validation() -> Params {
        Params {
            nation: "BRAZIL".into(),
            region: "AMERICA".into(),
            type_: "ECONOMY ANODIZED STEEL".into(),
        }
    }
}

/// 1995-01-01 and 1996-12-31, the order dates' bounds.
const FROM: u32 = days_from_civil(1995, 1, 1);
const TO: u32 = days_from_civil(1996, 12, 31);

/// Raw rows: o_year, the nation's revenue, all revenue (10^-4); by year.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let region = super::by_key(super::region_nations(s, &p.region)?);
    let nation = super::nations_named(s, std::slice::from_ref(&p.nation))?;
    let custs = scan_all(
        s,
        CUSTOMER,
        |r| region.contains_key(&u32c(r, offset_of!(Customer, c_nationkey))),
        |r| vec![Datum::Int(u32c(r, offset_of!(Customer, c_custkey)))],
    )?;
    let ck = super::ids(&custs, 0);
    let (lo, hi) = (i64::from(FROM), i64::from(TO));
    // o_orderkey -> o_year, of the region's customers' orders of the two years.
    let orders: HashMap<i64, i64> = scan_all(
        s,
        ORDERS,
        |r| {
            (lo..=hi).contains(&u32c(r, offset_of!(Orders, o_orderdate)))
                && ck.contains(&u32c(r, offset_of!(Orders, o_custkey)))
        },
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Orders, o_orderkey))),
                Datum::Int(super::year_of(u32c(r, offset_of!(Orders, o_orderdate)))),
            ]
        },
    )?
    .into_iter()
    .map(|r| (r[0].int(), r[1].int()))
    .collect();
    let ty = p.type_.as_bytes();
    let parts = scan_all(
        s,
        PART,
        |r| strc(r, offset_of!(Part, p_type), 25) == ty,
        |r| vec![Datum::Int(u32c(r, offset_of!(Part, p_partkey)))],
    )?;
    let pk = super::ids(&parts, 0);
    // The suppliers of NATION.
    let supps = scan_all(
        s,
        SUPPLIER,
        |r| nation.contains_key(&u32c(r, offset_of!(Supplier, s_nationkey))),
        |r| vec![Datum::Int(u32c(r, offset_of!(Supplier, s_suppkey)))],
    )?;
    let sk = super::ids(&supps, 0);
    // (o_year, volume if the supplier is NATION's else 0, volume), summed by year.
    let mut g = super::scan_agg(
        s,
        LINEITEM,
        |r| {
            pk.contains(&u32c(r, offset_of!(Lineitem, l_partkey)))
                && orders.contains_key(&i64c(r, offset_of!(Lineitem, l_orderkey)))
        },
        |r| {
            let rev = super::line_revenue(r);
            let ours = sk.contains(&u32c(r, offset_of!(Lineitem, l_suppkey)));
            vec![
                Datum::Int(orders[&i64c(r, offset_of!(Lineitem, l_orderkey))]),
                if ours { rev.clone() } else { Datum::Int(0) },
                rev,
            ]
        },
        1,
        &[Agg::Sum(Expr::col(1)), Agg::Sum(Expr::col(2))],
    )?;
    sort(&mut g, &[SortKey { col: 0, asc: true }]);
    Ok(g)
}

pub fn sql(q: Sql, p: &Params) -> String {
    let rev = q.revenue();
    format!(
        "SELECT {}, {}, {} \
         FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region \
         WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey \
         AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey \
         AND n1.n_regionkey = r_regionkey AND r_name = {} AND s_nationkey = n2.n_nationkey \
         AND o_orderdate BETWEEN {FROM} AND {TO} AND p_type = {} \
         GROUP BY 1 ORDER BY 1",
        q.year("o_orderdate"),
        q.sum(&format!(
            "CASE WHEN n2.n_name = {} THEN {rev} ELSE 0 END",
            lit(&p.nation)
        )),
        q.sum(&rev),
        lit(&p.region),
        lit(&p.type_),
    )
}

/// The reported rows: o_year, mkt_share in hundredths (the nation's revenue x 100 /
/// all, rounded half away from zero; a year is there only when it sold something).
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    raw.into_iter()
        .map(|r| {
            let (ours, all) = (i128::from(r[1].int()), i128::from(r[2].int()));
            vec![
                r[0].clone(),
                Datum::Int(((200 * ours + all) / (2 * all)) as i64),
            ]
        })
        .collect()
}
