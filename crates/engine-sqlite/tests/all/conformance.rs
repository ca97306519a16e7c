//! The engine-generic conformance tests (the `conformance` crate) against SQLite, with
//! B+tree and hash primary indexes (a hash primary is a plain primary key in SQL, but
//! a scan over it must still be refused). Threads only: under coroutines on one thread
//! a connection waiting for SQLite's write lock would block the coroutine holding it.

use api::EngineOptions;
use engine_sqlite::SqliteEngine;

conformance::tests!(SqliteEngine, EngineOptions::default(), "sqlite"; threads);
