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

pub mod q01;
pub mod q04;
pub mod q05;
pub mod q06;
pub mod q10;
pub mod q11;
pub mod q12;
pub mod q13;
pub mod q14;
pub mod q15;
pub mod q17;
pub mod q19;

use crate::util::{i64c, strc, u32c};
use api::{Reader, Result, SqlDialect};
use exec::{Datum, Row};

/// The queries that exist, in number order.
pub const IMPLEMENTED: [u32; 12] = [1, 4, 5, 6, 10, 11, 12, 13, 14, 15, 17, 19];

/// Each analytical stream's order: every implemented query in number order, again
/// and again (the benchmark leaves the order to the driver; BenchBase runs them in
/// number order too).
pub fn stream_order(chosen: Option<&[u32]>) -> Vec<u32> {
    IMPLEMENTED
        .iter()
        .copied()
        .filter(|n| chosen.is_none_or(|c| c.contains(n)))
        .collect()
}

/// Parse `--queries 1,6`: numbers in 1..=22, each implemented, none twice.
pub fn parse_queries(s: &str) -> std::result::Result<Vec<u32>, String> {
    crate::util::parse_query_list(s, "CH-benCHmark", &IMPLEMENTED)
}

/// The queries not implemented yet, for docs and messages.
pub fn missing() -> Vec<u32> {
    (1..=22).filter(|n| !IMPLEMENTED.contains(n)).collect()
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
        4 => q04::plan(s),
        5 => q05::plan(s),
        6 => q06::plan(s),
        10 => q10::plan(s),
        11 => q11::plan(s),
        12 => q12::plan(s),
        13 => q13::plan(s),
        14 => q14::plan(s),
        15 => q15::plan(s),
        17 => q17::plan(s),
        19 => q19::plan(s),
        _ => unknown(n),
    }
}

/// Query `n`'s SQL text in dialect `d`.
pub fn sql(n: u32, d: SqlDialect) -> String {
    let q = Sql(d);
    match n {
        1 => q01::sql(q),
        4 => q04::sql(q),
        5 => q05::sql(q),
        6 => q06::sql(q),
        10 => q10::sql(q),
        11 => q11::sql(q),
        12 => q12::sql(q),
        13 => q13::sql(q),
        14 => q14::sql(q),
        15 => q15::sql(q),
        17 => q17::sql(q),
        19 => q19::sql(q),
        _ => unknown(n),
    }
}

fn finish(n: u32, raw: Vec<Row>) -> Vec<Row> {
    match n {
        1 => q01::finish(raw),
        14 => q14::finish(raw),
        17 => q17::finish(raw),
        _ => raw,
    }
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

/// An order's identity (warehouse, district, order id) as one integer.
fn order_id(w: i64, d: i64, o: i64) -> i64 {
    (w << 40) | (d << 32) | o
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
        let m = missing();
        if let Some(n) = m.first() {
            assert!(parse_queries(&n.to_string())
                .unwrap_err()
                .contains("not implemented"));
        }
        assert_eq!(stream_order(Some(&[6, 1])), vec![1, 6]);
        assert_eq!(stream_order(None), IMPLEMENTED.to_vec());
        assert_eq!(m.len() + IMPLEMENTED.len(), 22);
    }

    #[test]
    fn dates_are_microseconds() {
        assert_eq!(at(1970, 1, 2), 86_400_000_000);
        assert_eq!(FAR_FUTURE, at(2100, 1, 1));
        assert!(since_2007() < crate::tpcc::gen::now_us() as i64);
        assert!(far_future() > crate::tpcc::gen::now_us() as i64);
    }
}
