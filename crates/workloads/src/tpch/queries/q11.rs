//! Q11, the important stock identification query (clause 2.4.11): the parts whose
//! stock at a nation's suppliers is worth more than a fraction of all its stock.

use super::HashSet;
use super::{i64c, lit, u32c, Sql};
use crate::tpch::gen::NATIONS;
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

/// FRACTION is 0.0001 / SF (clause 2.4.11.3), and SUPPLIER holds 10,000 x SF rows, so
/// FRACTION = 1 / |SUPPLIER|: plan and SQL text count the suppliers instead of taking
/// the scale factor as a parameter (`value > total x FRACTION` is `value x |SUPPLIER| >
/// total`, exact in integers).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// NATION: an N_NAME.
    pub nation: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            nation: NATIONS[r.gen_range(0..NATIONS.len())].0.to_string(),
        }
    }

    pub fn validation() -> Params {
        Params {
            nation: "GERMANY".into(),
        }
    }
}

/// Raw rows: ps_partkey, value (cents); value descending (ties by part key).
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let nation = super::nations_named(s, std::slice::from_ref(&p.nation))?;
    let (mut ours, mut suppliers) = (HashSet::default(), 0i64);
    exec::scan_each(
        s,
        SUPPLIER.primary(),
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        |r| {
            suppliers += 1;
            if nation.contains_key(&u32c(r, offset_of!(Supplier, s_nationkey))) {
                ours.insert(u32c(r, offset_of!(Supplier, s_suppkey)));
            }
        },
    )?;
    // (ps_partkey, sum(ps_supplycost x ps_availqty)) over the nation's suppliers.
    let values = super::scan_agg(
        s,
        PARTSUPP,
        |r| ours.contains(&u32c(r, offset_of!(PartSupp, ps_suppkey))),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(PartSupp, ps_partkey))),
                Datum::Int(
                    i64c(r, offset_of!(PartSupp, ps_supplycost))
                        * u32c(r, offset_of!(PartSupp, ps_availqty)),
                ),
            ]
        },
        1,
        &[Agg::Sum(Expr::col(1))],
    )?;
    let total: i64 = values.iter().map(|r| r[1].int()).sum();
    let mut kept: Vec<Row> = values
        .into_iter()
        .filter(|r| r[1].int() * suppliers > total)
        .collect();
    sort(
        &mut kept,
        &[
            SortKey { col: 1, asc: false },
            SortKey { col: 0, asc: true },
        ],
    );
    Ok(kept)
}

pub fn sql(q: Sql, p: &Params) -> String {
    let value = format!("{} * ps_availqty", q.m("ps_supplycost"));
    let from = format!(
        "FROM partsupp, supplier, nation WHERE ps_suppkey = s_suppkey \
         AND s_nationkey = n_nationkey AND n_name = {}",
        lit(&p.nation)
    );
    format!(
        "SELECT ps_partkey, {} {from} GROUP BY ps_partkey \
         HAVING sum({value}) * (SELECT count(*) FROM supplier) > (SELECT sum({value}) {from}) \
         ORDER BY 2 DESC, 1",
        q.sum(&value),
    )
}
