//! The engine-generic conformance tests (the `conformance` crate) against the memory engine,
//! with B+tree and with hash primary indexes, on threads, as seeded coroutines and under
//! STEPS; `conformance_repeated` is the soak (`-- --ignored`).

use api::EngineOptions;
use engine_memory::MemoryEngine;

conformance::tests!(MemoryEngine, EngineOptions::default(), "memory";
    threads, repeated, coroutines(16), steps, optimistic);
