//! Q22, the global sales opportunity query (clause 2.4.22): by country code, the
//! customers of seven countries who have placed no order and whose balance is above
//! the average of those countries' positive balances.

use super::fold;
use super::sets::each;
use super::{i64c, lit, u32c, Sql};
use super::{HashMap, HashSet};
use crate::tpch::schema::{Customer, Orders, CUSTOMER, ORDERS};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::BTreeMap;
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// I1..I7: seven different country codes (a nation key + 10, so 10..=34).
    pub codes: [String; 7],
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let mut codes: [String; 7] = Default::default();
        for (c, i) in codes.iter_mut().zip(rand::seq::index::sample(r, 25, 7)) {
            *c = (i + 10).to_string();
        }
        Params { codes }
    }

    pub fn validation() -> Params {
        Params {
            codes: ["13", "31", "23", "29", "30", "18", "17"].map(String::from),
        }
    }
}

/// The customer's country code, if one of `p`'s.
fn code<'p>(p: &'p Params, r: &[u8]) -> Option<&'p str> {
    let phone = &r[offset_of!(Customer, c_phone)..][..2];
    p.codes
        .iter()
        .find(|c| c.as_bytes() == phone)
        .map(String::as_str)
}

/// Raw (and reported) rows: cntrycode, numcust, totacctbal (cents), by code. Above
/// the average: `c_acctbal x count > sum` (exact).
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let bal = |r: &[u8]| i64c(r, offset_of!(Customer, c_acctbal));
    let (mut sum, mut n) = (0, 0);
    each(s, CUSTOMER, |r| {
        if bal(r) > 0 && code(p, r).is_some() {
            sum += bal(r);
            n += 1;
        }
    })?;
    // c_custkey -> (code, balance) of the customers above the average.
    let mut rich: HashMap<i64, (&str, i64)> = HashMap::default();
    each(s, CUSTOMER, |r| {
        if let Some(c) = code(p, r) {
            if bal(r) * n > sum {
                rich.insert(u32c(r, offset_of!(Customer, c_custkey)), (c, bal(r)));
            }
        }
    })?;
    // NOT EXISTS: the customers with an order leave (those of `rich` that ordered,
    // found on the query's threads).
    let ordered = fold(
        s,
        ORDERS,
        |seen: &mut HashSet<i64>, r| {
            let c = u32c(r, offset_of!(Orders, o_custkey));
            if rich.contains_key(&c) {
                seen.insert(c);
            }
        },
        |seen, part| seen.extend(part),
    )?;
    rich.retain(|c, _| !ordered.contains(c));
    let mut by_code: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for (c, b) in rich.into_values() {
        let g = by_code.entry(c).or_default();
        g.0 += 1;
        g.1 += b;
    }
    Ok(by_code
        .into_iter()
        .map(|(c, (n, b))| {
            vec![
                Datum::Str(c.as_bytes().to_vec()),
                Datum::Int(n),
                Datum::Int(b),
            ]
        })
        .collect())
}

pub fn sql(q: Sql, p: &Params) -> String {
    let codes: Vec<String> = p.codes.iter().map(|c| lit(c)).collect();
    let codes = codes.join(", ");
    format!(
        "SELECT substr(c_phone, 1, 2) AS cntrycode, count(*), {} \
         FROM customer, (SELECT {} AS avg_sum, count(*) AS avg_n FROM customer \
         WHERE c_acctbal > 0 AND substr(c_phone, 1, 2) IN ({codes})) AS a \
         WHERE substr(c_phone, 1, 2) IN ({codes}) AND {} * avg_n > avg_sum \
         AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey) \
         GROUP BY cntrycode ORDER BY cntrycode",
        q.sum(&q.m("c_acctbal")),
        q.sum(&q.m("c_acctbal")),
        q.m("c_acctbal"),
    )
}
