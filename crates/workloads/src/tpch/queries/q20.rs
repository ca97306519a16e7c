//! Q20, the potential part promotion query (clause 2.4.20): a nation's suppliers
//! holding more than half of what they shipped in a year of some part named after a
//! color.

use super::fold;
use super::sets::{each, nation_key};
use super::{i64c, jan1, lit, pick, scan_all, strc, text, u32c, Sql};
use super::{HashMap, HashSet};
use crate::tpch::gen::{NATIONS, P_NAME_WORDS};
use crate::tpch::schema::{Lineitem, Part, PartSupp, Supplier, LINEITEM, PART, PARTSUPP, SUPPLIER};
use api::{Reader, Result};
use exec::{sort, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// COLOR: one of the P_NAME words.
    pub color: String,
    /// DATE: January 1st of a year in 1993..=1997.
    pub date: u32,
    /// NATION: one of the 25 N_NAMEs.
    pub nation: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let color = pick(r, &P_NAME_WORDS).to_string();
        let date = jan1(r.gen_range(1993..=1997));
        let nation = NATIONS[r.gen_range(0..NATIONS.len())].0.to_string();
        Params {
            color,
            date,
            nation,
        }
    }

    pub fn validation() -> Params {
        Params {
            color: "forest".into(),
            date: jan1(1994),
            nation: "CANADA".into(),
        }
    }
}

/// Raw (and reported) rows: s_name, s_address, by name. A part-supplier pair qualifies
/// when `ps_availqty > 0.5 x sum(l_quantity)` of its lines shipped in the year, i.e.
/// `200 x ps_availqty > sum` in cents, and only when it has such lines (the
/// specification's subquery is NULL without them).
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let Some(nation) = nation_key(s, &p.nation)? else {
        return Ok(Vec::new());
    };
    let mut parts = HashSet::default();
    each(s, PART, |r| {
        if strc(r, offset_of!(Part, p_name), 55).starts_with(p.color.as_bytes()) {
            parts.insert(u32c(r, offset_of!(Part, p_partkey)));
        }
    })?;
    let (lo, hi) = (i64::from(p.date), i64::from(super::add_months(p.date, 12)));
    // (l_partkey, l_suppkey) -> sum(l_quantity) over the year
    // (on several query threads a map per part, added up)
    let shipped = super::fold(
        s,
        LINEITEM,
        |shipped: &mut HashMap<(i64, i64), i64>, r| {
            let part = u32c(r, offset_of!(Lineitem, l_partkey));
            if parts.contains(&part)
                && (lo..hi).contains(&u32c(r, offset_of!(Lineitem, l_shipdate)))
            {
                *shipped
                    .entry((part, u32c(r, offset_of!(Lineitem, l_suppkey))))
                    .or_default() += i64c(r, offset_of!(Lineitem, l_quantity));
            }
        },
        |shipped, part| {
            for (k, v) in part {
                *shipped.entry(k).or_default() += v;
            }
        },
    )?;
    let supps = fold(
        s,
        PARTSUPP,
        |supps: &mut HashSet<i64>, r| {
            let key = (
                u32c(r, offset_of!(PartSupp, ps_partkey)),
                u32c(r, offset_of!(PartSupp, ps_suppkey)),
            );
            if let Some(&sum) = shipped.get(&key) {
                if 200 * u32c(r, offset_of!(PartSupp, ps_availqty)) > sum {
                    supps.insert(key.1);
                }
            }
        },
        |supps, part| supps.extend(part),
    )?;
    let mut rows = scan_all(
        s,
        SUPPLIER,
        |r| {
            u32c(r, offset_of!(Supplier, s_nationkey)) == nation
                && supps.contains(&u32c(r, offset_of!(Supplier, s_suppkey)))
        },
        |r| {
            vec![
                text(r, offset_of!(Supplier, s_name), 25),
                text(r, offset_of!(Supplier, s_address), 40),
            ]
        },
    )?;
    sort(&mut rows, &[SortKey { col: 0, asc: true }]);
    Ok(rows)
}

pub fn sql(q: Sql, p: &Params) -> String {
    // The correlated sum as a derived table per (part, supplier) of the color's parts:
    // the inner join drops the pairs without lines, as the NULL comparison does.
    let colored = format!(
        "SELECT p_partkey FROM part WHERE substr(p_name, 1, {}) = {}",
        p.color.len(),
        lit(&p.color)
    );
    format!(
        "SELECT s_name, s_address FROM supplier, nation WHERE s_suppkey IN (\
         SELECT ps_suppkey FROM partsupp, \
         (SELECT l_partkey AS agg_partkey, l_suppkey AS agg_suppkey, {} AS agg_quantity \
         FROM lineitem WHERE l_shipdate >= {} AND l_shipdate < {} \
         AND l_partkey IN ({colored}) GROUP BY l_partkey, l_suppkey) AS agg \
         WHERE ps_partkey = agg_partkey AND ps_suppkey = agg_suppkey \
         AND ps_partkey IN ({colored}) AND 200 * ps_availqty > agg_quantity) \
         AND s_nationkey = n_nationkey AND n_name = {} ORDER BY s_name",
        q.sum(&q.m("l_quantity")),
        p.date,
        super::add_months(p.date, 12),
        lit(&p.nation),
    )
}
