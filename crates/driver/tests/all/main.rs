//! The driver's integration tests in one binary: each engine and workload is then
//! monomorphized and linked once, not once per test file (issue 39, the test build's
//! cost). `cargo test -p driver --test all engines::` runs one file's tests.

mod cmdlog;
mod coroutines;
mod engines;
mod tpce;
