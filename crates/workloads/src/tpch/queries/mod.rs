//! TPC-H's queries (clause 2.4) as hand-written plans over `exec` for the built-in
//! engines and as SQL text for the SQL adapters, one module per query. Each module
//! owns its substitution parameters (drawn per clause 2.4 from a seed, or the
//! validation values of clause 2.4), its plan, its SQL text (SQLite's and
//! PostgreSQL's, over the schema's encoding: decimals in cents, dates as day numbers)
//! and its `finish`, the one step both share that turns exact sums into the reported
//! values (rounded half away from zero to cents).
//!
//! A plan and its SQL text give the same *raw* rows: sums at the exact scale their
//! products have (revenue `l_extendedprice x (100 - l_discount)` in 10^-4 units,
//! charges in 10^-6), averages as a sum and a count. So every engine's answer is
//! integer arithmetic, equal row by row, and rounded once, in `finish`.

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
mod sets;

use super::gen::{civil_from_days, days_from_civil};
use crate::util::{i64c, strc, u32c};
use api::{Reader, Result, SqlDialect, TableId};
use exec::{Datum, Row};
use std::ops::Bound;

/// The queries implemented, in number order: all 22.
pub const IMPLEMENTED: [u32; 22] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
];

/// Stream 0's order of the 22 queries (Appendix A; clause 5.3.5: the power test runs
/// them in it).
pub const STREAM0: [u32; 22] = STREAM_ORDERS[0];

