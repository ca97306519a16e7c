//! The integration tests of this crate in one binary, one module per former test file:
//! the crate and its dependencies' generic code are then compiled and linked once, not
//! once per file (issue 39, the test build's cost). `cargo test -p engine_postgres --test all
//! MODULE::` runs one module's tests.

/// A skipped test's one line, written past the test harness's capture (which hides
/// what a passing test prints with `println!`), so the run's output shows every skip.
macro_rules! skipped {
    ($($a:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED: {}", format_args!($($a)*));
    }};
}

/// Two workers' options committing without waiting for their WAL flush: the
/// analytical kits' tests run a thousand transactions before their queries, which
/// would otherwise wait for a thousand fsyncs.
fn quick_commits() -> api::EngineOptions {
    api::EngineOptions {
        threads: 2,
        ..api::EngineOptions::default()
    }
    .with_own(engine_postgres::PostgresOptions {
        synchronous_commit: false,
        ..engine_postgres::PostgresOptions::default()
    })
}

mod auth;
mod chbench;
mod conninfo;
mod kept;
mod postgres;
mod statements;
mod tpce_analytics;
