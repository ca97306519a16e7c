//! Q18, the large volume customer query (clause 2.4.18): the hundred orders whose line
//! items' quantities add up to more than QUANTITY, with their customers.

use super::{i64c, scan_all, text, u32c, Sql};
use crate::tpch::schema::{Customer, Lineitem, Orders, CUSTOMER, LINEITEM, ORDERS};
use api::{Reader, Result};
use exec::{hash_join, top_n, Datum, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// QUANTITY: 312..=315.
    pub quantity: i64,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            quantity: r.gen_range(312..=315),
        }
    }

    pub fn validation() -> Params {
        Params { quantity: 300 }
    }
}

/// Raw (and reported) rows: c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice,
/// sum(l_quantity) (cents); o_totalprice descending, then o_orderdate (ties by order
/// key); a hundred.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    // l_orderkey -> sum(l_quantity), every order's.
    let mut qty = super::sets::sum_by(s, LINEITEM, |r| {
        Some((
            i64c(r, offset_of!(Lineitem, l_orderkey)),
            i64c(r, offset_of!(Lineitem, l_quantity)),
        ))
    })?;
    qty.retain(|_, q| *q > p.quantity * 100);
    // (o_orderkey, o_custkey, o_orderdate, o_totalprice, sum)
    let orders = scan_all(
        s,
        ORDERS,
        |r| qty.contains_key(&i64c(r, offset_of!(Orders, o_orderkey))),
        |r| {
            let key = i64c(r, offset_of!(Orders, o_orderkey));
            vec![
                Datum::Int(key),
                Datum::Int(u32c(r, offset_of!(Orders, o_custkey))),
                Datum::Int(u32c(r, offset_of!(Orders, o_orderdate))),
                Datum::Int(i64c(r, offset_of!(Orders, o_totalprice))),
                Datum::Int(qty[&key]),
            ]
        },
    )?;
    let ck = super::ids(&orders, 1);
    // (c_custkey, c_name)
    let custs = scan_all(
        s,
        CUSTOMER,
        |r| ck.contains(&u32c(r, offset_of!(Customer, c_custkey))),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Customer, c_custkey))),
                text(r, offset_of!(Customer, c_name), 25),
            ]
        },
    )?;
    // orders (5) ++ customer (2)
    let joined = hash_join(&custs, &[0], &orders, &[1]);
    let top = top_n(
        joined,
        &[
            SortKey { col: 3, asc: false },
            SortKey { col: 2, asc: true },
            SortKey { col: 0, asc: true },
        ],
        100,
    );
    Ok(super::sets::columns(top, &[6, 1, 0, 2, 3, 4]))
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "SELECT c_name, c_custkey, o_orderkey, o_orderdate, {}, {} \
         FROM customer, orders, lineitem \
         WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey \
         HAVING {} > {}) \
         AND c_custkey = o_custkey AND o_orderkey = l_orderkey \
         GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice \
         ORDER BY o_totalprice DESC, o_orderdate, o_orderkey LIMIT 100",
        q.m("o_totalprice"),
        q.sum(&q.m("l_quantity")),
        q.sum(&q.m("l_quantity")),
        p.quantity * 100,
    )
}