/// The order of the 22 queries in each query stream (Appendix A's table: stream 0 is
/// the power test's, streams 1 to 40 the throughput test's).
#[rustfmt::skip]
pub const STREAM_ORDERS: [[u32; 22]; 41] = [
    [14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12],
    [21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4],
    [6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21],
    [8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3],
    [5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20],
    [21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9],
    [10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21],
    [18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12],
    [19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11],
    [8, 13, 2, 20, 17, 3, 6, 21, 18, 11, 19, 10, 15, 4, 22, 1, 7, 12, 9, 14, 5, 16],
    [6, 15, 18, 17, 12, 1, 7, 2, 22, 13, 21, 10, 14, 9, 3, 16, 20, 19, 11, 4, 8, 5],
    [15, 14, 18, 17, 10, 20, 16, 11, 1, 8, 4, 22, 5, 12, 3, 9, 21, 2, 13, 6, 19, 7],
    [1, 7, 16, 17, 18, 22, 12, 6, 8, 9, 11, 4, 2, 5, 20, 21, 13, 10, 19, 3, 14, 15],
    [21, 17, 7, 3, 1, 10, 12, 22, 9, 16, 6, 11, 2, 4, 5, 14, 8, 20, 13, 18, 15, 19],
    [2, 9, 5, 4, 18, 1, 20, 15, 16, 17, 7, 21, 13, 14, 19, 8, 22, 11, 10, 3, 12, 6],
    [16, 9, 17, 8, 14, 11, 10, 12, 6, 21, 7, 3, 15, 5, 22, 20, 1, 13, 19, 2, 4, 18],
    [1, 3, 6, 5, 2, 16, 14, 22, 17, 20, 4, 9, 10, 11, 15, 8, 12, 19, 18, 13, 7, 21],
    [3, 16, 5, 11, 21, 9, 2, 15, 10, 18, 17, 7, 8, 19, 14, 13, 1, 4, 22, 20, 6, 12],
    [14, 4, 13, 5, 21, 11, 8, 6, 3, 17, 2, 20, 1, 19, 10, 9, 12, 18, 15, 7, 22, 16],
    [4, 12, 22, 14, 5, 15, 16, 2, 8, 10, 17, 9, 21, 7, 3, 6, 13, 18, 11, 20, 19, 1],
    [16, 15, 14, 13, 4, 22, 18, 19, 7, 1, 12, 17, 5, 10, 20, 3, 9, 21, 11, 2, 6, 8],
    [20, 14, 21, 12, 15, 17, 4, 19, 13, 10, 11, 1, 16, 5, 18, 7, 8, 22, 9, 6, 3, 2],
    [16, 14, 13, 2, 21, 10, 11, 4, 1, 22, 18, 12, 19, 5, 7, 8, 6, 3, 15, 20, 9, 17],
    [18, 15, 9, 14, 12, 2, 8, 11, 22, 21, 16, 1, 6, 17, 5, 10, 19, 4, 20, 13, 3, 7],
    [7, 3, 10, 14, 13, 21, 18, 6, 20, 4, 9, 8, 22, 15, 2, 1, 5, 12, 19, 17, 11, 16],
    [18, 1, 13, 7, 16, 10, 14, 2, 19, 5, 21, 11, 22, 15, 8, 17, 20, 3, 4, 12, 6, 9],
    [13, 2, 22, 5, 11, 21, 20, 14, 7, 10, 4, 9, 19, 18, 6, 3, 1, 8, 15, 12, 17, 16],
    [14, 17, 21, 8, 2, 9, 6, 4, 5, 13, 22, 7, 15, 3, 1, 18, 16, 11, 10, 12, 20, 19],
    [10, 22, 1, 12, 13, 18, 21, 20, 2, 14, 16, 7, 15, 3, 4, 17, 5, 19, 6, 8, 9, 11],
    [10, 8, 9, 18, 12, 6, 1, 5, 20, 11, 17, 22, 16, 3, 13, 2, 15, 21, 14, 19, 7, 4],
    [7, 17, 22, 5, 3, 10, 13, 18, 9, 1, 14, 15, 21, 19, 16, 12, 8, 6, 11, 20, 4, 2],
    [2, 9, 21, 3, 4, 7, 1, 11, 16, 5, 20, 19, 18, 8, 17, 13, 10, 12, 15, 6, 14, 22],
    [15, 12, 8, 4, 22, 13, 16, 17, 18, 3, 7, 5, 6, 1, 9, 11, 21, 10, 14, 20, 19, 2],
    [15, 16, 2, 11, 17, 7, 5, 14, 20, 4, 21, 3, 10, 9, 12, 8, 13, 6, 18, 19, 22, 1],
    [1, 13, 11, 3, 4, 21, 6, 14, 15, 22, 18, 9, 7, 5, 10, 20, 12, 16, 17, 8, 19, 2],
    [14, 17, 22, 20, 8, 16, 5, 10, 1, 13, 2, 21, 12, 9, 4, 18, 3, 7, 6, 19, 15, 11],
    [9, 17, 7, 4, 5, 13, 21, 18, 11, 3, 22, 1, 6, 16, 20, 14, 15, 10, 8, 2, 12, 19],
    [13, 14, 5, 22, 19, 11, 9, 6, 18, 15, 8, 10, 7, 4, 17, 16, 3, 1, 12, 2, 21, 20],
    [20, 5, 4, 14, 11, 1, 6, 16, 8, 22, 7, 3, 2, 12, 21, 19, 17, 13, 10, 15, 18, 9],
    [3, 7, 14, 15, 6, 5, 21, 20, 18, 10, 4, 16, 19, 1, 13, 9, 8, 17, 11, 12, 22, 2],
    [13, 15, 17, 1, 22, 11, 3, 4, 7, 20, 14, 21, 9, 8, 2, 18, 16, 6, 10, 12, 5, 19],
];

/// The query types and their dispatch to the query modules, from one list: number,
/// variant, module, and whether the module rounds its raw rows (`finish`) or they are
/// the answer as they are (`raw`).
macro_rules! queries {
    ($($n:literal $q:ident $m:ident $f:ident;)*) => {
        /// One query with its substitution parameters.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Query {
            $($q($m::Params),)*
        }

        impl Query {
            /// Query `n` with parameters drawn per clause 2.4 from `seed` (each query its
            /// own stream of it); `None` when there is no query `n`.
            pub fn draw(n: u32, seed: u64) -> Option<Query> {
                let r = &mut crate::util::rng_for(seed, u64::from(n));
                Some(match n {
                    $($n => Query::$q($m::Params::draw(r)),)*
                    _ => return None,
                })
            }

            /// Query `n` with the validation parameters of clause 2.4.
            pub fn validation(n: u32) -> Option<Query> {
                Some(match n {
                    $($n => Query::$q($m::Params::validation()),)*
                    _ => return None,
                })
            }

            pub fn number(&self) -> u32 {
                match self {
                    $(Query::$q(_) => $n,)*
                }
            }

            /// The raw rows by the plan over the transactional API.
            fn plan(&self, s: &mut dyn Reader) -> Result<Vec<Row>> {
                match self {
                    $(Query::$q(p) => $m::plan(s, p),)*
                }
            }

            /// The SQL text giving the same raw rows as the plan.
            pub fn sql(&self, d: SqlDialect) -> String {
                match self {
                    $(Query::$q(p) => $m::sql(Sql(d), p),)*
                }
            }

            /// The answer from the raw rows, the plan's and the SQL text's alike.
            fn finish(&self, raw: Vec<Row>) -> Vec<Row> {
                match self {
                    $(Query::$q(_) => queries!(@finish $m $f raw),)*
                }
            }
        }
    };
    (@finish $m:ident finish $raw:ident) => {
        $m::finish($raw)
    };
    (@finish $m:ident raw $raw:ident) => {
        $raw
    };
}

