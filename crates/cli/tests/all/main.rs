//! The integration tests of this crate in one binary, one module per former test file:
//! the crate and its dependencies' generic code are then compiled and linked once, not
//! once per file (issue 39, the test build's cost). `cargo test -p oltpscope --test all
//! MODULE::` runs one module's tests.

mod browser;
mod btree_levels;
mod chbench;
mod cli;
mod common;
mod coroutines;
mod crashtest_engines;
mod damage;
mod damage_inmemory;
mod dbdir_safety;
mod interleave;
mod internals;
mod lab;
mod limits_and_signals;
mod log_default;
mod manifest_options;
mod memory_recovery;
mod mvcc_recovery;
mod partitioned_checkpoints;
mod partitioned_recovery;
mod prewarm;
mod profile;
mod real_systems;
mod run_file_and_progress;
mod simulate_validation;
mod slurm;
mod spec_roundtrip;
mod sql_engines;
mod stats;
mod steps;
mod tpce_analytics;
mod tpch;
mod tpch_answers;
mod tpch_answers_cli;
