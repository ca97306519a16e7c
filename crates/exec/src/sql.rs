//! A query given as SQL text, on the engines that run SQL (SQLite, PostgreSQL).

use crate::expr::{Datum, Row};
use api::{Reader, Result};

/// The rows `sql` gives on an engine that runs SQL ([`Reader::query`]), as datums: how
/// a query's SQL text answers where the built-in engines run its plan.
pub fn query_rows(s: &mut dyn Reader, sql: &str) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    s.query(sql, &mut |vals| {
        out.push(vals.iter().map(Datum::from).collect())
    })?;
    Ok(out)
}