queries! {
    1 Q1 q01 finish;
    2 Q2 q02 raw;
    3 Q3 q03 finish;
    4 Q4 q04 raw;
    5 Q5 q05 finish;
    6 Q6 q06 finish;
    7 Q7 q07 finish;
    8 Q8 q08 finish;
    9 Q9 q09 finish;
    10 Q10 q10 finish;
    11 Q11 q11 raw;
    12 Q12 q12 raw;
    13 Q13 q13 raw;
    14 Q14 q14 finish;
    15 Q15 q15 finish;
    16 Q16 q16 raw;
    17 Q17 q17 finish;
    18 Q18 q18 raw;
    19 Q19 q19 finish;
    20 Q20 q20 raw;
    21 Q21 q21 raw;
    22 Q22 q22 raw;
}

impl Query {
    /// The answer, inside the caller's transaction: the SQL text on an engine that
    /// runs SQL ([`Reader::sql_dialect`]), the plan on any other. (A `Session` is a
    /// `Reader`: the plans are compiled once for every engine.)
    pub fn answer(&self, s: &mut dyn Reader) -> Result<Vec<Row>> {
        let raw = match s.sql_dialect() {
            Some(d) => exec::query_rows(s, &self.sql(d))?,
            None => self.plan(s)?,
        };
        Ok(self.finish(raw))
    }
}

// ---- what the plans share ----

/// The plans' hash tables: FxHash (`rustc-hash`), not SipHash, whose defence against
/// flooding is of no use on a query's own keys (integers, mostly) and costs several
/// times as much per probe. No answer depends on a table's order (plans sort).
pub(crate) type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;
/// See [`HashMap`].
pub(crate) type HashSet<T> = rustc_hash::FxHashSet<T>;

/// Every row of `table` that `keep` accepts, as `project` makes it (a full scan of the
/// primary index, the predicate and projection inside the engine's scan).
fn scan_all(
    s: &mut dyn Reader,
    table: TableId,
    keep: impl Fn(&[u8]) -> bool + Sync,
    project: impl Fn(&[u8]) -> Row + Sync,
) -> Result<Vec<Row>> {
    exec::scan(
        s,
        table.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        keep,
        project,
    )
}

/// A state folded over every row of `table`, from its `Default`: on several query
/// threads a state per part, merged into the first in key order (`exec::scan_fold`).
fn fold<S: Default + Send>(
    s: &mut dyn Reader,
    table: TableId,
    f: impl Fn(&mut S, &[u8]) + Sync,
    merge: impl FnMut(&mut S, S),
) -> Result<S> {
    exec::scan_fold(
        s,
        table.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        S::default,
        f,
        merge,
    )
}

/// [`scan_all`] then `hash_aggregate` over the projection's first `group` columns,
/// folding each kept row into its group inside the engine's scan (nothing
/// materialized: `exec::scan_aggregate`).
fn scan_agg(
    s: &mut dyn Reader,
    table: TableId,
    keep: impl Fn(&[u8]) -> bool + Sync,
    project: impl Fn(&[u8]) -> Row + Sync,
    group: usize,
    aggs: &[exec::Agg],
) -> Result<Vec<Row>> {
    exec::scan_aggregate(
        s,
        table.primary(),
        Bound::Unbounded,
        Bound::Unbounded,
        keep,
        project,
        group,
        aggs,
    )
}

/// The (n_nationkey, n_name) rows of the nations `keep` accepts.
fn nations(s: &mut dyn Reader, keep: impl Fn(&[u8]) -> bool + Sync) -> Result<Vec<Row>> {
    use super::schema::{Nation, NATION};
    use std::mem::offset_of;
    scan_all(s, NATION, keep, |r| {
        vec![
            Datum::Int(u32c(r, offset_of!(Nation, n_nationkey))),
            text(r, offset_of!(Nation, n_name), 25),
        ]
    })
}

