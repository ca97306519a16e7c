//! The engine-generic conformance tests (the `conformance` crate) against the mvcc engine,
//! with B+tree and with hash primary indexes, on threads, as seeded coroutines and under
//! STEPS; `conformance_repeated` is the soak (`-- --ignored`).

use api::EngineOptions;
use engine_mvcc::MvccEngine;

conformance::tests!(MvccEngine, EngineOptions::default(), "mvcc";
    threads, repeated, coroutines(16), steps, optimistic);
