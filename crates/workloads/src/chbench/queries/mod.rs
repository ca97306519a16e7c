//! CH-benCHmark's analytical queries (Cole et al., DBTest 2011: TPC-H's 22 adapted to
//! TPC-C's schema and SUPPLIER, NATION, REGION), each written once: a plan over `exec`
//! for the built-in engines through `api::Reader`, and SQL text for SQLite and
//! PostgreSQL, giving the same raw rows (sums in cents, averages as sum and count),
//! which `finish` turns into the answer. The benchmark's queries have no substitution
//! parameters: their constants are fixed.
//!
//! Dates are TPC-C's timestamps (microseconds since 1970, 0 for NULL). The benchmark's
//! lower bounds ('2007-01-02', '1999-01-01') lie before every date a load or run
//! writes and are kept; its upper bounds ('2020-01-01', '2012-01-02'), meant to lie
//! after every such date when it was written, are past now: they are
//! [`FAR_FUTURE`] (2100-01-01) here, so the queries select what they were meant to.

pub mod edge;
pub mod q01;
pub mod q02;
pub mod q03;
pub mod q04;
pub mod q05;
pub mod q06;
pub mod q07;
pub mod q08;
pub mod q09;
pub mod q10;
pub mod q11;
pub mod q12;
pub mod q13;
pub mod q14;
pub mod q15;
pub mod q16;
pub mod q17;
pub mod q18;
pub mod q19;
pub mod q20;
pub mod q21;
pub mod q22;

use crate::util::{i64c, strc, u32c};
use api::{Reader, Result, SqlDialect};
use exec::{Datum, Row};
use std::collections::HashMap;

/// The queries that exist, in number order.
pub const IMPLEMENTED: [u32; 22] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
];

/// Each analytical stream's order: every implemented query in number order, again
/// and again (the benchmark leaves the order to the driver; BenchBase runs them in
/// number order too).
pub fn stream_order(chosen: Option<&[u32]>) -> Vec<u32> {
    crate::util::chosen_in_order(&IMPLEMENTED, chosen)
}

/// Parse `--queries 1,6`: numbers in 1..=22, none twice.
pub fn parse_queries(s: &str) -> std::result::Result<Vec<u32>, String> {
    crate::util::parse_query_list(s, "CH-benCHmark", &IMPLEMENTED)
}

/// Query `n`'s answer inside the caller's transaction: the SQL text on an engine that
/// runs SQL, the plan on any other. `None`: not implemented.
pub fn answer(n: u32, s: &mut dyn Reader) -> Result<Vec<Row>> {
    let raw = match s.sql_dialect() {
        Some(d) => exec::query_rows(s, &sql(n, d))?,
        None => plan(n, s)?,
    };
    Ok(finish(n, raw))
}

fn unknown(n: u32) -> ! {
    unreachable!("CH-benCHmark query {n} is not implemented (callers parse the list)")
}

fn plan(n: u32, s: &mut dyn Reader) -> Result<Vec<Row>> {
    match n {
        1 => q01::plan(s),
        2 => q02::plan(s),
        3 => q03::plan(s),
        4 => q04::plan(s),
        5 => q05::plan(s),
        6 => q06::plan(s),
        7 => q07::plan(s),
        8 => q08::plan(s),
        9 => q09::plan(s),
        10 => q10::plan(s),
        11 => q11::plan(s),
        12 => q12::plan(s),
        13 => q13::plan(s),
        14 => q14::plan(s),
        15 => q15::plan(s),
        16 => q16::plan(s),
        17 => q17::plan(s),
        18 => q18::plan(s),
        19 => q19::plan(s),
        20 => q20::plan(s),
        21 => q21::plan(s),
        22 => q22::plan(s),
        _ => unknown(n),
    }
}

/// Query `n`'s SQL text in dialect `d`.
pub fn sql(n: u32, d: SqlDialect) -> String {
    let q = Sql(d);
    match n {
        1 => q01::sql(q),
        2 => q02::sql(q),
        3 => q03::sql(q),
        4 => q04::sql(q),
        5 => q05::sql(q),
        6 => q06::sql(q),
        7 => q07::sql(q),
        8 => q08::sql(q),
        9 => q09::sql(q),
        10 => q10::sql(q),
        11 => q11::sql(q),
        12 => q12::sql(q),
        13 => q13::sql(q),
        14 => q14::sql(q),
        15 => q15::sql(q),
        16 => q16::sql(q),
        17 => q17::sql(q),
        18 => q18::sql(q),
        19 => q19::sql(q),
        20 => q20::sql(q),
        21 => q21::sql(q),
        22 => q22::sql(q),
        _ => unknown(n),
    }
}