/// The keys of the nations named in `names` -> their N_NAME.
fn nations_named(s: &mut dyn Reader, names: &[String]) -> Result<HashMap<i64, Datum>> {
    use super::schema::Nation;
    use std::mem::offset_of;
    let rows = nations(s, |r| {
        let n = strc(r, offset_of!(Nation, n_name), 25);
        names.iter().any(|x| x.as_bytes() == n)
    })?;
    Ok(by_key(rows))
}

/// The (n_nationkey, n_name) rows of the nations of region `name`.
fn region_nations(s: &mut dyn Reader, name: &str) -> Result<Vec<Row>> {
    use super::schema::{Nation, Region, REGION};
    use std::mem::offset_of;
    let region = scan_all(
        s,
        REGION,
        |r| strc(r, offset_of!(Region, r_name), 25) == name.as_bytes(),
        |r| vec![Datum::Int(u32c(r, offset_of!(Region, r_regionkey)))],
    )?;
    let rk = ids(&region, 0);
    nations(s, |r| {
        rk.contains(&u32c(r, offset_of!(Nation, n_regionkey)))
    })
}

/// (key, value) rows as a map from the key.
fn by_key(rows: Vec<Row>) -> HashMap<i64, Datum> {
    rows.into_iter()
        .map(|r| (r[0].int(), r[1].clone()))
        .collect()
}

fn text(r: &[u8], off: usize, len: usize) -> Datum {
    Datum::Str(strc(r, off, len).to_vec())
}

/// Revenue `l_extendedprice x (1 - l_discount)` in 10^-4 units, from cents.
fn revenue(extendedprice: i64, discount: i64) -> i64 {
    extendedprice * (100 - discount)
}

/// The ids in column `c` of `rows`.
fn ids(rows: &[Row], c: usize) -> HashSet<i64> {
    rows.iter().map(|r| r[c].int()).collect()
}

/// (l_orderkey, revenue) of the line items of the orders `keys` that `keep` accepts
/// (the orders' keys tested in LINEITEM's scan: a semi-join).
fn order_revenue(
    s: &mut dyn Reader,
    keys: &HashSet<i64>,
    keep: impl Fn(&[u8]) -> bool + Sync,
) -> Result<Vec<Row>> {
    use super::schema::{Lineitem, LINEITEM};
    use std::mem::offset_of;
    let order = |r: &[u8]| i64c(r, offset_of!(Lineitem, l_orderkey));
    scan_all(
        s,
        LINEITEM,
        |r| keep(r) && keys.contains(&order(r)),
        |r| vec![Datum::Int(order(r)), line_revenue(r)],
    )
}

/// A LINEITEM row's revenue (10^-4 units).
fn line_revenue(r: &[u8]) -> Datum {
    use super::schema::Lineitem;
    use std::mem::offset_of;
    Datum::Int(revenue(
        i64c(r, offset_of!(Lineitem, l_extendedprice)),
        i64c(r, offset_of!(Lineitem, l_discount)),
    ))
}

/// Round a value of 10^-`scale` units to cents (half away from zero).
fn to_cents(v: &Datum, scale: u32) -> Datum {
    Datum::Int(exec::expr::div_round(v.int(), 10i64.pow(scale - 2)))
}

/// Replace columns `cols` of every row by their value rounded to cents from 10^-4.
fn round_revenue(mut rows: Vec<Row>, cols: &[usize]) -> Vec<Row> {
    for r in &mut rows {
        for &c in cols {
            r[c] = to_cents(&r[c], 4);
        }
    }
    rows
}

/// The day `months` months after `day` (a first of the month stays one).
fn add_months(day: u32, months: u32) -> u32 {
    let (y, m, d) = civil_from_days(day);
    let z = (m - 1) + months;
    days_from_civil(y + (z / 12) as i32, z % 12 + 1, d)
}

/// The year of a day number.
fn year_of(day: i64) -> i64 {
    i64::from(civil_from_days(day as u32).0)
}

/// January 1st of `year`.
fn jan1(year: i32) -> u32 {
    days_from_civil(year, 1, 1)
}

/// SQL text pieces in a dialect, over the schema's encoding.
#[derive(Debug, Clone, Copy)]
pub struct Sql(pub SqlDialect);

