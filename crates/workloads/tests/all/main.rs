//! The integration tests of this crate in one binary, one module per former test file:
//! the crate and its dependencies' generic code are then compiled and linked once, not
//! once per file (issue 39, the test build's cost). `cargo test -p workloads --test all
//! MODULE::` runs one module's tests.

mod check_loaded;
mod commands;
mod micro;
mod pinned_inputs;
mod tpcb;
mod tpcc_population;
mod tpcc_run;
mod tpcc_txn;
mod tpce_run;
mod tpch_population;
mod typed;
