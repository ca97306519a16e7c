//! A4, the book by industry: every holding valued at its security's last trade price
//! (LAST_TRADE), with its cost (quantity x purchase price), per industry, by value
//! descending (ties: name). HOLDING scanned, joined with LAST_TRADE, SECURITY, COMPANY
//! and INDUSTRY. Reads all of HOLDING, which Trade-Results change.

use super::{industries, security_industries, sorted, sum, symb, COUNT};
use crate::tpce::schema::*;
use api::row::field;
use api::{Reader, Result, SqlDialect};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: in_name, holdings, shares, value at the last price (cents), cost (cents).
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let industry = industries(s)?;
    let sec = security_industries(s)?;
    // Each security's industry name and last price.
    let mut of: HashMap<Symb, (&Vec<u8>, i64)> = HashMap::new();
    for (sy, i) in &sec {
        let Some((name, _)) = industry.get(i) else {
            continue;
        };
        let mut price = None;
        s.get(LAST_TRADE, &k_symb(sy), &mut |r| {
            price = Some(field::<i64>(r, offset_of!(LastTrade, lt_price)));
        })?;
        if let Some(p) = price {
            of.insert(*sy, (name, p));
        }
    }
    let mut acc: HashMap<&Vec<u8>, [i64; 4]> = HashMap::new();
    exec::scan_each(
        s,
        HOLDING.secondary(HOLDING_BY_ACCOUNT),
        Unbounded,
        Unbounded,
        |r| {
            let Some((name, last)) = of.get(&symb(r, offset_of!(Holding, h_s_symb))) else {
                return;
            };
            let qty = field::<i64>(r, offset_of!(Holding, h_qty));
            let a = acc.entry(name).or_default();
            a[0] += 1;
            a[1] += qty;
            a[2] += qty * last;
            a[3] += qty * field::<i64>(r, offset_of!(Holding, h_price));
        },
    )?;
    let rows = acc
        .into_iter()
        .map(|(n, a)| {
            let mut row = vec![Datum::Str(n.clone())];
            row.extend(a.iter().map(|&v| Datum::Int(v)));
            row
        })
        .collect();
    Ok(sorted(rows, &[(3, false), (0, true)]))
}

pub fn sql(d: SqlDialect) -> String {
    format!(
        "SELECT in_name, {COUNT}, {}, {}, {} \
         FROM holding, last_trade, security, company, industry \
         WHERE h_s_symb = lt_s_symb AND h_s_symb = s_symb AND s_co_id = co_id \
         AND co_in_id = in_id \
         GROUP BY in_name ORDER BY 4 DESC, in_name",
        sum(d, "h_qty"),
        sum(d, &format!("h_qty * {}", super::m(d, "lt_price"))),
        sum(d, &format!("h_qty * {}", super::m(d, "h_price"))),
    )
}
