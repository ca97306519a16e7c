//! Q22: customers whose phone begins with 1 to 7, whose balance exceeds the average
//! positive balance of such customers, and who have no order, counted and their
//! balances summed by C_STATE's first letter.

use super::{i64c, Sql};
use crate::tpcc::schema::{Customer, CUSTOMER, ORDER};
use api::{Reader, Result};
use exec::{Datum, Row};
use std::collections::{BTreeMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: country (one character), numcust, totacctbal (cents); by country.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    // ORDER before CUSTOMER, the order Delivery locks them in (a two-phase locking
    // engine's query reading them the other way deadlocks with it): the customers
    // with an order, the NOT EXISTS's hash set.
    let mut ordered: HashSet<i64> = HashSet::new();
    exec::scan_each(s, ORDER.primary(), Unbounded, Unbounded, |r| {
        ordered.insert(super::order_customer(r));
    })?;
    // One scan of CUSTOMER: the average's sum and count (over every customer with
    // such a phone), and the candidates the anti-join keeps: (C_STATE's first
    // character, balance).
    let (mut sum, mut n) = (0i64, 0i64);
    let mut cands: Vec<(u8, i64)> = Vec::new();
    exec::scan_each(s, CUSTOMER.primary(), Unbounded, Unbounded, |r| {
        if !(b'1'..=b'7').contains(&r[offset_of!(Customer, c_phone)]) {
            return;
        }
        let b = i64c(r, offset_of!(Customer, c_balance));
        if b > 0 {
            sum += b;
            n += 1;
        }
        if !ordered.contains(&super::customer_of(r)) {
            cands.push((r[offset_of!(Customer, c_state)], b));
        }
    })?;
    // balance > sum / n, exactly: balance x n > sum.
    cands.retain(|c| c.1 * n > sum);
    let mut by: BTreeMap<u8, (i64, i64)> = BTreeMap::new();
    for (c, b) in cands {
        let e = by.entry(c).or_default();
        e.0 += 1;
        e.1 += b;
    }
    Ok(by
        .into_iter()
        .map(|(c, (k, b))| vec![Datum::Str(vec![c]), Datum::Int(k), Datum::Int(b)])
        .collect())
}

pub fn sql(q: Sql) -> String {
    let phone = "substr(c_phone, 1, 1) IN ('1', '2', '3', '4', '5', '6', '7')";
    let bal = q.m("c_balance");
    format!(
        "SELECT substr(c_state, 1, 1) AS country, count(*) AS numcust, {} AS totacctbal \
         FROM customer, (SELECT {} AS s, count(*) AS n FROM customer \
         WHERE {bal} > 0 AND {phone}) a \
         WHERE {phone} AND {bal} * a.n > a.s \
         AND NOT EXISTS (SELECT 1 FROM \"order\" WHERE o_c_id = c_id AND o_w_id = c_w_id \
         AND o_d_id = c_d_id) \
         GROUP BY substr(c_state, 1, 1) ORDER BY country",
        q.sum(&bal),
        q.sum(&bal)
    )
}