fn finish(n: u32, raw: Vec<Row>) -> Vec<Row> {
    match n {
        1 => q01::finish(raw),
        8 => q08::finish(raw),
        14 => q14::finish(raw),
        17 => q17::finish(raw),
        _ => raw,
    }
}

/// The columns of query `n`'s answer holding a clock reading (O_ENTRY_D: the time a
/// load or a New-Order wrote, different on every load).
pub fn clock_columns(n: u32) -> &'static [usize] {
    match n {
        3 => &[4],
        18 => &[3],
        _ => &[],
    }
}

/// Query `n`'s answer with its [`clock_columns`] set to 0: what tests comparing two
/// loads compare (the rest, and the order, which the clock decides only between rows
/// of equal amounts).
pub fn without_clock(n: u32, mut rows: Vec<Row>) -> Vec<Row> {
    for r in &mut rows {
        for &c in clock_columns(n) {
            r[c] = Datum::Int(0);
        }
    }
    rows
}

// ---- what the plans share ----

/// Microseconds since 1970 at midnight of a day (TPC-C's timestamps).
pub fn at(y: i32, m: u32, d: u32) -> i64 {
    i64::from(crate::tpch::gen::days_from_civil(y, m, d)) * 86_400_000_000
}

/// The benchmark's '2007-01-02 00:00:00': its usual lower bound.
pub fn since_2007() -> i64 {
    at(2007, 1, 2)
}

/// The upper bound standing for the benchmark's '2020-01-01' (see the module's text).
pub fn far_future() -> i64 {
    FAR_FUTURE
}

/// 2100-01-01, microseconds.
pub const FAR_FUTURE: i64 = 4_102_444_800_000_000;

/// The nation key of a customer: its C_STATE's first character's code.
fn nation_of_state(r: &[u8], off: usize) -> i64 {
    i64::from(r[off])
}

/// The keys of the nations named `name`.
fn nation_keys_named(s: &mut dyn Reader, name: &str) -> Result<std::collections::HashSet<i64>> {
    use super::schema::{Nation, NATION};
    use std::mem::offset_of;
    let mut out = std::collections::HashSet::new();
    exec::scan_each(
        s,
        NATION.primary(),
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        |r| {
            if strc(r, offset_of!(Nation, n_name), 25) == name.as_bytes() {
                out.insert(u32c(r, offset_of!(Nation, n_nationkey)));
            }
        },
    )?;
    Ok(out)
}

/// (key, value) pairs as two-column rows sorted by value descending, then key
/// (ascending if `key_asc`): the order of Q5's, Q11's and Q13's answers.
fn pairs(it: impl IntoIterator<Item = (Datum, i64)>, key_asc: bool) -> Vec<Row> {
    let mut rows: Vec<Row> = it
        .into_iter()
        .map(|(k, v)| vec![k, Datum::Int(v)])
        .collect();
    exec::sort(
        &mut rows,
        &[
            exec::SortKey { col: 1, asc: false },
            exec::SortKey {
                col: 0,
                asc: key_asc,
            },
        ],
    );
    rows
}

/// A row's 4-byte signed column (S_QUANTITY).
fn i32c(r: &[u8], off: usize) -> i64 {
    i64::from(api::row::field::<i32>(r, off))
}

/// The supplier of stock row (w, i): (w x i) mod 10,000.
fn supplier_of(w: i64, i: i64) -> i64 {
    (w * i) % 10_000
}

/// The calendar year (UTC) of a TPC-C timestamp.
fn year_of(us: i64) -> i64 {
    let day = u32::try_from(us.div_euclid(86_400_000_000)).expect("a date after 1970");
    i64::from(crate::tpch::gen::civil_from_days(day).0)
}

/// Every nation: key -> N_NAME.
fn nation_names(s: &mut dyn Reader) -> Result<HashMap<i64, Datum>> {
    use super::schema::{Nation, NATION};
    use std::mem::offset_of;
    let mut out = HashMap::new();
    exec::scan_each(
        s,
        NATION.primary(),
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        |r| {
            out.insert(
                u32c(r, offset_of!(Nation, n_nationkey)),
                Datum::Str(strc(r, offset_of!(Nation, n_name), 25).to_vec()),
            );
        },
    )?;
    Ok(out)
}

/// The suppliers whose nation `keep` accepts: key -> nation key.
fn suppliers_where(s: &mut dyn Reader, keep: impl Fn(i64) -> bool) -> Result<HashMap<i64, i64>> {
    use super::schema::{Supplier, SUPPLIER};
    use std::mem::offset_of;
    let mut out = HashMap::new();
    exec::scan_each(
        s,
        SUPPLIER.primary(),
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        |r| {
            let n = u32c(r, offset_of!(Supplier, su_nationkey));
            if keep(n) {
                out.insert(u32c(r, offset_of!(Supplier, su_suppkey)), n);
            }
        },
    )?;
    Ok(out)
}

