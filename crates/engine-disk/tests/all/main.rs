//! The integration tests of this crate in one binary, one module per former test file:
//! the crate and its dependencies' generic code are then compiled and linked once, not
//! once per file (issue 39, the test build's cost). `cargo test -p engine_disk --test all
//! MODULE::` runs one module's tests.

mod basic;
mod common;
mod concurrent;
mod conformance;
mod load;
mod log_dir;
mod recovery;
mod sim_crash;
mod torn_pages;
