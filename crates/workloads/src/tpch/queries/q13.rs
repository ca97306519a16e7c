//! Q13, the customer distribution query (clause 2.4.13): how many customers have how
//! many orders, not counting orders whose comment mentions WORD1 then WORD2.

use super::sets::contains_in_order;
use super::{pick, strc, u32c, Sql};
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{sort, Agg, Datum, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// WORD1: special, pending, unusual or express.
    pub word1: String,
    /// WORD2: packages, requests, accounts or deposits.
    pub word2: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            word1: pick(r, &["special", "pending", "unusual", "express"]).to_string(),
            word2: pick(r, &["packages", "requests", "accounts", "deposits"]).to_string(),
        }
    }

    pub fn validation() -> Params {
        Params {
            word1: "special".into(),
            word2: "requests".into(),
        }
    }
}

/// Raw rows: c_count, custdist; custdist descending, then c_count descending.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (a, b) = (p.word1.as_bytes(), p.word2.as_bytes());
    // o_custkey -> the number of its orders that count.
    let orders = super::sets::sum_by(s, ORDERS, |r| {
        (!contains_in_order(strc(r, offset_of!(Orders, o_comment), 79), a, b))
            .then(|| (u32c(r, offset_of!(Orders, o_custkey)), 1))
    })?;
    // Every customer (the outer join), by its count.
    let mut g = super::scan_agg(
        s,
        CUSTOMER,
        |_| true,
        |r| {
            let c = u32c(r, offset_of!(Customer, c_custkey));
            vec![Datum::Int(orders.get(&c).copied().unwrap_or(0))]
        },
        1,
        &[Agg::Count],
    )?;
    sort(
        &mut g,
        &[
            SortKey { col: 1, asc: false },
            SortKey { col: 0, asc: false },
        ],
    );
    Ok(g)
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "SELECT c_count, count(*) AS custdist FROM (SELECT c_custkey, count(o_orderkey) AS c_count \
         FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND NOT ({}) \
         GROUP BY c_custkey) AS c_orders \
         GROUP BY c_count ORDER BY custdist DESC, c_count DESC",
        q.like("o_comment", &format!("%{}%{}%", p.word1, p.word2)),
    )
}