impl Sql {
    /// A DECIMAL(15,2) column as integer cents (SQLite stores cents already).
    fn m(self, col: &str) -> String {
        crate::util::sql_cents(self.0, col)
    }

    /// `sum(e)` of integers, an integer (0 over no rows).
    fn sum(self, e: &str) -> String {
        crate::util::sql_int_sum(self.0, e)
    }

    /// `col LIKE pattern` (`%` its only wildcard), case-sensitive in both systems
    /// (SQLite's LIKE ignores ASCII case: its GLOB, with `*`, does not).
    fn like(self, col: &str, pattern: &str) -> String {
        match self.0 {
            SqlDialect::Sqlite => format!("{col} GLOB {}", lit(&pattern.replace('%', "*"))),
            SqlDialect::Postgres => format!("{col} LIKE {}", lit(pattern)),
        }
    }

    /// `extract(year from col)` of a day number: a CASE over the years' first days
    /// (TPC-H's dates lie in 1992..=1998).
    fn year(self, col: &str) -> String {
        let arms: Vec<String> = (1993..=1998)
            .map(|y| format!("WHEN {col} < {} THEN {}", jan1(y), y - 1))
            .collect();
        format!("CASE {} ELSE 1998 END", arms.join(" "))
    }

    /// The revenue of a line item in 10^-4 units.
    fn revenue(self) -> String {
        format!(
            "{} * (100 - {})",
            self.m("l_extendedprice"),
            self.m("l_discount")
        )
    }
}

/// A string literal (the parameters hold no quote).
fn lit(s: &str) -> String {
    assert!(!s.contains('\''), "a quote in a parameter: {s}");
    format!("'{s}'")
}

