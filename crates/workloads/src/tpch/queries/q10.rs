//! Q10, the returned item reporting query (clause 2.4.10): the twenty customers whose
//! returned items of a quarter's orders lost the most revenue.

use super::{i64c, scan_all, strc, text, u32c, Sql};
use crate::tpch::gen::days_from_civil;
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{hash_aggregate, hash_join, top_n, Agg, Datum, Expr, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// DATE: the first day of a month from February 1993 to January 1995.
    pub date: u32,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            date: super::add_months(days_from_civil(1993, 2, 1), r.gen_range(0..24)),
        }
    }

    pub fn validation() -> Params {
        Params {
            date: days_from_civil(1993, 10, 1),
        }
    }
}

/// Raw rows: c_custkey, c_name, revenue (10^-4), c_acctbal, n_name, c_address,
/// c_phone, c_comment; revenue descending (ties by customer key); twenty.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let (lo, hi) = (i64::from(p.date), i64::from(super::add_months(p.date, 3)));
    // (o_orderkey, o_custkey)
    let orders = scan_all(
        s,
        ORDERS,
        |r| (lo..hi).contains(&u32c(r, offset_of!(Orders, o_orderdate))),
        |r| {
            vec![
                Datum::Int(i64c(r, offset_of!(Orders, o_orderkey))),
                Datum::Int(u32c(r, offset_of!(Orders, o_custkey))),
            ]
        },
    )?;
    // (l_orderkey, revenue)
    let lines = super::order_revenue(s, &super::ids(&orders, 0), |r| {
        strc(r, offset_of!(Lineitem, l_returnflag), 1) == b"R"
    })?;
    // (l_orderkey, revenue, o_orderkey, o_custkey) -> (o_custkey, revenue)
    let joined = hash_join(&orders, &[0], &lines, &[0]);
    let by_cust = hash_aggregate(&joined, &[3], &[Agg::Sum(Expr::col(1))]);
    let top = top_n(
        by_cust,
        &[
            SortKey { col: 1, asc: false },
            SortKey { col: 0, asc: true },
        ],
        20,
    );
    let ck = super::ids(&top, 0);
    // (c_custkey, c_name, c_acctbal, c_nationkey, c_address, c_phone, c_comment)
    let custs = scan_all(
        s,
        CUSTOMER,
        |r| ck.contains(&u32c(r, offset_of!(Customer, c_custkey))),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Customer, c_custkey))),
                text(r, offset_of!(Customer, c_name), 25),
                Datum::Int(i64c(r, offset_of!(Customer, c_acctbal))),
                Datum::Int(u32c(r, offset_of!(Customer, c_nationkey))),
                text(r, offset_of!(Customer, c_address), 40),
                text(r, offset_of!(Customer, c_phone), 15),
                text(r, offset_of!(Customer, c_comment), 117),
            ]
        },
    )?;
    // (n_nationkey, n_name)
    let nations = super::nations(s, |_| true)?;
    // top (2) ++ customer (7) ++ nation (2), in the top's order.
    let tc = hash_join(&custs, &[0], &top, &[0]);
    let all = hash_join(&nations, &[0], &tc, &[5]);
    Ok(super::sets::columns(all, &[0, 3, 1, 4, 10, 6, 7, 8]))
}

pub fn sql(q: Sql, p: &Params) -> String {
    format!(
        "SELECT c_custkey, c_name, {} AS revenue, {}, n_name, c_address, c_phone, c_comment \
         FROM customer, orders, lineitem, nation \
         WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey \
         AND o_orderdate >= {} AND o_orderdate < {} AND l_returnflag = 'R' \
         AND c_nationkey = n_nationkey \
         GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment \
         ORDER BY revenue DESC, c_custkey LIMIT 20",
        q.sum(&q.revenue()),
        q.m("c_acctbal"),
        p.date,
        super::add_months(p.date, 3),
    )
}

/// The reported rows: revenue in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[2])
}
