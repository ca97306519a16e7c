//! A3, the top brokers: the ten brokers whose accounts' completed trades of the
//! window earned the most commission, with their trade counts (ties: name). TRADE
//! scanned, joined with CUSTOMER_ACCOUNT and BROKER; a top-N.

use super::{accounts, completed, money, sum, text, COUNT};
use crate::tpce::schema::*;
use api::row::field;
use api::{Reader, Result, SqlDialect};
use exec::{Datum, Row, SortKey};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Brokers listed.
pub const TOP: usize = 10;

/// Rows: b_name, trades, commission (cents), at most [`TOP`].
pub fn plan(s: &mut dyn Reader, since: i64) -> Result<Vec<Row>> {
    let account = accounts(s)?;
    let mut name: HashMap<u64, Vec<u8>> = HashMap::new();
    exec::scan_each(
        s,
        BROKER.secondary(BROKER_BY_NAME),
        Unbounded,
        Unbounded,
        |r| {
            name.insert(
                field::<u64>(r, offset_of!(Broker, b_id)),
                text(r, offset_of!(Broker, b_name), 49),
            );
        },
    )?;
    let mut acc: HashMap<u64, [i64; 2]> = HashMap::new();
    exec::scan_each(s, TRADE.primary(), Unbounded, Unbounded, |r| {
        if !completed(r) || (field::<u64>(r, offset_of!(Trade, t_dts)) as i64) < since {
            return;
        }
        let ca = field::<u64>(r, offset_of!(Trade, t_ca_id));
        if let Some((_, b)) = account.get(&ca) {
            let a = acc.entry(*b).or_default();
            a[0] += 1;
            a[1] += money(r, offset_of!(Trade, t_comm));
        }
    })?;
    let rows = acc
        .into_iter()
        .filter_map(|(b, a)| {
            Some(vec![
                Datum::Str(name.get(&b)?.clone()),
                Datum::Int(a[0]),
                Datum::Int(a[1]),
            ])
        })
        .collect();
    Ok(exec::top_n(
        rows,
        &[
            SortKey { col: 2, asc: false },
            SortKey { col: 0, asc: true },
        ],
        TOP,
    ))
}

pub fn sql(d: SqlDialect, since: i64) -> String {
    format!(
        "SELECT b_name, {COUNT}, {} FROM trade, customer_account, broker \
         WHERE t_ca_id = ca_id AND ca_b_id = b_id AND t_st_id = 'CMPT' \
         AND t_dts >= {since} \
         GROUP BY b_name ORDER BY 3 DESC, b_name LIMIT {TOP}",
        sum(d, &super::m(d, "t_comm")),
    )
}
