//! TPC-E's analytical mix (the resource-sensitivity paper's HTAP workload): TPC-E's
//! transactions beside streams of four analytical queries over its large, growing
//! tables. The paper does not list its queries; these four are ours
//! (docs/design/htap.md), each what a brokerage's analyst would ask:
//!
//! - A1 (`a1`): trading activity by sector: completed trades, shares and value;
//! - A2 (`a2`): settlements by customer tier and cash type, with the cash moved;
//! - A3 (`a3`): the ten brokers earning the most commission;
//! - A4 (`a4`): the value of the holdings by industry at the last trade's price.
//!
//! Each is written once: a plan over `exec` for the built-in engines through
//! `api::Reader`, and SQL text for SQLite and PostgreSQL, giving the same rows
//! (money in cents). TPC-E's Hash primaries cannot be scanned: the plans scan the
//! dimensions through their ordered secondary indexes, TRADE through its primary, and
//! look SETTLEMENT, CASH_TRANSACTION and LAST_TRADE up by key.
//!
//! A1 to A3 read the trades of a window: from the start of the last initial trade day
//! on ([`window_start`]), a date of the database's (so the answers compare across
//! engines whatever the clock) that takes in every trade a run adds.

pub mod a1;
pub mod a2;
pub mod a3;
pub mod a4;

use super::gen::{HOURS_PER_DAY, LOAD_START_US, ONE_DAY_US};
use super::schema::*;
use super::{Tpce, TpceConfig};
use crate::htap::{Hybrid, HybridConfig, Kit};
use crate::util::{i64c, strc};
use crate::Workload;
use api::row::{field, read};
use api::{Reader, Result, SqlDialect};
use exec::Row;
use std::collections::HashMap;
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// The queries, in number order.
pub const IMPLEMENTED: [u32; 4] = [1, 2, 3, 4];

/// TPC-E's twelve transaction types, then A1 to A4 (query n is type 11 + n).
pub const TXN_NAMES: [&str; 16] = {
    let mut a = [""; 16];
    let mut i = 0;
    while i < 12 {
        a[i] = super::TXN_NAMES[i];
        i += 1;
    }
    a[12] = "A1";
    a[13] = "A2";
    a[14] = "A3";
    a[15] = "A4";
    a
};

/// Each stream's order: the chosen queries in number order, again and again (the
/// paper's analytical user "repeatedly runs four distinct queries sequentially").
pub fn stream_order(chosen: Option<&[u32]>) -> Vec<u32> {
    crate::util::chosen_in_order(&IMPLEMENTED, chosen)
}

/// Parse `--queries 1,3`: numbers in 1..=4, none twice.
pub fn parse_queries(s: &str) -> std::result::Result<Vec<u32>, String> {
    crate::util::parse_query_list_of(s, "TPC-E's analytical mix", &IMPLEMENTED, 4)
}

/// The first microsecond of the last initial trade day: the window A1 to A3 read.
pub fn window_start(cfg: &TpceConfig) -> i64 {
    let days = u64::from(cfg.trade_hours).div_ceil(HOURS_PER_DAY);
    (LOAD_START_US + (days - 1) * ONE_DAY_US) as i64
}

/// Query `n`'s rows inside the caller's transaction: the SQL text on an engine that
/// runs SQL, the plan on any other.
pub fn answer(n: u32, cfg: &TpceConfig, s: &mut dyn Reader) -> Result<Vec<Row>> {
    let since = window_start(cfg);
    match s.sql_dialect() {
        Some(d) => exec::query_rows(s, &sql(n, d, since)),
        None => match n {
            1 => a1::plan(s, since),
            2 => a2::plan(s, since),
            3 => a3::plan(s, since),
            4 => a4::plan(s),
            _ => unknown(n),
        },
    }
}

/// Query `n`'s SQL text in dialect `d` over the window from `since`.
pub fn sql(n: u32, d: SqlDialect, since: i64) -> String {
    match n {
        1 => a1::sql(d, since),
        2 => a2::sql(d, since),
        3 => a3::sql(d, since),
        4 => a4::sql(d),
        _ => unknown(n),
    }
}

fn unknown(n: u32) -> ! {
    unreachable!("TPC-E analytical query {n} does not exist (callers parse the list)")
}

// ---- what the plans share ----

/// A completed trade's status (T_ST_ID).
fn completed(r: &[u8]) -> bool {
    r[offset_of!(Trade, t_st_id)..][..4] == super::gen::ST_COMPLETED
}

fn symb(r: &[u8], off: usize) -> Symb {
    r[off..off + SYMB_LEN].try_into().expect("15 bytes")
}

/// Each security's industry id: S_SYMB -> CO_IN_ID (SECURITY joined with COMPANY).
fn security_industries(s: &mut dyn Reader) -> Result<HashMap<Symb, [u8; 2]>> {
    let mut company: HashMap<u64, [u8; 2]> = HashMap::new();
    exec::scan_each(
        s,
        COMPANY.secondary(COMPANY_BY_INDUSTRY),
        Unbounded,
        Unbounded,
        |r| {
            let c = read::<Company>(r);
            company.insert(c.co_id, c.co_in_id);
        },
    )?;
    let mut out = HashMap::new();
    exec::scan_each(
        s,
        SECURITY.secondary(SECURITY_BY_COMPANY),
        Unbounded,
        Unbounded,
        |r| {
            let co = field::<u64>(r, offset_of!(Security, s_co_id));
            if let Some(i) = company.get(&co) {
                out.insert(symb(r, offset_of!(Security, s_symb)), *i);
            }
        },
    )?;
    Ok(out)
}

