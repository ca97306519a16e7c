//! Q9, the product type profit measure query (clause 2.4.9): the profit on parts whose
//! name holds a colour, by supplier nation and year.

use super::HashMap;
use super::{i64c, scan_all, strc, u32c, Sql};
use crate::tpch::gen::P_NAME_WORDS;
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// COLOR: one of the words P_NAME is made of.
    pub color: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            color: super::pick(r, &P_NAME_WORDS).to_string(),
        }
    }

    pub fn validation() -> Params {
        Params {
            color: "green".into(),
        }
    }
}

/// Raw rows: nation, o_year, sum_profit (10^-4); by nation, latest year first.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let color = p.color.as_bytes();
    let parts = scan_all(
        s,
        PART,
        |r| {
            strc(r, offset_of!(Part, p_name), 55)
                .windows(color.len())
                .any(|w| w == color)
        },
        |r| vec![Datum::Int(u32c(r, offset_of!(Part, p_partkey)))],
    )?;
    let pk = super::ids(&parts, 0);
    let nations = super::by_key(super::nations(s, |_| true)?);
    // s_suppkey -> s_nationkey
    let supps: HashMap<i64, i64> = scan_all(
        s,
        SUPPLIER,
        |_| true,
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Supplier, s_suppkey))),
                Datum::Int(u32c(r, offset_of!(Supplier, s_nationkey))),
            ]
        },
    )?
    .into_iter()
    .map(|r| (r[0].int(), r[1].int()))
    .collect();
    // (ps_partkey, ps_suppkey) -> ps_supplycost, of the coloured parts.
    let cost: HashMap<(i64, i64), i64> = scan_all(
        s,
        PARTSUPP,
        |r| pk.contains(&u32c(r, offset_of!(PartSupp, ps_partkey))),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(PartSupp, ps_partkey))),
                Datum::Int(u32c(r, offset_of!(PartSupp, ps_suppkey))),
                Datum::Int(i64c(r, offset_of!(PartSupp, ps_supplycost))),
            ]
        },
    )?
    .into_iter()
    .map(|r| ((r[0].int(), r[1].int()), r[2].int()))
    .collect();
    // o_orderkey -> o_year, every order (on several query threads a map per part of
    // the keys, joined: no key is in two parts).
    let years = super::fold(
        s,
        ORDERS,
        |years: &mut HashMap<i64, i64>, r| {
            let d = u32c(r, offset_of!(Orders, o_orderdate));
            years.insert(i64c(r, offset_of!(Orders, o_orderkey)), super::year_of(d));
        },
        |years, part| years.extend(part),
    )?;
    // (nation, o_year, amount), summed inside LINEITEM's scan.
    let mut g = super::scan_agg(
        s,
        LINEITEM,
        |r| pk.contains(&u32c(r, offset_of!(Lineitem, l_partkey))),
        |r| {
            let (part, supp) = (
                u32c(r, offset_of!(Lineitem, l_partkey)),
                u32c(r, offset_of!(Lineitem, l_suppkey)),
            );
            let amount = super::line_revenue(r).int()
                - cost[&(part, supp)] * i64c(r, offset_of!(Lineitem, l_quantity));
            vec![
                nations[&supps[&supp]].clone(),
                Datum::Int(years[&i64c(r, offset_of!(Lineitem, l_orderkey))]),
                Datum::Int(amount),
            ]
        },
        2,
        &[Agg::Sum(Expr::col(2))],
    )?;
    sort(
        &mut g,
        &[
            SortKey { col: 0, asc: true },
            SortKey { col: 1, asc: false },
        ],
    );
    Ok(g)
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "SELECT n_name, {}, {} FROM part, supplier, lineitem, partsupp, orders, nation \
         WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey \
         AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey \
         AND {} GROUP BY 1, 2 ORDER BY 1, 2 DESC",
        q.year("o_orderdate"),
        q.sum(&format!(
            "{} - {} * {}",
            q.revenue(),
            q.m("ps_supplycost"),
            q.m("l_quantity")
        )),
        q.like("p_name", &format!("%{}%", p.color)),
    )
}

/// The reported rows: sum_profit in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[2])
}
