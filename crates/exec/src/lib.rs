//! A small query executor over the transactional API (issue 42): hand-written plans run
//! the same way on every engine design. Operators work on materialized batches of
//! [`Row`]s (vectors of typed [`Datum`]s): a [`scan`] pulls rows out of an engine's scan
//! through `api::Reader` (every `Session` is one: the operators are compiled once for
//! every engine), with the predicate and the projection applied inside the scan's
//! callback (so rejected rows are never copied out); [`hash_join`], [`hash_aggregate`],
//! [`sort`] and [`top_n`] combine them; [`scan_aggregate`] folds a scan's kept rows into
//! a hash aggregation inside the scan, materializing none; [`Expr`] computes over typed
//! columns.
//!
//! Decimals are `Int`s in units of 10^-scale (cents for TPC-H's DECIMAL(15,2)); a plan
//! keeps track of each expression's scale itself.
//!
//! This crate knows no workload and no engine; it never begins or commits a
//! transaction (the caller does, as for any transaction body).

//!
//! One module per operator (`scan`, `join`, `aggregate`, `sort`), because reports
//! attribute time to components by module path: `profile` and `simulate` show a query's
//! time as `q-scan`, `hash-join`, `hash-agg` and `sort` through the `components` crate's
//! rules, and the plan's closures an operator calls (predicates, projections) count for
//! that operator (docs/design/profile.md, "Query operators").

pub mod aggregate;
pub mod expr;
pub mod join;
pub mod scan;
pub mod sort;
pub mod sql;

pub use aggregate::{hash_aggregate, Agg, Aggregator};
pub use expr::{Datum, Expr, Row};
pub use join::hash_join;
pub use scan::{scan, scan_aggregate, scan_each, scan_fold};
pub use sort::{sort, top_n, SortKey};
pub use sql::query_rows;

#[cfg(test)]
mod tests;