/// An order's identity (warehouse, district, order id) as one integer.
fn order_id(w: i64, d: i64, o: i64) -> i64 {
    (w << 40) | (d << 32) | o
}

/// An order line's order, as [`order_id`].
fn line_order(r: &[u8]) -> i64 {
    use crate::tpcc::schema::OrderLine;
    use std::mem::offset_of;
    order_id(
        u32c(r, offset_of!(OrderLine, ol_w_id)),
        u32c(r, offset_of!(OrderLine, ol_d_id)),
        u32c(r, offset_of!(OrderLine, ol_o_id)),
    )
}

/// An ORDER row's identity, as [`order_id`].
fn order_of(r: &[u8]) -> i64 {
    use crate::tpcc::schema::Order;
    use std::mem::offset_of;
    order_id(
        u32c(r, offset_of!(Order, o_w_id)),
        u32c(r, offset_of!(Order, o_d_id)),
        u32c(r, offset_of!(Order, o_id)),
    )
}

/// An ORDER row's customer (warehouse, district, customer id), as [`order_id`].
fn order_customer(r: &[u8]) -> i64 {
    use crate::tpcc::schema::Order;
    use std::mem::offset_of;
    order_id(
        u32c(r, offset_of!(Order, o_w_id)),
        u32c(r, offset_of!(Order, o_d_id)),
        u32c(r, offset_of!(Order, o_c_id)),
    )
}

/// A CUSTOMER row's identity, as [`order_id`] (what [`order_customer`] gives).
fn customer_of(r: &[u8]) -> i64 {
    use crate::tpcc::schema::Customer;
    use std::mem::offset_of;
    order_id(
        u32c(r, offset_of!(Customer, c_w_id)),
        u32c(r, offset_of!(Customer, c_d_id)),
        u32c(r, offset_of!(Customer, c_id)),
    )
}

/// SQL text pieces in a dialect, over the schema's encoding (decimals in cents,
/// timestamps in microseconds).
#[derive(Debug, Clone, Copy)]
pub struct Sql(pub SqlDialect);

impl Sql {
    /// A decimal column as integer cents (SQLite stores cents already).
    fn m(self, col: &str) -> String {
        crate::util::sql_cents(self.0, col)
    }

    /// The nation key of a customer: the code of C_STATE's first character.
    fn state_nation(self) -> &'static str {
        match self.0 {
            SqlDialect::Sqlite => "unicode(substr(c_state, 1, 1))",
            SqlDialect::Postgres => "ascii(substr(c_state, 1, 1))",
        }
    }

    /// The calendar year (UTC) of a timestamp column, an integer.
    fn year(self, col: &str) -> String {
        match self.0 {
            SqlDialect::Sqlite => {
                format!("CAST(strftime('%Y', {col} / 1000000, 'unixepoch') AS INTEGER)")
            }
            SqlDialect::Postgres => format!(
                "CAST(extract(year FROM to_timestamp({col} / 1000000) AT TIME ZONE 'UTC') AS INT8)"
            ),
        }
    }

    /// `col LIKE pat`, case-sensitive in both systems (`%` the only wildcard):
    /// SQLite's LIKE ignores ASCII case, its GLOB does not.
    fn like(self, col: &str, pat: &str) -> String {
        match self.0 {
            SqlDialect::Sqlite => format!("{col} GLOB '{}'", pat.replace('%', "*")),
            SqlDialect::Postgres => format!("{col} LIKE '{pat}'"),
        }
    }

    /// `sum(e)` of integers, an integer (0 over no rows).
    fn sum(self, e: &str) -> String {
        crate::util::sql_int_sum(self.0, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_refuse_and_order() {
        assert_eq!(parse_queries("6,1"), Ok(vec![6, 1]));
        assert!(parse_queries("0").unwrap_err().contains("out of range"));
        assert!(parse_queries("23").unwrap_err().contains("out of range"));
        assert!(parse_queries("1,1").unwrap_err().contains("twice"));
        assert!(parse_queries("x").is_err());
        assert_eq!(stream_order(Some(&[6, 1])), vec![1, 6]);
        assert_eq!(stream_order(None), IMPLEMENTED.to_vec());
        assert_eq!(IMPLEMENTED.to_vec(), (1..=22).collect::<Vec<u32>>());
    }

    #[test]
    fn dates_are_microseconds() {
        assert_eq!(at(1970, 1, 2), 86_400_000_000);
        assert_eq!(FAR_FUTURE, at(2100, 1, 1));
        assert!(since_2007() < crate::tpcc::gen::now_us() as i64);
        assert!(far_future() > crate::tpcc::gen::now_us() as i64);
    }
}