/// One of `list`, uniformly.
fn pick<'a, R: rand::Rng>(r: &mut R, list: &[&'a str]) -> &'a str {
    list[r.gen_range(0..list.len())]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpch::gen::{
        date_string, CONTAINER_S1, CONTAINER_S2, NATIONS, P_NAME_WORDS, TYPE_S1, TYPE_S2,
    };

    #[test]
    fn dates_move_by_months() {
        assert_eq!(date_string(add_months(jan1(1994), 12)), "1995-01-01");
        assert_eq!(
            date_string(add_months(days_from_civil(1993, 11, 1), 3)),
            "1994-02-01"
        );
        assert_eq!(jan1(1992), crate::tpch::gen::START_DATE);
    }

    #[test]
    fn drawn_parameters_stay_in_clause_2_4s_ranges() {
        for seed in 0..200 {
            for n in IMPLEMENTED {
                let q = Query::draw(n, seed).unwrap();
                assert_eq!(q.number(), n);
                assert_in_range(q);
            }
        }
        assert_eq!(Query::draw(23, 0), None);
        assert_eq!(Query::draw(1, 5), Query::draw(1, 5));
    }

    /// Query `q`'s parameters are within clause 2.4's ranges.
    fn assert_in_range(q: Query) {
        match q {
            Query::Q1(p) => assert!((60..=120).contains(&p.delta)),
            Query::Q2(p) => {
                assert!((1..=50).contains(&p.size));
                assert!(crate::tpch::gen::TYPE_S3.contains(&p.type_.as_str()));
                assert!(crate::tpch::gen::REGIONS.contains(&p.region.as_str()));
            }
            Query::Q3(p) => {
                assert!(SEGMENTS_OK.contains(&p.segment.as_str()));
                assert!(date_string(p.date).starts_with("1995-03-"));
            }
            Query::Q4(p) => {
                let (y, m, d) = civil_from_days(p.date);
                assert_eq!(d, 1);
                assert!((1993 * 12..=1997 * 12 + 9).contains(&(y * 12 + m as i32 - 1)));
            }
            Query::Q5(p) => {
                assert!(crate::tpch::gen::REGIONS.contains(&p.region.as_str()));
                assert!((1993..=1997).contains(&civil_from_days(p.date).0));
                assert_eq!(civil_from_days(p.date).1, 1);
            }
            Query::Q6(p) => {
                assert!((2..=9).contains(&p.discount));
                assert!((24..=25).contains(&p.quantity));
                assert!(date_string(p.date).ends_with("-01-01"));
            }
            Query::Q7(p) => {
                assert_ne!(p.nations[0], p.nations[1]);
                for n in &p.nations {
                    assert!(NATIONS.iter().any(|x| x.0 == n));
                }
            }
            Query::Q8(p) => {
                let n = NATIONS.iter().find(|x| x.0 == p.nation).unwrap();
                assert_eq!(crate::tpch::gen::REGIONS[n.1 as usize], p.region);
                let t: Vec<&str> = p.type_.split(' ').collect();
                assert!(crate::tpch::gen::TYPE_S1.contains(&t[0]));
                assert!(crate::tpch::gen::TYPE_S2.contains(&t[1]));
                assert!(crate::tpch::gen::TYPE_S3.contains(&t[2]) && t.len() == 3);
            }
            Query::Q9(p) => {
                assert!(crate::tpch::gen::P_NAME_WORDS.contains(&p.color.as_str()));
            }
            Query::Q10(p) => {
                let (y, m, d) = civil_from_days(p.date);
                assert_eq!(d, 1);
                assert!((1993 * 12 + 1..=1995 * 12).contains(&(y * 12 + m as i32 - 1)));
            }
            Query::Q11(p) => assert!(NATIONS.iter().any(|x| x.0 == p.nation)),
            other => assert_in_range_12_to_22(other),
        }
    }

    /// [`assert_in_range`] for queries 12 to 22.
    fn assert_in_range_12_to_22(q: Query) {
        match q {
            Query::Q12(p) => assert_ne!(p.modes[0], p.modes[1]),
            Query::Q13(p) => {
                assert!(["special", "pending", "unusual", "express"].contains(&p.word1.as_str()));
                assert!(
                    ["packages", "requests", "accounts", "deposits"].contains(&p.word2.as_str())
                );
            }
            Query::Q14(p) => {
                let (y, _, d) = civil_from_days(p.date);
                assert!(d == 1 && (1993..=1997).contains(&y));
            }
            Query::Q15(p) => {
                let (y, m, d) = civil_from_days(p.date);
                assert_eq!(d, 1);
                assert!((1993 * 12..=1997 * 12 + 9).contains(&(y * 12 + m as i32 - 1)));
            }
            Query::Q16(p) => {
                assert!(brand_ok(&p.brand));
                let (a, b) = p.type_prefix.split_once(' ').unwrap();
                assert!(TYPE_S1.contains(&a) && TYPE_S2.contains(&b));
                let mut z = p.sizes.to_vec();
                z.sort_unstable();
                z.dedup();
                assert!(z.len() == 8 && z.iter().all(|z| (1..=50).contains(z)));
            }
            Query::Q17(p) => {
                assert!(brand_ok(&p.brand));
                let (a, b) = p.container.split_once(' ').unwrap();
                assert!(CONTAINER_S1.contains(&a) && CONTAINER_S2.contains(&b));
            }
            Query::Q18(p) => assert!((312..=315).contains(&p.quantity)),
            Query::Q19(p) => {
                assert!((1..=10).contains(&p.quantity[0]));
                assert!((10..=20).contains(&p.quantity[1]));
                assert!((20..=30).contains(&p.quantity[2]));
                for b in &p.brand {
                    let d = &b.as_bytes()[6..];
                    assert!(b.starts_with("Brand#") && d.len() == 2);
                    assert!(d.iter().all(|c| (b'1'..=b'5').contains(c)));
                }
            }
            Query::Q20(p) => {
                assert!(P_NAME_WORDS.contains(&p.color.as_str()));
                assert!(NATIONS.iter().any(|n| n.0 == p.nation));
                let (y, m, d) = civil_from_days(p.date);
                assert!((1993..=1997).contains(&y) && m == 1 && d == 1);
            }
            Query::Q21(p) => assert!(NATIONS.iter().any(|n| n.0 == p.nation)),
            Query::Q22(p) => {
                let mut c: Vec<u32> = p.codes.iter().map(|c| c.parse().unwrap()).collect();
                c.sort_unstable();
                c.dedup();
                assert!(c.len() == 7 && c.iter().all(|c| (10..=34).contains(c)));
            }
            other => unreachable!("{other:?}: queries 1 to 11 are assert_in_range's"),
        }
    }

    const SEGMENTS_OK: [&str; 5] = crate::tpch::gen::SEGMENTS;

    /// `Brand#MN`, M and N in 1..=5.
    fn brand_ok(b: &str) -> bool {
        let d = &b.as_bytes()[6..];
        b.starts_with("Brand#") && d.len() == 2 && d.iter().all(|c| (b'1'..=b'5').contains(c))
    }
}