/// IN_ID -> (IN_NAME, IN_SC_ID).
type Industries = HashMap<[u8; 2], (Vec<u8>, [u8; 2])>;

/// Every industry's name and sector.
fn industries(s: &mut dyn Reader) -> Result<Industries> {
    let mut out = HashMap::new();
    exec::scan_each(
        s,
        INDUSTRY.secondary(INDUSTRY_BY_SECTOR),
        Unbounded,
        Unbounded,
        |r| {
            let i = read::<Industry>(r);
            out.insert(
                i.in_id,
                (api::row::get_str(&i.in_name).to_vec(), i.in_sc_id),
            );
        },
    )?;
    Ok(out)
}

/// Accounts: CA_ID -> (CA_C_ID, CA_B_ID).
fn accounts(s: &mut dyn Reader) -> Result<HashMap<u64, (u64, u64)>> {
    let mut out = HashMap::new();
    exec::scan_each(
        s,
        CUSTOMER_ACCOUNT.secondary(ACCOUNT_BY_CUSTOMER),
        Unbounded,
        Unbounded,
        |r| {
            let a = read::<CustomerAccount>(r);
            out.insert(a.ca_id, (a.ca_c_id, a.ca_b_id));
        },
    )?;
    Ok(out)
}

/// A money column (cents).
fn money(r: &[u8], off: usize) -> i64 {
    i64c(r, off)
}

/// A string column of `len` bytes.
fn text(r: &[u8], off: usize, len: usize) -> Vec<u8> {
    strc(r, off, len).to_vec()
}

/// Rows sorted by `keys` (the SQL text's ORDER BY).
fn sorted(mut rows: Vec<Row>, keys: &[(usize, bool)]) -> Vec<Row> {
    let keys: Vec<exec::SortKey> = keys
        .iter()
        .map(|&(col, asc)| exec::SortKey { col, asc })
        .collect();
    exec::sort(&mut rows, &keys);
    rows
}

/// A money column (cents) in SQL text.
fn m(d: SqlDialect, col: &str) -> String {
    crate::util::sql_cents(d, col)
}

/// `sum(e)` of integers in SQL text.
fn sum(d: SqlDialect, e: &str) -> String {
    crate::util::sql_int_sum(d, e)
}

/// `count(*)` as an integer on both systems.
const COUNT: &str = "count(*)";

/// The analytical mix's side of the hybrid run (`htap::Kit`): TPC-E and A1 to A4.
pub struct TpceKit {
    pub tpce: Tpce,
}

/// `run tpce --analytics N`: TPC-E beside N analytical streams.
pub type TpceHybrid = Hybrid<TpceKit>;

impl Hybrid<TpceKit> {
    pub fn new(tpce: Tpce, cfg: HybridConfig) -> std::result::Result<TpceHybrid, String> {
        Hybrid::with(TpceKit { tpce }, cfg)
    }
}

impl Kit for TpceKit {
    type Txn = Tpce;

    fn txn(&self) -> &Tpce {
        &self.tpce
    }

    fn name(&self) -> &'static str {
        "tpce"
    }

    fn txn_label(&self) -> &'static str {
        "TPC-E"
    }

    fn queries_label(&self) -> &'static str {
        "TPC-E's analytical mix"
    }

    fn streams_flag(&self) -> &'static str {
        "--analytics"
    }

    fn doc(&self) -> &'static str {
        "docs/design/htap.md"
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &TXN_NAMES
    }

    fn implemented(&self) -> &'static [u32] {
        &IMPLEMENTED
    }

    fn query_name(&self, n: u32) -> String {
        format!("A{n}")
    }

    fn answer(&self, n: u32, s: &mut dyn Reader) -> Result<Vec<Row>> {
        answer(n, &self.tpce.cfg, s)
    }

    fn txn_rate(&self, done: &[u64], secs: f64) -> String {
        format!(
            "TPC-E {:.1} txn/s (tpsE {:.1})",
            done.iter().sum::<u64>() as f64 / secs,
            done[super::txn::TRADE_RESULT as usize] as f64 / secs,
        )
    }

    fn config(&self, cfg: &HybridConfig) -> serde_json::Value {
        let mut v = self.tpce.config();
        v["analytics"] = serde_json::json!({
            "txn_threads": cfg.txn_threads,
            "streams": cfg.streams,
            "queries": cfg.queries,
            "priority": cfg.priority,
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_refuse_and_order() {
        assert_eq!(parse_queries("3,1"), Ok(vec![3, 1]));
        assert!(parse_queries("0").unwrap_err().contains("1 to 4"));
        assert!(parse_queries("5").unwrap_err().contains("1 to 4"));
        assert!(parse_queries("1,1").unwrap_err().contains("twice"));
        assert!(parse_queries("x").is_err());
        assert_eq!(stream_order(Some(&[3, 1])), vec![1, 3]);
        assert_eq!(stream_order(None), IMPLEMENTED.to_vec());
        assert_eq!(&TXN_NAMES[..12], &super::super::TXN_NAMES[..]);
    }

    #[test]
    fn the_window_starts_on_the_last_initial_day() {
        let mut c = TpceConfig {
            trade_hours: 8,
            ..TpceConfig::default()
        };
        assert_eq!(window_start(&c), LOAD_START_US as i64);
        c.trade_hours = 9;
        assert_eq!(window_start(&c), (LOAD_START_US + ONE_DAY_US) as i64);
    }
}
