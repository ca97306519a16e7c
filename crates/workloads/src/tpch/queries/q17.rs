//! Q17, the small-quantity-order revenue query (clause 2.4.17): the yearly revenue lost
//! if the orders of a brand and container's parts below a fifth of the part's average
//! quantity were no longer taken.

use super::sets::each;
use super::{i64c, lit, pick, strc, u32c, Sql};
use super::{HashMap, HashSet};
use crate::tpch::gen::{CONTAINER_S1, CONTAINER_S2};
use crate::tpch::schema::{Lineitem, Part, LINEITEM, PART};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// BRAND: `Brand#MN`, M and N in 1..=5.
    pub brand: String,
    /// CONTAINER: a P_CONTAINER's two syllables (`MED BOX`).
    pub container: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let brand = format!("Brand#{}{}", r.gen_range(1..=5), r.gen_range(1..=5));
        let container = format!("{} {}", pick(r, &CONTAINER_S1), pick(r, &CONTAINER_S2));
        Params { brand, container }
    }

    pub fn validation() -> Params {
        Params {
            brand: "Brand#23".into(),
            container: "MED BOX".into(),
        }
    }
}

/// Raw row: sum(l_extendedprice) in cents of the small-quantity lines. A line is small
/// when `l_quantity < 0.2 x avg`, i.e. `5 x l_quantity x count < sum` (exact).
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let mut parts = HashSet::default();
    each(s, PART, |r| {
        if strc(r, offset_of!(Part, p_brand), 10) == p.brand.as_bytes()
            && strc(r, offset_of!(Part, p_container), 10) == p.container.as_bytes()
        {
            parts.insert(u32c(r, offset_of!(Part, p_partkey)));
        }
    })?;
    // The parts' lines: (l_partkey, l_quantity, l_extendedprice).
    // (On several query threads a list per part, concatenated in key order: the
    // serial scan's list.)
    let lines = super::fold(
        s,
        LINEITEM,
        |lines: &mut Vec<(i64, i64, i64)>, r| {
            let part = u32c(r, offset_of!(Lineitem, l_partkey));
            if parts.contains(&part) {
                lines.push((
                    part,
                    i64c(r, offset_of!(Lineitem, l_quantity)),
                    i64c(r, offset_of!(Lineitem, l_extendedprice)),
                ));
            }
        },
        |lines, part| lines.extend(part),
    )?;
    // l_partkey -> (sum of quantities, count)
    let mut avg: HashMap<i64, (i64, i64)> = HashMap::default();
    for &(part, qty, _) in &lines {
        let a = avg.entry(part).or_default();
        a.0 += qty;
        a.1 += 1;
    }
    let sum: i64 = lines
        .iter()
        .filter(|(part, qty, _)| {
            let (total, n) = avg[part];
            5 * qty * n < total
        })
        .map(|l| l.2)
        .sum();
    Ok(vec![vec![Datum::Int(sum)]])
}

pub fn sql(q: Sql, p: &Params) -> String {
    // The correlated average as a derived table per part (the same rows).
    let parts = format!(
        "p_brand = {} AND p_container = {}",
        lit(&p.brand),
        lit(&p.container)
    );
    format!(
        "SELECT {} FROM lineitem, part, \
         (SELECT l_partkey AS agg_partkey, {} AS agg_sum, count(*) AS agg_n FROM lineitem \
         WHERE l_partkey IN (SELECT p_partkey FROM part WHERE {parts}) GROUP BY l_partkey) AS agg \
         WHERE p_partkey = l_partkey AND agg_partkey = l_partkey AND {parts} \
         AND 5 * {} * agg_n < agg_sum",
        q.sum(&q.m("l_extendedprice")),
        q.sum(&q.m("l_quantity")),
        q.m("l_quantity"),
    )
}

/// The reported row: avg_yearly = sum / 7.0 in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    raw.into_iter()
        .map(|r| vec![Datum::Int(exec::expr::div_round(r[0].int(), 7))])
        .collect()
}
