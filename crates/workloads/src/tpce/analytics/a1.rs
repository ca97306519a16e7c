//! A1, trading activity by sector: the completed trades of the window, their shares
//! and value (quantity x trade price), per sector, by value descending (ties: name).
//! TRADE scanned, joined with SECURITY, COMPANY, INDUSTRY and SECTOR.

use super::{completed, industries, security_industries, sorted, sum, symb, text, COUNT};
use crate::tpce::schema::*;
use api::row::field;
use api::{Reader, Result, SqlDialect};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: sc_name, trades, shares, value (cents).
pub fn plan(s: &mut dyn Reader, since: i64) -> Result<Vec<Row>> {
    let industry = industries(s)?;
    let mut sector: HashMap<[u8; 2], Vec<u8>> = HashMap::new();
    exec::scan_each(
        s,
        SECTOR.secondary(SECTOR_BY_NAME),
        Unbounded,
        Unbounded,
        |r| {
            let id = r[offset_of!(Sector, sc_id)..][..2].try_into().expect("2");
            sector.insert(id, text(r, offset_of!(Sector, sc_name), 30));
        },
    )?;
    // Each security's sector name.
    let of: HashMap<Symb, &Vec<u8>> = security_industries(s)?
        .into_iter()
        .filter_map(|(sy, i)| Some((sy, sector.get(&industry.get(&i)?.1)?)))
        .collect();
    let mut acc: HashMap<&Vec<u8>, [i64; 3]> = HashMap::new();
    exec::scan_each(s, TRADE.primary(), Unbounded, Unbounded, |r| {
        if !completed(r) || (field::<u64>(r, offset_of!(Trade, t_dts)) as i64) < since {
            return;
        }
        let Some(name) = of.get(&symb(r, offset_of!(Trade, t_s_symb))) else {
            return;
        };
        let qty = i64::from(field::<u32>(r, offset_of!(Trade, t_qty)));
        let a = acc.entry(name).or_default();
        a[0] += 1;
        a[1] += qty;
        a[2] += qty * field::<i64>(r, offset_of!(Trade, t_trade_price));
    })?;
    let rows = acc
        .into_iter()
        .map(|(n, a)| {
            vec![
                Datum::Str(n.clone()),
                Datum::Int(a[0]),
                Datum::Int(a[1]),
                Datum::Int(a[2]),
            ]
        })
        .collect();
    Ok(sorted(rows, &[(3, false), (0, true)]))
}

pub fn sql(d: SqlDialect, since: i64) -> String {
    format!(
        "SELECT sc_name, {COUNT}, {}, {} \
         FROM trade, security, company, industry, sector \
         WHERE t_s_symb = s_symb AND s_co_id = co_id AND co_in_id = in_id \
         AND in_sc_id = sc_id AND t_st_id = 'CMPT' AND t_dts >= {since} \
         GROUP BY sc_name ORDER BY 4 DESC, sc_name",
        sum(d, "t_qty"),
        sum(d, &format!("t_qty * {}", super::m(d, "t_trade_price"))),
    )
}
