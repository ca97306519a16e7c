//! The integration tests of this crate in one binary, one module per subject (issue 39,
//! the test build's cost). `cargo test -p exec --test all MODULE::` runs one module.

mod scan;
