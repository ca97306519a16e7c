//! A2, settlements by customer tier and cash type: the window's trades that settled,
//! their settlement amounts and the cash their cash transactions moved (0 for a margin
//! trade), per (C_TIER, SE_CASH_TYPE). TRADE scanned, joined with CUSTOMER_ACCOUNT and
//! CUSTOMER, SETTLEMENT and CASH_TRANSACTION looked up by trade.

use super::{accounts, money, sorted, sum, text, COUNT};
use crate::tpce::schema::*;
use api::row::field;
use api::{Reader, Result, SqlDialect};
use exec::{Datum, Row};
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: c_tier, se_cash_type, trades, settled (cents), cash moved (cents), by tier
/// then cash type.
pub fn plan(s: &mut dyn Reader, since: i64) -> Result<Vec<Row>> {
    let account = accounts(s)?;
    let mut tier: HashMap<u64, u8> = HashMap::new();
    exec::scan_each(
        s,
        CUSTOMER.secondary(CUSTOMER_BY_TAX_ID),
        Unbounded,
        Unbounded,
        |r| {
            tier.insert(
                field::<u64>(r, offset_of!(Customer, c_id)),
                r[offset_of!(Customer, c_tier)],
            );
        },
    )?;
    // The window's trades and their customers' tiers.
    let mut trades: Vec<(u64, u8)> = Vec::new();
    exec::scan_each(s, TRADE.primary(), Unbounded, Unbounded, |r| {
        if (field::<u64>(r, offset_of!(Trade, t_dts)) as i64) < since {
            return;
        }
        let ca = field::<u64>(r, offset_of!(Trade, t_ca_id));
        if let Some(t) = account.get(&ca).and_then(|(c, _)| tier.get(c)) {
            trades.push((field::<u64>(r, offset_of!(Trade, t_id)), *t));
        }
    })?;
    let mut acc: HashMap<(u8, Vec<u8>), [i64; 3]> = HashMap::new();
    for (t_id, t) in trades {
        let k = k_u64(t_id);
        let mut se = None;
        s.get(SETTLEMENT, &k, &mut |r| {
            se = Some((
                text(r, offset_of!(Settlement, se_cash_type), 40),
                money(r, offset_of!(Settlement, se_amt)),
            ));
        })?;
        let Some((ty, amt)) = se else { continue };
        let mut cash = 0;
        s.get(CASH_TRANSACTION, &k, &mut |r| {
            cash = money(r, offset_of!(CashTransaction, ct_amt));
        })?;
        let a = acc.entry((t, ty)).or_default();
        a[0] += 1;
        a[1] += amt;
        a[2] += cash;
    }
    let rows = acc
        .into_iter()
        .map(|((t, ty), a)| {
            vec![
                Datum::Int(i64::from(t)),
                Datum::Str(ty),
                Datum::Int(a[0]),
                Datum::Int(a[1]),
                Datum::Int(a[2]),
            ]
        })
        .collect();
    Ok(sorted(rows, &[(0, true), (1, true)]))
}

pub fn sql(d: SqlDialect, since: i64) -> String {
    format!(
        "SELECT c_tier, se_cash_type, {COUNT}, {}, {} \
         FROM trade JOIN settlement ON se_t_id = t_id \
         JOIN customer_account ON ca_id = t_ca_id JOIN customer ON c_id = ca_c_id \
         LEFT JOIN cash_transaction ON ct_t_id = t_id \
         WHERE t_dts >= {since} \
         GROUP BY c_tier, se_cash_type ORDER BY c_tier, se_cash_type",
        sum(d, &super::m(d, "se_amt")),
        sum(d, &super::m(d, "ct_amt")),
    )
}
